/* SPDX-License-Identifier: MIT */
/*
 * percpu-stat-bench: a vm_stat-like workload (30 items; each writer
 * operation bumps the 3 or 4 related items of one group; one reader thread
 * takes snapshots of all 30) counted five ways, side by side in one process:
 *
 *   grouped   a pcpu_stat set whose groups are the operations' item groups
 *   per-line  the same set with PCPU_STAT_ONE_PER_LINE
 *   counters  30 independent pcpu_counters (snapshot: 30 pcpu_counter_sum)
 *   packed    int64_t[30] of shared atomics, 8 to a line (false sharing)
 *   padded    30 shared atomics, one per line
 *
 * For every workload and writer thread count it does N runs, each of every
 * implementation back to back (bench/common/harness.h: options, runs,
 * medians, ratios, plots). Every run is checked against an exact
 * oracle (the writers' operation counts). The machine may be shared, so the
 * report also gives the writers' share of the CPU they could have had.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <percpu/cpu.h>

#include "harness.h"
#include "impls.h"
#include "timing.h"

/* One measurement: an implementation, a run. */
struct sample {
	double mops;         /* writer operations per second, all threads, millions */
	double cpu_share;    /* writers' CPU time / (wall * min(threads, online CPUs)) */
	double cpu_mops;     /* operations per writer CPU second, millions */
	double snapshots;    /* reader snapshots per second */
};

struct point {
	enum workload wl;
	unsigned int threads;
	struct sample s[NR_IMPLS][BENCH_MAX_RUNS];
};

static struct bench_options opt = BENCH_OPTIONS("percpu-stat-bench");
static unsigned int reader_us = 100; /* the reader's pause between snapshots */

static void usage(FILE *f)
{
	fprintf(f, "usage: percpu-stat-bench [options]\n%s", bench_usage_runs);
	fputs("  --reader-us N       pause of the reader between snapshots (default 100;\n"
	      "                      0: back to back)\n",
	      f);
	fputs(bench_usage_outputs, f);
}

static void parse_options(int argc, char **argv)
{
	static const struct option longopts[] = {
		BENCH_LONG_OPTIONS,
		{ "reader-us", required_argument, NULL, 'u' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (bench_option(&opt, c, usage))
			continue;
		/* 'u' */
		reader_us = strcmp(optarg, "0") == 0 ?
				    0 :
				    (unsigned int)bench_parse_num(&opt, optarg, "--reader-us", 1000000);
	}
	bench_options_done(&opt, argc, usage);
}

/* ---- one measurement ---------------------------------------------------- */

struct writer_arg {
	pthread_t thread;
	struct bench_set *set;
	pthread_barrier_t *go;
	volatile bool *stop;
	unsigned int start;
	struct writer_result r;
};

static void *writer_main(void *p)
{
	struct writer_arg *w = p;

	pthread_barrier_wait(w->go);
	set_write(w->set, w->stop, w->start, &w->r);
	return NULL;
}

struct reader_arg {
	pthread_t thread;
	struct bench_set *set;
	pthread_barrier_t *go;
	volatile bool *stop;
	uint64_t snapshots;
};

static void *reader_main(void *p)
{
	struct reader_arg *r = p;
	struct timespec pause = { (time_t)(reader_us / 1000000), (long)(reader_us % 1000000) * 1000 };
	int64_t values[NR_ITEMS];

	pthread_barrier_wait(r->go);
	while (!*r->stop) {
		set_snapshot(r->set, values);
		r->snapshots++;
		if (reader_us)
			nanosleep(&pause, NULL);
	}
	return NULL;
}

static struct sample measure(enum impl impl, enum workload wl, unsigned int threads)
{
	struct bench_set *set = set_create(impl, wl);
	struct writer_arg w[BENCH_MAX_THREADS];
	struct reader_arg r = { .set = set };
	volatile bool stop = false;
	pthread_barrier_t go;
	int64_t values[NR_ITEMS], exact[NR_ITEMS];
	uint64_t ops = 0;
	uint64_t t0;
	double wall, cpu = 0;
	unsigned int online = pcpu_cpu_online();
	struct sample s;

	pthread_barrier_init(&go, NULL, threads + 2);
	r.go = &go;
	r.stop = &stop;
	for (unsigned int t = 0; t < threads; t++) {
		w[t] = (struct writer_arg){ .set = set, .go = &go, .stop = &stop,
					    .start = t * 997 };
		if (pthread_create(&w[t].thread, NULL, writer_main, &w[t]) != 0) {
			perror("percpu-stat-bench: pthread_create");
			exit(1);
		}
	}
	if (pthread_create(&r.thread, NULL, reader_main, &r) != 0) {
		perror("percpu-stat-bench: pthread_create");
		exit(1);
	}
	pthread_barrier_wait(&go);
	t0 = timing_now_ns();
	bench_sleep_ms(opt.duration_ms);
	stop = true;
	for (unsigned int t = 0; t < threads; t++)
		pthread_join(w[t].thread, NULL);
	wall = (double)(timing_now_ns() - t0) * 1e-9;
	pthread_join(r.thread, NULL);
	pthread_barrier_destroy(&go);

	/* the oracle: what the operation counts say every item must be */
	for (unsigned int i = 0; i < NR_ITEMS; i++)
		exact[i] = workload_preload(wl, i);
	for (unsigned int t = 0; t < threads; t++) {
		ops += w[t].r.ops;
		cpu += w[t].r.cpu_s;
		for (unsigned int g = 0; g < NR_OPS; g++) {
			uint64_t n = w[t].r.group_ops[g];

			for (unsigned int e = 0; e < op_len[g]; e++)
				exact[op_items[g][e]] += workload_net(wl, op_items[g][e], n);
		}
	}
	set_snapshot(set, values);
	for (unsigned int i = 0; i < NR_ITEMS; i++)
		if (values[i] != exact[i]) {
			fprintf(stderr, "percpu-stat-bench: %s/%s/%u: %s is %lld, not %lld\n",
				workload_names[wl], impl_names[impl], threads, item_defs[i].name,
				(long long)values[i], (long long)exact[i]);
			exit(1);
		}
	set_destroy(set);

	s.mops = (double)ops / wall / 1e6;
	s.cpu_share = cpu / (wall * (threads < online ? threads : online));
	s.cpu_mops = cpu > 0 ? (double)ops / cpu / 1e6 : 0;
	s.snapshots = (double)r.snapshots / wall;
	return s;
}

/* ---- statistics ----------------------------------------------------------- */

/* A figure of a sample, named by where it stands in it */
enum field {
	F_MOPS = offsetof(struct sample, mops),
	F_SHARE = offsetof(struct sample, cpu_share),
	F_CPU_MOPS = offsetof(struct sample, cpu_mops),
	F_SNAPSHOTS = offsetof(struct sample, snapshots),
};

static double med(const struct point *p, enum impl impl, enum field f)
{
	return bench_runs_median(p->s[impl], sizeof(struct sample), f, opt.runs);
}

/* Median over runs of grouped / @impl, by wall clock or by CPU time. */
static double ratio(const struct point *p, enum impl impl, enum field f)
{
	return bench_runs_ratio(p->s[IMPL_GROUPED], p->s[impl], sizeof(struct sample), f, opt.runs);
}

/* ---- reports ----------------------------------------------------------------- */

static void print_machine(FILE *f)
{
	char machine[512];

	bench_machine(machine, sizeof(machine));
	fprintf(f, "machine: %s; update path: %s; load %.1f\n", machine,
		pcpu_cpu_setup() == PCPU_CPU_RSEQ ? "rseq" : "atomic", bench_load());
}

/*
 * One row per point: the median of @field for every implementation, with
 * @decimals decimals, then, if @ratios, grouped over each of the others.
 */
static void print_rows(FILE *f, const struct point *pts, unsigned int npts, enum field field,
		       int decimals, bool ratios)
{
	for (unsigned int k = 0; k < npts; k++) {
		const struct point *p = &pts[k];

		fprintf(f, opt.markdown ? "| %s | %u" : "%-8s %3u", workload_names[p->wl], p->threads);
		for (unsigned int i = 0; i < NR_IMPLS; i++)
			fprintf(f, opt.markdown ? " | %.*f" : " %9.*f", decimals, med(p, i, field));
		for (unsigned int i = 1; ratios && i < NR_IMPLS; i++)
			fprintf(f, opt.markdown ? " | %.2fx" : " %9.2fx", ratio(p, i, field));
		fputs(opt.markdown ? " |\n" : "\n", f);
	}
}

static void print_table(FILE *f, const struct point *pts, unsigned int npts)
{
	const char *sep = opt.markdown ? " | " : "  ";

	fprintf(f, "\nWriter throughput, Mops/s (one op = one operation, 3-4 item updates), "
		   "median of %u runs of %u ms; reader pause %u us\n\n",
		opt.runs, opt.duration_ms, reader_us);
	if (opt.markdown) {
		fputs("| workload | threads | grouped | per-line | counters | packed | padded "
		      "| g/per-line | g/counters | g/packed | g/padded | snapshots/s | cpu% |\n"
		      "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n", f);
	} else {
		fprintf(f, "%-8s %3s %9s %9s %9s %9s %9s %10s %10s %9s %9s %11s %5s\n",
			"workload", "thr", "grouped", "per-line", "counters", "packed", "padded",
			"g/perline", "g/counters", "g/packed", "g/padded", "snapshots/s", "cpu%");
	}
	for (unsigned int k = 0; k < npts; k++) {
		const struct point *p = &pts[k];

		if (opt.markdown) {
			fprintf(f, "| %s%s%u", workload_names[p->wl], sep, p->threads);
			for (unsigned int i = 0; i < NR_IMPLS; i++)
				fprintf(f, "%s%.1f", sep, med(p, i, F_MOPS));
			for (unsigned int i = 1; i < NR_IMPLS; i++)
				fprintf(f, "%s%.2fx", sep, ratio(p, i, F_MOPS));
			fprintf(f, "%s%.0f%s%.0f |\n", sep, med(p, IMPL_GROUPED, F_SNAPSHOTS), sep,
				100 * med(p, IMPL_GROUPED, F_SHARE));
		} else {
			fprintf(f, "%-8s %3u", workload_names[p->wl], p->threads);
			for (unsigned int i = 0; i < NR_IMPLS; i++)
				fprintf(f, " %9.1f", med(p, i, F_MOPS));
			fprintf(f, " %9.2fx %9.2fx %8.2fx %8.2fx %11.0f %5.0f\n",
				ratio(p, IMPL_PER_LINE, F_MOPS), ratio(p, IMPL_COUNTERS, F_MOPS),
				ratio(p, IMPL_PACKED, F_MOPS), ratio(p, IMPL_PADDED, F_MOPS),
				med(p, IMPL_GROUPED, F_SNAPSHOTS), 100 * med(p, IMPL_GROUPED, F_SHARE));
		}
	}
	fprintf(f, "\nPer writer CPU second (corrects for a shared machine), Mops per CPU-s; "
		   "ratios grouped / other\n\n");
	if (opt.markdown)
		fputs("| workload | threads | grouped | per-line | counters | packed | padded "
		      "| g/per-line | g/counters | g/packed | g/padded |\n"
		      "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n", f);
	print_rows(f, pts, npts, F_CPU_MOPS, 1, true);
	fprintf(f, "\nReader snapshots per second (all 30 items; exact at quiescence)\n\n");
	if (opt.markdown)
		fputs("| workload | threads | grouped | per-line | counters | packed | padded |\n"
		      "|---|--:|--:|--:|--:|--:|--:|\n", f);
	print_rows(f, pts, npts, F_SNAPSHOTS, 0, false);
	fprintf(f, "\nMemory per item: ");
	for (unsigned int i = 0; i < NR_IMPLS; i++) {
		double per_cpu, central;

		impl_bytes(i, &per_cpu, &central);
		fprintf(f, "%s%s %.0f B per CPU + %.0f B central", i ? "; " : "", impl_names[i],
			per_cpu, central);
	}
	fputs("\n", f);
}

static void write_csv(const char *path, const struct point *pts, unsigned int npts)
{
	FILE *f = bench_csv_open(&opt, path);

	fprintf(f, "workload,threads,impl,mode,runs,duration_ms,median_mops,min_mops,max_mops,"
		   "grouped_ratio,cpu_share,cpu_mops,grouped_cpu_ratio,snapshots_per_s\n");
	for (unsigned int k = 0; k < npts; k++)
		for (unsigned int i = 0; i < NR_IMPLS; i++) {
			const struct point *p = &pts[k];
			double lo = bench_runs_extreme(p->s[i], sizeof(struct sample), F_MOPS,
						       opt.runs, false),
			       hi = bench_runs_extreme(p->s[i], sizeof(struct sample), F_MOPS,
						       opt.runs, true);

			fprintf(f, "%s,%u,%s,%s,%u,%u,%.3f,%.3f,%.3f,%.4f,%.3f,%.3f,%.4f,%.0f\n",
				workload_names[p->wl], p->threads, impl_names[i],
				pcpu_cpu_setup() == PCPU_CPU_RSEQ ? "rseq" : "atomic", opt.runs,
				opt.duration_ms, med(p, i, F_MOPS), lo, hi,
				i ? ratio(p, i, F_MOPS) : 1.0,
				med(p, i, F_SHARE), med(p, i, F_CPU_MOPS),
				i ? ratio(p, i, F_CPU_MOPS) : 1.0, med(p, i, F_SNAPSHOTS));
		}
	fclose(f);
}

static void plot_where(const void *point, unsigned int *workload, unsigned int *threads)
{
	*workload = ((const struct point *)point)->wl;
	*threads = ((const struct point *)point)->threads;
}

/* The plot's figures: throughput, and the ratios per writer CPU second */
static double plot_figure(const void *point, unsigned int impl, bool ratio_of)
{
	return ratio_of ? ratio(point, impl, F_CPU_MOPS) : med(point, impl, F_MOPS);
}

static void write_plot(const char *path, const struct point *pts, unsigned int npts)
{
	static const struct bench_panels panels = {
		.workloads = workload_names,
		.nr_workloads = NR_WORKLOADS,
		.nr_impls = NR_IMPLS,
		.impls = "grouped per-line counters packed padded",
		.others = "per-line counters packed padded",
		.first = "grouped",
		.xlabel = "writer threads",
		.throughput = "throughput (wall clock)",
		.ratios = "grouped / other, per writer CPU second",
		.ratio_range = "[0.25:8]",
	};
	FILE *g = bench_plot_open(&opt, path);

	if (!g)
		return;
	bench_plot_data(g, &panels,
			&(struct bench_plot_points){ .pts = pts, .size = sizeof(*pts), .npts = npts,
						     .where = plot_where, .figure = plot_figure });
	fprintf(g, "set multiplot layout 2,%d title 'percpu-stat-bench: vm_stat-like set, 30 items, "
		   "ops of 3-4 items, 1 reader (median of %u x %u ms, %u CPUs)'\n",
		NR_WORKLOADS, opt.runs, opt.duration_ms, pcpu_cpu_online());
	bench_plot_panels(g, &panels);
	bench_plot_close(&opt, path, g);
}

int main(int argc, char **argv)
{
	static struct point pts[NR_WORKLOADS * BENCH_MAX_COUNTS];
	unsigned int counts[BENCH_MAX_COUNTS], ncounts, npts = 0;

	parse_options(argc, argv);
	pcpu_cpu_setup();
	workload_init();
	ncounts = bench_thread_counts(&opt, counts);

	print_machine(stdout);
	for (unsigned int wl = 0; wl < NR_WORKLOADS; wl++)
		for (unsigned int c = 0; c < ncounts; c++) {
			struct point *p = &pts[npts++];

			p->wl = wl;
			p->threads = counts[c];
			for (unsigned int run = 0; run < opt.runs; run++)
				for (unsigned int k = 0; k < NR_IMPLS; k++) {
					enum impl impl = (k + run) % NR_IMPLS;

					p->s[impl][run] = measure(impl, wl, p->threads);
				}
			fprintf(stderr, ".");
		}
	fprintf(stderr, "\n");
	print_table(stdout, pts, npts);
	if (opt.csv)
		write_csv(opt.csv, pts, npts);
	if (opt.plot)
		write_plot(opt.plot, pts, npts);
	return 0;
}
