/* SPDX-License-Identifier: MIT */
/*
 * The add against the last releases' and against the bare restartable-
 * sequence adds, paired: pcpu_counter_add() on an elastic counter, 0.4's
 * and 0.3's adds (v04_add.h, v03_add.h), the library's own bare sequence
 * (pcpu_arch_rseq_add(): this_cpu_add()) and librseq's (rseq_addv.h: the
 * CPU number read and the address computed before the sequence, the
 * strongest bare add known), each +1 in a caller's inlined loop, on 1 and
 * 2 threads. Every round runs them back to back, starting with a different
 * one; a ratio is the median of the per-round ratios, so that a shared
 * machine's noise cancels out of it.
 */
#ifndef PERCPU_BENCH_ADDCMP_H
#define PERCPU_BENCH_ADDCMP_H

#include <stdbool.h>
#include <stdio.h>

enum add_kind {
	ADD_PERCPU,  /* pcpu_counter_add() */
	ADD_V04,     /* 0.4's inline add, vendored */
	ADD_V03,     /* 0.3's inline add, vendored */
	ADD_BARE,    /* pcpu_arch_rseq_add(): the library's this_cpu_add() */
	ADD_LIBRSEQ, /* librseq's rseq_addv() idiom: the strongest bare add */
	NR_ADD_KINDS,
};

#define ADDCMP_THREAD_COUNTS 2 /* 1 and 2 threads */

struct addcmp_result {
	const char *skipped; /* why it did not run; NULL: it ran */
	bool have[NR_ADD_KINDS]; /* the kind runs on this architecture */
	unsigned int rounds, duration_ms;
	unsigned int threads[ADDCMP_THREAD_COUNTS];
	double mops[ADDCMP_THREAD_COUNTS][NR_ADD_KINDS];      /* medians, wall clock */
	double cpu_mops[ADDCMP_THREAD_COUNTS][NR_ADD_KINDS];  /* medians, per CPU time */
	double ratio[ADDCMP_THREAD_COUNTS][NR_ADD_KINDS];     /* percpu / kind, wall clock */
	double cpu_ratio[ADDCMP_THREAD_COUNTS][NR_ADD_KINDS]; /* per thread CPU time */
	unsigned int inexact; /* rounds whose counter ended wrong */
};

/* Measures; 0 or a negative errno. Skipped (r->skipped) off the rseq path. */
int addcmp_measure(struct addcmp_result *r, unsigned int rounds, unsigned int duration_ms);

void addcmp_report(FILE *f, const struct addcmp_result *r);

/*
 * The check against a release (@kind ADD_V04 or ADD_V03): whether the add
 * ran at >= @min x that release's, per CPU time (steadier than the wall
 * clock on a shared machine), at every thread count; says which on @f.
 * True when it could not run.
 */
bool addcmp_check_release(FILE *f, const struct addcmp_result *r, enum add_kind kind,
			  double min);

/* The strongest bare add measured here: ADD_LIBRSEQ where it ran, else ADD_BARE. */
enum add_kind addcmp_strongest_bare(const struct addcmp_result *r);

#endif /* PERCPU_BENCH_ADDCMP_H */
