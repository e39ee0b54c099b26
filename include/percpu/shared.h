/* SPDX-License-Identifier: MIT */
/**
 * @file shared.h
 * Shared stat sets: per-CPU counters in a shared mapping, for prefork
 * daemons whose worker processes count into one set that any process (the
 * parent, a monitoring tool) reads.
 *
 * A segment holds the items of a descriptor (names, kinds, help, groups,
 * accuracy, floor), each item a counter with the stat set's promises: adds
 * are local to the CPU until its pending delta passes the elastic
 * threshold, read() is one load, error_bound() is a true bound at
 * quiescence, sum() is exact. Slots are indexed by CPU number, whatever the
 * process: a restartable sequence aborts on preemption, so two processes on
 * one CPU cannot interleave an add. All processes that write a segment must
 * use the update path it was made with (<percpu/cpu.h>); open refuses
 * others.
 *
 * Layout. Per CPU and item, a pair {value, mark} of 16 bytes (16 bytes per
 * item per CPU; each CPU has a 4 KiB page of them, so at most
 * PCPU_SHARED_MAX_ITEMS items, a histogram's buckets included). value only
 * ever grows by adds on that CPU; the exact value of an item is the sum of
 * its values over the CPUs, so sum() is wait-free, needs only read access and
 * never waits for a fold. read() is the item's central value, the sum of its
 * marks. A fold of a CPU's pair swaps {v, m} to {v, v} and adds v - m to the
 * central value; every fold runs under one process-shared robust mutex in the
 * segment. The segment records offsets, never pointers.
 *
 * A process that dies. A process killed at any instruction (SIGKILL in an
 * add or a fold included) loses none of the adds it completed (each is one
 * committing instruction), and sum() stays exact; error_bound() stays at
 * least what any CPU may hold under its threshold. What it can leave stale,
 * always while it held the segment's lock:
 * - if it died in a fold, the item's central value, short (or over) by
 *   that fold's amount: read() may be off by up to one CPU's pending delta
 *   beyond error_bound();
 * - if it died between the unchecked add of its slow path and that add's
 *   fold, that CPU's pending delta of the item, beyond the threshold.
 * Until when: the next time any writer takes the lock, for any item (a
 * slow-path add, a sync_if_delta_above() that folds, fold_all()). The lock
 * is robust: that writer rebuilds every central value from the marks, folds
 * every CPU's pending delta of every item, and goes on, so nothing blocks.
 * A read-only handle never takes the lock: it sees the staleness until a
 * writer does. A writer stopped (SIGSTOP, a debugger) while holding the
 * lock makes other writers' slow-path adds wait for it (an add waiting so
 * is not in sum() yet); fast-path adds and every read never wait.
 *
 * Bad input from outside. pcpu_shared_open() validates everything it uses
 * (what is at the name is a regular file, its magic, layout version, sizes,
 * every offset and length against the mapping, the item table and the
 * strings, which it copies) before using any of it: a truncated, foreign
 * or corrupted segment, or a FIFO, socket, directory or symbolic link at
 * the name, gives NULL and errno EINVAL or EBADMSG at once, never a crash
 * or a wait. What a process reads after that (values, marks, thresholds)
 * can only give wrong numbers. Writers trust each other: a process that
 * may write the segment can stop the others' folds (through the lock) or
 * make their numbers wrong.
 *
 * A segment cut short. A process with write access to the segment's file
 * can also truncate it, and a load from a page past its new end raises
 * SIGBUS. On a read-only handle, sum(), snapshot(), write() and
 * sync_if_delta_above() past its bound, which load from every CPU's row
 * (the end of the file), check the file's size first (one fstat(), a system
 * call; a named segment's handle keeps its file open, close-on-exec)
 * and report ENXIO instead. What still faults: a truncation between that
 * check and their loads, or during pcpu_shared_open() (between its fstat()
 * and its copies); read() and error_bound() (one load each, no check;
 * sync_if_delta_above() starts with them) once the file is cut into its
 * first pages; every call on a writer's handle (writers trust each other).
 * A reader that must survive even that handles SIGBUS, as percpu-stat
 * does. An anonymous segment has no file to cut.
 *
 * Permissions. A named segment is created with O_EXCL and mode 0600 (the
 * creator's user only), whatever the umask. To share with a group, set
 * desc.mode = 0660 (or 0640 for read-only members) and fchown() the
 * segment's file (/dev/shm/NAME on Linux) to the group, or create it from a
 * process whose group is that group. A reader needs read permission only.
 *
 * Bad arguments. create() and open() return NULL and set errno. An item
 * out of range, a NULL segment, or an add to a segment opened read-only,
 * passed to a call that cannot report an error is a programming error: in
 * builds of the library without NDEBUG it aborts with a message naming the
 * call; in release builds the call does nothing and returns 0.
 *
 * Labels and histograms. An item may carry constant labels, and be a
 * histogram, through desc.more (flag PCPU_SHARED_MORE). Items of one name
 * with different label tuples form one family in the exposition (one HELP and
 * TYPE, the first item's in name and label order; one sample per tuple). A
 * histogram item's bounds are fixed at create; it takes nr_bounds + 2 of the
 * PCPU_SHARED_MAX_ITEMS counters: one per bucket, counted past the items
 * (each a counter as above, with its item's accuracy and floor), and its own
 * for the sum of observations (pcpu_shared_sum() of it; _count is the sum of
 * the buckets).
 *
 * Why label tuples are fixed at create, not made at run time as
 * <percpu/family.h> makes them. A new tuple would be allocated in the
 * segment by whichever process meets it first, while other processes meet
 * it too and any of them may die at any instruction: the table of tuples
 * would need a lock whose holder can die with the table half written (a
 * robust mutex says that it died, not what it left), an allocator whose
 * state the same death can tear, and every reader to revalidate strings
 * that a writer may be changing under it. The segment keeps what makes it
 * safe now: its layout is written once, before ready, and validated once
 * at open; after that processes share only numbers. A daemon knows its
 * tuples (status classes, methods, pools) when it forks its workers;
 * values it cannot list belong in a process's own label family.
 *
 * Memory. A segment maps one 4 KiB page per possible CPU (and one more)
 * whatever it holds; of each, a labelled counter or gauge takes 16 bytes,
 * as any item, and a histogram of B bounds (B + 2) x 16 bytes. Once per
 * segment: 64 bytes of item table per item, its label text, 8 bytes per
 * bound, 24 bytes of central value and threshold per counter.
 *
 * Concurrency. Every call but close may run concurrently with every other,
 * from any thread of any process that has the segment open. add is not
 * async-signal-safe: its slow path takes the segment's lock.
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
	 * seconds). 0 for other kinds.
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
	 * name for several items of one kind with different labels.
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
	const uint64_t *thresh; /**< per item: the per-CPU threshold now */
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
 *           layout version or ready mark wrong (a segment of 0.2, layout
 *           1, read by 0.3, or one of 0.3, layout 2, read by 0.2), or its
 *           item table, strings, labels or bounds corrupt (help or a label
 *           value that is not UTF-8, a label name out of the grammar or out
 *           of order, bounds not strictly ascending, buckets or bounds
 *           that do not add up to the segment's);
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
	uint64_t limit;

	if (pcpu_unlikely(s == NULL || item >= s->add_items))
		goto slow;
	limit = __atomic_load_n(&s->thresh[item], __ATOMIC_RELAXED);
	/* |amount| <= limit, in one comparison (lib/policy.h) */
	if (pcpu_likely((uint64_t)amount + limit <= 2 * limit &&
			pcpu_this_cpu_add_checked(s->pairs + 2 * (uintptr_t)item, amount, limit,
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
 * Possible CPUs (the segment's) times the largest threshold of the item
 * since creation. O(1), one load. @since 0.2
 */
PCPU_EXPORT uint64_t pcpu_shared_error_bound(const struct pcpu_shared *s, unsigned int item);

/**
 * The exact value of item @p item: the sum of every CPU's value; O(CPUs),
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
 * Every item at once, in one walk over the CPUs: values[i] is what sum()
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
