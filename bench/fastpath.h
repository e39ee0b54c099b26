/* SPDX-License-Identifier: MIT */
/*
 * Single-thread cost of one add, next to a plain increment of a
 * thread-local variable; and the example call site whose machine code
 * fastpath-insns.sh counts.
 */
#ifndef PERCPU_BENCH_FASTPATH_H
#define PERCPU_BENCH_FASTPATH_H

#include <percpu/counter.h>

#include "impls.h"

/*
 * The example call site: exactly one pcpu_counter_add(c, 1), not inlined
 * and not static, so `objdump -d --disassemble=bench_add_one` finds it.
 */
void bench_add_one(struct pcpu_counter *c);

/* Results of fastpath_measure(), in CPU nanoseconds per add (medians). */
struct fastpath_result {
	double plain_ns;               /* thread-local ++, through memory */
	double call_site_ns;           /* bench_add_one(): the call included */
	double impl_ns[NR_IMPLS];      /* each implementation, inlined, +1 */
};

/* Measures, @runs times each, about @duration_ms per measurement. */
int fastpath_measure(struct fastpath_result *r, unsigned int runs, unsigned int duration_ms);

#endif /* PERCPU_BENCH_FASTPATH_H */
