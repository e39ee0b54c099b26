/* SPDX-License-Identifier: MIT */
/*
 * A program outside the source tree that uses the metrics library, built
 * by .ci/run with `pkg-config --cflags --libs percpu-metrics` (shared and
 * --static): a label family and a file-scope counter, written as
 * Prometheus text, and the exposition checked for the exact values.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/family.h>
#include <percpu/metrics.h>

PCPU_COUNTER_DEFINE(jobs, "consumer_jobs", "Jobs run.");

static int fail(const char *what)
{
	fprintf(stderr, "consumer-metrics: %s\n", what);
	return 1;
}

int main(void)
{
	const char *const label_names[] = { "method", NULL };
	struct pcpu_family_desc d = { .name = "consumer_requests", .help = "Requests.",
				      .kind = PCPU_METRIC_COUNTER, .label_names = label_names };
	const char *const get[] = { "GET", NULL };
	struct pcpu_family *f = pcpu_family_create(&d);
	struct pcpu_counter *c;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	if (!f)
		return fail("pcpu_family_create failed");
	c = pcpu_family_get(f, get);
	if (!c)
		return fail("pcpu_family_get failed");
	for (int i = 0; i < 1000; i++) {
		pcpu_counter_add(c, 2);
		pcpu_counter_add(&jobs, 1);
	}
	out = open_memstream(&text, &len);
	if (!out || pcpu_metrics_write(out, PCPU_METRICS_PROMETHEUS) != 0 || fclose(out) != 0)
		return fail("pcpu_metrics_write failed");
	fputs(text, stdout);
	if (!strstr(text, "consumer_requests_total{method=\"GET\"} 2000\n") ||
	    !strstr(text, "consumer_jobs_total 1000\n"))
		return fail("the exposition lacks the exact values");
	free(text);
	pcpu_family_destroy(f);
	puts("consumer-metrics: OK");
	return 0;
}
