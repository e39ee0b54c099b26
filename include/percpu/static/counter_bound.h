/* SPDX-License-Identifier: MIT */
/*
 * Internal to <percpu/counter.h>: the counter's error bound, which its
 * inline compare() and the library compute alike. It calls nothing, so
 * that the library may use it without a circle through the inline adds.
 * Not API: these names may change in any release.
 */
#ifndef PERCPU_STATIC_COUNTER_BOUND_H
#define PERCPU_STATIC_COUNTER_BOUND_H

#ifndef PERCPU_COUNTER_H
#error "include <percpu/counter.h>, not <percpu/static/counter_bound.h>"
#endif

/*
 * The error bound: armed CPUs times the largest threshold, both only
 * raised (but by set()), so that a product loaded after a read() covers
 * that read [pending-bound]. Below 2^63: threshold_max <= 2^40, and Linux
 * has fewer than 2^23 CPUs.
 */
PCPU_INLINE uint64_t __pcpu_counter_bound(const struct pcpu_counter *c)
{
	return (uint64_t)__atomic_load_n(&c->armed, __ATOMIC_SEQ_CST) *
	       __atomic_load_n(&c->threshold_max, __ATOMIC_SEQ_CST);
}

#endif /* PERCPU_STATIC_COUNTER_BOUND_H */
