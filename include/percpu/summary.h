/* SPDX-License-Identifier: MIT */
/**
 * @file summary.h
 * Per-CPU summaries: quantiles of the observations of a sliding window,
 * with a relative-error guarantee, and the count and sum of every
 * observation, as the Go client's Summary (Objectives, MaxAge, AgeBuckets)
 * and prometheus-cpp's.
 *
 * A summary is a mergeable sketch (DDSketch's logarithmic buckets): a
 * native histogram (<percpu/histogram.h>) whose schema is chosen from the
 * relative accuracy @c alpha, one per age bucket. An observation is the
 * histogram's observe on the current age bucket: per-CPU, no lock, no
 * atomic read-modify-write. A read merges the age buckets of the window
 * and takes the quantile from the merged bucket counts.
 *
 * The guarantee. For quantile q of the n observations in the window
 * sorted x_1 <= ... <= x_n, the observation of that rank is x_r with
 * r = max(1, ceil(q n)). The value reported v satisfies
 * |v - x_r| <= alpha x_r when min < x_r <= max (exact when it is 0 with
 * min 0); an x_r <= min is reported as min (divided by the scale), an
 * x_r above max as a value in [max (1 - alpha), x_r (1 + alpha)].
 * Exact at quiescence; while observations run, each bucket count a read
 * merges is between the observations completed and those started.
 *
 * The cost of alpha. The schema's alphas are discrete: 8.6 %, 4.3 %,
 * 2.2 %, 1.1 %, 0.54 % for schemas 2 to 6 (alpha 0.01 takes schema 6).
 * A histogram holds at most PCPU_HISTOGRAM_MAX_BOUNDS buckets, each 8
 * bytes per CPU that observes, per age bucket: at 4.3 % every int64 fits,
 * at 2.2 % observations up to 2^34 (17 s in ns), at 1.1 % up to 2^19, or
 * 2^15 times a min of 100 or more. Integers below 1 / (gamma - 1)
 * take a bucket each: exact.
 *
 * The window. Age bucket i receives the observations of the periods
 * i, i + B + 1, ... of length max_age / B (B age buckets); a read covers
 * the last B periods, the current one partly: between max_age (1 - 1/B)
 * and max_age, as the Go client's. It is exact when the summary is read
 * (a scrape, pcpu_summary_quantile()) at least once per max_age; after a
 * longer gap the first read can include observations up to the gap old.
 * _sum and _count cover every observation since creation.
 *
 * Exposition: name{quantile="q"} per objective (NaN for an empty window),
 * name_sum and name_count, in Prometheus text, OpenMetrics (type summary)
 * and the protobuf format.
 *
 * Link: pkg-config percpu-metrics.
 */
#ifndef PERCPU_SUMMARY_H
#define PERCPU_SUMMARY_H

#include <stdint.h>

#include <percpu/common.h>
#include <percpu/metrics.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The most age buckets. @since 0.5 */
#define PCPU_SUMMARY_MAX_AGE_BUCKETS 16
/** The default max_age: ten minutes, as the Go client's. @since 0.5 */
#define PCPU_SUMMARY_DEFAULT_MAX_AGE_NS (INT64_C(600) * 1000000000)
/** The default number of age buckets, as the Go client's. @since 0.5 */
#define PCPU_SUMMARY_DEFAULT_AGE_BUCKETS 5
/** max_age_ns: no window, quantiles of every observation since creation. @since 0.5 */
#define PCPU_SUMMARY_FOREVER (-1)
/**
 * The finest relative accuracy: that of native schema 8,
 * (2^(1/256) - 1) / (2^(1/256) + 1). @since 0.5
 */
#define PCPU_SUMMARY_MIN_ALPHA 0.00135

/** A summary's descriptor; every string and array is copied. @since 0.5 */
struct pcpu_summary_desc {
	const char *name;          /**< as for histograms: no reserved suffix */
	const char *help;          /**< NULL or "": no HELP line */
	const char *unit;          /**< NULL or "": none; else a suffix "_unit" of the name */
	const char *const *labels; /**< NULL or {"key", "value", ..., NULL}; no "quantile" */
	const double *quantiles;   /**< strictly ascending, each in (0, 1) */
	uint32_t nr_quantiles;     /**< 0 (only _sum and _count) to PCPU_SUMMARY_MAX_QUANTILES */
	/** 0: PCPU_SUMMARY_DEFAULT_AGE_BUCKETS; else 1 to PCPU_SUMMARY_MAX_AGE_BUCKETS */
	uint32_t age_buckets;
	/**
	 * The relative accuracy, in [PCPU_SUMMARY_MIN_ALPHA, 1); 0: the finest
	 * whose buckets fit (min, max] (pcpu_summary_alpha() tells it).
	 */
	double alpha;
	/** >= 0, unscaled: observations <= it are told apart no further (reported as it) */
	int64_t min;
	/** 0: INT64_MAX; else > min: the largest observation with the guarantee */
	int64_t max;
	/** 0 or 1: none; else observations, quantiles and the sum are exposed divided by it */
	int64_t scale;
	/** 0: PCPU_SUMMARY_DEFAULT_MAX_AGE_NS; PCPU_SUMMARY_FOREVER; else >= 1 ms */
	int64_t max_age_ns;
	/** NULL: the process's registry; else the one to register in */
	struct pcpu_metrics_registry *registry;
};

struct pcpu_summary;

/**
 * Creates and registers a summary.
 * @return it; NULL with errno EINVAL (NULL desc, bad name, unit or labels,
 *         quantiles NULL while nr_quantiles > 0, a quantile outside (0, 1)
 *         or not ascending, too many, alpha outside [PCPU_SUMMARY_MIN_ALPHA,
 *         1) or NaN, a negative min or scale, max <= min, max_age_ns below
 *         1 ms and not FOREVER, too many age buckets), ERANGE (the buckets
 *         of (min, max] at that alpha are more than a histogram holds: raise
 *         alpha or min, or lower max), EEXIST (name and labels registered)
 *         or ENOMEM.
 * @since 0.5
 */
PCPU_EXPORT struct pcpu_summary *pcpu_summary_create(const struct pcpu_summary_desc *d);

/**
 * Unregisters and frees @p s; NULL does nothing. Not concurrent with other
 * calls on @p s. @since 0.5
 */
PCPU_EXPORT void pcpu_summary_destroy(struct pcpu_summary *s);

/**
 * Records @p value (unscaled, >= 0) in the current age bucket: a clock
 * read (CLOCK_MONOTONIC_COARSE; none with PCPU_SUMMARY_FOREVER) and the
 * histogram's per-CPU observe, no lock.
 * @return 0; -EINVAL for a NULL @p s or a negative @p value (not recorded).
 * @since 0.5
 */
PCPU_EXPORT int pcpu_summary_observe(struct pcpu_summary *s, int64_t value);

/**
 * Records @p value given in exposed units: value x scale, rounded to the
 * nearest integer, as pcpu_summary_observe().
 * @return 0; -EINVAL for a NULL @p s, a NaN, negative or infinite
 *         @p value, or one whose product with the scale passes INT64_MAX.
 * @since 0.5
 */
PCPU_EXPORT int pcpu_summary_observe_double(struct pcpu_summary *s, double value);

/**
 * Quantile @p q of the window's observations, in exposed units (divided
 * by the scale), within the guarantee above; NaN when the window is empty.
 * Reads (this and pcpu_summary_count()) take the metrics library's lock,
 * as a scrape does: they wait for a scrape in progress, and a fork() while
 * one is in flight leaves the child free to read (since 0.5).
 * @return 0; -EINVAL for NULL @p s or @p value, or @p q outside [0, 1]
 *         (0: the least observation's bucket); -ENOMEM.
 * @since 0.5
 */
PCPU_EXPORT int pcpu_summary_quantile(struct pcpu_summary *s, double q, double *value);

/**
 * Every observation since creation: their number in @p count and sum
 * (unscaled, modulo 2^64) in @p sum; either may be NULL.
 * @return 0; -EINVAL for a NULL @p s; -ENOMEM. @since 0.5
 */
PCPU_EXPORT int pcpu_summary_count(struct pcpu_summary *s, uint64_t *count, int64_t *sum);

/**
 * The relative accuracy @p s guarantees: that of its schema, at most the
 * alpha asked for; 0 for NULL. @since 0.5
 */
PCPU_EXPORT double pcpu_summary_alpha(const struct pcpu_summary *s);

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_SUMMARY_H */
