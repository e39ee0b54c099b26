/* SPDX-License-Identifier: MIT */
/*
 * A plain program (Criterion does not run under ThreadSanitizer):
 * pcpu_family_remove_matching() in a loop while threads get and add to
 * children it must not remove (through a curried view and through the
 * family), and a thread keeps making children it does remove. Checks: no
 * add to a surviving child is lost, a surviving child is never replaced,
 * and every child made is counted once as removed or found at the end.
 * Removed children are reclaimed between rounds, when no thread holds a
 * pointer to one (the header's rule); the race suite runs it under TSan,
 * and valgrind sees the frees.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <percpu/family.h>

#define PCPU_CHECK_PROGRAM "family-partial-race"
#include "check.h"

#define ADDERS 2
#define ROUNDS 4
#define ADDS 50000
#define MADE 4000

static struct pcpu_family *family;
static struct pcpu_family_curried *keep_view;
static int making;

struct adder {
	int id;
	struct pcpu_counter *child;
};

static void *adder(void *arg)
{
	struct adder *a = arg;
	char path[16];

	snprintf(path, sizeof(path), "/keep%d", a->id);
	for (int i = 0; i < ADDS; i++) {
		/* every other get through the view: both find the same child */
		struct pcpu_counter *c =
			i & 1 ? pcpu_family_curried_get(keep_view, (const char *const[]){ path, NULL })
			      : pcpu_family_get(family, (const char *const[]){ "KEEP", path, NULL });

		CHECK(10, c != NULL);
		CHECK(11, c == a->child);
		pcpu_counter_add(c, 1);
	}
	return NULL;
}

static void *maker(void *arg)
{
	int *made = arg;

	for (int i = 0; i < MADE; i++) {
		char path[16];
		struct pcpu_counter *c;

		snprintf(path, sizeof(path), "/d%d", *made);
		c = pcpu_family_get(family, (const char *const[]){ "DROP", path, NULL });
		CHECK(20, c != NULL);
		pcpu_counter_add(c, 1);
		(*made)++;
	}
	__atomic_store_n(&making, 0, __ATOMIC_RELEASE);
	return NULL;
}

int main(void)
{
	static const char *const names[] = { "method", "path", NULL };
	const char *const drop[] = { "method", "DROP", NULL };
	struct adder a[ADDERS];
	pthread_t t[ADDERS], mk;
	int made = 0, removed = 0, n;

	family = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "partial_race", .kind = PCPU_METRIC_COUNTER, .label_names = names,
		.max_children = 2 * MADE * ROUNDS });
	CHECK(1, family != NULL);
	keep_view = pcpu_family_curry(family, (const char *const[]){ "method", "KEEP", NULL });
	CHECK(2, keep_view != NULL);
	for (int i = 0; i < ADDERS; i++) {
		char path[16];

		snprintf(path, sizeof(path), "/keep%d", i);
		a[i].id = i;
		a[i].child = pcpu_family_get(family, (const char *const[]){ "KEEP", path, NULL });
		CHECK(3, a[i].child != NULL);
	}
	for (int r = 0; r < ROUNDS; r++) {
		__atomic_store_n(&making, 1, __ATOMIC_RELEASE);
		for (int i = 0; i < ADDERS; i++)
			CHECK(4, pthread_create(&t[i], NULL, adder, &a[i]) == 0);
		CHECK(5, pthread_create(&mk, NULL, maker, &made) == 0);
		while (__atomic_load_n(&making, __ATOMIC_ACQUIRE)) {
			n = pcpu_family_remove_matching(family, drop);
			CHECK(30, n >= 0);
			removed += n;
		}
		for (int i = 0; i < ADDERS; i++)
			pthread_join(t[i], NULL);
		pthread_join(mk, NULL);
		/* no thread holds a removed child now */
		pcpu_family_reclaim(family);
	}
	n = pcpu_family_remove_matching(family, drop);
	CHECK(40, n >= 0);
	removed += n;
	CHECK(41, removed == made);
	CHECK(42, pcpu_family_count(family) == ADDERS);
	for (int i = 0; i < ADDERS; i++)
		CHECK(43, pcpu_counter_sum(a[i].child) == (int64_t)ADDS * ROUNDS);
	printf("family-partial-race: %d children made and removed in %d rounds, %d adds kept\n",
	       made, ROUNDS, ADDERS * ADDS * ROUNDS);
	pcpu_family_reclaim(family);
	pcpu_family_curried_free(keep_view);
	pcpu_family_destroy(family);
	return 0;
}
