/* SPDX-License-Identifier: MIT */
/*
 * A plain program (Criterion does not run under ThreadSanitizer): threads
 * that look children up and add to them, a thread that removes children,
 * scrapers in both formats, and set-style gauges set and added to, all at
 * once; .ci/run runs the race suite under TSan. Checks: every call
 * succeeds, one child per tuple at a time, and every add is in some child,
 * live or removed (a shadow tally against the children's sums).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/family.h>
#include <percpu/gauge.h>
#include <percpu/metrics.h>

#define PCPU_CHECK_PROGRAM "family-race"
#include "check.h"

#define ADDERS 3
#define ROUNDS 200000
#define TUPLES 8
#define SCRAPES 500

static struct pcpu_family *family;
static struct pcpu_gauge depth;
static struct pcpu_gauge_double load;
static int stop;

struct adder {
	int id;
	int64_t added;
	struct pcpu_counter *seen[ROUNDS]; /* the child of each round */
};

static void *adder(void *arg)
{
	struct adder *a = arg;

	for (int r = 0; r < ROUNDS; r++) {
		char v[8];
		struct pcpu_counter *c;

		snprintf(v, sizeof(v), "%d", (r + a->id) % TUPLES);
		c = pcpu_family_get(family, (const char *const[]){ "GET", v, NULL });
		CHECK(10, c != NULL);
		pcpu_counter_add(c, 2);
		a->added += 2;
		a->seen[r] = c;
		pcpu_gauge_add(&depth, 1);
		pcpu_gauge_double_add(&load, 0.5);
	}
	return NULL;
}

static void *remover(void *arg)
{
	(void)arg;
	for (int r = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); r++) {
		char v[8];
		int err;

		snprintf(v, sizeof(v), "%d", r % TUPLES);
		err = pcpu_family_remove(family, (const char *const[]){ "GET", v, NULL });
		CHECK(20, err == 0 || err == -ENOENT);
		pcpu_gauge_set(&depth, r);
	}
	return NULL;
}

static int compare_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return (x > y) - (x < y);
}

int main(void)
{
	static const char *const names[] = { "method", "code", NULL };
	static struct adder a[ADDERS];
	static struct pcpu_counter *all[ADDERS * ROUNDS];
	pthread_t t[ADDERS], rm;
	int64_t added = 0, found = 0;
	size_t n = 0;

	family = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "race_requests", .kind = PCPU_METRIC_COUNTER, .label_names = names });
	CHECK(1, family != NULL);
	CHECK(2, pcpu_gauge_register(&depth, &(struct pcpu_metric_desc){
			 .name = "race_depth", .kind = PCPU_METRIC_GAUGE }) == 0);
	CHECK(3, pcpu_gauge_double_register(&load, &(struct pcpu_metric_desc){
			 .name = "race_load", .kind = PCPU_METRIC_GAUGE }) == 0);
	CHECK(4, pthread_create(&rm, NULL, remover, NULL) == 0);
	for (int i = 0; i < ADDERS; i++) {
		a[i].id = i;
		CHECK(5, pthread_create(&t[i], NULL, adder, &a[i]) == 0);
	}
	for (int i = 0; i < SCRAPES; i++) {
		char *text = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&text, &len);

		CHECK(30, out != NULL);
		CHECK(31, pcpu_metrics_write(out, i % 2 ? PCPU_METRICS_OPENMETRICS :
							  PCPU_METRICS_PROMETHEUS) == 0);
		fclose(out);
		CHECK(32, strstr(text, "race_load ") != NULL);
		free(text);
	}
	for (int i = 0; i < ADDERS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(rm, NULL);
	for (int i = 0; i < ADDERS; i++) {
		added += a[i].added;
		memcpy(all + n, a[i].seen, sizeof(a[i].seen));
		n += ROUNDS;
	}
	qsort(all, n, sizeof(*all), compare_ptr);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || all[i] != all[i - 1])
			found += pcpu_counter_sum(all[i]);
	CHECK(40, found == added);
	CHECK(41, pcpu_gauge_double_get(&load) == 0.5 * ADDERS * ROUNDS);
	pcpu_gauge_unregister(&depth);
	pcpu_gauge_double_unregister(&load);
	pcpu_family_destroy(family);
	return 0;
}
