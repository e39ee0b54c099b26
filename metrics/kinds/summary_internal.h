/* SPDX-License-Identifier: MIT */
/*
 * Summaries, inside (summary.c): what a label family of summaries
 * (family.c) makes its children with, and the suite's hook on their clock.
 */
#ifndef PCPU_METRICS_SUMMARY_INTERNAL_H
#define PCPU_METRICS_SUMMARY_INTERNAL_H

#include <stdint.h>

struct pcpu_metric_sample;
struct pcpu_summary;
struct pcpu_summary_desc;

/*
 * 0 if @d's sketch (quantiles, age buckets, alpha, min, max, scale,
 * max_age_ns) passes pcpu_summary_create()'s checks, else -EINVAL; its
 * name, help, unit, labels and registry are not looked at.
 */
int pcpu_summary_check_sketch(const struct pcpu_summary_desc *d);

/*
 * A family's prototype: the sketch of @d (checked as above) with no
 * observation storage, for pcpu_summary_new_like() only; NULL with errno
 * EINVAL, ERANGE or ENOMEM. Free with pcpu_summary_free().
 */
struct pcpu_summary *pcpu_summary_proto(const struct pcpu_summary_desc *d);

/*
 * A summary of @proto's sketch, not registered, its window starting now:
 * it shares @proto's layout and quantiles, so @proto outlives it. NULL
 * with errno ENOMEM.
 */
struct pcpu_summary *pcpu_summary_new_like(const struct pcpu_summary *proto);

/* Frees @s, unregistered (NULL: nothing). */
void pcpu_summary_free(struct pcpu_summary *s);

/*
 * Sample @smp of @s: count, sum, scale and the window's quantiles, whose
 * values stay valid until the next fill. Under the metrics lock; 0 or
 * -ENOMEM.
 */
int pcpu_summary_fill(struct pcpu_summary *s, struct pcpu_metric_sample *smp);

/*
 * Test hook (the suite's internal library only): summaries created from now
 * on, and the children of summary families created from now on, read the
 * time in nanoseconds from @fn (NULL: CLOCK_MONOTONIC_COARSE), so that a
 * test moves their age buckets at will.
 */
void pcpu_summary_debug_clock(uint64_t (*fn)(void));

#endif /* PCPU_METRICS_SUMMARY_INTERNAL_H */
