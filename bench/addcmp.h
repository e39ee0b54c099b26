/* SPDX-License-Identifier: MIT */
/*
 * The add against the last release's and against the bare restartable-
 * sequence add, paired: pcpu_counter_add() on an elastic counter, 0.3's
 * add (v03_add.h) and pcpu_arch_rseq_add() to this CPU's slot (what the
 * kernel's this_cpu_add() compiles to), each +1 in a caller's inlined
 * loop, on 1 and 2 threads. Every round runs the three back to back,
 * starting with a different one; a ratio is the median of the per-round
 * ratios, so that a shared machine's noise cancels out of it.
 */
#ifndef PERCPU_BENCH_ADDCMP_H
#define PERCPU_BENCH_ADDCMP_H

#include <stdbool.h>
#include <stdio.h>

enum add_kind {
	ADD_PERCPU, /* pcpu_counter_add() */
	ADD_V03,    /* 0.3's inline add, vendored */
	ADD_BARE,   /* pcpu_arch_rseq_add(): this_cpu_add() */
	NR_ADD_KINDS,
};

#define ADDCMP_THREAD_COUNTS 2 /* 1 and 2 threads */

struct addcmp_result {
	const char *skipped; /* why it did not run; NULL: it ran */
	bool have_v03;       /* 0.3's add is vendored for this architecture */
	unsigned int rounds, duration_ms;
	unsigned int threads[ADDCMP_THREAD_COUNTS];
	double mops[ADDCMP_THREAD_COUNTS][NR_ADD_KINDS];      /* medians, wall clock */
	double ratio[ADDCMP_THREAD_COUNTS][NR_ADD_KINDS];     /* percpu / kind, wall clock */
	double cpu_ratio[ADDCMP_THREAD_COUNTS][NR_ADD_KINDS]; /* per thread CPU time */
	unsigned int inexact; /* rounds whose counter ended wrong */
};

/* Measures; 0 or a negative errno. Skipped (r->skipped) off the rseq path. */
int addcmp_measure(struct addcmp_result *r, unsigned int rounds, unsigned int duration_ms);

void addcmp_report(FILE *f, const struct addcmp_result *r);

/*
 * The check against the last release: whether the add ran at >= @min x
 * 0.3's, per CPU time (steadier than the wall clock on a shared machine),
 * at every thread count; says which on @f. True when it could not run.
 */
bool addcmp_check_v03(FILE *f, const struct addcmp_result *r, double min);

#endif /* PERCPU_BENCH_ADDCMP_H */
