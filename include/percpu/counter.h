/* SPDX-License-Identifier: MIT */
/**
 * @file counter.h
 * The native per-CPU counter with an elastic batch.
 *
 * Each CPU adds to its own slot and folds its pending delta into the
 * central value only when it passes a threshold that scales with the
 * central value (all CPUs together hold at most 1/accuracy of it, 1/64 by
 * default) above an absolute floor per CPU.
 *
 * The promise, whatever folds other threads run (the refresher,
 * sync_if_delta_above(), pcpu_registry_fold_all()): at quiescence
 * |read() - exact| <= error_bound() and sum() is exact; compare(),
 * limited_add() and sync_if_delta_above() answer from that. While every
 * update is >= 0, no thread ever sees read() or sum() decrease
 * (symmetrically for updates <= 0).
 *
 * Bad input. The init calls return 0 or a negative errno, and leave the
 * counter zero-filled (destroy is a no-op) when they fail. A NULL,
 * zero-filled or destroyed counter passed to any other call is a
 * programming error: in builds of the library without NDEBUG it aborts
 * with a message naming the call; in release builds the call does nothing
 * and returns 0 (or false). read() and initialized() never abort. Memory
 * never zeroed nor initialised cannot be told from a counter, and
 * initialising a live counter again corrupts the registry.
 *
 * Concurrency. Every call may overlap every other on the same counter,
 * except init, destroy and set (as in the kernel). fork() is safe at any
 * time, but not from a signal handler that interrupted this thread's own
 * call on a counter.
 *
 * Cost in CPUs and memory. Only the CPUs that have added to a counter
 * (armed: a CPU's first add takes the slow path once to arm its slot)
 * count: sum(), a precise compare(), sync_if_delta_above(), set() and
 * every fold visit them, not the possible ones (plus one word per 64
 * possible CPUs), and error_bound() counts them. Memory, with N possible
 * and M used CPUs: the struct, N / 8 bytes of heap for the set of armed
 * CPUs, and a 16-byte slot in each CPU's page of an arena chunk (256
 * counters to a 4 KiB page); the pages of CPUs that never add are never
 * written, so n counters cost about M * 16 * n bytes of RSS, not N * 16 * n.
 * Destroy reads (does not write) every possible CPU's copy.
 *
 * Link: pkg-config percpu. Proofs: docs/internals.md [armed],
 * [pending-bound], [publish-order], [monotone-read], [exact-sum]
 * (installed as /usr/share/doc/libpercpu-dev/internals.md by Debian's
 * libpercpu-dev, PREFIX/share/doc/percpu/internals.md by meson install).
 */
#ifndef PERCPU_COUNTER_H
#define PERCPU_COUNTER_H

#include <stdbool.h>
#include <stdint.h>

#include <percpu/common.h>
#include <percpu/cpu.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * One counter's copy on one CPU: 16 bytes, 16-byte aligned. @c value only
 * ever accumulates (its CPU's fast path adds, nobody else writes it),
 * @c mark says how much of it is already in the central value, plus
 * PCPU_SLOT_ARMED; 0 while the slot is not armed (no add of its CPU has
 * reached the counter yet). A fold swaps the pair with a 16-byte
 * compare-and-swap that changes only @c mark, so any thread may fold any
 * CPU. @since 0.1 (armed since 0.4)
 */
struct pcpu_slot {
	int64_t value;  /**< every add of this CPU, ever */
	int64_t mark;   /**< how much of @c value the central value holds, + PCPU_SLOT_ARMED */
};

/**
 * A counter. The fields are private; the layout is ABI. Embed it anywhere;
 * it must be initialised with pcpu_counter_init(), statically with
 * PCPU_COUNTER_INITIALIZER(), or zero-filled before any other call.
 * @since 0.1 (layout of 0.2)
 */
struct pcpu_counter {
	/* read by every add, read and compare; written only when a CPU folds */
	int64_t central;            /**< approximate central value */
	int64_t threshold;          /**< per-CPU fold threshold now */
	uint64_t threshold_max;     /**< largest threshold since init or set */
	struct pcpu_slot *slots;    /**< CPU 0's slot; NULL when not initialised */
	uint32_t mode;              /**< the update path (enum pcpu_cpu_mode) */
	uint32_t flags;             /**< PCPU_COUNTER_F_* */
	uint32_t armed;             /**< CPUs in @c armset: error bound = armed * threshold_max */
	uint32_t seq;               /**< folds in flight, the limited adds' gate */
	/* read and written rarely */
	int64_t base;               /**< exact value = base + sum of slot values */
	int64_t floor;              /**< absolute per-CPU threshold floor */
	uint64_t *armset;           /**< bitmap of the CPUs whose slots are armed */
	void *entry;                /**< the library's registry entry */
	uint32_t accuracy;          /**< relative accuracy is 1/accuracy */
};

/** Options for pcpu_counter_init_opts(); zero means "the default". @since 0.1 */
struct pcpu_counter_options {
	/**
	 * All CPUs together hold at most 1/accuracy of |value| unfolded.
	 * 0: 64. Accepted: 1 to PCPU_COUNTER_MAX_ACCURACY.
	 */
	int32_t accuracy;
	/**
	 * Absolute per-CPU threshold floor. 0: 32, whatever the CPU count
	 * (pcpu_counter_default_floor()). Accepted: 0 to PCPU_COUNTER_MAX_BATCH.
	 */
	int64_t floor;
	/**
	 * Non-zero: fixed batch (the kernel's behaviour): each CPU folds when
	 * its pending delta reaches +-batch, whatever the value. Accepted:
	 * 0 to PCPU_COUNTER_MAX_BATCH.
	 */
	int64_t batch;
};

/** Largest accepted relative accuracy divisor. @since 0.1 */
#define PCPU_COUNTER_MAX_ACCURACY (1 << 20)
/** Largest accepted floor or fixed batch. @since 0.1 */
#define PCPU_COUNTER_MAX_BATCH (INT64_C(1) << 40)

/** Flag: fixed batch, no elastic threshold. */
#define PCPU_COUNTER_F_FIXED 1u
/**
 * Flag: set by a client (<percpu/client.h>) that describes the counter
 * (a metric); destroy tells it. @since 0.4
 */
#define PCPU_COUNTER_F_DESCRIBED 2u
/**
 * Flag: the counter was initialised statically, by PCPU_COUNTER_INITIALIZER().
 * @since 0.5
 */
#define PCPU_COUNTER_F_STATIC 4u

/**
 * A static initialiser, for a counter that code running before main() or
 * before any set-up may add to (an allocator's statistics, say):
 * @code
 * static struct pcpu_counter used = PCPU_COUNTER_INITIALIZER(0);
 * @endcode
 * Until its first add (or limited add) it holds @p value exactly: read()
 * and sum() return it, error_bound() is 0, compare() is exact, set()
 * stores, and no memory is taken. That first call sets it up with the
 * default options, once, whichever thread comes first (the others wait for
 * it); from then on it is any counter. If its per-CPU memory cannot be
 * allocated, the add goes to the value with one atomic add (still exact)
 * and the next one tries again; a limited add then returns false.
 * pcpu_counter_initialized() is false until it is set up. Destroying it is
 * optional (at exit its memory is still reachable); a destroyed one is
 * zero-filled, as any counter. @since 0.5
 */
#define PCPU_COUNTER_INITIALIZER(value) \
	{ .central = (value), .flags = PCPU_COUNTER_F_STATIC, .base = (value) }

/**
 * The default absolute per-CPU threshold floor of counters, stat set items
 * and shared segment items: 32, the kernel's smallest batch, whatever the
 * CPU count, so a counter near zero is within 32 per CPU that added to
 * it of exact (stat set and shared segment items too: their bounds count
 * armed CPUs, not possible ones; the kernel drop-in's percpu_counter_batch
 * is the kernel's batch instead). Computing it does not choose the update
 * path.
 * @since 0.2 (32 whatever the CPUs since 0.3)
 */
PCPU_EXPORT int64_t pcpu_counter_default_floor(void) PCPU_PURE;

/**
 * Initialises @p c to @p value with the default elastic batch.
 * @return 0; -EINVAL if @p c is NULL; -ENOMEM if per-CPU memory could not
 *         be allocated (then @p c is left uninitialised: destroy is a no-op).
 * @since 0.1
 */
PCPU_EXPORT int pcpu_counter_init(struct pcpu_counter *c, int64_t value);

/**
 * Initialises @p c with options; @p opts NULL means all defaults.
 * @return 0; -EINVAL for NULL @p c or an option out of its accepted range
 *         (negative, or above its maximum); -ENOMEM as pcpu_counter_init().
 * @since 0.1
 */
PCPU_EXPORT int pcpu_counter_init_opts(struct pcpu_counter *c, int64_t value,
				       const struct pcpu_counter_options *opts);

/**
 * Initialises the @p n counters of the array @p c to @p value; all or none.
 * @return 0; -EINVAL for NULL @p c or @p n == 0; -ENOMEM (then every
 *         element is left zero-filled: none is initialised, and
 *         pcpu_counter_destroy_many() on the whole array is safe). @since 0.1
 */
PCPU_EXPORT int pcpu_counter_init_many(struct pcpu_counter *c, int64_t value, unsigned int n);

/**
 * Initialises the @p n counters of the array @p c to @p value with options
 * (@p opts NULL means all defaults); all or none, as
 * pcpu_counter_init_many(). @return 0; -EINVAL for NULL @p c, @p n == 0 or
 * an option out of range; -ENOMEM. @since 0.3
 */
PCPU_EXPORT int pcpu_counter_init_many_opts(struct pcpu_counter *c, int64_t value, unsigned int n,
					    const struct pcpu_counter_options *opts);

/**
 * Destroys the @p n counters of the array @p c. Idempotent per counter;
 * NULL or 0 does nothing. @since 0.1
 */
PCPU_EXPORT void pcpu_counter_destroy_many(struct pcpu_counter *c, unsigned int n);

/**
 * Releases the per-CPU memory of @p c. Idempotent: destroying a destroyed,
 * zero-filled or failed-to-initialise counter does nothing; NULL does
 * nothing. Does not wait for an RCU grace period per call: it waits while
 * the refresher (or pcpu_registry_fold_all()) is folding this very counter,
 * one walk over the CPUs, and one destroy in 64 waits for one grace period
 * that frees the library's entries of the last 64. @since 0.1
 */
PCPU_EXPORT void pcpu_counter_destroy(struct pcpu_counter *c);

/** True if @p c is initialised and not destroyed. @since 0.1 */
static inline bool pcpu_counter_initialized(const struct pcpu_counter *c)
{
	return c && __atomic_load_n(&c->slots, __ATOMIC_RELAXED) != NULL;
}

#include <percpu/static/counter.h>

/**
 * Adds @p amount (any sign, any size) to @p c. Inline fast path: adds to
 * this CPU's slot within the threshold (the atomic path adds, then checks);
 * past the threshold (or for an amount above it) the amount and
 * this CPU's pending delta go to the central value. @since 0.1
 */
PCPU_INLINE void pcpu_counter_add(struct pcpu_counter *c, int64_t amount)
{
	__pcpu_counter_add_within(c, amount,
				  c ? __atomic_load_n(&c->threshold, __ATOMIC_RELAXED) : 0, -1);
}

/**
 * Adds @p amount folding at the caller's fixed @p batch instead of the
 * counter's threshold (the kernel's percpu_counter_add_batch()): this CPU
 * folds all of its pending delta when it would reach +-batch; batch <= 1
 * folds every add. error_bound() grows to cover the
 * batch. @since 0.1
 */
PCPU_INLINE void pcpu_counter_add_batch(struct pcpu_counter *c, int64_t amount,
					int64_t batch)
{
	int64_t threshold = batch > 0 ? batch - 1 : 0;

	if (threshold > PCPU_COUNTER_MAX_BATCH)
		threshold = PCPU_COUNTER_MAX_BATCH;
	/* the bound must cover the batch before the fast path may use it */
	if (pcpu_unlikely(c && (uint64_t)threshold > __atomic_load_n(&c->threshold_max,
								  __ATOMIC_RELAXED))) {
		__pcpu_counter_add_slow(c, amount, threshold);
		return;
	}
	__pcpu_counter_add_within(c, amount, threshold, threshold);
}

/**
 * The approximate value: one load. |read - exact| <= pcpu_counter_error_bound()
 * whenever no update is in flight. @since 0.1
 */
static inline int64_t pcpu_counter_read(const struct pcpu_counter *c)
{
	return c ? __atomic_load_n(&c->central, __ATOMIC_RELAXED) : 0;
}

/**
 * A bound that is always true at quiescence, whatever folds ran
 * concurrently with the updates: |read - exact| <= error_bound. It is the
 * number of armed CPUs (those that have added to @p c since it was
 * initialised, not the possible ones) times the largest threshold in force
 * since the counter was initialised or set, so it does not shrink when the
 * value does (a CPU may still hold a delta taken under that threshold).
 * 0 before any CPU's add reached a slot. O(1). @since 0.1 (armed CPUs
 * since 0.4)
 */
PCPU_EXPORT uint64_t pcpu_counter_error_bound(const struct pcpu_counter *c);

/**
 * The exact value: the base plus every armed CPU's slot, read-only,
 * O(armed CPUs).
 * Exact at quiescence; while updates run it returns a value between the
 * total of updates completed before the call and that of updates started
 * before it returned, and never counts a fold twice or misses one.
 * @since 0.1
 */
PCPU_EXPORT int64_t pcpu_counter_sum(const struct pcpu_counter *c);

/**
 * Returns read() when error_bound() <= @p delta. Otherwise reads the armed
 * CPUs' pending deltas (no writes; it stops once they add up to more than
 * @p delta): if their magnitudes add up to at most @p delta, returns
 * read(); else folds every CPU's pending delta into the central value, in
 * one walk that also sums the slots, and returns the exact value it read. Either way the result is
 * within @p delta of exact at quiescence, and so is read() afterwards until
 * the next update. @since 0.1
 */
PCPU_EXPORT int64_t pcpu_counter_sync_if_delta_above(struct pcpu_counter *c, uint64_t delta);

/**
 * Compares the value of @p c with @p rhs: -1, 0 or 1. Inline: answers from
 * read() and the bound when they cannot straddle @p rhs; otherwise from
 * pcpu_counter_sum(). @since 0.1 (inline since 0.2)
 */
static inline int pcpu_counter_compare(struct pcpu_counter *c, int64_t rhs)
{
	if (pcpu_likely(c != NULL && c->slots != NULL)) {
		int64_t v = __atomic_load_n(&c->central, __ATOMIC_RELAXED);
		uint64_t bound = __pcpu_counter_bound(c);

		if (v > rhs && (uint64_t)v - (uint64_t)rhs > bound)
			return 1;
		if (v < rhs && (uint64_t)rhs - (uint64_t)v > bound)
			return -1;
	}
	return __pcpu_counter_compare_precise(c, rhs);
}

/**
 * Compares the value of @p c with @p rhs, as pcpu_counter_compare(), and
 * gives the value it compared: the exact sum where read() and the bound
 * straddle @p rhs (*@p error 0), else read() (*@p error the bound, which it
 * is off by at most at quiescence). For a caller that compares with a
 * limit and, when over, needs the amount (a maxmemory check): it sums the
 * CPUs once, not once to compare and once more for the amount, and not at
 * all far from the limit. @p value and @p error must not be NULL.
 * @return -1, 0 or 1. @since 0.5
 */
static inline int pcpu_counter_compare_value(struct pcpu_counter *c, int64_t rhs, int64_t *value,
					     uint64_t *error)
{
	if (pcpu_likely(c != NULL && c->slots != NULL)) {
		int64_t v = __atomic_load_n(&c->central, __ATOMIC_RELAXED);
		uint64_t bound = __pcpu_counter_bound(c);

		*value = v;
		*error = bound;
		if (v > rhs && (uint64_t)v - (uint64_t)rhs > bound)
			return 1;
		if (v < rhs && (uint64_t)rhs - (uint64_t)v > bound)
			return -1;
	}
	*value = pcpu_counter_sum(c);
	*error = 0;
	return (*value > rhs) - (*value < rhs);
}

/**
 * Adds @p amount only if the result stays within @p limit: at most @p limit
 * for a positive amount, at least @p limit for a negative one (the kernel's
 * percpu_counter_limited_add()). Concurrent limited adds never take the
 * counter past @p limit (plain adds are not limited, and a plain add still
 * in progress, one that goes to the central value, may be ordered after a
 * concurrent limited add). An amount of 0 returns true. @return whether it
 * added.
 *
 * Cost. While the room between read() and @p limit is at least
 * error_bound() and the amount fits this CPU's threshold, it is one
 * restartable sequence on this CPU: no lock, no shared cacheline written.
 * Nearer the limit it decides precisely (from sum() when read() and the
 * bound cannot), serialised with the other precise limited adds of the
 * counter, and shuts the far path out meanwhile with an rseq fence
 * (membarrier(2)): the first precise add after far ones costs a system
 * call, the ones after it do not. On the atomic path every limited add
 * decides precisely. Not async-signal-safe (the precise path takes a
 * lock). @since 0.1 (lock-free far from the limit since 0.2)
 */
PCPU_EXPORT bool pcpu_counter_limited_add(struct pcpu_counter *c, int64_t limit, int64_t amount);

/**
 * Sets the value of @p c: every CPU's pending delta is dropped. Must not run
 * concurrently with other calls on @p c. @since 0.1
 */
PCPU_EXPORT void pcpu_counter_set(struct pcpu_counter *c, int64_t value);

/**
 * Folds the calling CPU's pending delta into the central value (the
 * kernel's percpu_counter_sync()); on the atomic path, that of the slot the
 * calling thread owns. @since 0.1
 */
PCPU_EXPORT void pcpu_counter_fold_this_cpu(struct pcpu_counter *c);

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_COUNTER_H */
