// SPDX-License-Identifier: MIT
// Fold-walk experiment: 1,024 {value, mark} pairs a 4 KiB stride apart (a counter's copies in
// an arena at 1,024 CPUs: every CPU's copy at the same offset of its page), refilled before each
// walk. Walks:
// - plain loads of every pair (what the kernel port's folding sync does);
// - one lock cmpxchg16b per pair (percpu's fold of an armed CPU), alone and prefetching ahead;
// - a plain store of each mark after its loads (what a fold would write if folders excluded
//   each other by one lock for the whole walk: an untested design, see bench/RESULTS.md);
// - the loads, the swaps and the stores again with each pair at another cache line of its page
//   (pair n at line n % 64): "colored", as a per-CPU stride of 4 KiB + 64 B would place them.
//   At one offset of 4 KiB pages, every pair falls in the same set of an L1 indexed by the page
//   offset.
// Medians of 15 walks of thread CPU time. Build: gcc -O2 fold-walk.c; run: ./a.out
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 1024
#define STRIDE 4096
#define LINE 64
#define ROUNDS 15

static char *base;

static double cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int64_t *pair(int i, int colored)
{
	return (int64_t *)(base + (size_t)i * STRIDE + (colored ? (size_t)(i % 64) * LINE : 0));
}

static inline int cas16(int64_t *p, int64_t *expect, int64_t lo, int64_t hi)
{
	unsigned char ok;

	__asm__ __volatile__("lock cmpxchg16b %[m]"
			     : [m] "+m"(*(int64_t(*)[2])p), "=@ccz"(ok), "+a"(expect[0]), "+d"(expect[1])
			     : "b"(lo), "c"(hi)
			     : "memory");
	return ok;
}

/* An owner's adds since the last walk. */
static void refill(int colored)
{
	for (int i = 0; i < N; i++)
		pair(i, colored)[0] += 5;
}

static int64_t loads(int colored)
{
	int64_t t = 0;

	for (int i = 0; i < N; i++) {
		int64_t *s = pair(i, colored);

		t += __atomic_load_n(&s[0], __ATOMIC_RELAXED) - __atomic_load_n(&s[1], __ATOMIC_RELAXED);
	}
	return t;
}

static int64_t swaps(int colored, int prefetch)
{
	int64_t t = 0;

	for (int i = 0; i < N; i++) {
		int64_t *s = pair(i, colored), e[2];

		if (prefetch && i + prefetch < N)
			__builtin_prefetch(pair(i + prefetch, colored), 1);
		e[0] = __atomic_load_n(&s[0], __ATOMIC_RELAXED);
		e[1] = __atomic_load_n(&s[1], __ATOMIC_RELAXED);
		t += e[0] - e[1];
		while (!cas16(s, e, e[0], e[0]))
			;
	}
	return t;
}

static int64_t stores(int colored)
{
	int64_t t = 0;

	for (int i = 0; i < N; i++) {
		int64_t *s = pair(i, colored), v = __atomic_load_n(&s[0], __ATOMIC_RELAXED);

		t += v - __atomic_load_n(&s[1], __ATOMIC_RELAXED);
		__atomic_store_n(&s[1], v, __ATOMIC_RELAXED);
	}
	return t;
}

enum walk { LOADS, SWAPS, SWAPS_PF4, SWAPS_PF16, STORES, C_LOADS, C_SWAPS, C_STORES, WALKS };

static const char *const names[WALKS] = {
	"plain loads", "cas16 per slot", "cas16 + prefetch 4 ahead", "cas16 + prefetch 16 ahead",
	"plain loads, plain mark store", "colored: plain loads", "colored: cas16 per slot",
	"colored: plain mark store",
};

static int64_t walk(enum walk w)
{
	switch (w) {
	case LOADS: return loads(0);
	case SWAPS: return swaps(0, 0);
	case SWAPS_PF4: return swaps(0, 4);
	case SWAPS_PF16: return swaps(0, 16);
	case STORES: return stores(0);
	case C_LOADS: return loads(1);
	case C_SWAPS: return swaps(1, 0);
	default: return stores(1);
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(void)
{
	static double ns[WALKS][ROUNDS];
	volatile int64_t sink;

	base = aligned_alloc(STRIDE, (size_t)(N + 1) * STRIDE);
	if (!base)
		return 1;
	memset(base, 0, (size_t)(N + 1) * STRIDE);
	for (int r = 0; r < ROUNDS; r++)
		for (int w = 0; w < WALKS; w++) {
			double t0;

			refill(w >= C_LOADS);
			t0 = cpu_ns();
			sink = walk((enum walk)w);
			ns[w][r] = cpu_ns() - t0;
		}
	(void)sink;
	for (int w = 0; w < WALKS; w++) {
		qsort(ns[w], ROUNDS, sizeof(ns[w][0]), cmp);
		printf("%-32s %8.0f ns per walk of %d slots\n", names[w], ns[w][ROUNDS / 2], N);
	}
	return 0;
}
