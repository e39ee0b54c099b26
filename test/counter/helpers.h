/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the counter, registry and kernel tests: the default
 * floor and the bound checks that nearly every counter test makes. The rest
 * (PCPU_TEST, the misuse signal, scaling down under valgrind, pinning, the
 * generator, the clock) comes from test/lib/pcpu_test.h, included here.
 */
#ifndef PCPU_TEST_HELPERS_H
#define PCPU_TEST_HELPERS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/counter.h>

#include "pcpu_test.h"

/* The default per-CPU floor, as the header documents it: 32 at any CPU count. */
static inline int64_t pcpu_test_default_floor(void)
{
	return 32;
}

/* sum is exact and read is within the error bound of it. */
#define pcpu_test_assert_exact(c, exact)                                                  \
	do {                                                                              \
		int64_t pt_exact_ = (exact);                                              \
		int64_t pt_sum_ = pcpu_counter_sum(c);                                    \
		int64_t pt_read_ = pcpu_counter_read(c);                                  \
		uint64_t pt_bound_ = pcpu_counter_error_bound(c);                         \
		cr_assert_eq(pt_sum_, pt_exact_, "sum %" PRId64 " != exact %" PRId64,     \
			     pt_sum_, pt_exact_);                                         \
		cr_assert_leq(pcpu_test_distance(pt_read_, pt_exact_), pt_bound_,         \
			      "|read %" PRId64 " - exact %" PRId64 "| > bound %" PRIu64,  \
			      pt_read_, pt_exact_, pt_bound_);                            \
	} while (0)

#endif /* PCPU_TEST_HELPERS_H */
