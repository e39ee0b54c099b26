/* SPDX-License-Identifier: MIT */
/*
 * Stress of the promise that test_fold_races.c proves step by step: with
 * remote folds running beside the adds, at quiescence every CPU's pending
 * delta is within the largest threshold, so |read - exact| <= error_bound().
 *
 * ADDERS threads (more than the CPUs, so that several share a CPU and
 * preempt each other inside their adds) add random amounts of both signs,
 * mostly within the threshold and now and then far above it, each keeping
 * an exact tally. One folder thread calls sync_if_delta_above(c, 0) and
 * pcpu_registry_fold_all() in turn, as fast as it can. Every BATCH adds the
 * adders park at a barrier; the checker (the test's thread) then parks the
 * folder between two folds, so that nothing is in flight (a fold between
 * its swap and its add to count is an update in flight, and may leave read
 * further off for that moment), and checks against the tallies: sum is
 * exact, every slot's |pending| <= threshold_max, |read - exact| <= bound, and
 * compare() just outside the bound gives the exact sign. Then everyone goes
 * on. Adds land between a folder's read and its swap all the time here.
 * Chance alone rarely catches 0.1 with it (runs of a second, batches of 4
 * to 2000 adds, passed there): a CPU left over its threshold by a stale
 * swap is repaired by that CPU's next add, so the bad state must be the
 * last one before the barrier. test_fold_races.c builds it on purpose.
 *
 * About a second per test on two CPUs. Skipped under valgrind (it runs one
 * thread at a time: the adds would never race the folds).
 */
#include "helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include <percpu/counter.h>
#include <percpu/registry.h>

/* 0.1 has no c.mode: set to 0 to build this file against it. */
#ifndef FOLD_RACES_HAVE_MODE
#define FOLD_RACES_HAVE_MODE 1
#endif

#define ADDERS 5   /* more than the CPUs of a small machine */
#define BATCH 2000 /* adds between two quiescence points */

TestSuite(fold_stress, .timeout = 60);

static struct pcpu_counter c;

static struct {
	pthread_barrier_t parked, resume; /* ADDERS + the checker */
	_Atomic bool stop;                /* read by the adders after resume */
	_Atomic int pause;                /* checker -> folder: park between folds */
	_Atomic int paused;               /* folder -> checker: parked */
	_Atomic bool folder_stop;
	_Atomic long folds;
} s;

struct adder {
	uint64_t seed;
	int64_t far; /* the largest far amount */
	int64_t cap; /* keep |value| about this */
	int64_t tally;
	long adds;
};

/*
 * Within the threshold (both signs) 15 times in 16, else up to @far either
 * way. The threshold is read now: it may grow while the value does.
 */
static int64_t amount(struct adder *a)
{
	uint64_t r = pcpu_test_rand(&a->seed);
	int64_t t = __atomic_load_n(&c.threshold, __ATOMIC_RELAXED);

	int64_t v, now = pcpu_counter_read(&c);

	if (r % 16 == 0)
		v = (r & 32 ? 1 : -1) * (int64_t)(1 + (r >> 6) % (uint64_t)a->far);
	else
		v = (int64_t)((r >> 4) % (uint64_t)(2 * t + 1)) - t;
	/* past @cap, back toward 0: amounts of the threshold's size would grow it for ever */
	if (now > a->cap || now < -a->cap)
		v = now > 0 ? -(v < 0 ? -v : v) : (v < 0 ? -v : v);
	return v;
}

static void *add_in_batches(void *arg)
{
	struct adder *a = arg;

	for (;;) {
		for (int i = 0; i < BATCH; i++) {
			int64_t v = amount(a);

			pcpu_counter_add(&c, v);
			a->tally += v;
		}
		a->adds += BATCH;
		pthread_barrier_wait(&s.parked);
		pthread_barrier_wait(&s.resume);
		if (atomic_load(&s.stop))
			return NULL;
	}
}

static void *fold_until_stopped(void *arg)
{
	(void)arg;
	while (!atomic_load(&s.folder_stop)) {
		if (atomic_load(&s.pause)) {
			atomic_store(&s.paused, 1);
			while (atomic_load(&s.pause) && !atomic_load(&s.folder_stop))
				sched_yield();
			atomic_store(&s.paused, 0);
			continue;
		}
		if (atomic_fetch_add(&s.folds, 1) % 2)
			pcpu_registry_fold_all();
		else
			(void)pcpu_counter_sync_if_delta_above(&c, 0);
	}
	return NULL;
}

static struct pcpu_slot *slot_of(unsigned int cpu)
{
	return (struct pcpu_slot *)(void *)((char *)c.slots + (size_t)cpu * PCPU_STRIDE);
}

/* The first broken promise, kept for the report. */
struct verdict {
	long checks, bad;
	char first[512];
};

static void check_quiescent(struct verdict *v, int64_t exact)
{
	int64_t sum = pcpu_counter_sum(&c), read = pcpu_counter_read(&c);
	uint64_t bound = pcpu_counter_error_bound(&c);
	uint64_t threshold_max = __atomic_load_n(&c.threshold_max, __ATOMIC_RELAXED);
	uint64_t worst = 0;
	int worst_cpu = -1;
	int above, below;

	for (unsigned int cpu = 0; cpu < pcpu_cpu_possible(); cpu++) {
		uint64_t p = pcpu_test_slot_distance(slot_of(cpu)->value, slot_of(cpu)->mark);

		if (p > worst) {
			worst = p;
			worst_cpu = (int)cpu;
		}
	}
	/* rhs just outside the bound, on either side of exact */
	above = pcpu_counter_compare(&c, exact - (int64_t)bound - 1);
	below = pcpu_counter_compare(&c, exact + (int64_t)bound + 1);
	v->checks++;
	if (sum == exact && worst <= threshold_max && pcpu_test_distance(read, exact) <= bound &&
	    above == 1 && below == -1)
		return;
	if (v->bad++ == 0)
		snprintf(v->first, sizeof(v->first),
			 "check %ld: exact %" PRId64 ", sum %" PRId64 ", read %" PRId64
			 ", bound %" PRIu64 ", CPU %d pending %" PRIu64 " (threshold_max %" PRIu64
			 "), compare(exact - bound - 1) = %d, compare(exact + bound + 1) = %d",
			 v->checks, exact, sum, read, bound, worst_cpu, worst, threshold_max, above,
			 below);
}

static void stress(const struct pcpu_counter_options *o, int64_t far, int64_t cap)
{
	struct adder a[ADDERS];
	pthread_t adders[ADDERS], folder;
	struct verdict v = { 0 };
	double deadline = pcpu_test_now() + 1.0;
	long adds = 0;

	if (pcpu_test_on_valgrind())
		cr_skip_test("valgrind runs one thread at a time: nothing would race");
	cr_assert_eq(pcpu_counter_init_opts(&c, 0, o), 0);
	cr_assert_eq(pthread_barrier_init(&s.parked, NULL, ADDERS + 1), 0);
	cr_assert_eq(pthread_barrier_init(&s.resume, NULL, ADDERS + 1), 0);
	atomic_store(&s.stop, false);
	atomic_store(&s.pause, 0);
	atomic_store(&s.paused, 0);
	atomic_store(&s.folder_stop, false);
	atomic_store(&s.folds, 0);
	for (int i = 0; i < ADDERS; i++)
		a[i] = (struct adder){ .seed = (uint64_t)i * 7919 + 17, .far = far, .cap = cap };
	cr_assert_eq(pthread_create(&folder, NULL, fold_until_stopped, NULL), 0);
	for (int i = 0; i < ADDERS; i++)
		cr_assert_eq(pthread_create(&adders[i], NULL, add_in_batches, &a[i]), 0);

	for (;;) {
		int64_t exact = 0;

		pthread_barrier_wait(&s.parked); /* every adder parked, tallies written */
		atomic_store(&s.pause, 1);
		while (!atomic_load(&s.paused))
			sched_yield();
		for (int i = 0; i < ADDERS; i++)
			exact += a[i].tally;
		check_quiescent(&v, exact);
		atomic_store(&s.pause, 0);
		if (pcpu_test_now() > deadline)
			atomic_store(&s.stop, true);
		pthread_barrier_wait(&s.resume);
		if (atomic_load(&s.stop))
			break;
	}
	for (int i = 0; i < ADDERS; i++) {
		pthread_join(adders[i], NULL);
		adds += a[i].adds;
	}
	atomic_store(&s.folder_stop, true);
	pthread_join(folder, NULL);
	pthread_barrier_destroy(&s.parked);
	pthread_barrier_destroy(&s.resume);

	cr_log_info("mode %u: %ld adds, %ld folds, %ld quiescence checks, bound %" PRIu64,
#if FOLD_RACES_HAVE_MODE
		    c.mode,
#else
		    0u,
#endif
		    adds, atomic_load(&s.folds), v.checks, pcpu_counter_error_bound(&c));
	cr_assert_gt(atomic_load(&s.folds), v.checks, "the folder hardly ran");
	cr_assert_eq(v.bad, 0, "%ld of %ld quiescence checks broke the bound; first: %s", v.bad,
		     v.checks, v.first);
	pcpu_counter_destroy(&c);
}

/* Fixed batch 33: threshold 32, bound CPUs * 32; far amounts up to 100 thresholds. */
PCPU_TEST(fold_stress, folds_beside_adds_keep_read_within_the_bound_with_a_fixed_batch)
{
	struct pcpu_counter_options o = { .batch = 33 };

	stress(&o, 3200, INT64_MAX);
}

/*
 * The elastic threshold: far amounts up to 2^24 move the value far from 0
 * (kept within about 2^32), so thresholds are published (and the bound
 * raised) while adds use them.
 */
PCPU_TEST(fold_stress, folds_beside_adds_keep_read_within_the_bound_with_an_elastic_threshold)
{
	stress(NULL, INT64_C(1) << 24, INT64_C(1) << 32);
}
