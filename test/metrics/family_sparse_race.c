/* SPDX-License-Identifier: MIT */
/*
 * A label family of sparse native histograms (pcpu_family_create_sparse())
 * under concurrency, where family_race.c covers families of counters and
 * sparse_race.c one sparse histogram (a plain program: .ci/run runs the
 * race suite under ThreadSanitizer): observers that look children up and
 * observe into them past their bucket cap, so that each child reduces its
 * schema on its own; a thread that removes some children while a later
 * get makes them again; scrapes of the registry in the three formats; all
 * at once. Checks: every call succeeds; each child never removed holds
 * exactly what the observers' shadows tallied for it (count, sum, zero
 * bucket, every key at the schema it reduced to); every observation into
 * the other children is in one of them, live or removed.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <percpu/family.h>
#include <percpu/histogram.h>
#include <percpu/metrics_registry.h>

#include "helpers.h"
#define PCPU_CHECK_PROGRAM "family-sparse-race"
#include "check.h"
/* the shadow's checks: the failure said, then exit 50 */
#define SHADOW_ASSERT(cond, ...)                                                             \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			fprintf(stderr, PCPU_CHECK_PROGRAM ": " __VA_ARGS__);                 \
			fputc('\n', stderr);                                                  \
			CHECK(50, 0);                                                         \
		}                                                                             \
	} while (0)
#include "sparse_shadow.h"

#define OBSERVERS 3
#define ROUNDS 100000
#define SCRAPES 300
#define KEPT 3    /* children never removed: the first KEPT routes */
#define CHURNED 2 /* children removed and made again: the others */
#define MAX_REMOVALS 1000
#define SCHEMA 8

static const char *const routes[KEPT + CHURNED] = { "k0", "k1", "k2", "c0", "c1" };
static struct pcpu_family *family;
static int stop;
/* ROUNDS and SCRAPES, a tenth of them under valgrind (PCPU_TEST_SMALL) */
static int rounds, scrapes;

struct observer {
	unsigned int seed;
	struct shadow kept[KEPT]; /* what it observed into each kept child */
	uint64_t churned;         /* how many it observed into the others */
};

/* The children the remover took out, each once (read after it is joined). */
static struct pcpu_histogram *removed[MAX_REMOVALS];
static int nr_removed;

/*
 * Multiples of 2^-20 from 2^-12 to 2^12, either sign, now and then 0: the
 * sums are exact at sum_scale 2^20, and 24 powers of two of both signs
 * cannot fit in 20 buckets at schema 8.
 */
static double value(unsigned int *seed)
{
	double v = ldexp(1.0 + rand_r(seed) / (double)RAND_MAX, rand_r(seed) % 24 - 12);

	v = ldexp(round(ldexp(v, 20)), -20);
	if (rand_r(seed) % 4 == 0)
		return -v;
	return rand_r(seed) % 100 == 0 ? 0 : v;
}

static void *observer(void *arg)
{
	struct observer *o = arg;

	for (int r = 0; r < rounds; r++) {
		int c = rand_r(&o->seed) % (KEPT + CHURNED);
		struct pcpu_histogram *h =
			pcpu_family_get_histogram(family, (const char *const[]){ routes[c], NULL });
		double v = value(&o->seed);

		CHECK(10, h != NULL);
		/* whole values through the integer observe (scale 1), the rest as doubles */
		if (v == floor(v))
			pcpu_histogram_observe(h, (int64_t)v);
		else
			CHECK(11, pcpu_histogram_observe_double(h, v) == 0);
		if (c < KEPT)
			shadow_add(&o->kept[c], v, ldexp(1, -128), SCHEMA);
		else
			o->churned++;
	}
	return NULL;
}

/*
 * Removes the churned children in turn, each after reading it once, until
 * the observers are done (each churned route at least once, however late
 * this thread starts).
 */
static void *remover(void *arg)
{
	(void)arg;
	while (nr_removed < MAX_REMOVALS &&
	       (nr_removed < CHURNED || !__atomic_load_n(&stop, __ATOMIC_RELAXED))) {
		const char *const tuple[] = { routes[KEPT + nr_removed % CHURNED], NULL };
		struct pcpu_histogram *h = pcpu_family_get_histogram(family, tuple);
		uint64_t count;

		CHECK(20, h != NULL);
		CHECK(21, pcpu_histogram_snapshot(h, &count, NULL) == 0);
		/* no one else removes: the child got is the one removed */
		CHECK(22, pcpu_family_remove(family, tuple) == 0);
		removed[nr_removed++] = h;
		nanosleep(&(struct timespec){ .tv_nsec = 200000 }, NULL);
	}
	return NULL;
}

/* What the final walk of the registry gave for each route. */
struct got {
	int samples[KEPT + CHURNED];
	int32_t schema[KEPT + CHURNED];
	struct shadow kept[KEPT];
	uint64_t churned; /* the count of the live churned children */
};

static int grab(const struct pcpu_metric_sample *s, void *arg)
{
	struct got *g = arg;
	int at = -1;

	if (strcmp(s->name, "race_sparse_seconds") != 0)
		return 0;
	CHECK(40, s->flags & PCPU_METRIC_SAMPLE_F_SPARSE);
	for (int i = 0; i < KEPT + CHURNED; i++)
		if (strcmp(s->labels[1], routes[i]) == 0)
			at = i;
	CHECK(41, at >= 0);
	g->samples[at]++;
	g->schema[at] = s->schema;
	if (at < KEPT)
		shadow_from_sample(&g->kept[at], s);
	else
		g->churned += s->count;
	return 0;
}

int main(void)
{
	static const char *const names[] = { "route", NULL };
	static const enum pcpu_metrics_format formats[] = {
		PCPU_METRICS_PROMETHEUS, PCPU_METRICS_OPENMETRICS, PCPU_METRICS_PROTOBUF
	};
	static struct observer o[OBSERVERS];
	static struct shadow total[KEPT], want;
	static struct got g;
	struct pcpu_metrics_registry *reg = pcpu_metrics_registry_create(NULL);
	pthread_t t[OBSERVERS], rm;
	uint64_t churned = 0, found = 0;

	CHECK(1, reg != NULL);
	family = pcpu_family_create_sparse(
		&(struct pcpu_family_desc){ .name = "race_sparse_seconds",
					    .kind = PCPU_METRIC_HISTOGRAM, .label_names = names,
					    .registry = reg },
		&(struct pcpu_histogram_sparse){ .schema = SCHEMA, .max_buckets = 20,
						 .sum_scale = INT64_C(1) << 20 });
	CHECK(2, family != NULL);
	rounds = getenv("PCPU_TEST_SMALL") ? ROUNDS / 10 : ROUNDS;
	scrapes = getenv("PCPU_TEST_SMALL") ? SCRAPES / 10 : SCRAPES;
	/* every scrape shows the kept children, made before anything runs */
	for (int c = 0; c < KEPT; c++)
		CHECK(3, pcpu_family_get_histogram(family, (const char *const[]){ routes[c], NULL }));
	CHECK(4, pthread_create(&rm, NULL, remover, NULL) == 0);
	for (int i = 0; i < OBSERVERS; i++) {
		o[i].seed = 11u + (unsigned int)i;
		CHECK(5, pthread_create(&t[i], NULL, observer, &o[i]) == 0);
	}
	for (int i = 0; i < scrapes; i++) {
		char *body = metrics_registry_text(reg, formats[i % 3]);

		CHECK(31, body != NULL);
		CHECK(32, formats[i % 3] == PCPU_METRICS_PROTOBUF || strstr(body, "route=\"k2\""));
		free(body);
	}
	for (int i = 0; i < OBSERVERS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(rm, NULL);

	for (int i = 0; i < OBSERVERS; i++) {
		for (int c = 0; c < KEPT; c++)
			shadow_merge(&total[c], &o[i].kept[c]);
		churned += o[i].churned;
	}
	CHECK(42, pcpu_metrics_registry_foreach(reg, grab, &g) == 0);
	for (int c = 0; c < KEPT; c++) {
		CHECK(43, g.samples[c] == 1);
		/* 20 buckets at schema 8: every kept child reduced */
		CHECK(44, g.schema[c] < SCHEMA);
		CHECK(45, g.kept[c].count == total[c].count);
		CHECK(46, g.kept[c].sum == total[c].sum);
		CHECK(47, g.kept[c].zero == total[c].zero);
		CHECK(48, shadow_in_keys(&g.kept[c]) + g.kept[c].zero == g.kept[c].count);
		shadow_reduce(&want, &total[c], SCHEMA, g.schema[c]);
		shadow_assert_same(&g.kept[c], &want, routes[c]);
	}
	/* the churned observations: in the live children or the removed ones */
	for (int i = 0; i < nr_removed; i++) {
		uint64_t count;

		CHECK(60, pcpu_histogram_snapshot(removed[i], &count, NULL) == 0);
		found += count;
	}
	CHECK(61, nr_removed >= CHURNED);
	CHECK(62, found + g.churned == churned);
	printf("family-sparse-race: %d observations, %d removals, schemas %d %d %d\n",
	       OBSERVERS * rounds, nr_removed, g.schema[0], g.schema[1], g.schema[2]);
	pcpu_family_destroy(family);
	CHECK(63, pcpu_metrics_registry_destroy(reg) == 0);
	return 0;
}
