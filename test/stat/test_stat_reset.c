/* SPDX-License-Identifier: MIT */
/*
 * pcpu_stat_reset(): every item back to 0, each overlapping add counted
 * once (cleared or kept), readers never see a line half reset.
 */
#include "stat_helpers.h"

#include <pthread.h>

#include <percpu/counter.h>

TestSuite(stat_reset, .timeout = 120);

/* Adds on every allowed CPU, pending where it can: a reset must reach them all. */
static void add_everywhere(struct pcpu_stat *s, unsigned int n, int64_t *exact)
{
	int cpus[64], nr = pcpu_test_allowed_cpus(cpus, 64);

	for (int c = 0; c < nr; c++) {
		pcpu_test_pin(cpus[c]);
		for (unsigned int i = 0; i < n; i++) {
			pcpu_stat_add(s, i, 0);
			pcpu_stat_add(s, i, (int64_t)(i + 1) * (c + 1));
			exact[i] += (int64_t)(i + 1) * (c + 1);
		}
	}
	/* and one amount past any threshold, through the slow path */
	pcpu_stat_add(s, 0, INT64_C(1) << 40);
	exact[0] += INT64_C(1) << 40;
}

PCPU_TEST(stat_reset, every_item_reads_and_sums_to_zero_after_it)
{
	enum { N = 20 };
	struct pcpu_stat *s = stat_test_create(N, NULL, 1000, 0);
	int64_t exact[N] = { 0 }, snap[N];

	add_everywhere(s, N, exact);
	stat_test_assert_exact(s, exact);
	pcpu_stat_reset(s);
	memset(exact, 0, sizeof(exact));
	stat_test_assert_exact(s, exact);
	cr_assert_eq(pcpu_stat_snapshot(s, snap, NULL), 0);
	for (unsigned int i = 0; i < N; i++) {
		cr_assert_eq(snap[i], 0, "item %u: snapshot %" PRId64, i, snap[i]);
		/* folded, then zeroed: the approximate read is exact too */
		cr_assert_eq(pcpu_stat_read(s, i), 0, "item %u: read %" PRId64, i,
			     pcpu_stat_read(s, i));
	}
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat_reset, counting_starts_again_from_zero)
{
	enum { N = 9 };
	uint32_t groups[N] = { 1, 1, 1, 2, 2, 0, 0, 0, 0 };
	struct pcpu_stat *s = stat_test_create(N, groups, 0, 0);
	int64_t exact[N] = { 0 };

	add_everywhere(s, N, exact);
	pcpu_stat_reset(s);
	memset(exact, 0, sizeof(exact));
	for (int round = 0; round < 3; round++)
		for (unsigned int i = 0; i < N; i++) {
			pcpu_stat_add(s, i, (int64_t)i - 4);
			exact[i] += (int64_t)i - 4;
		}
	stat_test_assert_exact(s, exact);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat_reset, a_large_value_gives_back_a_small_threshold)
{
	struct pcpu_stat *s = stat_test_create(1, NULL, 0, 0);
	int64_t exact[1] = { 1 };

	pcpu_stat_add(s, 0, INT64_C(1) << 40);
	pcpu_stat_add(s, 0, 0);
	cr_assert_gt(s->hot[0].threshold, 1000u, "a large value has a large threshold");
	pcpu_stat_reset(s);
	/* near 0 the item is precise again: a small add is not left far off */
	cr_assert_leq(s->hot[0].threshold, (uint32_t)pcpu_counter_default_floor());
	pcpu_stat_add(s, 0, 1);
	stat_test_assert_exact(s, exact);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat_reset, a_set_made_like_another_resets_alone)
{
	struct pcpu_stat *a = stat_test_create(3, NULL, 0, 0), *b = pcpu_stat_create_like(a);

	cr_assert_not_null(b);
	pcpu_stat_add(a, 1, 7);
	pcpu_stat_add(b, 1, 11);
	pcpu_stat_reset(a);
	cr_assert_eq(pcpu_stat_sum(a, 1), 0);
	cr_assert_eq(pcpu_stat_sum(b, 1), 11);
	pcpu_stat_destroy(a);
	pcpu_stat_destroy(b);
}

/* ---- adds and readers overlapping resets: each add counted once --------- */

enum { RACE_ITEMS = 10, RACE_WRITERS = 4 };

struct race {
	struct pcpu_stat *s;
	int stop;
	/* per writer, adds of +1 to every item completed so far */
	long done[RACE_WRITERS];
	int64_t reader_bad;  /* a value out of range that the reader saw; 0: none */
	long reader_most;
};

struct writer {
	struct race *r;
	int id;
};

static void *writer_main(void *p)
{
	struct writer *w = p;
	struct race *r = w->r;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		for (unsigned int i = 0; i < RACE_ITEMS; i++)
			pcpu_stat_add(r->s, i, 1);
		__atomic_store_n(&r->done[w->id], r->done[w->id] + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static long total_done(struct race *r);

/* Never below 0 (a reset taking too much), never above every add made (one twice). */
static void *reader_main(void *p)
{
	struct race *r = p;
	int64_t v[RACE_ITEMS];

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		long most;

		cr_assert_eq(pcpu_stat_snapshot(r->s, v, NULL), 0);
		most = total_done(r) + RACE_WRITERS;
		for (unsigned int i = 0; i < RACE_ITEMS; i++) {
			if (v[i] < 0 || v[i] > most) {
				__atomic_store_n(&r->reader_bad, v[i], __ATOMIC_RELAXED);
				__atomic_store_n(&r->reader_most, most, __ATOMIC_RELAXED);
			}
		}
	}
	return NULL;
}

static long total_done(struct race *r)
{
	long t = 0;

	for (int w = 0; w < RACE_WRITERS; w++)
		t += __atomic_load_n(&r->done[w], __ATOMIC_ACQUIRE);
	return t;
}

PCPU_TEST(stat_reset, every_add_overlapping_a_reset_is_cleared_or_kept_once)
{
	uint32_t groups[RACE_ITEMS] = { 1, 1, 1, 1, 1, 1, 1, 2, 2, 2 };
	struct race r = { .s = stat_test_create(RACE_ITEMS, groups, 0, 0) };
	struct writer w[RACE_WRITERS];
	pthread_t wt[RACE_WRITERS], rt;
	long resets = pcpu_test_iterations(2000), before = 0, after = 0, total;

	for (int i = 0; i < RACE_WRITERS; i++) {
		w[i] = (struct writer){ .r = &r, .id = i };
		cr_assert_eq(pthread_create(&wt[i], NULL, writer_main, &w[i]), 0);
	}
	cr_assert_eq(pthread_create(&rt, NULL, reader_main, &r), 0);
	for (long k = 0; k < resets; k++) {
		before = total_done(&r);
		pcpu_stat_reset(r.s);
		after = total_done(&r);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < RACE_WRITERS; i++)
		pthread_join(wt[i], NULL);
	pthread_join(rt, NULL);
	total = total_done(&r);
	/*
	 * Rounds completed before the last reset began are cleared, rounds
	 * begun after it returned are kept; a round in flight may go either
	 * way, item by item: each writer has at most one round in flight.
	 */
	for (unsigned int i = 0; i < RACE_ITEMS; i++) {
		int64_t sum = pcpu_stat_sum(r.s, i);

		cr_assert_geq(sum, total - after - RACE_WRITERS,
			      "item %u: %" PRId64 " < %ld adds after the reset: one lost", i, sum,
			      total - after);
		cr_assert_leq(sum, total - before,
			      "item %u: %" PRId64 " > %ld adds since the reset began: one twice", i,
			      sum, total - before);
	}
	cr_assert_eq(r.reader_bad, 0, "a snapshot saw %" PRId64 " (at most %ld adds made)",
		     r.reader_bad, r.reader_most);
	pcpu_stat_destroy(r.s);
}

PCPU_TEST(stat_reset, null_set_aborts_or_is_ignored, .signal = PCPU_TEST_MISUSE_SIGNAL)
{
	pcpu_stat_reset(NULL);
}
