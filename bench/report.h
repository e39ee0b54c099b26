/* SPDX-License-Identifier: MIT */
/*
 * The results of a benchmark run and their outputs: the human (or
 * markdown) table, the design's targets beside the measured ratios, CSV and
 * a gnuplot PNG.
 */
#ifndef PERCPU_BENCH_REPORT_H
#define PERCPU_BENCH_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "addcmp.h"
#include "fastpath.h"
#include "impls.h"
#include "workloads.h"

/* One workload at one thread count, all implementations. */
struct bench_point {
	enum bench_workload workload;
	unsigned int threads; /* writers */
	double mops[NR_IMPLS];         /* median writer Mops/s */
	double mops_min[NR_IMPLS];
	double mops_max[NR_IMPLS];
	double reader_mops[NR_IMPLS];  /* readers workload: median reader Mops/s */
	/*
	 * percpu / implementation: the median over runs of the ratio within
	 * each run (all implementations run back to back in every run, so a
	 * noisy moment of a shared machine cancels out of the ratio).
	 */
	double ratio[NR_IMPLS];
	double cpu_share[NR_IMPLS];    /* median; see struct run_result */
	double cpu_mops[NR_IMPLS];     /* median; see struct run_result */
	double cpu_ratio[NR_IMPLS];    /* as ratio, of cpu_mops */
	double reader_ratio[NR_IMPLS];
};

struct bench_report {
	char cpu[256];          /* the CPU, as host_cpu_describe() names it */
	const char *mode;       /* the update path percpu ran */
	const char *paths[NR_IMPLS]; /* the update path of each implementation */
	double work_ns;         /* one WL_WORK operation's work alone; 0: not run */
	unsigned int online, possible;
	unsigned int runs, duration_ms;
	bool pinned;
	bool markdown;          /* tables in markdown */
	struct bench_point *points;
	unsigned int nr_points;
	bool have_fastpath;
	struct fastpath_result fastpath;
	bool have_addcmp;
	struct addcmp_result addcmp; /* the add against 0.3 and the bare rseq add */
	unsigned int inexact;   /* runs whose final value was wrong */
	uint64_t wrong;         /* commit-far compares that answered "above" */
	double load_start, load_end; /* 1-minute load average; negative: unknown */
};

void report_header(FILE *f, const struct bench_report *r);
void report_table(FILE *f, const struct bench_report *r);
void report_fastpath(FILE *f, const struct bench_report *r);
void report_targets(FILE *f, const struct bench_report *r);
void report_footer(FILE *f, const struct bench_report *r);

/* 0 or a negative errno. */
int report_csv(const char *path, const struct bench_report *r);

/* 0, 1 if gnuplot is absent (a message says so), or a negative errno. */
int report_plot(const char *path, const struct bench_report *r);

#endif /* PERCPU_BENCH_REPORT_H */
