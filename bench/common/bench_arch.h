/* SPDX-License-Identifier: MIT */
/*
 * The benchmarks' few architecture primitives, in one place: a spin of a
 * busy wait (the kernel port's cpu_relax()) and flushing a cache line
 * (percpu-bench-scale's cold reads). BENCH_HAVE_FLUSH is 0 where there is
 * no flush from user space: the cold measurements are skipped there.
 */
#ifndef PERCPU_BENCH_BENCH_ARCH_H
#define PERCPU_BENCH_BENCH_ARCH_H

#if defined(__x86_64__) || defined(__i386__)

#define BENCH_HAVE_FLUSH 1

static inline void bench_relax(void)
{
	__asm__ __volatile__("pause" ::: "memory");
}

static inline void bench_flush_line(const void *p)
{
	__builtin_ia32_clflush(p);
}

/* After the flushes: they are ordered with what follows. */
static inline void bench_flush_done(void)
{
	__builtin_ia32_mfence();
}

#else

#define BENCH_HAVE_FLUSH 0

static inline void bench_relax(void)
{
#if defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

static inline void bench_flush_line(const void *p)
{
	(void)p;
}

static inline void bench_flush_done(void)
{
}

#endif

#endif /* PERCPU_BENCH_BENCH_ARCH_H */
