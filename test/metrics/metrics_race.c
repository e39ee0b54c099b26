/* SPDX-License-Identifier: MIT */
/*
 * A plain program (Criterion does not run under ThreadSanitizer): adders,
 * observers, scrapers in both formats and a thread that registers and
 * destroys counters, stat sets, histograms and summaries, all at once; .ci/run runs
 * the race suite under TSan. Checks: every write succeeds, the long-lived
 * counter never goes down across scrapes, and the totals are exact.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/registry.h>
#include <percpu/stat.h>
#include <percpu/summary.h>

#define PCPU_CHECK_PROGRAM "metrics-race"
#include "check.h"

#define ADDS 1000000
#define SCRAPES 2000

static struct pcpu_counter hits;
static struct pcpu_histogram *latency;
static struct pcpu_summary *sizes;
static int stop;

static void *adder(void *arg)
{
	(void)arg;
	for (int i = 0; i < ADDS; i++) {
		pcpu_counter_add(&hits, 1);
		pcpu_histogram_observe(latency, i % 1000);
		if (i % 4 == 0)
			CHECK(7, pcpu_summary_observe(sizes, i % 5000) == 0);
	}
	return NULL;
}

static void *churner(void *arg)
{
	static const int64_t bounds[] = { 1, 2 };
	static const struct pcpu_stat_item items[] = { { .name = "x" } };

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct pcpu_counter c;
		struct pcpu_stat *s;
		struct pcpu_histogram *h;

		CHECK(10, pcpu_counter_init(&c, 0) == 0);
		CHECK(11, pcpu_counter_register(&c, &(struct pcpu_metric_desc){
				  .name = "churn", .kind = PCPU_METRIC_GAUGE }) == 0);
		s = pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items, .nr_items = 1 });
		CHECK(12, s && pcpu_stat_register(s, "churn_set") == 0);
		h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
			.name = "churn_hist", .bounds = bounds, .nr_bounds = 2 });
		CHECK(13, h != NULL);
		pcpu_counter_add(&c, 1);
		pcpu_stat_add(s, 0, 1);
		pcpu_histogram_observe(h, 1);
		pcpu_histogram_destroy(h);
		{
			struct pcpu_summary *sm = pcpu_summary_create(&(struct pcpu_summary_desc){
				.name = "churn_summary" });
			double q;

			CHECK(14, sm != NULL);
			CHECK(15, pcpu_summary_observe(sm, 7) == 0);
			CHECK(16, pcpu_summary_quantile(sm, 0.5, &q) == 0 && q == 7);
			pcpu_summary_destroy(sm);
		}
		pcpu_stat_destroy(s);
		pcpu_counter_destroy(&c);
	}
	return NULL;
}

static long long scrape(int i)
{
	char *text = NULL, *p;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	long long v = -1;

	CHECK(20, out != NULL);
	CHECK(21, pcpu_metrics_write(out, i % 2 ? PCPU_METRICS_OPENMETRICS :
						  PCPU_METRICS_PROMETHEUS) == 0);
	fclose(out);
	p = strstr(text, "\nhits_total ");
	CHECK(22, p != NULL);
	v = strtoll(p + strlen("\nhits_total "), NULL, 10);
	free(text);
	return v;
}

int main(void)
{
	enum { ADDERS = 3 };
	pthread_t a[ADDERS], c;
	static const int64_t bounds[] = { 10, 100, 500 };
	long long last = 0;
	uint64_t counts[4], total = 0;

	CHECK(1, pcpu_counter_init(&hits, 0) == 0);
	CHECK(2, pcpu_counter_register(&hits, &(struct pcpu_metric_desc){
			 .name = "hits", .kind = PCPU_METRIC_COUNTER }) == 0);
	latency = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "latency", .bounds = bounds, .nr_bounds = 3 });
	CHECK(3, latency != NULL);
	sizes = pcpu_summary_create(&(struct pcpu_summary_desc){
		.name = "sizes", .quantiles = (const double[]){ 0.5, 0.99 }, .nr_quantiles = 2 });
	CHECK(8, sizes != NULL);
	CHECK(4, pcpu_refresher_start(1) == 0);
	CHECK(5, pthread_create(&c, NULL, churner, NULL) == 0);
	for (int i = 0; i < ADDERS; i++)
		CHECK(6, pthread_create(&a[i], NULL, adder, NULL) == 0);
	for (int i = 0; i < SCRAPES; i++) {
		long long v = scrape(i);

		CHECK(30, v >= last);
		last = v;
	}
	for (int i = 0; i < ADDERS; i++)
		pthread_join(a[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(c, NULL);
	pcpu_refresher_stop();
	CHECK(40, scrape(0) == (long long)ADDERS * ADDS);
	CHECK(41, pcpu_histogram_snapshot(latency, counts, NULL) == 0);
	for (int i = 0; i < 4; i++)
		total += counts[i];
	CHECK(42, total == (uint64_t)ADDERS * ADDS);
	{
		uint64_t n;

		CHECK(43, pcpu_summary_count(sizes, &n, NULL) == 0 &&
				  n == (uint64_t)ADDERS * (ADDS / 4));
	}
	pcpu_summary_destroy(sizes);
	pcpu_histogram_destroy(latency);
	pcpu_counter_destroy(&hits);
	return 0;
}
