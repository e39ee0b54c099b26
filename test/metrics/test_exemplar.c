/* SPDX-License-Identifier: MIT */
/*
 * Exemplars (pcpu_histogram_observe_exemplar(), pcpu_counter_add_exemplar()):
 * the exact OpenMetrics lines on classic and native buckets and on
 * counters, none in text 0.0.4, replacement, every error, a family's
 * histogram and counter children, collectors' exemplars checked, the body accepted by
 * prometheus_client's OpenMetrics parser with every exemplar seen, and
 * threads observing with and without exemplars while another scrapes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <percpu/family.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>

#include "check_body.h"
#include "helpers.h"
#include "pcpu_test.h"

#define TRACE(id) ((const char *[]){ "trace_id", (id), NULL })

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The line of @text that is @series or starts with it and a space: its exemplar
 * part (after " # ") into @ex, up to the timestamp, and the timestamp into
 * *@ts. 1 if the line has an exemplar, 0 if not, -1 if there is no line.
 */
static int exemplar_of(const char *text, const char *series, char *ex, size_t size, double *ts)
{
	size_t n = strlen(series);

	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n'), *hash, *sp;

		if (!end)
			end = line + strlen(line);
		if (strncmp(line, series, n) == 0 && (line[n] == ' ' || line + n == end)) {
			hash = strstr(line, " # ");
			if (!hash || hash > end)
				return 0;
			hash += 3;
			sp = end;
			while (sp > hash && sp[-1] != ' ')
				sp--;
			cr_assert_gt(sp, hash);
			snprintf(ex, size, "%.*s", (int)(sp - 1 - hash), hash);
			*ts = strtod(sp, NULL);
			return 1;
		}
		line = *end ? end + 1 : NULL;
	}
	return -1;
}

/* The exemplar of @series must be @want, recorded between @t0 and now. */
static void assert_exemplar(const char *text, const char *series, const char *want, double t0)
{
	char ex[512];
	double ts = 0;
	int r = exemplar_of(text, series, ex, sizeof(ex), &ts);

	cr_assert_eq(r, 1, "%s: no exemplar (%d) in\n%s", series, r, text);
	cr_assert_str_eq(ex, want, "%s in\n%s", series, text);
	/* written to the millisecond; the casts drop i386's excess precision */
	cr_assert(ts >= (double)(floor(t0 * 1000) / 1000) && ts <= (double)(now() + 0.001),
		  "%s: at %.3f", series, ts);
}

static void assert_no_exemplar(const char *text, const char *series)
{
	char ex[512];
	double ts;

	cr_assert_eq(exemplar_of(text, series, ex, sizeof(ex), &ts), 0, "%s in\n%s", series,
		     text);
}

/*
 * check_body.py on both formats, and in the OpenMetrics body the parser
 * must see @exemplars exemplars.
 */
static void assert_parsed(int exemplars)
{
	char *prom = metrics_text(PCPU_METRICS_PROMETHEUS), *om = metrics_text(PCPU_METRICS_OPENMETRICS);

	cr_assert_not_null(prom);
	cr_assert_not_null(om);
	cr_assert_null(strstr(prom, " # "), "text 0.0.4 has no exemplars:\n%s", prom);
	assert_parsers_accept_exemplars(prom, om, exemplars);
	free(prom);
	free(om);
}

PCPU_TEST(exemplar, classic_buckets_show_their_latest_exemplar)
{
	static const int64_t bounds[] = { 100000000, 500000000 };
	struct pcpu_histogram *h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "ex_classic_seconds", .bounds = bounds, .nr_bounds = 2,
		.scale = 1000000000, .labels = (const char *[]){ "route", "/a", NULL } });
	double t0 = now();
	char *om;

	cr_assert_not_null(h);
	pcpu_histogram_observe(h, 50000000);
	cr_assert_eq(pcpu_histogram_observe_exemplar(h, 430000000, TRACE("abc")), 0);
	cr_assert_eq(pcpu_histogram_observe_exemplar(h, 2000000000,
						     (const char *[]){ "trace_id", "q\"\\\n", "span",
								       "é", NULL }),
		     0);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert(metrics_has_line(om, "ex_classic_seconds_bucket{route=\"/a\",le=\"0.1\"} 1"),
		  "%s", om);
	assert_exemplar(om, "ex_classic_seconds_bucket{route=\"/a\",le=\"0.5\"} 2",
			"{trace_id=\"abc\"} 0.43", t0);
	assert_exemplar(om, "ex_classic_seconds_bucket{route=\"/a\",le=\"+Inf\"} 3",
			"{trace_id=\"q\\\"\\\\\\n\",span=\"é\"} 2", t0);
	free(om);
	/* a later exemplar replaces the bucket's */
	cr_assert_eq(pcpu_histogram_observe_exemplar(h, 200000000, TRACE("def")), 0);
	cr_assert_eq(pcpu_histogram_observe_exemplar(h, 1, NULL), 0);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	assert_exemplar(om, "ex_classic_seconds_bucket{route=\"/a\",le=\"0.5\"} 4",
			"{trace_id=\"def\"} 0.2", t0);
	assert_exemplar(om, "ex_classic_seconds_bucket{route=\"/a\",le=\"0.1\"} 2",
			"{} 1e-09", t0);
	cr_assert(metrics_has_line(om, "ex_classic_seconds_count{route=\"/a\"} 5"), "%s", om);
	assert_no_exemplar(om, "ex_classic_seconds_count{route=\"/a\"}");
	free(om);
	assert_parsed(3);
	pcpu_histogram_destroy(h);
}

PCPU_TEST(exemplar, native_buckets_show_the_latest_fine_exemplar_per_classic_bucket)
{
	static const int64_t classic[] = { 1000000, 10000000 };
	struct pcpu_histogram *h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "ex_native_seconds", .bounds = classic, .nr_bounds = 2,
		.scale = 1000000000, .native = &(struct pcpu_histogram_native){ .schema = 3 } });
	double t0 = now();
	char *om;

	cr_assert_not_null(h);
	/* two fine buckets under 1 ms: the later one shows */
	cr_assert_eq(pcpu_histogram_observe_exemplar(h, 300000, TRACE("early")), 0);
	cr_assert_eq(pcpu_histogram_observe_exemplar(h, 900000, TRACE("late")), 0);
	/* nothing in (1 ms, 10 ms]; two above: the later one on +Inf */
	cr_assert_eq(pcpu_histogram_observe_exemplar(h, 20000000, TRACE("x")), 0);
	cr_assert_eq(pcpu_histogram_observe_exemplar(h, 700000000, TRACE("y")), 0);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	assert_exemplar(om, "ex_native_seconds_bucket{le=\"0.001\"} 2", "{trace_id=\"late\"} 0.0009",
			t0);
	assert_no_exemplar(om, "ex_native_seconds_bucket{le=\"0.01\"} 2");
	assert_exemplar(om, "ex_native_seconds_bucket{le=\"+Inf\"} 4", "{trace_id=\"y\"} 0.7", t0);
	free(om);
	/* the earlier fine bucket again: now it is the latest */
	cr_assert_eq(pcpu_histogram_observe_exemplar(h, 300000, TRACE("again")), 0);
	cr_assert_eq(pcpu_histogram_observe_exemplar(h, 5000000, TRACE("mid")), 0);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	assert_exemplar(om, "ex_native_seconds_bucket{le=\"0.001\"} 3",
			"{trace_id=\"again\"} 0.0003", t0);
	assert_exemplar(om, "ex_native_seconds_bucket{le=\"0.01\"} 4", "{trace_id=\"mid\"} 0.005",
			t0);
	free(om);
	assert_parsed(3);
	pcpu_histogram_destroy(h);
}

PCPU_TEST(exemplar, counters_show_their_latest_exemplar)
{
	struct pcpu_counter c, s, g;
	double t0 = now();
	char *om;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(pcpu_counter_init(&s, 0), 0);
	cr_assert_eq(pcpu_counter_init(&g, 0), 0);
	cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
			     .name = "ex_requests", .kind = PCPU_METRIC_COUNTER }), 0);
	cr_assert_eq(pcpu_counter_register(&s, &(struct pcpu_metric_desc){
			     .name = "ex_cpu_seconds", .kind = PCPU_METRIC_COUNTER,
			     .scale = 1000000000 }), 0);
	cr_assert_eq(pcpu_counter_register(&g, &(struct pcpu_metric_desc){
			     .name = "ex_depth", .kind = PCPU_METRIC_GAUGE }), 0);
	pcpu_counter_add(&c, 4);
	cr_assert_eq(pcpu_counter_add_exemplar(&c, 1, TRACE("abc")), 0);
	cr_assert_eq(pcpu_counter_add_exemplar(&s, 1500000000, TRACE("s1")), 0);
	cr_assert_eq(pcpu_counter_add_exemplar(&g, 3, TRACE("g1")), 0);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	assert_exemplar(om, "ex_requests_total 5", "{trace_id=\"abc\"} 1", t0);
	assert_exemplar(om, "ex_cpu_seconds_total 1.5", "{trace_id=\"s1\"} 1.5", t0);
	/* OpenMetrics has no exemplars on gauges: kept, not shown */
	assert_no_exemplar(om, "ex_depth 3");
	free(om);
	cr_assert_eq(pcpu_counter_add_exemplar(&c, 2, TRACE("def")), 0);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	assert_exemplar(om, "ex_requests_total 7", "{trace_id=\"def\"} 2", t0);
	free(om);
	assert_parsed(2);
	pcpu_counter_destroy(&c);
	pcpu_counter_destroy(&s);
	pcpu_counter_destroy(&g);
	/* destroyed and made anew at the same address: no old exemplar */
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
			     .name = "ex_requests", .kind = PCPU_METRIC_COUNTER }), 0);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	assert_no_exemplar(om, "ex_requests_total 0");
	free(om);
	pcpu_counter_destroy(&c);
}

PCPU_TEST(exemplar, every_error_is_reported_and_the_value_still_counts)
{
	static const int64_t bounds[] = { 10 };
	struct pcpu_histogram *h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "ex_errors", .bounds = bounds, .nr_bounds = 1 });
	char long_value[130], at_limit[130];
	uint64_t counts[2];
	struct pcpu_counter c, plain;
	int expected = 0;

	cr_assert_not_null(h);
	memset(long_value, 'x', 121);
	long_value[121] = 0; /* "trace_id" 8 + 121 = 129 characters */
	memset(at_limit, 'x', 120);
	at_limit[120] = 0;   /* 128 */
	const char *const *bad[] = {
		(const char *[]){ "trace_id", long_value, NULL },
		(const char *[]){ "0bad", "v", NULL },
		(const char *[]){ "__x", "v", NULL },
		(const char *[]){ "a", "v", "a", "w", NULL },
		(const char *[]){ "a", NULL },
		(const char *[]){ "a", "\xff", NULL },
	};
	cr_assert_eq(pcpu_histogram_observe_exemplar(NULL, 1, TRACE("a")), -EINVAL);
	cr_assert_eq(pcpu_counter_add_exemplar(NULL, 1, TRACE("a")), -EINVAL);
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
			     .name = "ex_errors_c", .kind = PCPU_METRIC_COUNTER }), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(pcpu_histogram_observe_exemplar(h, 1, bad[i]), -EINVAL, "row %zu", i);
		cr_assert_eq(pcpu_counter_add_exemplar(&c, 1, bad[i]), -EINVAL, "row %zu", i);
		expected++;
	}
	/* 128 characters, multi-byte ones counted once */
	cr_assert_eq(pcpu_histogram_observe_exemplar(h, 1, TRACE(at_limit)), 0);
	cr_assert_eq(pcpu_histogram_observe_exemplar(
			     h, 1, (const char *[]){ "t", "ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé", NULL }),
		     0); /* 1 + 127 */
	expected += 2;
	cr_assert_eq(pcpu_histogram_snapshot(h, counts, NULL), 0);
	cr_assert_eq(counts[0], (uint64_t)expected, "refused exemplars still count: %llu",
		     (unsigned long long)counts[0]);
	cr_assert_eq(pcpu_counter_sum(&c), (int64_t)(sizeof(bad) / sizeof(bad[0])));
	/* a counter not registered as a metric: -ENOENT, the add counts */
	cr_assert_eq(pcpu_counter_init(&plain, 0), 0);
	cr_assert_eq(pcpu_counter_add_exemplar(&plain, 3, TRACE("a")), -ENOENT);
	cr_assert_eq(pcpu_counter_sum(&plain), 3);
	pcpu_counter_destroy(&plain);
	/* destroyed (zeroed): uninitialised */
	cr_assert_eq(pcpu_counter_add_exemplar(&plain, 3, TRACE("a")), -EINVAL);
	pcpu_counter_destroy(&c);
	pcpu_histogram_destroy(h);
}

PCPU_TEST(exemplar, a_family_histogram_child_takes_exemplars)
{
	static const int64_t bounds[] = { 10 };
	struct pcpu_family *f = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "ex_fam", .kind = PCPU_METRIC_HISTOGRAM,
		.label_names = (const char *[]){ "route", NULL }, .bounds = bounds,
		.nr_bounds = 1 });
	struct pcpu_histogram *a, *b;
	double t0 = now();
	char *om;

	cr_assert_not_null(f, "%s", strerror(errno));
	a = pcpu_family_get_histogram(f, (const char *[]){ "a", NULL });
	b = pcpu_family_get_histogram(f, (const char *[]){ "b", NULL });
	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_eq(pcpu_histogram_observe_exemplar(a, 5, TRACE("fa")), 0);
	pcpu_histogram_observe(b, 50);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	assert_exemplar(om, "ex_fam_bucket{route=\"a\",le=\"10\"} 1", "{trace_id=\"fa\"} 5", t0);
	assert_no_exemplar(om, "ex_fam_bucket{route=\"a\",le=\"+Inf\"} 1");
	assert_no_exemplar(om, "ex_fam_bucket{route=\"b\",le=\"+Inf\"} 1");
	free(om);
	assert_parsed(1);
	pcpu_family_destroy(f);
}

/*
 * A counter family's child takes exemplars as a registered counter does,
 * divided by the family's scale; a gauge family's counter child shows none;
 * a child is no metric of its own; a removed child's exemplar goes with it.
 */
PCPU_TEST(exemplar, a_family_counter_child_takes_exemplars)
{
	struct pcpu_family *f = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "ex_calls", .kind = PCPU_METRIC_COUNTER,
		.label_names = (const char *[]){ "route", NULL }, .scale = 1000 });
	struct pcpu_family *g = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "ex_inflight", .kind = PCPU_METRIC_GAUGE,
		.label_names = (const char *[]){ "route", NULL } });
	struct pcpu_counter *a, *b, *ga;
	double t0 = now();
	char *om;

	cr_assert_not_null(f, "%s", strerror(errno));
	cr_assert_not_null(g, "%s", strerror(errno));
	a = pcpu_family_get(f, (const char *[]){ "a", NULL });
	b = pcpu_family_get(f, (const char *[]){ "b", NULL });
	ga = pcpu_family_get(g, (const char *[]){ "a", NULL });
	cr_assert(a && b && ga);
	cr_assert_eq(pcpu_counter_add_exemplar(a, 1500, TRACE("ca")), 0);
	pcpu_counter_add(b, 3000);
	cr_assert_eq(pcpu_counter_add_exemplar(ga, 2, TRACE("ga")), 0);
	/* a series of the family, not a metric to register alone */
	cr_assert_eq(pcpu_counter_register(a, &(struct pcpu_metric_desc){
						       .name = "ex_alone", .kind = PCPU_METRIC_COUNTER }),
		     -EEXIST);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	assert_exemplar(om, "ex_calls_total{route=\"a\"} 1.5", "{trace_id=\"ca\"} 1.5", t0);
	assert_no_exemplar(om, "ex_calls_total{route=\"b\"} 3");
	assert_no_exemplar(om, "ex_inflight{route=\"a\"} 2");
	free(om);
	assert_parsed(1);
	/* removed and reclaimed: its exemplar is freed with it (ASan, valgrind) */
	cr_assert_eq(pcpu_family_remove(f, (const char *[]){ "a", NULL }), 0);
	pcpu_family_reclaim(f);
	a = pcpu_family_get(f, (const char *[]){ "a", NULL });
	cr_assert_not_null(a);
	pcpu_counter_add(a, 1000);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	assert_no_exemplar(om, "ex_calls_total{route=\"a\"} 1");
	free(om);
	pcpu_family_destroy(g);
	pcpu_family_destroy(f);
}

static int exemplar_collector(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx,
			      void *arg)
{
	static const int64_t bounds[] = { 1 };
	static const uint64_t buckets[] = { 1, 1 };
	int *refused = arg;
	struct pcpu_exemplar ok[2] = { { .labels = TRACE("c1"), .value = 0.5, .timestamp = 1690000000.5 },
				       { 0 } };
	struct pcpu_exemplar bad = { .labels = TRACE("c2"), .value = NAN, .timestamp = 1 };
	struct pcpu_exemplar bad_label = { .labels = (const char *[]){ "1", "x", NULL } };
	struct pcpu_metric_sample h = { .name = "ex_coll", .help = "", .unit = "",
					.kind = PCPU_METRIC_HISTOGRAM, .nr_bounds = 1,
					.bounds = bounds, .buckets = buckets, .count = 2,
					.exemplars = ok };
	struct pcpu_metric_sample g = { .name = "ex_coll_gauge", .help = "", .unit = "",
					.kind = PCPU_METRIC_GAUGE, .exemplars = ok };
	struct pcpu_metric_sample c = { .name = "ex_coll_c", .help = "", .unit = "",
					.kind = PCPU_METRIC_COUNTER, .value = 1, .exemplars = &bad };
	int err = emit(&h, ctx);

	if (err)
		return err;
	*refused += emit(&g, ctx) == -EINVAL;
	*refused += emit(&c, ctx) == -EINVAL;
	c.exemplars = &bad_label;
	*refused += emit(&c, ctx) == -EINVAL;
	c.exemplars = ok;
	return emit(&c, ctx);
}

PCPU_TEST(exemplar, collectors_exemplars_are_checked_and_shown)
{
	int refused = 0;
	char *om;

	cr_assert_eq(pcpu_metrics_collector_add(exemplar_collector, &refused), 0);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(om);
	cr_assert_eq(refused, 3, "gauge, NaN and a bad label name refused: %d", refused);
	cr_assert(metrics_has_line(om, "ex_coll_bucket{le=\"1\"} 1 # {trace_id=\"c1\"} 0.5 "
				       "1690000000.500"), "%s", om);
	cr_assert(metrics_has_line(om, "ex_coll_c_total 1 # {trace_id=\"c1\"} 0.5 1690000000.500"),
		  "%s", om);
	free(om);
	assert_parsed(2);
	cr_assert_eq(pcpu_metrics_collector_remove(exemplar_collector, &refused), 0);
}

/* Concurrency: observers with and without exemplars, one scraper. */

#define RACE_BOUNDS 4
static const int64_t race_bounds[RACE_BOUNDS] = { 10, 100, 1000, 10000 };

struct racer {
	struct pcpu_histogram *h;
	struct pcpu_counter *c;
	int id;
	int iters;
};

static void *observe(void *arg)
{
	struct racer *r = arg;
	char id[64];

	for (int i = 0; i < r->iters; i++) {
		int64_t v = (i * 7919 + r->id * 31) % 20000;

		if (r->id % 2) {
			pcpu_histogram_observe(r->h, v);
			pcpu_counter_add(r->c, 1);
			continue;
		}
		/* the id names the value: a scrape can check that they belong together */
		snprintf(id, sizeof(id), "t%d-v%lld", r->id, (long long)v);
		cr_assert_eq(pcpu_histogram_observe_exemplar(
				     r->h, v, (const char *[]){ "trace_id", id, "pad", "p", NULL }),
			     0);
		snprintf(id, sizeof(id), "t%d-v1", r->id);
		cr_assert_eq(pcpu_counter_add_exemplar(r->c, 1, TRACE(id)), 0);
	}
	return NULL;
}

struct check {
	int seen;
};

static int check_sample(const struct pcpu_metric_sample *m, void *arg)
{
	struct check *ck = arg;
	uint32_t n;

	if (strncmp(m->name, "ex_race", 7) != 0 || !m->exemplars)
		return 0;
	n = m->kind == PCPU_METRIC_HISTOGRAM ? m->nr_bounds + 1 : 1;
	for (uint32_t i = 0; i < n; i++) {
		const struct pcpu_exemplar *e = &m->exemplars[i];
		int t;
		long long v;

		if (!e->labels)
			continue;
		ck->seen++;
		/* labels intact, and the ones that were recorded with this value */
		cr_assert_str_eq(e->labels[0], "trace_id");
		cr_assert_eq(sscanf(e->labels[1], "t%d-v%lld", &t, &v), 2, "%s", e->labels[1]);
		cr_assert_eq((double)v, e->value, "%s with %g", e->labels[1], e->value);
		if (m->kind == PCPU_METRIC_HISTOGRAM) {
			cr_assert_str_eq(e->labels[2], "pad");
			cr_assert_str_eq(e->labels[3], "p");
			cr_assert_null(e->labels[4]);
			/* in its bucket */
			cr_assert(i == m->nr_bounds || v <= m->bounds[i], "%lld in bucket %u", v, i);
			cr_assert(i == 0 || v > m->bounds[i - 1], "%lld in bucket %u", v, i);
		} else {
			cr_assert_null(e->labels[2]);
		}
		cr_assert(e->timestamp > 1e9);
	}
	return 0;
}

PCPU_TEST(exemplar, concurrent_observers_and_scrapes_see_recorded_exemplars, .timeout = 120)
{
	enum { THREADS = 4 };
	struct pcpu_histogram *h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "ex_race", .bounds = race_bounds, .nr_bounds = RACE_BOUNDS });
	struct pcpu_counter c;
	pthread_t t[THREADS];
	struct racer r[THREADS];
	struct check ck = { 0 };
	int iters = pcpu_test_on_valgrind() ? 2000 : 50000;
	uint64_t counts[RACE_BOUNDS + 1], total = 0;

	cr_assert_not_null(h);
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
			     .name = "ex_race_c", .kind = PCPU_METRIC_COUNTER }), 0);
	for (int i = 0; i < THREADS; i++) {
		r[i] = (struct racer){ .h = h, .c = &c, .id = i, .iters = iters };
		cr_assert_eq(pthread_create(&t[i], NULL, observe, &r[i]), 0);
	}
	for (int s = 0; s < 50; s++) {
		char *om = metrics_text(PCPU_METRICS_OPENMETRICS);

		cr_assert_not_null(om);
		free(om);
		cr_assert_eq(pcpu_metrics_foreach(check_sample, &ck), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(pcpu_metrics_foreach(check_sample, &ck), 0);
	cr_assert_gt(ck.seen, 0);
	cr_assert_eq(pcpu_histogram_snapshot(h, counts, NULL), 0);
	for (int i = 0; i <= RACE_BOUNDS; i++)
		total += counts[i];
	cr_assert_eq(total, (uint64_t)THREADS * iters, "every observation counted");
	cr_assert_eq(pcpu_counter_sum(&c), (int64_t)THREADS * iters);
	assert_parsed(RACE_BOUNDS + 1 + 1);
	pcpu_counter_destroy(&c);
	pcpu_histogram_destroy(h);
}
