/* SPDX-License-Identifier: MIT */
/*
 * Created times (PCPU_METRIC_SAMPLE_F_CREATED): a registered counter's and
 * histogram's are their registration, a family child's its creation, a
 * gauge has none; OpenMetrics writes NAME_created only when asked to, text
 * 0.0.4 never; the protobuf format carries created_timestamp (Counter field
 * 3, Histogram field 15); emit() refuses a created time that is not a time
 * and passes a collector's on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <percpu/family.h>
#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/metrics_registry.h>

#include "helpers.h"
#include "pcpu_test.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct seen {
	const char *name;       /* the family to find */
	const char *label;      /* NULL, or the value of its first label to find */
	bool found;
	uint32_t flags;
	double created;
};

static int find(const struct pcpu_metric_sample *s, void *arg)
{
	struct seen *w = arg;

	if (strcmp(s->name, w->name) == 0 &&
	    (!w->label || (s->labels && s->labels[0] && strcmp(s->labels[1], w->label) == 0))) {
		w->found = true;
		w->flags = s->flags;
		w->created = s->created;
	}
	return 0;
}

static struct seen sample_of(struct pcpu_metrics_registry *r, const char *name, const char *label)
{
	struct seen w = { .name = name, .label = label };

	cr_assert_eq(pcpu_metrics_registry_foreach(r, find, &w), 0);
	cr_assert(w.found, "no sample %s", name);
	return w;
}

struct fixture {
	struct pcpu_metrics_registry *r;
	struct pcpu_counter c;
	struct pcpu_histogram *h;
	struct pcpu_gauge g;
	struct pcpu_family *f;
	double before, registered, child_before, child_after;
};

static void setup(struct fixture *x)
{
	static const int64_t bounds[] = { 10, 100 };

	memset(x, 0, sizeof(*x));
	x->r = pcpu_metrics_registry_create(NULL);
	cr_assert_not_null(x->r);
	x->before = now();
	cr_assert_eq(pcpu_counter_init(&x->c, 0), 0);
	cr_assert_eq(pcpu_counter_register(&x->c, &(struct pcpu_metric_desc){
		.name = "jobs", .kind = PCPU_METRIC_COUNTER, .registry = x->r }), 0);
	x->h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "wait_seconds", .unit = "seconds", .bounds = bounds, .nr_bounds = 2,
		.scale = 1000, .registry = x->r });
	cr_assert_not_null(x->h);
	cr_assert_eq(pcpu_gauge_register(&x->g, &(struct pcpu_metric_desc){
		.name = "depth", .kind = PCPU_METRIC_GAUGE, .registry = x->r }), 0);
	x->f = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "requests", .kind = PCPU_METRIC_COUNTER,
		.label_names = (const char *const[]){ "code", NULL }, .registry = x->r });
	cr_assert_not_null(x->f);
	x->registered = now();
	usleep(20000); /* the child's created time is its own, not the family's */
	x->child_before = now();
	pcpu_counter_add(pcpu_family_get(x->f, (const char *const[]){ "200", NULL }), 3);
	x->child_after = now();
	pcpu_counter_add(&x->c, 5);
	pcpu_histogram_observe(x->h, 50);
}

static void teardown(struct fixture *x)
{
	pcpu_family_destroy(x->f);
	pcpu_gauge_unregister(&x->g);
	pcpu_histogram_destroy(x->h);
	pcpu_counter_destroy(&x->c);
	pcpu_metrics_registry_destroy(x->r);
}

Test(created, samples_carry_registration_and_child_creation)
{
	struct fixture x;
	struct seen s;

	setup(&x);
	s = sample_of(x.r, "jobs", NULL);
	cr_expect(s.flags & PCPU_METRIC_SAMPLE_F_CREATED);
	cr_expect(s.created >= x.before && s.created <= x.registered, "%f", s.created);
	s = sample_of(x.r, "wait_seconds", NULL);
	cr_expect(s.flags & PCPU_METRIC_SAMPLE_F_CREATED);
	cr_expect(s.created >= x.before && s.created <= x.registered, "%f", s.created);
	s = sample_of(x.r, "requests", "200");
	cr_expect(s.flags & PCPU_METRIC_SAMPLE_F_CREATED);
	cr_expect(s.created >= x.child_before && s.created <= x.child_after, "%f in [%f, %f]",
		  s.created, x.child_before, x.child_after);
	s = sample_of(x.r, "depth", NULL);
	cr_expect_not(s.flags & PCPU_METRIC_SAMPLE_F_CREATED, "a gauge has no created time");
	/* the same time at every scrape */
	cr_expect_eq(sample_of(x.r, "jobs", NULL).created, sample_of(x.r, "jobs", NULL).created);
	teardown(&x);
}

/* The value of the line that starts with @series and a space, as a double; NAN if none. */
static double line_value(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return NAN;
}

Test(created, openmetrics_only_when_asked)
{
	struct fixture x;
	char *text;
	int was;

	setup(&x);
	text = metrics_registry_text(x.r, PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(text);
	cr_expect_null(strstr(text, "_created"), "off by default: %s", text);
	free(text);
	was = pcpu_metrics_set_openmetrics_created(1);
	cr_expect_eq(was, 0);
	text = metrics_registry_text(x.r, PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(text);
	/* after the series' samples, read back as the sample's double */
	cr_expect(strstr(text, "jobs_total 5\njobs_created ") != NULL, "%s", text);
	cr_expect_eq(line_value(text, "jobs_created"), sample_of(x.r, "jobs", NULL).created);
	cr_expect(strstr(text, "wait_seconds_count 1\nwait_seconds_created ") != NULL, "%s", text);
	cr_expect_eq(line_value(text, "wait_seconds_created"),
		     sample_of(x.r, "wait_seconds", NULL).created);
	cr_expect_eq(line_value(text, "requests_created{code=\"200\"}"),
		     sample_of(x.r, "requests", "200").created);
	cr_expect_null(strstr(text, "depth_created"), "%s", text);
	free(text);
	/* never in text 0.0.4, which has no such sample */
	text = metrics_registry_text(x.r, PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(text);
	cr_expect_null(strstr(text, "_created"), "%s", text);
	free(text);
	cr_expect_eq(pcpu_metrics_set_openmetrics_created(0), 1);
	teardown(&x);
}

/* google.protobuf.Timestamp of @t as field @field: the bytes, their count in *@n. */
static void timestamp_bytes(double t, unsigned int field, uint8_t *out, size_t *n)
{
	uint8_t sub[24];
	size_t len = 0;
	uint64_t secs = (uint64_t)floor(t), nanos = (uint64_t)((t - floor(t)) * 1e9 + 0.5);

	sub[len++] = 0x08;
	for (uint64_t v = secs; ; v >>= 7) {
		sub[len++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		if (v <= 0x7f)
			break;
	}
	if (nanos && nanos < 1000000000) {
		sub[len++] = 0x10;
		for (uint64_t v = nanos; ; v >>= 7) {
			sub[len++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
			if (v <= 0x7f)
				break;
		}
	}
	*n = 0;
	out[(*n)++] = (uint8_t)(field << 3 | 2);
	out[(*n)++] = (uint8_t)len;
	memcpy(out + *n, sub, len);
	*n += len;
}

Test(created, protobuf_created_timestamp)
{
	struct fixture x;
	char *body = NULL;
	size_t len = 0, n;
	uint8_t want[32];
	FILE *out;

	setup(&x);
	out = open_memstream(&body, &len);
	cr_assert_not_null(out);
	cr_assert_eq(pcpu_metrics_registry_write(x.r, out, PCPU_METRICS_PROTOBUF), 0);
	fclose(out);
	/* Counter.created_timestamp = 3, Histogram.created_timestamp = 15 */
	timestamp_bytes(sample_of(x.r, "jobs", NULL).created, 3, want, &n);
	cr_expect_not_null(memmem(body, len, want, n), "no counter created_timestamp");
	timestamp_bytes(sample_of(x.r, "wait_seconds", NULL).created, 15, want, &n);
	cr_expect_not_null(memmem(body, len, want, n), "no histogram created_timestamp");
	timestamp_bytes(sample_of(x.r, "requests", "200").created, 3, want, &n);
	cr_expect_not_null(memmem(body, len, want, n), "no child created_timestamp");
	free(body);
	teardown(&x);
}

static int emits;
static double collector_created;

static int created_collector(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx,
			     void *arg)
{
	struct pcpu_metric_sample s = { .name = "imported", .help = "", .unit = "",
					.kind = PCPU_METRIC_COUNTER, .value = 9,
					.flags = PCPU_METRIC_SAMPLE_F_CREATED,
					.created = collector_created };

	(void)arg;
	emits = emit(&s, ctx);
	return 0;
}

Test(created, collector_created_checked_and_written)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	const double bad[] = { NAN, INFINITY, -1 };
	char *text;

	cr_assert_not_null(r);
	cr_assert_eq(pcpu_metrics_registry_collector_add(r, created_collector, NULL, 0), 0);
	pcpu_metrics_set_openmetrics_created(1);
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		collector_created = bad[i];
		text = metrics_registry_text(r, PCPU_METRICS_OPENMETRICS);
		cr_assert_not_null(text);
		cr_expect_eq(emits, -EINVAL, "created %f", bad[i]);
		cr_expect_null(strstr(text, "imported"), "%s", text);
		free(text);
	}
	collector_created = 1700000000.25;
	text = metrics_registry_text(r, PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(text);
	cr_expect_eq(emits, 0);
	cr_expect(metrics_has_line(text, "imported_created 1700000000.25"), "%s", text);
	free(text);
	pcpu_metrics_set_openmetrics_created(0);
	pcpu_metrics_registry_collector_remove(r, created_collector, NULL);
	pcpu_metrics_registry_destroy(r);
}
