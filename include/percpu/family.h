/* SPDX-License-Identifier: MIT */
/**
 * @file family.h
 * Label families: one metric name with label names fixed at creation, and
 * one child counter per tuple of label values, created on first use.
 *
 * A child is an ordinary struct pcpu_counter (counter and gauge families),
 * struct pcpu_histogram (histogram families; since 0.5 sparse ones from
 * pcpu_family_create_sparse()), in a gauge family with
 * PCPU_FAMILY_F_SET_GAUGE, struct pcpu_gauge of <percpu/gauge.h> (set, add,
 * get: one atomic word, since 0.4), or (since 0.5, a family made by
 * pcpu_family_create_summary()) struct pcpu_summary of <percpu/summary.h>:
 * pcpu_counter_add(), pcpu_histogram_observe(), pcpu_gauge_set() and
 * pcpu_summary_observe() on it are the usual calls, so a caller that keeps
 * the pointer pays nothing for the labels.
 * pcpu_family_get() finds a child without a lock; only the first use of a
 * tuple takes the family's lock. pcpu_family_child_size() says what a
 * child holds in memory.
 *
 * Label values. A tuple holds exactly one value per label name, NULL
 * terminated, each valid UTF-8 (no overlong form, no surrogate, nothing
 * above U+10FFFF) of at most PCPU_FAMILY_MAX_VALUE_LEN bytes; the empty
 * string is a value. Values are copied and escaped on output. A family
 * holds at most max_children live children; getting one more fails with
 * E2BIG, exactly at the cap whatever the concurrency.
 *
 * Overflow (since 0.4). A refused get (E2BIG at the cap, a bad tuple,
 * ENOMEM) allocates nothing, is counted (pcpu_family_refused()) and returns
 * the overflow child set by pcpu_family_set_overflow(), or NULL without
 * one: with it, a daemon adds to what a get returns without a check. Each
 * family that refused a get or has one is exposed as
 * percpu_family_refused_total{family="NAME"}.
 *
 * Removal. pcpu_family_remove() takes a child out of lookups and out of
 * the exposition at once; a later get of the same tuple creates a new
 * child, from 0. The removed child's memory stays valid, and adds to it
 * through a pointer kept from before are counted in it and never exposed
 * (lost), until pcpu_family_reclaim() or pcpu_family_destroy(): no add is
 * ever a use after free while the caller keeps to that rule.
 *
 * Exposition. A family is one metric of <percpu/metrics.h>, its children
 * its samples (in no order; a counter family's never decrease); an empty
 * family writes nothing. A child's series carries the family's constant
 * labels and its own, all sorted by name, as a struct pcpu_metric_desc's
 * labels are (since 0.4). A scale divides every exposed value (since 0.4
 * for counter and gauge families).
 *
 * Concurrency. get, remove, the exposition and (under the rule above)
 * reclaim may overlap; destroy may not. fork() is safe at any time.
 *
 * Link: pkg-config percpu-metrics.
 */
#ifndef PERCPU_FAMILY_H
#define PERCPU_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include <percpu/common.h>
#include <percpu/counter.h>
#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/summary.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Most label names of one family. @since 0.3 */
#define PCPU_FAMILY_MAX_LABELS 16
/** Longest label value, in bytes. @since 0.3 */
#define PCPU_FAMILY_MAX_VALUE_LEN 1024
/** Children of a family when its descriptor says 0. @since 0.3 */
#define PCPU_FAMILY_DEFAULT_MAX_CHILDREN 1000
/** Largest accepted max_children. @since 0.3 */
#define PCPU_FAMILY_MAX_CHILDREN (1u << 24)

/**
 * Family flag: the children of a gauge family are set-style gauges (struct
 * pcpu_gauge, got with pcpu_family_get_gauge()) instead of per-CPU
 * counters. @since 0.4
 */
#define PCPU_FAMILY_F_SET_GAUGE 1u

/** A label family; opaque. @since 0.3 */
struct pcpu_family;

/** What a family is created as; every string is copied. @since 0.3 */
struct pcpu_family_desc {
	const char *name;                /**< as for pcpu_metric_desc */
	const char *help;                /**< NULL or "": no HELP line */
	const char *unit;                /**< NULL or "": none; else a suffix "_unit" of the name */
	/** PCPU_METRIC_COUNTER, _GAUGE, _HISTOGRAM, or _SUMMARY (pcpu_family_create_summary() only) */
	enum pcpu_metric_kind kind;
	const char *const *label_names;  /**< 1 to PCPU_FAMILY_MAX_LABELS names, NULL terminated */
	uint32_t max_children;           /**< 0: PCPU_FAMILY_DEFAULT_MAX_CHILDREN */
	const struct pcpu_counter_options *opts; /**< NULL: defaults; per-CPU counter children */
	/* histogram families only (see <percpu/histogram.h>); copied */
	const int64_t *bounds;           /**< strictly ascending upper bounds */
	uint32_t nr_bounds;              /**< 0 to PCPU_HISTOGRAM_MAX_BOUNDS */
	/**
	 * 0 or 1: none; else exposed divided by it: a histogram's bounds and
	 * sums, and (since 0.4) a counter or gauge child's value, as a
	 * struct pcpu_metric_desc's scale.
	 */
	int64_t scale;
	/* appended in 0.4 */
	/**
	 * NULL or {"key", "value", ..., NULL}: constant labels that every
	 * child's series carries, as a struct pcpu_metric_desc's labels
	 * (copied). @since 0.4
	 */
	const char *const *const_labels;
	uint32_t flags;                  /**< 0 or PCPU_FAMILY_F_SET_GAUGE @since 0.4 */
	/** histogram families: NULL, or native buckets too (copied) @since 0.4 */
	const struct pcpu_histogram_native *native;
	/**
	 * NULL: the process's registry; else the one to register in
	 * (<percpu/metrics_registry.h>), whose constant labels may not be
	 * among the family's label names or constant labels (EINVAL).
	 * @since 0.4
	 */
	struct pcpu_metrics_registry *registry;
};

/**
 * Creates and registers a family (no child yet).
 * @return it; NULL with errno EINVAL (NULL desc, bad name, unit, kind,
 *         label name, repeated label name, no label or too many, "le"
 *         in a histogram family, max_children above
 *         PCPU_FAMILY_MAX_CHILDREN, bad options, bounds as for
 *         pcpu_histogram_create(), a negative scale; since 0.4: constant
 *         labels with an odd list, a bad or repeated name, a name that is
 *         also a label name, "le" in a histogram family, a value not UTF-8
 *         or longer than PCPU_FAMILY_MAX_VALUE_LEN; an unknown flag,
 *         PCPU_FAMILY_F_SET_GAUGE on a kind other than PCPU_METRIC_GAUGE
 *         or with @c opts),
 *         EEXIST (the name, or one of its samples, is registered) or ENOMEM;
 *         EINVAL for kind PCPU_METRIC_SUMMARY (pcpu_family_create_summary()
 *         makes those).
 * @since 0.3
 */
PCPU_EXPORT struct pcpu_family *pcpu_family_create(const struct pcpu_family_desc *d);

/**
 * Creates and registers a family of summaries (no child yet): @p d as for
 * pcpu_family_create(), of kind PCPU_METRIC_SUMMARY (its name, help, unit,
 * label names, constant labels, max_children, scale and registry; no
 * bounds, native, opts or flags), and every child a summary of the sketch
 * of @p s: quantiles, nr_quantiles, age_buckets, alpha, min, max,
 * max_age_ns, copied and checked as pcpu_summary_create() checks them.
 * @p s's name, help, unit, labels and registry must be NULL (the family's
 * are in @p d), its scale 0 or @p d's. A child is exposed as a summary,
 * name{labels,quantile="q"}, name_sum{labels} and name_count{labels}, in
 * every format, with the guarantee and window of <percpu/summary.h>; its
 * window starts at its creation.
 * @return it; NULL with errno EINVAL (NULL @p d or @p s, another kind, a
 *         bad @p d as for pcpu_family_create() or "quantile" among its
 *         label names, a bad sketch, a field of @p s that must be NULL
 *         set, another scale), ERANGE (as pcpu_summary_create()), EEXIST
 *         or ENOMEM.
 * @since 0.5
 */
PCPU_EXPORT struct pcpu_family *pcpu_family_create_summary(const struct pcpu_family_desc *d,
							   const struct pcpu_summary_desc *s);

/**
 * Creates and registers a family of sparse native histograms (no child
 * yet): @p d as for pcpu_family_create(), of kind PCPU_METRIC_HISTOGRAM
 * with no bounds (NULL, nr_bounds 0) and no native, and every child a
 * sparse histogram of @p s (schema, max_buckets, zero_threshold,
 * min_reset_ns, sum_scale; copied and checked as
 * pcpu_histogram_create_sparse() checks them) at @p d's scale, each with
 * buckets, bucket cap, schema reduction and resets of its own.
 * pcpu_family_get_histogram() and pcpu_family_curried_get_histogram()
 * return the children: pcpu_histogram_observe(),
 * pcpu_histogram_observe_double(), pcpu_histogram_observe_exemplar() and
 * pcpu_histogram_snapshot() work on them as on a histogram of
 * pcpu_histogram_create_sparse(). A child is exposed as such a histogram,
 * with its labels: sparse buckets in protobuf, name_bucket{labels,le="+Inf"},
 * name_sum{labels} and name_count{labels} in text and OpenMetrics.
 * Overflow, refusals, removal (also partial) and reclaim are as for the
 * other kinds; pcpu_family_child_size() is 0, as for histogram families.
 * @return it; NULL with errno EINVAL (NULL @p d or @p s, another kind,
 *         bounds or native given, a bad @p d as for pcpu_family_create(),
 *         a field of @p s out of its range or a reserved one not 0),
 *         EEXIST or ENOMEM.
 * @since 0.5
 */
PCPU_EXPORT struct pcpu_family *pcpu_family_create_sparse(const struct pcpu_family_desc *d,
							  const struct pcpu_histogram_sparse *s);

/**
 * Unregisters @p f and frees it with every child, removed or not. NULL:
 * nothing. No other call on @p f, nor any add to a child, may overlap it or
 * follow it. @since 0.3
 */
PCPU_EXPORT void pcpu_family_destroy(struct pcpu_family *f);

/**
 * The child of the tuple @p values ({"v1", ..., NULL}, one per label name,
 * in the order of the family's label names), created at 0 on first use.
 * The pointer stays valid until the child is removed and then reclaimed,
 * or the family destroyed; add to it, never init, set, register or
 * destroy it.
 * @return the child; NULL with errno EINVAL (NULL @p f or @p values, a
 *         wrong number of values, a value not UTF-8 or too long, a family
 *         of histograms or of set-style gauges), E2BIG (a
 *         new tuple while the family holds max_children; checked before the
 *         values, so a bad tuple at the cap gets E2BIG) or ENOMEM; for a
 *         non-NULL @p f with an overflow child, that child instead of NULL
 *         (errno set all the same).
 * @since 0.3
 */
PCPU_EXPORT struct pcpu_counter *pcpu_family_get(struct pcpu_family *f,
						 const char *const *values);

/**
 * As pcpu_family_get(), for a family of kind PCPU_METRIC_HISTOGRAM: the
 * child is an ordinary histogram (pcpu_histogram_observe(), snapshot),
 * never to be destroyed by the caller.
 * @return the child; NULL with errno as pcpu_family_get(), and EINVAL for
 *         a family of another kind (and pcpu_family_get() for a histogram
 *         family).
 * @since 0.3
 */
PCPU_EXPORT struct pcpu_histogram *pcpu_family_get_histogram(struct pcpu_family *f,
							     const char *const *values);

/**
 * As pcpu_family_get(), for a gauge family created with
 * PCPU_FAMILY_F_SET_GAUGE: the child is a set-style gauge at 0
 * (pcpu_gauge_set(), pcpu_gauge_add(), pcpu_gauge_get()), never to be
 * registered or unregistered by the caller. Overflow, refusals, removal
 * and reclaim are as for the other kinds.
 * @return the child; NULL with errno as pcpu_family_get(), and EINVAL for
 *         a family without PCPU_FAMILY_F_SET_GAUGE (and pcpu_family_get()
 *         for one with it); for a non-NULL @p f of the right kind with an
 *         overflow child, that child instead of NULL.
 * @since 0.4
 */
PCPU_EXPORT struct pcpu_gauge *pcpu_family_get_gauge(struct pcpu_family *f,
						     const char *const *values);

/**
 * As pcpu_family_get(), for a family made by pcpu_family_create_summary():
 * the child is a summary (pcpu_summary_observe(),
 * pcpu_summary_observe_double(), pcpu_summary_quantile(),
 * pcpu_summary_count()), never to be destroyed by the caller. Overflow,
 * refusals, removal and reclaim are as for the other kinds.
 * @return the child; NULL with errno as pcpu_family_get(), and EINVAL for
 *         a family of another kind (and pcpu_family_get() for a summary
 *         family); for a non-NULL @p f of the right kind with an overflow
 *         child, that child instead of NULL.
 * @since 0.5
 */
PCPU_EXPORT struct pcpu_summary *pcpu_family_get_summary(struct pcpu_family *f,
							 const char *const *values);

/**
 * Removes the child of @p values (see "Removal" above). A counter or gauge
 * child leaves the library's registry at once (since 0.4): fork() and the
 * refresher never visit removed children, however many wait for reclaim.
 * @return 0; -ENOENT if the family has no such child; -EBUSY for the
 *         overflow child (since 0.4); -EINVAL as for pcpu_family_get().
 * @since 0.3
 */
PCPU_EXPORT int pcpu_family_remove(struct pcpu_family *f, const char *const *values);

/**
 * Frees the children removed so far, after an RCU grace period (so that
 * lookups and expositions in progress are done with them): for counter
 * and gauge families, one grace period per call whatever the number of
 * children (since 0.4), so that calling it periodically bounds the
 * memory of removed children at any rate of removal. The caller promises
 * that no thread still uses a pointer to one of them. Not from a
 * pcpu_metrics_foreach() callback (it would wait for itself). NULL:
 * nothing. @since 0.3
 */
PCPU_EXPORT void pcpu_family_reclaim(struct pcpu_family *f);

/**
 * Gives @p f an overflow child, the child of @p values (see "Overflow"
 * above): made at 0, or the tuple's live child if it has one (which then
 * no longer counts against max_children).
 * @return 0; -EINVAL (NULL @p f, @p values as for pcpu_family_get());
 *         -EEXIST if @p f has an overflow child already; -ENOMEM.
 * @since 0.4
 */
PCPU_EXPORT int pcpu_family_set_overflow(struct pcpu_family *f, const char *const *values);

/**
 * Number of gets of @p f refused so far (see "Overflow" above); 0 for
 * NULL. @since 0.4
 */
PCPU_EXPORT uint64_t pcpu_family_refused(const struct pcpu_family *f);

/**
 * Number of live (not removed) children of @p f, its overflow child
 * included; 0 for NULL. @since 0.3
 */
PCPU_EXPORT unsigned int pcpu_family_count(const struct pcpu_family *f);

/**
 * Bytes of memory that one child of @p f with label values of @p values_len
 * bytes in all holds: its heap blocks as glibc's malloc sizes them (the
 * child, and a counter's registry entry and armed-CPU set), and a counter's
 * per-CPU slots (16 bytes per possible CPU, resident once that CPU has
 * added); a set-style gauge's is heap only; 0 for NULL, a histogram
 * family or (since 0.5) a summary family. @since 0.3 (malloc's block sizes and the armed-CPU set counted
 * since 0.5: 0.4 fell short of the heap by 26 bytes or more)
 */
PCPU_EXPORT size_t pcpu_family_child_size(const struct pcpu_family *f, size_t values_len);

/*
 * Currying and partial removal (since 0.5), as client_golang's CurryWith
 * and DeletePartialMatch.
 *
 * A curried view fixes the values of some of a family's labels: its gets
 * take the values of the others, in the family's order, and find the same
 * children as the family's gets of the whole tuples (the same overflow,
 * refusals and cap). A get through a view allocates nothing more than the
 * family's get: the tuple is put together on the stack. A view is
 * read-only once made: any number of threads may get through it at once.
 * It holds copies of its values and a pointer to the family: free it
 * before the family is destroyed. Removing children does not touch it.
 */

/** A family with some label values fixed; opaque. @since 0.5 */
struct pcpu_family_curried;

/**
 * A view of @p f with the labels of @p labels ({"name", "value", ...,
 * NULL}, names among the family's label names, in any order) fixed to
 * their values. Every label may be fixed: the view's gets then take
 * {NULL}.
 * @return the view, to free with pcpu_family_curried_free(); NULL with
 *         errno EINVAL (NULL @p f or @p labels, an odd list, a name that
 *         is not one of the family's label names (a constant label's
 *         included) or is repeated, a value not UTF-8 or longer than
 *         PCPU_FAMILY_MAX_VALUE_LEN) or ENOMEM.
 * @since 0.5
 */
PCPU_EXPORT struct pcpu_family_curried *pcpu_family_curry(struct pcpu_family *f,
							  const char *const *labels);

/** Frees view @p cf (not its family, nor any child). NULL: nothing. @since 0.5 */
PCPU_EXPORT void pcpu_family_curried_free(struct pcpu_family_curried *cf);

/**
 * pcpu_family_get() of the family of @p cf, with the values fixed by the
 * view and @p values ({"v", ..., NULL}: one per label the view leaves
 * free, in the family's order of label names).
 * @return as pcpu_family_get() (a wrong number of values: EINVAL, and the
 *         overflow child where the family has one); NULL with errno
 *         EINVAL for NULL @p cf.
 * @since 0.5
 */
PCPU_EXPORT struct pcpu_counter *pcpu_family_curried_get(struct pcpu_family_curried *cf,
							 const char *const *values);

/**
 * pcpu_family_get_histogram() through view @p cf, as
 * pcpu_family_curried_get(). @since 0.5
 */
PCPU_EXPORT struct pcpu_histogram *
pcpu_family_curried_get_histogram(struct pcpu_family_curried *cf, const char *const *values);

/**
 * pcpu_family_get_gauge() through view @p cf, as
 * pcpu_family_curried_get(). @since 0.5
 */
PCPU_EXPORT struct pcpu_gauge *pcpu_family_curried_get_gauge(struct pcpu_family_curried *cf,
							     const char *const *values);

/**
 * pcpu_family_get_summary() through view @p cf, as
 * pcpu_family_curried_get(). @since 0.5
 */
PCPU_EXPORT struct pcpu_summary *pcpu_family_curried_get_summary(struct pcpu_family_curried *cf,
								 const char *const *values);

/**
 * Removes every child of @p f whose labels hold all of @p labels ({"name",
 * "value", ..., NULL}, names among the family's label names; {NULL}
 * matches every child), as pcpu_family_remove() removes one: out of
 * lookups and of the exposition at once, its memory valid until
 * pcpu_family_reclaim() (which frees it after a grace period), adds
 * through pointers kept from before lost. The overflow child is never
 * removed. Gets and adds on other children may run meanwhile and lose
 * nothing; a get of a matching tuple that overlaps the call may find its
 * child before the removal (then removed) or make a new one after it.
 * The call walks every child under the family's lock: the first get of a
 * new tuple waits for it, a get of an existing child does not.
 * @return the number of children removed (0 if none matched); -EINVAL
 *         (NULL @p f or @p labels, an odd list, a name not among the
 *         family's label names or repeated, a value not UTF-8 or too long).
 * @since 0.5
 */
PCPU_EXPORT int pcpu_family_remove_matching(struct pcpu_family *f, const char *const *labels);

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_FAMILY_H */
