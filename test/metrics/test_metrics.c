/* SPDX-License-Identifier: MIT */
/*
 * Metrics (<percpu/metrics.h>): the name rules and each rejection,
 * duplicates, labels, escaping, both formats line by line for a known set,
 * stat-set registration, destroy unregistering, monotone counters across
 * scrapes, and exposition while metrics come and go.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/shared.h>
#include <percpu/stat.h>

#include "helpers.h"
#include "pcpu_test.h"

/* Registers a fresh counter as @d; returns the result, destroys the counter. */
static int try_register(const struct pcpu_metric_desc *d)
{
	struct pcpu_counter c;
	int err;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	err = pcpu_counter_register(&c, d);
	pcpu_counter_destroy(&c);
	return err;
}

static int try_name(const char *name, enum pcpu_metric_kind kind)
{
	return try_register(&(struct pcpu_metric_desc){ .name = name, .help = "h", .kind = kind });
}

/* ---- names ---------------------------------------------------------------- */

PCPU_TEST(metrics, valid_names_are_accepted)
{
	static const char *const good[] = { "a", "_a", ":a", "a:b", "A_b9", "job:rate5m",
					    "http_requests", "x1_2_3", NULL };

	for (int i = 0; good[i]; i++) {
		cr_expect_eq(try_name(good[i], PCPU_METRIC_COUNTER), 0, "counter %s", good[i]);
		cr_expect_eq(try_name(good[i], PCPU_METRIC_GAUGE), 0, "gauge %s", good[i]);
	}
}

PCPU_TEST(metrics, names_outside_the_grammar_are_rejected)
{
	static const char *const bad[] = { "", "1a", "9", "a-b", "a b", "a.b", "é", "a\n",
					   "a{b}", "a\"", "-a", NULL };

	for (int i = 0; bad[i]; i++) {
		cr_expect_eq(try_name(bad[i], PCPU_METRIC_COUNTER), -EINVAL, "counter '%s'", bad[i]);
		cr_expect_eq(try_name(bad[i], PCPU_METRIC_GAUGE), -EINVAL, "gauge '%s'", bad[i]);
	}
	cr_expect_eq(try_register(&(struct pcpu_metric_desc){ .name = NULL,
							      .kind = PCPU_METRIC_COUNTER }),
		     -EINVAL);
}

PCPU_TEST(metrics, counter_names_with_reserved_suffixes_are_rejected)
{
	static const char *const bad[] = { "a_total", "a_created", "a_count", "a_sum",
					   "a_bucket", "a_info", "_total", NULL };

	for (int i = 0; bad[i]; i++)
		cr_expect_eq(try_name(bad[i], PCPU_METRIC_COUNTER), -EINVAL, "counter %s", bad[i]);
	/* a gauge may end like that: nothing is appended to its name */
	cr_expect_eq(try_name("queue_count", PCPU_METRIC_GAUGE), 0);
}

PCPU_TEST(metrics, a_kind_other_than_counter_or_gauge_is_rejected)
{
	cr_expect_eq(try_name("a", 0), -EINVAL);
	cr_expect_eq(try_name("a", PCPU_METRIC_HISTOGRAM), -EINVAL, "histograms have their own call");
	cr_expect_eq(try_name("a", 42), -EINVAL);
}

PCPU_TEST(metrics, a_unit_must_end_the_name)
{
	struct pcpu_metric_desc d = { .name = "sent_bytes", .help = "h", .unit = "bytes",
				      .kind = PCPU_METRIC_COUNTER };

	cr_expect_eq(try_register(&d), 0);
	d.unit = "";
	cr_expect_eq(try_register(&d), 0, "an empty unit is none");
	d.unit = "seconds";
	cr_expect_eq(try_register(&d), -EINVAL, "not a suffix");
	d.unit = "ytes";
	cr_expect_eq(try_register(&d), -EINVAL, "a suffix, but not after an underscore");
	d.name = "bytes";
	d.unit = "bytes";
	cr_expect_eq(try_register(&d), -EINVAL, "the unit alone is no name");
	d.name = "x_b-s";
	d.unit = "b-s";
	cr_expect_eq(try_register(&d), -EINVAL, "a unit outside the grammar");
}

PCPU_TEST(metrics, bad_labels_are_rejected)
{
	static const char *const odd[] = { "a", NULL };
	static const char *const digit[] = { "1a", "v", NULL };
	static const char *const dunder[] = { "__a", "v", NULL };
	static const char *const colon[] = { "a:b", "v", NULL };
	static const char *const dash[] = { "a-b", "v", NULL };
	static const char *const empty[] = { "", "v", NULL };
	static const char *const twice[] = { "a", "1", "a", "2", NULL };
	/* values the formats cannot carry: not UTF-8 (a stray byte, overlong, a surrogate) */
	static const char *const stray[] = { "a", "\xff", NULL };
	static const char *const overlong[] = { "a", "\xc0\xaf", NULL };
	static const char *const surrogate[] = { "a", "\xed\xa0\x80", NULL };
	static const char *const good[] = { "_a", "", "b_9", "any \"value\" \\ \n", "u", "\xc3\xa9", NULL };
	const char *const *bad[] = { odd, digit, dunder, colon, dash, empty, twice,
				     stray, overlong, surrogate };
	struct pcpu_metric_desc d = { .name = "m", .help = "h", .kind = PCPU_METRIC_GAUGE };

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		d.labels = bad[i];
		cr_expect_eq(try_register(&d), -EINVAL, "label list %u", i);
	}
	d.labels = good;
	cr_expect_eq(try_register(&d), 0);
}

PCPU_TEST(metrics, bad_arguments_are_rejected)
{
	struct pcpu_metric_desc d = { .name = "m", .kind = PCPU_METRIC_COUNTER };
	struct pcpu_counter zero = { 0 };

	cr_expect_eq(pcpu_counter_register(NULL, &d), -EINVAL);
	cr_expect_eq(pcpu_counter_register(&zero, &d), -EINVAL, "an uninitialised counter");
	cr_expect_eq(try_register(NULL), -EINVAL);
	cr_expect_eq(pcpu_stat_register(NULL, "p"), -EINVAL);
	cr_expect_eq(pcpu_metrics_write(NULL, PCPU_METRICS_PROMETHEUS), -EINVAL);
	cr_expect_eq(pcpu_metrics_write(stdout, (enum pcpu_metrics_format)7), -EINVAL);
	cr_expect_eq(pcpu_metrics_foreach(NULL, NULL), -EINVAL);
	cr_expect_null(pcpu_metrics_content_type((enum pcpu_metrics_format)7));
}

PCPU_TEST(metrics, content_types_name_the_format_versions)
{
	cr_expect_str_eq(pcpu_metrics_content_type(PCPU_METRICS_PROMETHEUS),
			 "text/plain; version=0.0.4; charset=utf-8");
	cr_expect_str_eq(pcpu_metrics_content_type(PCPU_METRICS_OPENMETRICS),
			 "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

/* ---- duplicates and families ------------------------------------------------ */

PCPU_TEST(metrics, the_same_name_and_labels_twice_is_eexist)
{
	static const char *const get[] = { "method", "GET", NULL };
	static const char *const get2[] = { "method", "GET", NULL };
	static const char *const post[] = { "method", "POST", NULL };
	struct pcpu_counter a, b, c, d;
	struct pcpu_metric_desc desc = { .name = "req", .help = "h", .kind = PCPU_METRIC_COUNTER };

	cr_assert_eq(pcpu_counter_init_many(&a, 0, 1) | pcpu_counter_init(&b, 0) |
		     pcpu_counter_init(&c, 0) | pcpu_counter_init(&d, 0), 0);
	cr_expect_eq(pcpu_counter_register(&a, &desc), 0);
	cr_expect_eq(pcpu_counter_register(&b, &desc), -EEXIST);
	desc.labels = get;
	cr_expect_eq(pcpu_counter_register(&b, &desc), 0, "other labels: same family");
	desc.labels = get2;
	cr_expect_eq(pcpu_counter_register(&c, &desc), -EEXIST, "equal labels, other strings");
	desc.labels = post;
	cr_expect_eq(pcpu_counter_register(&c, &desc), 0);
	cr_expect_eq(pcpu_counter_register(&c, &desc), -EEXIST, "a counter registers once");
	desc.kind = PCPU_METRIC_GAUGE;
	desc.labels = NULL;
	cr_expect_eq(pcpu_counter_register(&d, &desc), -EEXIST, "one family, one kind");
	pcpu_counter_destroy(&a);
	cr_expect_eq(pcpu_counter_register(&d, &(struct pcpu_metric_desc){
			     .name = "req", .help = "h", .kind = PCPU_METRIC_COUNTER }),
		     0, "destroy unregistered the name");
	pcpu_counter_destroy(&b);
	pcpu_counter_destroy(&c);
	pcpu_counter_destroy(&d);
}

PCPU_TEST(metrics, names_whose_samples_collide_are_eexist)
{
	struct pcpu_counter a, b;
	static const int64_t bounds[] = { 1 };
	struct pcpu_histogram *h;

	cr_assert_eq(pcpu_counter_init(&a, 0) | pcpu_counter_init(&b, 0), 0);
	cr_expect_eq(pcpu_counter_register(&a, &(struct pcpu_metric_desc){
			     .name = "x", .kind = PCPU_METRIC_COUNTER }), 0);
	cr_expect_eq(pcpu_counter_register(&b, &(struct pcpu_metric_desc){
			     .name = "x_total", .kind = PCPU_METRIC_GAUGE }), -EEXIST);
	cr_expect_eq(pcpu_counter_register(&b, &(struct pcpu_metric_desc){
			     .name = "x_created", .kind = PCPU_METRIC_GAUGE }), -EEXIST);
	h = pcpu_histogram_create(&(struct pcpu_histogram_desc){ .name = "x", .bounds = bounds,
								 .nr_bounds = 1 });
	cr_expect_null(h);
	cr_expect_eq(errno, EEXIST, "a histogram family named like a counter's");
	h = pcpu_histogram_create(&(struct pcpu_histogram_desc){ .name = "lat", .bounds = bounds,
								 .nr_bounds = 1 });
	cr_assert_not_null(h);
	cr_expect_eq(pcpu_counter_register(&b, &(struct pcpu_metric_desc){
			     .name = "lat_bucket", .kind = PCPU_METRIC_GAUGE }), -EEXIST);
	cr_expect_eq(pcpu_counter_register(&b, &(struct pcpu_metric_desc){
			     .name = "lat_count", .kind = PCPU_METRIC_GAUGE }), -EEXIST);
	cr_expect_eq(pcpu_counter_register(&b, &(struct pcpu_metric_desc){
			     .name = "lat_sum", .kind = PCPU_METRIC_GAUGE }), -EEXIST);
	cr_expect_eq(pcpu_counter_register(&b, &(struct pcpu_metric_desc){
			     .name = "lat_other", .kind = PCPU_METRIC_GAUGE }), 0);
	pcpu_histogram_destroy(h);
	pcpu_counter_destroy(&a);
	pcpu_counter_destroy(&b);
}

PCPU_TEST(metrics, the_descriptor_strings_are_copied)
{
	char name[] = "copied", help[] = "Help.", key[] = "k", value[] = "v";
	const char *labels[] = { key, value, NULL };
	struct pcpu_counter c;
	char *text;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
			     .name = name, .help = help, .kind = PCPU_METRIC_GAUGE,
			     .labels = labels }), 0);
	memset(name, 'z', 6);
	memset(help, 'z', 5);
	key[0] = 'z';
	value[0] = 'z';
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(text);
	cr_expect(metrics_has_line(text, "# HELP copied Help."), "%s", text);
	cr_expect(metrics_has_line(text, "copied{k=\"v\"} 0"), "%s", text);
	free(text);
	pcpu_counter_destroy(&c);
}

/* ---- the formats, line by line -------------------------------------------------- */

static const int64_t latency_bounds[] = { 1000000, 10000000, 1500000000 };

struct known {
	struct pcpu_counter get, post, sent, depth;
	struct pcpu_stat *vm;
	struct pcpu_histogram *latency;
};

static void register_known(struct known *k)
{
	static const char *const get[] = { "method", "GET", NULL };
	static const char *const post[] = { "method", "POST", NULL };
	static const char *const path[] = { "path", "a\"b\\c\nd", NULL };
	static const struct pcpu_stat_item items[] = {
		{ .name = "pgfault", .help = "Page faults." },
		{ .name = "nr_free", .help = "Free pages.", .kind = PCPU_METRIC_GAUGE },
	};

	cr_assert_eq(pcpu_counter_init(&k->get, 0) | pcpu_counter_init(&k->post, 0) |
		     pcpu_counter_init(&k->sent, 0) | pcpu_counter_init(&k->depth, 0), 0);
	/* POST first: the output is sorted by name, then labels */
	cr_assert_eq(pcpu_counter_register(&k->post, &(struct pcpu_metric_desc){
			     .name = "http_requests", .help = "Requests served.",
			     .kind = PCPU_METRIC_COUNTER, .labels = post }), 0);
	cr_assert_eq(pcpu_counter_register(&k->get, &(struct pcpu_metric_desc){
			     .name = "http_requests", .help = "Requests served.",
			     .kind = PCPU_METRIC_COUNTER, .labels = get }), 0);
	cr_assert_eq(pcpu_counter_register(&k->sent, &(struct pcpu_metric_desc){
			     .name = "sent_bytes", .help = "Bytes.", .unit = "bytes",
			     .kind = PCPU_METRIC_COUNTER, .labels = path }), 0);
	cr_assert_eq(pcpu_counter_register(&k->depth, &(struct pcpu_metric_desc){
			     .name = "queue_depth",
			     .help = "Depth of the \"queue\" \\ now.\nSecond line.",
			     .kind = PCPU_METRIC_GAUGE }), 0);
	k->vm = pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items, .nr_items = 2 });
	cr_assert_not_null(k->vm);
	cr_assert_eq(pcpu_stat_register(k->vm, "vm"), 0);
	k->latency = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "req_latency_seconds", .help = "Request latency.", .unit = "seconds",
		.bounds = latency_bounds, .nr_bounds = 3, .scale = 1000000000 });
	cr_assert_not_null(k->latency);

	pcpu_counter_add(&k->get, 3);
	pcpu_counter_add(&k->post, 1);
	pcpu_counter_add(&k->sent, 4096);
	pcpu_counter_add(&k->depth, -4);
	pcpu_stat_add(k->vm, 0, 10);
	pcpu_stat_add(k->vm, 1, 7);
	pcpu_histogram_observe(k->latency, 500000);
	pcpu_histogram_observe(k->latency, 2000000);
	pcpu_histogram_observe(k->latency, 2000000);
	pcpu_histogram_observe(k->latency, 5000000000);
}

static void destroy_known(struct known *k)
{
	pcpu_counter_destroy(&k->get);
	pcpu_counter_destroy(&k->post);
	pcpu_counter_destroy(&k->sent);
	pcpu_counter_destroy(&k->depth);
	pcpu_stat_destroy(k->vm);
	pcpu_histogram_destroy(k->latency);
}

PCPU_TEST(metrics, prometheus_text_of_a_known_set_line_by_line)
{
	static const char expected[] =
		"# HELP http_requests_total Requests served.\n"
		"# TYPE http_requests_total counter\n"
		"http_requests_total{method=\"GET\"} 3\n"
		"http_requests_total{method=\"POST\"} 1\n"
		"# HELP queue_depth Depth of the \"queue\" \\\\ now.\\nSecond line.\n"
		"# TYPE queue_depth gauge\n"
		"queue_depth -4\n"
		"# HELP req_latency_seconds Request latency.\n"
		"# TYPE req_latency_seconds histogram\n"
		"req_latency_seconds_bucket{le=\"0.001\"} 1\n"
		"req_latency_seconds_bucket{le=\"0.01\"} 3\n"
		"req_latency_seconds_bucket{le=\"1.5\"} 3\n"
		"req_latency_seconds_bucket{le=\"+Inf\"} 4\n"
		"req_latency_seconds_sum 5.0045\n"
		"req_latency_seconds_count 4\n"
		"# HELP sent_bytes_total Bytes.\n"
		"# TYPE sent_bytes_total counter\n"
		"sent_bytes_total{path=\"a\\\"b\\\\c\\nd\"} 4096\n"
		"# HELP vm_nr_free Free pages.\n"
		"# TYPE vm_nr_free gauge\n"
		"vm_nr_free 7\n"
		"# HELP vm_pgfault_total Page faults.\n"
		"# TYPE vm_pgfault_total counter\n"
		"vm_pgfault_total 10\n";
	struct known k;
	char *text;

	register_known(&k);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(text);
	cr_expect_str_eq(text, expected);
	free(text);
	destroy_known(&k);
}

PCPU_TEST(metrics, openmetrics_text_of_a_known_set_line_by_line)
{
	static const char expected[] =
		"# HELP http_requests Requests served.\n"
		"# TYPE http_requests counter\n"
		"http_requests_total{method=\"GET\"} 3\n"
		"http_requests_total{method=\"POST\"} 1\n"
		"# HELP queue_depth Depth of the \\\"queue\\\" \\\\ now.\\nSecond line.\n"
		"# TYPE queue_depth gauge\n"
		"queue_depth -4\n"
		"# HELP req_latency_seconds Request latency.\n"
		"# TYPE req_latency_seconds histogram\n"
		"# UNIT req_latency_seconds seconds\n"
		"req_latency_seconds_bucket{le=\"0.001\"} 1\n"
		"req_latency_seconds_bucket{le=\"0.01\"} 3\n"
		"req_latency_seconds_bucket{le=\"1.5\"} 3\n"
		"req_latency_seconds_bucket{le=\"+Inf\"} 4\n"
		"req_latency_seconds_sum 5.0045\n"
		"req_latency_seconds_count 4\n"
		"# HELP sent_bytes Bytes.\n"
		"# TYPE sent_bytes counter\n"
		"# UNIT sent_bytes bytes\n"
		"sent_bytes_total{path=\"a\\\"b\\\\c\\nd\"} 4096\n"
		"# HELP vm_nr_free Free pages.\n"
		"# TYPE vm_nr_free gauge\n"
		"vm_nr_free 7\n"
		"# HELP vm_pgfault Page faults.\n"
		"# TYPE vm_pgfault counter\n"
		"vm_pgfault_total 10\n"
		"# EOF\n";
	struct known k;
	char *text;

	register_known(&k);
	text = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(text);
	cr_expect_str_eq(text, expected);
	free(text);
	destroy_known(&k);
}

PCPU_TEST(metrics, nothing_registered_writes_nothing_but_eof)
{
	char *text = metrics_text(PCPU_METRICS_PROMETHEUS);

	cr_assert_not_null(text);
	cr_expect_str_eq(text, "");
	free(text);
	text = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(text);
	cr_expect_str_eq(text, "# EOF\n");
	free(text);
}

PCPU_TEST(metrics, a_metric_without_help_has_no_help_line)
{
	struct pcpu_counter c;
	char *text;

	cr_assert_eq(pcpu_counter_init(&c, 5), 0);
	cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
			     .name = "bare", .kind = PCPU_METRIC_GAUGE }), 0);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_expect_str_eq(text, "# TYPE bare gauge\nbare 5\n");
	free(text);
	pcpu_counter_destroy(&c);
}

static int collect(const struct pcpu_metric_sample *s, void *arg)
{
	char *buf = arg;
	size_t n = strlen(buf);

	snprintf(buf + n, 4096 - n, "%s/%d/%lld/%s;", s->name, (int)s->kind, (long long)s->value,
		 s->labels[0] ? s->labels[1] : "-");
	return 0;
}

static int stop_at_first(const struct pcpu_metric_sample *s, void *arg)
{
	(void)s;
	++*(int *)arg;
	return 42;
}

PCPU_TEST(metrics, foreach_visits_every_metric_in_family_order)
{
	struct known k;
	char buf[4096] = "";
	int calls = 0;

	register_known(&k);
	cr_assert_eq(pcpu_metrics_foreach(collect, buf), 0);
	cr_expect_str_eq(buf, "http_requests/1/3/GET;http_requests/1/1/POST;queue_depth/2/-4/-;"
			      "req_latency_seconds/3/0/-;sent_bytes/1/4096/a\"b\\c\nd;"
			      "vm_nr_free/2/7/-;vm_pgfault/1/10/-;");
	cr_expect_eq(pcpu_metrics_foreach(stop_at_first, &calls), 42);
	cr_expect_eq(calls, 1, "a non-zero return stops the walk");
	destroy_known(&k);
}

static int find_histogram(const struct pcpu_metric_sample *s, void *arg)
{
	if (s->kind != PCPU_METRIC_HISTOGRAM)
		return 0;
	cr_expect_eq(s->nr_bounds, 3);
	cr_expect_eq(s->bounds[2], 1500000000);
	cr_expect_eq(s->buckets[0], 1);
	cr_expect_eq(s->buckets[1], 2);
	cr_expect_eq(s->buckets[2], 0);
	cr_expect_eq(s->buckets[3], 1);
	cr_expect_eq(s->count, 4);
	cr_expect_eq(s->sum, 5004500000);
	cr_expect_eq(s->scale, 1000000000);
	cr_expect_str_eq(s->unit, "seconds");
	++*(int *)arg;
	return 0;
}

PCPU_TEST(metrics, foreach_gives_histograms_their_buckets)
{
	struct known k;
	int seen = 0;

	register_known(&k);
	cr_assert_eq(pcpu_metrics_foreach(find_histogram, &seen), 0);
	cr_expect_eq(seen, 1);
	destroy_known(&k);
}

/* ---- stat sets -------------------------------------------------------------------- */

PCPU_TEST(metrics, stat_register_checks_every_item_and_is_all_or_nothing)
{
	static const struct pcpu_stat_item items[] = {
		{ .name = "ok" }, { .name = "bad-name" },
	};
	static const struct pcpu_stat_item good[] = {
		{ .name = "ok" }, { .name = "fine", .kind = PCPU_METRIC_GAUGE },
	};
	static const struct pcpu_stat_item bad_kind[] = { { .name = "h", .kind = PCPU_METRIC_HISTOGRAM } };
	struct pcpu_stat *s = pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items, .nr_items = 2 });
	struct pcpu_stat *t = pcpu_stat_create(&(struct pcpu_stat_desc){ .items = good, .nr_items = 2 });
	char *text;

	cr_assert_not_null(s);
	cr_assert_not_null(t);
	cr_expect_null(pcpu_stat_create(&(struct pcpu_stat_desc){ .items = bad_kind, .nr_items = 1 }));
	cr_expect_eq(errno, EINVAL, "a stat item cannot be a histogram");
	cr_expect_eq(pcpu_stat_register(s, "p"), -EINVAL);
	cr_expect_eq(pcpu_stat_register(t, "9p"), -EINVAL, "a prefix outside the grammar");
	cr_expect_eq(pcpu_stat_register(t, "p-q"), -EINVAL);
	cr_expect_eq(pcpu_stat_register(t, "p"), 0, "p_ok is free: the failed one left nothing");
	cr_expect_eq(pcpu_stat_register(t, "p"), -EEXIST);
	cr_expect_eq(pcpu_stat_register(t, NULL), 0, "no prefix: the item names alone");
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_expect_str_eq(text, "# TYPE fine gauge\nfine 0\n# TYPE ok_total counter\nok_total 0\n"
			       "# TYPE p_fine gauge\np_fine 0\n# TYPE p_ok_total counter\n"
			       "p_ok_total 0\n");
	free(text);
	pcpu_stat_destroy(s);
	pcpu_stat_destroy(t);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_expect_str_eq(text, "", "destroy unregistered every item");
	free(text);
}

PCPU_TEST(metrics, stat_item_help_and_kind_are_copied)
{
	char help[] = "Help.";
	struct pcpu_stat_item items[] = { { .name = "g", .help = help, .kind = PCPU_METRIC_GAUGE } };
	struct pcpu_stat *s = pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items, .nr_items = 1 });
	char *text;

	cr_assert_not_null(s);
	help[0] = 'X';
	items[0].kind = PCPU_METRIC_COUNTER;
	cr_assert_eq(pcpu_stat_register(s, "s"), 0);
	pcpu_stat_add(s, 0, -3);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_expect_str_eq(text, "# HELP s_g Help.\n# TYPE s_g gauge\ns_g -3\n");
	free(text);
	pcpu_stat_destroy(s);
}

PCPU_TEST(metrics, stat_items_are_exposed_scaled)
{
	struct pcpu_stat_item items[] = {
		{ .name = "busy_seconds", .kind = PCPU_METRIC_COUNTER, .scale = 1000000000 },
		{ .name = "depth", .kind = PCPU_METRIC_GAUGE, .scale = 1 },
		{ .name = "plain" },
	};
	struct pcpu_stat *s = pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items, .nr_items = 3 });
	char *text;

	cr_assert_not_null(s);
	items[0].scale = 7; /* copied at create */
	cr_expect_eq(pcpu_stat_scale(s, 0), 1000000000);
	cr_expect_eq(pcpu_stat_scale(s, 1), 1);
	cr_expect_eq(pcpu_stat_scale(s, 2), 1);
	cr_expect_eq(pcpu_stat_scale(s, 3), 0, "out of range");
	cr_expect_eq(pcpu_stat_scale(NULL, 0), 0);
	cr_assert_eq(pcpu_stat_register(s, "sc"), 0);
	pcpu_stat_add(s, 0, 1500000000);
	pcpu_stat_add(s, 1, 3);
	pcpu_stat_add(s, 2, 5);
	for (int f = PCPU_METRICS_PROMETHEUS; f <= PCPU_METRICS_OPENMETRICS; f++) {
		text = metrics_text(f);
		cr_expect(metrics_has_line(text, "sc_busy_seconds_total 1.5"), "%s", text);
		cr_expect(metrics_has_line(text, "sc_depth 3"));
		cr_expect(metrics_has_line(text, "sc_plain_total 5"));
		free(text);
	}
	pcpu_stat_destroy(s);
	/* a negative scale is refused at create, any scale in a shared segment */
	items[0].scale = -1;
	errno = 0;
	cr_expect_null(pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items, .nr_items = 3 }));
	cr_expect_eq(errno, EINVAL);
	items[0].scale = 1000;
	errno = 0;
	cr_expect_null(pcpu_shared_create(NULL, &(struct pcpu_shared_desc){ .items = items,
									    .nr_items = 1 }));
	/* where the platform has shared segments (not i386: ENOTSUP) */
	cr_expect(errno == EINVAL || errno == ENOTSUP, "errno %d", errno);
	if (errno == ENOTSUP) {
		items[0].scale = 0;
		errno = 0;
		cr_expect_null(pcpu_shared_create(NULL, &(struct pcpu_shared_desc){
			.items = items, .nr_items = 1 }));
		cr_expect_eq(errno, ENOTSUP, "ENOTSUP for a good one too");
	}
}

/* ---- monotone counters ------------------------------------------------------------- */

PCPU_TEST(metrics, a_counter_never_decreases_across_scrapes_even_when_misused)
{
	struct pcpu_counter c;
	long long v = 0;
	char *text;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
			     .name = "mono", .kind = PCPU_METRIC_COUNTER }), 0);
	pcpu_counter_add(&c, 100);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_eq(metrics_value(text, "mono_total", &v), 0);
	cr_expect_eq(v, 100);
	free(text);
	pcpu_counter_add(&c, -30); /* the misuse */
	text = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_eq(metrics_value(text, "mono_total", &v), 0);
	cr_expect_eq(v, 100, "the high-water mark holds");
	free(text);
	pcpu_counter_add(&c, 50);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_eq(metrics_value(text, "mono_total", &v), 0);
	cr_expect_eq(v, 120, "and the exact value shows again once past it");
	free(text);
	pcpu_counter_destroy(&c);
}

PCPU_TEST(metrics, a_gauge_goes_down)
{
	struct pcpu_counter c;
	long long v = 0;
	char *text;

	cr_assert_eq(pcpu_counter_init(&c, 10), 0);
	cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
			     .name = "g", .kind = PCPU_METRIC_GAUGE }), 0);
	pcpu_counter_add(&c, -15);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_eq(metrics_value(text, "g", &v), 0);
	cr_expect_eq(v, -5);
	free(text);
	pcpu_counter_destroy(&c);
}

/* ---- scale (since 0.4) ------------------------------------------------------------ */

/* The text of the value of the line @series in format @f (malloc'ed), or NULL. */
static char *value_text(enum pcpu_metrics_format f, const char *series)
{
	char *text = metrics_text(f), *v = NULL;
	size_t n = strlen(series);

	cr_assert_not_null(text);
	for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, series, n) == 0 && line[n] == ' ') {
			v = strndup(line + n + 1, strcspn(line + n + 1, "\n"));
			break;
		}
	free(text);
	return v;
}

static void expect_value(const char *series, const char *want)
{
	for (int f = PCPU_METRICS_PROMETHEUS; f <= PCPU_METRICS_OPENMETRICS; f++) {
		char *v = value_text((enum pcpu_metrics_format)f, series);

		cr_expect(v && strcmp(v, want) == 0, "format %d: %s is %s, want %s", f, series,
			  v ? v : "absent", want);
		free(v);
	}
}

PCPU_TEST(metrics, a_scaled_counter_exposes_its_value_divided_exactly)
{
	struct pcpu_counter c;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
			     .name = "cpu_seconds", .unit = "seconds", .kind = PCPU_METRIC_COUNTER,
			     .scale = 1000000000 }), 0);
	expect_value("cpu_seconds_total", "0");
	pcpu_counter_add(&c, 1500000000);
	expect_value("cpu_seconds_total", "1.5");
	pcpu_counter_add(&c, 1500000000);
	expect_value("cpu_seconds_total", "3");
	pcpu_counter_add(&c, 1);
	expect_value("cpu_seconds_total", "3.000000001");
	/* the high-water mark holds in scaled units too */
	pcpu_counter_add(&c, -1000000001);
	expect_value("cpu_seconds_total", "3.000000001");
	pcpu_counter_destroy(&c);
}

PCPU_TEST(metrics, a_scale_of_0_or_1_is_none_and_a_scaled_gauge_goes_negative)
{
	struct pcpu_counter zero, one, third;

	cr_assert_eq(pcpu_counter_init(&zero, 7), 0);
	cr_assert_eq(pcpu_counter_init(&one, 8), 0);
	cr_assert_eq(pcpu_counter_init(&third, -1), 0);
	cr_assert_eq(pcpu_counter_register(&zero, &(struct pcpu_metric_desc){
			     .name = "s0", .kind = PCPU_METRIC_GAUGE, .scale = 0 }), 0);
	cr_assert_eq(pcpu_counter_register(&one, &(struct pcpu_metric_desc){
			     .name = "s1", .kind = PCPU_METRIC_GAUGE, .scale = 1 }), 0);
	cr_assert_eq(pcpu_counter_register(&third, &(struct pcpu_metric_desc){
			     .name = "s3", .kind = PCPU_METRIC_GAUGE, .scale = 3 }), 0);
	expect_value("s0", "7");
	expect_value("s1", "8");
	/* not a decimal fraction: the shortest text that reads back as -1.0 / 3 */
	expect_value("s3", "-0.3333333333333333");
	pcpu_counter_destroy(&zero);
	pcpu_counter_destroy(&one);
	pcpu_counter_destroy(&third);
}

PCPU_TEST(metrics, a_negative_scale_is_einval_and_leaves_the_counter_unregistered)
{
	struct pcpu_counter c;
	struct pcpu_metric_desc d = { .name = "neg", .kind = PCPU_METRIC_COUNTER, .scale = -1 };

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_expect_eq(pcpu_counter_register(&c, &d), -EINVAL);
	d.scale = INT64_MIN;
	cr_expect_eq(pcpu_counter_register(&c, &d), -EINVAL);
	d.scale = 10;
	cr_expect_eq(pcpu_counter_register(&c, &d), 0, "the refusals left it unregistered");
	pcpu_counter_destroy(&c);
}

static int find_scaled(const struct pcpu_metric_sample *s, void *arg)
{
	if (strcmp(s->name, "fe_seconds") == 0) {
		cr_expect_eq(s->value, 2500, "the sample's value is unscaled");
		cr_expect_eq(s->scale, 1000);
		++*(int *)arg;
	}
	return 0;
}

/* A collector's counter with a scale, as process_cpu_seconds_total could be. */
static int scaled_collector(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx,
			    void *arg)
{
	struct pcpu_metric_sample s = { .name = "col_cpu_seconds", .help = "", .unit = "",
					.kind = PCPU_METRIC_COUNTER, .value = 1500000000,
					.scale = 1000000000 };

	(void)arg;
	return emit(&s, ctx);
}

PCPU_TEST(metrics, foreach_gives_the_scale_and_collectors_samples_are_scaled)
{
	struct pcpu_counter c;
	int seen = 0;

	cr_assert_eq(pcpu_counter_init(&c, 2500), 0);
	cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
			     .name = "fe_seconds", .kind = PCPU_METRIC_COUNTER, .scale = 1000 }), 0);
	cr_assert_eq(pcpu_metrics_foreach(find_scaled, &seen), 0);
	cr_expect_eq(seen, 1);
	expect_value("fe_seconds_total", "2.5");
	cr_assert_eq(pcpu_metrics_collector_add(scaled_collector, NULL), 0);
	expect_value("col_cpu_seconds_total", "1.5");
	cr_assert_eq(pcpu_metrics_collector_remove(scaled_collector, NULL), 0);
	pcpu_counter_destroy(&c);
}

/* Adders on a counter; the main thread scrapes and checks it never goes down. */
struct adder {
	struct pcpu_counter *c;
	long n;
};

static void *add_ones(void *arg)
{
	struct adder *a = arg;

	for (long i = 0; i < a->n; i++)
		pcpu_counter_add(a->c, 1);
	return NULL;
}

PCPU_TEST(metrics, concurrent_adds_never_make_a_scrape_go_down)
{
	enum { THREADS = 4 };
	struct pcpu_counter c;
	struct adder a = { &c, pcpu_test_iterations(2000000) };
	pthread_t t[THREADS];
	long long last = 0, v;
	int scrapes = 0;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
			     .name = "hits", .kind = PCPU_METRIC_COUNTER }), 0);
	for (int i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, add_ones, &a), 0);
	while (last < THREADS * a.n && scrapes < 100000) {
		char *text = metrics_text(scrapes % 2 ? PCPU_METRICS_OPENMETRICS :
							PCPU_METRICS_PROMETHEUS);

		cr_assert_not_null(text);
		cr_assert_eq(metrics_value(text, "hits_total", &v), 0);
		cr_assert_geq(v, last, "scrape %d went down: %lld after %lld", scrapes, v, last);
		cr_assert_leq(v, THREADS * a.n);
		last = v;
		free(text);
		scrapes++;
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	cr_expect_eq(pcpu_counter_sum(&c), THREADS * a.n);
	pcpu_counter_destroy(&c);
}

/* ---- metrics coming and going during exposition ------------------------------------ */

static volatile int churn_stop;

static void *churn(void *arg)
{
	static const int64_t bounds[] = { 10, 20 };
	static const struct pcpu_stat_item items[] = { { .name = "a" }, { .name = "b" } };
	static const char *const labels[] = { "k", "v", NULL };
	long *rounds = arg;

	while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
		struct pcpu_counter c, g;
		struct pcpu_stat *s;
		struct pcpu_histogram *h;

		cr_assert_eq(pcpu_counter_init(&c, 0) | pcpu_counter_init(&g, 0), 0);
		cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
				     .name = "churn", .kind = PCPU_METRIC_COUNTER,
				     .labels = labels }), 0);
		cr_assert_eq(pcpu_counter_register(&g, &(struct pcpu_metric_desc){
				     .name = "churn_gauge", .kind = PCPU_METRIC_GAUGE }), 0);
		s = pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items, .nr_items = 2 });
		cr_assert_not_null(s);
		cr_assert_eq(pcpu_stat_register(s, "churn_set"), 0);
		h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
			.name = "churn_hist", .bounds = bounds, .nr_bounds = 2 });
		cr_assert_not_null(h);
		pcpu_counter_add(&c, 1);
		pcpu_stat_add(s, 1, 2);
		pcpu_histogram_observe(h, 15);
		pcpu_counter_destroy(&c);
		pcpu_stat_destroy(s);
		pcpu_histogram_destroy(h);
		pcpu_counter_destroy(&g);
		++*rounds;
	}
	return NULL;
}

/* Every family's header comes once, before its samples, and samples belong to it. */
static void check_structure(const char *text, bool om)
{
	char family[256] = "";
	char seen[64][256];
	int nr_seen = 0;

	for (const char *line = text; *line;) {
		const char *end = strchr(line, '\n');
		char name[256];

		cr_assert_not_null(end, "every line ends with a newline");
		if (strncmp(line, "# TYPE ", 7) == 0) {
			sscanf(line + 7, "%255s", family);
			for (int i = 0; i < nr_seen; i++)
				cr_assert_str_neq(seen[i], family, "family %s twice", family);
			cr_assert_lt(nr_seen, 64);
			strcpy(seen[nr_seen++], family);
		} else if (line[0] != '#') {
			sscanf(line, "%255[^{ ]", name);
			cr_assert_eq(strncmp(name, family, strlen(family)), 0,
				     "sample %s outside family %s", name, family);
		} else if (om && strcmp(line, "# EOF\n") == 0) {
			cr_assert_eq(end[1], '\0', "# EOF is last");
		}
		line = end + 1;
	}
}

PCPU_TEST(metrics, exposition_is_safe_while_metrics_come_and_go)
{
	struct pcpu_counter stay;
	long rounds = 0, scrapes = pcpu_test_iterations(20000), last = 0, v;
	pthread_t t;

	churn_stop = 0;
	cr_assert_eq(pcpu_counter_init(&stay, 0), 0);
	cr_assert_eq(pcpu_counter_register(&stay, &(struct pcpu_metric_desc){
			     .name = "stay", .kind = PCPU_METRIC_COUNTER }), 0);
	cr_assert_eq(pthread_create(&t, NULL, churn, &rounds), 0);
	for (long i = 0; i < scrapes || __atomic_load_n(&rounds, __ATOMIC_RELAXED) < 10; i++) {
		bool om = i % 2;
		char *text = metrics_text(om ? PCPU_METRICS_OPENMETRICS : PCPU_METRICS_PROMETHEUS);
		long long value;

		cr_assert_not_null(text);
		check_structure(text, om);
		cr_assert_eq(metrics_value(text, "stay_total", &value), 0);
		v = (long)value;
		cr_assert_geq(v, last);
		last = v;
		free(text);
		pcpu_counter_add(&stay, 1);
	}
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	cr_expect_gt(rounds, 0);
	pcpu_counter_destroy(&stay);
	{
		char *text = metrics_text(PCPU_METRICS_PROMETHEUS);

		cr_expect_str_eq(text, "", "everything destroyed is gone");
		free(text);
	}
}

static void *scrape_forever(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED))
		free(metrics_text(PCPU_METRICS_OPENMETRICS));
	return NULL;
}

PCPU_TEST(metrics, a_fork_during_exposition_leaves_the_child_able_to_expose)
{
	struct pcpu_counter c;
	pthread_t t;

	churn_stop = 0;
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
			     .name = "forked", .kind = PCPU_METRIC_COUNTER }), 0);
	pcpu_counter_add(&c, 9);
	cr_assert_eq(pthread_create(&t, NULL, scrape_forever, NULL), 0);
	for (int i = 0; i < 20; i++) {
		int status, fds[2];
		char verdict = 0;
		pid_t pid;

		/*
		 * The verdict comes through a pipe, not the exit status: under
		 * valgrind the child's exit reports as lost whatever the parent's
		 * scraping thread held at the fork.
		 */
		cr_assert_eq(pipe(fds), 0);
		pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			char *text = metrics_text(PCPU_METRICS_PROMETHEUS);
			long long v = 0;

			verdict = text && metrics_value(text, "forked_total", &v) == 0 && v == 9 ?
					  'y' : 'n';
			free(text);
			(void)!write(fds[1], &verdict, 1);
			_exit(0);
		}
		close(fds[1]);
		cr_assert_eq(read(fds[0], &verdict, 1), 1, "child %d said nothing", i);
		close(fds[0]);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert_eq(verdict, 'y', "child %d could not expose the counter", i);
	}
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	pcpu_counter_destroy(&c);
}

/*
 * The registration rules against an oracle written from the formats, over
 * thousands of random registrations and removals of names that clash in
 * every way (suffixes of every kind, each kind, labels or none): a
 * registration succeeds exactly when the name is valid for its kind, no
 * registered family of another name writes a sample of the same name, and
 * a family of the same name has the same kind and other labels. Proves the
 * indexed checks (metrics/list/metrics_list.c) decide as a walk of every metric would.
 */
#define ORACLE_NAMES 12
#define ORACLE_SLOTS 64

static const char *const oracle_names[ORACLE_NAMES] = {
	"a", "a_total", "a_created", "a_count", "a_sum", "a_bucket", "a_info",
	"b", "b_total", "b_info", "a_total_total", "a_sum_count",
};

/* The samples (and family name) a kind writes, as the formats define them. */
static const char *const *oracle_suffixes(enum pcpu_metric_kind kind)
{
	static const char *const counter[] = { "", "_total", "_created", NULL };
	static const char *const gauge[] = { "", NULL };
	static const char *const histogram[] = { "", "_bucket", "_sum", "_count", "_created",
						 NULL };
	static const char *const info[] = { "_info", NULL };

	return kind == PCPU_METRIC_COUNTER ? counter : kind == PCPU_METRIC_GAUGE ? gauge :
	       kind == PCPU_METRIC_HISTOGRAM ? histogram : info;
}

static bool oracle_meet(const char *a, enum pcpu_metric_kind ka, const char *b,
			enum pcpu_metric_kind kb)
{
	char x[64], y[64];

	for (const char *const *sa = oracle_suffixes(ka); *sa; sa++)
		for (const char *const *sb = oracle_suffixes(kb); *sb; sb++) {
			snprintf(x, sizeof(x), "%s%s", a, *sa);
			snprintf(y, sizeof(y), "%s%s", b, *sb);
			if (strcmp(x, y) == 0)
				return true;
		}
	return false;
}

static bool oracle_valid(const char *name, enum pcpu_metric_kind kind)
{
	static const char *const reserved[] = { "_total", "_created", "_count", "_sum",
						"_bucket", "_info" };
	size_t len = strlen(name);

	if (kind == PCPU_METRIC_GAUGE)
		return true;
	for (unsigned int i = 0; i < 6; i++) {
		size_t n = strlen(reserved[i]);

		if (len >= n && strcmp(name + len - n, reserved[i]) == 0)
			return false;
	}
	return true;
}

struct oracle_slot {
	bool live;
	const char *name;
	enum pcpu_metric_kind kind;
	int label; /* 0: none, else {"k", "1"} or {"k", "2"} */
	struct pcpu_counter c;
	struct pcpu_gauge g;
	struct pcpu_histogram *h;
};

PCPU_TEST(metrics, registrations_are_decided_as_an_oracle_of_the_formats_decides)
{
	static const char *const labels[3][3] = { { NULL }, { "k", "1", NULL }, { "k", "2", NULL } };
	static const enum pcpu_metric_kind kinds[] = { PCPU_METRIC_COUNTER, PCPU_METRIC_GAUGE,
						      PCPU_METRIC_HISTOGRAM, PCPU_METRIC_INFO };
	static struct oracle_slot slot[ORACLE_SLOTS];
	long ops = pcpu_test_iterations(20000), accepted = 0, refused = 0;
	unsigned int seed = 12345;

	for (long op = 0; op < ops; op++) {
		struct oracle_slot *s = &slot[rand_r(&seed) % ORACLE_SLOTS];
		bool want;
		int got;

		if (s->live) {
			if (s->kind == PCPU_METRIC_HISTOGRAM)
				pcpu_histogram_destroy(s->h);
			else if (s->kind == PCPU_METRIC_INFO)
				pcpu_gauge_unregister(&s->g);
			else
				pcpu_counter_destroy(&s->c);
			s->live = false;
			continue;
		}
		s->name = oracle_names[rand_r(&seed) % ORACLE_NAMES];
		s->kind = kinds[rand_r(&seed) % 4];
		s->label = (int)(rand_r(&seed) % 3);
		want = oracle_valid(s->name, s->kind);
		for (int i = 0; want && i < ORACLE_SLOTS; i++) {
			const struct oracle_slot *o = &slot[i];

			if (!o->live)
				continue;
			if (strcmp(o->name, s->name) == 0)
				want = o->kind == s->kind && o->label != s->label;
			else
				want = !oracle_meet(o->name, o->kind, s->name, s->kind);
		}
		if (s->kind == PCPU_METRIC_HISTOGRAM) {
			errno = 0;
			s->h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
				.name = s->name, .labels = labels[s->label] });
			got = s->h ? 0 : -errno;
		} else if (s->kind == PCPU_METRIC_INFO) {
			s->g = (struct pcpu_gauge){ 0 };
			got = pcpu_gauge_register(&s->g, &(struct pcpu_metric_desc){
				.name = s->name, .kind = s->kind, .labels = labels[s->label] });
		} else {
			cr_assert_eq(pcpu_counter_init(&s->c, 0), 0);
			got = pcpu_counter_register(&s->c, &(struct pcpu_metric_desc){
				.name = s->name, .kind = s->kind, .labels = labels[s->label] });
		}
		cr_assert_eq(got, want ? 0 : oracle_valid(s->name, s->kind) ? -EEXIST : -EINVAL,
			     "op %ld: %s of kind %d, label %d: %d", op, s->name, s->kind, s->label,
			     got);
		if (want) {
			s->live = true;
			accepted++;
		} else {
			refused++;
			if (s->kind == PCPU_METRIC_COUNTER || s->kind == PCPU_METRIC_GAUGE)
				pcpu_counter_destroy(&s->c);
		}
	}
	cr_log_info("%ld registrations accepted, %ld refused", accepted, refused);
	cr_expect_gt(accepted, ops / 20);
	cr_expect_gt(refused, ops / 20);
	for (int i = 0; i < ORACLE_SLOTS; i++)
		if (slot[i].live) {
			if (slot[i].kind == PCPU_METRIC_HISTOGRAM)
				pcpu_histogram_destroy(slot[i].h);
			else if (slot[i].kind == PCPU_METRIC_INFO)
				pcpu_gauge_unregister(&slot[i].g);
			else
				pcpu_counter_destroy(&slot[i].c);
		}
}
