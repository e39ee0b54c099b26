/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel code shaped after the users of percpu_counter_read() that trust it
 * to within percpu_counter_batch per CPU: the file table's nr_files
 * (fs/file_table.c) and flexible proportions (lib/flex_proportions.c).
 * Written here after the kernel's bodies, without their locking context
 * (irqs, preemption) and with a mutex for the raw spinlock.
 */
#ifndef PCPU_TEST_KERNEL_SHAPES_H
#define PCPU_TEST_KERNEL_SHAPES_H

#include <pthread.h>
#include <stdbool.h>

#include <percpu/percpu_counter.h>

/* ---- fs/file_table.c ---- */

struct files_stat_struct {
	unsigned long max_files; /* tunable */
};
extern struct files_stat_struct files_stat;

int files_init(void);
void files_exit(void);
/* alloc_empty_file(): 0, or -ENFILE past max_files for an unprivileged user */
int alloc_empty_file(bool capable);
void file_free(void);
long get_nr_files(void);

/* ---- lib/flex_proportions.c ---- */

struct fprop_global {
	struct percpu_counter events; /* events in the current period */
	unsigned int period;
};

struct fprop_local_percpu {
	struct percpu_counter events;
	unsigned int period;
	pthread_mutex_t lock;
};

/* the batch of the local counters: 8 * (1 + ilog2(nr_cpu_ids)) */
s32 fprop_batch(void);
int fprop_global_init(struct fprop_global *p);
void fprop_global_destroy(struct fprop_global *p);
bool fprop_new_period(struct fprop_global *p, int periods);
int fprop_local_init_percpu(struct fprop_local_percpu *pl);
void fprop_local_destroy_percpu(struct fprop_local_percpu *pl);
void __fprop_add_percpu(struct fprop_global *p, struct fprop_local_percpu *pl, long nr);
void fprop_fraction_percpu(struct fprop_global *p, struct fprop_local_percpu *pl,
			   unsigned long *numerator, unsigned long *denominator);

#endif /* PCPU_TEST_KERNEL_SHAPES_H */
