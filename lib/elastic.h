/* SPDX-License-Identifier: MIT */
/*
 * The elastic threshold, shared by counters and stat sets: a CPU may hold
 * |central| / divisor pending (divisor = accuracy * possible CPUs), so all
 * CPUs together hold at most 1/accuracy of the value, but never less than
 * a floor (small values stay cheap) nor more than a cap (the slot's range).
 */
#ifndef PCPU_LIB_ELASTIC_H
#define PCPU_LIB_ELASTIC_H

#include <stdint.h>

/* |v|, defined for INT64_MIN too. */
static inline uint64_t pcpu_magnitude(int64_t v)
{
	return v < 0 ? -(uint64_t)v : (uint64_t)v;
}

static inline uint64_t pcpu_elastic_threshold(int64_t central, uint64_t divisor, uint64_t floor,
					      uint64_t cap)
{
	uint64_t t = pcpu_magnitude(central) / divisor;

	if (t < floor)
		t = floor;
	return t > cap ? cap : t;
}

#endif /* PCPU_LIB_ELASTIC_H */
