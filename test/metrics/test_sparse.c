/* SPDX-License-Identifier: MIT */
/*
 * Sparse native histograms (pcpu_histogram_create_sparse()): every bucket
 * against a shadow (sparse_shadow.h) that keys each observation with
 * pcpu_metrics_native_key() (negative and double observations too); the
 * bucket limit after each
 * observe; reductions that merge keys as client_golang's ceil(k / 2) and
 * land where the coarser schema keys the values; min_reset_ns; exact counts
 * against a shadow tally with concurrent observers across reductions and
 * resets; NaN and infinities; a 0.4 program's inline observe; memory that
 * follows the buckets used; the text formats; bad input.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <percpu/histogram.h>

#include "helpers.h"
#include "kinds/kinds_internal.h"
#include "pcpu_test.h"
#define SHADOW_ASSERT cr_assert
#include "sparse_shadow.h"

/* What a scrape gave for one histogram. */
struct got {
	const char *name;
	int samples;
	uint32_t flags;
	int32_t schema;
	uint64_t count, zero, inf;
	double sum, zero_threshold, created;
	uint32_t nr_keys, nr_negative;
	struct shadow m;
};

static int grab(const struct pcpu_metric_sample *s, void *arg)
{
	struct got *g = arg;

	if (strcmp(s->name, g->name) != 0)
		return 0;
	g->samples++;
	g->flags = s->flags;
	g->schema = s->schema;
	g->count = s->count;
	g->inf = s->buckets[s->nr_bounds];
	g->zero = s->zero_count;
	g->sum = s->dsum;
	g->zero_threshold = s->zero_threshold;
	g->created = s->created;
	g->nr_keys = s->nr_keys;
	g->nr_negative = s->nr_negative;
	for (uint32_t i = 0; i < s->nr_keys; i++) {
		cr_assert(s->key_counts[i] > 0, "key %d exposed with no count", s->keys[i]);
		if (i && i != s->nr_negative)
			cr_assert_gt(s->keys[i], s->keys[i - 1], "keys ascend within a sign");
	}
	shadow_from_sample(&g->m, s);
	return 0;
}

static struct got *scrape(struct pcpu_metrics_registry *r, const char *name)
{
	static struct got g;

	memset(&g, 0, sizeof(g));
	g.name = name;
	cr_assert_eq(pcpu_metrics_registry_foreach(r, grab, &g), 0);
	cr_assert_eq(g.samples, 1);
	cr_assert(g.flags & PCPU_METRIC_SAMPLE_F_SPARSE);
	return &g;
}

static struct pcpu_histogram *make(struct pcpu_metrics_registry *r, const char *name,
				   int64_t scale, const struct pcpu_histogram_sparse *s)
{
	struct pcpu_histogram *h = pcpu_histogram_create_sparse(
		&(struct pcpu_histogram_desc){ .name = name, .help = "Test.", .scale = scale,
					       .registry = r },
		s);

	cr_assert_not_null(h, "create_sparse: %s", strerror(errno));
	return h;
}

/* A value spread over many keys of either sign, some in the zero bucket. */
static double spread(unsigned int *seed)
{
	double v = ldexp(1.0 + rand_r(seed) / (double)RAND_MAX, rand_r(seed) % 40 - 20);

	return rand_r(seed) % 3 == 0 ? -v : rand_r(seed) % 50 == 0 ? 0 : v;
}

PCPU_TEST(sparse, double_and_negative_observations_land_in_prometheus_keys)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_histogram *h = make(r, "d_seconds", 0,
					&(struct pcpu_histogram_sparse){ .schema = 3,
									 .zero_threshold = 1e-3 });
	static struct shadow want;
	unsigned int seed = 1;
	struct got *g;

	memset(&want, 0, sizeof(want));
	for (int i = 0; i < 20000; i++) {
		/* multiples of 2^-30: the sum in 10^-9 units rounds each by < 2^-31 */
		double v = ldexp(round(ldexp(spread(&seed), 30)), -30);

		cr_assert_eq(pcpu_histogram_observe_double(h, v), 0);
		shadow_add(&want, v, 1e-3, 3);
	}
	g = scrape(r, "d_seconds");
	cr_assert_eq(g->schema, 3);
	cr_assert_eq(g->count, want.count);
	cr_assert_eq(g->inf, want.count, "+Inf bucket is the count");
	cr_assert_eq(g->zero, want.zero);
	cr_assert_eq(g->zero_threshold, (double)1e-3);
	cr_assert_gt(g->nr_negative, 0);
	shadow_assert_same(&g->m, &want, "scraped");
	/* 20000 adds, each off by at most 0.5e-9 */
	cr_assert(fabs(g->sum - want.sum) <= 20000 * 0.5e-9 + 1e-9, "sum %.17g, want %.17g",
		  g->sum, want.sum);
	pcpu_histogram_destroy(h);
	pcpu_metrics_registry_destroy(r);
}

PCPU_TEST(sparse, integer_observations_are_divided_by_the_scale)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_histogram *h = make(r, "i_seconds", 1000000000,
					&(struct pcpu_histogram_sparse){ .schema = 2 });
	static struct shadow want;
	int64_t sum = 0;
	uint64_t counts[1];
	int64_t snap_sum;
	struct got *g;

	memset(&want, 0, sizeof(want));
	for (int64_t v = -3000000000; v <= 3000000000; v += 7777777) {
		pcpu_histogram_observe(h, v);
		shadow_add(&want, (double)v / 1e9, ldexp(1, -128), 2);
		sum += v;
	}
	g = scrape(r, "i_seconds");
	cr_assert_eq(g->count, want.count);
	cr_assert_eq(g->zero_threshold, ldexp(1, -128), "0: the Go client's 2^-128");
	shadow_assert_same(&g->m, &want, "scraped");
	/* the sum's units are the scale's: integers summed exactly */
	cr_assert_eq(g->sum, (double)((double)sum / 1e9));
	cr_assert_eq(pcpu_histogram_nr_buckets(h), 1);
	cr_assert_eq(pcpu_histogram_snapshot(h, counts, &snap_sum), 0);
	cr_assert_eq(counts[0], want.count);
	cr_assert_eq(snap_sum, sum);
	pcpu_histogram_destroy(h);
	pcpu_metrics_registry_destroy(r);
}

PCPU_TEST(sparse, the_limit_holds_after_each_observe_and_reduction_merges_as_go)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_histogram *h = make(r, "l_seconds", 0,
					&(struct pcpu_histogram_sparse){ .schema = 8,
									 .max_buckets = 24 });
	static struct shadow fine, want;
	struct pcpu_sparse_stats st;
	unsigned int seed = 5;
	int32_t schema = 8;
	struct got *g;

	memset(&fine, 0, sizeof(fine));
	for (int i = 0; i < 5000; i++) {
		double v = spread(&seed) / 64;

		pcpu_histogram_observe_double(h, v);
		shadow_add(&fine, v, ldexp(1, -128), 8);
		pcpu_sparse_stats(h->sparse, &st);
		cr_assert_leq(st.populated, 24, "observe %d: %u buckets", i, st.populated);
		cr_assert_leq(st.schema, schema, "the schema only goes down");
		schema = st.schema;
	}
	cr_assert_lt(schema, 8);
	cr_assert_geq(st.reductions, (uint64_t)(8 - schema));
	g = scrape(r, "l_seconds");
	cr_assert_eq(g->schema, schema);
	cr_assert_leq(g->nr_keys, 24);
	/* Go's merge of the fine keys ... */
	shadow_reduce(&want, &fine, 8, schema);
	shadow_assert_same(&g->m, &want, "scraped");
	/* ... is where the coarse schema keys each value */
	{
		static struct shadow direct;
		unsigned int again = 5;

		memset(&direct, 0, sizeof(direct));
		for (int i = 0; i < 5000; i++)
			shadow_add(&direct, spread(&again) / 64, ldexp(1, -128), schema);
		shadow_assert_same(&g->m, &direct, "keyed coarse");
	}
	cr_assert_eq(g->count, fine.count);
	pcpu_histogram_destroy(h);
	pcpu_metrics_registry_destroy(r);
}

PCPU_TEST(sparse, go_rule_on_known_keys)
{
	/* ceil(k / 2): 1, 2 -> 1; 3, 4 -> 2; 0, -1 -> 0; -2, -3 -> -1 */
	static const int32_t k[] = { 1, 2, 3, 4, 0, -1, -2, -3, -4, 9 };
	static const int32_t want[] = { 1, 1, 2, 2, 0, 0, -1, -1, -2, 5 };

	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		cr_assert_eq(pcpu_sparse_reduce_key(k[i], 3, 2), want[i], "key %d", k[i]);
		cr_assert_eq(pcpu_sparse_reduce_key(k[i], 3, 2), shadow_go_reduce(k[i]));
	}
	cr_assert_eq(pcpu_sparse_reduce_key(17, 5, 2), 3); /* 17 -> 9 -> 5 -> 3 */
}

PCPU_TEST(sparse, min_reset_duration_reduces_first_then_resets)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_histogram *h = make(r, "r_seconds", 0,
					&(struct pcpu_histogram_sparse){
						.schema = 4, .max_buckets = 8,
						.min_reset_ns = 200000000 });
	struct pcpu_sparse_stats st;
	struct got *g;
	double v = 1, created;

	/* within 200 ms of creation: reductions */
	for (int i = 0; i < 20; i++, v *= 1.5)
		pcpu_histogram_observe_double(h, v);
	pcpu_sparse_stats(h->sparse, &st);
	cr_assert_gt(st.reductions, 0);
	cr_assert_eq(st.resets, 0);
	cr_assert_lt(st.schema, 4);
	g = scrape(r, "r_seconds");
	cr_assert_eq(g->count, 20);
	created = g->created; /* the registration's */
	usleep(250000);
	/* then one more bucket past the limit: a reset, at the initial schema */
	int observed = 20;

	for (int i = 0; i < 20 && st.resets == 0; i++, v *= 1.5) {
		pcpu_histogram_observe_double(h, v);
		observed++;
		pcpu_sparse_stats(h->sparse, &st);
	}
	cr_assert_eq(st.resets, 1);
	cr_assert_eq(st.schema, 4);
	cr_assert_eq(st.discarded, (uint64_t)observed);
	cr_assert_eq(st.repeated, 1);
	g = scrape(r, "r_seconds");
	cr_assert_eq(g->count, 1, "as Go: the observation past the limit stays");
	cr_assert_eq(g->nr_keys, 1);
	cr_assert(g->flags & PCPU_METRIC_SAMPLE_F_CREATED);
	cr_assert_geq(g->created, created + 0.2, "a reset: a new created time");
	pcpu_histogram_destroy(h);
	pcpu_metrics_registry_destroy(r);
}

/* Concurrent observers: each its own values, tallied per thread at the initial schema. */
struct worker {
	struct pcpu_histogram *h;
	unsigned int seed;
	int n;
	int32_t schema;
	double scale_down;
	struct shadow *tally;
};

static void *observe_many(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < w->n; i++) {
		/* multiples of 2^-20: exact in the sum's units (sum_scale 2^20) */
		double v = ldexp(round(ldexp(spread(&w->seed) / w->scale_down, 20)), -20);

		pcpu_histogram_observe_double(w->h, v);
		shadow_add(w->tally, v, ldexp(1, -128), w->schema);
	}
	return NULL;
}

#define THREADS 4

/* @total: what the threads observed, their sum included. */
static void run_workers(struct pcpu_histogram *h, int32_t schema, int n, struct shadow *total)
{
	static struct shadow tallies[THREADS];
	struct worker w[THREADS];
	pthread_t t[THREADS];

	memset(total, 0, sizeof(*total));
	for (int i = 0; i < THREADS; i++) {
		memset(&tallies[i], 0, sizeof(tallies[i]));
		w[i] = (struct worker){ .h = h, .seed = 100u + (unsigned int)i, .n = n,
					.schema = schema, .scale_down = 1, .tally = &tallies[i] };
		cr_assert_eq(pthread_create(&t[i], NULL, observe_many, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		shadow_merge(total, &tallies[i]);
	}
}

PCPU_TEST(sparse, concurrent_observers_are_exact_across_reductions, .timeout = 120)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_histogram *h = make(r, "c_seconds", 0,
					&(struct pcpu_histogram_sparse){
						.schema = 8, .max_buckets = 40,
						.sum_scale = INT64_C(1) << 20 });
	static struct shadow total, want;
	struct pcpu_sparse_stats st;
	struct got *g;

	run_workers(h, 8, 50000, &total);
	pcpu_sparse_stats(h->sparse, &st);
	cr_log_info("reductions %llu, grows %llu, schema %d, populated %u",
		    (unsigned long long)st.reductions, (unsigned long long)st.grows, st.schema,
		    st.populated);
	cr_assert_gt(st.reductions, 0);
	g = scrape(r, "c_seconds");
	cr_assert_eq(g->count, total.count, "count %llu, observed %llu",
		     (unsigned long long)g->count, (unsigned long long)total.count);
	cr_assert_eq(shadow_in_keys(&g->m) + g->zero, g->count, "count == sum of buckets");
	shadow_reduce(&want, &total, 8, g->schema);
	shadow_assert_same(&g->m, &want, "scraped");
	cr_assert_eq(g->zero, total.zero);
	cr_assert_eq(g->sum, total.sum, "sum %.17g, want %.17g", g->sum, total.sum);
	pcpu_histogram_destroy(h);
	pcpu_metrics_registry_destroy(r);
}

PCPU_TEST(sparse, concurrent_observers_across_resets_lose_nothing_else, .timeout = 120)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	/* every limit passed is a reset (1 ns since the last) */
	struct pcpu_histogram *h = make(r, "x_seconds", 0,
					&(struct pcpu_histogram_sparse){
						.schema = 3, .max_buckets = 30, .min_reset_ns = 1 });
	static struct shadow total;
	struct pcpu_sparse_stats st;
	struct got *g;

	run_workers(h, 3, 10000, &total);
	pcpu_sparse_stats(h->sparse, &st);
	cr_log_info("resets %llu, discarded %llu", (unsigned long long)st.resets,
		    (unsigned long long)st.discarded);
	cr_assert_gt(st.resets, 0);
	cr_assert_eq(st.reductions, 0);
	g = scrape(r, "x_seconds");
	cr_assert_eq(g->count + st.discarded, total.count + st.repeated,
		     "kept %llu + dropped %llu, observed %llu + repeated %llu",
		     (unsigned long long)g->count, (unsigned long long)st.discarded,
		     (unsigned long long)total.count, (unsigned long long)st.repeated);
	/* what is kept is a part of what was observed, key by key */
	for (int k = 0; k < SHADOW_SPAN; k++) {
		cr_assert_leq(g->m.pos[k], total.pos[k] + st.repeated);
		cr_assert_leq(g->m.neg[k], total.neg[k] + st.repeated);
	}
	cr_assert_eq(shadow_in_keys(&g->m) + g->zero, g->count, "count == sum of buckets");
	cr_assert_leq(g->nr_keys, 30);
	pcpu_histogram_destroy(h);
	pcpu_metrics_registry_destroy(r);
}

PCPU_TEST(sparse, nan_and_infinities_count_in_no_bucket)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_histogram *h = make(r, "n_seconds", 0,
					&(struct pcpu_histogram_sparse){ .schema = 0 });
	struct got *g;

	pcpu_histogram_observe_double(h, 2);
	cr_assert_eq(pcpu_histogram_observe_double(h, INFINITY), 0);
	g = scrape(r, "n_seconds");
	cr_assert_eq(g->count, 2);
	cr_assert_eq(g->nr_keys, 1);
	cr_assert(isinf(g->sum) && g->sum > 0);
	cr_assert_eq(pcpu_histogram_observe_double(h, NAN), 0);
	g = scrape(r, "n_seconds");
	cr_assert_eq(g->count, 3);
	cr_assert_eq(g->nr_keys, 1);
	cr_assert(isnan(g->sum));
	pcpu_histogram_destroy(h);
	pcpu_metrics_registry_destroy(r);
}

PCPU_TEST(sparse, a_04_inline_observe_counts_in_count_and_sum)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_histogram *h = make(r, "o_seconds", 1000,
					&(struct pcpu_histogram_sparse){ .schema = 1 });
	int64_t v = 123456;
	struct got *g;

	pcpu_histogram_observe(h, 1000);
	/* 0.4's inline observe, as compiled into a 0.4 program: set and index only */
	cr_assert_null(h->index);
	cr_assert_eq(h->nr_bounds, 0);
	pcpu_stat_add(h->set, __pcpu_histogram_bucket(h, v), 1);
	pcpu_stat_add(h->set, h->nr_bounds + 1, v & ((INT64_C(1) << PCPU_HISTOGRAM_SUM_SHIFT) - 1));
	pcpu_stat_add(h->set, h->nr_bounds + 2, v >> PCPU_HISTOGRAM_SUM_SHIFT);
	g = scrape(r, "o_seconds");
	cr_assert_eq(g->count, 2);
	cr_assert_eq(g->inf, 2);
	cr_assert_eq(g->nr_keys, 1, "in no native bucket");
	cr_assert_eq(g->sum, (double)(1 + (double)123.456));
	pcpu_histogram_destroy(h);
	pcpu_metrics_registry_destroy(r);
}

/* Resident memory, in bytes. */
static long rss(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * sysconf(_SC_PAGESIZE);
}

PCPU_TEST(sparse, memory_follows_the_buckets_used)
{
	enum { N = 200 };
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_histogram **dense = calloc(N, sizeof(*dense)), **sparse = calloc(N, sizeof(*sparse));
	long before, mid, after;
	char name[32];

	if (rss() == 0)
		cr_skip_test("no /proc/self/statm");
	/* warm up the arena and urcu */
	pcpu_histogram_destroy(make(r, "warm", 1000000000,
				    &(struct pcpu_histogram_sparse){ .schema = 3 }));
	before = rss();
	for (int i = 0; i < N; i++) {
		/* 1 us to 10 s at schema 3: 186 native buckets */
		snprintf(name, sizeof(name), "dense%d_seconds", i);
		dense[i] = pcpu_histogram_create(&(struct pcpu_histogram_desc){
			.name = name, .scale = 1000000000, .registry = r,
			.native = &(struct pcpu_histogram_native){ .schema = 3,
								   .zero_threshold = 1000,
								   .max = 10000000000 } });
		cr_assert_not_null(dense[i]);
		for (int k = 0; k < 10; k++)
			pcpu_histogram_observe(dense[i], 1000000 + 100000 * k);
	}
	mid = rss();
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "sparse%d_seconds", i);
		sparse[i] = make(r, name, 1000000000, &(struct pcpu_histogram_sparse){ .schema = 3 });
		for (int k = 0; k < 10; k++)
			pcpu_histogram_observe(sparse[i], 1000000 + 100000 * k);
	}
	after = rss();
	cr_log_info("10 buckets used, per histogram: dense native (186 buckets) %ld B resident, "
		    "sparse %ld B (%u CPUs possible)",
		    (mid - before) / N, (after - mid) / N, pcpu_cpu_possible());
	printf("# memory per histogram, 10 buckets used: dense native (186) %ld B, sparse %ld B\n",
	       (mid - before) / N, (after - mid) / N);
	cr_assert_lt(after - mid, (mid - before) / 2, "sparse %ld B, dense %ld B", (after - mid) / N,
		     (mid - before) / N);
	for (int i = 0; i < N; i++) {
		pcpu_histogram_destroy(dense[i]);
		pcpu_histogram_destroy(sparse[i]);
	}
	free(dense);
	free(sparse);
	pcpu_metrics_registry_destroy(r);
}

PCPU_TEST(sparse, text_formats_show_inf_sum_and_count)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_histogram *h = make(r, "t_seconds", 0,
					&(struct pcpu_histogram_sparse){ .schema = 3 });
	char *text;

	pcpu_histogram_observe_double(h, 0.25);
	pcpu_histogram_observe_double(h, 1.5);
	text = metrics_registry_text(r, PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(text);
	cr_assert(strstr(text, "# TYPE t_seconds histogram\n"), "%s", text);
	cr_assert(strstr(text, "t_seconds_bucket{le=\"+Inf\"} 2\n"), "%s", text);
	cr_assert(strstr(text, "t_seconds_sum 1.75\n"), "%s", text);
	cr_assert(strstr(text, "t_seconds_count 2\n"), "%s", text);
	free(text);
	/* OpenMetrics: with negative buckets, the +Inf bucket only (no _sum) */
	pcpu_histogram_observe_double(h, -1);
	text = metrics_registry_text(r, PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(text);
	cr_assert(strstr(text, "t_seconds_bucket{le=\"+Inf\"} 3\n"), "%s", text);
	cr_assert_null(strstr(text, "t_seconds_sum"), "%s", text);
	free(text);
	pcpu_histogram_destroy(h);
	pcpu_metrics_registry_destroy(r);
}

PCPU_TEST(sparse, bad_input_is_refused)
{
	static const int64_t b[] = { 1 };
	struct pcpu_histogram_desc d = { .name = "bad_seconds" };
	struct pcpu_histogram *h;

	errno = 0;
	cr_assert_null(pcpu_histogram_create_sparse(&d, NULL));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(pcpu_histogram_create_sparse(NULL, &(struct pcpu_histogram_sparse){ 0 }));
	cr_assert_eq(errno, EINVAL);
	const struct pcpu_histogram_sparse bad[] = {
		{ .schema = 9 },
		{ .schema = -5 },
		{ .zero_threshold = -1 },
		{ .zero_threshold = NAN },
		{ .zero_threshold = INFINITY },
		{ .max_buckets = PCPU_HISTOGRAM_SPARSE_MAX_BUCKETS + 1 },
		{ .min_reset_ns = -1 },
		{ .sum_scale = -1 },
		{ .sum_scale = (INT64_C(1) << 53) + 1 },
		{ .reserved = { 0, 0, 0, 1 } },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_assert_null(pcpu_histogram_create_sparse(&d, &bad[i]), "case %zu", i);
		cr_assert_eq(errno, EINVAL, "case %zu", i);
	}
	errno = 0;
	cr_assert_null(pcpu_histogram_create_sparse(
		&(struct pcpu_histogram_desc){ .name = "bad_seconds", .bounds = b, .nr_bounds = 1 },
		&(struct pcpu_histogram_sparse){ 0 }));
	cr_assert_eq(errno, EINVAL, "classic bounds");
	cr_assert_null(pcpu_histogram_create_sparse(
		&(struct pcpu_histogram_desc){ .name = "bad_seconds",
					       .native = &(struct pcpu_histogram_native){ 0 } },
		&(struct pcpu_histogram_sparse){ 0 }));
	cr_assert_eq(errno, EINVAL, "native buckets too");
	cr_assert_eq(pcpu_histogram_observe_double(NULL, 1), -EINVAL);
	/* a classic histogram: NaN and infinities have no integer */
	h = pcpu_histogram_create(&(struct pcpu_histogram_desc){ .name = "cl_seconds",
								 .bounds = b, .nr_bounds = 1,
								 .scale = 1000 });
	cr_assert_not_null(h);
	cr_assert_eq(pcpu_histogram_observe_double(h, NAN), -EINVAL);
	cr_assert_eq(pcpu_histogram_observe_double(h, -INFINITY), -EINVAL);
	cr_assert_eq(pcpu_histogram_observe_double(h, 1e300), -ERANGE);
	pcpu_histogram_destroy(h);
}

PCPU_TEST(sparse, observe_double_on_a_classic_histogram_rounds_to_the_scale)
{
	static const int64_t b[] = { 1000, 2000 };
	struct pcpu_histogram *h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "cd_seconds", .bounds = b, .nr_bounds = 2, .scale = 1000 });
	uint64_t counts[3];
	int64_t sum;

	cr_assert_not_null(h);
	cr_assert_eq(pcpu_histogram_observe_double(h, 1.0004), 0); /* 1000 */
	cr_assert_eq(pcpu_histogram_observe_double(h, 1.0006), 0); /* 1001 */
	cr_assert_eq(pcpu_histogram_observe_double(h, 0.0005), 0); /* 0.5: away from zero, 1 */
	cr_assert_eq(pcpu_histogram_observe_double(h, 2.5), 0);    /* 2500 */
	cr_assert_eq(pcpu_histogram_snapshot(h, counts, &sum), 0);
	cr_assert_eq(counts[0], 2);
	cr_assert_eq(counts[1], 1);
	cr_assert_eq(counts[2], 1);
	cr_assert_eq(sum, 1000 + 1001 + 1 + 2500);
	pcpu_histogram_destroy(h);
}

PCPU_TEST(sparse, exemplars_reach_the_inf_bucket)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_histogram *h = make(r, "e_seconds", 1000,
					&(struct pcpu_histogram_sparse){ .schema = 3 });
	char *text;

	cr_assert_eq(pcpu_histogram_observe_exemplar(h, 1500,
						     (const char *const[]){ "trace_id", "7", NULL }),
		     0);
	text = metrics_registry_text(r, PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(text);
	cr_assert(strstr(text, "e_seconds_bucket{le=\"+Inf\"} 1 # {trace_id=\"7\"} 1.5 "), "%s",
		  text);
	free(text);
	pcpu_histogram_destroy(h);
	pcpu_metrics_registry_destroy(r);
}
