/* SPDX-License-Identifier: MIT */
/*
 * The benchmarks' few architecture primitives, in one place: a spin of a
 * busy wait (the kernel port's cpu_relax()) and flushing a cache line
 * (percpu-bench-scale's cold reads). bench_can_flush() is false where
 * there is no flush from user space: the cold measurements are skipped.
 */
#ifndef PERCPU_BENCH_BENCH_ARCH_H
#define PERCPU_BENCH_BENCH_ARCH_H

#include <stdbool.h>

#if defined(__x86_64__) || defined(__i386__)

/* clflush: on every x86_64 CPU, and on every i386 one with SSE2. */
static inline bool bench_can_flush(void)
{
#if defined(__x86_64__)
	return true;
#else
	return __builtin_cpu_supports("sse2");
#endif
}

static inline void bench_relax(void)
{
	__asm__ __volatile__("pause" ::: "memory");
}

/* In asm: the builtins need SSE2 at build time, which i686 builds lack. */
static inline void bench_flush_line(const void *p)
{
	__asm__ __volatile__("clflush %0" : : "m"(*(const volatile char *)p) : "memory");
}

/* After the flushes: they are ordered with what follows. */
static inline void bench_flush_done(void)
{
	__asm__ __volatile__("mfence" ::: "memory");
}

#else

static inline bool bench_can_flush(void)
{
	return false;
}

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
