/* SPDX-License-Identifier: MIT */
/*
 * Native histograms (<percpu/histogram.h>): keys as Prometheus computes
 * them, checked against the definition 2^((k-1)/2^s) < v <= 2^(k/2^s);
 * every native bucket, the zero bucket and every classic bucket exact
 * against a model that keys each observation itself; the clamp at the
 * top; the descriptor's rules; the text formats' classic view; a family's
 * native children; and collectors' native samples, refused when malformed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <percpu/family.h>
#include <percpu/histogram.h>

#include "helpers.h"
#include "kinds/kinds_internal.h"
#include "pcpu_test.h"

/* The definition, in long double: v lies in (2^((k-1)/2^s), 2^(k/2^s)]. */
static bool key_holds(double v, int32_t schema, int32_t k)
{
	long double step = ldexpl(1.0L, -schema);

	return v > exp2l((k - 1) * step) * (1 - 1e-15L) && v <= exp2l(k * step) * (1 + 1e-15L);
}

PCPU_TEST(native, keys_match_the_definition)
{
	/* known keys: powers of two are their bucket's upper bound */
	cr_assert_eq(pcpu_metrics_native_key(1.0, 3), 0);
	cr_assert_eq(pcpu_metrics_native_key(2.0, 3), 8);
	cr_assert_eq(pcpu_metrics_native_key(1.5, 3), 5);
	cr_assert_eq(pcpu_metrics_native_key(0.5, 0), -1);
	cr_assert_eq(pcpu_metrics_native_key(3.0, -1), 1);
	cr_assert_eq(pcpu_metrics_native_key(4.0, -1), 1);
	cr_assert_eq(pcpu_metrics_native_key(0.25, -1), -1);
	cr_assert_eq(pcpu_metrics_native_key(1e-9, 0), -29);
	srand(7);
	for (int32_t s = PCPU_HISTOGRAM_MIN_SCHEMA; s <= PCPU_HISTOGRAM_MAX_SCHEMA; s++)
		for (int i = 0; i < 20000; i++) {
			double v = ldexp(1.0 + rand() / (double)RAND_MAX, rand() % 120 - 60);
			int32_t k = pcpu_metrics_native_key(v, s);

			cr_assert(key_holds(v, s, k), "schema %d: %.17g in key %d", s, v, k);
		}
}

/* A model: each observation's own key, zero bucket, classic counts. */
#define MAX_KEYS 4096
struct model {
	uint64_t keys[MAX_KEYS]; /* key + MAX_KEYS / 2 */
	uint64_t zero, count;
	int64_t sum;
};

static void model_observe(struct model *m, int64_t v, int64_t scale, int32_t schema,
			  int64_t zt, int64_t top_bound)
{
	m->count++;
	m->sum = (int64_t)((uint64_t)m->sum + (uint64_t)v); /* modulo 2^64, as the library's */
	if (v <= zt) {
		m->zero++;
		return;
	}
	/* past the top bucket's bound: counted in the top bucket */
	if (v > top_bound)
		v = top_bound;
	m->keys[pcpu_metrics_native_key((double)v / (double)scale, schema) + MAX_KEYS / 2]++;
}

struct seen {
	struct model got;
	const char *name;
	int samples;
	uint32_t flags;
	int32_t schema;
	int64_t top_bound;
	uint64_t classic[8];
	uint32_t nr_classic;
};

static void add_key(void *arg, int32_t key, uint64_t count)
{
	struct model *m = arg;

	cr_assert(key + MAX_KEYS / 2 >= 0 && key + MAX_KEYS / 2 < MAX_KEYS, "key %d", key);
	m->keys[key + MAX_KEYS / 2] += count;
}

static void add_classic(void *arg, int64_t bound, uint64_t cumulative)
{
	struct seen *s = arg;

	(void)bound;
	s->classic[s->nr_classic++] = cumulative;
}

static int collect(const struct pcpu_metric_sample *m, void *arg)
{
	struct seen *s = arg;

	if (strcmp(m->name, s->name) != 0)
		return 0;
	s->samples++;
	s->flags = m->flags;
	s->schema = m->schema;
	s->got.zero += m->buckets[0];
	s->got.count += m->count;
	s->got.sum = (int64_t)((uint64_t)s->got.sum + (uint64_t)m->sum);
	s->top_bound = m->bounds[m->nr_bounds - 1];
	pcpu_native_each_key(m, add_key, &s->got);
	s->nr_classic = 0;
	pcpu_native_each_classic(m, add_classic, s);
	return 0;
}

static void check_exact(const char *name, int32_t schema, int64_t scale, int64_t zt, int64_t max,
			const int64_t *classic, uint32_t nr_classic, int n)
{
	struct pcpu_histogram *h;
	struct model want = { 0 };
	struct seen seen = { .name = name };
	uint64_t classic_want[8] = { 0 };
	const int64_t *b;
	uint32_t nb;
	int64_t top_bound;

	h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = name, .help = "Test.", .bounds = classic, .nr_bounds = nr_classic,
		.scale = scale,
		.native = &(struct pcpu_histogram_native){ .schema = schema, .zero_threshold = zt,
							   .max = max } });
	cr_assert_not_null(h, "create %s: %s", name, strerror(errno));
	nb = pcpu_histogram_nr_buckets(h);
	b = pcpu_histogram_bounds(h);
	cr_assert(nb >= 2 && nb <= PCPU_HISTOGRAM_MAX_BOUNDS + 1, "%u buckets", nb);
	cr_assert_eq(b[0], zt, "the first bound is the zero threshold");
	top_bound = b[nb - 2];
	cr_assert_geq(top_bound, max ? max : INT64_MAX, "the top bound covers max");
	srand(11);
	for (int i = 0; i < n; i++) {
		/* log-uniform over the whole range, the edges and the classic bounds too */
		int64_t v;

		switch (i % 8) {
		case 0:
			v = i % 3 - 1 + zt; /* about the zero threshold */
			break;
		case 1:
			v = nr_classic ? classic[i % nr_classic] + (i % 3) - 1 : i;
			break;
		case 2:
			v = b[1 + (unsigned)rand() % (nb - 2)]; /* on and past a bound */
			v += v < INT64_MAX ? i % 2 : 0;
			break;
		default:
			v = (int64_t)ldexp(1.0 + rand() / (double)RAND_MAX, rand() % 62);
		}
		pcpu_histogram_observe(h, v);
		model_observe(&want, v, scale > 1 ? scale : 1, schema, zt, top_bound);
		for (uint32_t c = 0; c < nr_classic; c++)
			if (v <= classic[c])
				classic_want[c]++;
	}
	cr_assert_eq(pcpu_metrics_foreach(collect, &seen), 0);
	cr_assert_eq(seen.samples, 1);
	cr_assert(seen.flags & PCPU_METRIC_SAMPLE_F_NATIVE);
	cr_assert_eq(seen.schema, schema);
	cr_assert_eq(seen.got.count, want.count);
	cr_assert_eq(seen.got.zero, want.zero, "zero bucket: %llu, want %llu",
		     (unsigned long long)seen.got.zero, (unsigned long long)want.zero);
	cr_assert_eq(seen.got.sum, want.sum);
	for (int k = 0; k < MAX_KEYS; k++)
		cr_assert_eq(seen.got.keys[k], want.keys[k], "%s: key %d: %llu, want %llu", name,
			     k - MAX_KEYS / 2, (unsigned long long)seen.got.keys[k],
			     (unsigned long long)want.keys[k]);
	cr_assert_eq(seen.nr_classic, nr_classic);
	for (uint32_t c = 0; c < nr_classic; c++)
		cr_assert_eq(seen.classic[c], classic_want[c], "classic %u", c);
	pcpu_histogram_destroy(h);
}

PCPU_TEST(native, every_bucket_is_exact_against_a_model)
{
	static const int64_t classic[] = { 0, 1000, 250000, 1000000, 1000000000 };

	/* nanoseconds exposed in seconds, schema 3 over the whole int64 range */
	check_exact("native_ns", 3, 1000000000, 0, 0, NULL, 0, 200000);
	check_exact("native_ns_classic", 3, 1000000000, 0, 0, classic, 5, 200000);
	/* unscaled, coarse and fine schemas, a zero threshold, a top */
	check_exact("native_plain", 0, 1, 0, 0, NULL, 0, 100000);
	check_exact("native_coarse", -4, 1, 10, 0, classic + 1, 4, 100000);
	check_exact("native_fine", 8, 1000, 1000, 3000, NULL, 0, 100000);
	check_exact("native_clamped", 2, 1, 0, 1000000, classic, 4, 100000);
}

PCPU_TEST(native, descriptors_against_the_rules_are_refused)
{
	static const int64_t low[] = { 5, 100 };
	struct {
		struct pcpu_histogram_native n;
		const int64_t *classic;
		uint32_t nr;
		int err;
	} rows[] = {
		{ { .schema = 9 }, NULL, 0, EINVAL },
		{ { .schema = -5 }, NULL, 0, EINVAL },
		{ { .schema = 0, .zero_threshold = -1 }, NULL, 0, EINVAL },
		{ { .schema = 0, .reserved = 1 }, NULL, 0, EINVAL },
		{ { .schema = 0, .zero_threshold = 10, .max = 10 }, NULL, 0, EINVAL },
		{ { .schema = 0, .zero_threshold = 10 }, low, 2, EINVAL },  /* a bound below it */
		{ { .schema = 0, .max = 50 }, low, 2, EINVAL },             /* a bound above max */
		{ { .schema = 4 }, NULL, 0, ERANGE },                       /* 1009 buckets */
		{ { .schema = 3 }, low, 2, 0 },
		{ { .schema = 4, .max = 1000000 }, NULL, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct pcpu_histogram *h;

		errno = 0;
		h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
			.name = "native_rules", .bounds = rows[i].classic,
			.nr_bounds = rows[i].nr, .native = &rows[i].n });
		cr_assert_eq(h == NULL ? errno : 0, rows[i].err, "row %zu: errno %d", i, errno);
		pcpu_histogram_destroy(h);
	}
	errno = 0;
	cr_assert_null(pcpu_family_create(&(struct pcpu_family_desc){
		.name = "native_counters", .kind = PCPU_METRIC_COUNTER,
		.label_names = (const char *[]){ "a", NULL },
		.native = &(struct pcpu_histogram_native){ .schema = 0 } }));
	cr_assert_eq(errno, EINVAL);
}

PCPU_TEST(native, the_text_formats_show_the_classic_buckets)
{
	static const int64_t classic[] = { 1000000, 10000000 };
	struct pcpu_histogram *h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "native_text_seconds", .help = "Latency.", .bounds = classic,
		.nr_bounds = 2, .scale = 1000000000,
		.native = &(struct pcpu_histogram_native){ .schema = 3 } });
	char *text;

	cr_assert_not_null(h, "%s", strerror(errno));
	pcpu_histogram_observe(h, 500000);   /* 0.5 ms */
	pcpu_histogram_observe(h, 5000000);  /* 5 ms */
	pcpu_histogram_observe(h, 50000000); /* 50 ms */
	pcpu_histogram_observe(h, 0);
	for (int f = PCPU_METRICS_PROMETHEUS; f <= PCPU_METRICS_OPENMETRICS; f++) {
		text = metrics_text(f);
		cr_assert(metrics_has_line(text, "native_text_seconds_bucket{le=\"0.001\"} 2"), "%s",
			  text);
		cr_assert(metrics_has_line(text, "native_text_seconds_bucket{le=\"0.01\"} 3"));
		cr_assert(metrics_has_line(text, "native_text_seconds_bucket{le=\"+Inf\"} 4"));
		cr_assert(metrics_has_line(text, "native_text_seconds_sum 0.0555"));
		cr_assert(metrics_has_line(text, "native_text_seconds_count 4"));
		free(text);
	}
	pcpu_histogram_destroy(h);
}

PCPU_TEST(native, family_children_are_native)
{
	struct pcpu_family *f = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "native_family_seconds", .help = "Latency.", .kind = PCPU_METRIC_HISTOGRAM,
		.label_names = (const char *[]){ "route", NULL }, .scale = 1000000000,
		.native = &(struct pcpu_histogram_native){ .schema = 3 } });
	struct seen seen = { .name = "native_family_seconds" };
	struct pcpu_histogram *a, *b;

	cr_assert_not_null(f, "%s", strerror(errno));
	a = pcpu_family_get_histogram(f, (const char *[]){ "/a", NULL });
	b = pcpu_family_get_histogram(f, (const char *[]){ "/b", NULL });
	cr_assert(a && b && a != b);
	cr_assert_eq(pcpu_histogram_bounds(a), pcpu_histogram_bounds(b), "bounds are shared");
	pcpu_histogram_observe(a, 1000000000); /* 1 s: key 0 */
	pcpu_histogram_observe(b, 2000000000); /* 2 s: key 8 */
	pcpu_histogram_observe(b, 2000000000);
	cr_assert_eq(pcpu_metrics_foreach(collect, &seen), 0);
	cr_assert_eq(seen.samples, 2);
	cr_assert(seen.flags & PCPU_METRIC_SAMPLE_F_NATIVE);
	cr_assert_eq(seen.got.keys[MAX_KEYS / 2], 1);
	cr_assert_eq(seen.got.keys[MAX_KEYS / 2 + 8], 2);
	cr_assert_eq(seen.got.count, 3);
	pcpu_family_destroy(f);
}

/* A native sample of schema 0: zero bucket, (0, 1], (1, 2], (2, 4]; classic bound 2. */
static struct pcpu_metric_sample native_sample(void)
{
	static const int64_t bounds[] = { 0, 1, 2, 4 }, classic[] = { 2 };
	static const uint64_t buckets[] = { 1, 2, 3, 4, 5 };

	return (struct pcpu_metric_sample){ .name = "native_collected", .help = "", .unit = "",
					    .kind = PCPU_METRIC_HISTOGRAM, .nr_bounds = 4,
					    .bounds = bounds, .buckets = buckets, .count = 15,
					    .sum = 40, .flags = PCPU_METRIC_SAMPLE_F_NATIVE,
					    .nr_classic = 1, .classic = classic };
}

static int bad_emits[8], good_emit = 1;

static int collector(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx, void *arg)
{
	static const int64_t negative_zero[] = { -1, 1 }, descending[] = { 2, 1 };
	struct pcpu_metric_sample bad[8]; /* then bad[0] a good one */
	int n = 0;

	(void)arg;
	for (int i = 0; i < 8; i++)
		bad[i] = native_sample();
	bad[n++].schema = PCPU_HISTOGRAM_MAX_SCHEMA + 1;
	bad[n++].schema = PCPU_HISTOGRAM_MIN_SCHEMA - 1;
	bad[n++].nr_bounds = 0;
	bad[n].bounds = negative_zero;
	bad[n++].nr_bounds = 2;
	bad[n].classic = descending;
	bad[n++].nr_classic = 2;
	bad[n++].classic = NULL;
	bad[n++].kind = PCPU_METRIC_GAUGE;
	bad[n++].bounds = NULL;
	for (int i = 0; i < n; i++)
		bad_emits[i] = emit(&bad[i], ctx);
	bad[0] = native_sample();
	good_emit = emit(&bad[0], ctx);
	return 0;
}

/*
 * A collector may emit a native sample that the exposition can read (as a
 * registry merged by pcpu_metrics_registry_collector() does); a malformed
 * one is refused and counted, never written.
 */
PCPU_TEST(native, collectors_emit_native_samples_that_are_well_formed)
{
	uint64_t refused = pcpu_metrics_collector_refused();
	char *text;

	cr_assert_eq(pcpu_metrics_collector_add(collector, NULL), 0);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(bad_emits[i], -EINVAL, "malformed sample %d", i);
	cr_assert_eq(good_emit, 0);
	cr_assert_eq(pcpu_metrics_collector_refused() - refused, 8);
	/* the classic view: buckets up to 2 hold 1 + 2 + 3 */
	cr_assert_not_null(strstr(text, "native_collected_bucket{le=\"2\"} 6\n"), "%s", text);
	cr_assert_not_null(strstr(text, "native_collected_bucket{le=\"+Inf\"} 15\n"), "%s", text);
	cr_assert_not_null(strstr(text, "native_collected_count 15\n"), "%s", text);
	free(text);
	pcpu_metrics_collector_remove(collector, NULL);
}

/* The first bucket whose bound is >= @v: what every observe must pick. */
static uint32_t lower_bound(const int64_t *b, uint32_t n, int64_t v)
{
	uint32_t i = 0;

	while (i < n && b[i] < v)
		i++;
	return i;
}

/* Every value near every bound, and spread ones, in the bucket the oracle picks. */
static void check_fine_buckets(struct pcpu_histogram *h)
{
	uint32_t nb = pcpu_histogram_nr_buckets(h), n = nb - 1;
	const int64_t *b = pcpu_histogram_bounds(h);
	uint64_t *want = calloc(nb, sizeof(*want)), *got = calloc(nb, sizeof(*got));
	int64_t values[7];

	cr_assert(want && got);
	srand(5);
	for (uint32_t i = 0; i < n + 200; i++) {
		int64_t v = i < n ? b[i] : (int64_t)ldexp(1.0 + rand() / (double)RAND_MAX,
							  rand() % 62) * (rand() % 4 ? 1 : -1);
		int nv = 0;

		values[nv++] = v;
		if (v > INT64_MIN)
			values[nv++] = v - 1;
		if (v < INT64_MAX)
			values[nv++] = v + 1;
		for (int k = 0; k < nv; k++) {
			pcpu_histogram_observe(h, values[k]);
			want[lower_bound(b, n, values[k])]++;
		}
	}
	for (int64_t v = -3; v <= 300; v++) { /* the small values' cells */
		pcpu_histogram_observe(h, v);
		want[lower_bound(b, n, v)]++;
	}
	cr_assert_eq(pcpu_histogram_snapshot(h, got, NULL), 0);
	for (uint32_t i = 0; i < nb; i++)
		cr_assert_eq(got[i], want[i], "bucket %u of %u (bound %lld): %llu, want %llu", i, nb,
			     i < n ? (long long)b[i] : 0LL, (unsigned long long)got[i],
			     (unsigned long long)want[i]);
	free(want);
	free(got);
}

PCPU_TEST(native, the_search_index_picks_the_bucket_a_search_would)
{
	int64_t many[300];
	struct pcpu_histogram *h;
	int64_t v = -1000;

	/* a classic histogram with an index: bounds of every size, negative too */
	srand(3);
	for (int i = 0; i < 300; i++) {
		v += 1 + (int64_t)ldexp(rand() / (double)RAND_MAX, i / 5);
		many[i] = v;
	}
	h = pcpu_histogram_create(&(struct pcpu_histogram_desc){ .name = "index_classic",
								  .bounds = many, .nr_bounds = 300 });
	cr_assert_not_null(h, "%s", strerror(errno));
	cr_assert_not_null(h->index, "%u bounds have an index", h->nr_bounds);
	check_fine_buckets(h);
	pcpu_histogram_destroy(h);
	/* native ones, at each index width, with classic bounds among them */
	for (int32_t s = PCPU_HISTOGRAM_MIN_SCHEMA; s <= PCPU_HISTOGRAM_MAX_SCHEMA; s++) {
		/* the finer schemas over a narrower range, to fit */
		bool fine = s > 3;

		h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
			.name = "index_native", .bounds = many + 200, .nr_bounds = fine ? 0 : 8,
			.scale = 1000,
			.native = &(struct pcpu_histogram_native){
				.schema = s, .zero_threshold = fine ? 1000 : 10,
				.max = fine ? 3000 : 0 } });
		cr_assert_not_null(h, "schema %d: %s", s, strerror(errno));
		cr_assert(h->nr_bounds < PCPU_HISTOGRAM_INDEXED_BOUNDS || h->index);
		check_fine_buckets(h);
		pcpu_histogram_destroy(h);
	}
	/* below the indexed size: no index, the binary search */
	h = pcpu_histogram_create(&(struct pcpu_histogram_desc){ .name = "index_none",
								  .bounds = many, .nr_bounds = 15 });
	cr_assert_not_null(h);
	cr_assert_null(h->index);
	check_fine_buckets(h);
	pcpu_histogram_destroy(h);
}
