/* SPDX-License-Identifier: MIT */
/*
 * The four implementations under test behind one set of operations: percpu
 * itself and the three baselines of baselines.h.
 *
 * The operations switch on the implementation and are always inlined; the
 * workload loops call them with a constant implementation, so the compiler
 * specialises one loop per implementation and each update is exactly the
 * implementation's own inline code, with no indirect call in between.
 */
#ifndef PERCPU_BENCH_IMPLS_H
#define PERCPU_BENCH_IMPLS_H

#include <stdint.h>

#include <percpu/counter.h>

#include "baselines.h"

#define BENCH_INLINE static inline __attribute__((always_inline))

enum bench_impl {
	IMPL_PERCPU,
	IMPL_ATOMIC,
	IMPL_KERNEL,
	IMPL_THREAD,
	NR_IMPLS,
};

/* "percpu", "atomic", "kernel", "thread" */
extern const char *const impl_names[NR_IMPLS];
/* one-line descriptions for the report */
extern const char *const impl_descriptions[NR_IMPLS];

/*
 * The update path @impl takes in this process: for percpu and the kernel
 * port "rseq" or "atomic (fallback)" (the same choice for both: rseq unless
 * it is unavailable or PCPU_FORCE_FALLBACK=1); fixed for the other two.
 */
const char *impl_path(enum bench_impl impl);

/* One counter of one implementation, each in its own cachelines. */
struct bench_counter {
	enum bench_impl impl;
	struct pcpu_counter *percpu;
	struct atomic_counter *atomic;
	struct kp_counter *kernel;
	struct thread_slots slots;
};

/* 0 or a negative errno. @nr_threads: how many threads will update it. */
int bench_counter_init(struct bench_counter *c, enum bench_impl impl, int64_t value,
		       unsigned int nr_threads);
void bench_counter_destroy(struct bench_counter *c);

/* The exact value, for checking a run (only call at quiescence). */
int64_t bench_counter_exact(struct bench_counter *c);

/*
 * What one thread updates: the counter's pointers copied into a small
 * struct passed by value, so they stay in registers in the loops. The
 * per-thread slot's address (own) is resolved here, once per thread before
 * its loop starts, as a user keeps a pointer to its thread's slot: the loop
 * does a plain load, add and store on it and nothing else.
 */
struct bench_target {
	struct pcpu_counter *percpu;
	struct atomic_counter *atomic;
	struct kp_counter *kernel;
	struct thread_slots *slots;
	struct thread_slot *own; /* this thread's slot */
};

struct bench_target bench_target_of(struct bench_counter *c, unsigned int thread);

BENCH_INLINE void impl_add(enum bench_impl impl, struct bench_target t, int64_t amount)
{
	switch (impl) {
	case IMPL_PERCPU:
		pcpu_counter_add(t.percpu, amount);
		break;
	case IMPL_ATOMIC:
		atomic_counter_add(t.atomic, amount);
		break;
	case IMPL_KERNEL:
		kp_counter_add(t.kernel, amount);
		break;
	case IMPL_THREAD:
	case NR_IMPLS:
		thread_slot_add(t.own, amount);
		break;
	}
}

/*
 * -1, 0 or 1 as the value compares with @rhs, the cheapest way each
 * implementation honestly can: percpu and the kernel port from their
 * approximate value when their error bound allows, precisely otherwise;
 * the atomic with one load (it is always exact); the per-thread slots by
 * summing every slot (they have no central value to approximate from).
 */
BENCH_INLINE int impl_compare(enum bench_impl impl, struct bench_target t, int64_t rhs)
{
	int64_t v;

	switch (impl) {
	case IMPL_PERCPU:
		return pcpu_counter_compare(t.percpu, rhs);
	case IMPL_ATOMIC:
		v = atomic_counter_read(t.atomic);
		break;
	case IMPL_KERNEL:
		return kp_counter_compare(t.kernel, rhs, kp_counter_batch);
	case IMPL_THREAD:
	case NR_IMPLS:
	default:
		v = thread_slots_sum(t.slots);
		break;
	}
	return v > rhs ? 1 : v < rhs ? -1 : 0;
}

/* The approximate read: one load, except the per-thread slots (a sum). */
int64_t impl_read(enum bench_impl impl, struct bench_target t);
/* The precise read. */
int64_t impl_sum(enum bench_impl impl, struct bench_target t);
/* A result within @delta of exact, and a read() within it afterwards. */
int64_t impl_sync_if_delta_above(enum bench_impl impl, struct bench_target t, uint64_t delta);

#endif /* PERCPU_BENCH_IMPLS_H */
