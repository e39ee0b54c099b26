/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the counter, registry, CPU and kernel tests: pinning the
 * calling thread to its first CPU (so that "this CPU's pending delta" means
 * something) and the bound checks that nearly every test makes. The rest
 * (PCPU_TEST, the misuse signal, scaling down under valgrind, pinning, the
 * generator) comes from test/common/pcpu_test.h, included here.
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
#include <time.h>

#include <percpu/counter.h>

#include "pcpu_test.h"

/* Pins the calling thread to the first CPU it may run on; returns it. */
static inline int pcpu_test_pin_first(void)
{
	int cpus[1];

	cr_assert_eq(pcpu_test_allowed_cpus(cpus, 1), 1, "no CPU in the affinity mask");
	cr_assert(pcpu_test_pin(cpus[0]), "cannot pin to CPU %d", cpus[0]);
	return cpus[0];
}

/* The default per-CPU floor, as the header documents it. */
static inline int64_t pcpu_test_default_floor(void)
{
	int64_t online = (int64_t)pcpu_cpu_online();

	return 2 * online > 32 ? 2 * online : 32;
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

/* Seconds since an arbitrary point, monotonic. */
static inline double pcpu_test_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif /* PCPU_TEST_HELPERS_H */
