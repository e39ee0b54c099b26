/* SPDX-License-Identifier: MIT */
#ifndef PCPU_LIB_CPU_INTERNAL_H
#define PCPU_LIB_CPU_INTERNAL_H

#include <sched.h>

#include <percpu/cpu.h>

/* Set once by pcpu_cpu_possible() (cpu_count.c); 0 before. */
extern unsigned int pcpu_nr_possible;

/* sched_getcpu(), or -1 for a CPU number the arena has no stride for. */
int pcpu_sched_cpu(void);

/*
 * pcpu_cpu_possible() without the call and pthread_once() once set up:
 * sum(), compare() and error_bound() use it on every call.
 */
static inline unsigned int cpu_possible(void)
{
	unsigned int n = __atomic_load_n(&pcpu_nr_possible, __ATOMIC_RELAXED);

	return pcpu_likely(n) ? n : pcpu_cpu_possible();
}

/*
 * Testing hook, for the scale model (bench/scale): the library believes it
 * has @possible possible and @online online CPUs, so the arena gives every
 * chunk @possible strides and every loop over the CPUs walks them all, while
 * threads still run on the real CPUs. Must come before anything asks for the
 * CPU counts (the first counter, stat set or segment). 0; -EINVAL if
 * @online is 0 or above @possible, or @possible is below the real possible
 * CPUs (an inline add indexes strides by the real CPU number); -EBUSY if the
 * counts were already set up otherwise.
 */
int pcpu_cpu_model(unsigned int possible, unsigned int online);

/* CPU @cpu's copy of the per-CPU object whose CPU-0 copy is @cpu0. */
static inline void *cpu_copy(void *cpu0, unsigned int cpu)
{
	return (char *)cpu0 + ((size_t)cpu << PCPU_STRIDE_SHIFT);
}

/*
 * The rseq fence: when pcpu_cpu_fence() returns, every restartable sequence
 * that was in flight on any CPU when it was called (in this process) has
 * committed or aborted, so one that starts later reads what the caller
 * stored before. membarrier(2)'s MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ.
 * pcpu_cpu_fence_setup() registers the process for it, once: 0, or a
 * negative errno if the kernel has no such fence (then objects that need it
 * use the atomic path). pcpu_cpu_fence() must only be called after a
 * successful setup; it cannot fail then.
 */
#define PCPU_FENCE_UNKNOWN 1
extern int pcpu_fence_state; /* 0, a negative errno, or PCPU_FENCE_UNKNOWN */
int pcpu_cpu_fence_setup_once(void);

/* One load once set up: limited adds ask on every call. */
static inline int pcpu_cpu_fence_setup(void)
{
	int state = __atomic_load_n(&pcpu_fence_state, __ATOMIC_ACQUIRE);

	return pcpu_likely(state != PCPU_FENCE_UNKNOWN) ? state : pcpu_cpu_fence_setup_once();
}

void pcpu_cpu_fence(void);

/*
 * Waiting politely for another thread (a fold to end, a walker to leave):
 * spin a little, then give the CPU away. @spins starts at 0.
 */
static inline void pcpu_relax(unsigned int *spins)
{
	if (++*spins < 64) {
		pcpu_arch_relax();
		return;
	}
	sched_yield();
}

#endif /* PCPU_LIB_CPU_INTERNAL_H */
