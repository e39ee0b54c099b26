/* SPDX-License-Identifier: MIT */
/*
 * The per-CPU policy, one copy for every unit (counters, stat sets, shared
 * segments, the kernel drop-in): the defaults, the elastic threshold, the
 * saturating error bound. Why the bound is true on every update path, and
 * why reads are monotone: docs/internals.md, [pending-bound] and
 * [monotone-read]. Publication and the fold are the engine's (fold.h).
 */
#ifndef PCPU_LIB_POLICY_H
#define PCPU_LIB_POLICY_H

#include <stdbool.h>
#include <stdint.h>

/* All CPUs together hold at most 1/accuracy of |value| unfolded, by default. */
#define PCPU_POLICY_ACCURACY 64

/*
 * The default absolute per-CPU threshold floor of native counters, stat
 * sets and shared segments: 32, the kernel's smallest batch, whatever the
 * CPU count. The bound near zero is possible CPUs * floor, so a floor that
 * grew with the CPUs (the kernel's 2 * online, 0.2's default) made it grow
 * as CPUs^2: 1024 * 2048 = 2 Mi for a counter that holds 0 on 1024 CPUs,
 * 32 Ki now. The price: near zero, with more than 16 online CPUs, a CPU
 * folds every 32 of its own events instead of every 2 * online; from
 * |value| = accuracy * possible * 32 (2 Mi at 1024 CPUs) the elastic
 * threshold is above both floors and nothing changes.
 */
#define PCPU_POLICY_FLOOR 32

/*
 * The kernel's percpu_counter_batch, max(32, 2 * online CPUs): the kernel
 * drop-in's fixed batch only (<percpu/percpu_counter.h>), whose bound must
 * stay the kernel's.
 */
static inline int64_t pcpu_policy_kernel_batch(unsigned int online_cpus)
{
	return 2 * (int64_t)online_cpus > PCPU_POLICY_FLOOR ? 2 * (int64_t)online_cpus
							    : PCPU_POLICY_FLOOR;
}

/* |v|, defined for INT64_MIN too. */
static inline uint64_t pcpu_magnitude(int64_t v)
{
	return v < 0 ? -(uint64_t)v : (uint64_t)v;
}

/*
 * The elastic threshold for a central value: |central| / divisor (divisor =
 * accuracy * possible CPUs), never below @floor nor above @cap (the slot's
 * range).
 */
static inline uint64_t pcpu_policy_threshold(int64_t central, uint64_t divisor, uint64_t floor,
					     uint64_t cap)
{
	uint64_t t = pcpu_magnitude(central) / divisor;

	if (t < floor)
		t = floor;
	return t > cap ? cap : t;
}


/* The error bound for a largest threshold @threshold_max: CPUs * it, saturated (0 CPUs: 0). */
static inline uint64_t pcpu_policy_bound(uint64_t threshold_max, unsigned int cpus)
{
	return cpus && threshold_max > UINT64_MAX / cpus ? UINT64_MAX : threshold_max * cpus;
}

/* Raises *@max to at least @value (an atomic maximum) [publish-order]. */
static inline void pcpu_policy_raise(uint64_t *max, uint64_t value)
{
	uint64_t now = __atomic_load_n(max, __ATOMIC_RELAXED);

	while (now < value && !__atomic_compare_exchange_n(max, &now, value, true,
							   __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
}

#endif /* PCPU_LIB_POLICY_H */
