/* SPDX-License-Identifier: MIT */
/* The implementations under test (see impls.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/cpu.h>

#include "impls.h"
#include "placement.h"

const char *const impl_names[NR_IMPLS] = {
	[IMPL_PERCPU] = "percpu",
	[IMPL_ATOMIC] = "atomic",
	[IMPL_KERNEL] = "kernel",
	[IMPL_THREAD] = "thread",
};

const char *const impl_descriptions[NR_IMPLS] = {
	[IMPL_PERCPU] = "libpercpu pcpu_counter (elastic batch)",
	[IMPL_ATOMIC] = "one shared int64_t, __atomic_fetch_add",
	[IMPL_KERNEL] = "kernel's fixed-batch percpu_counter, 4 KiB stride",
	[IMPL_THREAD] = "padded slot per thread, plain add (the limit)",
};

const char *impl_path(enum bench_impl impl)
{
	switch (impl) {
	case IMPL_PERCPU:
		return pcpu_cpu_setup() == PCPU_CPU_RSEQ ? "rseq" : "atomic (fallback)";
	case IMPL_ATOMIC:
		return "lock add";
	case IMPL_KERNEL:
		return kp_path_current() == KP_PATH_RSEQ ? "rseq" : "atomic (fallback)";
	default:
		return "plain add";
	}
}

/* A zeroed object of @size bytes in cachelines of its own. */
static void *alloc_lines(size_t size)
{
	size_t rounded = (size + BENCH_CACHELINE - 1) / BENCH_CACHELINE * BENCH_CACHELINE;
	void *p = aligned_alloc(BENCH_CACHELINE, rounded);

	if (p)
		memset(p, 0, rounded);
	return p;
}

int bench_counter_init(struct bench_counter *c, enum bench_impl impl, int64_t value,
		       unsigned int nr_threads)
{
	int err = 0;

	memset(c, 0, sizeof(*c));
	c->impl = impl;
	switch (impl) {
	case IMPL_PERCPU:
		/* the rseq adds' counters clear of rseq_cs: see placement.h */
		c->percpu = bench_percpu_new(value);
		if (!c->percpu)
			return -errno;
		break;
	case IMPL_ATOMIC:
		c->atomic = alloc_lines(sizeof(*c->atomic));
		if (!c->atomic)
			return -ENOMEM;
		atomic_counter_init(c->atomic, value);
		break;
	case IMPL_KERNEL:
		c->kernel = bench_alloc_clear_of_rseq(sizeof(*c->kernel), sizeof(*c->kernel));
		if (!c->kernel)
			return -ENOMEM;
		err = kp_counter_init(c->kernel, value);
		break;
	case IMPL_THREAD:
	case NR_IMPLS:
		err = thread_slots_init(&c->slots, value, nr_threads);
		break;
	}
	if (err)
		bench_counter_destroy(c);
	return err;
}

void bench_counter_destroy(struct bench_counter *c)
{
	bench_percpu_free(c->percpu);
	if (c->kernel)
		kp_counter_destroy(c->kernel);
	thread_slots_destroy(&c->slots);
	free(c->atomic);
	bench_free_clear(c->kernel);
	memset(c, 0, sizeof(*c));
}

int64_t bench_counter_exact(struct bench_counter *c)
{
	return impl_sum(c->impl, bench_target_of(c, 0));
}

struct bench_target bench_target_of(struct bench_counter *c, unsigned int thread)
{
	struct bench_target t = {
		.percpu = c->percpu,
		.atomic = c->atomic,
		.kernel = c->kernel,
		.slots = &c->slots,
		.own = c->slots.slots && thread < c->slots.nr_slots ? &c->slots.slots[thread] : NULL,
	};

	return t;
}

/* What read() (approximate) or sum() (@precise) answers; inlined into each, @precise folded. */
static inline int64_t impl_value(enum bench_impl impl, struct bench_target t, bool precise)
{
	switch (impl) {
	case IMPL_PERCPU:
		return precise ? pcpu_counter_sum(t.percpu) : pcpu_counter_read(t.percpu);
	case IMPL_ATOMIC:
		return atomic_counter_read(t.atomic);
	case IMPL_KERNEL:
		return precise ? kp_counter_sum(t.kernel) : kp_counter_read(t.kernel);
	default:
		return thread_slots_sum(t.slots);
	}
}

int64_t impl_read(enum bench_impl impl, struct bench_target t)
{
	return impl_value(impl, t, false);
}

int64_t impl_sum(enum bench_impl impl, struct bench_target t)
{
	return impl_value(impl, t, true);
}

int64_t impl_sync_if_delta_above(enum bench_impl impl, struct bench_target t, uint64_t delta)
{
	switch (impl) {
	case IMPL_PERCPU:
		return pcpu_counter_sync_if_delta_above(t.percpu, delta);
	case IMPL_ATOMIC:
		return atomic_counter_read(t.atomic);
	case IMPL_KERNEL:
		return kp_counter_sync_if_delta_above(t.kernel, delta);
	default:
		/* nothing to fold into: the sum is the only precise answer */
		return thread_slots_sum(t.slots);
	}
}
