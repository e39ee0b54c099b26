/* SPDX-License-Identifier: MIT */
/**
 * @file shared.h
 * Shared stat sets: per-CPU counters in a shared mapping, for prefork
 * daemons whose worker processes count into one set that any process (the
 * parent, a monitoring tool) reads.
 *
 * Each item keeps the promise of a stat set's item (<percpu/stat.h>) across
 * processes; sum() is wait-free and needs read access only. Every process
 * that writes a segment uses the update path it was made with (open
 * refuses others). Items may carry constant labels, or be histograms,
 * through desc.more (PCPU_SHARED_MORE), fixed at create.
 *
 * A process that dies at any instruction loses none of the adds it
 * completed, and sum() stays exact; a fold it cut short leaves read() off
 * by up to one CPU's pending delta beyond error_bound() until the next
 * writer takes the segment's robust lock and repairs it (a read-only
 * handle never takes it). Writers trust each other; readers trust nothing:
 * pcpu_shared_open() validates all it uses first, and a bad segment gives
 * NULL and errno, never a crash or a wait. A segment cut short (its file
 * truncated): on a read-only handle, sum(), snapshot() and
 * sync_if_delta_above() past its bound report ENXIO; a truncation racing
 * that check, read(), error_bound() and every call on a writer's handle
 * may raise SIGBUS. A named segment gets mode desc.mode (0600 by default)
 * whatever the umask; a reader needs read permission only.
 *
 * Bad arguments. create() and open() return NULL and set errno. An item
 * out of range, a NULL segment, or an add to a segment opened read-only,
 * passed to a call that cannot report an error is a programming error: in
 * builds of the library without NDEBUG it aborts naming the call; in
 * release builds the call does nothing and returns 0. Every call but close
 * may overlap every other, from any process; add may lock (not
 * async-signal-safe).
 *
 * Link: pkg-config percpu. Proofs: docs/internals.md [pending-bound],
 * [exact-sum], [segment-recovery], [armed-segment]
 * (installed as /usr/share/doc/libpercpu-dev/internals.md by Debian's
 * libpercpu-dev, PREFIX/share/doc/percpu/internals.md by meson install).
 */
#ifndef PERCPU_SHARED_H
#define PERCPU_SHARED_H

#include <stdint.h>
#include <stdio.h>

#include <percpu/common.h>
#include <percpu/cpu.h>
#include <percpu/client.h>
#include <percpu/stat.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Most counters in one segment, 16 bytes each in one CPU's stride: items,
 * and since 0.3 nr_bounds + 1 more per histogram. @since 0.2
 */
#define PCPU_SHARED_MAX_ITEMS 256
/** Largest per-CPU threshold, and largest accepted floor. @since 0.2 */
#define PCPU_SHARED_MAX_THRESH (INT64_C(1) << 40)
/** Longest help text of an item, in bytes. @since 0.2 */
#define PCPU_SHARED_MAX_HELP 1024

/** Most constant labels of one item. @since 0.3 */
#define PCPU_SHARED_MAX_LABELS 16
/**
 * Longest label text of one item: every label name and value with a NUL
 * after each. @since 0.3
 */
#define PCPU_SHARED_MAX_LABEL_TEXT 2048

/** pcpu_shared_open() flag: attach read-only (a reader). @since 0.2 */
#define PCPU_SHARED_RDONLY 1u

/**
 * pcpu_shared_desc flag: the descriptor has its @c more field (a
 * descriptor of 0.2 ends before it, so the library reads it only then).
 * @since 0.3
 */
#define PCPU_SHARED_MORE 1u

/** What an item of a segment may carry beyond struct pcpu_stat_item. @since 0.3 */
struct pcpu_shared_more {
	/**
	 * NULL or PCPU_LABELS("key", "value", ...): at most
	 * PCPU_SHARED_MAX_LABELS names of the label grammar (no "le" on a
	 * histogram), each once, values UTF-8, PCPU_SHARED_MAX_LABEL_TEXT
	 * bytes in all; copied (sorted by name).
	 */
	const char *const *labels;
	/** A histogram's strictly ascending upper bounds (inclusive); copied. */
	const int64_t *bounds;
	uint32_t nr_bounds; /**< a histogram's; 0 for other kinds */
	uint32_t reserved;  /**< zero */
	/**
	 * A histogram's: 0 or 1: none; else its bounds and sum are exposed
	 * divided by it (1000000: observed in microseconds, exposed in
	 * seconds): any positive value, a reader's exposition of it is a
	 * division and never fails. 0 for other kinds.
	 */
	int64_t scale;
};

/** A shared segment's descriptor. @since 0.2 */
struct pcpu_shared_desc {
	/**
	 * @c nr_items items, as for a stat set; each name must be a valid
	 * metric name for its kind (it is what percpu-stat exposes), help
	 * UTF-8 (as both exposition formats require) of at most
	 * PCPU_SHARED_MAX_HELP bytes, floor at most PCPU_SHARED_MAX_THRESH.
	 * Since 0.3, with @c more: kind PCPU_METRIC_HISTOGRAM too, and one
	 * name for several items of one kind with different labels. An
	 * item's group is kept but changes nothing a reader reports (a
	 * segment's items have a pair each, not shared lines); the fuzzer
	 * checks that no value of it does (test/fuzz/fuzz_shared.c).
	 */
	const struct pcpu_stat_item *items;
	uint32_t nr_items; /**< 1 to PCPU_SHARED_MAX_ITEMS */
	uint32_t flags;    /**< 0 or PCPU_SHARED_MORE */
	/** Permission bits of a named segment (at most 0777); 0: 0600. */
	uint32_t mode;
	uint32_t reserved; /**< zero */
	/**
	 * With PCPU_SHARED_MORE: NULL, or @c nr_items entries, more[i] for
	 * items[i]. @since 0.3
	 */
	const struct pcpu_shared_more *more;
};

/**
 * A process's handle on a segment. The fields are what the inline add
 * reads: private, pointers into this process's mapping; the layout is ABI.
 * The library allocates it (with private state after these fields).
 * @since 0.2
 */
struct pcpu_shared {
	int64_t *pairs;         /**< CPU 0's pairs; item i's is pairs + 2 * i */
	const uint64_t *threshold; /**< per item: the per-CPU threshold now */
	uint32_t add_items;     /**< items, if open for writing; else 0 */
	uint32_t mode;          /**< the update path (enum pcpu_cpu_mode) */
};

/**
 * Creates a segment from @p d, every value 0, open for writing. @p name is
 * a shm_open() name ("/myd-stats"), created with O_EXCL and mode
 * @c d->mode (0600 by default); NULL makes an anonymous segment, shared with
 * the children forked afterwards (they use the same handle).
 * @return the handle; NULL with errno EINVAL (a bad descriptor, help that
 *         is not UTF-8, a bad label or label value, bounds not strictly
 *         ascending, two items of one name with the same labels or of
 *         different kinds, more counters than PCPU_SHARED_MAX_ITEMS, or a
 *         bad name), EEXIST (the name exists), ENOMEM,
 *         ENOTSUP (as for pcpu_shared_open()), or what shm_open(),
 *         ftruncate() or mmap() set. @since 0.2
 */
PCPU_EXPORT struct pcpu_shared *pcpu_shared_create(const char *name,
						   const struct pcpu_shared_desc *d);

/**
 * Attaches to the segment @p name, for writing, or read-only with
 * PCPU_SHARED_RDONLY (mapped without write access; a reader never writes
 * the segment nor takes its lock).
 * @return the handle; NULL with errno:
 *         - ENOENT, EACCES, ENAMETOOLONG, EMFILE, ENFILE (from shm_open());
 *         - EAGAIN: its creator has not finished it yet (the file is empty,
 *           or zero-filled, or its header is unfinished): try again. A file
 *           that stays so was not made by pcpu_shared_create(), or its
 *           creator died making it: bound the retries;
 *         - EBADMSG: not a percpu segment: not a regular file (a FIFO, a
 *           socket, a directory, a symbolic link, a device), or its magic,
 *           layout version or ready mark wrong (every release reads its
 *           own layout only: 0.4 reads layout 3, and refuses one of 0.3,
 *           layout 2, or of 0.2, layout 1; 0.3 and 0.2 refuse layout 3;
 *           percpu-stat names the layout it found), or its item table,
 *           strings, labels or bounds corrupt (help or a label value that
 *           is not UTF-8, a label name out of the grammar or out of order,
 *           bounds not strictly ascending, buckets or bounds that do not
 *           add up to the segment's), or, since 0.4, its set of armed rows
 *           (a bit past the last row, an armed count below the set's size
 *           or above the rows);
 *         - EINVAL: a NULL name or a bad flag; a name shm_open() refuses
 *           (glibc's says so of a directory opened for writing); a
 *           truncated segment (a size, offset or length that does not
 *           fit); or, for writing, a segment made for another number of
 *           possible CPUs;
 *         - EPROTO: for writing, the segment was made on the other update
 *           path than this process's (see pcpu_cpu_setup());
 *         - ENOMEM: no memory or address space for the handle or mapping;
 *         - ENOTSUP: this architecture has no lock-free 16-byte
 *           compare-and-swap (i386, armhf, riscv64, ...): the library swaps
 *           pairs under a lock of its process, which other processes
 *           sharing the segment would not respect.
 * @since 0.2
 */
PCPU_EXPORT struct pcpu_shared *pcpu_shared_open(const char *name, unsigned int flags);

/**
 * Detaches @p s (unmaps it, closes its file) and frees the handle; the
 * segment lives on until it is unlinked and every process has closed it.
 * NULL does nothing. Must not overlap any other call on @p s. @since 0.2
 */
PCPU_EXPORT void pcpu_shared_close(struct pcpu_shared *s);

/** Removes the name @p name. @return 0 or a negative errno. @since 0.2 */
PCPU_EXPORT int pcpu_shared_unlink(const char *name);

#include <percpu/static/shared.h>

/**
 * Adds @p amount (any sign, any size) to item @p item. Inline fast path:
 * one step (a restartable sequence, or a compare-and-swap of the pair)
 * that adds to this CPU's pair if the item stays within its threshold;
 * otherwise the amount goes to this CPU's value and that pair is folded,
 * under the segment's lock. @since 0.2
 */
PCPU_INLINE void pcpu_shared_add(struct pcpu_shared *s, unsigned int item, int64_t amount)
{
	uint64_t threshold;

	if (pcpu_unlikely(s == NULL || item >= s->add_items))
		goto slow;
	threshold = __atomic_load_n(&s->threshold[item], __ATOMIC_RELAXED);
	if (pcpu_likely(__pcpu_within(amount, threshold) &&
			pcpu_this_cpu_add_armed(s->pairs + 2 * (uintptr_t)item, amount, threshold,
						s->mode)))
		return;
slow:
	__pcpu_shared_add_slow(s, item, amount);
}

/**
 * The approximate value of item @p item: one load of its central value.
 * |read - exact| <= pcpu_shared_error_bound() whenever no update is in
 * flight (and no process died in a fold since the last one). Monotone
 * while every update has one sign. @since 0.2
 */
PCPU_EXPORT int64_t pcpu_shared_read(const struct pcpu_shared *s, unsigned int item);

/**
 * The segment's armed rows (CPUs, of any process, that ever added to it,
 * and the row of threads without a CPU number if one did) times the
 * largest threshold of the item since creation; 0 before any add. O(1),
 * two loads. Since 0.4 (before: possible CPUs times it). @since 0.2
 */
PCPU_EXPORT uint64_t pcpu_shared_error_bound(const struct pcpu_shared *s, unsigned int item);

/**
 * The exact value of item @p item: the sum of every armed row's value
 * (rows where a CPU ever added; since 0.4); O(armed rows),
 * wait-free, read-only. Exact at quiescence; while updates run, between
 * the total of the adds completed before the call and that of those
 * started before it returned. Monotone while every update has one sign.
 * On a read-only handle of a segment whose file was cut short (see the
 * top), returns 0 with errno ENXIO (snapshot() tells it from a value of
 * 0). @since 0.2
 */
PCPU_EXPORT int64_t pcpu_shared_sum(const struct pcpu_shared *s, unsigned int item);

/**
 * Returns read() when error_bound() <= @p delta. Otherwise, on a handle
 * open for writing, folds every CPU's pending delta of the item under the
 * lock and returns the exact sum (read() is then within @p delta of exact
 * until the next update); on a read-only handle, returns the exact sum
 * without folding (read() stays as it was), or 0 with errno ENXIO for a
 * segment cut short, as sum(). @since 0.2
 */
PCPU_EXPORT int64_t pcpu_shared_sync_if_delta_above(struct pcpu_shared *s, unsigned int item,
						    uint64_t delta);

/**
 * Every item at once, in one walk over the armed rows: values[i] is what sum()
 * returns, bounds[i] (if @p bounds is not NULL) error_bound(). Each array
 * holds pcpu_shared_count() elements.
 * @return 0; -EINVAL if @p s or @p values is NULL; -ENXIO on a read-only
 *         handle of a segment whose file was cut short (see the top): @p
 *         values is then unchanged.
 * @since 0.2
 */
PCPU_EXPORT int pcpu_shared_snapshot(const struct pcpu_shared *s, int64_t *values,
				     uint64_t *bounds);

/**
 * Folds every CPU's pending delta of every item, under the lock:
 * afterwards read() is exact until the next update. On a read-only handle
 * it does nothing. @since 0.2
 */
PCPU_EXPORT void pcpu_shared_fold_all(struct pcpu_shared *s);

/** Number of items of @p s; 0 for NULL. @since 0.2 */
PCPU_EXPORT unsigned int pcpu_shared_count(const struct pcpu_shared *s);

/**
 * The name of item @p item, owned by @p s (a copy made at open); NULL with
 * errno EINVAL for a NULL segment or ERANGE for an item out of range.
 * @since 0.2
 */
PCPU_EXPORT const char *pcpu_shared_name(const struct pcpu_shared *s, unsigned int item);

/**
 * The help text of item @p item ("" if none), as pcpu_shared_name().
 * @since 0.2
 */
PCPU_EXPORT const char *pcpu_shared_help(const struct pcpu_shared *s, unsigned int item);

/**
 * The kind of item @p item (PCPU_METRIC_COUNTER, PCPU_METRIC_GAUGE or,
 * since 0.3, PCPU_METRIC_HISTOGRAM); 0 for a NULL segment or an item out
 * of range. @since 0.2
 */
PCPU_EXPORT enum pcpu_metric_kind pcpu_shared_kind(const struct pcpu_shared *s,
						   unsigned int item);

/**
 * The index of the item named @p name (the first, of items that share it).
 * @return the index; -EINVAL for NULL arguments; -ENOENT if no item has
 *         that name. @since 0.2
 */
PCPU_EXPORT int pcpu_shared_lookup(const struct pcpu_shared *s, const char *name);

/**
 * The index of the item named @p name with the labels @p labels
 * (PCPU_LABELS(...) in any order; NULL: none).
 * @return the index; -EINVAL for NULL @p s or @p name; -ENOENT if no
 *         item has that name and those labels. @since 0.3
 */
PCPU_EXPORT int pcpu_shared_lookup_labels(const struct pcpu_shared *s, const char *name,
					  const char *const *labels);

/**
 * The constant labels of item @p item: {"key", "value", ..., NULL}, sorted
 * by key, owned by @p s; {NULL} for none; NULL with errno as
 * pcpu_shared_name(). @since 0.3
 */
PCPU_EXPORT const char *const *pcpu_shared_labels(const struct pcpu_shared *s,
						  unsigned int item);

/**
 * The bounds of histogram item @p item, owned by @p s (a copy made at
 * open), their number in *@p nr_bounds, its scale in *@p scale (may be
 * NULL; 1: none); NULL with errno EINVAL (NULL arguments, not a
 * histogram) or ERANGE (an item out of range). @since 0.3
 */
PCPU_EXPORT const int64_t *pcpu_shared_bounds(const struct pcpu_shared *s, unsigned int item,
					       uint32_t *nr_bounds, int64_t *scale);

/**
 * Records @p value in histogram item @p item: the first bucket whose bound
 * is >= it, else +Inf, then the sum; two adds of pcpu_shared_add()'s path
 * (one call into the library). An item that is no histogram is misuse, as
 * an item out of range (see the top). pcpu_shared_add() to a histogram
 * item adds to its sum only: not checked on its inline path. @since 0.3
 */
PCPU_EXPORT void pcpu_shared_observe(struct pcpu_shared *s, unsigned int item, int64_t value);

/**
 * Histogram item @p item's buckets, exact as sum(): @p buckets holds
 * nr_bounds + 1 counts, not cumulative (the last is +Inf); *@p sum (may be
 * NULL) the sum of observations.
 * @return 0; -EINVAL (NULL arguments, not a histogram); -ERANGE (an item
 *         out of range); -ENXIO as snapshot(). @since 0.3
 */
PCPU_EXPORT int pcpu_shared_histogram(const struct pcpu_shared *s, unsigned int item,
				      uint64_t *buckets, int64_t *sum);


#ifdef __cplusplus
}
#endif

#endif /* PERCPU_SHARED_H */
