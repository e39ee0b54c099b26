/* SPDX-License-Identifier: MIT */
/*
 * A plain program for ThreadSanitizer (.ci/run runs the race suite under
 * it): observers of a sparse histogram (pcpu_histogram_create_sparse())
 * past its bucket cap, so that its schema goes down and, in a second one,
 * it resets, while scrapers write both in protobuf and read them. Checks:
 * every scrape succeeds, and at the end the first one counts every
 * observation and the second every one not dropped by a reset.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <percpu/histogram.h>
#include <percpu/metrics_registry.h>

#include "kinds/kinds_internal.h"

#define PCPU_CHECK_PROGRAM "sparse-race"
#include "check.h"

#define OBSERVERS 3
#define ROUNDS 20000
#define SCRAPES 200

static struct pcpu_metrics_registry *reg;
static struct pcpu_histogram *reduced, *reset;
static int stop;

static void *observe(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;

	for (int i = 0; i < ROUNDS; i++) {
		double v = (rand_r(&seed) % 2 ? 1 : -1) * (double)(1 + rand_r(&seed) % 100000) / 64;

		pcpu_histogram_observe_double(reduced, v);
		pcpu_histogram_observe_double(reset, v);
	}
	return NULL;
}

static void *scrape(void *arg)
{
	(void)arg;
	for (int i = 0; i < SCRAPES && !__atomic_load_n(&stop, __ATOMIC_RELAXED); i++) {
		FILE *out = fopen("/dev/null", "w");

		CHECK(1, out);
		CHECK(2, pcpu_metrics_registry_write(reg, out, PCPU_METRICS_PROTOBUF) == 0);
		fclose(out);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[OBSERVERS + 1];
	uint64_t counts[1];
	struct pcpu_sparse_stats st;

	reg = pcpu_metrics_registry_create(NULL);
	CHECK(3, reg);
	reduced = pcpu_histogram_create_sparse(
		&(struct pcpu_histogram_desc){ .name = "race_reduced", .registry = reg },
		&(struct pcpu_histogram_sparse){ .schema = 8, .max_buckets = 20 });
	reset = pcpu_histogram_create_sparse(
		&(struct pcpu_histogram_desc){ .name = "race_reset", .registry = reg },
		&(struct pcpu_histogram_sparse){ .schema = 3, .max_buckets = 20, .min_reset_ns = 1 });
	CHECK(4, reduced && reset);
	for (uintptr_t i = 0; i < OBSERVERS; i++)
		CHECK(5, pthread_create(&t[i], NULL, observe, (void *)(i + 1)) == 0);
	CHECK(6, pthread_create(&t[OBSERVERS], NULL, scrape, NULL) == 0);
	for (int i = 0; i < OBSERVERS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t[OBSERVERS], NULL);
	CHECK(7, pcpu_histogram_snapshot(reduced, counts, NULL) == 0);
	CHECK(8, counts[0] == (uint64_t)OBSERVERS * ROUNDS);
	pcpu_sparse_stats(reduced->sparse, &st);
	CHECK(9, st.reductions > 0 && st.populated <= 20);
	CHECK(10, pcpu_histogram_snapshot(reset, counts, NULL) == 0);
	pcpu_sparse_stats(reset->sparse, &st);
	CHECK(11, st.resets > 0);
	CHECK(12, counts[0] + st.discarded == (uint64_t)OBSERVERS * ROUNDS + st.repeated);
	pcpu_histogram_destroy(reduced);
	pcpu_histogram_destroy(reset);
	CHECK(13, pcpu_metrics_registry_destroy(reg) == 0);
	printf("sparse-race: %d observations each, %llu resets\n", OBSERVERS * ROUNDS,
	       (unsigned long long)st.resets);
	return 0;
}
