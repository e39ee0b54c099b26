/* SPDX-License-Identifier: MIT */
/*
 * fork() while a sparse native histogram is being rebuilt (its schema
 * lowered, or reset, past its bucket cap): the child can scrape it, read
 * it and observe past the cap (a rebuild of its own), and its counts add
 * up. A plain program, as summary_fork.c.
 *
 * The hazard: 0.5's first sparse histograms took their two locks (the
 * rebuild lock, held across a grace period, and the lock that scrapes and
 * a rebuild's steps take) in no fork handler, so a fork during a rebuild
 * left them held in the child, whose next observation past the cap (or
 * scrape) waited for ever. An alarm in each child turns a hang into a
 * failure.
 *
 * Two parts.
 * - Parked: a test hook (PCPU_TEST_HOOKS) stops a rebuild between its
 *   publication and its merge, and the main thread forks there, every
 *   run: the child, which lacks the rebuild's thread, must finish the
 *   merge (one histogram) or the reset's drop (another) exactly once:
 *   exact counts, and the buckets of a histogram that observed the same
 *   values directly.
 * - Random: FORKS forks beside OBSERVERS observers that keep a histogram
 *   and a label family's child rebuilding (a cap of 4 buckets; a reset
 *   every 200 us) and a scraper. Each child checks its observations, added exactly, and the
 *   parent's: at least what a shadow counter had counted at the fork, at
 *   most one more per observer (under way at the fork).
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/family.h>
#include <percpu/histogram.h>
#include <percpu/metrics_registry.h>

#include "kinds/kinds_internal.h"

#define PCPU_CHECK_PROGRAM "sparse-fork"
#include "check.h"

/* ThreadSanitizer (.ci/run's tsan step) runs each fork some 10 times slower */
#ifdef __SANITIZE_THREAD__
#define FORKS 60
#else
#define FORKS 300
#endif
#define OBSERVERS 3
#define CAP 4
#define MAX_KEYS 64

/* In a child: says which check failed, and exits at once (no atexit). */
#define CHILD_CHECK(n, cond)                                                              \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "sparse-fork: child: check %d failed: %s\n", n,   \
				#cond);                                                   \
			_exit(n);                                                         \
		}                                                                         \
	} while (0)

static struct pcpu_metrics_registry *reg;

/* A scrape's sample of one histogram, copied. */
struct reading {
	const char *name;
	int found;
	uint64_t count, zero, in_keys;
	int32_t schema;
	uint32_t nr_keys, nr_negative;
	int32_t keys[MAX_KEYS];
	uint64_t counts[MAX_KEYS];
	double sum;
};

static int take(const struct pcpu_metric_sample *smp, void *arg)
{
	struct reading *r = arg;

	if (strcmp(smp->name, r->name) != 0)
		return 0;
	if (!(smp->flags & PCPU_METRIC_SAMPLE_F_SPARSE))
		return -1;
	r->found++;
	r->count = smp->count;
	r->zero = smp->zero_count;
	r->schema = smp->schema;
	r->nr_keys = smp->nr_keys;
	r->nr_negative = smp->nr_negative;
	r->sum = smp->dsum;
	r->in_keys = 0;
	for (uint32_t i = 0; i < smp->nr_keys; i++) {
		if (i < MAX_KEYS) { /* the first ones, to compare */
			r->keys[i] = smp->keys[i];
			r->counts[i] = smp->key_counts[i];
		}
		r->in_keys += smp->key_counts[i];
	}
	return 0;
}

/*
 * @h (named @name) scraped: one sample, whose count is its buckets' (no
 * NaN or infinity is observed here) and pcpu_histogram_snapshot()'s.
 */
static struct reading scrape(struct pcpu_histogram *h, const char *name)
{
	struct reading r = { .name = name };
	uint64_t snap[1];

	CHILD_CHECK(40, pcpu_metrics_registry_foreach(reg, take, &r) == 0 && r.found == 1);
	CHILD_CHECK(41, r.count == r.zero + r.in_keys);
	CHILD_CHECK(42, pcpu_histogram_snapshot(h, snap, NULL) == 0 && snap[0] == r.count);
	return r;
}

/* The sum, kept in units of 10^-9, read back as a double. */
static int near(double sum, double want)
{
	return fabs(sum - want) < 1e-6;
}

static struct pcpu_sparse_stats stats(struct pcpu_histogram *h)
{
	struct pcpu_sparse_stats st;

	pcpu_sparse_stats(h->sparse, &st);
	return st;
}

/* Part one: a rebuild parked (the hook) while the main thread forks. */

static sem_t parked, forked;
static struct pcpu_histogram *parked_h;
/* distinct buckets down to schema -1: the parent's CAP + 1, then the child's */
static const double parked_values[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512 };

static void park(void)
{
	pcpu_sparse_debug_parked_hook = NULL; /* once: the rebuild that follows does not stop */
	sem_post(&parked);
	while (sem_wait(&forked) != 0)
		;
}

/* The first CAP + 1 values: the last one passes the cap. */
static void *observe_to_cap(void *arg)
{
	(void)arg;
	for (int i = 0; i <= CAP; i++)
		pcpu_histogram_observe_double(parked_h, parked_values[i]);
	return NULL;
}

/* A child of a schema reduction parked: it finishes the merge. */
static int child_of_reduction(struct pcpu_histogram *h)
{
	struct pcpu_histogram *ref;
	struct pcpu_sparse_stats st = stats(h);
	struct reading r, want;

	CHILD_CHECK(10, st.retiring == 1 && st.reductions == 0);
	/* the old state and the new, counted once each */
	r = scrape(h, "fork_reduced");
	CHILD_CHECK(11, r.count == CAP + 1 && near(r.sum, 31));
	/* within the cap of the new state: still parked, both counted */
	for (int i = CAP + 1; i < 2 * CAP + 1; i++)
		pcpu_histogram_observe_double(h, parked_values[i]);
	CHILD_CHECK(17, stats(h).retiring == 1);
	r = scrape(h, "fork_reduced");
	CHILD_CHECK(18, r.count == 2 * CAP + 1);
	/* past the cap: the merge first, then as many reductions as needed */
	pcpu_histogram_observe_double(h, parked_values[2 * CAP + 1]);
	st = stats(h);
	CHILD_CHECK(12, st.retiring == 0 && st.reductions >= 1 && st.resets == 0 &&
				st.populated <= CAP);
	r = scrape(h, "fork_reduced");
	/* as one that saw the same values without a fork */
	ref = pcpu_histogram_create_sparse(
		&(struct pcpu_histogram_desc){ .name = "fork_reference", .registry = reg },
		&(struct pcpu_histogram_sparse){ .schema = 8, .max_buckets = CAP });
	CHILD_CHECK(13, ref != NULL);
	for (int i = 0; i < 2 * CAP + 2; i++)
		pcpu_histogram_observe_double(ref, parked_values[i]);
	want = scrape(ref, "fork_reference");
	CHILD_CHECK(14, r.count == 2 * CAP + 2 && near(r.sum, 1023) && r.zero == 0);
	CHILD_CHECK(15, r.schema == want.schema && r.nr_keys == want.nr_keys && r.nr_keys <= MAX_KEYS &&
				r.nr_negative == want.nr_negative);
	CHILD_CHECK(16, memcmp(r.keys, want.keys, r.nr_keys * sizeof(r.keys[0])) == 0 &&
				memcmp(r.counts, want.counts, r.nr_keys * sizeof(r.counts[0])) == 0);
	return 0;
}

/* A child of a reset parked: it drops the old counts once, then resets itself. */
static int child_of_reset(struct pcpu_histogram *h)
{
	struct pcpu_sparse_stats st = stats(h);
	struct reading r;

	CHILD_CHECK(20, st.retiring == 1 && st.resets == 0 && st.discarded == 0);
	/* a reset's old state is not counted: the new one is empty */
	r = scrape(h, "fork_reset");
	CHILD_CHECK(21, r.count == 0);
	/* the last passes the cap: the parked drop, then a reset of the child's own */
	for (int i = 0; i <= CAP; i++)
		pcpu_histogram_observe_double(h, parked_values[i]);
	st = stats(h);
	CHILD_CHECK(22, st.retiring == 0 && st.resets == 2 && st.discarded == 2 * (CAP + 1) &&
				st.repeated == 1);
	r = scrape(h, "fork_reset");
	CHILD_CHECK(23, r.count == 1 && near(r.sum, parked_values[CAP]));
	return 0;
}

static void parked_fork(const char *name, int64_t min_reset_ns, int (*child)(struct pcpu_histogram *))
{
	struct pcpu_sparse_stats st;
	uint64_t snap[1];
	pthread_t t;
	pid_t pid;
	int status;

	parked_h = pcpu_histogram_create_sparse(
		&(struct pcpu_histogram_desc){ .name = name, .registry = reg },
		&(struct pcpu_histogram_sparse){ .schema = 8, .max_buckets = CAP,
						 .min_reset_ns = min_reset_ns });
	CHECK(1, parked_h != NULL);
	pcpu_sparse_debug_parked_hook = park;
	CHECK(2, pthread_create(&t, NULL, observe_to_cap, NULL) == 0);
	while (sem_wait(&parked) != 0)
		;
	CHECK(3, stats(parked_h).retiring == 1);
	fflush(NULL);
	pid = fork();
	CHECK(4, pid != -1);
	if (pid == 0) {
		alarm(10);
		_exit(child(parked_h));
	}
	sem_post(&forked);
	CHECK(5, pthread_join(t, NULL) == 0);
	CHECK(6, waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(stderr, "sparse-fork: %s: child status %#x\n", name, status);
	CHECK(7, WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* the parent's rebuild went on, its thread there */
	st = stats(parked_h);
	CHECK(8, pcpu_histogram_snapshot(parked_h, snap, NULL) == 0);
	CHECK(9, st.retiring == 0 &&
			 (min_reset_ns ? snap[0] == 1 && st.resets == 1 && st.repeated == 1 :
					 snap[0] == CAP + 1 && st.reductions >= 1));
	pcpu_histogram_destroy(parked_h);
}

/* Part two: forks at random points beside observers and a scraper. */

/* rebuilt all the time: a histogram, and a child of a family of them */
static struct pcpu_histogram *busy, *kid;
static atomic_bool stop;
static atomic_uint_fast64_t shadow; /* observations completed */

static void *observe(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		/* 2^-60 to 2^60: more buckets than the cap even at the coarsest schema */
		double v = ldexp((rand_r(&seed) % 2 ? 1 : -1) * (1 + rand_r(&seed) % 1000 / 1000.0),
				 rand_r(&seed) % 120 - 60);

		pcpu_histogram_observe_double(busy, v);
		pcpu_histogram_observe_double(kid, v);
		atomic_fetch_add_explicit(&shadow, 1, memory_order_release);
	}
	return NULL;
}

static void *scraper(void *arg)
{
	uint64_t snap[1];

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		FILE *out = fopen("/dev/null", "w");

		if (!out)
			break;
		(void)pcpu_metrics_registry_write(reg, out, PCPU_METRICS_PROTOBUF);
		fclose(out);
		(void)pcpu_histogram_snapshot(busy, snap, NULL);
	}
	return NULL;
}

/* What @h counts of the observations made: kept, or dropped by a reset (not twice). */
static uint64_t observed(struct pcpu_histogram *h)
{
	struct pcpu_sparse_stats st = stats(h);
	uint64_t snap[1];

	CHILD_CHECK(30, pcpu_histogram_snapshot(h, snap, NULL) == 0);
	return snap[0] + st.discarded - st.repeated;
}

/*
 * In the child of a fork at a random point, @h (named @name), which the
 * parent's observers had observed @at_fork times at the fork (the shadow
 * counter's copy), and at most once more each (under way).
 */
static void check_after_fork(struct pcpu_histogram *h, const char *name, uint64_t at_fork)
{
	uint64_t mine = 0, base, rebuilds;
	struct pcpu_sparse_stats st;

	(void)scrape(h, name);
	/*
	 * Past the cap, until a rebuild finishes: one the fork cut short
	 * first, then the child's own (a reset 200 us after the last one).
	 */
	st = stats(h);
	rebuilds = st.reductions + st.resets + st.grows;
	for (int i = 0; st.reductions + st.resets + st.grows == rebuilds; i++) {
		CHILD_CHECK(32, i < 10000000);
		pcpu_histogram_observe_double(h, (i % 2 ? -1 : 1) * ldexp(1, i % 2000 - 1000));
		mine++;
		st = stats(h);
	}
	CHILD_CHECK(33, st.retiring == 0);
	base = observed(h);
	CHILD_CHECK(34, base >= at_fork + mine && base <= at_fork + mine + OBSERVERS);
	(void)scrape(h, name);
	/* the child's own, exactly */
	for (int i = 0; i < 1000; i++)
		pcpu_histogram_observe_double(h, ldexp(1, (i * 37) % 2000 - 1000));
	CHILD_CHECK(35, observed(h) == base + 1000);
	(void)scrape(h, name);
}

/* The child of a fork at a random point; @before: the shadow counter read before it. */
static int random_child(uint64_t before)
{
	uint64_t at_fork = atomic_load(&shadow);

	alarm(10);
	CHILD_CHECK(31, before <= at_fork);
	check_after_fork(busy, "fork_sparse", at_fork);
	check_after_fork(kid, "fork_family", at_fork);
	return 0;
}

int main(void)
{
	struct pcpu_family *fam;
	pthread_t t[OBSERVERS + 1];
	struct pcpu_sparse_stats st;

#ifdef __SANITIZE_ADDRESS__
	puts("sparse-fork: skipped under AddressSanitizer (its allocator and fork())");
	return 77;
#endif
	if (getenv("PCPU_TEST_SMALL") || getenv("PCPU_TEST_UNDER_QEMU")) {
		puts("sparse-fork: skipped under valgrind and qemu-user");
		return 77;
	}
	alarm(100);
	reg = pcpu_metrics_registry_create(NULL);
	CHECK(50, reg != NULL);
	CHECK(51, sem_init(&parked, 0, 0) == 0 && sem_init(&forked, 0, 0) == 0);
	parked_fork("fork_reduced", 0, child_of_reduction);
	parked_fork("fork_reset", 1, child_of_reset);

	busy = pcpu_histogram_create_sparse(
		&(struct pcpu_histogram_desc){ .name = "fork_sparse", .registry = reg },
		&(struct pcpu_histogram_sparse){ .schema = 8, .max_buckets = CAP,
						 .min_reset_ns = 200000 });
	fam = pcpu_family_create_sparse(
		&(struct pcpu_family_desc){ .name = "fork_family", .kind = PCPU_METRIC_HISTOGRAM,
					    .label_names = (const char *const[]){ "route", NULL },
					    .max_children = 4, .registry = reg },
		&(struct pcpu_histogram_sparse){ .schema = 8, .max_buckets = CAP,
						 .min_reset_ns = 200000 });
	CHECK(59, fam != NULL);
	kid = pcpu_family_get_histogram(fam, (const char *const[]){ "/", NULL });
	CHECK(52, busy != NULL && kid != NULL);
	for (uintptr_t i = 0; i < OBSERVERS; i++)
		CHECK(53, pthread_create(&t[i], NULL, observe, (void *)(i + 1)) == 0);
	CHECK(54, pthread_create(&t[OBSERVERS], NULL, scraper, NULL) == 0);
	for (int i = 0; i < FORKS; i++) {
		uint64_t before = atomic_load(&shadow);
		pid_t pid;
		int status;

		fflush(NULL);
		pid = fork();
		CHECK(55, pid != -1);
		if (pid == 0)
			_exit(random_child(before));
		CHECK(56, waitpid(pid, &status, 0) == pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fprintf(stderr, "sparse-fork: child %d: %s %d\n", i,
				WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? "hung, signal" :
				WIFSIGNALED(status)				   ? "signal" :
										     "status",
				WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		CHECK(57, WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	atomic_store(&stop, true);
	for (int i = 0; i <= OBSERVERS; i++)
		pthread_join(t[i], NULL);
	st = stats(busy);
	printf("sparse-fork: a reduction and a reset parked at the fork; %d forks beside %d "
	       "observers of a histogram (%llu reductions, %llu resets) and a family child, "
	       "and a scraper\n",
	       FORKS, OBSERVERS, (unsigned long long)st.reductions, (unsigned long long)st.resets);
	pcpu_histogram_destroy(busy);
	pcpu_family_destroy(fam);
	CHECK(58, pcpu_metrics_registry_destroy(reg) == 0);
	return 0;
}
