/* SPDX-License-Identifier: MIT */
/**
 * @file charge.h
 * Charging against a limit with per-CPU stocks (memcg's obj_stock).
 *
 * Each CPU keeps a stock reserved from the limit: pcpu_charge_try() takes
 * from this CPU's stock and pcpu_charge_uncharge() gives back to it,
 * inline, with no shared cacheline written while the stock suffices; a
 * stock that runs out or overflows goes to the central reservation, and
 * refills shrink as the limit nears.
 *
 * The promise, under any concurrency: reserved() (usage plus every stock)
 * never exceeds the limit (after pcpu_charge_set_limit() below it, every
 * stock stays closed until it is back under); once set_limit(L) returns,
 * no try takes usage above L (a try reserved under the old limit counts as
 * one that returned before); at quiescence try(a) succeeds if and only if
 * usage + a <= limit; usage() stays exact whatever threads migrate, are
 * signalled, exit or fork. Taking stocks back needs membarrier(2)'s rseq
 * fence (Linux 5.10) on the rseq path; without it, charges use the atomic
 * path.
 *
 * Bad input. pcpu_charge_init() returns -EINVAL for NULL, a negative limit
 * or a stock cap out of range. A NULL, zero-filled or destroyed charge, or
 * a negative amount, passed to try or uncharge is a programming error: in
 * builds of the library without NDEBUG it aborts naming the call; in
 * release builds try returns false and uncharge does nothing. Uncharging
 * more than was charged is not detected: usage() goes negative.
 *
 * Concurrency. Every call may overlap every other on the same object,
 * except init and destroy. try and uncharge may run in a signal handler (a
 * try that would wait for the thread it interrupted fails instead); a
 * handler must not longjmp() out of a take it interrupted. fork() is safe,
 * but not from a handler that interrupted this thread's slow path.
 *
 * Link: pkg-config percpu. Proofs: docs/internals.md [pending-bound], path
 * 2 (installed as /usr/share/doc/libpercpu-dev/internals.md by Debian's
 * libpercpu-dev, PREFIX/share/doc/percpu/internals.md by meson install);
 * a take's, in lib/charge/charge.c's opening comment (the source only).
 */
#ifndef PERCPU_CHARGE_H
#define PERCPU_CHARGE_H

#include <stdbool.h>
#include <stdint.h>

#include <percpu/common.h>
#include <percpu/cpu.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest accepted limit and stock cap. @since 0.2 */
#define PCPU_CHARGE_MAX (INT64_C(1) << 60)

/**
 * One CPU's stock: 16 bytes, 16-byte aligned. @c charged only ever changes
 * by this CPU's inline try (up) and uncharge (down); @c mark is the stock
 * granted to this CPU, biased by half the cap, and only ever changes by a
 * compare-and-swap of the pair. stock = mark + half - charged. Private;
 * the layout is ABI. @since 0.2
 */
struct pcpu_charge_slot {
	int64_t charged; /**< what this CPU's inline calls moved, ever */
	int64_t mark;    /**< the stock's bookkeeping (lib/charge/charge.c) */
};

/**
 * A charge object, 128 bytes. The fields are private; the layout is ABI.
 * Embed it anywhere (64-byte aligned is best: see the central fields);
 * initialise it with pcpu_charge_init() or zero-fill it before any other
 * call. @since 0.2
 */
struct pcpu_charge {
	/* read by every try and uncharge; written only by init and destroy */
	struct pcpu_charge_slot *slots; /**< CPU 0's stock; NULL when not initialised */
	int64_t half;                   /**< half the stock cap: the fast path's window */
	uint32_t mode;                  /**< the update path (enum pcpu_cpu_mode) */
	uint32_t flags;                 /**< zero */
	void *entry;                    /**< the library's registry entry */
	uint64_t pad0[4];               /**< the central fields start 64 bytes in */
	/*
	 * Read and written by refills, returns and takes: on a cacheline of
	 * their own when the object is 64-byte aligned, so that slow paths on
	 * other CPUs do not take the line every inline try reads.
	 */
	int64_t limit;                  /**< the limit */
	int64_t reserved;               /**< central reservation: usage + every stock */
	int64_t used;                   /**< charged by the slow paths, not by a stock */
	uint32_t taking;                /**< a thread is taking stocks back */
	uint32_t reserved0;             /**< zero */
	uint64_t pad1[4];               /**< to 128 bytes */
};

/** Options for pcpu_charge_init(). Zero means "the default". @since 0.2 */
struct pcpu_charge_options {
	/** The limit: 0 to PCPU_CHARGE_MAX. */
	int64_t limit;
	/**
	 * The most one CPU may hold in stock; amounts up to half of it are
	 * served inline (so it should be at least twice the usual charge).
	 * What a CPU holds below the cap shrinks with the room left (refills
	 * and the stock an uncharge keeps are a quarter of the room, shared by
	 * the CPUs). 0: the limit / possible CPUs (a CPU's share), at least 2 and at most
	 * 2^32. Accepted: 0 to PCPU_CHARGE_MAX.
	 */
	int64_t stock_cap;
};

/**
 * Initialises @p ch with nothing charged.
 * @return 0; -EINVAL for NULL @p ch or @p o, or an option out of range;
 *         -ENOMEM (then @p ch is zero-filled: destroy is a no-op). @since 0.2
 */
PCPU_EXPORT int pcpu_charge_init(struct pcpu_charge *ch, const struct pcpu_charge_options *o);

/**
 * Releases the per-CPU memory of @p ch. Idempotent; NULL or a zero-filled
 * charge does nothing. Must not overlap any other call on @p ch. @since 0.2
 */
PCPU_EXPORT void pcpu_charge_destroy(struct pcpu_charge *ch);

#include <percpu/static/charge.h>

/**
 * Charges @p amount (>= 0) if it fits under the limit: from this CPU's
 * stock inline, otherwise by a refill from the central reservation, taking
 * other CPUs' stocks back if it must. @return whether it charged. @since 0.2
 */
PCPU_INLINE bool pcpu_charge_try(struct pcpu_charge *ch, int64_t amount)
{
	/* the stock is mark + half - charged: charged + amount may rise to mark + half */
	if (__pcpu_charge_fast(ch, amount) &&
	    pcpu_this_cpu_add_checked(&ch->slots->charged, amount, (uint64_t)ch->half, ch->mode))
		return true;
	return __pcpu_charge_try_slow(ch, amount);
}

/**
 * Uncharges @p amount (>= 0): into this CPU's stock inline, up to the cap;
 * what overflows the cap goes back to the central reservation, and all of
 * it while reserved() is above the limit (the stocks are closed). @since 0.2
 */
PCPU_INLINE void pcpu_charge_uncharge(struct pcpu_charge *ch, int64_t amount)
{
	/* ... and charged - amount may fall to mark - half: a stock of the whole cap */
	if (__pcpu_charge_fast(ch, amount) &&
	    pcpu_this_cpu_add_checked(&ch->slots->charged, -amount, (uint64_t)ch->half, ch->mode))
		return;
	__pcpu_charge_uncharge_slow(ch, amount);
}

/**
 * The amount charged and not uncharged, O(CPUs). Exact at quiescence; while
 * charges run, it counts every try and uncharge that returned before the
 * call and any subset of those that run during it (a thread may charge on
 * one CPU and uncharge on another). @since 0.2
 */
PCPU_EXPORT int64_t pcpu_charge_usage(const struct pcpu_charge *ch);

/** The central reservation: usage plus every stock; never above the limit. @since 0.2 */
PCPU_EXPORT int64_t pcpu_charge_reserved(const struct pcpu_charge *ch);

/** The limit. @since 0.2 */
PCPU_EXPORT int64_t pcpu_charge_limit(const struct pcpu_charge *ch);

/**
 * Takes every CPU's stock back into the central reservation: afterwards,
 * until the next try or uncharge, reserved() == usage() (an uncharge may
 * keep what it frees in its CPU's stock again, unless reserved() is above
 * the limit). May wait for another thread's take. @since 0.2
 */
PCPU_EXPORT void pcpu_charge_drain(struct pcpu_charge *ch);

/**
 * Sets the limit. A limit below reserved() takes the stocks back and, while
 * reserved() stays above it, keeps them closed; if the usage alone is above
 * the new limit, every try fails (try(0) too) until uncharges bring
 * usage + amount under it. Once it returns, no try takes usage above
 * @p limit. May wait for another thread's take.
 * @return 0; -EINVAL for a NULL or uninitialised @p ch, or @p limit out of
 *         0 to PCPU_CHARGE_MAX; -EDEADLK, changing nothing, in a signal
 *         handler that interrupted this thread's own take of @p ch (or its
 *         wait for one). @since 0.2
 */
PCPU_EXPORT int pcpu_charge_set_limit(struct pcpu_charge *ch, int64_t limit);

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_CHARGE_H */
