/* SPDX-License-Identifier: MIT */
/*
 * percpu-demo: one counting thread per CPU hammers one elastic counter with
 * random-ish signed adds, each keeping an exact tally of its own. While they
 * run, the main thread prints approximate reads with their error bounds;
 * after the join it checks the precise sum against the exact total, the
 * final read against its bound, and sync_if_delta_above() at a loose and a
 * tight precision.
 *
 * Exit status: 0 when every check holds, 1 when one fails, 2 on bad usage.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <percpu/counter.h>

#include "example.h"
#define MAX_THREADS 4096
/* how many adds a thread makes between two looks at the stop flag */
#define CHUNK 1024

struct worker {
	_Alignas(64) pthread_t tid;
	uint64_t seed;
	uint64_t adds_wanted;     /* 0: run until told to stop */
	uint64_t adds_done;       /* published every CHUNK adds, for adds/s */
	int64_t tally;            /* exact sum of what this thread added */
	double end;               /* when it made its last add */
};

static struct pcpu_counter counter;
static int stop_flag;

static void usage(FILE *f)
{
	fprintf(f, "usage: percpu-demo [-t THREADS] [-d SECONDS | -n ADDS] [-i MS] [-s SEED]\n"
		   "  -t THREADS  counting threads (default: one per online CPU)\n"
		   "  -d SECONDS  run for this long (default 1; decimals allowed)\n"
		   "  -n ADDS     instead, each thread makes exactly ADDS adds\n"
		   "  -i MS       interval between progress lines (default 200)\n"
		   "  -s SEED     seed of the per-thread random streams (default 1)\n"
		   "Environment: PCPU_FORCE_FALLBACK=1 forces the atomic update path.\n");
}

static void sleep_ms(double ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000) * 1e6);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* xorshift64*: cheap, good enough to vary the amounts */
static uint64_t next_random(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * UINT64_C(0x2545F4914F6CDD1D);
}

/*
 * Amounts in [-256, 767]: mostly growth, with frequent decrements, so the
 * value climbs and the elastic threshold climbs with it.
 */
static int64_t random_amount(uint64_t *state)
{
	return (int64_t)(next_random(state) >> 54) - 256;
}

static void *count(void *arg)
{
	struct worker *w = arg;
	uint64_t state = w->seed, done = 0;
	int64_t tally = 0;

	for (;;) {
		uint64_t n = CHUNK;

		if (__atomic_load_n(&stop_flag, __ATOMIC_RELAXED))
			break;
		if (w->adds_wanted) {
			if (done >= w->adds_wanted)
				break;
			if (w->adds_wanted - done < n)
				n = w->adds_wanted - done;
		}
		for (uint64_t i = 0; i < n; i++) {
			int64_t amount = random_amount(&state);

			pcpu_counter_add(&counter, amount);
			tally += amount;
		}
		done += n;
		__atomic_store_n(&w->adds_done, done, __ATOMIC_RELAXED);
	}
	w->tally = tally;
	w->end = example_now();
	return NULL;
}

static uint64_t distance(int64_t a, int64_t b)
{
	return a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

static const char *mode_name(enum pcpu_cpu_mode mode)
{
	switch (mode) {
	case PCPU_CPU_RSEQ:
		return "rseq (restartable sequence, plain add to this CPU's slot)";
	case PCPU_CPU_ATOMIC:
		return "atomic fallback (sched_getcpu() and an atomic add)";
	default:
		return "unknown";
	}
}

static uint64_t total_adds(const struct worker *w, unsigned int n)
{
	uint64_t sum = 0;

	for (unsigned int i = 0; i < n; i++)
		sum += __atomic_load_n(&w[i].adds_done, __ATOMIC_RELAXED);
	return sum;
}

static bool all_done(const struct worker *w, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (!w[i].adds_wanted || __atomic_load_n(&w[i].adds_done, __ATOMIC_RELAXED) <
						 w[i].adds_wanted)
			return false;
	return true;
}

static const char *yes_no(bool ok)
{
	return ok ? "yes" : "NO";
}

struct demo_args {
	uint64_t threads;     /* 0: one per online CPU */
	uint64_t adds;        /* per thread; 0: run for @seconds */
	uint64_t interval_ms; /* between progress lines */
	uint64_t seed;
	double seconds;
};

/* The command line into @a: -1 to run, else main's status (-h's 0, a usage error's 2). */
static int parse_args(int argc, char **argv, struct demo_args *a)
{
	int opt;

	while ((opt = getopt(argc, argv, "t:d:n:i:s:h")) != -1) {
		char *endp;

		switch (opt) {
		case 't':
			if (!example_parse_u64(optarg, 1, MAX_THREADS, &a->threads))
				goto bad_usage;
			break;
		case 'd':
			errno = 0;
			a->seconds = strtod(optarg, &endp);
			if (errno || *endp || !(a->seconds > 0 && a->seconds <= 3600))
				goto bad_usage;
			break;
		case 'n':
			if (!example_parse_u64(optarg, 1, UINT64_C(1) << 40, &a->adds))
				goto bad_usage;
			break;
		case 'i':
			if (!example_parse_u64(optarg, 1, 60000, &a->interval_ms))
				goto bad_usage;
			break;
		case 's':
			if (!example_parse_u64(optarg, 0, UINT64_MAX, &a->seed))
				goto bad_usage;
			break;
		default:
			return example_other_option(opt, usage);
		}
	}
	if (optind == argc)
		return -1;
bad_usage:
	usage(stderr);
	return 2;
}

static void print_header(const struct demo_args *a, enum pcpu_cpu_mode mode)
{
	printf("percpu-demo: %" PRIu64 " counting threads, %u online CPUs, %u possible\n",
	       a->threads, pcpu_cpu_online(), pcpu_cpu_possible());
	printf("update path: %s\n", mode_name(mode));
	if (a->adds)
		printf("each thread makes %" PRIu64 " adds of -256..767\n", a->adds);
	else
		printf("each thread adds -256..767 for %.2f s\n", a->seconds);
	printf("threshold per CPU = max(floor, |value| / (64 x %u possible CPUs)); "
	       "error_bound = %u x the largest threshold\n",
	       pcpu_cpu_possible(), pcpu_cpu_possible());
	/* "±" takes two bytes and one column */
	printf("\n%8s  %22s  %-21s  %10s\n", "time", "read()", "± error_bound", "adds/s");
}

/* Starts @n counting threads: how many started (fewer: one failed, said; the others stop). */
static unsigned int start_workers(struct worker *w, unsigned int n, const struct demo_args *a)
{
	for (unsigned int i = 0; i < n; i++) {
		int err;

		/* splitmix-style spread; xorshift must not start at 0 */
		w[i].seed = (a->seed + 1) * UINT64_C(0x9E3779B97F4A7C15) +
			    i * UINT64_C(0xBF58476D1CE4E5B9);
		if (!w[i].seed)
			w[i].seed = 1;
		w[i].adds_wanted = a->adds;
		err = pthread_create(&w[i].tid, NULL, count, &w[i]);
		if (err) {
			fprintf(stderr, "percpu-demo: pthread_create: %s\n", strerror(err));
			__atomic_store_n(&stop_flag, 1, __ATOMIC_RELAXED);
			return i;
		}
	}
	return n;
}

/* Progress until the run's end: approximate reads only; the true tally is unknown mid-run. */
static void progress(const struct worker *w, unsigned int n, const struct demo_args *a,
		     double start)
{
	double last = start, deadline = start + a->seconds;
	double next_line = start + (double)a->interval_ms / 1000;
	uint64_t last_adds = 0;

	for (;;) {
		double t = example_now(), until = next_line;
		uint64_t done;

		if (a->adds ? all_done(w, n) : t >= deadline)
			break;
		/* a fixed number of adds may finish any time: look every 10 ms */
		if (a->adds && until > t + 0.01)
			until = t + 0.01;
		if (!a->adds && until > deadline)
			until = deadline;
		sleep_ms((until - t) * 1000);
		t = example_now();
		if (t < next_line || (!a->adds && t >= deadline))
			continue;
		done = total_adds(w, n);
		printf("%6.2f s  %22" PRId64 "  ± %-18" PRIu64 "  %8.1f M\n", t - start,
		       pcpu_counter_read(&counter), pcpu_counter_error_bound(&counter),
		       (double)(done - last_adds) / (t - last) * 1e-6);
		fflush(stdout);
		last = t;
		last_adds = done;
		next_line += (double)a->interval_ms / 1000;
	}
}

/* Stops and joins the @n threads, says how fast they added since @start: their exact tally. */
static int64_t join_workers(struct worker *w, unsigned int n, double start)
{
	int64_t exact = 0;
	uint64_t sum_adds;
	double end = 0;

	__atomic_store_n(&stop_flag, 1, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < n; i++) {
		pthread_join(w[i].tid, NULL);
		exact += w[i].tally;
		if (w[i].end > end)
			end = w[i].end;
	}
	sum_adds = total_adds(w, n);
	printf("\njoined: %" PRIu64 " adds in %.2f s (%.1f M adds/s)\n", sum_adds, end - start,
	       end > start ? (double)sum_adds / (end - start) * 1e-6 : 0.0);
	return exact;
}

/*
 * The precise sum and the approximate read against the exact total: true
 * if both hold. The read's error bound into *@bound.
 */
static bool check_reads(int64_t exact, uint64_t *bound)
{
	/* the precise sum: base + every CPU's slot */
	int64_t sum = pcpu_counter_sum(&counter), rd;

	printf("  pcpu_counter_sum()  %22" PRId64 "\n", sum);
	printf("  exact total         %22" PRId64 "   %s\n", exact,
	       sum == exact ? "MATCH" : "MISMATCH");

	/* the approximate read and the bound that says how far off it may be */
	rd = pcpu_counter_read(&counter);
	*bound = pcpu_counter_error_bound(&counter);
	printf("  pcpu_counter_read() %22" PRId64 "   ± %" PRIu64 "\n", rd, *bound);
	printf("    |read - exact| = %" PRIu64 " <= error_bound %" PRIu64 ": %s\n",
	       distance(rd, exact), *bound, yes_no(distance(rd, exact) <= *bound));
	return sum == exact && distance(rd, exact) <= *bound;
}

/*
 * sync_if_delta_above() at a loose delta (@loose, the read's error bound)
 * and a tight one: true if both keep their promise.
 */
static bool check_syncs(int64_t exact, uint64_t loose)
{
	/* loose: the bound already meets the delta, so nothing is folded */
	int64_t before = pcpu_counter_read(&counter), rd;
	int64_t result = pcpu_counter_sync_if_delta_above(&counter, loose);
	bool ok;

	printf("\n  sync_if_delta_above(delta = %" PRIu64 "), loose:\n", loose);
	printf("    result %" PRId64 ", |result - exact| = %" PRIu64 " <= delta: %s; %s\n", result,
	       distance(result, exact), yes_no(distance(result, exact) <= loose),
	       result == before ? "approximate value returned, nothing folded"
				: "value changed (folded?)");
	ok = distance(result, exact) <= loose && result == before;

	/* tight: delta 0 folds every CPU's pending delta into the central value */
	result = pcpu_counter_sync_if_delta_above(&counter, 0);
	rd = pcpu_counter_read(&counter);
	printf("  sync_if_delta_above(delta = 0), tight:\n");
	printf("    result %" PRId64 ", |result - exact| = %" PRIu64 " <= delta: %s; "
	       "folded every CPU, read() now %" PRId64 "\n",
	       result, distance(result, exact), yes_no(result == exact), rd);
	return ok && result == exact && rd == exact;
}

int main(int argc, char **argv)
{
	struct demo_args a = { .interval_ms = 200, .seed = 1, .seconds = 1.0 };
	enum pcpu_cpu_mode mode;
	unsigned int started;
	struct worker *w;
	int64_t exact;
	uint64_t bound;
	double start;
	bool ok;
	int err, status = parse_args(argc, argv, &a);

	if (status >= 0)
		return status;
	mode = pcpu_cpu_setup();
	if (!a.threads)
		a.threads = pcpu_cpu_online();
	err = pcpu_counter_init(&counter, 0);
	if (err) {
		fprintf(stderr, "percpu-demo: pcpu_counter_init: %s\n", strerror(-err));
		return 1;
	}
	/* the workers are cacheline-aligned: calloc() promises only 16 bytes */
	w = aligned_alloc(_Alignof(struct worker), a.threads * sizeof(*w));
	if (!w) {
		fprintf(stderr, "percpu-demo: out of memory\n");
		return 1;
	}
	memset(w, 0, a.threads * sizeof(*w));
	print_header(&a, mode);
	start = example_now();
	started = start_workers(w, (unsigned int)a.threads, &a);
	ok = started == a.threads;
	if (ok)
		progress(w, started, &a, start);
	exact = join_workers(w, started, start);
	ok = check_reads(exact, &bound) && ok;
	ok = check_syncs(exact, bound) && ok;
	pcpu_counter_destroy(&counter);
	free(w);
	printf("\n%s\n", ok ? "all checks passed" : "CHECK FAILED");
	return ok ? 0 : 1;
}
