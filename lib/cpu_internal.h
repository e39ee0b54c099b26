/* SPDX-License-Identifier: MIT */
#ifndef PCPU_LIB_CPU_INTERNAL_H
#define PCPU_LIB_CPU_INTERNAL_H

#include <percpu/cpu.h>

/* Set once by pcpu_cpu_setup(); 0 before. */
extern unsigned int pcpu_nr_possible;

/*
 * pcpu_cpu_possible() without the call and pthread_once() once set up:
 * sum(), compare() and error_bound() use it on every call.
 */
static inline unsigned int cpu_possible(void)
{
	unsigned int n = __atomic_load_n(&pcpu_nr_possible, __ATOMIC_RELAXED);

	return pcpu_likely(n) ? n : pcpu_cpu_possible();
}

#endif /* PCPU_LIB_CPU_INTERNAL_H */
