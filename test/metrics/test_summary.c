/* SPDX-License-Identifier: MIT */
/*
 * Summaries (<percpu/summary.h>): every quantile within alpha of the
 * observation of its rank in a sorted shadow copy of what concurrent
 * observers recorded, count and sum exact; age buckets that drop old
 * observations (a test clock); the three expositions read back by real
 * parsers (prometheus_client) and a protobuf decoder; bad input refused.
 * Label families of summaries (pcpu_family_create_summary()): the same
 * guarantee per child under concurrent observers and scrapes, each child's
 * series in the three formats, currying, removal and overflow, bad input.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include <percpu/family.h>
#include <percpu/summary.h>

#include "check_body.h"
#include "helpers.h"
#include "kinds/summary_internal.h"
#include "pcpu_test.h"

static const double objectives[] = { 0.5, 0.9, 0.99 };
#define NQ (sizeof(objectives) / sizeof(objectives[0]))

/* The test clock: nanoseconds a test sets. */
static uint64_t fake_ns;

static uint64_t fake_clock(void)
{
	return __atomic_load_n(&fake_ns, __ATOMIC_RELAXED);
}

static void set_clock(uint64_t ns)
{
	__atomic_store_n(&fake_ns, ns, __ATOMIC_RELAXED);
}

static struct pcpu_summary *make(const struct pcpu_summary_desc *d)
{
	struct pcpu_summary *s = pcpu_summary_create(d);

	cr_assert_not_null(s, "create %s: %s", d->name, strerror(errno));
	return s;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* xorshift64*: a reproducible stream per thread */
static uint64_t next_random(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * UINT64_C(2685821657736338717);
}

/* A value spread evenly in log scale over [1, 2^@bits), and a few zeros. */
static int64_t log_uniform(uint64_t *state, unsigned int bits)
{
	uint64_t r = next_random(state);
	unsigned int msb = (unsigned int)(r % (bits + 1));

	if (msb == bits)
		return (r >> 32) % 16 == 0 ? 0 : 1; /* some zeros, some ones */
	return (int64_t)((UINT64_C(1) << msb) | ((r >> 8) & ((UINT64_C(1) << msb) - 1)));
}

/*
 * Asserts that every quantile q of @qs of @s is within its alpha of the
 * observation of rank max(1, ceil(q n)) of @sorted (n ascending values).
 */
static void assert_quantiles(struct pcpu_summary *s, const int64_t *sorted, size_t n,
			     int64_t scale)
{
	static const double qs[] = { 0,    0.001, 0.01, 0.1,  0.25,  0.5,
				     0.75, 0.9,   0.99, 0.999, 0.9999, 1 };
	double alpha = pcpu_summary_alpha(s);

	cr_assert(alpha > 0 && alpha < 1);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		double rank = ceil(qs[i] * (double)n), v, x;
		size_t r = rank < 1 ? 1 : (size_t)rank;

		cr_assert_eq(pcpu_summary_quantile(s, qs[i], &v), 0);
		x = (double)sorted[r - 1] / (double)scale;
		/* the bound, with room for the double arithmetic only */
		cr_expect(fabs(v - x) <= alpha * x * (1 + 1e-12),
			  "q %g: %.17g is not within %g of x_%zu = %.17g of %zu", qs[i], v, alpha,
			  r, x, n);
	}
}

PCPU_TEST(summary, bad_descriptors_are_einval)
{
	static const double zero[] = { 0 }, one[] = { 1 }, unsorted[] = { 0.9, 0.5 },
			    twice[] = { 0.5, 0.5 }, nan[] = { NAN }, many[17] = { 0 };
	static const char *const quantile[] = { "quantile", "x", NULL };
	const struct pcpu_summary_desc bad[] = {
		{ .name = "s", .quantiles = zero, .nr_quantiles = 1 },
		{ .name = "s", .quantiles = one, .nr_quantiles = 1 },
		{ .name = "s", .quantiles = unsorted, .nr_quantiles = 2 },
		{ .name = "s", .quantiles = twice, .nr_quantiles = 2 },
		{ .name = "s", .quantiles = nan, .nr_quantiles = 1 },
		{ .name = "s", .quantiles = many, .nr_quantiles = 17 },
		{ .name = "s", .quantiles = NULL, .nr_quantiles = 1 },
		{ .name = "s", .alpha = 0.001 },
		{ .name = "s", .alpha = 1 },
		{ .name = "s", .alpha = -0.1 },
		{ .name = "s", .alpha = NAN },
		{ .name = "s", .min = -1 },
		{ .name = "s", .min = 10, .max = 10 },
		{ .name = "s", .scale = -1 },
		{ .name = "s", .max_age_ns = 999999 },
		{ .name = "s", .max_age_ns = -2 },
		{ .name = "s", .age_buckets = PCPU_SUMMARY_MAX_AGE_BUCKETS + 1 },
		{ .name = "s", .labels = quantile },
		{ .name = "s_sum" },
		{ .name = "s_count" },
		{ .name = "1s" },
		{ .name = NULL },
	};

	errno = 0;
	cr_expect_null(pcpu_summary_create(NULL));
	cr_expect_eq(errno, EINVAL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_expect_null(pcpu_summary_create(&bad[i]), "descriptor %zu accepted", i);
		cr_expect_eq(errno, EINVAL, "descriptor %zu: errno %d", i, errno);
	}
	/* 1 % over every int64: more buckets than a histogram holds */
	errno = 0;
	cr_expect_null(pcpu_summary_create(&(struct pcpu_summary_desc){ .name = "s",
									 .alpha = 0.01 }));
	cr_expect_eq(errno, ERANGE);
}

PCPU_TEST(summary, a_name_registered_twice_is_eexist)
{
	struct pcpu_summary *s = make(&(struct pcpu_summary_desc){ .name = "twice_seconds" });

	errno = 0;
	cr_expect_null(pcpu_summary_create(&(struct pcpu_summary_desc){ .name = "twice_seconds" }));
	cr_expect_eq(errno, EEXIST);
	/* a label family of summaries is pcpu_family_create_summary()'s */
	errno = 0;
	cr_expect_null(pcpu_family_create(&(struct pcpu_family_desc){
		.name = "s", .kind = PCPU_METRIC_SUMMARY,
		.label_names = (const char *const[]){ "k", NULL } }));
	cr_expect_eq(errno, EINVAL);
	pcpu_summary_destroy(s);
}

PCPU_TEST(summary, bad_observations_are_einval_and_not_counted)
{
	struct pcpu_summary *s = make(&(struct pcpu_summary_desc){
		.name = "bad_obs_seconds", .unit = "seconds", .scale = 1000000000 });
	uint64_t count = 1;
	int64_t sum = 1;
	double v;

	cr_expect_eq(pcpu_summary_observe(NULL, 1), -EINVAL);
	cr_expect_eq(pcpu_summary_observe(s, -1), -EINVAL);
	cr_expect_eq(pcpu_summary_observe(s, INT64_MIN), -EINVAL);
	cr_expect_eq(pcpu_summary_observe_double(NULL, 1), -EINVAL);
	cr_expect_eq(pcpu_summary_observe_double(s, NAN), -EINVAL);
	cr_expect_eq(pcpu_summary_observe_double(s, -0.5), -EINVAL);
	cr_expect_eq(pcpu_summary_observe_double(s, INFINITY), -EINVAL);
	cr_expect_eq(pcpu_summary_observe_double(s, -INFINITY), -EINVAL);
	cr_expect_eq(pcpu_summary_observe_double(s, 1e10), -EINVAL); /* 1e19 ns > INT64_MAX */
	cr_expect_eq(pcpu_summary_count(s, &count, &sum), 0);
	cr_expect_eq(count, 0);
	cr_expect_eq(sum, 0);
	cr_expect_eq(pcpu_summary_quantile(s, 0.5, &v), 0);
	cr_expect(isnan(v), "an empty window's quantile is %g, not NaN", v);
	cr_expect_eq(pcpu_summary_quantile(s, -0.1, &v), -EINVAL);
	cr_expect_eq(pcpu_summary_quantile(s, 1.1, &v), -EINVAL);
	cr_expect_eq(pcpu_summary_quantile(s, NAN, &v), -EINVAL);
	cr_expect_eq(pcpu_summary_quantile(s, 0.5, NULL), -EINVAL);
	cr_expect_eq(pcpu_summary_quantile(NULL, 0.5, &v), -EINVAL);
	cr_expect_eq(pcpu_summary_count(NULL, &count, &sum), -EINVAL);
	/* seconds in, nanoseconds counted, rounded */
	cr_expect_eq(pcpu_summary_observe_double(s, 0.25), 0);
	cr_expect_eq(pcpu_summary_observe_double(s, 1.5e-9), 0);
	cr_expect_eq(pcpu_summary_count(s, &count, &sum), 0);
	cr_expect_eq(count, 2);
	cr_expect_eq(sum, 250000000 + 2);
	pcpu_summary_destroy(s);
}

PCPU_TEST(summary, alpha_is_at_most_the_one_asked_and_finest_that_fits_by_default)
{
	static const double asked[] = { 0.9, 0.5, 0.1, 0.05, 0.03, 0.022, 0.011 };
	struct pcpu_summary *s;

	for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
		/* a range that fits at every one of these: 1 to 4096 (128 buckets an octave at 0.011) */
		s = make(&(struct pcpu_summary_desc){ .name = "alpha", .alpha = asked[i],
						      .max = 4096 });
		cr_expect(pcpu_summary_alpha(s) <= asked[i] && pcpu_summary_alpha(s) > asked[i] / 2.1,
			  "asked %g, got %g", asked[i], pcpu_summary_alpha(s));
		pcpu_summary_destroy(s);
	}
	/* every int64 fits at 4.3 % (schema 3), not finer */
	s = make(&(struct pcpu_summary_desc){ .name = "alpha" });
	cr_expect(fabs(pcpu_summary_alpha(s) - 0.0433) < 0.0001, "%g", pcpu_summary_alpha(s));
	pcpu_summary_destroy(s);
	cr_expect_eq(pcpu_summary_alpha(NULL), 0);
}

struct observer {
	struct pcpu_summary *s;
	int64_t *values;
	size_t n;
	unsigned int bits;
	uint64_t seed;
};

static void *observe_many(void *arg)
{
	struct observer *o = arg;
	uint64_t state = o->seed;

	for (size_t i = 0; i < o->n; i++) {
		o->values[i] = log_uniform(&state, o->bits);
		cr_assert_eq(pcpu_summary_observe(o->s, o->values[i]), 0);
	}
	return NULL;
}

/*
 * @threads observers of @per values each on @d's summary, a reader asking
 * for quantiles meanwhile; then every quantile against the sorted shadow,
 * count and sum exact.
 */
static void concurrent_case(const struct pcpu_summary_desc *d, unsigned int threads, size_t per,
			    unsigned int bits)
{
	struct pcpu_summary *s = make(d);
	struct observer obs[8];
	pthread_t tid[8];
	size_t n = threads * per;
	int64_t *all = malloc(n * sizeof(*all)), got_sum;
	uint64_t count, sum = 0; /* modulo 2^64, as the library sums (62-bit values overflow) */
	double v;

	cr_assert_not_null(all);
	for (unsigned int t = 0; t < threads; t++) {
		obs[t] = (struct observer){ s, all + t * per, per, bits, 0x9e3779b97f4a7c15u * (t + 1) };
		cr_assert_eq(pthread_create(&tid[t], NULL, observe_many, &obs[t]), 0);
	}
	/* reads while observers run: the count only grows */
	for (uint64_t last = 0, i = 0; i < 200; i++) {
		cr_assert_eq(pcpu_summary_quantile(s, 0.5, &v), 0);
		cr_assert_eq(pcpu_summary_count(s, &count, NULL), 0);
		cr_assert(count >= last && count <= n);
		last = count;
	}
	for (unsigned int t = 0; t < threads; t++)
		pthread_join(tid[t], NULL);
	for (size_t i = 0; i < n; i++)
		sum += (uint64_t)all[i];
	qsort(all, n, sizeof(*all), cmp_i64);
	assert_quantiles(s, all, n, d->scale > 1 ? d->scale : 1);
	cr_assert_eq(pcpu_summary_count(s, &count, &got_sum), 0);
	cr_expect_eq(count, n);
	cr_expect_eq((uint64_t)got_sum, sum);
	free(all);
	pcpu_summary_destroy(s);
}

PCPU_TEST(summary, quantiles_are_within_alpha_of_the_exact_rank_under_concurrent_observers)
{
	/* no window: every observation */
	concurrent_case(&(struct pcpu_summary_desc){ .name = "forever",
						     .max_age_ns = PCPU_SUMMARY_FOREVER },
			2, 200000, 40);
	/* a window that does not move (test clock); a scale */
	set_clock(1000);
	pcpu_summary_debug_clock(fake_clock);
	concurrent_case(&(struct pcpu_summary_desc){ .name = "windowed_seconds",
						     .unit = "seconds", .scale = 1000000000,
						     .alpha = 0.022, .max = INT64_C(1) << 34 },
			4, 50000, 34);
	/* 1.1 % (schema 5), in a range that fits */
	concurrent_case(&(struct pcpu_summary_desc){ .name = "fine", .alpha = 0.011,
						     .max = 1 << 19 },
			2, 100000, 19);
	/* coarse, with a min: in (min, max] within alpha */
	concurrent_case(&(struct pcpu_summary_desc){ .name = "coarse", .alpha = 0.25 }, 2, 100000,
			62);
	pcpu_summary_debug_clock(NULL);
}

PCPU_TEST(summary, values_at_or_below_min_read_as_min_and_above_max_as_max)
{
	struct pcpu_summary *s = make(&(struct pcpu_summary_desc){
		.name = "clamped", .min = 100, .max = 10000, .alpha = 0.05,
		.max_age_ns = PCPU_SUMMARY_FOREVER });
	double v;

	for (int i = 0; i < 10; i++)
		cr_assert_eq(pcpu_summary_observe(s, i * 10), 0); /* 0 .. 90: <= min */
	cr_assert_eq(pcpu_summary_quantile(s, 0.5, &v), 0);
	cr_expect_eq(v, 100);
	for (int i = 0; i < 30; i++)
		cr_assert_eq(pcpu_summary_observe(s, INT64_C(1) << 40), 0);
	cr_assert_eq(pcpu_summary_quantile(s, 0.99, &v), 0);
	cr_expect_eq(v, 10000);
	pcpu_summary_destroy(s);
}

PCPU_TEST(summary, age_buckets_drop_observations_older_than_max_age)
{
	const uint64_t sec = 1000000000;
	struct pcpu_summary *s;
	uint64_t count;
	double v;

	set_clock(5 * sec);
	pcpu_summary_debug_clock(fake_clock);
	/* 10 s in 5 age buckets: periods of 2 s */
	s = make(&(struct pcpu_summary_desc){ .name = "aged", .alpha = 0.011, .max = 1 << 19,
					      .max_age_ns = 10 * sec, .age_buckets = 5 });
	for (int i = 0; i < 100; i++)
		cr_assert_eq(pcpu_summary_observe(s, 1000), 0);
	cr_assert_eq(pcpu_summary_quantile(s, 0.5, &v), 0);
	cr_expect(fabs(v - 1000) <= 11, "%g", v);
	/* 9.9 s later: period 4, the window still holds period 0 */
	set_clock(5 * sec + 9900000000u);
	cr_assert_eq(pcpu_summary_observe(s, 10), 0);
	cr_assert_eq(pcpu_summary_quantile(s, 0.5, &v), 0);
	cr_expect(fabs(v - 1000) <= 11, "%g", v);
	/* 10 s: period 5, period 0 has left the window */
	set_clock(15 * sec);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(pcpu_summary_observe(s, 50), 0);
	cr_assert_eq(pcpu_summary_quantile(s, 0, &v), 0);
	cr_expect_eq(v, 10);
	cr_assert_eq(pcpu_summary_quantile(s, 1, &v), 0);
	cr_expect(fabs(v - 50) <= 0.55, "the 1000s of period 0 are still there: %g", v);
	/* period 6 reuses period 0's age bucket: its old 1000s stay out */
	set_clock(17 * sec);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(pcpu_summary_observe(s, 2000), 0);
	cr_assert_eq(pcpu_summary_quantile(s, 1, &v), 0);
	cr_expect(fabs(v - 2000) <= 22, "%g", v);
	/* periods 2 to 6: 10 (period 4), ten 50s, five 2000s */
	cr_assert_eq(pcpu_summary_quantile(s, 0, &v), 0);
	cr_expect_eq(v, 10);
	cr_assert_eq(pcpu_summary_quantile(s, 11.0 / 16, &v), 0);
	cr_expect(fabs(v - 50) <= 0.55, "%g", v);
	cr_assert_eq(pcpu_summary_quantile(s, 12.0 / 16, &v), 0);
	cr_expect(fabs(v - 2000) <= 22, "%g", v);
	/* _count and _sum keep every observation */
	cr_assert_eq(pcpu_summary_count(s, &count, NULL), 0);
	cr_expect_eq(count, 100 + 1 + 10 + 5);
	/* 30 s later: nothing in the window */
	set_clock(47 * sec);
	cr_assert_eq(pcpu_summary_quantile(s, 0.5, &v), 0);
	cr_expect(isnan(v), "%g", v);
	pcpu_summary_destroy(s);
	pcpu_summary_debug_clock(NULL);
}

/* The quantile value of @q as the exposition writes it ("%.17g" reads back the same). */
static double exposed_quantile(const char *text, const char *name, const char *q)
{
	char series[128];
	const char *p;

	snprintf(series, sizeof(series), "\n%s{quantile=\"%s\"} ", name, q);
	p = strstr(text, series);
	cr_assert_not_null(p, "no %s in\n%s", series + 1, text);
	return strtod(p + strlen(series), NULL);
}

PCPU_TEST(summary, text_and_openmetrics_expose_quantiles_sum_and_count)
{
	struct pcpu_summary *s = make(&(struct pcpu_summary_desc){
		.name = "rpc_seconds", .help = "RPC latency.", .unit = "seconds",
		.quantiles = objectives, .nr_quantiles = NQ, .scale = 1000000000,
		.max_age_ns = PCPU_SUMMARY_FOREVER });
	struct pcpu_summary *empty = make(&(struct pcpu_summary_desc){
		.name = "idle", .quantiles = objectives, .nr_quantiles = NQ,
		.labels = PCPU_LABELS("pool", "a") });
	char *prom, *om;
	double want;
	long long n;

	for (int64_t i = 1; i <= 1000; i++)
		cr_assert_eq(pcpu_summary_observe(s, i * 1000000), 0); /* 1 ms .. 1 s */
	prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(prom);
	cr_assert_not_null(om);
	cr_expect(metrics_has_line(prom, "# TYPE rpc_seconds summary"), "%s", prom);
	cr_expect(metrics_has_line(om, "# TYPE rpc_seconds summary"), "%s", om);
	cr_expect(metrics_has_line(om, "# UNIT rpc_seconds seconds"), "%s", om);
	cr_expect(metrics_has_line(prom, "rpc_seconds_sum 500.5"), "%s", prom);
	cr_expect(metrics_has_line(om, "rpc_seconds_sum 500.5"), "%s", om);
	cr_expect_eq(metrics_value(prom, "rpc_seconds_count", &n), 0);
	cr_expect_eq(n, 1000);
	for (size_t i = 0; i < NQ; i++) {
		char q[16];

		snprintf(q, sizeof(q), "%g", objectives[i]);
		cr_assert_eq(pcpu_summary_quantile(s, objectives[i], &want), 0);
		cr_expect_eq(exposed_quantile(prom, "rpc_seconds", q), want);
		cr_expect_eq(exposed_quantile(om, "rpc_seconds", q), want);
		/* the rank's observation is (ceil(q n)) ms */
		cr_expect(fabs(want - ceil(objectives[i] * 1000) / 1000) <=
				  pcpu_summary_alpha(s) * ceil(objectives[i] * 1000) / 1000,
			  "q %g: %g", objectives[i], want);
	}
	/* an empty window: NaN, and the labels before quantile */
	cr_expect(metrics_has_line(prom, "idle{pool=\"a\",quantile=\"0.5\"} NaN"), "%s", prom);
	cr_expect(metrics_has_line(om, "idle_count{pool=\"a\"} 0"), "%s", om);
	assert_parsers_accept(prom, om);
	free(prom);
	free(om);
	pcpu_summary_destroy(s);
	pcpu_summary_destroy(empty);
}

PCPU_TEST(summary, a_registrys_labels_come_before_quantile_and_a_merge_keeps_it)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(PCPU_LABELS("job", "x"));
	struct pcpu_summary *s;
	char *prom, *om;
	double want;

	cr_assert_not_null(r);
	s = make(&(struct pcpu_summary_desc){ .name = "reg_bytes", .unit = "bytes",
					      .quantiles = objectives, .nr_quantiles = NQ,
					      .registry = r });
	for (int64_t v = 1; v <= 10; v++)
		cr_assert_eq(pcpu_summary_observe(s, v), 0);
	cr_assert_eq(pcpu_summary_quantile(s, 0.9, &want), 0);
	cr_expect_eq(want, 9); /* 1 to 10: each in a bucket of its own */
	prom = metrics_registry_text(r, PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(prom);
	cr_expect(metrics_has_line(prom, "reg_bytes{job=\"x\",quantile=\"0.9\"} 9"), "%s", prom);
	cr_expect(metrics_has_line(prom, "reg_bytes_count{job=\"x\"} 10"), "%s", prom);
	free(prom);
	/* merged into the process's registry: the collector passes it on */
	cr_assert_eq(pcpu_metrics_collector_add(pcpu_metrics_registry_collector, r), 0);
	prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(prom);
	cr_assert_not_null(om);
	cr_expect(metrics_has_line(prom, "reg_bytes{job=\"x\",quantile=\"0.5\"} 5"), "%s", prom);
	cr_expect(metrics_has_line(om, "reg_bytes_sum{job=\"x\"} 55"), "%s", om);
	assert_parsers_accept(prom, om);
	free(prom);
	free(om);
	cr_assert_eq(pcpu_metrics_collector_remove(pcpu_metrics_registry_collector, r), 0);
	pcpu_summary_destroy(s);
	cr_assert_eq(pcpu_metrics_registry_destroy(r), 0);
}

/* A protobuf reader, enough for MetricFamily > Metric > Summary. */
struct pb {
	const uint8_t *p, *end;
};

static uint64_t pb_varint(struct pb *b)
{
	uint64_t v = 0;

	for (unsigned int shift = 0; b->p < b->end; shift += 7) {
		uint8_t c = *b->p++;

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	cr_assert_fail("a varint past the end");
	return 0;
}

/* The next field of @b: its number, wire type, and value or sub-message. */
static unsigned int pb_field(struct pb *b, unsigned int *wire, uint64_t *v, struct pb *sub)
{
	uint64_t tag = pb_varint(b), n;

	*wire = tag & 7;
	switch (*wire) {
	case 0:
		*v = pb_varint(b);
		break;
	case 1:
		/* fixed64, little-endian on the wire whatever the host */
		cr_assert(b->end - b->p >= 8);
		*v = 0;
		for (int i = 7; i >= 0; i--)
			*v = *v << 8 | b->p[i];
		b->p += 8;
		break;
	case 2:
		n = pb_varint(b);
		cr_assert((uint64_t)(b->end - b->p) >= n);
		*sub = (struct pb){ b->p, b->p + n };
		b->p += n;
		break;
	default:
		cr_assert_fail("wire type %u", *wire);
	}
	return (unsigned int)(tag >> 3);
}

static double as_double(uint64_t bits)
{
	double d;

	memcpy(&d, &bits, sizeof(d));
	return d;
}

PCPU_TEST(summary, protobuf_carries_a_summary_message)
{
	struct pcpu_summary *s = make(&(struct pcpu_summary_desc){
		.name = "pb_seconds", .help = "Latency.", .unit = "seconds",
		.quantiles = objectives, .nr_quantiles = NQ, .scale = 1000,
		.labels = PCPU_LABELS("op", "get"), .max_age_ns = PCPU_SUMMARY_FOREVER });
	char *body = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&body, &len);
	bool found = false;

	for (int64_t i = 1; i <= 100; i++)
		cr_assert_eq(pcpu_summary_observe(s, i), 0);
	cr_assert_not_null(out);
	cr_assert_eq(pcpu_metrics_write(out, PCPU_METRICS_PROTOBUF), 0);
	fclose(out);
	for (struct pb all = { (uint8_t *)body, (uint8_t *)body + len }; all.p < all.end;) {
		struct pb fam = { all.p, all.p }, sub, m, q;
		uint64_t n = pb_varint(&all), v, type = 99, count = 0;
		unsigned int wire, nq = 0;
		char name[64] = "";
		double sum = -1;

		fam.end = fam.p = all.p;
		fam.end += n;
		all.p += n;
		while (fam.p < fam.end) {
			unsigned int f = pb_field(&fam, &wire, &v, &sub);

			if (f == 1)
				snprintf(name, sizeof(name), "%.*s", (int)(sub.end - sub.p), sub.p);
			else if (f == 3)
				type = v;
			else if (f == 4 && strcmp(name, "pb_seconds") == 0)
				for (m = sub; m.p < m.end;) {
					struct pb summary;

					if (pb_field(&m, &wire, &v, &summary) != 4)
						continue; /* the label */
					while (summary.p < summary.end) {
						f = pb_field(&summary, &wire, &v, &q);
						if (f == 1)
							count = v;
						else if (f == 2)
							sum = as_double(v);
						else if (f == 3) {
							double qv[2] = { -1, -1 }, want;

							while (q.p < q.end) {
								unsigned int g =
									pb_field(&q, &wire, &v, &sub);

								qv[g - 1] = as_double(v);
							}
							cr_assert(nq < NQ);
							cr_expect_eq(qv[0], objectives[nq]);
							cr_assert_eq(pcpu_summary_quantile(s, qv[0],
											   &want), 0);
							cr_expect_eq(qv[1], want);
							nq++;
						}
					}
				}
		}
		if (strcmp(name, "pb_seconds") != 0)
			continue;
		found = true;
		cr_expect_eq(type, 2, "MetricType SUMMARY");
		cr_expect_eq(count, 100);
		cr_expect_eq(sum, (double)5.05); /* a double, not i386's long double */
		cr_expect_eq(nq, NQ);
	}
	cr_expect(found, "no pb_seconds family");
	free(body);
	pcpu_summary_destroy(s);
}

static int summary_collector(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx,
			     void *arg)
{
	static const double qs[] = { 0.5, 0.99 }, vals[] = { 1.5, 7 }, bad_qs[] = { 0.99, 0.5 };
	struct pcpu_metric_sample smp = { .name = "collected", .help = "", .unit = "",
					  .kind = PCPU_METRIC_SUMMARY, .count = 3, .sum = 9,
					  .nr_quantiles = 2, .quantiles = qs,
					  .quantile_values = vals };
	int *refused = arg;

	if (emit(&smp, ctx))
		return -1;
	smp.name = "collected_bad";
	smp.quantiles = bad_qs;
	*refused += emit(&smp, ctx) == -EINVAL;
	smp.quantiles = NULL;
	*refused += emit(&smp, ctx) == -EINVAL;
	return 0;
}

PCPU_TEST(summary, a_collectors_summary_is_exposed_and_a_malformed_one_refused)
{
	int refused = 0;
	char *prom;

	cr_assert_eq(pcpu_metrics_collector_add(summary_collector, &refused), 0);
	prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(prom);
	cr_expect(metrics_has_line(prom, "collected{quantile=\"0.99\"} 7"), "%s", prom);
	cr_expect(metrics_has_line(prom, "collected_sum 9"), "%s", prom);
	cr_expect_eq(refused, 2);
	cr_expect_null(strstr(prom, "collected_bad"));
	free(prom);
	cr_assert_eq(pcpu_metrics_collector_remove(summary_collector, &refused), 0);
}

/* Label families of summaries (pcpu_family_create_summary(), 0.5). */

static const char *const route_names[] = { "route", NULL };

static struct pcpu_family *make_family(const char *name, const char *const *label_names,
				       int64_t scale, const struct pcpu_summary_desc *sd)
{
	struct pcpu_family *f = pcpu_family_create_summary(
		&(struct pcpu_family_desc){ .name = name, .kind = PCPU_METRIC_SUMMARY,
					    .label_names = label_names, .scale = scale },
		sd);

	cr_assert_not_null(f, "create family %s: %s", name, strerror(errno));
	return f;
}

struct child_observer {
	struct pcpu_family *f;
	const char *route;
	int64_t *values;
	size_t n;
	unsigned int bits;
	uint64_t seed;
};

/* Observes into the child of its route, looking it up again every 64 observations. */
static void *observe_child(void *arg)
{
	struct child_observer *o = arg;
	const char *tuple[] = { o->route, NULL };
	struct pcpu_summary *s = NULL;
	uint64_t state = o->seed;

	for (size_t i = 0; i < o->n; i++) {
		if (i % 64 == 0) {
			s = pcpu_family_get_summary(o->f, tuple);
			cr_assert_not_null(s);
		}
		o->values[i] = log_uniform(&state, o->bits);
		cr_assert_eq(pcpu_summary_observe(s, o->values[i]), 0);
	}
	return NULL;
}

/*
 * 4 observers, two per child ("a", "b"), of @per values each, while this
 * thread scrapes the family and reads quantiles; then each child's
 * quantiles against the sorted shadow of its observations, and its count
 * and sum exact, in the calls and in the exposition.
 */
static void family_concurrent_case(const char *name, const struct pcpu_summary_desc *sd,
				   int64_t scale, size_t per, unsigned int bits)
{
	static const char *const routes[] = { "a", "b" };
	struct pcpu_family *f = make_family(name, route_names, scale, sd);
	struct child_observer obs[4];
	pthread_t tid[4];
	int64_t *all = malloc(4 * per * sizeof(*all));
	char *prom;

	cr_assert_not_null(all);
	for (unsigned int t = 0; t < 4; t++) {
		/* threads 0, 2 observe "a" into all[0, 2 per), threads 1, 3 "b" after */
		obs[t] = (struct child_observer){ f, routes[t % 2],
						  all + (t % 2) * 2 * per + (t / 2) * per, per,
						  bits, 0x9e3779b97f4a7c15u * (t + 7) };
		cr_assert_eq(pthread_create(&tid[t], NULL, observe_child, &obs[t]), 0);
	}
	for (int i = 0; i < 20; i++) {
		prom = metrics_text(i % 2 ? PCPU_METRICS_OPENMETRICS : PCPU_METRICS_PROMETHEUS);
		cr_assert_not_null(prom);
		free(prom);
	}
	for (unsigned int t = 0; t < 4; t++)
		pthread_join(tid[t], NULL);
	prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(prom);
	for (unsigned int k = 0; k < 2; k++) {
		const char *tuple[] = { routes[k], NULL };
		struct pcpu_summary *s = pcpu_family_get_summary(f, tuple);
		int64_t *mine = all + k * 2 * per, got_sum;
		uint64_t count, sum = 0;
		char series[128];
		long long n;

		cr_assert_not_null(s);
		for (size_t i = 0; i < 2 * per; i++)
			sum += (uint64_t)mine[i];
		qsort(mine, 2 * per, sizeof(*mine), cmp_i64);
		assert_quantiles(s, mine, 2 * per, scale > 1 ? scale : 1);
		cr_assert_eq(pcpu_summary_count(s, &count, &got_sum), 0);
		cr_expect_eq(count, 2 * per);
		cr_expect_eq((uint64_t)got_sum, sum);
		snprintf(series, sizeof(series), "%s_count{route=\"%s\"}", name, routes[k]);
		cr_expect_eq(metrics_value(prom, series, &n), 0, "no %s in\n%s", series, prom);
		cr_expect_eq(n, (long long)(2 * per));
	}
	cr_expect_eq(pcpu_family_count(f), 2);
	free(prom);
	free(all);
	pcpu_family_destroy(f);
}

PCPU_TEST(summary, family_children_keep_the_guarantee_and_exact_counts_under_concurrency)
{
	family_concurrent_case("fam_forever", &(struct pcpu_summary_desc){
		.max_age_ns = PCPU_SUMMARY_FOREVER }, 0, 50000, 40);
	/* a window that does not move (test clock), a scale, a finer alpha */
	set_clock(1000);
	pcpu_summary_debug_clock(fake_clock);
	family_concurrent_case("fam_windowed_seconds", &(struct pcpu_summary_desc){
		.quantiles = objectives, .nr_quantiles = NQ, .alpha = 0.022,
		.max = INT64_C(1) << 34 }, 1000000000, 25000, 34);
	pcpu_summary_debug_clock(NULL);
}

PCPU_TEST(summary, family_children_age_out_on_their_own_windows)
{
	const uint64_t sec = 1000000000;
	struct pcpu_family *f;
	struct pcpu_summary *a, *b;
	double v;

	set_clock(5 * sec);
	pcpu_summary_debug_clock(fake_clock);
	f = make_family("fam_aged", route_names, 0, &(struct pcpu_summary_desc){
		.alpha = 0.011, .max = 1 << 19, .max_age_ns = 10 * sec, .age_buckets = 5 });
	a = pcpu_family_get_summary(f, (const char *const[]){ "a", NULL });
	cr_assert_not_null(a);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(pcpu_summary_observe(a, 1000), 0);
	/* read within max_age, as scrapes do (<percpu/summary.h>, "The window") */
	set_clock(7 * sec);
	cr_assert_eq(pcpu_summary_quantile(a, 0.5, &v), 0);
	cr_expect(fabs(v - 1000) <= 11, "%g", v);
	/* 12 s later: a's 1000s have left its window; b is new, its window starts now */
	set_clock(17 * sec);
	b = pcpu_family_get_summary(f, (const char *const[]){ "b", NULL });
	cr_assert_not_null(b);
	cr_assert_eq(pcpu_summary_observe(b, 50), 0);
	cr_assert_eq(pcpu_summary_quantile(a, 0.5, &v), 0);
	cr_expect(isnan(v), "a's old observations are still in its window: %g", v);
	cr_assert_eq(pcpu_summary_quantile(b, 0.5, &v), 0);
	cr_expect(fabs(v - 50) <= 0.55, "%g", v);
	pcpu_family_destroy(f);
	pcpu_summary_debug_clock(NULL);
}

/* What the protobuf body says of one child of a summary family. */
struct pb_child {
	char route[16];
	uint64_t count;
	double sum;
	unsigned int nq;
	double q[PCPU_SUMMARY_MAX_QUANTILES], v[PCPU_SUMMARY_MAX_QUANTILES];
};

/*
 * The Metric messages of family @name in protobuf @body: each child's
 * "route" label and Summary, into @out (room for @max); returns how many,
 * and the MetricType in *@type.
 */
static unsigned int pb_children(const char *body, size_t len, const char *name,
				struct pb_child *out, unsigned int max, uint64_t *type)
{
	unsigned int nr = 0;

	for (struct pb all = { (const uint8_t *)body, (const uint8_t *)body + len };
	     all.p < all.end;) {
		uint64_t n = pb_varint(&all), v;
		struct pb fam = { all.p, all.p + n }, sub;
		unsigned int wire;
		char fname[64] = "";

		all.p += n;
		while (fam.p < fam.end) {
			unsigned int fld = pb_field(&fam, &wire, &v, &sub);

			if (fld == 1)
				snprintf(fname, sizeof(fname), "%.*s", (int)(sub.end - sub.p), sub.p);
			else if (fld == 3 && strcmp(fname, name) == 0)
				*type = v;
			if (fld != 4 || strcmp(fname, name) != 0)
				continue;
			cr_assert(nr < max);
			memset(&out[nr], 0, sizeof(out[nr]));
			for (struct pb m = sub; m.p < m.end;) {
				struct pb part, x;
				unsigned int g = pb_field(&m, &wire, &v, &part);

				while (g == 1 && part.p < part.end) { /* LabelPair: name 1, value 2 */
					unsigned int h = pb_field(&part, &wire, &v, &x);

					if (h == 2)
						snprintf(out[nr].route, sizeof(out[nr].route), "%.*s",
							 (int)(x.end - x.p), x.p);
				}
				while (g == 4 && part.p < part.end) { /* Summary */
					unsigned int h = pb_field(&part, &wire, &v, &x);

					if (h == 1)
						out[nr].count = v;
					else if (h == 2)
						out[nr].sum = as_double(v);
					else if (h == 3) {
						struct pb y;
						unsigned int k = out[nr].nq++;

						while (x.p < x.end) {
							unsigned int i = pb_field(&x, &wire, &v, &y);

							if (i == 1)
								out[nr].q[k] = as_double(v);
							else if (i == 2)
								out[nr].v[k] = as_double(v);
						}
					}
				}
			}
			nr++;
		}
	}
	return nr;
}

PCPU_TEST(summary, family_children_are_summaries_in_every_format)
{
	struct pcpu_family *f = make_family("fam_rpc_seconds", route_names, 1000,
					    &(struct pcpu_summary_desc){
						    .quantiles = objectives, .nr_quantiles = NQ,
						    .max_age_ns = PCPU_SUMMARY_FOREVER });
	struct pcpu_summary *a = pcpu_family_get_summary(f, (const char *const[]){ "a", NULL });
	struct pcpu_summary *b = pcpu_family_get_summary(f, (const char *const[]){ "b", NULL });
	struct pb_child kids[4];
	char *prom, *om, *body = NULL;
	size_t len = 0;
	FILE *out;
	uint64_t type = 99;
	unsigned int nr;

	cr_assert_not_null(a);
	cr_assert_not_null(b);
	for (int64_t i = 1; i <= 100; i++)
		cr_assert_eq(pcpu_summary_observe(a, i), 0); /* 1 ms .. 100 ms */
	prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(prom);
	cr_assert_not_null(om);
	cr_expect(metrics_has_line(prom, "# TYPE fam_rpc_seconds summary"), "%s", prom);
	cr_expect(metrics_has_line(om, "# TYPE fam_rpc_seconds summary"), "%s", om);
	for (size_t i = 0; i < NQ; i++) {
		char q[16], line[128];
		double want;

		snprintf(q, sizeof(q), "%g", objectives[i]);
		cr_assert_eq(pcpu_summary_quantile(a, objectives[i], &want), 0);
		/* the rank's observation is ceil(q 100) ms */
		cr_expect(fabs(want - ceil(objectives[i] * 100) / 1000) <=
				  pcpu_summary_alpha(a) * ceil(objectives[i] * 100) / 1000,
			  "q %g: %g", objectives[i], want);
		/* the shortest decimal that reads back: compare as doubles */
		snprintf(line, sizeof(line), "\nfam_rpc_seconds{route=\"a\",quantile=\"%s\"} ", q);
		cr_assert_not_null(strstr(prom, line), "no %s in\n%s", line + 1, prom);
		cr_expect_eq(strtod(strstr(prom, line) + strlen(line), NULL), want);
		cr_assert_not_null(strstr(om, line), "no %s in\n%s", line + 1, om);
		cr_expect_eq(strtod(strstr(om, line) + strlen(line), NULL), want);
		snprintf(line, sizeof(line), "fam_rpc_seconds{route=\"b\",quantile=\"%s\"} NaN", q);
		cr_expect(metrics_has_line(prom, line), "%s", prom);
	}
	cr_expect(metrics_has_line(prom, "fam_rpc_seconds_sum{route=\"a\"} 5.05"), "%s", prom);
	cr_expect(metrics_has_line(prom, "fam_rpc_seconds_count{route=\"a\"} 100"), "%s", prom);
	cr_expect(metrics_has_line(om, "fam_rpc_seconds_count{route=\"b\"} 0"), "%s", om);
	assert_parsers_accept(prom, om);
	free(prom);
	free(om);

	out = open_memstream(&body, &len);
	cr_assert_not_null(out);
	cr_assert_eq(pcpu_metrics_write(out, PCPU_METRICS_PROTOBUF), 0);
	fclose(out);
	nr = pb_children(body, len, "fam_rpc_seconds", kids, 4, &type);
	cr_expect_eq(type, 2, "MetricType SUMMARY");
	cr_expect_eq(nr, 2);
	for (unsigned int k = 0; k < nr; k++) {
		struct pcpu_summary *s = strcmp(kids[k].route, "a") == 0 ? a : b;

		cr_expect(strcmp(kids[k].route, "a") == 0 || strcmp(kids[k].route, "b") == 0,
			  "route %s", kids[k].route);
		cr_expect_eq(kids[k].count, s == a ? 100 : 0);
		cr_expect_eq(kids[k].sum, s == a ? (double)5.05 : 0.0);
		cr_expect_eq(kids[k].nq, NQ);
		for (unsigned int i = 0; i < kids[k].nq && i < NQ; i++) {
			double want;

			cr_expect_eq(kids[k].q[i], objectives[i]);
			cr_assert_eq(pcpu_summary_quantile(s, objectives[i], &want), 0);
			if (s == a)
				cr_expect_eq(kids[k].v[i], want);
			else
				cr_expect(isnan(kids[k].v[i]), "%g", kids[k].v[i]);
		}
	}
	free(body);
	pcpu_family_destroy(f);
}

PCPU_TEST(summary, family_children_curry_remove_and_overflow_as_other_kinds)
{
	static const char *const names[] = { "route", "code", NULL };
	struct pcpu_family *f = make_family("fam_curry", names, 0, &(struct pcpu_summary_desc){
		.max_age_ns = PCPU_SUMMARY_FOREVER });
	struct pcpu_family_curried *on_a = pcpu_family_curry(f, PCPU_LABELS("route", "/a"));
	struct pcpu_summary *s, *again, *other;
	uint64_t count;
	char *prom;

	cr_assert_not_null(on_a);
	/* the view's child is the family's child of the whole tuple */
	s = pcpu_family_curried_get_summary(on_a, (const char *const[]){ "200", NULL });
	cr_assert_not_null(s);
	cr_expect_eq(s, pcpu_family_get_summary(f, (const char *const[]){ "/a", "200", NULL }));
	cr_assert_eq(pcpu_summary_observe(s, 7), 0);
	cr_assert_not_null(pcpu_family_curried_get_summary(on_a, (const char *const[]){ "500", NULL }));
	other = pcpu_family_get_summary(f, (const char *const[]){ "/b", "200", NULL });
	cr_assert_not_null(other);
	cr_assert_eq(pcpu_summary_observe(other, 9), 0);
	cr_expect_eq(pcpu_family_count(f), 3);
	/* a wrong number of values through the view */
	errno = 0;
	cr_expect_null(pcpu_family_curried_get_summary(on_a, (const char *const[]){ NULL }));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_curried_get_summary(NULL, (const char *const[]){ "1", NULL }));
	cr_expect_eq(errno, EINVAL);

	/* partial delete: both children of /a, out of the exposition at once */
	cr_expect_eq(pcpu_family_remove_matching(f, PCPU_LABELS("route", "/a")), 2);
	cr_expect_eq(pcpu_family_count(f), 1);
	prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(prom);
	cr_expect_null(strstr(prom, "route=\"/a\""), "%s", prom);
	cr_expect(metrics_has_line(prom, "fam_curry_count{code=\"200\",route=\"/b\"} 1"), "%s",
		  prom);
	free(prom);
	/* the removed child stays valid until reclaim; a new get starts from 0 */
	cr_assert_eq(pcpu_summary_observe(s, 7), 0);
	again = pcpu_family_curried_get_summary(on_a, (const char *const[]){ "200", NULL });
	cr_assert_not_null(again);
	cr_assert_eq(pcpu_summary_count(again, &count, NULL), 0);
	cr_expect_eq(count, 0);
	pcpu_family_reclaim(f);
	/* one by one */
	cr_expect_eq(pcpu_family_remove(f, (const char *const[]){ "/b", "200", NULL }), 0);
	cr_expect_eq(pcpu_family_remove(f, (const char *const[]){ "/b", "200", NULL }), -ENOENT);
	/* overflow: a refused tuple gets the overflow summary */
	cr_assert_eq(pcpu_family_set_overflow(f, (const char *const[]){ "other", "other", NULL }),
		     0);
	other = pcpu_family_get_summary(f, (const char *const[]){ "only-one", NULL });
	cr_assert_not_null(other);
	cr_expect_eq(errno, EINVAL);
	cr_expect_eq(other,
		     pcpu_family_get_summary(f, (const char *const[]){ "other", "other", NULL }));
	/* and the short tuple through the view above */
	cr_expect_eq(pcpu_family_refused(f), 2);
	cr_expect_eq(pcpu_family_remove_matching(f, (const char *const[]){ NULL }), 1);
	cr_expect_eq(pcpu_family_count(f), 1); /* the overflow child stays */
	pcpu_family_curried_free(on_a);
	pcpu_family_reclaim(f);
	pcpu_family_destroy(f);
}

PCPU_TEST(summary, family_bad_input_is_refused)
{
	static const double unsorted[] = { 0.9, 0.5 };
	static const char *const quantile_label[] = { "quantile", NULL };
	const struct pcpu_family_desc good = { .name = "fam_bad", .kind = PCPU_METRIC_SUMMARY,
					       .label_names = route_names, .max_children = 2 };
	const struct pcpu_summary_desc sketch = { .max_age_ns = PCPU_SUMMARY_FOREVER };
	/* outside the switch below: a compound literal there would end with it */
	const struct pcpu_histogram_native nat = { .schema = 3 };
	const struct pcpu_counter_options opts = { .floor = 0 };
	struct pcpu_family_desc d;
	struct pcpu_summary_desc sd;
	struct pcpu_family *f;
	int64_t bound = 10;

	errno = 0;
	cr_expect_null(pcpu_family_create_summary(NULL, &sketch));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_create_summary(&good, NULL));
	cr_expect_eq(errno, EINVAL);
	for (int i = 0; i < 14; i++) {
		d = good;
		sd = sketch;
		switch (i) {
		case 0: d.kind = PCPU_METRIC_COUNTER; break;
		case 1: d.kind = PCPU_METRIC_HISTOGRAM; break;
		case 2: d.label_names = quantile_label; break;
		case 3: d.bounds = &bound; d.nr_bounds = 1; break;
		case 4: d.native = &nat; break;
		case 5: d.flags = PCPU_FAMILY_F_SET_GAUGE; break;
		case 6: d.opts = &opts; break;
		case 7: sd.name = "x"; break;
		case 8: sd.labels = PCPU_LABELS("k", "v"); break;
		case 9: sd.scale = 1000; break; /* not the family's */
		case 10: sd.quantiles = unsorted; sd.nr_quantiles = 2; break;
		case 11: sd.alpha = 1; break;
		case 12: d.name = "fam_bad_sum"; break;
		case 13: sd.help = "h"; break;
		}
		errno = 0;
		cr_expect_null(pcpu_family_create_summary(&d, &sd), "case %d accepted", i);
		cr_expect_eq(errno, EINVAL, "case %d: errno %d", i, errno);
	}
	/* 1 % over every int64: more buckets than a histogram holds */
	sd = sketch;
	sd.alpha = 0.01;
	errno = 0;
	cr_expect_null(pcpu_family_create_summary(&good, &sd));
	cr_expect_eq(errno, ERANGE);
	/* the family's scale, said again, is fine */
	d = good;
	d.scale = 1000;
	sd = sketch;
	sd.scale = 1000;
	f = pcpu_family_create_summary(&d, &sd);
	cr_assert_not_null(f, "%s", strerror(errno));
	errno = 0;
	cr_expect_null(pcpu_family_create_summary(&good, &sketch));
	cr_expect_eq(errno, EEXIST);
	/* the wrong getter, a wrong tuple, the cap */
	errno = 0;
	cr_expect_null(pcpu_family_get(f, (const char *const[]){ "a", NULL }));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_get_histogram(f, (const char *const[]){ "a", NULL }));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_get_summary(NULL, (const char *const[]){ "a", NULL }));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_get_summary(f, (const char *const[]){ "a", "b", NULL }));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_get_summary(f, (const char *const[]){ "\xff", NULL }));
	cr_expect_eq(errno, EINVAL);
	cr_assert_not_null(pcpu_family_get_summary(f, (const char *const[]){ "1", NULL }));
	cr_assert_not_null(pcpu_family_get_summary(f, (const char *const[]){ "2", NULL }));
	errno = 0;
	cr_expect_null(pcpu_family_get_summary(f, (const char *const[]){ "3", NULL }));
	cr_expect_eq(errno, E2BIG);
	cr_expect_eq(pcpu_summary_observe(pcpu_family_get_summary(f, (const char *const[]){ "1", NULL }),
					  -1),
		     -EINVAL);
	cr_expect_eq(pcpu_family_child_size(f, 8), 0);
	pcpu_family_destroy(f);
	/* a counter family has no summary children */
	f = pcpu_family_create(&(struct pcpu_family_desc){ .name = "fam_counter",
							  .kind = PCPU_METRIC_COUNTER,
							  .label_names = route_names });
	cr_assert_not_null(f);
	errno = 0;
	cr_expect_null(pcpu_family_get_summary(f, (const char *const[]){ "a", NULL }));
	cr_expect_eq(errno, EINVAL);
	pcpu_family_destroy(f);
}
