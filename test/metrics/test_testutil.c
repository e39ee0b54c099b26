/* SPDX-License-Identifier: MIT */
/*
 * The testing helpers of <percpu/metrics_testutil.h> (0.5): each test
 * makes a real difference and checks that the call reports that one and
 * nothing else, so a compare that always agreed, a value that read the
 * wrong series or a lint that found nothing would fail here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/family.h>
#include <percpu/metrics_registry.h>
#include <percpu/metrics_testutil.h>

#include "pcpu_test.h"

static struct pcpu_metrics_registry *reg;
static struct pcpu_family *requests, *depth;
static struct pcpu_counter *get_child, *post_child;

static const char *const method[] = { "method", NULL };

static struct pcpu_family *family(const char *name, const char *help, enum pcpu_metric_kind kind,
				  const char *const *labels)
{
	struct pcpu_family *f = pcpu_family_create(&(struct pcpu_family_desc){
		.name = name, .help = help, .kind = kind, .label_names = labels,
		.registry = reg });

	cr_assert_not_null(f, "create %s: %s", name, strerror(errno));
	return f;
}

static void setup(void)
{
	reg = pcpu_metrics_registry_create(NULL);
	cr_assert_not_null(reg);
	requests = family("tu_requests", "Requests.", PCPU_METRIC_COUNTER, method);
	depth = family("tu_depth", "Queue depth.", PCPU_METRIC_GAUGE, method);
	get_child = pcpu_family_get(requests, (const char *const[]){ "GET", NULL });
	post_child = pcpu_family_get(requests, (const char *const[]){ "POST", NULL });
	pcpu_counter_add(get_child, 3);
	pcpu_counter_add(post_child, 1);
	pcpu_counter_add(pcpu_family_get(depth, (const char *const[]){ "GET", NULL }), 5);
}

static void teardown(void)
{
	pcpu_family_destroy(requests);
	pcpu_family_destroy(depth);
	cr_assert_eq(pcpu_metrics_registry_destroy(reg), 0);
}

/* pcpu_metrics_compare() of @expected, its diff into @buf. */
static int compare(const char *const *names, const char *expected, char *buf, size_t size)
{
	FILE *diff = fmemopen(buf, size, "w");
	int n;

	cr_assert_not_null(diff);
	n = pcpu_metrics_compare(reg, names, expected, diff);
	fclose(diff);
	return n;
}

static const char *const only_requests[] = { "tu_requests_total", NULL };

TestSuite(testutil, .init = setup, .fini = teardown);

Test(testutil, compare_ignores_order_help_and_comments)
{
	char buf[1024] = "";

	/* reversed, other help text, a comment, blank lines, a timestamp */
	cr_assert_eq(compare(only_requests,
			     "# a comment\n"
			     "tu_requests_total{method=\"POST\"} 1 1700000000000\n"
			     "\n"
			     "# HELP tu_requests_total Not the same help.\n"
			     "# TYPE tu_requests_total counter\n"
			     "tu_requests_total { method = \"GET\" } 3\n",
			     buf, sizeof(buf)),
		     0, "diff:\n%s", buf);
	cr_assert_str_empty(buf);
}

Test(testutil, compare_reports_a_different_value)
{
	char buf[1024] = "";

	cr_assert_eq(compare(only_requests,
			     "tu_requests_total{method=\"GET\"} 4\n"
			     "tu_requests_total{method=\"POST\"} 1\n",
			     buf, sizeof(buf)),
		     1, "diff:\n%s", buf);
	cr_assert_str_eq(buf, "different: tu_requests_total{method=\"GET\"}: expected 4, got 3\n");
	/* and agrees once the instrumentation did what the test expects */
	pcpu_counter_add(get_child, 1);
	cr_assert_eq(compare(only_requests,
			     "tu_requests_total{method=\"GET\"} 4\n"
			     "tu_requests_total{method=\"POST\"} 1\n",
			     buf, sizeof(buf)),
		     0, "diff:\n%s", buf);
}

Test(testutil, compare_reports_missing_and_unexpected_series)
{
	char buf[1024] = "";

	cr_assert_eq(compare(only_requests,
			     "tu_requests_total{method=\"GET\"} 3\n"
			     "tu_requests_total{method=\"PUT\"} 2\n",
			     buf, sizeof(buf)),
		     2, "diff:\n%s", buf);
	/* by series: POST before PUT */
	cr_assert_str_eq(buf, "unexpected: tu_requests_total{method=\"POST\"} 1\n"
			      "missing: tu_requests_total{method=\"PUT\"} 2\n");
}

Test(testutil, compare_reports_a_type)
{
	char buf[1024] = "";

	cr_assert_eq(compare(only_requests,
			     "# TYPE tu_requests_total gauge\n"
			     "tu_requests_total{method=\"GET\"} 3\n"
			     "tu_requests_total{method=\"POST\"} 1\n",
			     buf, sizeof(buf)),
		     1, "diff:\n%s", buf);
	cr_assert_str_eq(buf, "type: tu_requests_total: expected gauge, got counter\n");
}

Test(testutil, compare_selects_families_by_name)
{
	static const char *const both[] = { "tu_requests_total", "tu_depth", NULL };
	const char *expected = "tu_requests_total{method=\"GET\"} 3\n"
			       "tu_requests_total{method=\"POST\"} 1\n";
	char buf[1024] = "";

	cr_assert_eq(compare(NULL, expected, buf, sizeof(buf)), 1, "diff:\n%s", buf);
	cr_assert_str_eq(buf, "unexpected: tu_depth{method=\"GET\"} 5\n");
	cr_assert_eq(compare(both, expected, buf, sizeof(buf)), 1, "diff:\n%s", buf);
	cr_assert_eq(compare((const char *const[]){ "tu_depth", NULL }, expected, buf, sizeof(buf)),
		     3, "diff:\n%s", buf);
}

Test(testutil, compare_refuses_bad_text)
{
	char buf[1024] = "";

	cr_assert_eq(compare(NULL, "tu_requests_total 1\ntu_requests_total{method=GET} 3\n", buf,
			     sizeof(buf)),
		     -EINVAL);
	cr_assert_str_eq(buf, "expected:2: cannot parse\n");
	cr_assert_eq(compare(NULL, "tu_requests_total{method=\"GET\"}\n", buf, sizeof(buf)),
		     -EINVAL);
	cr_assert_eq(compare(NULL, "tu_x{a=\"1\",a=\"2\"} 1\n", buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(pcpu_metrics_compare(reg, NULL, NULL, NULL), -EINVAL);
}

Test(testutil, compare_labels_as_sets_with_escapes)
{
	static const char *const ab[] = { "b", "a", NULL };
	struct pcpu_family *f = family("tu_escaped", "E.", PCPU_METRIC_GAUGE, ab);
	char buf[1024] = "";

	pcpu_counter_add(pcpu_family_get(f, (const char *const[]){ "q\"\\\n", "x", NULL }), 2);
	cr_assert_eq(compare((const char *const[]){ "tu_escaped", NULL },
			     "tu_escaped{b=\"q\\\"\\\\\\n\",a=\"x\"} 2\n", buf, sizeof(buf)),
		     0, "diff:\n%s", buf);
	cr_assert_eq(compare((const char *const[]){ "tu_escaped", NULL },
			     "tu_escaped{b=\"q\\\"\\\\\",a=\"x\"} 2\n", buf, sizeof(buf)),
		     2, "a value without its newline is another series:\n%s", buf);
	pcpu_family_destroy(f);
}

Test(testutil, value_reads_one_series)
{
	double v = -1;

	cr_assert_eq(pcpu_metrics_value(reg, "tu_requests_total",
					(const char *const[]){ "method", "GET", NULL }, &v), 0);
	cr_assert_eq(v, (double)pcpu_counter_sum(get_child));
	pcpu_counter_add(get_child, 10);
	cr_assert_eq(pcpu_metrics_value(reg, "tu_requests_total",
					(const char *const[]){ "method", "GET", NULL }, &v), 0);
	cr_assert_eq(v, (double)pcpu_counter_sum(get_child));
	cr_assert_eq(pcpu_metrics_value(reg, "tu_requests_total",
					(const char *const[]){ "method", "POST", NULL }, &v), 0);
	cr_assert_eq(v, (double)pcpu_counter_sum(post_child));
	cr_assert_eq(pcpu_metrics_value(reg, "tu_depth", NULL, &v), 0, "one series: no labels needed");
	cr_assert_eq(v, 5);
}

Test(testutil, value_refuses_none_and_several)
{
	double v = 42;

	cr_assert_eq(pcpu_metrics_value(reg, "tu_requests_total", NULL, &v), -EEXIST);
	cr_assert_eq(pcpu_metrics_value(reg, "tu_requests_total",
					(const char *const[]){ "method", "PUT", NULL }, &v),
		     -ENOENT);
	cr_assert_eq(pcpu_metrics_value(reg, "tu_requests", NULL, &v), -ENOENT,
		     "the family's name is not a series'");
	cr_assert_eq(pcpu_metrics_value(reg, "tu_requests_total",
					(const char *const[]){ "method", NULL }, &v),
		     -EINVAL);
	cr_assert_eq(pcpu_metrics_value(reg, NULL, NULL, &v), -EINVAL);
	cr_assert_eq(v, 42, "untouched on failure");
}

Test(testutil, value_of_a_histogram)
{
	static const int64_t bounds[] = { 1000, 10000 };
	struct pcpu_family *f = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "tu_latency_seconds", .help = "L.", .unit = "seconds",
		.kind = PCPU_METRIC_HISTOGRAM, .label_names = method, .bounds = bounds,
		.nr_bounds = 2, .scale = 1000000, .registry = reg });
	struct pcpu_histogram *h;
	double v;

	cr_assert_not_null(f);
	h = pcpu_family_get_histogram(f, (const char *const[]){ "GET", NULL });
	pcpu_histogram_observe(h, 500);
	pcpu_histogram_observe(h, 5000);
	pcpu_histogram_observe(h, 50000);
	cr_assert_eq(pcpu_metrics_value(reg, "tu_latency_seconds_count", NULL, &v), 0);
	cr_assert_eq(v, 3);
	cr_assert_eq(pcpu_metrics_value(reg, "tu_latency_seconds_bucket",
					(const char *const[]){ "le", "0.01", NULL }, &v), 0);
	cr_assert_eq(v, 2);
	cr_assert_eq(pcpu_metrics_value(reg, "tu_latency_seconds_sum", NULL, &v), 0);
	cr_assert_float_eq(v, 0.0555, 1e-12);
	pcpu_family_destroy(f);
}

/* The lint's report for family @name alone (into @buf); the number of problems. */
static int lint(const char *name, char *buf, size_t size)
{
	FILE *report = fmemopen(buf, size, "w");
	int n;

	cr_assert_not_null(report);
	n = pcpu_metrics_lint(reg, (const char *const[]){ name, NULL }, report);
	fclose(report);
	return n;
}

Test(testutil, lint_passes_good_names)
{
	char buf[1024] = "";

	cr_assert_eq(lint("tu_requests_total", buf, sizeof(buf)), 0, "%s", buf);
	cr_assert_eq(lint("tu_depth", buf, sizeof(buf)), 0, "%s", buf);
	cr_assert_str_empty(buf);
}

Test(testutil, lint_finds_each_problem)
{
	static const struct {
		const char *name, *exposed, *help, *label, *problem;
		enum pcpu_metric_kind kind;
	} cases[] = {
		{ "tu_nohelp", "tu_nohelp", NULL, "method", "no help text", PCPU_METRIC_GAUGE },
		{ "tu_queueLength", "tu_queueLength", "h", "method", "camelCase",
		  PCPU_METRIC_GAUGE },
		{ "tu_camel_labels", "tu_camel_labels", "h", "httpMethod",
		  "label names should be written in snake_case", PCPU_METRIC_GAUGE },
		{ "tu:rule", "tu:rule", "h", "method", "':'", PCPU_METRIC_GAUGE },
		{ "tu_errors_total", "tu_errors_total", "h", "method",
		  "non-counter metrics should not have a \"_total\" suffix", PCPU_METRIC_GAUGE },
		{ "tu_items_count", "tu_items_count", "h", "method", "\"_count\" suffix",
		  PCPU_METRIC_GAUGE },
		{ "tu_le", "tu_le", "h", "le", "\"le\" label", PCPU_METRIC_GAUGE },
		{ "tu_quantile", "tu_quantile", "h", "quantile", "\"quantile\" label",
		  PCPU_METRIC_GAUGE },
		{ "tu_depth_gauge", "tu_depth_gauge", "h", "method", "type (\"gauge\")",
		  PCPU_METRIC_GAUGE },
		{ "tu_hits_counter", "tu_hits_counter_total", "h", "method", "type (\"counter\")",
		  PCPU_METRIC_COUNTER },
		{ "tu_wait_ms", "tu_wait_ms", "h", "method", "abbreviated unit \"ms\"",
		  PCPU_METRIC_GAUGE },
		{ "tu_wait_milliseconds", "tu_wait_milliseconds", "h", "method",
		  "use base unit \"seconds\" instead of \"milliseconds\"", PCPU_METRIC_GAUGE },
		{ "tu_heap_kilobytes", "tu_heap_kilobytes", "h", "method",
		  "use base unit \"bytes\" instead of \"kilobytes\"", PCPU_METRIC_GAUGE },
		{ "tu_uptime_hours", "tu_uptime_hours", "h", "method",
		  "use base unit \"seconds\" instead of \"hours\"", PCPU_METRIC_GAUGE },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pcpu_family *f = family(cases[i].name, cases[i].help, cases[i].kind,
					       (const char *const[]){ cases[i].label, NULL });
		char buf[1024] = "", want[256];

		pcpu_counter_add(pcpu_family_get(f, (const char *const[]){ "1", NULL }), 1);
		cr_assert_eq(lint(cases[i].exposed, buf, sizeof(buf)), 1, "%s:\n%s",
			     cases[i].name, buf);
		snprintf(want, sizeof(want), "%s: ", cases[i].exposed);
		cr_assert_eq(strncmp(buf, want, strlen(want)), 0, "%s", buf);
		cr_assert_not_null(strstr(buf, cases[i].problem), "%s: %s", cases[i].name, buf);
		pcpu_family_destroy(f);
	}
}

Test(testutil, lint_counts_every_family)
{
	struct pcpu_family *f = family("tu_bad_ms", NULL, PCPU_METRIC_GAUGE, method);
	char buf[1024] = "";
	FILE *report = fmemopen(buf, sizeof(buf), "w");

	pcpu_counter_add(pcpu_family_get(f, (const char *const[]){ "1", NULL }), 1);
	/* the two good families and this one: two problems, both of it */
	cr_assert_eq(pcpu_metrics_lint(reg, NULL, report), 2);
	fclose(report);
	cr_assert_not_null(strstr(buf, "tu_bad_ms: no help text\n"), "%s", buf);
	cr_assert_not_null(strstr(buf, "tu_bad_ms: abbreviated unit"), "%s", buf);
	pcpu_family_destroy(f);
}
