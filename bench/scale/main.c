/* SPDX-License-Identifier: MIT */
/*
 * percpu-bench-scale: what the O(CPUs) paths cost on 2 to 1024 CPUs,
 * measured on any machine through the library's CPU model (model.c).
 *
 * A process can set the model once, before its first counter, so every CPU
 * count runs in a child forked before the parent touches the library; the
 * child sends its row back through a pipe. The parent prints the rows as
 * markdown tables, and optionally as CSV and a gnuplot PNG of cost against
 * N (only if gnuplot is installed).
 *
 *   percpu-bench-scale [--quick | --check] [--runs K] [--cpus N[/ONLINE]|real,...]
 *                      [--csv FILE] [--plot FILE]
 *
 * --runs K runs each CPU count in K children (at most 9) and prints the
 * median of each cell: on a shared machine the load moves between runs.
 *
 * --check measures each thing once, skips the 10k exposition, and exits
 * non-zero if the model broke a promise: the test suite runs it. (Every
 * mode checks the promises; rss_1k's, that 1k counters' resident set grows
 * by the running CPUs' pages and not all N's, is skipped with a note under
 * a sanitizer, valgrind or THP "always".)
 *
 * Each row: N possible CPUs, all online; then two containers' rows, 256 and
 * 1024 possible CPUs of which 4 are online (a counter's walks visit the
 * CPUs that ran, its armed ones: these rows should cost what 4/4 does).
 * "--cpus real" measures the machine's own CPUs without a model (the slots
 * are still filled by this thread, so they are not in the other CPUs'
 * caches as after real adds).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_cpu.h"
#include "timing.h"
#include "model.h"

#define MAX_ROWS 16
#define MAX_RUNS 9

struct config {
	unsigned int possible;
	unsigned int online;
};

static const struct config default_configs[] = {
	{ 2, 2 }, { 4, 4 }, { 16, 16 }, { 64, 64 }, { 256, 256 }, { 1024, 1024 },
	{ 256, 4 }, { 1024, 4 },
};

/* Runs the model for @cfg in a child; 0 or a negative errno. */
static int run_child(const struct config *cfg, enum scale_mode mode, double *row)
{
	int fds[2], status;
	size_t got = 0, want = SCALE_NR_COLUMNS * sizeof(*row);
	pid_t pid;

	if (pipe(fds) != 0)
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int err = scale_model_run(cfg->possible, cfg->online, mode, row);

		if (err) {
			fprintf(stderr, "percpu-bench-scale: N=%u: %s\n", cfg->possible,
				strerror(-err));
			_exit(1);
		}
		if (write(fds[1], row, want) != (ssize_t)want)
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	while (got < want) {
		ssize_t n = read(fds[0], (char *)row + got, want - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
	    got != want)
		return -EPROTO;
	return 0;
}

/* @runs children for @cfg; each cell of @row is the median of their values. */
static int run_config(const struct config *cfg, enum scale_mode mode, unsigned int runs,
		      double *row)
{
	static double each[MAX_RUNS][SCALE_NR_COLUMNS];

	for (unsigned int r = 0; r < runs; r++) {
		int err = run_child(cfg, mode, each[r]);

		if (err)
			return err;
	}
	for (unsigned int c = 0; c < SCALE_NR_COLUMNS; c++) {
		double v[MAX_RUNS];

		for (unsigned int r = 0; r < runs; r++)
			v[r] = each[r][c];
		row[c] = isnan(v[0]) ? NAN : timing_median(v, runs);
	}
	return 0;
}

static void print_cell(FILE *out, double v)
{
	if (isnan(v))
		fprintf(out, " - |");
	else if (v >= 1e7 || (v == floor(v) && v < 1e7))
		fprintf(out, " %.0f |", v);
	else
		fprintf(out, " %.1f |", v);
}

/* One markdown table of @cols (terminated by -1), N and online first. */
static void print_table(FILE *out, const char *title, const int *cols,
			double rows[][SCALE_NR_COLUMNS], unsigned int nr_rows)
{
	fprintf(out, "\n**%s**\n\n| N | online |", title);
	for (const int *c = cols; *c >= 0; c++) {
		const struct scale_column_info *ci = &scale_columns[*c];

		fprintf(out, " %s%s%s%s |", ci->name, *ci->unit ? " (" : "", ci->unit,
			*ci->unit ? ")" : "");
	}
	fprintf(out, "\n|--:|--:|");
	for (const int *c = cols; *c >= 0; c++)
		fprintf(out, "--:|");
	fprintf(out, "\n");
	for (unsigned int r = 0; r < nr_rows; r++) {
		fprintf(out, "| %.0f | %.0f |", rows[r][SCALE_possible], rows[r][SCALE_online]);
		for (const int *c = cols; *c >= 0; c++)
			print_cell(out, rows[r][*c]);
		fprintf(out, "\n");
	}
}

static void print_tables(FILE *out, double rows[][SCALE_NR_COLUMNS], unsigned int nr_rows)
{
	static const int costs[] = {
		SCALE_sum_warm,         SCALE_sum_cold,        SCALE_sum_pf_cold,
		SCALE_sum_remote,       SCALE_sum_pf_remote,
		SCALE_compare_precise,  SCALE_sync_fold,
		SCALE_fold_walk,        SCALE_fold_walk_seq_once,
		SCALE_fold_all_1k,      SCALE_fold_all_1k_idle, SCALE_stat_snapshot_64,
		SCALE_stat_sync_fold,
		SCALE_shared_snapshot_64, SCALE_expo_1k,       SCALE_expo_10k,
		-1,
	};
	static const int kernel[] = {
		SCALE_sum_warm, SCALE_kp_sum, SCALE_compare_precise, SCALE_kp_compare_precise,
		SCALE_sync_fold, SCALE_kp_sync_fold, -1,
	};
	static const int memory[] = {
		SCALE_counter_bytes,  SCALE_arena_bytes_1k, SCALE_rss_1k, SCALE_stat_item_bytes,
		SCALE_shared_item_bytes, SCALE_kp_bytes, -1,
	};
	static const int bounds[] = {
		SCALE_bound_zero_0_2,   SCALE_bound_zero,    SCALE_bound_1g,
		SCALE_stat_bound_zero,  SCALE_stat_bound_1g, SCALE_shared_bound_zero,
		SCALE_dropin_bound_zero, SCALE_kp_bound,     -1,
	};
	static const int floor_cost[] = {
		SCALE_elastic_from_0_2, SCALE_elastic_from, SCALE_add1_0_2, SCALE_add1, -1,
	};

	char cpu[256];

	host_cpu_describe(cpu, sizeof(cpu));
	fprintf(out, "CPU: %s\n", cpu);
	print_table(out, "Costs (median thread CPU time per call)", costs, rows, nr_rows);
	print_table(out, "percpu against the kernel port (ns per call)", kernel, rows, nr_rows);
	print_table(out, "Memory (bytes; rss_1k in KiB)", memory, rows, nr_rows);
	print_table(out, "Error bounds", bounds, rows, nr_rows);
	print_table(out, "The default floor near zero: where the elastic threshold takes over, and adds",
		    floor_cost, rows, nr_rows);
	fprintf(out, "\nColumns:\n\n");
	for (unsigned int c = 0; c < SCALE_NR_COLUMNS; c++)
		fprintf(out, "- `%s`: %s\n", scale_columns[c].name, scale_columns[c].what);
}

static int write_csv(const char *path, double rows[][SCALE_NR_COLUMNS], unsigned int nr_rows)
{
	FILE *f = fopen(path, "w");
	char cpu[256];

	if (!f)
		return -errno;
	host_cpu_describe(cpu, sizeof(cpu));
	for (unsigned int c = 0; c < SCALE_NR_COLUMNS; c++)
		fprintf(f, "%s%s", c ? "," : "", scale_columns[c].name);
	fprintf(f, ",cpu\n");
	for (unsigned int r = 0; r < nr_rows; r++) {
		for (unsigned int c = 0; c < SCALE_NR_COLUMNS; c++)
			fprintf(f, c ? ",%.10g" : "%.10g", rows[r][c]);
		fprintf(f, ",\"%s\"\n", cpu); /* last: the plot reads columns by number */
	}
	return fclose(f) ? -errno : 0;
}

/* Cost against N, log-log, rows with every CPU online; needs gnuplot. */
static void plot(const char *csv, const char *png)
{
	static const struct { int col; double scale; const char *title; } lines[] = {
		{ SCALE_sum_warm, 1, "sum, in cache" },
		{ SCALE_sum_cold, 1, "sum, flushed" },
		{ SCALE_sum_pf_cold, 1, "sum prefetching, flushed (bench)" },
		{ SCALE_sum_remote, 1, "sum, written on the other CPU" },
		{ SCALE_sync_fold, 1, "sync_if_delta_above, folding" },
		{ SCALE_kp_sum, 1, "kernel port sum" },
		{ SCALE_stat_snapshot_64, 1, "stat snapshot, 64 items" },
		{ SCALE_shared_snapshot_64, 1, "shared snapshot, 64 items" },
		{ SCALE_fold_all_1k, 1000, "fold_all, 1k counters" },
		{ SCALE_expo_10k, 1000, "exposition, 10k counters" },
	};
	FILE *gp;

	if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
		fprintf(stderr, "percpu-bench-scale: no gnuplot, no plot\n");
		return;
	}
	gp = popen("gnuplot", "w");
	if (!gp)
		return;
	fprintf(gp, "set terminal png size 1300,700\nset output '%s'\n"
		    "set datafile separator ','\nset logscale xy\nset key outside right\n"
		    "set termoption noenhanced\nset xrange [1.5:1400]\n"
		    "set xlabel 'possible CPUs (model)'\nset ylabel 'ns per call'\n"
		    "set title 'percpu: cost against the number of CPUs'\nset grid\nplot ",
		png);
	for (unsigned int i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		fprintf(gp, "%s'%s' every ::1 using (column(1) == column(2) ? column(1) : NaN):"
			    "(column(%d) * %g) with linespoints title '%s'",
			i ? ", " : "", csv, lines[i].col + 1, lines[i].scale, lines[i].title);
	fprintf(gp, "\n");
	if (pclose(gp) != 0)
		fprintf(stderr, "percpu-bench-scale: gnuplot failed\n");
}

static unsigned int parse_cpus(const char *list, struct config *configs)
{
	unsigned int n = 0;

	for (const char *p = list; *p && n < MAX_ROWS;) {
		char *end;
		unsigned long v = strtoul(p, &end, 10), online = v;

		if (!strncmp(p, "real", 4)) {
			v = online = 0;
			end = (char *)p + 4;
		} else if (end == p) {
			break;
		}
		if (*end == '/')
			online = strtoul(end + 1, &end, 10);
		configs[n++] = (struct config){ (unsigned int)v, (unsigned int)online };
		p = *end == ',' ? end + 1 : end;
	}
	return n;
}

int main(int argc, char **argv)
{
	static double rows[MAX_ROWS][SCALE_NR_COLUMNS];
	struct config configs[MAX_ROWS];
	unsigned int nr = sizeof(default_configs) / sizeof(default_configs[0]), done = 0;
	const char *csv = NULL, *png = NULL;
	enum scale_mode mode = SCALE_FULL;
	unsigned int runs = 1;
	int status = 0;

	memcpy(configs, default_configs, sizeof(default_configs));
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			mode = SCALE_QUICK;
		} else if (!strcmp(argv[i], "--check")) {
			mode = SCALE_CHECK;
		} else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
			csv = argv[++i];
		} else if (!strcmp(argv[i], "--plot") && i + 1 < argc) {
			png = argv[++i];
		} else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			runs = (unsigned int)strtoul(argv[++i], NULL, 10);
			if (runs < 1 || runs > MAX_RUNS)
				runs = 1;
		} else if (!strcmp(argv[i], "--cpus") && i + 1 < argc) {
			nr = parse_cpus(argv[++i], configs);
		} else {
			fprintf(stderr, "usage: %s [--quick | --check] [--runs K] [--cpus N[/ONLINE]|real,...] "
					"[--csv FILE] [--plot FILE]\n",
				argv[0]);
			return 2;
		}
	}
	for (unsigned int i = 0; i < nr; i++) {
		int err = run_config(&configs[i], mode, runs, rows[done]);

		if (err) {
			fprintf(stderr, "percpu-bench-scale: N=%u online=%u failed\n",
				configs[i].possible, configs[i].online);
			status = 1;
			continue;
		}
		fprintf(stderr, "percpu-bench-scale: N=%.0f online=%.0f done\n",
			rows[done][SCALE_possible], rows[done][SCALE_online]);
		done++;
	}
	print_tables(stdout, rows, done);
	if (csv && write_csv(csv, rows, done) != 0) {
		fprintf(stderr, "percpu-bench-scale: cannot write %s\n", csv);
		status = 1;
	}
	if (csv && png)
		plot(csv, png);
	return status;
}
