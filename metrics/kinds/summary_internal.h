/* SPDX-License-Identifier: MIT */
/*
 * Summaries, inside (summary.c): the suite's hook on their clock.
 */
#ifndef PCPU_METRICS_SUMMARY_INTERNAL_H
#define PCPU_METRICS_SUMMARY_INTERNAL_H

#include <stdint.h>

/*
 * Test hook (the suite's internal library only): summaries created from now
 * on read the time in nanoseconds from @fn (NULL: CLOCK_MONOTONIC_COARSE),
 * so that a test moves their age buckets at will.
 */
void pcpu_summary_debug_clock(uint64_t (*fn)(void));

#endif /* PCPU_METRICS_SUMMARY_INTERNAL_H */
