/* SPDX-License-Identifier: MIT */
/*
 * Label families of sparse native histograms (pcpu_family_create_sparse()):
 * each child a sparse histogram of its own, exact per child (count, sum,
 * every bucket) against a shadow tally with 4 threads observing into 3
 * children across schema reductions; the text formats with the child's
 * labels; exemplars and snapshots on a child; a child's reset and its
 * created time; removal, partial delete,
 * currying, overflow and reclaim; bad input.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include <percpu/family.h>
#include <percpu/histogram.h>

#include "helpers.h"
#include "kinds/kinds_internal.h"
#include "pcpu_test.h"
#define SHADOW_ASSERT cr_assert
#include "sparse_shadow.h"

static const char *const route_names[] = { "route", NULL };
static const char *const routes[] = { "a", "b", "c" };
#define NR_CHILDREN 3

static struct pcpu_family *make(struct pcpu_metrics_registry *r, const char *name,
				const char *const *names, unsigned int max,
				const struct pcpu_histogram_sparse *s)
{
	struct pcpu_family *f = pcpu_family_create_sparse(
		&(struct pcpu_family_desc){ .name = name, .help = "Test.",
					    .kind = PCPU_METRIC_HISTOGRAM, .label_names = names,
					    .max_children = max, .registry = r },
		s);

	cr_assert_not_null(f, "create_sparse: %s", strerror(errno));
	return f;
}

/* What a walk of the registry gave, per child (by its route). */
struct got {
	int samples[NR_CHILDREN];
	int32_t schema[NR_CHILDREN];
	uint64_t inf[NR_CHILDREN];
	struct shadow m[NR_CHILDREN];
};

static int grab(const struct pcpu_metric_sample *s, void *arg)
{
	struct got *g = arg;
	int at = -1;

	cr_assert(s->flags & PCPU_METRIC_SAMPLE_F_SPARSE, "a child exposed as sparse");
	cr_assert_str_eq(s->labels[0], "route");
	for (int i = 0; i < NR_CHILDREN; i++)
		if (strcmp(s->labels[1], routes[i]) == 0)
			at = i;
	cr_assert_geq(at, 0, "route %s", s->labels[1]);
	g->samples[at]++;
	g->schema[at] = s->schema;
	g->inf[at] = s->buckets[s->nr_bounds];
	shadow_from_sample(&g->m[at], s);
	return 0;
}

/* Concurrent observers: each picks a child per value and tallies it. */
#define THREADS 4
#define PER_THREAD 60000

struct worker {
	struct pcpu_family *f;
	unsigned int seed;
	struct shadow *tally; /* [NR_CHILDREN] */
};

static void *observe_many(void *arg)
{
	struct worker *w = arg;
	struct pcpu_histogram *kids[NR_CHILDREN];

	for (int c = 0; c < NR_CHILDREN; c++) {
		kids[c] = pcpu_family_get_histogram(w->f, (const char *const[]){ routes[c], NULL });
		cr_assert_not_null(kids[c]);
	}
	for (int i = 0; i < PER_THREAD; i++) {
		int c = rand_r(&w->seed) % NR_CHILDREN;
		/* multiples of 2^-20, 2^-12 .. 2^12, either sign: exact sums (sum_scale 2^20) */
		double v = ldexp(round(ldexp(ldexp(1.0 + rand_r(&w->seed) / (double)RAND_MAX,
						   rand_r(&w->seed) % 24 - 12),
					     20)),
				 -20);

		if (rand_r(&w->seed) % 4 == 0)
			v = -v;
		else if (rand_r(&w->seed) % 100 == 0)
			v = 0;
		/* the integer observe (scale 1) for whole values, the double one else */
		if (v == floor(v) && fabs(v) < 1e6)
			pcpu_histogram_observe(kids[c], (int64_t)v);
		else
			cr_assert_eq(pcpu_histogram_observe_double(kids[c], v), 0);
		/* the zero threshold is 2^-128: only 0 in the zero bucket here */
		shadow_add(&w->tally[c], v, ldexp(1, -128), 8);
	}
	return NULL;
}

PCPU_TEST(family_sparse, children_are_exact_under_concurrent_observers_across_reductions,
	  .timeout = 120)
{
	static struct shadow tallies[THREADS][NR_CHILDREN], total[NR_CHILDREN], want;
	static struct got g;
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_family *f = make(r, "fs_conc_seconds", route_names, 0,
				     &(struct pcpu_histogram_sparse){
					     .schema = 8, .max_buckets = 40,
					     .sum_scale = INT64_C(1) << 20 });
	struct worker w[THREADS];
	pthread_t t[THREADS];

	cr_assert_not_null(r);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .f = f, .seed = 7u + (unsigned int)i, .tally = tallies[i] };
		cr_assert_eq(pthread_create(&t[i], NULL, observe_many, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		cr_assert_eq(pthread_join(t[i], NULL), 0);
		for (int c = 0; c < NR_CHILDREN; c++)
			shadow_merge(&total[c], &tallies[i][c]);
	}
	cr_assert_eq(pcpu_family_count(f), NR_CHILDREN);
	cr_assert_eq(pcpu_metrics_registry_foreach(r, grab, &g), 0);
	for (int c = 0; c < NR_CHILDREN; c++) {
		struct pcpu_histogram *h =
			pcpu_family_get_histogram(f, (const char *const[]){ routes[c], NULL });
		struct pcpu_sparse_stats st;
		uint64_t snap;
		int64_t sum;

		pcpu_sparse_stats(h->sparse, &st);
		cr_log_info("child %s: schema %d, reductions %llu, count %llu", routes[c],
			    g.schema[c], (unsigned long long)st.reductions,
			    (unsigned long long)g.m[c].count);
		/* 40 buckets cannot hold 24 powers of two of both signs at schema 8 */
		cr_assert_gt(st.reductions, 0, "child %s reduced", routes[c]);
		cr_assert_lt(g.schema[c], 8);
		cr_assert_eq(g.samples[c], 1);
		cr_assert_eq(g.m[c].count, total[c].count, "child %s: count %llu, observed %llu",
			     routes[c], (unsigned long long)g.m[c].count,
			     (unsigned long long)total[c].count);
		cr_assert_eq(g.inf[c], total[c].count);
		cr_assert_eq(g.m[c].zero, total[c].zero);
		cr_assert_eq(g.m[c].sum, total[c].sum, "child %s: sum %.17g, want %.17g",
			     routes[c], g.m[c].sum, total[c].sum);
		cr_assert_eq(shadow_in_keys(&g.m[c]) + g.m[c].zero, g.m[c].count);
		shadow_reduce(&want, &total[c], 8, g.schema[c]);
		shadow_assert_same(&g.m[c], &want, routes[c]);
		/* the snapshot: the count as the one bucket, the sum at scale 1 */
		cr_assert_eq(pcpu_histogram_snapshot(h, &snap, &sum), 0);
		cr_assert_eq(snap, total[c].count);
		cr_assert_eq(sum, (int64_t)llround(total[c].sum));
	}
	pcpu_family_destroy(f);
	pcpu_metrics_registry_destroy(r);
}

PCPU_TEST(family_sparse, text_formats_show_each_child_with_its_labels)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_family *f = make(r, "fs_text_seconds", route_names, 0,
				     &(struct pcpu_histogram_sparse){ .schema = 3 });
	struct pcpu_histogram *a = pcpu_family_get_histogram(f, (const char *const[]){ "a", NULL });
	struct pcpu_histogram *b = pcpu_family_get_histogram(f, (const char *const[]){ "b", NULL });
	char *prom, *om;

	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_neq(a, b);
	cr_assert_eq(pcpu_histogram_observe_double(a, 0.5), 0);
	cr_assert_eq(pcpu_histogram_observe_double(a, 1.5), 0);
	pcpu_histogram_observe(a, 2);
	cr_assert_eq(pcpu_histogram_observe_exemplar(b, 4, PCPU_LABELS("trace_id", "fs42")), 0);
	prom = metrics_registry_text(r, PCPU_METRICS_PROMETHEUS);
	om = metrics_registry_text(r, PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(prom);
	cr_assert_not_null(om);
	cr_expect(metrics_has_line(prom, "# TYPE fs_text_seconds histogram"), "%s", prom);
	cr_expect(metrics_has_line(prom, "fs_text_seconds_bucket{route=\"a\",le=\"+Inf\"} 3"), "%s",
		  prom);
	cr_expect(metrics_has_line(prom, "fs_text_seconds_sum{route=\"a\"} 4"), "%s", prom);
	cr_expect(metrics_has_line(prom, "fs_text_seconds_count{route=\"a\"} 3"), "%s", prom);
	cr_expect(metrics_has_line(prom, "fs_text_seconds_bucket{route=\"b\",le=\"+Inf\"} 1"), "%s",
		  prom);
	cr_expect(metrics_has_line(prom, "fs_text_seconds_count{route=\"b\"} 1"), "%s", prom);
	cr_expect(metrics_has_line(om, "fs_text_seconds_sum{route=\"a\"} 4.0") ||
			  metrics_has_line(om, "fs_text_seconds_sum{route=\"a\"} 4"),
		  "%s", om);
	cr_expect(metrics_has_line(om, "fs_text_seconds_count{route=\"a\"} 3"), "%s", om);
	/* the child's exemplar, on its one bucket */
	cr_expect_not_null(strstr(om, "fs_text_seconds_bucket{route=\"b\",le=\"+Inf\"} 1 "
				      "# {trace_id=\"fs42\"} 4"),
			   "%s", om);
	free(prom);
	free(om);
	pcpu_family_destroy(f);
	pcpu_metrics_registry_destroy(r);
}

/* The created time of child "a" of @r's one family. */
static int grab_created(const struct pcpu_metric_sample *s, void *arg)
{
	if (strcmp(s->labels[1], "a") == 0) {
		cr_assert(s->flags & PCPU_METRIC_SAMPLE_F_CREATED);
		*(double *)arg = s->created;
	}
	return 0;
}

PCPU_TEST(family_sparse, a_childs_reset_empties_it_alone_with_a_new_created_time)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_family *f = make(r, "fs_reset_seconds", route_names, 0,
				     &(struct pcpu_histogram_sparse){ .schema = 0, .max_buckets = 2,
								      .min_reset_ns = 1 });
	struct pcpu_histogram *a = pcpu_family_get_histogram(f, (const char *const[]){ "a", NULL });
	struct pcpu_histogram *b = pcpu_family_get_histogram(f, (const char *const[]){ "b", NULL });
	struct timespec ts;
	double made = 0, after, before_reset;
	uint64_t count;

	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_eq(pcpu_metrics_registry_foreach(r, grab_created, &made), 0);
	cr_assert_gt(made, 0);
	nanosleep(&(struct timespec){ .tv_nsec = 20000000 }, NULL);
	clock_gettime(CLOCK_REALTIME, &ts);
	before_reset = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	pcpu_histogram_observe(b, 1);
	/* schema 0: 1, 4 and 16 populate three buckets, past the cap of 2: a reset */
	pcpu_histogram_observe(a, 1);
	pcpu_histogram_observe(a, 4);
	pcpu_histogram_observe(a, 16);
	cr_assert_eq(pcpu_histogram_snapshot(a, &count, NULL), 0);
	cr_expect_lt(count, 3, "a reset dropped what came before: %llu",
		     (unsigned long long)count);
	cr_assert_eq(pcpu_histogram_snapshot(b, &count, NULL), 0);
	cr_expect_eq(count, 1, "the other child keeps its observation");
	cr_assert_eq(pcpu_metrics_registry_foreach(r, grab_created, &after), 0);
	cr_expect_geq(after, before_reset - 0.001, "created %.6f, reset after %.6f (made %.6f)",
		      after, before_reset, made);
	pcpu_family_destroy(f);
	pcpu_metrics_registry_destroy(r);
}

PCPU_TEST(family_sparse, remove_partial_delete_curry_and_overflow_as_other_kinds)
{
	static const char *const names[] = { "route", "code", NULL };
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_family *f = make(r, "fs_rm_seconds", names, 4,
				     &(struct pcpu_histogram_sparse){ .schema = 2 });
	struct pcpu_family_curried *on_a = pcpu_family_curry(f, PCPU_LABELS("route", "/a"));
	struct pcpu_histogram *h, *again, *other, *ov;
	uint64_t count;
	char *prom;

	cr_assert_not_null(on_a);
	h = pcpu_family_curried_get_histogram(on_a, (const char *const[]){ "200", NULL });
	cr_assert_not_null(h);
	cr_expect_eq(h, pcpu_family_get_histogram(f, (const char *const[]){ "/a", "200", NULL }));
	cr_assert_not_null(h->sparse, "a child is sparse");
	pcpu_histogram_observe(h, 3);
	cr_assert_not_null(
		pcpu_family_curried_get_histogram(on_a, (const char *const[]){ "500", NULL }));
	other = pcpu_family_get_histogram(f, (const char *const[]){ "/b", "200", NULL });
	cr_assert_not_null(other);
	pcpu_histogram_observe(other, 5);
	cr_expect_eq(pcpu_family_count(f), 3);
	/* the family's other gets refuse its children */
	errno = 0;
	cr_expect_null(pcpu_family_get(f, (const char *const[]){ "/a", "200", NULL }));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_get_summary(f, (const char *const[]){ "/a", "200", NULL }));
	cr_expect_eq(errno, EINVAL);
	/* histogram families' size: 0 */
	cr_expect_eq(pcpu_family_child_size(f, 8), 0);

	/* partial delete: both children of /a, out of the exposition at once */
	cr_expect_eq(pcpu_family_remove_matching(f, PCPU_LABELS("route", "/a")), 2);
	cr_expect_eq(pcpu_family_count(f), 1);
	prom = metrics_registry_text(r, PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(prom);
	cr_expect_null(strstr(prom, "route=\"/a\""), "%s", prom);
	cr_expect(metrics_has_line(prom, "fs_rm_seconds_count{code=\"200\",route=\"/b\"} 1"), "%s",
		  prom);
	free(prom);
	/* the removed child stays valid until reclaim; a new get starts from 0 */
	pcpu_histogram_observe(h, 3);
	again = pcpu_family_curried_get_histogram(on_a, (const char *const[]){ "200", NULL });
	cr_assert_not_null(again);
	cr_assert_eq(pcpu_histogram_snapshot(again, &count, NULL), 0);
	cr_expect_eq(count, 0);
	pcpu_family_reclaim(f);
	/* one by one */
	cr_expect_eq(pcpu_family_remove(f, (const char *const[]){ "/b", "200", NULL }), 0);
	cr_expect_eq(pcpu_family_remove(f, (const char *const[]){ "/b", "200", NULL }), -ENOENT);
	pcpu_family_reclaim(f);

	/* overflow: past the cap of 4, a new tuple gets the overflow child */
	cr_assert_eq(pcpu_family_set_overflow(f, (const char *const[]){ "other", "other", NULL }),
		     0);
	for (int i = 0; i < 3; i++) {
		char code[8];

		snprintf(code, sizeof(code), "%d", 300 + i);
		cr_assert_not_null(
			pcpu_family_get_histogram(f, (const char *const[]){ "/c", code, NULL }));
	}
	cr_expect_eq(pcpu_family_count(f), 5); /* 4 children and the overflow one */
	errno = 0;
	ov = pcpu_family_get_histogram(f, (const char *const[]){ "/d", "1", NULL });
	cr_expect_eq(errno, E2BIG);
	cr_assert_eq(ov, pcpu_family_get_histogram(
				 f, (const char *const[]){ "other", "other", NULL }));
	pcpu_histogram_observe(ov, 1);
	cr_expect_eq(pcpu_family_refused(f), 1);
	prom = metrics_registry_text(r, PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(prom);
	cr_expect(metrics_has_line(prom,
				   "fs_rm_seconds_count{code=\"other\",route=\"other\"} 1"),
		  "%s", prom);
	free(prom);
	cr_expect_eq(pcpu_family_remove(f, (const char *const[]){ "other", "other", NULL }),
		     -EBUSY);
	pcpu_family_curried_free(on_a);
	pcpu_family_destroy(f);
	pcpu_metrics_registry_destroy(r);
}

PCPU_TEST(family_sparse, bad_input_is_einval)
{
	const struct pcpu_family_desc good = { .name = "fs_bad_seconds",
					       .kind = PCPU_METRIC_HISTOGRAM,
					       .label_names = route_names };
	const struct pcpu_histogram_sparse fine = { .schema = 3 };
	const struct pcpu_histogram_native nat = { .schema = 3 };
	struct pcpu_family_desc d;
	struct pcpu_histogram_sparse s;
	struct pcpu_family *f;
	int64_t bound = 10;

	errno = 0;
	cr_expect_null(pcpu_family_create_sparse(NULL, &fine));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_create_sparse(&good, NULL));
	cr_expect_eq(errno, EINVAL);
	for (int i = 0; i < 14; i++) {
		d = good;
		s = fine;
		switch (i) {
		case 0: d.kind = PCPU_METRIC_COUNTER; break;
		case 1: d.kind = PCPU_METRIC_SUMMARY; break;
		case 2: d.bounds = &bound; d.nr_bounds = 1; break;
		case 3: d.nr_bounds = 1; break;
		case 4: d.bounds = &bound; break;
		case 5: d.native = &nat; break;
		case 6: s.reserved[0] = 1; break;
		case 7: s.reserved[3] = 1; break;
		case 8: s.schema = PCPU_HISTOGRAM_MAX_SCHEMA + 1; break;
		case 9: s.schema = PCPU_HISTOGRAM_MIN_SCHEMA - 1; break;
		case 10: s.max_buckets = PCPU_HISTOGRAM_SPARSE_MAX_BUCKETS + 1; break;
		case 11: s.zero_threshold = -1; break;
		case 12: s.min_reset_ns = -1; break;
		case 13: d.scale = -1; break;
		}
		errno = 0;
		cr_expect_null(pcpu_family_create_sparse(&d, &s), "case %d accepted", i);
		cr_expect_eq(errno, EINVAL, "case %d: errno %d", i, errno);
	}
	/* nothing of the refused ones was registered: the good one takes the name */
	f = pcpu_family_create_sparse(&good, &fine);
	cr_assert_not_null(f, "%s", strerror(errno));
	/* the name is now taken */
	cr_expect_eq(pcpu_family_create_sparse(&good, &fine), NULL);
	cr_expect_eq(errno, EEXIST);
	pcpu_family_destroy(f);
}
