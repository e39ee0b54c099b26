/* SPDX-License-Identifier: MIT */
/*
 * percpu-bench: percpu against one shared atomic, a port of the kernel's
 * percpu_counter and a per-thread slot (the practical limit), side by side
 * in one process, on the workloads of DESIGN.md.
 *
 * For every workload and thread count it does N runs; each run measures
 * every implementation back to back (starting with a different one each
 * run), so that the ratios compare numbers taken moments apart.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <percpu/cpu.h>

#include "addcmp.h"
#include "fastpath.h"
#include "harness.h"
#include "host_cpu.h"
#include "impls.h"
#include "report.h"
#include "runner.h"
#include "timing.h"
#include "workloads.h"

#define MAX_RUNS 64
#define MAX_THREAD_COUNTS 32

struct options {
	bool quick;
	unsigned int runs;
	unsigned int duration_ms;
	unsigned int max_threads;
	bool pin;
	bool markdown;
	bool fastpath;
	bool add_only;
	double min_vs_v03; /* 0: no check */
	double min_vs_v04; /* 0: no check */
	bool workloads[NR_WORKLOADS];
	const char *csv;
	const char *plot;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: percpu-bench [options]\n"
		"  --quick             short run: 3 runs of 50 ms, threads 1, CPUs, 2xCPUs\n"
		"  --runs N            runs per point, median reported (default 5)\n"
		"  --duration-ms N     length of one run (default 200)\n"
		"  --max-threads N     largest writer thread count (default 2 x online CPUs)\n"
		"  --workloads LIST    comma-separated subset of inc,work,allocfree,\n"
		"                      commit-far,commit-near,readers (default all)\n"
		"  --pin               pin thread i to the i-th allowed CPU (default: float)\n"
		"  --no-fastpath       skip the single-thread ns-per-add measurement\n"
		"  --add-only          only the add against 0.4's, 0.3's and the bare rseq adds\n"
		"  --min-vs-0.3 R      fail unless the add is >= R x 0.3's (per CPU time)\n"
		"  --min-vs-0.4 R      fail unless the add is >= R x 0.4's (per CPU time)\n"
		"  --markdown          print the tables in markdown\n"
		"  --csv FILE          write every point as CSV\n"
		"  --plot FILE.png     plot with gnuplot (skipped with a message if absent)\n"
		"  --help\n"
		"Environment: PCPU_FORCE_FALLBACK=1 makes percpu and the kernel port use\n"
		"their atomic path.\n");
}

static bool parse_uint(const char *s, unsigned int min, unsigned int max, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = (unsigned int)v;
	return true;
}

static bool parse_workloads(char *list, bool *selected)
{
	memset(selected, 0, NR_WORKLOADS * sizeof(*selected));
	for (char *save = NULL, *name = strtok_r(list, ",", &save); name;
	     name = strtok_r(NULL, ",", &save)) {
		int w = bench_name_index(name, workload_names, NR_WORKLOADS);

		if (w < 0) {
			fprintf(stderr, "percpu-bench: unknown workload '%s'\n", name);
			return false;
		}
		selected[w] = true;
	}
	return true;
}

/*
 * The command line into @o: 0, or -1 for a usage error (said). Long: the
 * option table and its switch, one case per option, read side by side.
 */
static int parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_RUNS = 256, OPT_DURATION, OPT_MAX_THREADS, OPT_WORKLOADS, OPT_NO_FASTPATH,
	       OPT_MARKDOWN, OPT_CSV, OPT_PLOT, OPT_PIN, OPT_QUICK, OPT_ADD_ONLY, OPT_MIN_VS_V03,
	       OPT_MIN_VS_V04,
	       OPT_HELP };
	static const struct option longopts[] = {
		{ "quick", no_argument, NULL, OPT_QUICK },
		{ "runs", required_argument, NULL, OPT_RUNS },
		{ "duration-ms", required_argument, NULL, OPT_DURATION },
		{ "max-threads", required_argument, NULL, OPT_MAX_THREADS },
		{ "workloads", required_argument, NULL, OPT_WORKLOADS },
		{ "pin", no_argument, NULL, OPT_PIN },
		{ "no-fastpath", no_argument, NULL, OPT_NO_FASTPATH },
		{ "add-only", no_argument, NULL, OPT_ADD_ONLY },
		{ "min-vs-0.3", required_argument, NULL, OPT_MIN_VS_V03 },
		{ "min-vs-0.4", required_argument, NULL, OPT_MIN_VS_V04 },
		{ "markdown", no_argument, NULL, OPT_MARKDOWN },
		{ "csv", required_argument, NULL, OPT_CSV },
		{ "plot", required_argument, NULL, OPT_PLOT },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	bool runs_set = false, duration_set = false;
	int opt;

	memset(o, 0, sizeof(*o));
	o->fastpath = true;
	for (int w = 0; w < NR_WORKLOADS; w++)
		o->workloads[w] = true;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_QUICK:
			o->quick = true;
			break;
		case OPT_RUNS:
			if (!parse_uint(optarg, 1, MAX_RUNS, &o->runs))
				goto bad;
			runs_set = true;
			break;
		case OPT_DURATION:
			if (!parse_uint(optarg, 1, 600000, &o->duration_ms))
				goto bad;
			duration_set = true;
			break;
		case OPT_MAX_THREADS:
			if (!parse_uint(optarg, 1, 4096, &o->max_threads))
				goto bad;
			break;
		case OPT_WORKLOADS:
			if (!parse_workloads(optarg, o->workloads))
				return -1;
			break;
		case OPT_PIN:
			o->pin = true;
			break;
		case OPT_NO_FASTPATH:
			o->fastpath = false;
			break;
		case OPT_ADD_ONLY:
			o->add_only = true;
			break;
		case OPT_MIN_VS_V03:
		case OPT_MIN_VS_V04: {
			double *min = opt == OPT_MIN_VS_V03 ? &o->min_vs_v03 : &o->min_vs_v04;
			char *end;

			*min = strtod(optarg, &end);
			if (end == optarg || *end || !(*min > 0 && *min < 10))
				goto bad;
			break;
		}
		case OPT_MARKDOWN:
			o->markdown = true;
			break;
		case OPT_CSV:
			o->csv = optarg;
			break;
		case OPT_PLOT:
			o->plot = optarg;
			break;
		case OPT_HELP:
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc)
		goto bad;
	if (!runs_set)
		o->runs = o->quick ? 3 : 5;
	if (!duration_set)
		o->duration_ms = o->quick ? 50 : 200;
	if (o->add_only) {
		o->fastpath = false;
		memset(o->workloads, 0, sizeof(o->workloads));
	}
	return 0;
bad:
	fprintf(stderr, "percpu-bench: bad argument%s%s\n", optarg ? ": " : "",
		optarg ? optarg : "");
	usage(stderr);
	return -1;
}

/*
 * Writer thread counts: 1, 2, 4, ... up to @max, @max included; --quick
 * keeps only 1, the CPU count and @max.
 */
static unsigned int thread_counts(const struct options *o, unsigned int online, unsigned int max,
				  unsigned int *counts)
{
	unsigned int n = 0;

	for (unsigned int t = 1; t < max && n < MAX_THREAD_COUNTS - 1; t *= 2)
		if (!o->quick || t == 1 || t == online)
			counts[n++] = t;
	if (o->quick && online < max && (n == 0 || counts[n - 1] != online))
		counts[n++] = online;
	counts[n++] = max;
	return n;
}

static const char *mode_name(enum pcpu_cpu_mode mode)
{
	switch (mode) {
	case PCPU_CPU_RSEQ:
		return "rseq";
	case PCPU_CPU_ATOMIC:
		return "atomic (fallback)";
	default:
		return "unset";
	}
}

/* The 1-minute load average, or -1. */
static double load_average(void)
{
	FILE *f = fopen("/proc/loadavg", "re");
	double load = -1;

	if (f) {
		if (fscanf(f, "%lf", &load) != 1)
			load = -1;
		fclose(f);
	}
	return load;
}

/* Measures one point; counts inexact runs in @r. 0 or a negative errno. */
static int measure_point(const struct options *o, struct bench_report *r, struct bench_point *p)
{
	static double mops[NR_IMPLS][MAX_RUNS], reader[NR_IMPLS][MAX_RUNS];
	static double ratio[NR_IMPLS][MAX_RUNS], reader_ratio[NR_IMPLS][MAX_RUNS];
	static double share[NR_IMPLS][MAX_RUNS];
	static double cpu_mops[NR_IMPLS][MAX_RUNS], cpu_ratio[NR_IMPLS][MAX_RUNS];
	struct run_config cfg = { .duration_ms = o->duration_ms, .pin = o->pin };

	for (unsigned int run = 0; run < o->runs; run++) {
		for (int k = 0; k < NR_IMPLS; k++) {
			enum bench_impl impl = (enum bench_impl)((run + (unsigned int)k) % NR_IMPLS);
			struct run_result res;
			int err = runner_run(p->workload, impl, p->threads, &cfg, &res);

			if (err)
				return err;
			if (!res.exact) {
				fprintf(stderr, "percpu-bench: %s %s %u threads: value %lld, "
						"expected %lld\n",
					workload_names[p->workload], impl_names[impl],
					p->threads, (long long)res.got, (long long)res.expected);
				r->inexact++;
			}
			/* 2 GiB is twice the value: "above" is a wrong answer */
			if (p->workload == WL_COMMIT_FAR && res.answers[2]) {
				fprintf(stderr, "percpu-bench: commit-far %s %u threads: %llu "
						"compares answered above the limit\n",
					impl_names[impl], p->threads,
					(unsigned long long)res.answers[2]);
				r->wrong += res.answers[2];
			}
			mops[impl][run] = res.writer_mops;
			reader[impl][run] = res.reader_mops;
			share[impl][run] = res.cpu_share;
			cpu_mops[impl][run] = res.cpu_mops;
		}
		for (int impl = 0; impl < NR_IMPLS; impl++) {
			ratio[impl][run] = mops[IMPL_PERCPU][run] / mops[impl][run];
			cpu_ratio[impl][run] = cpu_mops[IMPL_PERCPU][run] / cpu_mops[impl][run];
			reader_ratio[impl][run] = reader[impl][run] > 0 ?
				reader[IMPL_PERCPU][run] / reader[impl][run] : 0;
		}
	}
	for (int impl = 0; impl < NR_IMPLS; impl++) {
		p->mops[impl] = timing_median(mops[impl], o->runs);
		p->mops_min[impl] = p->mops_max[impl] = mops[impl][0];
		for (unsigned int run = 1; run < o->runs; run++) {
			if (mops[impl][run] < p->mops_min[impl])
				p->mops_min[impl] = mops[impl][run];
			if (mops[impl][run] > p->mops_max[impl])
				p->mops_max[impl] = mops[impl][run];
		}
		p->reader_mops[impl] = timing_median(reader[impl], o->runs);
		p->cpu_share[impl] = timing_median(share[impl], o->runs);
		p->cpu_mops[impl] = timing_median(cpu_mops[impl], o->runs);
		p->cpu_ratio[impl] = timing_median(cpu_ratio[impl], o->runs);
		p->ratio[impl] = timing_median(ratio[impl], o->runs);
		p->reader_ratio[impl] = timing_median(reader_ratio[impl], o->runs);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	struct bench_report r = { 0 };
	unsigned int counts[MAX_THREAD_COUNTS], nr_counts, max;
	bool progress = isatty(STDERR_FILENO);
	int err;

	if (parse_options(argc, argv, &o))
		return 2;
	host_cpu_describe(r.cpu, sizeof(r.cpu));
	r.mode = mode_name(pcpu_cpu_setup());
	for (int i = 0; i < NR_IMPLS; i++)
		r.paths[i] = impl_path((enum bench_impl)i);
	if (o.workloads[WL_WORK])
		r.work_ns = workload_work_ns(o.quick ? 20 : 100);
	r.online = pcpu_cpu_online();
	r.possible = pcpu_cpu_possible();
	r.runs = o.runs;
	r.duration_ms = o.duration_ms;
	r.pinned = o.pin;
	r.markdown = o.markdown;
	r.load_start = load_average();
	max = o.max_threads ? o.max_threads : 2 * r.online;
	nr_counts = thread_counts(&o, r.online, max, counts);
	r.points = calloc((size_t)NR_WORKLOADS * nr_counts, sizeof(*r.points));
	if (!r.points)
		return 1;
	report_header(stdout, &r);
	fflush(stdout);

	for (int w = 0; w < NR_WORKLOADS; w++) {
		if (!o.workloads[w])
			continue;
		for (unsigned int i = 0; i < nr_counts; i++) {
			struct bench_point *p = &r.points[r.nr_points];

			p->workload = (enum bench_workload)w;
			p->threads = counts[i];
			if (progress)
				fprintf(stderr, "\r%-12s %3u threads ...", workload_names[w], counts[i]);
			err = measure_point(&o, &r, p);
			if (err) {
				fprintf(stderr, "\npercpu-bench: %s: %s\n", workload_names[w],
					strerror(-err));
				return 1;
			}
			r.nr_points++;
		}
	}
	if (o.fastpath) {
		if (progress)
			fprintf(stderr, "\r%-30s", "ns per add ...");
		err = fastpath_measure(&r.fastpath, o.runs, o.quick ? 20 : 100);
		if (err) {
			fprintf(stderr, "\npercpu-bench: ns per add: %s\n", strerror(-err));
			return 1;
		}
		r.have_fastpath = true;
	}
	if (progress)
		fprintf(stderr, "\r%-30s", "the add against 0.4 ...");
	/* the headline ratio: at least 5 rounds, whatever --runs says */
	err = addcmp_measure(&r.addcmp, o.runs < 5 ? 5 : o.runs, o.duration_ms);
	if (err) {
		fprintf(stderr, "\npercpu-bench: the add against 0.4: %s\n", strerror(-err));
		return 1;
	}
	r.have_addcmp = true;
	if (progress)
		fprintf(stderr, "\r%-30s\r", "");

	if (r.nr_points)
		report_table(stdout, &r);
	report_fastpath(stdout, &r);
	addcmp_report(stdout, &r.addcmp);
	report_targets(stdout, &r);
	r.load_end = load_average();
	report_footer(stdout, &r);
	fflush(stdout);
	if (o.csv) {
		err = report_csv(o.csv, &r);
		if (err)
			fprintf(stderr, "percpu-bench: %s: %s\n", o.csv, strerror(-err));
		else
			printf("CSV written to %s\n", o.csv);
	}
	if (o.plot && report_plot(o.plot, &r) == 0)
		printf("plot written to %s\n", o.plot);
	free(r.points);
	if (o.min_vs_v03 > 0 && !addcmp_check_release(stdout, &r.addcmp, ADD_V03, o.min_vs_v03))
		return 1;
	if (o.min_vs_v04 > 0 && !addcmp_check_release(stdout, &r.addcmp, ADD_V04, o.min_vs_v04))
		return 1;
	return r.inexact || r.wrong || r.addcmp.inexact ? 1 : 0;
}
