/* SPDX-License-Identifier: MIT */
/*
 * A label family of summaries under concurrency, as family_race.c for
 * counter families (a plain program: .ci/run runs the race suite under
 * ThreadSanitizer): observers that look children up and observe into
 * them, a thread that removes children and reads quantiles, and scrapers
 * in the three formats, all at once. Checks: every call succeeds, and
 * every observation is in some child, live or removed (the counts of the
 * distinct children seen against the observations made).
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
#include <percpu/summary.h>

#define PCPU_CHECK_PROGRAM "family-summary-race"
#include "check.h"

#define OBSERVERS 3
#define ROUNDS 50000
#define TUPLES 4
#define SCRAPES 300

static struct pcpu_family *family;
static int stop;
/* ROUNDS and SCRAPES, a tenth of them under valgrind (PCPU_TEST_SMALL) */
static int rounds, scrapes;

struct observer {
	int id;
	struct pcpu_summary *seen[ROUNDS]; /* the child of each round */
};

static void *observer(void *arg)
{
	struct observer *o = arg;

	for (int r = 0; r < rounds; r++) {
		char v[8];
		struct pcpu_summary *s;

		snprintf(v, sizeof(v), "%d", (r + o->id) % TUPLES);
		s = pcpu_family_get_summary(family, (const char *const[]){ v, NULL });
		CHECK(10, s != NULL);
		CHECK(11, pcpu_summary_observe(s, r % 1000) == 0);
		o->seen[r] = s;
	}
	return NULL;
}

static void *remover(void *arg)
{
	(void)arg;
	for (int r = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); r++) {
		char v[8];
		struct pcpu_summary *s;
		double q;
		int err;

		snprintf(v, sizeof(v), "%d", r % TUPLES);
		s = pcpu_family_get_summary(family, (const char *const[]){ v, NULL });
		CHECK(20, s != NULL);
		CHECK(21, pcpu_summary_quantile(s, 0.9, &q) == 0);
		err = pcpu_family_remove(family, (const char *const[]){ v, NULL });
		CHECK(22, err == 0 || err == -ENOENT);
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
	static const char *const names[] = { "route", NULL };
	static const double quantiles[] = { 0.5, 0.99 };
	static struct observer o[OBSERVERS];
	static struct pcpu_summary *all[OBSERVERS * ROUNDS];
	static const enum pcpu_metrics_format formats[] = {
		PCPU_METRICS_PROMETHEUS, PCPU_METRICS_OPENMETRICS, PCPU_METRICS_PROTOBUF
	};
	pthread_t t[OBSERVERS], rm;
	uint64_t found = 0, count;
	size_t n = 0;

	family = pcpu_family_create_summary(
		&(struct pcpu_family_desc){ .name = "race_latency", .kind = PCPU_METRIC_SUMMARY,
					    .label_names = names },
		&(struct pcpu_summary_desc){ .quantiles = quantiles, .nr_quantiles = 2,
					     .max_age_ns = 10000000, .age_buckets = 2 });
	CHECK(1, family != NULL);
	rounds = getenv("PCPU_TEST_SMALL") ? ROUNDS / 10 : ROUNDS;
	scrapes = getenv("PCPU_TEST_SMALL") ? SCRAPES / 10 : SCRAPES;
	CHECK(2, pthread_create(&rm, NULL, remover, NULL) == 0);
	for (int i = 0; i < OBSERVERS; i++) {
		o[i].id = i;
		CHECK(3, pthread_create(&t[i], NULL, observer, &o[i]) == 0);
	}
	for (int i = 0; i < scrapes; i++) {
		char *text = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&text, &len);

		CHECK(30, out != NULL);
		CHECK(31, pcpu_metrics_write(out, formats[i % 3]) == 0);
		fclose(out);
		free(text);
	}
	for (int i = 0; i < OBSERVERS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(rm, NULL);
	for (int i = 0; i < OBSERVERS; i++) {
		memcpy(all + n, o[i].seen, (size_t)rounds * sizeof(o[i].seen[0]));
		n += (size_t)rounds;
	}
	qsort(all, n, sizeof(*all), compare_ptr);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || all[i] != all[i - 1]) {
			CHECK(40, pcpu_summary_count(all[i], &count, NULL) == 0);
			found += count;
		}
	CHECK(41, found == (uint64_t)OBSERVERS * (uint64_t)rounds);
	pcpu_family_destroy(family);
	return 0;
}
