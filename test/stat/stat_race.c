/* SPDX-License-Identifier: MIT */
/*
 * Every concurrent stat-set operation at once, for ThreadSanitizer
 * (Criterion does not run under TSan, so this is a plain program: exit
 * status 0 or the number of the failed check). Writers add with random signs
 * to the items of random groups and keep shadow tallies; other threads take
 * snapshots, sum, sync and fold (freezing lines now and then), and create and
 * destroy other sets while the refresher hook walks the live sets. At the
 * end: exact sums and snapshots, true bounds, no line left frozen.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <percpu/registry.h>
#include <percpu/stat.h>

#define PCPU_CHECK_PROGRAM "stat-race"
#include "check.h"
#include "stat/stat_internal.h"

enum { ITEMS = 20, WRITERS = 4 };

static struct pcpu_stat *set;
static atomic_bool stop;
static long ops_per_writer = 100000;

static uint64_t next(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return *state >> 33;
}

static void *writer(void *arg)
{
	uint64_t state = (uintptr_t)arg * 2654435761u + 1;
	int64_t *tally = calloc(ITEMS, sizeof(*tally));

	CHECK(1, tally != NULL);
	for (long op = 0; op < ops_per_writer; op++) {
		unsigned int group = (unsigned int)(next(&state) % 5);

		/* item i is in group i % 5: bump the 4 items of one group */
		for (unsigned int i = group; i < ITEMS; i += 5) {
			int64_t a = (int64_t)(next(&state) % 9) - 4;

			if (next(&state) % 1024 == 0)
				a *= 1 << 20;
			pcpu_stat_add(set, i, a);
			tally[i] += a;
		}
	}
	return tally;
}

static void *reader(void *arg)
{
	uint64_t state = (uintptr_t)arg;
	int64_t values[ITEMS];
	uint64_t bounds[ITEMS];

	while (!atomic_load(&stop)) {
		unsigned int item = (unsigned int)(next(&state) % ITEMS);

		switch (next(&state) % 5) {
		case 0: CHECK(2, pcpu_stat_snapshot(set, values, bounds) == 0); break;
		case 1: (void)pcpu_stat_sum(set, item); break;
		case 2: (void)pcpu_stat_sync_if_delta_above(set, item, next(&state) % 64); break;
		case 3: pcpu_stat_fold_all(set); break;
		default: (void)pcpu_stat_read(set, item); (void)pcpu_stat_error_bound(set, item);
		}
		/* freeze instead of reading optimistically, now and then */
		if (next(&state) % 16 == 0) {
			pcpu_stat_debug_optimistic_tries(0);
			(void)pcpu_stat_sum(set, item);
			pcpu_stat_debug_optimistic_tries(4);
		}
	}
	return NULL;
}

static void *churner(void *arg)
{
	struct pcpu_stat_item items[3] = { { .name = "a" }, { .name = "b", .group = 1 },
					   { .name = "c", .group = 1 } };
	struct pcpu_stat_desc desc = { .items = items, .nr_items = 3 };

	(void)arg;
	while (!atomic_load(&stop)) {
		struct pcpu_stat *s = pcpu_stat_create(&desc);

		CHECK(3, s != NULL);
		pcpu_stat_add(s, 1, 5);
		pcpu_registry_fold_all();
		CHECK(4, pcpu_stat_sum(s, 1) == 5);
		pcpu_stat_destroy(s);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct pcpu_stat_item items[ITEMS];
	struct pcpu_stat_desc desc = { .items = items, .nr_items = ITEMS };
	char names[ITEMS][8];
	pthread_t w[WRITERS], r[2], c;
	int64_t exact[ITEMS] = { 0 }, values[ITEMS];

	if (argc > 1)
		ops_per_writer = atol(argv[1]);
	for (unsigned int i = 0; i < ITEMS; i++) {
		snprintf(names[i], sizeof(names[i]), "i%u", i);
		items[i] = (struct pcpu_stat_item){ .name = names[i], .group = i % 5 + 1,
						    .floor = i % 2 ? 4 : 0 };
	}
	set = pcpu_stat_create(&desc);
	CHECK(5, set != NULL);
	for (uintptr_t t = 0; t < 2; t++)
		CHECK(6, pthread_create(&r[t], NULL, reader, (void *)(t + 7)) == 0);
	CHECK(6, pthread_create(&c, NULL, churner, NULL) == 0);
	for (uintptr_t t = 0; t < WRITERS; t++)
		CHECK(6, pthread_create(&w[t], NULL, writer, (void *)(t + 1)) == 0);
	for (int t = 0; t < WRITERS; t++) {
		int64_t *tally;

		CHECK(7, pthread_join(w[t], (void **)&tally) == 0);
		for (unsigned int i = 0; i < ITEMS; i++)
			exact[i] += tally[i];
		free(tally);
	}
	atomic_store(&stop, true);
	for (int t = 0; t < 2; t++)
		pthread_join(r[t], NULL);
	pthread_join(c, NULL);

	CHECK(8, pcpu_stat_snapshot(set, values, NULL) == 0);
	for (unsigned int i = 0; i < ITEMS; i++) {
		int64_t read = pcpu_stat_read(set, i);
		uint64_t distance = read > exact[i] ? (uint64_t)read - (uint64_t)exact[i] :
						      (uint64_t)exact[i] - (uint64_t)read;

		CHECK(9, pcpu_stat_sum(set, i) == exact[i]);
		CHECK(10, values[i] == exact[i]);
		CHECK(11, distance <= pcpu_stat_error_bound(set, i));
	}
	for (unsigned int l = 0; l < pcpu_stat_debug_nr_lines(set); l++)
		CHECK(12, pcpu_stat_debug_line_idle(set, l));
	pcpu_stat_fold_all(set);
	for (unsigned int i = 0; i < ITEMS; i++)
		CHECK(13, pcpu_stat_read(set, i) == exact[i]);
	pcpu_stat_destroy(set);
	printf("stat-race: ok\n");
	return 0;
}
