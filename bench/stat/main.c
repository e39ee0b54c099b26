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
 * For every workload and writer thread count it does N runs; each run
 * measures every implementation back to back, starting with a different one
 * each run, so that ratios compare numbers taken moments apart; a ratio is
 * the median of the per-run ratios. Every run is checked against an exact
 * oracle (the writers' operation counts). The machine may be shared, so the
 * report also gives the writers' share of the CPU they could have had.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <percpu/cpu.h>

#include "impls.h"

#define MAX_RUNS 64
#define MAX_THREADS 256
#define MAX_COUNTS 16

struct options {
	bool quick;
	unsigned int runs;
	unsigned int duration_ms;
	unsigned int max_threads;
	unsigned int reader_us;
	bool markdown;
	const char *csv;
	const char *plot;
};

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
	struct sample s[NR_IMPLS][MAX_RUNS];
};

static struct options opt = { .runs = 5, .duration_ms = 200, .reader_us = 100 };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: percpu-stat-bench [options]\n"
		"  --quick             short run: 3 runs of 50 ms per point (for meson benchmark)\n"
		"  --runs N            runs per point, medians reported (default 5)\n"
		"  --duration-ms N     length of one measurement (default 200)\n"
		"  --max-threads N     largest writer thread count (default 2 x online CPUs)\n"
		"  --reader-us N       pause of the reader between snapshots (default 100;\n"
		"                      0: back to back)\n"
		"  --markdown          print the tables in markdown\n"
		"  --csv FILE          write every point as CSV\n"
		"  --plot FILE.png     plot with gnuplot (skipped with a message if absent)\n"
		"  --help\n");
}

static unsigned int parse_uint(const char *arg, const char *what, unsigned int max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || *end || end == arg || v == 0 || v > max) {
		fprintf(stderr, "percpu-stat-bench: bad %s '%s' (1 to %u)\n", what, arg, max);
		exit(2);
	}
	return (unsigned int)v;
}

static void parse_options(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "runs", required_argument, NULL, 'r' },
		{ "duration-ms", required_argument, NULL, 'd' },
		{ "max-threads", required_argument, NULL, 't' },
		{ "reader-us", required_argument, NULL, 'u' },
		{ "markdown", no_argument, NULL, 'm' },
		{ "csv", required_argument, NULL, 'c' },
		{ "plot", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'q': opt.quick = true; break;
		case 'r': opt.runs = parse_uint(optarg, "--runs", MAX_RUNS); break;
		case 'd': opt.duration_ms = parse_uint(optarg, "--duration-ms", 600000); break;
		case 't': opt.max_threads = parse_uint(optarg, "--max-threads", MAX_THREADS); break;
		case 'u':
			opt.reader_us = strcmp(optarg, "0") == 0 ? 0 :
				parse_uint(optarg, "--reader-us", 1000000);
			break;
		case 'm': opt.markdown = true; break;
		case 'c': opt.csv = optarg; break;
		case 'p': opt.plot = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		usage(stderr);
		exit(2);
	}
	if (opt.quick) {
		opt.runs = 3;
		opt.duration_ms = 50;
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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
	struct timespec pause = { (time_t)(opt.reader_us / 1000000),
				  (long)(opt.reader_us % 1000000) * 1000 };
	int64_t values[NR_ITEMS];

	pthread_barrier_wait(r->go);
	while (!*r->stop) {
		set_snapshot(r->set, values);
		r->snapshots++;
		if (opt.reader_us)
			nanosleep(&pause, NULL);
	}
	return NULL;
}

static struct sample measure(enum impl impl, enum workload wl, unsigned int threads)
{
	struct bench_set *set = set_create(impl, wl);
	struct writer_arg w[MAX_THREADS];
	struct reader_arg r = { .set = set };
	volatile bool stop = false;
	struct timespec run = { (time_t)(opt.duration_ms / 1000),
				(long)(opt.duration_ms % 1000) * 1000000L };
	pthread_barrier_t go;
	int64_t values[NR_ITEMS], exact[NR_ITEMS];
	uint64_t ops = 0;
	double t0, wall, cpu = 0;
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
	t0 = now_s();
	nanosleep(&run, NULL);
	stop = true;
	for (unsigned int t = 0; t < threads; t++)
		pthread_join(w[t].thread, NULL);
	wall = now_s() - t0;
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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum field { F_MOPS, F_SHARE, F_CPU_MOPS, F_SNAPSHOTS };

static double field_of(const struct sample *s, enum field f)
{
	switch (f) {
	case F_MOPS: return s->mops;
	case F_SHARE: return s->cpu_share;
	case F_CPU_MOPS: return s->cpu_mops;
	default: return s->snapshots;
	}
}

static double med(const struct point *p, enum impl impl, enum field f)
{
	double v[MAX_RUNS];

	for (unsigned int k = 0; k < opt.runs; k++)
		v[k] = field_of(&p->s[impl][k], f);
	return median(v, opt.runs);
}

static double extreme(const struct point *p, enum impl impl, bool max)
{
	double x = p->s[impl][0].mops;

	for (unsigned int k = 1; k < opt.runs; k++)
		if (max ? p->s[impl][k].mops > x : p->s[impl][k].mops < x)
			x = p->s[impl][k].mops;
	return x;
}

/* Median over runs of grouped / @impl, by wall clock or by CPU time. */
static double ratio(const struct point *p, enum impl impl, enum field f)
{
	double v[MAX_RUNS];

	for (unsigned int k = 0; k < opt.runs; k++)
		v[k] = field_of(&p->s[IMPL_GROUPED][k], f) / field_of(&p->s[impl][k], f);
	return median(v, opt.runs);
}

/* ---- reports ----------------------------------------------------------------- */

static void print_machine(FILE *f)
{
	struct utsname u;
	char model[256] = "unknown";
	FILE *ci = fopen("/proc/cpuinfo", "re");
	double load[3] = { 0 };

	if (ci) {
		char line[512];

		while (fgets(line, sizeof(line), ci))
			if (strncmp(line, "model name", 10) == 0) {
				char *v = strchr(line, ':');

				if (v) {
					snprintf(model, sizeof(model), "%s", v + 2);
					model[strcspn(model, "\n")] = '\0';
				}
				break;
			}
		fclose(ci);
	}
	uname(&u);
	getloadavg(load, 3);
	fprintf(f, "machine: %s, %u online / %u possible CPUs, %s %s; update path: %s; load %.1f\n",
		model, pcpu_cpu_online(), pcpu_cpu_possible(), u.sysname, u.release,
		pcpu_cpu_setup() == PCPU_CPU_RSEQ ? "rseq" : "atomic", load[0]);
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
		opt.runs, opt.duration_ms, opt.reader_us);
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
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "percpu-stat-bench: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	fprintf(f, "workload,threads,impl,mode,runs,duration_ms,median_mops,min_mops,max_mops,"
		   "grouped_ratio,cpu_share,cpu_mops,grouped_cpu_ratio,snapshots_per_s\n");
	for (unsigned int k = 0; k < npts; k++)
		for (unsigned int i = 0; i < NR_IMPLS; i++) {
			const struct point *p = &pts[k];

			fprintf(f, "%s,%u,%s,%s,%u,%u,%.3f,%.3f,%.3f,%.4f,%.3f,%.3f,%.4f,%.0f\n",
				workload_names[p->wl], p->threads, impl_names[i],
				pcpu_cpu_setup() == PCPU_CPU_RSEQ ? "rseq" : "atomic", opt.runs,
				opt.duration_ms, med(p, i, F_MOPS), extreme(p, i, false),
				extreme(p, i, true), i ? ratio(p, i, F_MOPS) : 1.0,
				med(p, i, F_SHARE), med(p, i, F_CPU_MOPS),
				i ? ratio(p, i, F_CPU_MOPS) : 1.0, med(p, i, F_SNAPSHOTS));
		}
	fclose(f);
}

static void write_plot(const char *path, const struct point *pts, unsigned int npts)
{
	FILE *g;

	if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
		fprintf(stderr, "percpu-stat-bench: gnuplot not found, no plot written (%s)\n", path);
		return;
	}
	g = popen("gnuplot", "w");
	if (!g) {
		fprintf(stderr, "percpu-stat-bench: cannot run gnuplot (%s)\n", path);
		return;
	}
	fprintf(g, "set terminal pngcairo size 1400,900 noenhanced font ',10'\nset output '%s'\n", path);
	/* one datablock per workload: threads, 5 x Mops, 4 x ratios per writer CPU second */
	for (unsigned int wl = 0; wl < NR_WORKLOADS; wl++) {
		fprintf(g, "$%s << EOD\n", workload_names[wl]);
		for (unsigned int k = 0; k < npts; k++) {
			const struct point *p = &pts[k];

			if (p->wl != wl)
				continue;
			fprintf(g, "%u", p->threads);
			for (unsigned int i = 0; i < NR_IMPLS; i++)
				fprintf(g, " %.3f", med(p, i, F_MOPS));
			for (unsigned int i = 1; i < NR_IMPLS; i++)
				fprintf(g, " %.4f", ratio(p, i, F_CPU_MOPS));
			fputs("\n", g);
		}
		fputs("EOD\n", g);
	}
	fprintf(g, "set multiplot layout 2,%d title 'percpu-stat-bench: vm_stat-like set, 30 items, "
		   "ops of 3-4 items, 1 reader (median of %u x %u ms, %u CPUs)'\n",
		NR_WORKLOADS, opt.runs, opt.duration_ms, pcpu_cpu_online());
	fputs("set grid\nset key top left\nset logscale x 2\nset xlabel 'writer threads'\n", g);
	for (unsigned int wl = 0; wl < NR_WORKLOADS; wl++) {
		fprintf(g, "set title '%s: throughput (wall clock)'\nset ylabel 'Mops/s'\nset logscale y\n",
			workload_names[wl]);
		fprintf(g, "plot for [i=2:6] $%s using 1:i with linespoints lw 2 title "
			   "word('grouped per-line counters packed padded', i-1)\n",
			workload_names[wl]);
	}
	for (unsigned int wl = 0; wl < NR_WORKLOADS; wl++) {
		fprintf(g, "set title '%s: grouped / other, per writer CPU second'\n"
			   "set ylabel 'ratio'\nset logscale y\n"
			   "set yrange [0.25:8]\n",
			workload_names[wl]);
		fprintf(g, "plot for [i=7:10] $%s using 1:i with linespoints lw 2 title "
			   "'grouped / '.word('per-line counters packed padded', i-6), 1 with lines "
			   "dt 2 lc rgb 'gray' notitle\n",
			workload_names[wl]);
	}
	fputs("unset multiplot\n", g);
	if (pclose(g) != 0)
		fprintf(stderr, "percpu-stat-bench: gnuplot failed, no plot written (%s)\n", path);
}

int main(int argc, char **argv)
{
	static struct point pts[NR_WORKLOADS * MAX_COUNTS];
	unsigned int counts[MAX_COUNTS], ncounts = 0, npts = 0;

	parse_options(argc, argv);
	pcpu_cpu_setup();
	workload_init();
	if (!opt.max_threads)
		opt.max_threads = 2 * pcpu_cpu_online();
	if (opt.max_threads > MAX_THREADS)
		opt.max_threads = MAX_THREADS;
	for (unsigned int t = 1; t <= opt.max_threads && ncounts < MAX_COUNTS; t *= 2)
		counts[ncounts++] = t;
	if (counts[ncounts - 1] != opt.max_threads && ncounts < MAX_COUNTS)
		counts[ncounts++] = opt.max_threads;

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
