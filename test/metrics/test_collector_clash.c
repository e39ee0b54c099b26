/* SPDX-License-Identifier: MIT */
/*
 * What a collector emits can never make the exposition invalid (issue 24,
 * defect 2): a registered family's name, a family that meets one, a family
 * written again after another, a series written twice, a kind that changes
 * inside a family: emit() refuses each with an errno, counts it, and the
 * body stays what a real parser (prometheus_client's, both formats)
 * accepts.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/metrics.h>

#include "check_body.h"
#include "helpers.h"
#include "pcpu_test.h"

TestSuite(collector_clash, .timeout = 60);

#define NR_EMITS 7

static int got[NR_EMITS + 1];

static int gauge(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx,
		 const char *name, enum pcpu_metric_kind kind, const char *q, int64_t v)
{
	const char *const labels[] = { "q", q, NULL };
	struct pcpu_metric_sample s = { .name = name, .help = "Help.", .unit = "", .kind = kind,
					.labels = q ? labels : NULL, .value = v, .scale = 1 };

	return emit(&s, ctx);
}

/* Every emit but two is refused; the collector goes on regardless. */
static int clasher(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx, void *arg)
{
	(void)arg;
	got[0] = gauge(emit, ctx, "clash_requests", PCPU_METRIC_COUNTER, NULL, 99);
	got[1] = gauge(emit, ctx, "clash_requests_total", PCPU_METRIC_GAUGE, NULL, 98);
	got[2] = gauge(emit, ctx, "clash_depth", PCPU_METRIC_GAUGE, "a", 1);
	got[3] = gauge(emit, ctx, "clash_depth", PCPU_METRIC_GAUGE, "a", 2);
	got[4] = gauge(emit, ctx, "clash_depth", PCPU_METRIC_COUNTER, "b", 3);
	got[5] = gauge(emit, ctx, "clash_other", PCPU_METRIC_GAUGE, NULL, 4);
	got[6] = gauge(emit, ctx, "clash_depth", PCPU_METRIC_GAUGE, "c", 5);
	return 0;
}

/* Another collector writing a family the first one wrote. */
static int again(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx, void *arg)
{
	(void)arg;
	got[NR_EMITS] = gauge(emit, ctx, "clash_depth", PCPU_METRIC_GAUGE, "z", 6);
	return 0;
}

static int count_lines(const char *text, const char *line)
{
	int n = 0;
	size_t len = strlen(line);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, line, len) == 0 && (p[len] == '\n' || p[len] == '\0'))
			n++;
	return n;
}

PCPU_TEST(collector_clash, clashing_samples_are_refused_counted_and_the_body_stays_valid)
{
	static const int want[NR_EMITS + 1] = { -EEXIST, -EEXIST, 0, -EEXIST, -EINVAL, 0,
						-EEXIST, -EEXIST };
	struct pcpu_counter c;
	struct pcpu_metric_desc d = { .name = "clash_requests", .help = "Requests.",
				      .kind = PCPU_METRIC_COUNTER };
	uint64_t before = pcpu_metrics_collector_refused();
	char *prom, *om;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(pcpu_counter_register(&c, &d), 0);
	pcpu_counter_add(&c, 5);
	cr_assert_eq(pcpu_metrics_collector_add(clasher, NULL), 0);
	cr_assert_eq(pcpu_metrics_collector_add(again, NULL), 0);
	prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(prom);
	for (int i = 0; i <= NR_EMITS; i++)
		cr_expect_eq(got[i], want[i], "emit %d returned %d, want %d", i, got[i], want[i]);
	cr_expect_eq(pcpu_metrics_collector_refused() - before, 6, "refusals counted: %llu",
		     (unsigned long long)(pcpu_metrics_collector_refused() - before));
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(om);
	cr_expect_eq(pcpu_metrics_collector_refused() - before, 12, "counted at every scrape");
	cr_expect_eq(count_lines(prom, "# TYPE clash_requests_total counter"), 1, "%s", prom);
	cr_expect(metrics_has_line(prom, "clash_requests_total 5"), "%s", prom);
	cr_expect(metrics_has_line(prom, "clash_depth{q=\"a\"} 1"), "%s", prom);
	cr_expect(metrics_has_line(prom, "clash_other 4"), "%s", prom);
	cr_expect_eq(count_lines(prom, "# TYPE clash_depth gauge"), 1, "%s", prom);
	cr_expect_null(strstr(prom, "99"), "the registered name's rival was written:\n%s", prom);
	assert_parsers_accept(prom, om);
	cr_assert_eq(pcpu_metrics_collector_remove(again, NULL), 0);
	cr_assert_eq(pcpu_metrics_collector_remove(clasher, NULL), 0);
	pcpu_counter_destroy(&c);
	free(prom);
	free(om);
}

/* A collector that emits unsorted histogram bounds or a help not UTF-8. */
static int malformed(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx,
		     void *arg)
{
	static const int64_t bounds[] = { 10, 5 };
	static const uint64_t buckets[] = { 1, 1, 1 };
	struct pcpu_metric_sample h = { .name = "clash_latency", .help = "", .unit = "",
					.kind = PCPU_METRIC_HISTOGRAM, .nr_bounds = 2,
					.bounds = bounds, .buckets = buckets, .count = 3,
					.scale = 1 };
	struct pcpu_metric_sample g = { .name = "clash_help", .help = "bad \xff help",
					.unit = "", .kind = PCPU_METRIC_GAUGE, .scale = 1 };
	int *errs = arg;

	errs[0] = emit(&h, ctx);
	errs[1] = emit(&g, ctx);
	return 0;
}

PCPU_TEST(collector_clash, unsorted_bounds_and_help_not_utf8_are_refused)
{
	int errs[2] = { 1, 1 };
	char *prom, *om;

	cr_assert_eq(pcpu_metrics_collector_add(malformed, errs), 0);
	prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(prom);
	cr_assert_not_null(om);
	cr_expect_eq(errs[0], -EINVAL);
	cr_expect_eq(errs[1], -EINVAL);
	cr_expect_null(strstr(prom, "clash_"), "%s", prom);
	assert_parsers_accept(prom, om);
	cr_assert_eq(pcpu_metrics_collector_remove(malformed, errs), 0);
	free(prom);
	free(om);
}
