/* SPDX-License-Identifier: MIT */
/*
 * Every concurrent operation at once, for ThreadSanitizer (Criterion does
 * not run under TSan, so this is a plain program: exit status 0 or the
 * number of the failed check). Writers add with random signs and keep
 * shadow tallies; other threads fold, sum, sync, compare, limited-add on a
 * second counter, and create and destroy counters while the refresher walks
 * the registry. At the end: exact sums, true bounds, limit never passed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <percpu/counter.h>
#include <percpu/registry.h>

#define PCPU_CHECK_PROGRAM "race"
#include "check.h"

enum { WRITERS = 4, LIMITERS = 3, LIMIT = 50000 };

static struct pcpu_counter hot, limited;
static atomic_bool stop;
static long adds_per_writer = 200000;

static void *writer(void *arg)
{
	uint64_t state = (uintptr_t)arg * 2654435761u + 1;
	int64_t *tally = calloc(1, sizeof(*tally));

	for (long i = 0; i < adds_per_writer; i++) {
		int64_t a;

		state = state * 6364136223846793005ULL + 1442695040888963407ULL;
		a = (int64_t)((state >> 33) % 201) - 90; /* drifts upwards */
		if (i % 64 == 0)
			pcpu_counter_add_batch(&hot, a, 16);
		else
			pcpu_counter_add(&hot, a);
		*tally += a;
	}
	return tally;
}

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		(void)pcpu_counter_read(&hot);
		(void)pcpu_counter_sum(&hot);
		(void)pcpu_counter_error_bound(&hot);
		(void)pcpu_counter_compare(&hot, 1000);
		(void)pcpu_counter_sync_if_delta_above(&hot, 64);
		pcpu_counter_fold_this_cpu(&hot);
	}
	return NULL;
}

static void *limiter(void *arg)
{
	long *wins = calloc(1, sizeof(*wins));

	(void)arg;
	for (int i = 0; i < 40000; i++) {
		/* the first half goes both ways: a lower limit of 0 for -3 */
		if (i < 20000 && i % 7 == 0) {
			if (pcpu_counter_limited_add(&limited, 0, -3))
				--*wins;
		} else if (pcpu_counter_limited_add(&limited, LIMIT, 3)) {
			++*wins;
		}
	}
	return wins;
}

static void *churner(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200 && !atomic_load(&stop); i++) {
		struct pcpu_counter c[3];

		CHECK(1, pcpu_counter_init_many(c, i, 3) == 0);
		pcpu_counter_add(&c[1], 5);
		CHECK(2, pcpu_counter_sum(&c[1]) == i + 5);
		pcpu_counter_destroy_many(c, 3);
	}
	return NULL;
}

int main(void)
{
	pthread_t w[WRITERS], l[LIMITERS], r, ch;
	int64_t tally = 0;
	long wins = 0;
	uint64_t diff;

	if (getenv("PCPU_TEST_SMALL"))
		adds_per_writer /= 20;
	CHECK(3, pcpu_counter_init(&hot, 0) == 0);
	CHECK(4, pcpu_counter_init(&limited, 0) == 0);
	CHECK(5, pcpu_refresher_start(1) == 0);
	pthread_create(&r, NULL, reader, NULL);
	pthread_create(&ch, NULL, churner, NULL);
	for (uintptr_t i = 0; i < WRITERS; i++)
		pthread_create(&w[i], NULL, writer, (void *)i);
	for (int i = 0; i < LIMITERS; i++)
		pthread_create(&l[i], NULL, limiter, NULL);
	for (int i = 0; i < WRITERS; i++) {
		void *t;

		pthread_join(w[i], &t);
		tally += *(int64_t *)t;
		free(t);
	}
	for (int i = 0; i < LIMITERS; i++) {
		void *t;

		pthread_join(l[i], &t);
		wins += *(long *)t;
		free(t);
	}
	atomic_store(&stop, true);
	pthread_join(r, NULL);
	pthread_join(ch, NULL);
	pcpu_refresher_stop();

	CHECK(6, pcpu_counter_sum(&hot) == tally);
	diff = (uint64_t)llabs(pcpu_counter_read(&hot) - tally);
	CHECK(7, diff <= pcpu_counter_error_bound(&hot));
	CHECK(8, pcpu_counter_sum(&limited) == 3 * wins);
	CHECK(9, pcpu_counter_sum(&limited) <= LIMIT);
	CHECK(10, pcpu_counter_sum(&limited) > LIMIT - 3);
	pcpu_counter_destroy(&hot);
	pcpu_counter_destroy(&limited);
	printf("race: ok (tally %lld, %ld limited adds)\n", (long long)tally, wins);
	return 0;
}
