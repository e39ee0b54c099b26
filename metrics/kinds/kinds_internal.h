/* SPDX-License-Identifier: MIT */
/*
 * The kinds of metric, inside: what one kind shares with another (a label
 * family's histogram children are histograms) and with the formats above
 * (a native histogram's bucket keys). Each kind registers with the list
 * below through list/list_internal.h.
 */
#ifndef PCPU_METRICS_KINDS_INTERNAL_H
#define PCPU_METRICS_KINDS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

/* the public types, by pointer only: each user includes its headers */
struct pcpu_histogram;
struct pcpu_histogram_native;
struct pcpu_metric_sample;
struct pcpu_stat;

/* Histograms (histogram.c). */

/* The stat set of a histogram of @nr_bounds bounds; NULL with errno. */
struct pcpu_stat *pcpu_histogram_make_set(uint32_t nr_bounds);

/* @h's sum counter (struct pcpu_histogram's @c sum): 0 or -ENOMEM; and its end. */
int pcpu_histogram_sum_init(struct pcpu_histogram *h);
void pcpu_histogram_sum_free(struct pcpu_histogram *h);

/*
 * pcpu_histogram_sparse_check(): 0, or -EINVAL for @s as
 * pcpu_histogram_create_sparse() refuses it. pcpu_histogram_sparse_init():
 * sparse buckets (struct pcpu_histogram's @c sparse) per @s, checked
 * already (at the histogram's or its family's creation, once), for @h,
 * whose scale is set and which has no sum counter (that routes the inline
 * observe): 0 or -ENOMEM; pcpu_sparse_free() frees them.
 */
struct pcpu_histogram_sparse;
int pcpu_histogram_sparse_check(const struct pcpu_histogram_sparse *s);
int pcpu_histogram_sparse_init(struct pcpu_histogram *h, const struct pcpu_histogram_sparse *s);

/*
 * Fills @h's bounds (copied; merged with native ones, with @native), scale
 * and native fields; not its set. 0, -ERANGE, -EINVAL (@native) or -ENOMEM.
 * pcpu_histogram_layout_free() frees what it allocated.
 */
int pcpu_histogram_layout(struct pcpu_histogram *h, const int64_t *bounds, uint32_t nr_bounds,
			  int64_t scale, const struct pcpu_histogram_native *native);
void pcpu_histogram_layout_free(struct pcpu_histogram *h);

/*
 * A snapshot of @h as sample @smp: its buckets into @buckets (room for
 * pcpu_histogram_nr_buckets()), sum, count, bounds, scale, native fields.
 * 0 or a negative errno.
 */
int pcpu_histogram_fill(struct pcpu_histogram *h, struct pcpu_metric_sample *smp,
			uint64_t *buckets);

/* Native histograms (native.c). */

/*
 * The bounds of a native histogram of @schema, @zero_threshold, @top (the
 * descriptor's max, INT64_MAX for 0) and @scale with classic bounds
 * @classic (ascending): the zero threshold, then the native thresholds up
 * to the top's, merged with @classic, into *@bounds (malloc()ed) and
 * *@nr_bounds. Returns 0, -EINVAL (a value or a classic bound against the
 * rules of struct pcpu_histogram_native), -ERANGE (more than
 * PCPU_HISTOGRAM_MAX_BOUNDS) or -ENOMEM.
 */
int pcpu_native_bounds(int32_t schema, int64_t zero_threshold, int64_t top, int64_t scale,
		       const int64_t *classic, uint32_t nr_classic, int64_t **bounds,
		       uint32_t *nr_bounds);

/*
 * Calls @fn(@arg, key, count) for each native bucket of native sample @m
 * (PCPU_METRIC_SAMPLE_F_NATIVE) that holds observations, by ascending key:
 * the sum of its fine buckets. The zero bucket (buckets[0]) is not one.
 */
void pcpu_native_each_key(const struct pcpu_metric_sample *m,
			  void (*fn)(void *arg, int32_t key, uint64_t count), void *arg);

/*
 * Calls @fn(@arg, bound, cumulative) for each classic bound of native
 * sample @m, ascending, with the number of observations <= it.
 */
void pcpu_native_each_classic(const struct pcpu_metric_sample *m,
			      void (*fn)(void *arg, int64_t bound, uint64_t cumulative), void *arg);

/* Sparse native histograms (sparse.c): struct pcpu_histogram's @c sparse. */

struct pcpu_sparse;

/*
 * What sparse buckets are made of: struct pcpu_histogram_sparse's fields,
 * checked by histogram.c (which owns the public types, so that sparse.c
 * needs none of them), and the histogram's scale (>= 1).
 */
struct pcpu_sparse_shape {
	int32_t schema;
	uint32_t max_buckets;
	double zero_threshold;
	int64_t min_reset_ns;
	int64_t sum_scale;
	int64_t scale;
};

/* Sparse buckets of @shape in *@out: 0 or -ENOMEM. */
int pcpu_sparse_new(const struct pcpu_sparse_shape *shape, struct pcpu_sparse **out);
void pcpu_sparse_free(struct pcpu_sparse *sp);

/* Observes @v, in exposed units. */
void pcpu_sparse_observe(struct pcpu_sparse *sp, double v);

/*
 * @sp's sample (PCPU_METRIC_SAMPLE_F_SPARSE) into @smp, its count into
 * *@inf (the +Inf bucket), with its buckets if @keys: those stay valid
 * until the next such call (a scrape's, which the metrics lock
 * serializes). @legacy_count and @legacy_sum (exposed units): what 0.4's
 * inline observe put in the histogram's set, counted in no bucket. 0 or
 * -ENOMEM.
 */
int pcpu_sparse_fill(struct pcpu_sparse *sp, uint64_t legacy_count, double legacy_sum,
		     struct pcpu_metric_sample *smp, uint64_t *inf, bool keys);

/* Key @key of schema @from at schema @to <= @from: ceil(key / 2) a step, as client_golang. */
int32_t pcpu_sparse_reduce_key(int32_t key, int32_t from, int32_t to);

/* What a sparse histogram did, for tests. */
struct pcpu_sparse_stats {
	int32_t schema;     /* now */
	uint32_t populated; /* populated buckets now */
	uint32_t chunks;    /* stat sets of buckets now */
	uint32_t nr_slots;  /* their table's size */
	uint64_t reductions, resets, grows;
	uint64_t discarded; /* observations that resets dropped */
	uint64_t repeated;  /* of them, observed again after the reset (the one that passed the cap) */
	uint32_t retiring;  /* 1: a rebuild's old state is parked, its merge (or drop) to come */
};
void pcpu_sparse_stats(struct pcpu_sparse *sp, struct pcpu_sparse_stats *out);

/*
 * The suite's internal library only (PCPU_TEST_HOOKS): called by a rebuild
 * between its publication and its merge, under the rebuild lock alone.
 */
extern void (*pcpu_sparse_debug_parked_hook)(void);

/* Label families (family.c), for currying and partial removal (family_curry.c). */

struct pcpu_family;

/* Number of label names of @f (the tuple's values). */
unsigned int pcpu_family_nr_labels(const struct pcpu_family *f);

/* Position of label name @name in @f's tuples, or -1 (a constant label's too). */
int pcpu_family_label_index(const struct pcpu_family *f, const char *name);

/*
 * Removes every child of @f (the overflow child aside) whose value of
 * label i is @want[i] for each i where @want[i] (nr_labels entries) is not
 * NULL; returns how many.
 */
int pcpu_family_remove_where(struct pcpu_family *f, const char *const *want);

#endif /* PCPU_METRICS_KINDS_INTERNAL_H */
