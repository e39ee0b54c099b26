/* SPDX-License-Identifier: MIT */
/*
 * The workload loops (see workloads.h).
 *
 * Every loop is written once, always inlined, and instantiated for each
 * implementation by writer_percpu() ... writer_thread(), so each update is
 * the implementation's own inline code. The stop flag is checked every
 * STOP_EVERY operations, so its load is not part of what is measured.
 */
#include <stdbool.h>

#include "timing.h"
#include "workloads.h"

#define STOP_EVERY 64

#define BYTES_1G (INT64_C(1) << 30)
#define ALLOC_SIZE 4096
#define COMMIT_PAGES 16

const char *const workload_names[NR_WORKLOADS] = {
	[WL_INC] = "inc",
	[WL_WORK] = "work",
	[WL_ALLOCFREE] = "allocfree",
	[WL_COMMIT_FAR] = "commit-far",
	[WL_COMMIT_NEAR] = "commit-near",
	[WL_READERS] = "readers",
};

int64_t workload_seed(enum bench_workload w)
{
	return w == WL_INC ? 0 : BYTES_1G;
}

BENCH_INLINE bool stopped(const int *stop)
{
	return __atomic_load_n(stop, __ATOMIC_RELAXED) != 0;
}

BENCH_INLINE void loop_inc(enum bench_impl impl, struct workload_thread *wt)
{
	struct bench_target t = wt->target;
	const int *stop = wt->stop;
	uint64_t ops = 0;

	while (!stopped(stop)) {
		for (int i = 0; i < STOP_EVERY; i++)
			impl_add(impl, t, 1);
		ops += STOP_EVERY;
	}
	wt->ops = ops;
	wt->net = (int64_t)ops;
}

/*
 * The local work of WL_WORK: WORK_STEPS steps of a 64-bit LCG, each step
 * depending on the last (a multiply and an add: about 4 cycles), in
 * registers only. The asm keeps the compiler from folding the steps.
 */
BENCH_INLINE uint64_t local_work(uint64_t x)
{
	for (int i = 0; i < WORK_STEPS; i++) {
		x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
		__asm__("" : "+r"(x));
	}
	return x;
}

BENCH_INLINE void loop_work(enum bench_impl impl, struct workload_thread *wt)
{
	struct bench_target t = wt->target;
	const int *stop = wt->stop;
	uint64_t ops = 0, x = (uint64_t)(uintptr_t)wt;

	while (!stopped(stop)) {
		for (int i = 0; i < STOP_EVERY; i++) {
			x = local_work(x);
			impl_add(impl, t, 1);
		}
		ops += STOP_EVERY;
	}
	wt->ops = ops;
	wt->net = (int64_t)ops;
	wt->keep_live = x;
}

double workload_work_ns(unsigned int duration_ms)
{
	uint64_t start = timing_thread_cpu_ns(), elapsed, ops = 0;
	uint64_t budget = (uint64_t)duration_ms * 1000000u, x = start;

	do {
		for (int i = 0; i < 1000; i++)
			x = local_work(x);
		ops += 1000;
		elapsed = timing_thread_cpu_ns() - start;
	} while (elapsed < budget);
	__asm__ __volatile__("" : : "r"(x)); /* the work's result is used */
	return (double)elapsed / (double)ops;
}

BENCH_INLINE void loop_allocfree(enum bench_impl impl, struct workload_thread *wt)
{
	struct bench_target t = wt->target;
	const int *stop = wt->stop;
	uint64_t ops = 0;

	while (!stopped(stop)) {
		for (int i = 0; i < STOP_EVERY / 2; i++) {
			impl_add(impl, t, ALLOC_SIZE);
			impl_add(impl, t, -ALLOC_SIZE);
		}
		ops += STOP_EVERY;
	}
	wt->ops = ops;
	wt->net = 0;
}

BENCH_INLINE void loop_commit(enum bench_impl impl, struct workload_thread *wt, int64_t limit)
{
	struct bench_target t = wt->target;
	const int *stop = wt->stop;
	uint64_t ops = 0, answers[3] = { 0, 0, 0 };

	while (!stopped(stop)) {
		for (int i = 0; i < STOP_EVERY; i++) {
			impl_add(impl, t, COMMIT_PAGES);
			/* -1, 0, 1: every answer is kept, and checked by the runner */
			int r = impl_compare(impl, t, limit);

			answers[(r > 0) - (r < 0) + 1]++;
			impl_add(impl, t, -COMMIT_PAGES);
		}
		ops += STOP_EVERY;
	}
	wt->ops = ops;
	wt->net = 0;
	for (int i = 0; i < 3; i++)
		wt->answers[i] = answers[i];
	wt->keep_live = answers[0] ^ answers[1] ^ answers[2];
}

BENCH_INLINE void writer(enum bench_impl impl, struct workload_thread *wt)
{
	int64_t seed = workload_seed(wt->workload);

	switch (wt->workload) {
	case WL_INC:
	case WL_READERS:
		loop_inc(impl, wt);
		break;
	case WL_WORK:
		loop_work(impl, wt);
		break;
	case WL_ALLOCFREE:
		loop_allocfree(impl, wt);
		break;
	case WL_COMMIT_FAR:
		loop_commit(impl, wt, 2 * seed);
		break;
	case WL_COMMIT_NEAR:
	case NR_WORKLOADS:
		loop_commit(impl, wt, seed);
		break;
	}
}

static void writer_percpu(struct workload_thread *wt)
{
	writer(IMPL_PERCPU, wt);
}

static void writer_atomic(struct workload_thread *wt)
{
	writer(IMPL_ATOMIC, wt);
}

static void writer_kernel(struct workload_thread *wt)
{
	writer(IMPL_KERNEL, wt);
}

static void writer_thread(struct workload_thread *wt)
{
	writer(IMPL_THREAD, wt);
}

void workload_write(struct workload_thread *wt)
{
	switch (wt->impl) {
	case IMPL_PERCPU:
		writer_percpu(wt);
		break;
	case IMPL_ATOMIC:
		writer_atomic(wt);
		break;
	case IMPL_KERNEL:
		writer_kernel(wt);
		break;
	case IMPL_THREAD:
	case NR_IMPLS:
		writer_thread(wt);
		break;
	}
}

void workload_read(struct workload_thread *wt)
{
	struct bench_target t = wt->target;
	uint64_t calls = 0, sink = 0;

	while (!stopped(wt->stop)) {
		sink += (uint64_t)impl_read(wt->impl, t);
		sink += (uint64_t)impl_sum(wt->impl, t);
		sink += (uint64_t)impl_sync_if_delta_above(wt->impl, t, WORKLOAD_READER_DELTA);
		calls += 3;
	}
	wt->ops = calls;
	wt->net = 0;
	wt->keep_live = sink;
}
