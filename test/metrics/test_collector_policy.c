/* SPDX-License-Identifier: MIT */
/*
 * Collector failure policy (issue 24, "Missing"): a collector added with
 * PCPU_METRICS_COLLECTOR_F_CONTINUE that fails costs the scrape its own
 * later samples only: the body (pcpu_metrics_write(), pcpu_metrics_respond())
 * holds the other collectors' samples and what it emitted before failing,
 * stays valid for prometheus_client's parsers, and the failure is counted
 * once per run. Added with flags 0, a failing collector still fails the
 * exposition. An output that stopped stops the walk whatever the flags.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/metrics.h>
#include <percpu/metrics_http.h>

#include "check_body.h"
#include "helpers.h"
#include "pcpu_test.h"

TestSuite(collector_policy, .timeout = 60);

static int gauge(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx,
		 const char *name, const char *q, int64_t v)
{
	const char *const labels[] = { "q", q, NULL };
	struct pcpu_metric_sample s = { .name = name, .help = "Help.", .unit = "",
					.kind = PCPU_METRIC_GAUGE, .labels = q ? labels : NULL,
					.value = v, .scale = 1 };

	return emit(&s, ctx);
}

static int first(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx, void *arg)
{
	(void)arg;
	return gauge(emit, ctx, "policy_first", NULL, 11);
}

static int last(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx, void *arg)
{
	(void)arg;
	return gauge(emit, ctx, "policy_last", NULL, 33);
}

/* Runs of midway(). */
static int midway_runs;

/*
 * Fails midway through its second family: a whole family, a histogram,
 * one series of the next family, then -EIO where a sample would follow.
 */
static int midway(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx, void *arg)
{
	static const int64_t bounds[] = { 10, 100 };
	static const uint64_t buckets[] = { 1, 2, 3 };
	struct pcpu_metric_sample h = { .name = "policy_latency", .help = "", .unit = "",
					.kind = PCPU_METRIC_HISTOGRAM, .nr_bounds = 2,
					.bounds = bounds, .buckets = buckets, .count = 6,
					.sum = 300, .scale = 1 };
	int err;

	(void)arg;
	midway_runs++;
	err = gauge(emit, ctx, "policy_done", "a", 1);
	if (!err)
		err = gauge(emit, ctx, "policy_done", "b", 2);
	if (!err)
		err = emit(&h, ctx);
	if (!err)
		err = gauge(emit, ctx, "policy_partial", "a", 3);
	if (err)
		return err;
	return -EIO; /* before policy_partial{q="b"} */
}

static int count_prefix(const char *text, const char *prefix)
{
	int n = 0;
	size_t len = strlen(prefix);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, prefix, len) == 0)
			n++;
	return n;
}

/* What a failing midway() leaves in a body, in either format. */
static void assert_midway_body(const char *text)
{
	cr_expect(metrics_has_line(text, "policy_first 11"), "%s", text);
	cr_expect(metrics_has_line(text, "policy_last 33"), "%s", text);
	cr_expect(metrics_has_line(text, "policy_done{q=\"a\"} 1"), "%s", text);
	cr_expect(metrics_has_line(text, "policy_done{q=\"b\"} 2"), "%s", text);
	cr_expect(metrics_has_line(text, "policy_latency_bucket{le=\"+Inf\"} 6"), "%s", text);
	cr_expect(metrics_has_line(text, "policy_latency_count 6"), "%s", text);
	cr_expect(metrics_has_line(text, "policy_partial{q=\"a\"} 3"), "%s", text);
	/* first 1, done 2, latency 3 buckets + sum + count, partial 1, last 1 */
	cr_expect_eq(count_prefix(text, "policy_"), 1 + 2 + 5 + 1 + 1, "%s", text);
	/* opt-in: no collector of the failures was added */
	cr_expect_null(strstr(text, "percpu_collector_"), "%s", text);
}

PCPU_TEST(collector_policy, continue_keeps_the_good_samples_and_what_failed_emitted_before)
{
	uint64_t before = pcpu_metrics_collector_failed();
	int runs = midway_runs;
	struct pcpu_metrics_response res;
	char *prom, *om;

	cr_assert_eq(pcpu_metrics_collector_add(first, NULL), 0);
	cr_assert_eq(pcpu_metrics_collector_add_flags(midway, NULL,
						      PCPU_METRICS_COLLECTOR_F_CONTINUE), 0);
	cr_assert_eq(pcpu_metrics_collector_add(last, NULL), 0);

	prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(prom, "a CONTINUE collector's failure failed the exposition");
	cr_expect_eq(pcpu_metrics_collector_failed() - before, 1);
	assert_midway_body(prom);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(om);
	cr_expect_eq(pcpu_metrics_collector_failed() - before, 2, "one per failing run");
	assert_midway_body(om);
	cr_expect_eq(strcmp(om + strlen(om) - 6, "# EOF\n"), 0, "%s", om);

	cr_assert_eq(pcpu_metrics_respond(NULL, NULL, &res), 0, "the server would answer 500");
	cr_assert_not_null(res.body);
	char *body = strndup(res.body, res.length);

	cr_assert_not_null(body);
	assert_midway_body(body);
	cr_expect_eq(pcpu_metrics_collector_failed() - before, 3);
	cr_expect_eq(midway_runs - runs, 3);
	pcpu_metrics_response_free(&res);
	free(body);

	assert_parsers_accept(prom, om);
	cr_assert_eq(pcpu_metrics_collector_remove(last, NULL), 0);
	cr_assert_eq(pcpu_metrics_collector_remove(midway, NULL), 0);
	cr_assert_eq(pcpu_metrics_collector_remove(first, NULL), 0);
	free(prom);
	free(om);
}

PCPU_TEST(collector_policy, without_continue_a_failing_collector_still_fails_the_exposition)
{
	uint64_t before = pcpu_metrics_collector_failed();
	struct pcpu_metrics_response res;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	cr_assert_eq(pcpu_metrics_collector_add(first, NULL), 0);
	cr_assert_eq(pcpu_metrics_collector_add_flags(midway, NULL, 0), 0);
	cr_assert_eq(pcpu_metrics_collector_add(last, NULL), 0);
	out = open_memstream(&buf, &len);
	cr_assert_not_null(out);
	cr_expect_eq(pcpu_metrics_write(out, PCPU_METRICS_OPENMETRICS), -EIO);
	fclose(out);
	cr_expect_eq(len, 0, "a failed exposition wrote %zu bytes", len);
	cr_expect_eq(pcpu_metrics_respond(NULL, NULL, &res), -EIO);
	cr_expect_null(res.body);
	cr_expect_eq(pcpu_metrics_collector_failed() - before, 2, "counted under flags 0 too");
	cr_assert_eq(pcpu_metrics_collector_remove(last, NULL), 0);
	cr_assert_eq(pcpu_metrics_collector_remove(midway, NULL), 0);
	cr_assert_eq(pcpu_metrics_collector_remove(first, NULL), 0);
	free(buf);
}

PCPU_TEST(collector_policy, bad_flags_and_a_second_add_are_refused)
{
	cr_expect_eq(pcpu_metrics_collector_add_flags(first, NULL, 2), -EINVAL);
	cr_expect_eq(pcpu_metrics_collector_add_flags(first, NULL, ~0u), -EINVAL);
	cr_expect_eq(pcpu_metrics_collector_add_flags(NULL, NULL,
						      PCPU_METRICS_COLLECTOR_F_CONTINUE), -EINVAL);
	cr_expect_eq(pcpu_metrics_collector_remove(first, NULL), -ENOENT, "a refused add added");
	cr_assert_eq(pcpu_metrics_collector_add_flags(first, NULL,
						      PCPU_METRICS_COLLECTOR_F_CONTINUE), 0);
	cr_expect_eq(pcpu_metrics_collector_add_flags(first, NULL,
						      PCPU_METRICS_COLLECTOR_F_CONTINUE), -EEXIST);
	cr_expect_eq(pcpu_metrics_collector_add_flags(first, NULL, 0), -EEXIST);
	cr_expect_eq(pcpu_metrics_collector_add(first, NULL), -EEXIST);
	cr_assert_eq(pcpu_metrics_collector_remove(first, NULL), 0);
	cr_expect_eq(pcpu_metrics_collector_remove(first, NULL), -ENOENT, "added twice");
}

/* Collector samples the callback was given, and when it asks to stop. */
static int seen, stop_at;

static int stop_early(const struct pcpu_metric_sample *m, void *arg)
{
	(void)arg;
	if (strncmp(m->name, "policy_", 7) != 0)
		return 0;
	return ++seen == stop_at ? 7 : 0;
}

PCPU_TEST(collector_policy, an_output_that_stopped_stops_every_collector)
{
	uint64_t before = pcpu_metrics_collector_failed();
	int runs = midway_runs;

	cr_assert_eq(pcpu_metrics_collector_add_flags(first, NULL,
						      PCPU_METRICS_COLLECTOR_F_CONTINUE), 0);
	cr_assert_eq(pcpu_metrics_collector_add_flags(midway, NULL,
						      PCPU_METRICS_COLLECTOR_F_CONTINUE), 0);
	cr_assert_eq(pcpu_metrics_collector_add_flags(last, NULL,
						      PCPU_METRICS_COLLECTOR_F_CONTINUE), 0);
	/* stop at midway()'s second sample: it returns 7, and nothing runs after */
	stop_at = 3;
	cr_expect_eq(pcpu_metrics_foreach(stop_early, NULL), 7);
	cr_expect_eq(seen, 3, "the callback was called %d times, asked to stop at 3", seen);
	cr_expect_eq(midway_runs - runs, 1);
	cr_expect_eq(pcpu_metrics_collector_failed(), before, "the output's stop was counted");
	cr_assert_eq(pcpu_metrics_collector_remove(last, NULL), 0);
	cr_assert_eq(pcpu_metrics_collector_remove(midway, NULL), 0);
	cr_assert_eq(pcpu_metrics_collector_remove(first, NULL), 0);
}

PCPU_TEST(collector_policy, the_failures_collector_exposes_the_counts)
{
	uint64_t before = pcpu_metrics_collector_failed();
	long long v = -1;
	char *text;

	cr_expect_eq(pcpu_metrics_failures_collector(NULL, NULL, NULL), -EINVAL);
	cr_assert_eq(pcpu_metrics_collector_add_flags(midway, NULL,
						      PCPU_METRICS_COLLECTOR_F_CONTINUE), 0);
	cr_assert_eq(pcpu_metrics_collector_add(pcpu_metrics_failures_collector, NULL), 0);
	for (int i = 1; i <= 2; i++) {
		text = metrics_text(PCPU_METRICS_PROMETHEUS);
		cr_assert_not_null(text);
		cr_expect(metrics_has_line(text, "# TYPE percpu_collector_failed_total counter"),
			  "%s", text);
		cr_assert_eq(metrics_value(text, "percpu_collector_failed_total", &v), 0, "%s",
			     text);
		/* midway() runs first: this scrape's failure is in */
		cr_expect_eq((uint64_t)v, before + i, "scrape %d: %lld failures exposed", i, v);
		cr_expect_eq((uint64_t)v, pcpu_metrics_collector_failed());
		cr_assert_eq(metrics_value(text, "percpu_collector_refused_total", &v), 0, "%s",
			     text);
		cr_expect_eq((uint64_t)v, pcpu_metrics_collector_refused());
		free(text);
	}
	cr_assert_eq(pcpu_metrics_collector_remove(pcpu_metrics_failures_collector, NULL), 0);
	cr_assert_eq(pcpu_metrics_collector_remove(midway, NULL), 0);
}
