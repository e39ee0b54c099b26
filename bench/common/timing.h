/* SPDX-License-Identifier: MIT */
/* Clocks and medians. */
#ifndef PERCPU_BENCH_TIMING_H
#define PERCPU_BENCH_TIMING_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t timing_now_ns(void);

/*
 * CPU time of the calling thread in nanoseconds: excludes the time the
 * thread waits for a CPU, which on a shared machine is most of the noise
 * of a single-thread measurement.
 */
uint64_t timing_thread_cpu_ns(void);

/* The median of @n values (sorts a copy); 0 for n == 0. */
double timing_median(const double *values, unsigned int n);

#endif /* PERCPU_BENCH_TIMING_H */
