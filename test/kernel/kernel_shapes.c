// SPDX-License-Identifier: GPL-2.0
/*
 * The file table's nr_files and flexible proportions, after the kernel's
 * fs/file_table.c and lib/flex_proportions.c (Linux 6.x): the percpu
 * counter lines are the kernel's; the file objects, the seqcount and the
 * irq-safe lock are left out (the tests age from one thread at a time).
 */
#include <errno.h>

#include "kernel_shapes.h"

/* ==== fs/file_table.c ==== */

struct files_stat_struct files_stat = { .max_files = 8192 };

static struct percpu_counter nr_files;

long get_nr_files(void)
{
	return percpu_counter_read_positive(&nr_files);
}

int alloc_empty_file(bool capable)
{
	/*
	 * Privileged users can go above max_files
	 */
	if (get_nr_files() >= files_stat.max_files && !capable) {
		/*
		 * percpu_counters are inaccurate.  Do an expensive check before
		 * we go and fail.
		 */
		if (percpu_counter_sum_positive(&nr_files) >= files_stat.max_files)
			return -ENFILE;
	}
	percpu_counter_inc(&nr_files); /* init_file() */
	return 0;
}

void file_free(void)
{
	percpu_counter_dec(&nr_files);
}

int files_init(void)
{
	return percpu_counter_init(&nr_files, 0, GFP_KERNEL);
}

void files_exit(void)
{
	percpu_counter_destroy(&nr_files);
}

/* ==== lib/flex_proportions.c ==== */

s32 fprop_batch(void)
{
	unsigned int cpus = pcpu_cpu_possible(), ilog2 = 0;

	while (cpus >>= 1)
		ilog2++;
	return 8 * (1 + (s32)ilog2);
}
#define PROP_BATCH fprop_batch()

int fprop_global_init(struct fprop_global *p)
{
	p->period = 0;
	/* Use 1 to avoid dealing with periods with 0 events... */
	return percpu_counter_init(&p->events, 1, GFP_KERNEL);
}

void fprop_global_destroy(struct fprop_global *p)
{
	percpu_counter_destroy(&p->events);
}

/*
 * Declare @periods new periods. It is upto the caller to make sure period
 * transitions cannot happen in parallel.
 */
bool fprop_new_period(struct fprop_global *p, int periods)
{
	s64 events = percpu_counter_sum(&p->events);

	/*
	 * Don't do anything if there are no events.
	 */
	if (events <= 1)
		return false;
	if (periods < 64)
		events -= events >> periods;
	/* Use addition to avoid losing events happening between sum and set */
	percpu_counter_add(&p->events, -events);
	__atomic_add_fetch(&p->period, periods, __ATOMIC_RELEASE);
	return true;
}

int fprop_local_init_percpu(struct fprop_local_percpu *pl)
{
	pl->period = 0;
	pthread_mutex_init(&pl->lock, NULL);
	return percpu_counter_init(&pl->events, 0, GFP_KERNEL);
}

void fprop_local_destroy_percpu(struct fprop_local_percpu *pl)
{
	percpu_counter_destroy(&pl->events);
	pthread_mutex_destroy(&pl->lock);
}

static void fprop_reflect_period_percpu(struct fprop_global *p, struct fprop_local_percpu *pl)
{
	unsigned int period = __atomic_load_n(&p->period, __ATOMIC_ACQUIRE);

	/* Fast path - period didn't change */
	if (__atomic_load_n(&pl->period, __ATOMIC_ACQUIRE) == period)
		return;
	pthread_mutex_lock(&pl->lock);
	/* Someone updated pl->period while we were spinning? */
	if (pl->period >= period) {
		pthread_mutex_unlock(&pl->lock);
		return;
	}
	/* Aging zeroed our fraction? */
	if (period - pl->period < 64) {
		s64 val = percpu_counter_read(&pl->events);

		if (val < (s64)(pcpu_cpu_possible() * PROP_BATCH))
			val = percpu_counter_sum(&pl->events);

		percpu_counter_add_batch(&pl->events, -val + (val >> (period - pl->period)),
					 PROP_BATCH);
	} else {
		percpu_counter_set(&pl->events, 0);
	}
	__atomic_store_n(&pl->period, period, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&pl->lock);
}

void __fprop_add_percpu(struct fprop_global *p, struct fprop_local_percpu *pl, long nr)
{
	fprop_reflect_period_percpu(p, pl);
	percpu_counter_add_batch(&pl->events, nr, PROP_BATCH);
	percpu_counter_add(&p->events, nr);
}

void fprop_fraction_percpu(struct fprop_global *p, struct fprop_local_percpu *pl,
			   unsigned long *numerator, unsigned long *denominator)
{
	s64 num, den;

	fprop_reflect_period_percpu(p, pl);
	num = percpu_counter_read_positive(&pl->events);
	den = percpu_counter_read_positive(&p->events);

	/*
	 * Make fraction <= 1 and denominator > 0 even in presence of percpu
	 * counter errors
	 */
	if (den <= num) {
		if (num)
			den = num;
		else
			den = 1;
	}
	*denominator = (unsigned long)den;
	*numerator = (unsigned long)num;
}
