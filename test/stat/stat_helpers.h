/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the stat-set tests: pinning the calling thread to one CPU or
 * skipping (so that "this CPU's pending delta" means something; the pinning
 * itself is pcpu_test.h's), and descriptor builders. The rest (PCPU_TEST, the misuse signal, scaling down
 * under valgrind, the generator) comes from test/lib/pcpu_test.h,
 * included here.
 */
#ifndef PCPU_TEST_STAT_HELPERS_H
#define PCPU_TEST_STAT_HELPERS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/registry.h>
#include <percpu/stat.h>

#include "pcpu_test.h"
#include "registry/registry.h"
#include "stat/stat_internal.h"

/* Pins to the first allowed CPU, or skips the test if this machine does not let us. */
static inline int stat_test_pin_or_skip(void)
{
	int cpu = pcpu_test_try_pin_first();

	if (cpu < 0)
		cr_skip_test("cannot pin the thread to a CPU");
	return cpu;
}

/* Item names "item0", "item1", ... that live as long as the process. */
static inline const char *stat_test_name(unsigned int i)
{
	static char names[PCPU_STAT_MAX_ITEMS + 8][16];

	snprintf(names[i], sizeof(names[i]), "item%u", i);
	return names[i];
}

/*
 * Creates a set of @n items named item0..; item i in group groups[i] (all
 * ungrouped if @groups is NULL) with floor @floor (0: default).
 */
static inline struct pcpu_stat *stat_test_create(unsigned int n, const uint32_t *groups,
						 int64_t floor, uint32_t flags)
{
	struct pcpu_stat_item *items = calloc(n, sizeof(*items));
	struct pcpu_stat_desc desc = { .items = items, .nr_items = n, .flags = flags };
	struct pcpu_stat *s;

	cr_assert_not_null(items);
	for (unsigned int i = 0; i < n; i++) {
		items[i].name = stat_test_name(i);
		items[i].group = groups ? groups[i] : 0;
		items[i].floor = floor;
	}
	s = pcpu_stat_create(&desc);
	free(items);
	cr_assert_not_null(s, "pcpu_stat_create: %s", strerror(errno));
	return s;
}

/* Every item: sum is @exact[i], read is within error_bound of it. */
static inline void stat_test_assert_exact(struct pcpu_stat *s, const int64_t *exact)
{
	for (unsigned int i = 0; i < pcpu_stat_count(s); i++) {
		int64_t sum = pcpu_stat_sum(s, i), read = pcpu_stat_read(s, i);
		uint64_t bound = pcpu_stat_error_bound(s, i);

		cr_assert_eq(sum, exact[i], "item %u: sum %" PRId64 " != exact %" PRId64, i, sum,
			     exact[i]);
		cr_assert_leq(pcpu_test_distance(read, exact[i]), bound,
			      "item %u: |read %" PRId64 " - exact %" PRId64 "| > bound %" PRIu64, i,
			      read, exact[i], bound);
	}
}

#endif /* PCPU_TEST_STAT_HELPERS_H */
