/* SPDX-License-Identifier: MIT */
/*
 * What 0.4 adds to families (issue 24, Missing): constant labels on every
 * child's series, a scale on counter and gauge families' values, and
 * set-style gauge children (PCPU_FAMILY_F_SET_GAUGE) with the overflow,
 * refusals, removal and reclaim of the other kinds; bad descriptors
 * refused with EINVAL; and a body with all of them that prometheus_client's
 * parsers (both formats) accept.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/family.h>
#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>

#include "check_body.h"
#include "helpers.h"
#include "pcpu_test.h"

TestSuite(family_labels, .timeout = 60);

static const char *const method[] = { "method", NULL };
static const char *const route[] = { "route", NULL };
#define TUPLE(...) ((const char *const[]){ __VA_ARGS__, NULL })

static struct pcpu_family *create(const struct pcpu_family_desc *d)
{
	struct pcpu_family *f = pcpu_family_create(d);

	cr_assert_not_null(f, "create %s: %s", d->name, strerror(errno));
	return f;
}

/* Both formats hold @line (OpenMetrics: @om_line when not NULL). */
static void expect_line(const char *line, const char *om_line)
{
	char *prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	char *om = metrics_text(PCPU_METRICS_OPENMETRICS);

	cr_assert(prom && om);
	cr_expect(metrics_has_line(prom, line), "no line %s in:\n%s", line, prom);
	cr_expect(metrics_has_line(om, om_line ? om_line : line), "no line %s in:\n%s",
		  om_line ? om_line : line, om);
	free(prom);
	free(om);
}

/* ---- constant labels ------------------------------------------------------------ */

PCPU_TEST(family_labels, constant_labels_are_on_every_child_sorted_with_its_own)
{
	static const char *const consts[] = { "zone", "eu", "app", "web", NULL };
	static const int64_t bounds[] = { 10 };
	struct pcpu_family *req = create(&(struct pcpu_family_desc){
		.name = "cl_requests", .kind = PCPU_METRIC_COUNTER, .label_names = method,
		.const_labels = consts });
	struct pcpu_family *lat = create(&(struct pcpu_family_desc){
		.name = "cl_latency", .kind = PCPU_METRIC_HISTOGRAM, .label_names = route,
		.bounds = bounds, .nr_bounds = 1, .const_labels = consts });

	pcpu_counter_add(pcpu_family_get(req, TUPLE("GET")), 2);
	pcpu_counter_add(pcpu_family_get(req, TUPLE("PUT")), 3);
	pcpu_histogram_observe(pcpu_family_get_histogram(lat, TUPLE("/")), 5);
	/* sorted by name as a metric desc's labels are: app < method < zone */
	expect_line("cl_requests_total{app=\"web\",method=\"GET\",zone=\"eu\"} 2", NULL);
	expect_line("cl_requests_total{app=\"web\",method=\"PUT\",zone=\"eu\"} 3", NULL);
	expect_line("cl_latency_bucket{app=\"web\",route=\"/\",zone=\"eu\",le=\"10\"} 1", NULL);
	expect_line("cl_latency_count{app=\"web\",route=\"/\",zone=\"eu\"} 1", NULL);
	/* the tuple is still matched on the label values alone */
	cr_expect_eq(pcpu_family_get(req, TUPLE("GET")), pcpu_family_get(req, TUPLE("GET")));
	cr_expect_eq(pcpu_family_count(req), 2);
	pcpu_family_destroy(req);
	pcpu_family_destroy(lat);
}

PCPU_TEST(family_labels, constant_labels_are_copied_and_escaped)
{
	char key[] = "site", value[] = "a\"b\\c\nd";
	const char *consts[] = { key, value, NULL };
	struct pcpu_family *f = create(&(struct pcpu_family_desc){
		.name = "cl_copied", .kind = PCPU_METRIC_GAUGE, .label_names = method,
		.const_labels = consts });

	/* the caller's strings may change or go once create returned */
	strcpy(key, "xxxx");
	strcpy(value, "changed");
	consts[0] = NULL;
	pcpu_counter_add(pcpu_family_get(f, TUPLE("GET")), -4);
	expect_line("cl_copied{method=\"GET\",site=\"a\\\"b\\\\c\\nd\"} -4", NULL);
	pcpu_family_destroy(f);
}

PCPU_TEST(family_labels, bad_constant_labels_are_einval_and_register_nothing)
{
	static const int64_t bounds[] = { 10 };
	char too_long[PCPU_FAMILY_MAX_VALUE_LEN + 2];
	const char *const *bad[] = {
		TUPLE("k", "v", "odd"),           /* an odd list */
		TUPLE("1k", "v"),                 /* a bad name */
		TUPLE("__k", "v"),                /* a reserved name */
		TUPLE("k", "v", "k", "w"),        /* repeated */
		TUPLE("method", "v"),             /* also a label name */
		TUPLE("k", "\xff"),               /* not UTF-8 */
		TUPLE("k", "\xc0\xaf"),           /* overlong */
		TUPLE("k", too_long),             /* too long */
	};
	struct pcpu_family *f;

	memset(too_long, 'x', sizeof(too_long) - 1);
	too_long[sizeof(too_long) - 1] = '\0';
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_expect_null(pcpu_family_create(&(struct pcpu_family_desc){
				       .name = "cl_bad", .kind = PCPU_METRIC_COUNTER,
				       .label_names = method, .const_labels = bad[i] }),
			       "case %zu", i);
		cr_expect_eq(errno, EINVAL, "case %zu: %s", i, strerror(errno));
	}
	errno = 0;
	cr_expect_null(pcpu_family_create(&(struct pcpu_family_desc){
		.name = "cl_bad", .kind = PCPU_METRIC_HISTOGRAM, .label_names = route,
		.bounds = bounds, .nr_bounds = 1, .const_labels = TUPLE("le", "1") }));
	cr_expect_eq(errno, EINVAL, "\"le\" in a histogram family");
	/* a value of exactly the longest length is one */
	too_long[PCPU_FAMILY_MAX_VALUE_LEN] = '\0';
	f = create(&(struct pcpu_family_desc){ .name = "cl_bad", .kind = PCPU_METRIC_COUNTER,
					       .label_names = method,
					       .const_labels = TUPLE("k", too_long) });
	pcpu_family_destroy(f);
}

/* ---- scale ------------------------------------------------------------------------ */

PCPU_TEST(family_labels, a_scale_divides_counter_and_gauge_children_exactly)
{
	struct pcpu_family *cpu = create(&(struct pcpu_family_desc){
		.name = "sc_cpu_seconds", .unit = "seconds", .kind = PCPU_METRIC_COUNTER,
		.label_names = TUPLE("mode"), .scale = 1000000000 });
	struct pcpu_family *temp = create(&(struct pcpu_family_desc){
		.name = "sc_temperature", .kind = PCPU_METRIC_GAUGE,
		.label_names = TUPLE("sensor"), .scale = 1000 });
	struct pcpu_family *set = create(&(struct pcpu_family_desc){
		.name = "sc_ratio", .kind = PCPU_METRIC_GAUGE, .label_names = TUPLE("pool"),
		.scale = 4, .flags = PCPU_FAMILY_F_SET_GAUGE });
	struct pcpu_counter *user = pcpu_family_get(cpu, TUPLE("user"));

	pcpu_counter_add(user, 1500000000);
	expect_line("sc_cpu_seconds_total{mode=\"user\"} 1.5", NULL);
	pcpu_counter_add(user, 1500000000);
	/* an integer multiple has no decimal point */
	expect_line("sc_cpu_seconds_total{mode=\"user\"} 3", NULL);
	pcpu_counter_add(user, 1);
	expect_line("sc_cpu_seconds_total{mode=\"user\"} 3.000000001", NULL);
	pcpu_counter_add(pcpu_family_get(temp, TUPLE("a")), -2500);
	expect_line("sc_temperature{sensor=\"a\"} -2.5", NULL);
	pcpu_gauge_set(pcpu_family_get_gauge(set, TUPLE("db")), 1);
	expect_line("sc_ratio{pool=\"db\"} 0.25", NULL);
	pcpu_family_destroy(cpu);
	pcpu_family_destroy(temp);
	pcpu_family_destroy(set);
}

PCPU_TEST(family_labels, a_negative_scale_is_einval_for_every_kind)
{
	static const int64_t bounds[] = { 10 };
	const enum pcpu_metric_kind kinds[] = { PCPU_METRIC_COUNTER, PCPU_METRIC_GAUGE,
						PCPU_METRIC_HISTOGRAM };

	for (int i = 0; i < 3; i++) {
		errno = 0;
		cr_expect_null(pcpu_family_create(&(struct pcpu_family_desc){
			.name = "sc_neg", .kind = kinds[i], .label_names = route,
			.bounds = bounds, .nr_bounds = 1, .scale = -1000 }));
		cr_expect_eq(errno, EINVAL, "kind %d", kinds[i]);
	}
}

/* ---- set-style gauge children ----------------------------------------------------- */

PCPU_TEST(family_labels, set_gauge_children_are_set_added_and_read_by_tuple)
{
	struct pcpu_family *f = create(&(struct pcpu_family_desc){
		.name = "sg_queue_depth", .kind = PCPU_METRIC_GAUGE, .label_names = TUPLE("queue"),
		.flags = PCPU_FAMILY_F_SET_GAUGE });
	struct pcpu_gauge *in = pcpu_family_get_gauge(f, TUPLE("in"));
	struct pcpu_gauge *out = pcpu_family_get_gauge(f, TUPLE("out"));

	cr_assert(in && out && in != out);
	cr_expect_eq(pcpu_family_get_gauge(f, TUPLE("in")), in, "one child per tuple");
	cr_expect_eq(pcpu_gauge_get(in), 0, "a child is made at 0");
	pcpu_gauge_set(in, 40);
	pcpu_gauge_add(out, -3);
	expect_line("sg_queue_depth{queue=\"in\"} 40", NULL);
	expect_line("sg_queue_depth{queue=\"out\"} -3", NULL);
	/* set, not added: the exposition follows it down */
	pcpu_gauge_set(in, 7);
	cr_expect_eq(pcpu_gauge_add(in, 1), 8);
	expect_line("sg_queue_depth{queue=\"in\"} 8", NULL);
	cr_expect_eq(pcpu_family_count(f), 2);
	pcpu_family_destroy(f);
}

PCPU_TEST(family_labels, set_gauge_flag_and_getters_of_the_wrong_kind_are_einval)
{
	static const int64_t bounds[] = { 10 };
	static const struct pcpu_counter_options opts = { .accuracy = 4 };
	const struct pcpu_family_desc bad[] = {
		{ .name = "sg_bad", .kind = PCPU_METRIC_COUNTER, .label_names = route,
		  .flags = PCPU_FAMILY_F_SET_GAUGE },
		{ .name = "sg_bad", .kind = PCPU_METRIC_HISTOGRAM, .label_names = route,
		  .bounds = bounds, .nr_bounds = 1, .flags = PCPU_FAMILY_F_SET_GAUGE },
		{ .name = "sg_bad", .kind = PCPU_METRIC_GAUGE, .label_names = route,
		  .opts = &opts, .flags = PCPU_FAMILY_F_SET_GAUGE },
		{ .name = "sg_bad", .kind = PCPU_METRIC_GAUGE, .label_names = route, .flags = 2 },
	};
	struct pcpu_family *set, *counter, *hist;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_expect_null(pcpu_family_create(&bad[i]), "case %zu", i);
		cr_expect_eq(errno, EINVAL, "case %zu: %s", i, strerror(errno));
	}
	set = create(&(struct pcpu_family_desc){ .name = "sg_set", .kind = PCPU_METRIC_GAUGE,
						 .label_names = route,
						 .flags = PCPU_FAMILY_F_SET_GAUGE });
	counter = create(&(struct pcpu_family_desc){ .name = "sg_counter",
						     .kind = PCPU_METRIC_GAUGE,
						     .label_names = route });
	hist = create(&(struct pcpu_family_desc){ .name = "sg_hist",
						  .kind = PCPU_METRIC_HISTOGRAM,
						  .label_names = route, .bounds = bounds,
						  .nr_bounds = 1 });
	errno = 0;
	cr_expect_null(pcpu_family_get(set, TUPLE("/")));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_get_histogram(set, TUPLE("/")));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_get_gauge(counter, TUPLE("/")));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_get_gauge(hist, TUPLE("/")));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_get_gauge(NULL, TUPLE("/")));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_get_gauge(set, NULL));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_get_gauge(set, TUPLE("/", "extra")));
	cr_expect_eq(errno, EINVAL);
	cr_expect_eq(pcpu_family_count(set), 0, "no get of the wrong kind made a child");
	cr_expect_eq(pcpu_family_count(counter), 0);
	pcpu_family_destroy(set);
	pcpu_family_destroy(counter);
	pcpu_family_destroy(hist);
}

PCPU_TEST(family_labels, set_gauge_children_overflow_refuse_remove_and_reclaim_as_others)
{
	struct pcpu_family *f = create(&(struct pcpu_family_desc){
		.name = "sg_conns", .kind = PCPU_METRIC_GAUGE, .label_names = TUPLE("peer"),
		.max_children = 2, .flags = PCPU_FAMILY_F_SET_GAUGE });
	struct pcpu_family *counters = create(&(struct pcpu_family_desc){
		.name = "sg_conns_counted", .kind = PCPU_METRIC_GAUGE,
		.label_names = TUPLE("peer") });
	struct pcpu_gauge *a, *b, *other;

	cr_assert_eq(pcpu_family_set_overflow(f, TUPLE("other")), 0);
	a = pcpu_family_get_gauge(f, TUPLE("a"));
	b = pcpu_family_get_gauge(f, TUPLE("b"));
	cr_assert(a && b);
	errno = 0;
	other = pcpu_family_get_gauge(f, TUPLE("c"));
	cr_expect_eq(errno, E2BIG);
	cr_assert_not_null(other, "the overflow child, not NULL");
	errno = 0;
	cr_expect_eq(pcpu_family_get_gauge(f, TUPLE("a", "extra")), other);
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_eq(pcpu_family_get_gauge(f, TUPLE("\xff")), other);
	cr_expect_eq(errno, E2BIG, "at the cap, before the values are checked");
	cr_expect_eq(pcpu_family_refused(f), 3);
	pcpu_gauge_set(other, 9);
	pcpu_gauge_set(a, 5);
	expect_line("sg_conns{peer=\"other\"} 9", NULL);
	expect_line("percpu_family_refused_total{family=\"sg_conns\"} 3", NULL);
	cr_expect_eq(pcpu_family_remove(f, TUPLE("other")), -EBUSY);
	cr_expect_eq(pcpu_family_remove(f, TUPLE("a")), 0);
	cr_expect_eq(pcpu_family_remove(f, TUPLE("a")), -ENOENT);
	{
		char *prom = metrics_text(PCPU_METRICS_PROMETHEUS);

		cr_assert_not_null(prom);
		cr_expect_null(strstr(prom, "peer=\"a\""), "a removed child is not exposed");
		free(prom);
	}
	/* a kept pointer stays valid until reclaim; a new get starts at 0 */
	pcpu_gauge_set(a, 6);
	cr_assert_not_null(pcpu_family_get_gauge(f, TUPLE("a")));
	cr_expect_eq(pcpu_gauge_get(pcpu_family_get_gauge(f, TUPLE("a"))), 0);
	pcpu_family_reclaim(f);
	cr_expect_eq(pcpu_family_count(f), 3);
	/* one atomic word on the heap: less than a per-CPU counter child */
	cr_expect_gt(pcpu_family_child_size(f, 4), 0);
	cr_expect_lt(pcpu_family_child_size(f, 4), pcpu_family_child_size(counters, 4));
	pcpu_family_destroy(f);
	pcpu_family_destroy(counters);
}

/* ---- the parsers ------------------------------------------------------------------ */

PCPU_TEST(family_labels, parsers_accept_constant_labels_scaled_values_and_set_gauges)
{
	static const char *const consts[] = { "instance", "a\"b\\c\nd", "job", "web", NULL };
	static const int64_t bounds[] = { 1000000, 1000000000 };
	struct pcpu_family *cpu = create(&(struct pcpu_family_desc){
		.name = "pp_cpu_seconds", .help = "CPU time.", .unit = "seconds",
		.kind = PCPU_METRIC_COUNTER, .label_names = TUPLE("mode"), .scale = 1000000000,
		.const_labels = consts });
	struct pcpu_family *depth = create(&(struct pcpu_family_desc){
		.name = "pp_queue_depth", .help = "Jobs.", .kind = PCPU_METRIC_GAUGE,
		.label_names = TUPLE("queue"), .const_labels = consts,
		.flags = PCPU_FAMILY_F_SET_GAUGE, .max_children = 1 });
	struct pcpu_family *lat = create(&(struct pcpu_family_desc){
		.name = "pp_latency_seconds", .help = "Latency.", .unit = "seconds",
		.kind = PCPU_METRIC_HISTOGRAM, .label_names = TUPLE("route"), .bounds = bounds,
		.nr_bounds = 2, .scale = 1000000000, .const_labels = consts });
	struct pcpu_counter busy;
	struct pcpu_gauge temp = PCPU_GAUGE_INIT(-1250);
	char *prom, *om;

	cr_assert_eq(pcpu_counter_init(&busy, 0), 0);
	cr_assert_eq(pcpu_counter_register(&busy, &(struct pcpu_metric_desc){
		.name = "pp_busy_seconds", .help = "Busy.", .unit = "seconds",
		.kind = PCPU_METRIC_COUNTER, .labels = TUPLE("core", "0"), .scale = 1000000000 }),
		0);
	cr_assert_eq(pcpu_gauge_register(&temp, &(struct pcpu_metric_desc){
		.name = "pp_temperature_celsius", .help = "T.", .unit = "celsius",
		.kind = PCPU_METRIC_GAUGE, .scale = 1000 }), 0);
	pcpu_counter_add(&busy, 2500000000);
	pcpu_counter_add(pcpu_family_get(cpu, TUPLE("user")), 1500000000);
	pcpu_counter_add(pcpu_family_get(cpu, TUPLE("system")), 3000000000);
	pcpu_gauge_set(pcpu_family_get_gauge(depth, TUPLE("in")), 12);
	/* at the cap: NULL, and a refusals series in the body */
	cr_expect_null(pcpu_family_get_gauge(depth, TUPLE("refused")));
	pcpu_histogram_observe(pcpu_family_get_histogram(lat, TUPLE("/")), 1500000);
	prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert(prom && om);
	cr_expect(metrics_has_line(prom, "pp_busy_seconds_total{core=\"0\"} 2.5"), "%s", prom);
	cr_expect(metrics_has_line(prom, "pp_temperature_celsius -1.25"), "%s", prom);
	cr_expect(metrics_has_line(om, "pp_cpu_seconds_total{instance=\"a\\\"b\\\\c\\nd\","
				       "job=\"web\",mode=\"user\"} 1.5"), "%s", om);
	cr_expect(metrics_has_line(om, "pp_cpu_seconds_total{instance=\"a\\\"b\\\\c\\nd\","
				       "job=\"web\",mode=\"system\"} 3"), "%s", om);
	cr_expect(metrics_has_line(om, "pp_queue_depth{instance=\"a\\\"b\\\\c\\nd\","
				       "job=\"web\",queue=\"in\"} 12"), "%s", om);
	assert_parsers_accept(prom, om);
	free(prom);
	free(om);
	pcpu_family_destroy(cpu);
	pcpu_family_destroy(depth);
	pcpu_family_destroy(lat);
	pcpu_gauge_unregister(&temp);
	pcpu_counter_destroy(&busy);
}
