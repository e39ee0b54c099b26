/* SPDX-License-Identifier: MIT */
/*
 * A family's overflow policy (issue 24, defect 6): at the cap, or for a
 * tuple that cannot be a child, a get returns the overflow child (never
 * NULL), allocates nothing, and the refusal is counted, per family, in
 * pcpu_family_refused() and in percpu_family_refused_total{family=...};
 * exact under concurrency.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/family.h>
#include <percpu/metrics.h>

#include "arena/arena.h"
#include "helpers.h"
#include "pcpu_test.h"

static const char *const method_code[] = { "method", "code", NULL };
static const char *const other2[] = { "other", "other", NULL };

static struct pcpu_family *make(const char *name, enum pcpu_metric_kind kind,
				const char *const *labels, uint32_t max)
{
	static const int64_t bounds[] = { 10, 100 };
	struct pcpu_family *f = pcpu_family_create(&(struct pcpu_family_desc){
		.name = name, .help = "h", .kind = kind, .label_names = labels,
		.max_children = max, .bounds = bounds, .nr_bounds = 2 });

	cr_assert_not_null(f, "create %s: %s", name, strerror(errno));
	return f;
}

PCPU_TEST(overflow, a_full_family_answers_with_its_overflow_child_and_counts_refusals)
{
	struct pcpu_family *f = make("ovf_requests", PCPU_METRIC_COUNTER, method_code, 2);
	struct pcpu_counter *a, *b, *o, *got;
	char *text;

	cr_assert_eq(pcpu_family_set_overflow(f, other2), 0);
	cr_assert_eq(pcpu_family_set_overflow(f, other2), -EEXIST);
	cr_assert_eq(pcpu_family_set_overflow(NULL, other2), -EINVAL);
	o = pcpu_family_get(f, other2);
	cr_assert_not_null(o);
	a = pcpu_family_get(f, (const char *const[]){ "GET", "200", NULL });
	cr_assert(a && a != o);
	cr_assert_eq(pcpu_family_refused(f), 0);
	got = pcpu_family_get(f, (const char *const[]){ "GET", "\xff", NULL });
	cr_expect_eq(got, o, "a value not UTF-8: the overflow child");
	cr_expect_eq(errno, EINVAL);
	pcpu_counter_add(got, 1);
	b = pcpu_family_get(f, (const char *const[]){ "GET", "404", NULL });
	cr_assert(b && a != b && b != o);

	errno = 0;
	got = pcpu_family_get(f, (const char *const[]){ "PUT", "200", NULL });
	cr_expect_eq(got, o, "at the cap: the overflow child");
	cr_expect_eq(errno, E2BIG);
	pcpu_counter_add(got, 1);
	got = pcpu_family_get(f, (const char *const[]){ "GET", NULL });
	cr_expect_eq(got, o, "one value short: the overflow child");
	pcpu_counter_add(got, 1);
	cr_expect_null(pcpu_family_get(NULL, other2), "no family, no child");
	cr_expect_eq(pcpu_family_get(f, (const char *const[]){ "GET", "200", NULL }), a,
		     "a live tuple is no refusal");

	cr_expect_eq(pcpu_family_refused(f), 3);
	cr_expect_eq(pcpu_family_count(f), 3, "two children and the overflow one");
	cr_expect_eq(pcpu_family_remove(f, other2), -EBUSY);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(text);
	cr_expect(metrics_has_line(text, "ovf_requests_total{code=\"other\",method=\"other\"} 3"),
		  "%s", text);
	cr_expect(metrics_has_line(text, "# TYPE percpu_family_refused_total counter"), "%s", text);
	cr_expect(metrics_has_line(text, "percpu_family_refused_total{family=\"ovf_requests\"} 3"),
		  "%s", text);
	free(text);
	pcpu_family_destroy(f);
}

PCPU_TEST(overflow, a_refusal_at_the_cap_allocates_nothing)
{
	struct pcpu_family *f = make("ovf_nomem", PCPU_METRIC_GAUGE, method_code, 1);
	struct pcpu_counter *got;
	char *text;

	cr_assert_not_null(pcpu_family_get(f, (const char *const[]){ "GET", "200", NULL }));
	/* were a child's slots allocated before the cap is checked, this fails ENOMEM */
	pcpu_arena_fail_after(0);
	errno = 0;
	got = pcpu_family_get(f, (const char *const[]){ "PUT", "200", NULL });
	pcpu_arena_fail_after(-1);
	cr_expect_null(got, "no overflow child: NULL");
	cr_expect_eq(errno, E2BIG, "errno %d (%s)", errno, strerror(errno));
	cr_expect_eq(pcpu_family_refused(f), 1);
	text = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(text);
	cr_expect(metrics_has_line(text, "percpu_family_refused_total{family=\"ovf_nomem\"} 1"),
		  "exposed from the first refusal:\n%s", text);
	free(text);
	pcpu_family_destroy(f);
}

PCPU_TEST(overflow, a_histogram_family_answers_with_its_overflow_histogram)
{
	static const char *const route[] = { "route", NULL };
	struct pcpu_family *f = make("ovf_latency", PCPU_METRIC_HISTOGRAM, route, 1);
	struct pcpu_histogram *o, *h;

	cr_assert_eq(pcpu_family_set_overflow(f, (const char *const[]){ "other", NULL }), 0);
	o = pcpu_family_get_histogram(f, (const char *const[]){ "other", NULL });
	h = pcpu_family_get_histogram(f, (const char *const[]){ "/a", NULL });
	cr_assert(o && h && o != h);
	cr_expect_eq(pcpu_family_get_histogram(f, (const char *const[]){ "/b", NULL }), o);
	pcpu_histogram_observe(o, 50);
	cr_expect_eq(pcpu_family_refused(f), 1);
	pcpu_family_destroy(f);
}

PCPU_TEST(overflow, a_live_child_made_the_overflow_one_leaves_the_cap)
{
	static const char *const k[] = { "k", NULL };
	struct pcpu_family *f = make("ovf_adopt", PCPU_METRIC_COUNTER, k, 1);
	struct pcpu_counter *o = pcpu_family_get(f, (const char *const[]){ "other", NULL });

	cr_assert_not_null(o);
	cr_assert_eq(pcpu_family_set_overflow(f, (const char *const[]){ "other", NULL }), 0);
	cr_expect_eq(pcpu_family_get(f, (const char *const[]){ "other", NULL }), o, "adopted");
	cr_expect_neq(pcpu_family_get(f, (const char *const[]){ "x", NULL }), o,
		      "the cap has room again");
	cr_expect_eq(pcpu_family_get(f, (const char *const[]){ "y", NULL }), o);
	cr_expect_eq(pcpu_family_count(f), 2);
	cr_expect_eq(pcpu_family_refused(f), 1);
	pcpu_family_destroy(f);
}

#define THREADS 8
#define PER_THREAD 100
#define CAP 16

struct race_arg {
	struct pcpu_family *f;
	pthread_barrier_t *start;
	int id;
	struct pcpu_counter *overflow;
	int own, refused;
};

static void *race(void *p)
{
	struct race_arg *a = p;

	pthread_barrier_wait(a->start);
	for (int i = 0; i < PER_THREAD; i++) {
		char m[16], c[16];
		struct pcpu_counter *got;

		snprintf(m, sizeof(m), "t%d", a->id);
		snprintf(c, sizeof(c), "%d", i);
		got = pcpu_family_get(a->f, (const char *const[]){ m, c, NULL });
		if (!got)
			continue;
		pcpu_counter_add(got, 1);
		if (got == a->overflow)
			a->refused++;
		else
			a->own++;
	}
	return NULL;
}

PCPU_TEST(overflow, the_cap_and_the_refusal_count_are_exact_under_concurrency)
{
	for (int round = 0; round < 10; round++) {
		struct pcpu_family *f = make("ovf_race", PCPU_METRIC_COUNTER, method_code, CAP);
		struct pcpu_counter *o;
		pthread_barrier_t start;
		pthread_t t[THREADS];
		struct race_arg a[THREADS];
		int own = 0, refused = 0;

		cr_assert_eq(pcpu_family_set_overflow(f, other2), 0);
		o = pcpu_family_get(f, other2);
		pthread_barrier_init(&start, NULL, THREADS);
		for (int i = 0; i < THREADS; i++) {
			a[i] = (struct race_arg){ f, &start, i, o, 0, 0 };
			pthread_create(&t[i], NULL, race, &a[i]);
		}
		for (int i = 0; i < THREADS; i++) {
			pthread_join(t[i], NULL);
			own += a[i].own;
			refused += a[i].refused;
		}
		pthread_barrier_destroy(&start);
		cr_assert_eq(own, CAP, "round %d: %d own children", round, own);
		cr_assert_eq(refused, THREADS * PER_THREAD - CAP);
		cr_assert_eq(pcpu_family_refused(f), (uint64_t)refused);
		cr_assert_eq(pcpu_counter_sum(o), refused, "no add lost");
		cr_assert_eq(pcpu_family_count(f), CAP + 1);
		pcpu_family_destroy(f);
	}
}
