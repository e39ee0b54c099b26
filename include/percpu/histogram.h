/* SPDX-License-Identifier: MIT */
/**
 * @file histogram.h
 * Per-CPU histograms: a stat set with one item per bucket, and a counter
 * (<percpu/counter.h>) for the sum of observations. An observation is a
 * bucket search, a stat-set add of 1 and a counter add of the value: two
 * per-CPU adds on the fast path, no lock, no atomic (on the path without
 * rseq, a compare-and-swap for the bucket and the thread's own slot for the
 * sum). A stat item's per-CPU word holds a pending delta of up to 2^29 - 1
 * (the largest threshold, every bucket's from the start), a counter's slot
 * one of 64 bits: the sum's counter has the fixed batch
 * PCPU_HISTOGRAM_SUM_BATCH (2^40), so a CPU folds it once in 2^18
 * observations of 4 ms in ns (2^22), once in 2^8 of 4 s, and a bucket
 * once in 2^29 observations in it.
 * (0.4 split the sum in two stat items, three adds an observation; 0.3 put
 * it in one stat item, which nanoseconds folded every few hundred.)
 *
 * Native histograms (since 0.4; struct pcpu_histogram_native): buckets
 * that grow by a factor of 2^(2^-schema), as Prometheus's native
 * histograms, from a zero bucket up to a top, merged with the classic
 * bounds into one bound list: the observe is the same bucket search, and
 * both the native and the classic buckets are exact sums of its buckets.
 * The protobuf exposition carries the native buckets (and the classic ones
 * where given); the text formats the classic ones only. A CPU's memory is
 * 8 bytes per bucket, as for classic buckets: at most 63 x 2^schema + 1
 * buckets cover every positive int64 (489 at schema 3, the finest that
 * fits whole: raise the zero threshold or lower the top for more).
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
#include <percpu/counter.h>
#include <percpu/metrics.h>
#include <percpu/stat.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A histogram's most bounds and native schemas (PCPU_HISTOGRAM_MAX_BOUNDS,
 * PCPU_HISTOGRAM_MIN_SCHEMA, PCPU_HISTOGRAM_MAX_SCHEMA) are defined in
 * <percpu/metrics.h>, included above, beside struct pcpu_metric_sample,
 * which carries a histogram's buckets: the metrics list sizes and checks
 * samples with them without knowing histograms.
 */

/**
 * 0.4's observe (inline, compiled into programs built against 0.4) adds an
 * observation's low bits to the sum's low item, the rest to its high item;
 * a snapshot still adds both to the sum's counter. @since 0.4
 */
#define PCPU_HISTOGRAM_SUM_SHIFT 16

/**
 * The fixed batch of a histogram's sum counter: a CPU folds when its
 * pending sum would pass it (an observation above it goes straight to the
 * central value). @since 0.5
 */
#define PCPU_HISTOGRAM_SUM_BATCH PCPU_COUNTER_MAX_BATCH

/**
 * Native buckets. Bucket k holds the exposed values (observations divided
 * by the scale) in (2^((k - 1) / 2^schema), 2^(k / 2^schema)]: a relative
 * width of 2^(2^-schema) - 1 (9.05 % at schema 3). @since 0.4
 */
struct pcpu_histogram_native {
	int32_t schema;         /**< PCPU_HISTOGRAM_MIN_SCHEMA to _MAX_SCHEMA */
	uint32_t reserved;      /**< zero */
	/**
	 * >= 0, unscaled: observations <= it (negative ones too) are counted
	 * in the zero bucket, exposed with threshold zero_threshold / scale
	 * (2^-128 for 0, as the Go client: below any positive observation).
	 */
	int64_t zero_threshold;
	/**
	 * 0: INT64_MAX. Else the largest observation meant to be told apart:
	 * the top bucket is the one that holds it, and larger observations
	 * are counted there too. Every classic bound must lie in
	 * [zero_threshold, max].
	 */
	int64_t max;
};

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
	/** NULL: classic buckets only; else native buckets too. @since 0.4 */
	const struct pcpu_histogram_native *native;
	/** NULL: the process's registry; else the one to register in. @since 0.4 */
	struct pcpu_metrics_registry *registry;
};

struct pcpu_exemplars;
struct pcpu_sparse;

/** A histogram. The fields are private; the layout is ABI. @since 0.2 */
struct pcpu_histogram {
	/**
	 * items 0..nr_bounds: buckets; nr_bounds + 1: the sum's low part (0.2
	 * and 0.3's inline observe added whole values there, 0.4's the low
	 * bits, which stays exact); nr_bounds + 2: 0.4's high part, in units
	 * of 2^PCPU_HISTOGRAM_SUM_SHIFT. Since 0.5 the sum goes to @c sum; a
	 * snapshot adds all three.
	 */
	struct pcpu_stat *set;
	const int64_t *bounds;  /**< the copied bounds (native: merged with the classic ones) */
	uint32_t nr_bounds;     /**< number of bounds */
	uint32_t reserved;      /**< zero */
	int64_t scale;          /**< 1: none */
	/* appended in 0.4 */
	const int64_t *classic; /**< native: the classic bounds, else bounds */
	uint32_t nr_classic;    /**< their number */
	int32_t schema;         /**< native: the schema */
	uint32_t flags;         /**< private */
	uint32_t index_bits;    /**< private: see @c index */
	/** private: NULL until the first exemplar (pcpu_histogram_observe_exemplar()) @since 0.4 */
	struct pcpu_exemplars *exemplars;
	/**
	 * NULL, or (with PCPU_HISTOGRAM_INDEXED_BOUNDS bounds or more) where
	 * the bucket search of a value >= 1 starts: entry (msb << index_bits)
	 * | the index_bits bits below the value's most significant bit (msb)
	 * is the first bucket whose bound is >= the least value with those
	 * bits, so that few bounds are left to pass. @since 0.4
	 */
	const uint16_t *index;
	/**
	 * private: the sum of observations since 0.5 (fixed batch
	 * PCPU_HISTOGRAM_SUM_BATCH); NULL for a sparse histogram, which is how
	 * pcpu_histogram_observe() tells one
	 */
	struct pcpu_counter *sum;
	/* appended in 0.5 */
	/** private: a sparse histogram's buckets (pcpu_histogram_create_sparse()), else NULL @since 0.5 */
	struct pcpu_sparse *sparse;
};

/**
 * A sparse native histogram (pcpu_histogram_create_sparse()): native
 * buckets allocated as they are first used, as client_golang's, with its
 * cap on populated buckets (NativeHistogramMaxBucketNumber), automatic resolution
 * reduction and NativeHistogramMinResetDuration. Zero-filled but for the
 * schema, it has no cap. @since 0.5
 */
struct pcpu_histogram_sparse {
	/** The initial (finest) schema, PCPU_HISTOGRAM_MIN_SCHEMA to _MAX_SCHEMA. */
	int32_t schema;
	/**
	 * 0: no cap. Else the most populated buckets (positive and
	 * negative, the zero bucket aside), at most
	 * PCPU_HISTOGRAM_SPARSE_MAX_BUCKETS: an observation that populates
	 * one more resets the histogram if @c min_reset_ns passed since its
	 * creation or last reset, else lowers the schema by one (merging
	 * buckets 2k - 1 and 2k into k, the Go client's rule), as many times
	 * as it takes (down to PCPU_HISTOGRAM_MIN_SCHEMA, where the cap can
	 * no longer hold).
	 */
	uint32_t max_buckets;
	/**
	 * >= 0, finite, in exposed units (observations divided by the scale):
	 * observations whose absolute value is <= it are counted in the zero
	 * bucket. 0: 2^-128, as the Go client's default.
	 */
	double zero_threshold;
	/**
	 * 0: never reset. Else, in nanoseconds: past the bucket cap, a
	 * histogram created or last reset this long ago is reset (every
	 * bucket, count and sum back to 0, the initial schema, a new created
	 * time) instead of reduced.
	 */
	int64_t min_reset_ns;
	/**
	 * The sum's resolution: it is kept per-CPU in units of 1/sum_scale of
	 * an exposed unit (a struct pcpu_counter_double), up to 2^63 - 1
	 * units; 0: the descriptor's scale if above 1 (integer observations
	 * summed exactly), else PCPU_COUNTER_DOUBLE_SCALE (10^-9, up to
	 * 9.2e9). At most 2^53.
	 */
	int64_t sum_scale;
	uint64_t reserved[4]; /**< zero */
};

/** The largest bucket cap (max_buckets) of a sparse histogram. @since 0.5 */
#define PCPU_HISTOGRAM_SPARSE_MAX_BUCKETS 65536

/**
 * Creates and registers a sparse native histogram (struct
 * pcpu_histogram_sparse), as pcpu_histogram_create() a histogram: the same
 * struct pcpu_histogram, with the same calls (destroy, observe, exemplars,
 * snapshot). Its buckets are native only: @p d's bounds must be none and
 * its native NULL. Its memory follows the buckets used: per-CPU stat sets
 * (<percpu/stat.h>) of 16 consecutive keys, allocated on the first
 * observation in their range, found through a table that grows (by
 * doubling) with them; an observation is a lock-free lookup, one per-CPU
 * stat add and one per-CPU add of the sum, inside liburcu's read lock
 * (urcu-bp). Lowering the schema, a reset or a growth of the table
 * publishes a new set of buckets, waits for a grace period, then merges
 * the old counts in (or, for a reset, drops them): no observation is lost
 * or counted twice, and a scrape in between counts both.
 *
 * Exposition: the protobuf format carries schema, zero threshold, zero
 * count, positive and negative spans and deltas, count, sum (a double) and
 * exemplars (on a +Inf bucket and in the native list); the text formats
 * show name_bucket{le="+Inf"}, name_sum and name_count (in OpenMetrics,
 * the +Inf bucket alone while it has negative buckets, as for classic
 * histograms with negative bounds). A scrape holds the histogram's lock
 * while it reads the buckets; observations take none, except the one that
 * passes the cap or fills the table, which does the rebuild (and waits
 * for the grace period) itself, under a lock of the histogram's. fork()
 * is safe at any time: a child process can observe, scrape and snapshot
 * the histogram even if a thread of the parent was rebuilding it at the
 * fork; a rebuild that the fork cut short, the child's first observation
 * past the cap finishes, and a scrape meanwhile counts each observation
 * once. An observation that a vanished thread had under way at
 * the fork counts, in the child, in the count or, if it set off a reset,
 * among the dropped ones.
 *
 * The observations: pcpu_histogram_observe() (the value divided by @p d's
 * scale) and pcpu_histogram_observe_double() (the value itself). NaN and
 * infinities are counted in the count and no bucket, and make the sum NaN
 * or that infinity, as Prometheus reads such an observation. A program
 * compiled against 0.4 (whose inline observe knows no sparse histogram)
 * adds to the histogram's @c set, a single +Inf bucket: those observations
 * count in the count and sum, in no native bucket.
 *
 * pcpu_histogram_nr_buckets() is 1 and pcpu_histogram_snapshot() gives
 * the count as that one bucket and the sum times the scale, rounded.
 * Label families of sparse histograms: pcpu_family_create_sparse() of
 * <percpu/family.h> (since 0.5).
 *
 * @return it; NULL with errno EINVAL (what pcpu_histogram_create() refuses;
 *         NULL @p s; bounds or native given; a schema, zero threshold,
 *         bucket cap, min_reset_ns (negative), sum_scale or reserved
 *         field out of its range), EEXIST or ENOMEM.
 * @since 0.5
 */
PCPU_EXPORT struct pcpu_histogram *pcpu_histogram_create_sparse(const struct pcpu_histogram_desc *d,
								 const struct pcpu_histogram_sparse *s);

/* Internal to the header: a sparse histogram's observe. @since 0.5 */
PCPU_EXPORT void __pcpu_histogram_observe_sparse(struct pcpu_histogram *h, int64_t value);

/**
 * Observes the double @p v, in exposed units (seconds for a histogram of
 * nanoseconds of scale 10^9). A classic or native histogram observes @p v
 * times its scale rounded to the nearest integer (ties away from zero), as
 * pcpu_histogram_observe(); a sparse one (pcpu_histogram_create_sparse())
 * counts @p v in the bucket of key pcpu_metrics_native_key(|v|, schema)
 * (negative buckets for v < 0), or the zero bucket, and adds @p v to its
 * sum; NaN and infinities count as that call says.
 * @return 0; -EINVAL for a NULL @p h, or (not sparse) NaN or an infinity;
 *         -ERANGE (not sparse) for a value whose units do not fit in an
 *         int64: neither observed. @since 0.5
 */
PCPU_EXPORT int pcpu_histogram_observe_double(struct pcpu_histogram *h, double v);

/**
 * Bounds from which a histogram has a search index (every native one
 * has): below, a binary search is as quick. @since 0.4
 */
#define PCPU_HISTOGRAM_INDEXED_BOUNDS 16

/**
 * Creates and registers a histogram.
 * @return it; NULL with errno EINVAL (NULL desc, bad name, unit or labels,
 *         bounds NULL while nr_bounds > 0, not strictly ascending, too many,
 *         negative scale; since 0.4, native buckets against the rules of
 *         struct pcpu_histogram_native), ERANGE (native and classic buckets
 *         together above PCPU_HISTOGRAM_MAX_BOUNDS + 1), EEXIST (name and
 *         labels registered) or ENOMEM.
 * @since 0.2
 */
PCPU_EXPORT struct pcpu_histogram *pcpu_histogram_create(const struct pcpu_histogram_desc *d);

/**
 * Unregisters and frees @p h; NULL does nothing. Not concurrent with other
 * calls on @p h. @since 0.2
 */
PCPU_EXPORT void pcpu_histogram_destroy(struct pcpu_histogram *h);

/**
 * The number of buckets that pcpu_histogram_snapshot() fills: nr_bounds + 1
 * for a classic histogram, the merged bounds' + 1 for a native one
 * (pcpu_histogram_bounds()); 0 for NULL. @since 0.4
 */
PCPU_EXPORT uint32_t pcpu_histogram_nr_buckets(const struct pcpu_histogram *h);

/**
 * The upper bounds of the buckets that pcpu_histogram_snapshot() fills
 * (without +Inf), pcpu_histogram_nr_buckets() - 1 of them, valid until
 * @p h is destroyed; NULL for NULL. @since 0.4
 */
PCPU_EXPORT const int64_t *pcpu_histogram_bounds(const struct pcpu_histogram *h);

/**
 * Every bucket and the sum: counts[pcpu_histogram_nr_buckets()]
 * non-cumulative (the last is +Inf), @p sum (may be NULL). Exact at
 * quiescence; while observations run, each count is between those
 * completed and those started.
 * @return 0; -EINVAL for NULL @p h or @p counts; -ENOMEM. @since 0.2
 */
PCPU_EXPORT int pcpu_histogram_snapshot(struct pcpu_histogram *h, uint64_t *counts, int64_t *sum);

/* Internal: the bucket of @p value, the first whose bound is >= it (else +Inf). */
static inline uint32_t __pcpu_histogram_bucket(const struct pcpu_histogram *h, int64_t value)
{
	uint32_t lo = 0, hi = h->nr_bounds;

	if (h->index && value > 0) {
		/* the index's start, then the few bounds left (the first >= value) */
		unsigned int msb = 63u - (unsigned int)__builtin_clzll((unsigned long long)value);
		unsigned int bits = h->index_bits;
		uint64_t top = msb >= bits ? (uint64_t)value >> (msb - bits) :
					     (uint64_t)value << (bits - msb);

		lo = h->index[((uint64_t)msb << bits) | (top & ((UINT64_C(1) << bits) - 1))];
		while (lo < hi && value > h->bounds[lo])
			lo++;
	} else {
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (value <= h->bounds[mid])
				hi = mid;
			else
				lo = mid + 1;
		}
	}
	return lo;
}

/**
 * Records @p value: the first bucket whose bound is >= it, else +Inf. A
 * NULL @p h is the misuse of <percpu/stat.h> (reported as pcpu_stat_add).
 * Observations are meant to be >= 0 (durations, sizes): a negative one is
 * counted, but makes _sum go down, which Prometheus reads as a reset.
 * A sparse histogram (since 0.5) keys @p value divided by the scale, its
 * negative buckets taking negative values (see
 * pcpu_histogram_create_sparse()).
 * @since 0.2
 */
static inline void pcpu_histogram_observe(struct pcpu_histogram *h, int64_t value)
{
	if (pcpu_unlikely(h == NULL)) {
		pcpu_stat_add((struct pcpu_stat *)0, 0, value);
		return;
	}
	/* a sparse histogram has no sum counter: one predictable branch */
	if (pcpu_unlikely(h->sum == NULL)) {
		__pcpu_histogram_observe_sparse(h, value);
		return;
	}
	pcpu_stat_add(h->set, __pcpu_histogram_bucket(h, value), 1);
	pcpu_counter_add(h->sum, value);
}

/**
 * Observes @p value as pcpu_histogram_observe() does, and records the
 * exemplar @p labels (e.g. {"trace_id", "4bf92f3577b34da6", NULL}; NULL:
 * none; the rules of struct pcpu_exemplar) with @p value (divided by the
 * scale) and the time (CLOCK_REALTIME) for the bucket @p value falls in,
 * replacing that bucket's previous one. OpenMetrics text shows it on the
 * bucket's line; a native histogram's classic bucket shows the latest of
 * its fine buckets' exemplars (+Inf: of those above the last classic
 * bound). The protobuf format carries it on the bucket (a classic
 * histogram's) or in the histogram's list (a native one's). Works on a
 * label family's histogram children too.
 *
 * A slow path: the first exemplar allocates the histogram's exemplar
 * storage (a pointer per bucket, three times; a histogram that never gets
 * one pays the one pointer in struct pcpu_histogram); each one copies the
 * labels (one malloc()) and swaps them in under the exemplar lock (one
 * for all exemplars of the process: record them for a sample of events,
 * not for each), which a scrape takes to pick them up. pcpu_histogram_observe()
 * takes no lock and is not slowed. The observation counts whatever the
 * return, except for a NULL @p h.
 * @return 0; -EINVAL for a NULL @p h or bad labels; -ENOMEM: the exemplar
 *         is not recorded. Not concurrent with pcpu_histogram_destroy().
 * @since 0.4
 */
PCPU_EXPORT int pcpu_histogram_observe_exemplar(struct pcpu_histogram *h, int64_t value,
						const char *const *labels);

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_HISTOGRAM_H */
