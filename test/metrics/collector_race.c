/* SPDX-License-Identifier: MIT */
/*
 * A plain program for ThreadSanitizer (.ci/run runs the race suite under
 * it): scrapers in both formats while a thread adds and removes a
 * collector whose argument it frees right after removal (a removal that
 * did not wait for the walks running the collector is a use after free),
 * and threads that get tuples past a family's cap, answered by its
 * overflow child and counted. Checks: every call succeeds, and the
 * refusals and the overflow child's adds are exact.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/family.h>
#include <percpu/metrics.h>

#define PCPU_CHECK_PROGRAM "collector-race"
#include "check.h"

#define GETTERS 2
#define ROUNDS 200000
#define SCRAPERS 2
#define SCRAPES 300
#define CAP 4

static struct pcpu_family *family;
static int stop;

static int depth(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx, void *arg)
{
	struct pcpu_metric_sample s = { .name = "race_collected", .help = "", .unit = "",
					.kind = PCPU_METRIC_GAUGE, .value = *(int64_t *)arg,
					.scale = 1 };

	return emit(&s, ctx);
}

static void *churn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		int64_t *v = malloc(sizeof(*v));

		CHECK(10, v != NULL);
		*v = 7;
		CHECK(11, pcpu_metrics_collector_add(depth, v) == 0);
		CHECK(12, pcpu_metrics_collector_remove(depth, v) == 0);
		*v = -1; /* after removal no walk reads it */
		free(v);
	}
	return NULL;
}

static void *getter(void *arg)
{
	int id = (int)(intptr_t)arg;

	for (int r = 0; r < ROUNDS; r++) {
		char v[16];
		struct pcpu_counter *c;

		snprintf(v, sizeof(v), "%d", (r * GETTERS + id) % (4 * CAP));
		c = pcpu_family_get(family, (const char *const[]){ v, NULL });
		CHECK(20, c != NULL);
		pcpu_counter_add(c, 1);
	}
	return NULL;
}

static void *scraper(void *arg)
{
	for (int i = 0; i < SCRAPES; i++) {
		char *text = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&text, &len);

		CHECK(30, out != NULL);
		CHECK(31, pcpu_metrics_write(out, (i + (int)(intptr_t)arg) % 2 ?
						  PCPU_METRICS_OPENMETRICS :
						  PCPU_METRICS_PROMETHEUS) == 0);
		fclose(out);
		CHECK(32, !strstr(text, "race_collected -1"));
		free(text);
	}
	return NULL;
}

int main(void)
{
	static const char *const names[] = { "k", NULL };
	pthread_t ch, g[GETTERS], s[SCRAPERS];
	struct pcpu_counter *o;
	int64_t own = 0;

	family = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "race_capped", .kind = PCPU_METRIC_COUNTER, .label_names = names,
		.max_children = CAP });
	CHECK(1, family != NULL);
	CHECK(2, pcpu_family_set_overflow(family, (const char *const[]){ "other", NULL }) == 0);
	o = pcpu_family_get(family, (const char *const[]){ "other", NULL });
	CHECK(3, pthread_create(&ch, NULL, churn, NULL) == 0);
	for (intptr_t i = 0; i < SCRAPERS; i++)
		CHECK(4, pthread_create(&s[i], NULL, scraper, (void *)i) == 0);
	for (intptr_t i = 0; i < GETTERS; i++)
		CHECK(5, pthread_create(&g[i], NULL, getter, (void *)i) == 0);
	for (int i = 0; i < GETTERS; i++)
		pthread_join(g[i], NULL);
	for (int i = 0; i < SCRAPERS; i++)
		pthread_join(s[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(ch, NULL);
	for (int i = 0; i < 4 * CAP; i++) {
		char v[16];
		struct pcpu_counter *c;

		snprintf(v, sizeof(v), "%d", i);
		c = pcpu_family_get(family, (const char *const[]){ v, NULL });
		if (c != o)
			own += pcpu_counter_sum(c);
	}
	CHECK(40, pcpu_family_count(family) == CAP + 1);
	CHECK(41, own + pcpu_counter_sum(o) == GETTERS * ROUNDS);
	/* the loop above refused the tuples without a child once more each */
	CHECK(42, pcpu_family_refused(family) == (uint64_t)pcpu_counter_sum(o) + 3 * CAP);
	pcpu_family_destroy(family);
	return 0;
}
