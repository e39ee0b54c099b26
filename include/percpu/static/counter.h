/* SPDX-License-Identifier: MIT */
/*
 * Internal to <percpu/counter.h>: the slow path of its inline adds, and
 * the precise answer of its inline compare().
 * Not API: these names may change in any release.
 */
#ifndef PERCPU_STATIC_COUNTER_H
#define PERCPU_STATIC_COUNTER_H

#ifndef PERCPU_COUNTER_H
#error "include <percpu/counter.h>, not <percpu/static/counter.h>"
#endif

#include <percpu/static/counter_bound.h>

/*
 * The one out-of-line slow path of the inline
 * adds. @threshold is the caller's fixed threshold, or -1 for the counter's own.
 */
PCPU_EXPORT void __pcpu_counter_add_slow(struct pcpu_counter *c, int64_t amount,
					 int64_t threshold);

/*
 * Adds within threshold @threshold; @fixed is passed
 * on to the slow path.
 */
PCPU_INLINE void __pcpu_counter_add_within(struct pcpu_counter *c, int64_t amount,
					   int64_t threshold, int64_t fixed)
{
	/* the range check first, as its own branch: gcc then folds the mode's load into its compare */
	if (pcpu_likely(c != NULL && c->slots != NULL &&
			__pcpu_within(amount, (uint64_t)threshold))) {
		int added = pcpu_this_cpu_add_owned(&c->slots->value, amount, (uint64_t)threshold,
						    c->mode);

		if (pcpu_likely(added > 0))
			return;
		if (added < 0)
			amount = 0; /* in the slot, past the threshold: only its fold is left */
	}
	__pcpu_counter_add_slow(c, amount, fixed);
}

/*
 * Compare()'s precise answer, from sum(); a bad
 * counter is reported as compare()'s misuse.
 */
PCPU_EXPORT int __pcpu_counter_compare_precise(struct pcpu_counter *c, int64_t rhs);

#endif /* PERCPU_STATIC_COUNTER_H */
