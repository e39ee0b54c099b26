/* SPDX-License-Identifier: MIT */
/*
 * Single-thread ns per add (see fastpath.h).
 *
 * The reference is a plain increment of a _Thread_local int64_t with a
 * compiler barrier after it: the barrier forces the load, add and store to
 * happen on every iteration (without it the compiler would keep the value
 * in a register and add once), and costs nothing at run time. That is the
 * cheapest counter a thread can have that still lives in memory.
 *
 * Time is the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so that time
 * spent waiting for a CPU on a shared machine does not count.
 */
#include <errno.h>

#include "fastpath.h"
#include "timing.h"

/* Adds per timed chunk; the clock is read once per chunk. */
#define CHUNK 100000

static _Thread_local int64_t plain_counter;

__attribute__((noinline)) void bench_add_one(struct pcpu_counter *c)
{
	pcpu_counter_add(c, 1);
}

static __attribute__((noinline)) void plain_chunk(void)
{
	for (int i = 0; i < CHUNK; i++) {
		plain_counter++;
		__asm__ __volatile__("" ::: "memory");
	}
}

static __attribute__((noinline)) void call_site_chunk(struct pcpu_counter *c)
{
	for (int i = 0; i < CHUNK; i++)
		bench_add_one(c);
}

BENCH_INLINE void impl_chunk(enum bench_impl impl, struct bench_target t)
{
	for (int i = 0; i < CHUNK; i++)
		impl_add(impl, t, 1);
}

static __attribute__((noinline)) void percpu_chunk(struct bench_target t)
{
	impl_chunk(IMPL_PERCPU, t);
}

static __attribute__((noinline)) void atomic_chunk(struct bench_target t)
{
	impl_chunk(IMPL_ATOMIC, t);
}

static __attribute__((noinline)) void kernel_chunk(struct bench_target t)
{
	impl_chunk(IMPL_KERNEL, t);
}

static __attribute__((noinline)) void thread_chunk(struct bench_target t)
{
	impl_chunk(IMPL_THREAD, t);
}

/* What one measurement runs: a chunk of one kind of add. */
enum what {
	WHAT_PLAIN = -2,
	WHAT_CALL_SITE = -1,
	/* 0 .. NR_IMPLS - 1: enum bench_impl */
};

static void run_chunk(int what, struct bench_target t)
{
	switch (what) {
	case WHAT_PLAIN:
		plain_chunk();
		break;
	case WHAT_CALL_SITE:
		call_site_chunk(t.percpu);
		break;
	case IMPL_PERCPU:
		percpu_chunk(t);
		break;
	case IMPL_ATOMIC:
		atomic_chunk(t);
		break;
	case IMPL_KERNEL:
		kernel_chunk(t);
		break;
	default:
		thread_chunk(t);
		break;
	}
}

/*
 * ns per add of one kind, over about @duration_ms of this thread's CPU time;
 * negative errno on failure.
 */
static double measure_one(int what, unsigned int duration_ms)
{
	enum bench_impl impl = what < 0 ? IMPL_PERCPU : (enum bench_impl)what;
	struct bench_counter c;
	uint64_t start, elapsed, adds = 0, budget = (uint64_t)duration_ms * 1000000u;
	int err = bench_counter_init(&c, impl, 0, 1);

	if (err)
		return err;
	run_chunk(what, bench_target_of(&c, 0)); /* warm up */
	start = timing_thread_cpu_ns();
	do {
		run_chunk(what, bench_target_of(&c, 0));
		adds += CHUNK;
		elapsed = timing_thread_cpu_ns() - start;
	} while (elapsed < budget);
	bench_counter_destroy(&c);
	return (double)elapsed / (double)adds;
}

int fastpath_measure(struct fastpath_result *r, unsigned int runs, unsigned int duration_ms)
{
	enum { NR_WHATS = NR_IMPLS + 2, MAX_RUNS = 64 };
	double ns[NR_WHATS][MAX_RUNS];

	if (runs == 0)
		return -EINVAL;
	if (runs > MAX_RUNS)
		runs = MAX_RUNS;
	/* interleaved, so that a noisy moment hits every kind alike */
	for (unsigned int run = 0; run < runs; run++) {
		for (int what = WHAT_PLAIN; what < NR_IMPLS; what++) {
			double v = measure_one(what, duration_ms);

			if (v < 0)
				return (int)v;
			ns[what + 2][run] = v;
		}
	}
	r->plain_ns = timing_median(ns[WHAT_PLAIN + 2], runs);
	r->call_site_ns = timing_median(ns[WHAT_CALL_SITE + 2], runs);
	for (int i = 0; i < NR_IMPLS; i++)
		r->impl_ns[i] = timing_median(ns[i + 2], runs);
	return 0;
}
