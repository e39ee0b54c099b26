/* SPDX-License-Identifier: MIT */
/*
 * What the side-by-side benchmarks (percpu-stat-bench, percpu-charge-bench)
 * share: the common options, the thread counts of a sweep, the machine
 * line, statistics over the runs of a point (medians, extremes, per-run
 * ratios) and the gnuplot panels. Each benchmark keeps its workloads, its
 * samples and its tables. Every run of a point measures every
 * implementation back to back, starting with a different one each run, so
 * that a ratio compares numbers taken moments apart: a ratio is the median
 * of the per-run ratios.
 */
#ifndef PERCPU_BENCH_HARNESS_H
#define PERCPU_BENCH_HARNESS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define BENCH_MAX_RUNS 64
#define BENCH_MAX_THREADS 256
#define BENCH_MAX_COUNTS 16 /* thread counts of a sweep */

struct bench_options {
	const char *prog; /* the program's name, for messages */
	bool quick;
	unsigned int runs;
	unsigned int duration_ms;
	unsigned int max_threads; /* 0: 2 x online CPUs */
	bool markdown;
	const char *csv;
	const char *plot;
};

/* The default options of @prog: 5 runs of 200 ms. */
#define BENCH_OPTIONS(name) { .prog = (name), .runs = 5, .duration_ms = 200 }

/* The long options every harness takes, for getopt_long's table. */
#define BENCH_LONG_OPTIONS                                        \
	{ "quick", no_argument, NULL, 'q' },                      \
	{ "runs", required_argument, NULL, 'r' },                 \
	{ "duration-ms", required_argument, NULL, 'd' },          \
	{ "max-threads", required_argument, NULL, 't' },          \
	{ "markdown", no_argument, NULL, 'm' },                   \
	{ "csv", required_argument, NULL, 'c' },                  \
	{ "plot", required_argument, NULL, 'p' },                 \
	{ "help", no_argument, NULL, 'h' }

/* Their usage lines: the first four, then the rest. */
extern const char bench_usage_runs[], bench_usage_outputs[];

/* The index of @name among the @n @names (a --workloads or --impls list's), or -1. */
int bench_name_index(const char *name, const char *const *names, unsigned int n);

/* @arg as a number in [1, @max], or exit 2 with a message. */
unsigned long long bench_parse_num(const struct bench_options *o, const char *arg,
				   const char *what, unsigned long long max);

/*
 * Takes getopt_long's answer @c if it is a common option: true. --help
 * prints @usage and exits 0; an unknown option prints it and exits 2.
 */
bool bench_option(struct bench_options *o, int c, void (*usage)(FILE *f));

/* After getopt_long: no operands (else @usage, exit 2); --quick: 3 runs of 50 ms. */
void bench_options_done(struct bench_options *o, int argc, void (*usage)(FILE *f));

/*
 * The thread counts of a sweep, into @counts (BENCH_MAX_COUNTS): 1, 2, 4,
 * ... up to --max-threads (by default 2 x online CPUs, which it sets), and
 * that. Returns how many.
 */
unsigned int bench_thread_counts(struct bench_options *o, unsigned int *counts);

/* "CPU (host_cpu_describe()), N online / M possible CPUs, SYSTEM RELEASE" into @buf. */
void bench_machine(char *buf, size_t size);

/* The 1-minute load average; -1 if unknown. */
double bench_load(void);

void bench_sleep_ms(unsigned int ms);

/*
 * Statistics over the @n runs of a point: its samples are @size bytes
 * apart from @first, and the figure is the double at @offset in each.
 */
double bench_runs_median(const void *first, size_t size, size_t offset, unsigned int n);
double bench_runs_extreme(const void *first, size_t size, size_t offset, unsigned int n,
			  bool max);
/* The median of the per-run ratios @base / @other (0 for a run where @other is 0). */
double bench_runs_ratio(const void *base, const void *other, size_t size, size_t offset,
			unsigned int n);

/* @path for writing, or exit 1 with a message. */
FILE *bench_csv_open(const struct bench_options *o, const char *path);

/*
 * gnuplot writing a PNG of 1400 x 900 to @path; NULL, with a message, if
 * gnuplot is absent or will not start (the benchmark goes on without).
 */
FILE *bench_plot_open(const struct bench_options *o, const char *path);

/* Ends the plot; a message if gnuplot failed. */
void bench_plot_close(const struct bench_options *o, const char *path, FILE *g);

/*
 * The panels of a comparison, in datablocks $w0, $w1, ... (one per
 * workload: threads, the throughput of each implementation, the first
 * over each of the others): a column per workload shown; above, the
 * throughput; below, the ratios.
 */
struct bench_panels {
	const char *const *workloads; /* their names */
	const bool *shown;            /* which have a datablock; NULL: all */
	unsigned int nr_workloads;
	unsigned int nr_impls;
	const char *impls;      /* the implementations' names, space-separated */
	const char *others;     /* ... all but the first */
	const char *first;      /* the first, as the ratios' titles name it */
	const char *xlabel;     /* what the thread counts count */
	const char *throughput; /* the title of an upper panel, after the workload's name */
	const char *ratios;     /* ... of a lower one */
	const char *ratio_range; /* the ratios' y range, "[lo:hi]"; NULL: automatic */
};

/*
 * The datablocks of the panels, from the @npts points of a sweep (@size
 * bytes apart from @pts): @where gives a point's workload and thread
 * count; @figure the throughput of implementation @impl there, or
 * (@ratio) the first's over it.
 */
struct bench_plot_points {
	const void *pts;
	size_t size;
	unsigned int npts;
	void (*where)(const void *point, unsigned int *workload, unsigned int *threads);
	double (*figure)(const void *point, unsigned int impl, bool ratio);
};

void bench_plot_data(FILE *g, const struct bench_panels *p, const struct bench_plot_points *d);

void bench_plot_panels(FILE *g, const struct bench_panels *p);

#endif /* PERCPU_BENCH_HARNESS_H */
