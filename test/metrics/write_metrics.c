/* SPDX-License-Identifier: MIT */
/*
 * Writes a known set of metrics (every kind, labels, escapes, units, a
 * scaled histogram, a label family, set-style gauges, an info metric, a
 * summary) in
 * both formats: argv[1] gets Prometheus text, argv[2] OpenMetrics. check-parsers.sh feeds them to the real parsers.
 */
#include <stdio.h>
#include <stdlib.h>

#include <percpu/family.h>
#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/stat.h>
#include <percpu/summary.h>

PCPU_COUNTER_DEFINE(requests_defined, "app_started", "Times the program started.");
PCPU_COUNTER_DEFINE_DESC(received_defined, .name = "app_received_bytes", .unit = "bytes",
			 .help = "Bytes received.", .labels = PCPU_LABELS("interface", "lo"));

static int write_to(const char *path, enum pcpu_metrics_format f)
{
	FILE *out = fopen(path, "w");
	int err;

	if (!out)
		return -1;
	err = pcpu_metrics_write(out, f);
	return fclose(out) || err ? -1 : 0;
}

int main(int argc, char **argv)
{
	static const char *const get[] = { "method", "GET", "path", "/a\"b\\c\nd", NULL };
	static const char *const post[] = { "method", "POST", "path", "/", NULL };
	static const int64_t bounds[] = { 1000000, 10000000, 250000000, 1000000000 };
	static const int64_t sizes[] = { -100, 0, 4096 };
	static const struct pcpu_stat_item items[] = {
		{ .name = "pgfault", .help = "Page faults." },
		{ .name = "nr_free_pages", .help = "Free pages.", .kind = PCPU_METRIC_GAUGE },
	};
	struct pcpu_counter a, b, sent, temp;
	struct pcpu_histogram *lat, *delta;
	/* 1 to 10, each in a bucket of its own: the quantiles are exact */
	static const double objectives[] = { 0.5, 0.9, 0.99 };
	struct pcpu_summary *sizes_summary;
	struct pcpu_stat *vm;
	static const char *const code_path[] = { "code", "path", NULL };
	static struct pcpu_gauge depth = PCPU_GAUGE_INIT(42);
	static struct pcpu_gauge_double load = PCPU_GAUGE_DOUBLE_INIT(0.25);
	static struct pcpu_gauge build;
	static const char *const route[] = { "route", NULL };
	static const int64_t route_bounds[] = { 100, 1000 };
	struct pcpu_family *responses, *routes;
	struct pcpu_histogram *route_a;
	int err = 0;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: %s PROMETHEUS-FILE OPENMETRICS-FILE [OM-CREATED-FILE]\n",
			argv[0]);
		return 2;
	}
	if (pcpu_counter_init(&a, 0) || pcpu_counter_init(&b, 0) || pcpu_counter_init(&sent, 0) ||
	    pcpu_counter_init(&temp, 0))
		return 1;
	err |= pcpu_counter_register(&a, &(struct pcpu_metric_desc){
		.name = "http_requests", .help = "Requests \\ served\nby \"us\".",
		.kind = PCPU_METRIC_COUNTER, .labels = get });
	err |= pcpu_counter_register(&b, &(struct pcpu_metric_desc){
		.name = "http_requests", .help = "Requests \\ served\nby \"us\".",
		.kind = PCPU_METRIC_COUNTER, .labels = post });
	err |= pcpu_counter_register(&sent, &(struct pcpu_metric_desc){
		.name = "sent_bytes", .help = "Bytes sent.", .unit = "bytes",
		.kind = PCPU_METRIC_COUNTER });
	err |= pcpu_counter_register(&temp, &(struct pcpu_metric_desc){
		.name = "temperature_celsius", .help = "Temperature.", .unit = "celsius",
		.kind = PCPU_METRIC_GAUGE });
	vm = pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items, .nr_items = 2 });
	lat = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "request_duration_seconds", .help = "Request latency.", .unit = "seconds",
		.bounds = bounds, .nr_bounds = 4, .scale = 1000000000 });
	delta = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "size_change_bytes", .help = "Size changes.", .unit = "bytes",
		.bounds = sizes, .nr_bounds = 3 });
	responses = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "http_responses", .help = "Responses by code and path.",
		.kind = PCPU_METRIC_COUNTER, .label_names = code_path });
	routes = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "route_latency_seconds", .help = "Latency by route.", .unit = "seconds",
		.kind = PCPU_METRIC_HISTOGRAM, .label_names = route, .bounds = route_bounds,
		.nr_bounds = 2, .scale = 1000 });
	err |= pcpu_gauge_register(&depth, &(struct pcpu_metric_desc){
		.name = "queue_depth", .help = "Jobs waiting.", .kind = PCPU_METRIC_GAUGE });
	err |= pcpu_gauge_double_register(&load, &(struct pcpu_metric_desc){
		.name = "load_ratio", .help = "Load.", .unit = "ratio", .kind = PCPU_METRIC_GAUGE });
	err |= pcpu_gauge_register(&build, &(struct pcpu_metric_desc){
		.name = "app_build", .help = "Build data.", .kind = PCPU_METRIC_INFO,
		.labels = (const char *const[]){ "version", "0.3.0", NULL } });
	sizes_summary = pcpu_summary_create(&(struct pcpu_summary_desc){
		.name = "rpc_size_bytes", .help = "RPC sizes.", .unit = "bytes",
		.quantiles = objectives, .nr_quantiles = 3 });
	if (err || !vm || !lat || !delta || !responses || !routes || !sizes_summary ||
	    pcpu_stat_register(vm, "vm"))
		return 1;
	for (int64_t v = 1; v <= 10; v++)
		pcpu_summary_observe(sizes_summary, v);
	pcpu_counter_add(pcpu_family_get(responses, (const char *const[]){ "200", "/", NULL }), 5);
	route_a = pcpu_family_get_histogram(routes, (const char *const[]){ "/a\\", NULL });
	if (!route_a)
		return 1;
	pcpu_histogram_observe(route_a, 50);
	pcpu_histogram_observe(route_a, 500);
	pcpu_histogram_observe(route_a, 5000);
	pcpu_counter_add(pcpu_family_get(responses,
					 (const char *const[]){ "404", "/a\"b\\c\nd", NULL }), 1);
	pcpu_counter_add(&requests_defined, 1);
	pcpu_counter_add(&received_defined, 4096);
	pcpu_counter_add(&a, 12);
	pcpu_counter_add(&b, 3);
	pcpu_counter_add(&sent, 1 << 20);
	pcpu_counter_add(&temp, -7);
	pcpu_stat_add(vm, 0, 99);
	pcpu_stat_add(vm, 1, 12345);
	for (int64_t i = 0; i < 100; i++)
		pcpu_histogram_observe(lat, i * 15000000);
	pcpu_histogram_observe(delta, -200);
	pcpu_histogram_observe(delta, 10);
	if (write_to(argv[1], PCPU_METRICS_PROMETHEUS) || write_to(argv[2], PCPU_METRICS_OPENMETRICS))
		return 1;
	/* the third: OpenMetrics with NAME_created samples (since 0.5) */
	if (argc == 4) {
		pcpu_metrics_set_openmetrics_created(1);
		if (write_to(argv[3], PCPU_METRICS_OPENMETRICS))
			return 1;
		pcpu_metrics_set_openmetrics_created(0);
	}
	pcpu_family_destroy(responses);
	pcpu_family_destroy(routes);
	pcpu_gauge_unregister(&depth);
	pcpu_gauge_double_unregister(&load);
	pcpu_gauge_unregister(&build);
	pcpu_histogram_destroy(lat);
	pcpu_histogram_destroy(delta);
	pcpu_summary_destroy(sizes_summary);
	pcpu_stat_destroy(vm);
	pcpu_counter_destroy_many(&a, 1);
	pcpu_counter_destroy(&b);
	pcpu_counter_destroy(&sent);
	pcpu_counter_destroy(&temp);
	return 0;
}
