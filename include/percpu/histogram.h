/* SPDX-License-Identifier: MIT */
/**
 * @file histogram.h
 * Per-CPU histograms, built on a stat set: one item per bucket and two for
 * the sum of observations, its low PCPU_HISTOGRAM_SUM_SHIFT bits and the
 * rest. A stat item's per-CPU word holds a pending delta of up to 2^29 - 1
 * (the largest threshold) before its CPU folds into the shared central
 * line, so whole nanosecond durations in one item would fold every few
 * hundred observations. Split, with every item at that threshold from the
 * start, a CPU folds at most once in 2^13 observations below 2^32 (4 s in
 * ns), and once in 2^29 / (value >> 16) above. An observation is a bucket
 * search and two stat-set adds, three when it is 2^16 or more: the per-CPU
 * fast path, no lock, no atomic.
 *
 * A histogram is registered as a metric (<percpu/metrics.h>) when it is
 * created, and exposed as name_bucket{le=...}, name_sum and name_count,
 * where count is the sum of the buckets (so no cumulative bucket can exceed
 * it). In OpenMetrics, a histogram with a negative bound shows its buckets
 * only (the format forbids _sum there, and _count needs _sum).
 *
 * Link: pkg-config percpu-metrics.
 */
#ifndef PERCPU_HISTOGRAM_H
#define PERCPU_HISTOGRAM_H

#include <stdint.h>

#include <percpu/common.h>
#include <percpu/metrics.h>
#include <percpu/stat.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Most bounds of one histogram (the +Inf bucket and the sum's two parts are
 * items too). @since 0.2; 510 before 0.4, 509 since.
 */
#define PCPU_HISTOGRAM_MAX_BOUNDS (PCPU_STAT_MAX_ITEMS - 3)

/** The sum's low item takes an observation's low bits, the high item the rest. @since 0.4 */
#define PCPU_HISTOGRAM_SUM_SHIFT 16

/** A histogram's descriptor; every string and the bounds are copied. @since 0.2 */
struct pcpu_histogram_desc {
	const char *name;          /**< as for counters: no reserved suffix */
	const char *help;          /**< NULL or "": no HELP line */
	const char *unit;          /**< NULL or "": none; else a suffix "_unit" of the name */
	const char *const *labels; /**< NULL or {"key", "value", ..., NULL}; no "le" */
	const int64_t *bounds;     /**< strictly ascending upper bounds (inclusive) */
	uint32_t nr_bounds;        /**< 0 to PCPU_HISTOGRAM_MAX_BOUNDS */
	/** 0 or 1: none; else bounds and sum are exposed divided by it. */
	int64_t scale;
};

/** A histogram. The fields are private; the layout is ABI. @since 0.2 */
struct pcpu_histogram {
	/**
	 * items 0..nr_bounds: buckets; nr_bounds + 1: the sum's low part (0.2
	 * and 0.3's inline observe added whole values there, which stays
	 * exact); nr_bounds + 2: its high part, in units of
	 * 2^PCPU_HISTOGRAM_SUM_SHIFT
	 */
	struct pcpu_stat *set;
	const int64_t *bounds;  /**< the copied bounds */
	uint32_t nr_bounds;     /**< number of bounds */
	uint32_t reserved;      /**< zero */
	int64_t scale;          /**< 1: none */
};

/**
 * Creates and registers a histogram.
 * @return it; NULL with errno EINVAL (NULL desc, bad name, unit or labels,
 *         bounds NULL while nr_bounds > 0, not strictly ascending, too many,
 *         negative scale), EEXIST (name and labels registered) or ENOMEM.
 * @since 0.2
 */
PCPU_EXPORT struct pcpu_histogram *pcpu_histogram_create(const struct pcpu_histogram_desc *d);

/**
 * Unregisters and frees @p h; NULL does nothing. Not concurrent with other
 * calls on @p h. @since 0.2
 */
PCPU_EXPORT void pcpu_histogram_destroy(struct pcpu_histogram *h);

/**
 * Every bucket and the sum: counts[nr_bounds + 1] non-cumulative (the last
 * is +Inf), @p sum (may be NULL). Exact at quiescence; while observations
 * run, each count is between those completed and those started.
 * @return 0; -EINVAL for NULL @p h or @p counts; -ENOMEM. @since 0.2
 */
PCPU_EXPORT int pcpu_histogram_snapshot(struct pcpu_histogram *h, uint64_t *counts, int64_t *sum);

/**
 * Records @p value: the first bucket whose bound is >= it, else +Inf. A
 * NULL @p h is the misuse of <percpu/stat.h> (reported as pcpu_stat_add).
 * Observations are meant to be >= 0 (durations, sizes): a negative one is
 * counted, but makes _sum go down, which Prometheus reads as a reset.
 * @since 0.2
 */
static inline void pcpu_histogram_observe(struct pcpu_histogram *h, int64_t value)
{
	uint32_t lo = 0, hi;
	int64_t sum_hi, sum_lo;

	if (pcpu_unlikely(h == NULL)) {
		pcpu_stat_add((struct pcpu_stat *)0, 0, value);
		return;
	}
	hi = h->nr_bounds;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (value <= h->bounds[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	pcpu_stat_add(h->set, lo, 1);
	/* value = sum_hi * 2^shift + sum_lo, 0 <= sum_lo < 2^shift (>> is arithmetic) */
	sum_hi = value >> PCPU_HISTOGRAM_SUM_SHIFT;
	sum_lo = value & ((INT64_C(1) << PCPU_HISTOGRAM_SUM_SHIFT) - 1);
	pcpu_stat_add(h->set, h->nr_bounds + 1, sum_lo);
	if (sum_hi)
		pcpu_stat_add(h->set, h->nr_bounds + 2, sum_hi);
}

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_HISTOGRAM_H */
