/* SPDX-License-Identifier: MIT */
/**
 * @file stat.h
 * Stat sets: arrays of related per-CPU counters, like the kernel's vm_stat.
 *
 * A stat set holds N items created from a descriptor (names, per-item
 * relative accuracy and floor, an optional group). Each item keeps the
 * promise of a <percpu/counter.h> counter: at quiescence |read() - exact|
 * <= error_bound(); sum() and snapshot() are exact and never count a fold
 * twice or miss one; while an item's updates are >= 0 no thread sees its
 * read() or sum() decrease (symmetrically for <= 0). Thresholds are capped
 * at PCPU_STAT_MAX_THRESH; amounts of any int64 size are accepted. What a
 * set adds: the items of a group share central cache lines
 * (PCPU_STAT_LINE_ITEMS to a line; ungrouped items are packed after the
 * groups; PCPU_STAT_ONE_PER_LINE gives each a line of its own), and a CPU
 * that folds one item folds its pending deltas of the whole line in the
 * same visit. sum() and snapshot() may wait for a fold in progress on
 * their lines (until its thread runs again); adds never wait.
 *
 * Bad input. Creation returns NULL and sets errno (EINVAL: NULL or empty
 * descriptor, more than PCPU_STAT_MAX_ITEMS items, a NULL, empty, over-long
 * or duplicate name, an option out of range, a kind other than 0, counter or
 * gauge, unknown flags; ENOMEM). An item index out of range, or a NULL set,
 * passed to a call that cannot report an error is a programming error: in
 * builds of the library without NDEBUG it aborts with a message naming the
 * call; in release builds the call does nothing and returns 0. Calls that
 * return int return 0 or a negative errno.
 *
 * Concurrency. Every call may overlap every other on the same set, from any
 * thread, except destroy. Only pcpu_stat_add() is async-signal-safe.
 *
 * Link: pkg-config percpu. Proofs: docs/internals.md [pending-bound],
 * [publish-order], [monotone-read], [exact-sum]
 * (installed as /usr/share/doc/libpercpu-dev/internals.md by Debian's
 * libpercpu-dev, PREFIX/share/doc/percpu/internals.md by meson install).
 */
#ifndef PERCPU_STAT_H
#define PERCPU_STAT_H

#include <stdint.h>

#include <percpu/common.h>
#include <percpu/cpu.h>
#include <percpu/client.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Most items in one set: 8 bytes each must fit one CPU's stride. @since 0.1 */
#define PCPU_STAT_MAX_ITEMS 512
/** Longest item name, in bytes, without the terminating NUL. @since 0.1 */
#define PCPU_STAT_MAX_NAME 255
/** Largest per-CPU threshold, and largest accepted floor. @since 0.1 */
#define PCPU_STAT_MAX_THRESH ((1 << 29) - 1)
/** Largest accepted relative accuracy divisor. @since 0.1 */
#define PCPU_STAT_MAX_ACCURACY (1 << 20)
/** Items in one central line. @since 0.1 */
#define PCPU_STAT_LINE_ITEMS 7

/** Flag: give every item a central line of its own (groups ignored). @since 0.1 */
#define PCPU_STAT_ONE_PER_LINE 1u
/**
 * Set by a client (<percpu/client.h>) in struct pcpu_stat's flags, never in
 * a descriptor's: it describes the set, and destroy tells it. @since 0.4
 */
#define PCPU_STAT_F_DESCRIBED (1u << 31)

/** One item of a descriptor. Zero means "the default". @since 0.1 */
struct pcpu_stat_item {
	/** Unique, non-empty, at most PCPU_STAT_MAX_NAME bytes; copied. */
	const char *name;
	/**
	 * Items with the same non-zero group share central lines (items
	 * updated together should); 0: ungrouped.
	 */
	uint32_t group;
	/** As for counters: all CPUs hold at most 1/accuracy of |value|. 0: 64. */
	int32_t accuracy;
	/** Per-CPU threshold floor; 0: pcpu_counter_default_floor(), 32. */
	int64_t floor;
	/** What pcpu_stat_register() exposes as HELP; NULL: none; copied. @since 0.2 */
	const char *help;
	/** 0 or PCPU_METRIC_COUNTER: a counter; PCPU_METRIC_GAUGE. @since 0.2 */
	enum pcpu_metric_kind kind;
	/**
	 * 0 or 1: none; else pcpu_stat_register() exposes the item divided by
	 * it, as a counter's scale (nanoseconds counted, seconds exposed). A
	 * shared segment's items have none (EINVAL). @since 0.4
	 */
	int64_t scale;
};

/** A stat set's descriptor. @since 0.1 */
struct pcpu_stat_desc {
	const struct pcpu_stat_item *items; /**< @c nr_items items */
	uint32_t nr_items;                  /**< 1 to PCPU_STAT_MAX_ITEMS */
	uint32_t flags;                     /**< PCPU_STAT_* flags */
};

/**
 * Per item, read by every add; written only when a threshold changes.
 * Private; the layout is ABI. @since 0.1
 */
struct pcpu_stat_hot {
	uint32_t slot;   /**< index of the item's word in each CPU's array */
	uint32_t threshold; /**< per-CPU threshold now, <= PCPU_STAT_MAX_THRESH */
};

/**
 * A stat set, created by pcpu_stat_create(). The fields are private and read
 * by the inline add; the layout is ABI. @since 0.1
 */
struct pcpu_stat {
	uint64_t *words;           /**< CPU 0's words; CPU n's are n * PCPU_STRIDE on */
	struct pcpu_stat_hot *hot; /**< per item */
	uint32_t nr_items;         /**< number of items */
	uint32_t flags;            /**< the descriptor's flags */
	uint32_t mode;             /**< the update path (enum pcpu_cpu_mode) */
	uint32_t reserved;         /**< zero */
};

/**
 * Creates a stat set from @p desc; every value starts at 0.
 * @return the set; NULL with errno EINVAL (see the file comment) or ENOMEM.
 * @since 0.1
 */
PCPU_EXPORT struct pcpu_stat *pcpu_stat_create(const struct pcpu_stat_desc *desc);

/**
 * Creates a stat set with @p proto's items (names, help, kinds, scales,
 * groups, floors, accuracies and line layout), every value at 0. It shares
 * @p proto's item descriptions instead of copying them, so a family of
 * sets alike costs their words and thresholds only; it counts, and its
 * thresholds evolve, on its own. @p proto may be destroyed before it (the
 * descriptions go with the last set that uses them), but not while this
 * call runs.
 * @return the set; NULL with errno EINVAL (@p proto NULL) or ENOMEM.
 * @since 0.4
 */
PCPU_EXPORT struct pcpu_stat *pcpu_stat_create_like(const struct pcpu_stat *proto);

/**
 * Destroys @p s and frees its memory; NULL does nothing. Must not overlap
 * any other call on @p s. Like free(), destroying the same set twice is a
 * double free (unlike pcpu_counter_destroy(), whose counter the caller owns).
 * @since 0.1
 */
PCPU_EXPORT void pcpu_stat_destroy(struct pcpu_stat *s);

#include <percpu/static/stat.h>

/**
 * Adds @p amount (any sign, any size) to item @p item of @p s. Inline fast
 * path: one restartable sequence that adds to this CPU's word if the item
 * stays within its threshold; otherwise the amount goes to the central
 * value and this CPU's pending deltas of the item's central line are folded
 * in the same visit. @since 0.1
 */
PCPU_INLINE void pcpu_stat_add(struct pcpu_stat *s, unsigned int item, int64_t amount)
{
	const struct pcpu_stat_hot *h;
	uint32_t threshold;

	if (pcpu_unlikely(s == NULL || item >= s->nr_items))
		goto slow;
	h = &s->hot[item];
	threshold = __atomic_load_n(&h->threshold, __ATOMIC_RELAXED);
	if (pcpu_unlikely(!__pcpu_within(amount, threshold)))
		goto slow;
	if (pcpu_likely(pcpu_this_cpu_add32(s->words + h->slot, (int32_t)amount, threshold,
					    s->mode) != NULL))
		return;
slow:
	__pcpu_stat_add_slow(s, item, amount);
}

/**
 * The approximate value of item @p item: one load of its central value.
 * |read - exact| <= pcpu_stat_error_bound() whenever no update is in flight.
 * @since 0.1
 */
PCPU_EXPORT int64_t pcpu_stat_read(const struct pcpu_stat *s, unsigned int item);

/**
 * A bound that is always true at quiescence: |read - exact| <= error_bound.
 * The CPUs that have added to the set (not the possible ones: a CPU's
 * first add arms its words) times the largest threshold of the item since
 * creation; 0 before any add.
 * O(1). @since 0.1
 */
PCPU_EXPORT uint64_t pcpu_stat_error_bound(const struct pcpu_stat *s, unsigned int item);

/**
 * The exact value of item @p item: its central value plus every armed
 * CPU's pending delta, validated against concurrent folds; O(armed CPUs).
 * Exact at quiescence; while updates run it returns a value between the
 * total of updates completed before the call and that of updates started
 * before it returned, and never counts a fold twice or misses one.
 * @since 0.1
 */
PCPU_EXPORT int64_t pcpu_stat_sum(struct pcpu_stat *s, unsigned int item);

/**
 * Returns read() when error_bound() <= @p delta; otherwise folds every
 * CPU's pending deltas of the item's central line and returns the exact
 * value (as pcpu_stat_sum(): even while another thread's fold is in flight).
 * Either way the result is within @p delta of exact, and so is read()
 * afterwards until the next update. @since 0.1
 */
PCPU_EXPORT int64_t pcpu_stat_sync_if_delta_above(struct pcpu_stat *s, unsigned int item,
						  uint64_t delta);

/**
 * Every item at once, in one walk over the CPUs: values[i] is what sum()
 * would return for item i, with the same guarantees (exact at quiescence);
 * bounds[i], if @p bounds is not NULL, is error_bound() of item i (the
 * accuracy read() has). Each array holds pcpu_stat_count() elements.
 * @return 0; -EINVAL if @p s or @p values is NULL. @since 0.1
 */
PCPU_EXPORT int pcpu_stat_snapshot(struct pcpu_stat *s, int64_t *values, uint64_t *bounds);

/**
 * Folds every CPU's pending delta of every item into the central values,
 * one line at a time. Afterwards, until the next update, read() is exact.
 * @since 0.1
 */
PCPU_EXPORT void pcpu_stat_fold_all(struct pcpu_stat *s);

/**
 * Sets every item of @p s back to 0, as a daemon's "stats reset" does.
 * Each update overlapping the call is counted once: before the reset (and
 * so cleared) or after it (and kept); at quiescence every item then reads
 * and sums to what was added since. sum() and snapshot() never see a
 * central line half reset. read() and sum() may go back across a reset
 * (the monotone-read promise holds between resets); error_bound() stays
 * true. O(armed CPUs x items). @since 0.5
 */
PCPU_EXPORT void pcpu_stat_reset(struct pcpu_stat *s);

/** Number of items of @p s; 0 for NULL. @since 0.1 */
PCPU_EXPORT unsigned int pcpu_stat_count(const struct pcpu_stat *s);

/**
 * The name of item @p item, owned by @p s; NULL with errno EINVAL for a NULL
 * set or ERANGE for an item out of range. @since 0.1
 */
PCPU_EXPORT const char *pcpu_stat_name(const struct pcpu_stat *s, unsigned int item);

/**
 * The help text of item @p item ("" if it has none), owned by @p s; NULL
 * with errno as pcpu_stat_name(). @since 0.4
 */
PCPU_EXPORT const char *pcpu_stat_help(const struct pcpu_stat *s, unsigned int item);

/**
 * The kind of item @p item (PCPU_METRIC_COUNTER or PCPU_METRIC_GAUGE); 0
 * with errno as pcpu_stat_name(). @since 0.4
 */
PCPU_EXPORT enum pcpu_metric_kind pcpu_stat_kind(const struct pcpu_stat *s, unsigned int item);

/**
 * The scale of item @p item (1 where its descriptor said 0 or 1); 0 with
 * errno as pcpu_stat_name(). @since 0.4
 */
PCPU_EXPORT int64_t pcpu_stat_scale(const struct pcpu_stat *s, unsigned int item);

/**
 * The index of the item named @p name.
 * @return the index; -EINVAL for NULL arguments; -ENOENT if no item has that
 *         name. @since 0.1
 */
PCPU_EXPORT int pcpu_stat_lookup(const struct pcpu_stat *s, const char *name);

/**
 * The group of item @p item, as given in the descriptor (0: ungrouped), in
 * @p group. @return 0; -EINVAL for NULL arguments; -ERANGE for an item out
 * of range. @since 0.1
 */
PCPU_EXPORT int pcpu_stat_group(const struct pcpu_stat *s, unsigned int item, uint32_t *group);

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_STAT_H */
