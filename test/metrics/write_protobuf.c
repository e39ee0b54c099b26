/* SPDX-License-Identifier: MIT */
/*
 * Writes a known set of metrics as pcpu_metrics_write(...,
 * PCPU_METRICS_PROTOBUF) writes them, for check-protobuf.sh to decode with
 * protoc. "basic": counters (labels, a scale), gauges (int64, double), an
 * info metric and a classic histogram. "native": a native histogram with
 * a classic bound; exit 77 where histograms are not native yet.
 * "summary": a summary of 1 to 10, each in a bucket of its own (below
 * 1 / (gamma - 1)), so that its quantiles are the exact ranks' values.
 *   write-protobuf basic|native|summary FILE
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/summary.h>

static int write_to(const char *path)
{
	FILE *out = fopen(path, "w");
	int err;

	if (!out)
		return -1;
	err = pcpu_metrics_write(out, PCPU_METRICS_PROTOBUF);
	return fclose(out) || err ? -1 : 0;
}

static int basic(const char *path)
{
	static const char *const get[] = { "method", "GET", NULL };
	static const char *const post[] = { "method", "POST", NULL };
	static const int64_t bounds[] = { 1000000, 10000000 };
	static struct pcpu_gauge depth = PCPU_GAUGE_INIT(42);
	static struct pcpu_gauge_double load = PCPU_GAUGE_DOUBLE_INIT(0.25);
	static struct pcpu_gauge build;
	struct pcpu_counter a, b, cpu;
	struct pcpu_histogram *lat;
	int err = 0;

	if (pcpu_counter_init(&a, 0) || pcpu_counter_init(&b, 0) || pcpu_counter_init(&cpu, 0))
		return 1;
	err |= pcpu_counter_register(&a, &(struct pcpu_metric_desc){
		.name = "pb_requests", .help = "Requests \\ served\nby \"us\".",
		.kind = PCPU_METRIC_COUNTER, .labels = get });
	err |= pcpu_counter_register(&b, &(struct pcpu_metric_desc){
		.name = "pb_requests", .help = "Requests \\ served\nby \"us\".",
		.kind = PCPU_METRIC_COUNTER, .labels = post });
	err |= pcpu_counter_register(&cpu, &(struct pcpu_metric_desc){
		.name = "pb_cpu_seconds", .help = "CPU time.", .unit = "seconds",
		.kind = PCPU_METRIC_COUNTER, .scale = 1000000000 });
	err |= pcpu_gauge_register(&depth, &(struct pcpu_metric_desc){
		.name = "pb_queue_depth", .help = "Jobs waiting.", .kind = PCPU_METRIC_GAUGE });
	err |= pcpu_gauge_double_register(&load, &(struct pcpu_metric_desc){
		.name = "pb_load_ratio", .kind = PCPU_METRIC_GAUGE });
	err |= pcpu_gauge_register(&build, &(struct pcpu_metric_desc){
		.name = "pb_build", .help = "Build data.", .kind = PCPU_METRIC_INFO,
		.labels = (const char *const[]){ "version", "0.4.0", NULL } });
	lat = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "pb_latency_seconds", .help = "Latency.", .unit = "seconds",
		.bounds = bounds, .nr_bounds = 2, .scale = 1000000000 });
	if (err || !lat)
		return 1;
	pcpu_counter_add(&a, 12);
	pcpu_counter_add(&b, 3);
	pcpu_counter_add(&cpu, 1500000000);
	pcpu_histogram_observe(lat, 500000);
	pcpu_histogram_observe(lat, 2000000);
	pcpu_histogram_observe(lat, 20000000);
	err = write_to(path);
	/* all freed, so that the sanitizers' leak check passes */
	pcpu_histogram_destroy(lat);
	pcpu_gauge_unregister(&depth);
	pcpu_gauge_double_unregister(&load);
	pcpu_gauge_unregister(&build);
	pcpu_counter_destroy(&a);
	pcpu_counter_destroy(&b);
	pcpu_counter_destroy(&cpu);
	return err ? 1 : 0;
}

static int native(const char *path)
{
	static const int64_t classic[] = { 10 };
	static const int64_t values[] = { 0, 1, 3, 4, 100, 5000 };
	/* schema 0: key k holds (2^(k-1), 2^k]; the top bucket holds 1000: key 10 */
	struct pcpu_histogram_native nat = { .schema = 0, .zero_threshold = 0, .max = 1000 };
	struct pcpu_histogram *h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "pb_size_bytes", .help = "Sizes.", .unit = "bytes", .bounds = classic,
		.nr_bounds = 1, .native = &nat });
	int err;

	if (!h && (errno == EINVAL || errno == ENOTSUP))
		return 77;
	if (!h)
		return 1;
	if (pcpu_histogram_nr_buckets(h) == 2) {
		fprintf(stderr, "histograms are not native yet\n");
		pcpu_histogram_destroy(h);
		return 77;
	}
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		pcpu_histogram_observe(h, values[i]);
	err = write_to(path);
	pcpu_histogram_destroy(h);
	return err ? 1 : 0;
}

static int summary(const char *path)
{
	static const double objectives[] = { 0.5, 0.9, 0.99 };
	struct pcpu_summary *s = pcpu_summary_create(&(struct pcpu_summary_desc){
		.name = "pb_rpc_size_bytes", .help = "Sizes.", .unit = "bytes",
		.labels = (const char *const[]){ "op", "get", NULL }, .quantiles = objectives,
		.nr_quantiles = 3 });
	int err;

	if (!s)
		return 1;
	for (int64_t v = 1; v <= 10; v++)
		pcpu_summary_observe(s, v);
	err = write_to(path);
	pcpu_summary_destroy(s);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "basic") != 0 && strcmp(argv[1], "native") != 0 &&
			  strcmp(argv[1], "summary") != 0)) {
		fprintf(stderr, "usage: %s basic|native|summary FILE\n", argv[0]);
		return 2;
	}
	if (strcmp(argv[1], "summary") == 0)
		return summary(argv[2]);
	return strcmp(argv[1], "basic") == 0 ? basic(argv[2]) : native(argv[2]);
}
