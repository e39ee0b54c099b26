/* SPDX-License-Identifier: MIT */
/* The harness of the side-by-side benchmarks (see harness.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <percpu/cpu.h>

#include "harness.h"
#include "host_cpu.h"
#include "timing.h"

const char bench_usage_runs[] =
	"  --quick             short run: 3 runs of 50 ms per point (for meson benchmark)\n"
	"  --runs N            runs per point, medians reported (default 5)\n"
	"  --duration-ms N     length of one measurement (default 200)\n"
	"  --max-threads N     largest thread count (default 2 x online CPUs)\n";

const char bench_usage_outputs[] =
	"  --markdown          print the tables in markdown\n"
	"  --csv FILE          write every point as CSV\n"
	"  --plot FILE.png     plot with gnuplot (skipped with a message if absent)\n"
	"  --help\n";

int bench_name_index(const char *name, const char *const *names, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (strcmp(name, names[i]) == 0)
			return (int)i;
	return -1;
}

unsigned long long bench_parse_num(const struct bench_options *o, const char *arg,
				   const char *what, unsigned long long max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || *end || end == arg || v == 0 || v > max) {
		fprintf(stderr, "%s: bad %s '%s' (1 to %llu)\n", o->prog, what, arg, max);
		exit(2);
	}
	return v;
}

bool bench_option(struct bench_options *o, int c, void (*usage)(FILE *f))
{
	switch (c) {
	case 'q': o->quick = true; break;
	case 'r': o->runs = (unsigned int)bench_parse_num(o, optarg, "--runs", BENCH_MAX_RUNS); break;
	case 'd':
		o->duration_ms = (unsigned int)bench_parse_num(o, optarg, "--duration-ms", 600000);
		break;
	case 't':
		o->max_threads =
			(unsigned int)bench_parse_num(o, optarg, "--max-threads", BENCH_MAX_THREADS);
		break;
	case 'm': o->markdown = true; break;
	case 'c': o->csv = optarg; break;
	case 'p': o->plot = optarg; break;
	case 'h': usage(stdout); exit(0);
	case '?': usage(stderr); exit(2);
	default: return false;
	}
	return true;
}

void bench_options_done(struct bench_options *o, int argc, void (*usage)(FILE *f))
{
	if (optind < argc) {
		usage(stderr);
		exit(2);
	}
	if (o->quick) {
		o->runs = 3;
		o->duration_ms = 50;
	}
}

unsigned int bench_thread_counts(struct bench_options *o, unsigned int *counts)
{
	unsigned int n = 0;

	if (!o->max_threads)
		o->max_threads = 2 * pcpu_cpu_online();
	if (o->max_threads > BENCH_MAX_THREADS)
		o->max_threads = BENCH_MAX_THREADS;
	for (unsigned int t = 1; t <= o->max_threads && n < BENCH_MAX_COUNTS; t *= 2)
		counts[n++] = t;
	if (counts[n - 1] != o->max_threads && n < BENCH_MAX_COUNTS)
		counts[n++] = o->max_threads;
	return n;
}

void bench_machine(char *buf, size_t size)
{
	struct utsname u;
	char cpu[256];

	host_cpu_describe(cpu, sizeof(cpu));
	uname(&u);
	snprintf(buf, size, "%s, %u online / %u possible CPUs, %s %s", cpu, pcpu_cpu_online(),
		 pcpu_cpu_possible(), u.sysname, u.release);
}

double bench_load(void)
{
	double load[3];

	return getloadavg(load, 3) < 0 ? -1 : load[0];
}

void bench_sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static double figure(const void *first, size_t size, size_t offset, unsigned int k)
{
	double v;

	memcpy(&v, (const char *)first + k * size + offset, sizeof(v));
	return v;
}

double bench_runs_median(const void *first, size_t size, size_t offset, unsigned int n)
{
	double v[BENCH_MAX_RUNS];

	for (unsigned int k = 0; k < n; k++)
		v[k] = figure(first, size, offset, k);
	return timing_median(v, n);
}

double bench_runs_extreme(const void *first, size_t size, size_t offset, unsigned int n,
			  bool max)
{
	double x = figure(first, size, offset, 0);

	for (unsigned int k = 1; k < n; k++) {
		double v = figure(first, size, offset, k);

		if (max ? v > x : v < x)
			x = v;
	}
	return x;
}

double bench_runs_ratio(const void *base, const void *other, size_t size, size_t offset,
			unsigned int n)
{
	double v[BENCH_MAX_RUNS];

	for (unsigned int k = 0; k < n; k++) {
		double d = figure(other, size, offset, k);

		v[k] = d > 0 ? figure(base, size, offset, k) / d : 0;
	}
	return timing_median(v, n);
}

FILE *bench_csv_open(const struct bench_options *o, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", o->prog, path, strerror(errno));
		exit(1);
	}
	return f;
}

FILE *bench_plot_open(const struct bench_options *o, const char *path)
{
	FILE *g;

	if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
		fprintf(stderr, "%s: gnuplot not found, no plot written (%s)\n", o->prog, path);
		return NULL;
	}
	g = popen("gnuplot", "w");
	if (!g) {
		fprintf(stderr, "%s: cannot run gnuplot (%s)\n", o->prog, path);
		return NULL;
	}
	fprintf(g, "set terminal pngcairo size 1400,900 noenhanced font ',10'\nset output '%s'\n",
		path);
	return g;
}

void bench_plot_close(const struct bench_options *o, const char *path, FILE *g)
{
	if (pclose(g) != 0)
		fprintf(stderr, "%s: gnuplot failed, no plot written (%s)\n", o->prog, path);
}

void bench_plot_data(FILE *g, const struct bench_panels *p, const struct bench_plot_points *d)
{
	for (unsigned int wl = 0; wl < p->nr_workloads; wl++) {
		if (p->shown && !p->shown[wl])
			continue;
		fprintf(g, "$w%u << EOD\n", wl);
		for (unsigned int k = 0; k < d->npts; k++) {
			const void *point = (const char *)d->pts + k * d->size;
			unsigned int workload, threads;

			d->where(point, &workload, &threads);
			if (workload != wl)
				continue;
			fprintf(g, "%u", threads);
			for (unsigned int i = 0; i < p->nr_impls; i++)
				fprintf(g, " %.3f", d->figure(point, i, false));
			for (unsigned int i = 1; i < p->nr_impls; i++)
				fprintf(g, " %.4f", d->figure(point, i, true));
			fputs("\n", g);
		}
		fputs("EOD\n", g);
	}
}

void bench_plot_panels(FILE *g, const struct bench_panels *p)
{
	fprintf(g, "set grid\nset key top left\nset logscale x 2\nset xlabel '%s'\n", p->xlabel);
	for (unsigned int wl = 0; wl < p->nr_workloads; wl++) {
		if (p->shown && !p->shown[wl])
			continue;
		fprintf(g, "set title '%s: %s'\nset ylabel 'Mops/s'\nset logscale y\n",
			p->workloads[wl], p->throughput);
		fprintf(g, "plot for [i=2:%u] $w%u using 1:i with linespoints lw 2 title "
			   "word('%s', i-1)\n",
			p->nr_impls + 1, wl, p->impls);
	}
	for (unsigned int wl = 0; wl < p->nr_workloads; wl++) {
		if (p->shown && !p->shown[wl])
			continue;
		fprintf(g, "set title '%s: %s'\nset ylabel 'ratio'\nset logscale y\n",
			p->workloads[wl], p->ratios);
		if (p->ratio_range)
			fprintf(g, "set yrange %s\n", p->ratio_range);
		fprintf(g, "plot for [i=%u:%u] $w%u using 1:i with linespoints lw 2 title "
			   "'%s / '.word('%s', i-%u), 1 with lines dt 2 lc rgb 'gray' notitle\n",
			p->nr_impls + 2, 2 * p->nr_impls, wl, p->first, p->others, p->nr_impls + 1);
	}
	fputs("unset multiplot\n", g);
}
