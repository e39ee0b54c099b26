/* SPDX-License-Identifier: MIT */
/*
 * The fold engine: what counters (counter.c), stat sets (stat_fold.c,
 * stat_read.c) and shared segments (shared_fold.c, shared_read.c) share
 * beyond the arithmetic of lib/policy.h. Each unit is a layout over it; the
 * rules and their proofs are here, once.
 *
 * Glossary (one word per concept; the code uses these):
 *   slot       one item's {value, mark} on one CPU. A layout decides its
 *              form: a 16-byte pair of int64_t (counters, shared segments)
 *              or a 64-bit word of two uint32_t halves (stat sets, value
 *              low, mark high). A slot index is a slot's place in a row.
 *   row        one CPU's slots of every item of a unit (a shared segment
 *              also has a row for threads without a CPU number).
 *   word       a stat set's slot (the 32-bit layout); nothing else.
 *   value      every add a CPU's fast path made to the slot, ever (modulo
 *              the layout's width). Only that CPU's fast path writes it.
 *   mark       how much of value the central value holds already. The
 *              counter's public field calls it `folded` (an ABI name).
 *              (A charge's pair {charged, mark} is not a fold slot: its
 *              mark is the top of a stock, see charge.c; it shares only
 *              the pair swap of lib/pair.h.)
 *   pending    value - mark: what a CPU holds that the central value does
 *              not. |pending| <= the largest threshold ever published.
 *   central    the unit's value that every read() loads: the sum of the
 *              marks, plus what slow paths added to it directly (a counter
 *              also adds those to base, so that exact = base + values).
 *   fold       moving a slot's whole pending delta into central: swap the
 *              slot to {value, value} (the mark advances), then add what
 *              moved to central. pcpu_fold_take_pair/_word() is the swap.
 *   threshold  the per-CPU limit the fast path checks, published by the
 *              unit for its central value (lib/policy.h); the adds read it.
 *   floor      the smallest threshold an item may have.
 *   maximum    the largest threshold ever published (thresh_max).
 *   bound      possible CPUs * maximum, saturated (pcpu_policy_bound()):
 *              |read() - exact| <= bound. The counter caches it in a field.
 *   publish    make a threshold the one in force: pcpu_fold_publish().
 *   sequence   a unit's fold sequence word (seq): folds in progress in the
 *              low bits, a generation (folds completed) above. A fold
 *              enters, changes a slot and central, and leaves (a counter
 *              also enters to publish a larger threshold). A reader
 *              that saw no fold in progress and the same generation before
 *              and after its loads saw every fold whole or not at all.
 *   gate       (counters) a bit of the sequence that keeps a limited add's
 *              far path out while a precise decision is under way.
 *   freeze     (stat sets) a reader's count in the sequence that keeps new
 *              folds out, so that a reader that failed optimistically
 *              cannot starve; thaw undoes it.
 *   sync       sync_if_delta_above(delta): see pcpu_fold_within().
 *
 * The readers, and why they differ (the memory differs):
 * - 64-bit values (counters, shared segments) hold every add ever, modulo
 *   2^64 as exact is, so exact = base + sum of values, which no fold
 *   touches: sum() is one walk with no protocol, wait-free; read() is one
 *   load of central.
 * - 32-bit words (stat sets: eight slots to a cache line) wrap, so exact
 *   can only be central + sum of pending, which a fold changes in two
 *   steps (the word, then central): sum() and snapshot() validate their
 *   walk against the line's sequence, and freeze the line after a few
 *   failed tries. read() is still one load of central.
 * - A counter's limited add decides from central, the bound and its slot
 *   without a lock, so it too validates against the counter's sequence
 *   (in a restartable sequence, counter_limited.c).
 * - Shared segments fold under a process-shared robust mutex instead of a
 *   sequence: a process may die in a fold, and the next locker repairs
 *   central from the marks (shared_fold.c). Their readers need no more.
 */
#ifndef PCPU_LIB_FOLD_H
#define PCPU_LIB_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atomics.h"
#include "cpu_internal.h"
#include "pair.h"
#include "policy.h"

/*
 * The fold step, one engine over two layouts. A layout supplies a
 * snapshot of a slot, the pending delta of a snapshot, the swap that sets
 * the mark to the snapshot's value, failing (and refreshing the snapshot)
 * if the slot changed, and whether a swap that succeeded left the fold
 * whole. The swap covers both halves: a folder that read the slot before
 * an add landed fails and retries, so at most one add (already past its
 * check) lands between a fold's read and its swap; that is why |pending|
 * stays within the largest threshold ever published (lib/policy.h has the
 * arithmetic).
 */

/* The 64-bit layout: a pair {value, mark} of int64_t (lib/pair.h). */
static inline void pcpu_pair_snap(const int64_t *slot, int64_t *snap)
{
	pcpu_pair_load(slot, snap);
}

static inline int64_t pcpu_pair_pending(const int64_t *snap)
{
	return (int64_t)((uint64_t)snap[0] - (uint64_t)snap[1]);
}

static inline bool pcpu_pair_swap(int64_t *slot, int64_t *snap)
{
	return pcpu_pair_cas(slot, snap, snap[0], snap[0]);
}

/*
 * After a swap that marked snap[0]: is the fold whole? Where the swap is
 * lock-free it compared the value in the same step as it stored the mark,
 * so it is. Under a lock (lib/pair_lock.c) it compares, then stores the
 * mark, and an owner's add (lib/slot_owner.c), which takes no lock, may
 * land in between, checked against the mark before: then @snap becomes
 * {the value now, the mark stored} and the fold goes on. The owner adds,
 * then loads the mark; the fold stores the mark, then loads the value
 * (all sequentially consistent): the fold sees the add, or the add's check
 * sees the new mark.
 */
static inline bool pcpu_pair_settled(const int64_t *slot, int64_t *snap)
{
#if PCPU_PAIR_LOCK_FREE
	(void)slot, (void)snap;
	return true;
#else
	int64_t marked = snap[0], now = __atomic_load_n(&slot[0], __ATOMIC_SEQ_CST);

	if (now == marked)
		return true;
	snap[0] = now;
	snap[1] = marked;
	return false;
#endif
}

/* The 32-bit layout: one uint64_t, value in the low half, mark in the high half. */
static inline void pcpu_word_snap(const uint64_t *slot, uint64_t *snap)
{
	*snap = LOAD(slot);
}

static inline int64_t pcpu_word_pending(const uint64_t *snap)
{
	return (int32_t)((uint32_t)*snap - (uint32_t)(*snap >> 32));
}

static inline bool pcpu_word_swap(uint64_t *slot, uint64_t *snap)
{
	uint32_t value = (uint32_t)*snap;

	/* the low half is left as found: a fold never writes a value */
	return __atomic_compare_exchange_n(slot, snap, (uint64_t)value << 32 | value, true,
					   __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

/* A word's swap is one compare-and-swap: always whole. */
static inline bool pcpu_word_settled(const uint64_t *slot, uint64_t *snap)
{
	(void)slot, (void)snap;
	return true;
}

/*
 * pcpu_fold_take_pair(slot, snap), pcpu_fold_take_word(slot, snap): from
 * the snapshot @snap of @slot, marks the slot's whole pending delta folded
 * and returns it (0: nothing was pending). The caller adds it to central.
 */
#define PCPU_FOLD_DEFINE_TAKE(layout, slot_t)                                                      \
	static inline int64_t pcpu_fold_take_##layout(slot_t *slot, slot_t *snap)                  \
	{                                                                                          \
		uint64_t moved = 0;                                                                \
                                                                                                   \
		for (;;) {                                                                         \
			int64_t pending = pcpu_##layout##_pending(snap);                           \
                                                                                                   \
			if (pending == 0)                                                          \
				break;                                                             \
			if (!pcpu_##layout##_swap(slot, snap))                                     \
				continue;                                                          \
			moved += (uint64_t)pending;                                                \
			if (pcpu_##layout##_settled(slot, snap))                                   \
				break;                                                             \
		}                                                                                  \
		return (int64_t)moved;                                                             \
	}

PCPU_FOLD_DEFINE_TAKE(pair, int64_t)
PCPU_FOLD_DEFINE_TAKE(word, uint64_t)

/*
 * The fold's second step: adds what pcpu_fold_take_*() moved to *@central
 * and returns the new central value. An atomic add: other folds, and the
 * slow paths' adds, change central at the same time (a shared segment's
 * under its lock, where the add costs nothing more), and every change of
 * central commutes with a fold still in flight.
 */
static inline int64_t pcpu_fold_credit(int64_t *central, int64_t moved)
{
	return __atomic_add_fetch(central, moved, __ATOMIC_SEQ_CST);
}

/*
 * Sums over the 64-bit layout: half @half (0: value, 1: mark) of one
 * item's slots in @rows rows, from row 0's @slot, a stride (PCPU_STRIDE)
 * apart, wrapping as the int64_t halves do.
 */
static inline uint64_t pcpu_fold_sum_half(const int64_t *slot, unsigned int rows, unsigned int half)
{
	uint64_t sum = 0;

	for (unsigned int row = 0; row < rows; row++)
		sum += (uint64_t)LOAD_ACQ((const int64_t *)cpu_copy((void *)slot, row) + half);
	return sum;
}

/*
 * The exact sum (with a counter's base): the values. No fold writes a
 * value, so the walk needs no protocol: wait-free.
 */
static inline uint64_t pcpu_fold_sum_values(const int64_t *slot, unsigned int rows)
{
	return pcpu_fold_sum_half(slot, rows, 0);
}

/*
 * What central holds once no fold is half done (with a counter's base):
 * the marks. A unit rebuilds central from it where a fold may have stopped
 * between its two steps: a counter in a forked child, a shared segment
 * after a process died holding its lock.
 */
static inline uint64_t pcpu_fold_sum_marks(const int64_t *slot, unsigned int rows)
{
	return pcpu_fold_sum_half(slot, rows, 1);
}

/*
 * The fold sequence, over either width (a counter's uint32_t, a stat
 * line's uint64_t): @one is one fold in progress (the lowest bit of the
 * field), @gen one generation (the lowest bit above every field). A fold
 * enters before it changes its first slot and leaves after it changes
 * central; leaving bumps the generation in the same add.
 */
#define pcpu_fold_seq_enter(seq, one) ((void)__atomic_add_fetch((seq), (one), __ATOMIC_SEQ_CST))
#define pcpu_fold_seq_leave(seq, one, gen)                                                         \
	((void)__atomic_add_fetch((seq), (gen) - (one), __ATOMIC_SEQ_CST))

/*
 * In a forked child, where only the forking thread lives: no fold is in
 * progress, nor anything else the fields below the generation count (a
 * counter's gate, a stat line's freezers). The generation stays.
 */
#define pcpu_fold_seq_fork_child(seq, gen) STORE((seq), LOAD(seq) & ~((gen) - 1))

/*
 * Did a reader's loads between the sequence values @before and @after see
 * every fold whole or not at all? No fold in progress (@folds: the field's
 * mask) at either end, and the same generation (above @gen_shift bits).
 */
static inline bool pcpu_fold_seq_stable(uint64_t before, uint64_t after, uint64_t folds,
					unsigned int gen_shift)
{
	return ((before | after) & folds) == 0 && before >> gen_shift == after >> gen_shift;
}

/*
 * Publication. Raises the maximum *@max to @t, and first, if the unit
 * caches its bound at *@bound (not NULL), that bound to cover @t on @cpus
 * CPUs. Each is an atomic maximum; the bound first, as a reader may take
 * the maximum as licence for a batch (the counter's inline add_batch()).
 */
static inline void pcpu_fold_raise(uint64_t *max, uint64_t *bound, unsigned int cpus, uint64_t t)
{
	if (bound)
		pcpu_policy_raise(bound, pcpu_policy_bound(t, cpus));
	pcpu_policy_raise(max, t);
}

/*
 * Makes @t the threshold in force: stores it at @thresh (a uint32_t or a
 * 64-bit word, @width bytes, where the adds read it), in the one order of
 * publication, for every unit: raise the maximum (and bound) over @t,
 * store @t, raise again.
 *
 * Why. error_bound() must cover every threshold an add may check against.
 * - Raise before the store: a reader never finds a threshold its bound
 *   does not cover, and a writer that stops (or dies: a shared segment's
 *   process) between the two leaves a loose bound, never a lying one.
 * - Raise again after the store: a counter's set() lowers its bound and
 *   maximum, then publishes its own threshold. A fold publishing beside it
 *   may raise before set() lowers and store after; its second raise comes
 *   after its store, hence after set()'s lowering, and covers it. (If the
 *   fold stored first, set()'s store replaces its threshold.) Where no
 *   set() runs, the second raise is one relaxed load.
 * Nothing else ever lowers a maximum, so at quiescence
 *   bound >= CPUs * every threshold any add checked against.
 */
static inline void pcpu_fold_publish(void *thresh, size_t width, uint64_t *max, uint64_t *bound,
				     unsigned int cpus, uint64_t t)
{
	pcpu_fold_raise(max, bound, cpus, t);
	if (width == sizeof(uint32_t)) {
		uint32_t *t32 = thresh;

		if (LOAD(t32) != (uint32_t)t)
			__atomic_store_n(t32, (uint32_t)t, __ATOMIC_RELEASE);
	} else {
		uint64_t *t64 = thresh;

		if (LOAD(t64) != t)
			__atomic_store_n(t64, t, __ATOMIC_RELEASE);
	}
	pcpu_fold_raise(max, bound, cpus, t);
}

/*
 * The sync decision, for every unit's sync_if_delta_above(delta): a
 * quantity that bounds how far an approximate read may be from exact
 * (the bound, or a walk's sum of pending magnitudes) lets the read stand
 * when it is within @delta. Otherwise the unit folds what the read depends
 * on and returns the exact sum, not a new read: another thread's fold may
 * have swapped a slot and not yet reached central.
 */
static inline bool pcpu_fold_within(uint64_t error, uint64_t delta)
{
	return error <= delta;
}

#endif /* PCPU_LIB_FOLD_H */
