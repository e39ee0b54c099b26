/* SPDX-License-Identifier: MIT */
/*
 * percpu-bench-shared: N processes (forked, as prefork workers) counting +1
 * per event into one shared counter, three ways:
 *
 *   shared      a pcpu_shared segment (<percpu/shared.h>): per-CPU pairs,
 *               an rseq add (or one compare-and-swap on the atomic path);
 *   atomic      a shared mapping of 64-byte padded atomics, one fetch_add
 *               on one shared line per event: nginx's stub_status;
 *   scoreboard  one padded slot per process, a plain add, summed by the
 *               reader: Apache's scoreboard, the practical limit;
 *
 * at 1 to 2x CPUs processes (Mops/s of wall time, median of the runs, each
 * run checked exactly), with the ratios; then what one read of the total
 * costs the reader (ns, quiescent): the segment's snapshot of 1 and of 16
 * items (O(CPUs) each), one load of the atomic, the scoreboard's sum over
 * one slot per process.
 *
 * Usage: percpu-bench-shared [--quick] [-d MS] [-r RUNS]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <percpu/shared.h>

#include "host_cpu.h"
#include "timing.h"

#define LINE 64
#define MAX_PROCS 256
#define BATCH 1024

enum impl { SHARED, ATOMIC, SCOREBOARD, NR_IMPLS };
static const char *const impl_names[NR_IMPLS] = { "shared", "atomic", "scoreboard" };

struct slot {
	_Alignas(LINE) int64_t v;
};

/* One mapping, shared by the parent and every worker. */
struct board {
	int go, stop;
	struct slot atomic;                /* nginx: everyone's one line */
	struct slot score[MAX_PROCS];      /* Apache: one line each */
	struct slot ops[MAX_PROCS];        /* what each worker did */
};

static struct board *board;
static struct pcpu_shared *seg;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void work(enum impl impl, unsigned int p)
{
	int64_t *mine = &board->score[p].v, ops = 0;

	while (!__atomic_load_n(&board->go, __ATOMIC_ACQUIRE))
		;
	while (!__atomic_load_n(&board->stop, __ATOMIC_RELAXED)) {
		switch (impl) {
		case SHARED:
			for (int i = 0; i < BATCH; i++)
				pcpu_shared_add(seg, 0, 1);
			break;
		case ATOMIC:
			for (int i = 0; i < BATCH; i++)
				__atomic_fetch_add(&board->atomic.v, 1, __ATOMIC_RELAXED);
			break;
		case SCOREBOARD:
			/* a plain add the reader may see late, as Apache's is */
			for (int i = 0; i < BATCH; i++)
				__atomic_store_n(mine, __atomic_load_n(mine, __ATOMIC_RELAXED) + 1,
						 __ATOMIC_RELAXED);
			break;
		default:
			break;
		}
		ops += BATCH;
	}
	board->ops[p].v = ops;
	_exit(0);
}

static int64_t total_of(enum impl impl, unsigned int procs)
{
	int64_t t = 0;

	switch (impl) {
	case SHARED:
		return pcpu_shared_sum(seg, 0);
	case ATOMIC:
		return board->atomic.v;
	default:
		for (unsigned int p = 0; p < procs; p++)
			t += board->score[p].v;
		return t;
	}
}

/* What one run measured. */
struct result {
	double mops;   /* adds per second of wall time, millions */
	double ns_cpu; /* CPU time per add, ns: what an add costs, whatever the load */
	double share;  /* CPU time the workers got / (wall * min(processes, CPUs)) */
};

static double cpu_seconds(const struct rusage *ru)
{
	return (double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec * 1e-6 +
	       (double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec * 1e-6;
}

/*
 * One run; mops -1 if the total is not exactly what the workers did. The
 * workers' CPU time includes their wait at the start line (20 ms of
 * spinning, subtracted).
 */
static struct result run(enum impl impl, unsigned int procs, unsigned int ms, long cpus)
{
	static const struct pcpu_stat_item items[] = { { .name = "events" } };
	struct pcpu_shared_desc d = { .items = items, .nr_items = 1 };
	struct result res = { -1, 0, 0 };
	int64_t ops = 0, total;
	double t0, t1, cpu = 0, wait_cpu;
	struct rusage ru;

	memset(board, 0, sizeof(*board));
	seg = pcpu_shared_create(NULL, &d);
	if (!seg)
		return res;
	fflush(NULL);
	for (unsigned int p = 0; p < procs; p++) {
		pid_t pid = fork();

		if (pid < 0)
			return res;
		if (pid == 0)
			work(impl, p);
	}
	usleep(20000); /* every worker at the start line */
	wait_cpu = 0.02 * (double)(procs < (unsigned long)cpus ? procs : (unsigned int)cpus);
	t0 = now();
	__atomic_store_n(&board->go, 1, __ATOMIC_RELEASE);
	usleep(ms * 1000);
	__atomic_store_n(&board->stop, 1, __ATOMIC_RELAXED);
	t1 = now();
	while (wait4(-1, NULL, 0, &ru) > 0)
		cpu += cpu_seconds(&ru);
	for (unsigned int p = 0; p < procs; p++)
		ops += board->ops[p].v;
	total = total_of(impl, procs);
	pcpu_shared_close(seg);
	if (total != ops) {
		fprintf(stderr, "%s, %u processes: total %" PRId64 ", workers %" PRId64 "\n",
			impl_names[impl], procs, total, ops);
		return res;
	}
	cpu = cpu > wait_cpu ? cpu - wait_cpu : cpu;
	res.mops = (double)ops / (t1 - t0) / 1e6;
	res.ns_cpu = cpu / (double)ops * 1e9;
	res.share = cpu / ((t1 - t0) * (double)(procs < (unsigned long)cpus ? procs : (unsigned int)cpus));
	return res;
}

/* ns per read of the total, each way, median of @runs. */
static void reader_cost(unsigned int procs, unsigned int runs)
{
	static struct pcpu_stat_item items16[16];
	static char names[16][16];
	struct pcpu_shared_desc d1 = { .items = items16, .nr_items = 1 };
	struct pcpu_shared_desc d16 = { .items = items16, .nr_items = 16 };
	struct pcpu_shared *s1, *s16;
	int64_t values[16];
	double v[4][64];
	const long n = 200000;
	volatile int64_t sink = 0;

	for (int i = 0; i < 16; i++) {
		snprintf(names[i], sizeof(names[i]), "item%d", i);
		items16[i].name = names[i];
	}
	s1 = pcpu_shared_create(NULL, &d1);
	s16 = pcpu_shared_create(NULL, &d16);
	if (!s1 || !s16)
		return;
	for (unsigned int r = 0; r < runs && r < 64; r++) {
		double t = now();

		for (long k = 0; k < n; k++) {
			pcpu_shared_snapshot(s1, values, NULL);
			sink += values[0];
		}
		v[0][r] = (now() - t) / n * 1e9;
		t = now();
		for (long k = 0; k < n; k++) {
			pcpu_shared_snapshot(s16, values, NULL);
			sink += values[15];
		}
		v[1][r] = (now() - t) / n * 1e9;
		t = now();
		for (long k = 0; k < n; k++)
			sink += __atomic_load_n(&board->atomic.v, __ATOMIC_RELAXED);
		v[2][r] = (now() - t) / n * 1e9;
		t = now();
		for (long k = 0; k < n; k++) {
			int64_t sum = 0;

			for (unsigned int p = 0; p < procs; p++)
				sum += __atomic_load_n(&board->score[p].v, __ATOMIC_RELAXED);
			sink += sum;
		}
		v[3][r] = (now() - t) / n * 1e9;
	}
	printf("\nreader: ns per read of the total (quiescent, %u possible CPUs), median of %u:\n",
	       pcpu_cpu_possible(), runs);
	printf("| shared snapshot, 1 item | shared snapshot, 16 items | atomic load | "
	       "scoreboard sum of %u slots |\n|--:|--:|--:|--:|\n", procs);
	printf("| %.1f | %.1f | %.1f | %.1f |\n", timing_median(v[0], runs),
	       timing_median(v[1], runs), timing_median(v[2], runs), timing_median(v[3], runs));
	pcpu_shared_close(s1);
	pcpu_shared_close(s16);
	(void)sink;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: percpu-bench-shared [--quick] [-d MS] [-r RUNS]\n"
		   "  --quick  -d 50 -r 3\n"
		   "  -d MS    duration of each run (default 300)\n"
		   "  -r RUNS  runs per cell, the median is shown (default 5)\n");
}

int main(int argc, char **argv)
{
	unsigned int ms = 300, runs = 5, counts[16], nr_counts = 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	double res[NR_IMPLS][16], ns[NR_IMPLS][16], share[NR_IMPLS][16];
	int failed = 0;
	char cpu[256];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			ms = 50;
			runs = 3;
		} else if (strcmp(argv[i], "-d") == 0 && i + 1 < argc) {
			ms = (unsigned int)atoi(argv[++i]);
		} else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
			runs = (unsigned int)atoi(argv[++i]);
		} else {
			usage(strcmp(argv[i], "--help") == 0 ? stdout : stderr);
			return strcmp(argv[i], "--help") == 0 ? 0 : 2;
		}
	}
	if (ms < 1 || runs < 1 || runs > 64) {
		usage(stderr);
		return 2;
	}
	if (cpus < 1)
		cpus = 1;
	for (unsigned int p = 1; p <= 2 * (unsigned long)cpus && p <= MAX_PROCS && nr_counts < 16;
	     p *= 2)
		counts[nr_counts++] = p;
	if (counts[nr_counts - 1] != 2 * (unsigned long)cpus && 2 * cpus <= MAX_PROCS &&
	    nr_counts < 16)
		counts[nr_counts++] = (unsigned int)(2 * cpus);
	host_cpu_describe(cpu, sizeof(cpu));
	printf("CPU: %s\n", cpu);
	board = mmap(NULL, sizeof(*board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		     0);
	if (board == MAP_FAILED)
		return 1;
	for (unsigned int c = 0; c < nr_counts; c++)
		for (int impl = 0; impl < NR_IMPLS; impl++) {
			double v[64], n[64], sh[64];

			for (unsigned int r = 0; r < runs; r++) {
				struct result one = run((enum impl)impl, counts[c], ms, cpus);

				v[r] = one.mops;
				n[r] = one.ns_cpu;
				sh[r] = one.share * 100;
				failed |= one.mops < 0;
			}
			res[impl][c] = timing_median(v, runs);
			ns[impl][c] = timing_median(n, runs);
			share[impl][c] = timing_median(sh, runs);
		}
	printf("\nprocesses adding +1 into one shared counter, Mops/s (wall), median of %u runs "
	       "of %u ms, %ld CPUs, update path %s; 16 bytes per item per CPU:\n",
	       runs, ms, cpus, pcpu_cpu_setup() == PCPU_CPU_RSEQ ? "rseq" : "atomic");
	printf("| processes | shared | atomic (nginx) | scoreboard (Apache) | shared / atomic | "
	       "shared / scoreboard | cpu%% |\n|--:|--:|--:|--:|--:|--:|--:|\n");
	for (unsigned int c = 0; c < nr_counts; c++)
		printf("| %u | %.1f | %.1f | %.1f | %.2fx | %.2fx | %.0f/%.0f/%.0f |\n", counts[c],
		       res[SHARED][c], res[ATOMIC][c], res[SCOREBOARD][c],
		       res[SHARED][c] / res[ATOMIC][c], res[SHARED][c] / res[SCOREBOARD][c],
		       share[SHARED][c], share[ATOMIC][c], share[SCOREBOARD][c]);
	printf("\nCPU time per add, ns (what an add costs, whatever else runs on the machine):\n"
	       "| processes | shared | atomic (nginx) | scoreboard (Apache) |\n|--:|--:|--:|--:|\n");
	for (unsigned int c = 0; c < nr_counts; c++)
		printf("| %u | %.2f | %.2f | %.2f |\n", counts[c], ns[SHARED][c], ns[ATOMIC][c],
		       ns[SCOREBOARD][c]);
	printf("(cpu%%: CPU time the workers got / (wall time x min(processes, CPUs)), "
	       "shared/atomic/scoreboard)\n");
	reader_cost(counts[nr_counts - 1], runs);
	if (failed)
		fprintf(stderr, "percpu-bench-shared: a run failed its check\n");
	return failed ? 1 : 0;
}
