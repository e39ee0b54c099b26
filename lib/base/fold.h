/* SPDX-License-Identifier: MIT */
/*
 * The fold engine: what counters (lib/counter/), stat sets (lib/stat/) and
 * shared segments (lib/shared/) share beyond the arithmetic of policy.h.
 * Each unit is a layout over it. The invariants and their proofs are in
 * docs/internals.md, each once, under a name cited here in brackets.
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
 *   mark       how much of value the central value holds already.
 *              (A charge's pair {charged, mark} is not a fold slot: its
 *              mark is the top of a stock, see charge.c; it shares only
 *              the pair swap of pair.h.)
 *   pending    value - mark: what a CPU holds that the central value does
 *              not. Within the maximum whenever no update on the slot is
 *              in flight; up to twice it while an add on the atomic path
 *              (add first, check after) is in flight [pending-bound].
 *   central    the unit's value that every read() loads: the sum of the
 *              marks, plus what slow paths added to it directly (a counter
 *              also adds those to base, so that exact = base + values).
 *   fold       moving a slot's whole pending delta into central: swap the
 *              slot to {value, value} (the mark advances), then add what
 *              moved to central [central-marks]: pcpu_fold_step_*().
 *   threshold  how far a CPU's pending delta may go either way (the fast
 *              path checks it), published by the unit for its central
 *              value (policy.h); the adds read it.
 *   floor      the smallest threshold an item may have.
 *   maximum    the largest threshold ever published (threshold_max).
 *   armed      a slot whose mark is stored armed, and a CPU whose slots
 *              are: a unit's armed set and count [armed].
 *   bound      armed CPUs (a segment's rows) * maximum, saturated
 *              (pcpu_policy_bound()): |read() - exact| <= bound at
 *              quiescence.
 *   publish    make a threshold the one in force: pcpu_fold_publish()
 *              [publish-order]; when: pcpu_fold_retune() [republish].
 *   sequence   a unit's fold sequence word (seq): folds in progress in the
 *              low bits, a generation (folds completed) above [seq-read].
 *              A fold enters, changes a slot and central, and leaves (a
 *              counter also enters to publish a larger threshold).
 *   gate       (counters) a bit of the sequence that keeps a limited add's
 *              far path out while a precise decision is under way.
 *   freeze     (stat sets) a reader's count in the sequence that keeps new
 *              folds out, so that a reader that failed optimistically
 *              cannot starve; thaw undoes it.
 *   sync       sync_if_delta_above(delta): pcpu_fold_sync() [sync].
 *
 * Readers differ because the memory does: sum() over 64-bit values is one
 * walk with no protocol, over 32-bit words it validates [exact-sum]; shared
 * segments fold under a robust lock instead of a sequence
 * [segment-recovery].
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
 * The fold step over two layouts. A layout supplies a snapshot of a slot,
 * the pending delta of a snapshot, the swap that sets the mark to the
 * snapshot's value, failing (and refreshing the snapshot) if the slot
 * changed, and whether a swap that succeeded left the fold whole
 * [pending-bound].
 */

/*
 * The armed layout (counters): the 64-bit pair, its mark stored plus
 * PCPU_SLOT_ARMED (<percpu/common.h>), 0 while not armed [armed]. A slot
 * not armed has a mark of 0: its value (0, or an owner's add in flight) is
 * all pending. Arming stores the mark 0 as PCPU_SLOT_ARMED, which moves
 * nothing; a fold of a slot not armed arms it too. A fold never stores 0
 * for an armed slot: where the value is -PCPU_SLOT_ARMED it marks one less,
 * and 1 stays pending, within every threshold but 0 (and a slot under a
 * threshold of 0 has a value that never moves from 0).
 */
static inline bool pcpu_armed_armed(const int64_t *snap)
{
	return snap[1] != 0;
}

/* Arms @slot (snapshot @snap): its mark, 0, stored armed; nothing moves. */
static inline void pcpu_armed_arm(int64_t *slot, int64_t *snap)
{
	while (!pcpu_armed_armed(snap) &&
	       !pcpu_pair_cas(slot, snap, snap[0], (int64_t)PCPU_SLOT_ARMED))
		;
}

/*
 * How a mark of @mark is stored: plus PCPU_SLOT_ARMED, and never 0 (not
 * armed): a mark of -PCPU_SLOT_ARMED is stored as one less.
 */
static inline int64_t pcpu_armed_stored(int64_t mark)
{
	uint64_t stored = (uint64_t)mark + PCPU_SLOT_ARMED;

	return stored ? (int64_t)stored : -1;
}

static inline int64_t pcpu_armed_mark(int64_t stored)
{
	return stored ? (int64_t)((uint64_t)stored - PCPU_SLOT_ARMED) : 0;
}

static inline void pcpu_armed_snap(const int64_t *slot, int64_t *snap)
{
	pcpu_pair_load(slot, snap);
}

static inline int64_t pcpu_armed_pending(const int64_t *snap)
{
	return (int64_t)((uint64_t)snap[0] - (uint64_t)pcpu_armed_mark(snap[1]));
}

static inline bool pcpu_armed_swap(int64_t *slot, int64_t *snap)
{
	return pcpu_pair_cas(slot, snap, snap[0], pcpu_armed_stored(snap[0]));
}

/*
 * After a swap that marked snap[0]: is the fold whole? Always where the
 * swap is lock-free. Under a lock (pair_lock.c) an owner's add may land
 * between the compare and the store of the mark [pending-bound], path 4:
 * then @snap becomes {the value now, the mark stored} and the fold goes on.
 */
static inline bool pcpu_armed_settled(const int64_t *slot, int64_t *snap)
{
#if PCPU_PAIR_LOCK_FREE
	(void)slot, (void)snap;
	return true;
#else
	int64_t marked = snap[0], now = __atomic_load_n(&slot[0], __ATOMIC_SEQ_CST);

	if (now == marked)
		return true;
	snap[0] = now;
	snap[1] = pcpu_armed_stored(marked);
	return false;
#endif
}

/*
 * The 32-bit layout (stat sets): one uint64_t, value in the low half, the
 * mark plus PCPU_WORD_ARMED in the high half, 0 while not armed: the armed
 * layout's rules, modulo 2^32 [armed]. A value wraps every 2^32 adds, so a
 * fold meets a value of -PCPU_WORD_ARMED as a matter of course: it marks
 * one less, and 1 stays pending.
 */
static inline uint32_t pcpu_word_mark(uint64_t word)
{
	uint32_t stored = (uint32_t)(word >> 32);

	return stored ? stored - PCPU_WORD_ARMED : 0;
}

static inline bool pcpu_word_armed(const uint64_t *snap)
{
	return *snap >> 32 != 0;
}

static inline void pcpu_word_snap(const uint64_t *slot, uint64_t *snap)
{
	*snap = LOAD(slot);
}

static inline int64_t pcpu_word_pending(const uint64_t *snap)
{
	return (int32_t)((uint32_t)*snap - pcpu_word_mark(*snap));
}

static inline bool pcpu_word_swap(uint64_t *slot, uint64_t *snap)
{
	uint32_t value = (uint32_t)*snap, stored = value + PCPU_WORD_ARMED;

	/* the low half is left as found: a fold never writes a value */
	return __atomic_compare_exchange_n(slot, snap,
					   (uint64_t)(stored ? stored : UINT32_MAX) << 32 | value,
					   true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

/* Arms @slot (snapshot @snap): its mark, 0, stored armed; nothing moves. */
static inline void pcpu_word_arm(uint64_t *slot, uint64_t *snap)
{
	while (!pcpu_word_armed(snap) &&
	       !__atomic_compare_exchange_n(slot, snap,
					    (uint64_t)PCPU_WORD_ARMED << 32 | (uint32_t)*snap, true,
					    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
}

/* A word's swap is one compare-and-swap: always whole. */
static inline bool pcpu_word_settled(const uint64_t *slot, uint64_t *snap)
{
	(void)slot, (void)snap;
	return true;
}

/*
 * pcpu_fold_take_armed(slot, snap), pcpu_fold_take_word(slot, snap): from the snapshot @snap of @slot, marks
 * the slot's whole pending delta folded and returns it (0: nothing was
 * pending). The caller adds it to central.
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

PCPU_FOLD_DEFINE_TAKE(armed, int64_t)
PCPU_FOLD_DEFINE_TAKE(word, uint64_t)

/*
 * The fold's second step: adds @moved to *@central and returns the new
 * central value. An atomic add: other folds and the slow paths change
 * central at the same time [central-marks].
 */
static inline int64_t pcpu_fold_credit(int64_t *central, int64_t moved)
{
	return __atomic_add_fetch(central, moved, __ATOMIC_SEQ_CST);
}

/*
 * pcpu_fold_step_armed(slot, snap, central, extra, between),
 * pcpu_fold_step_word(...): the fold step, one for every unit. From the
 * snapshot @snap of @slot, takes its whole pending delta, calls @between
 * if any moved (a test hook; NULL: none), and credits what moved plus
 * @extra (a slow path's amount; 0: none) to *@central, wrapping as an
 * int64_t. Returns what it credited: 0 left central as it was. The caller
 * then republishes (pcpu_fold_retune()), outside any section of its own.
 */
#define PCPU_FOLD_DEFINE_STEP(layout, slot_t)                                                      \
	static inline int64_t pcpu_fold_step_##layout(slot_t *slot, slot_t *snap, int64_t *central, \
						      int64_t extra, void (*between)(void))        \
	{                                                                                          \
		uint64_t moved = (uint64_t)pcpu_fold_take_##layout(slot, snap);                    \
                                                                                                   \
		if (moved && between)                                                              \
			between();                                                                 \
		moved += (uint64_t)extra;                                                          \
		if (moved)                                                                         \
			pcpu_fold_credit(central, (int64_t)moved);                                 \
		return (int64_t)moved;                                                             \
	}

PCPU_FOLD_DEFINE_STEP(armed, int64_t)
PCPU_FOLD_DEFINE_STEP(word, uint64_t)

/*
 * How much a walk that folds many slots (a counter's fold_all(), a stat
 * line's pcpu_stat_fold_line(), per item) may have
 * moved out of slots and not yet credited to central [central-marks]: the
 * maximum threshold @max, or an eighth of the @bound (armed CPUs x @max)
 * where that is more. Each credit is a locked add, as each swap is: a
 * walk over n armed CPUs credits each time what it owes passes the budget
 * less one CPU's delta, so, on n > 16, at most about n / (n / 8 - 1) + 1
 * times (12 on 32 CPUs, 10 on 64, 9 on 1,024), where crediting every
 * @max's worth credits up to n times; read() lags by at most the budget
 * more than at quiescence meanwhile.
 */
static inline uint64_t pcpu_fold_walk_budget(uint64_t max, uint64_t bound)
{
	return bound / 8 > max ? bound / 8 : max;
}

/*
 * In such a walk, before it takes a slot's @pending: must it first credit
 * what it owes (@owed: taken, not yet credited)? When the two together
 * would pass its @budget.
 */
static inline bool pcpu_fold_walk_due(int64_t owed, int64_t pending, uint64_t budget)
{
	return owed && pcpu_magnitude((int64_t)((uint64_t)owed + (uint64_t)pending)) > budget;
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
 * every fold whole or not at all [seq-read]? No fold in progress (@folds:
 * the field's mask) at either end, and the same generation (above
 * @gen_shift bits).
 */
static inline bool pcpu_fold_seq_stable(uint64_t before, uint64_t after, uint64_t folds,
					unsigned int gen_shift)
{
	return ((before | after) & folds) == 0 && before >> gen_shift == after >> gen_shift;
}

/*
 * Makes @t the threshold in force: stores it at @threshold (a uint32_t or a
 * 64-bit word, @width bytes, where the adds read it) between two raises of
 * the maximum *@max: the one order of publication [publish-order].
 */
static inline void pcpu_fold_publish(void *threshold, size_t width, uint64_t *max, uint64_t t)
{
	pcpu_policy_raise(max, t);
	if (width == sizeof(uint32_t)) {
		uint32_t *t32 = threshold;

		if (LOAD(t32) != (uint32_t)t)
			__atomic_store_n(t32, (uint32_t)t, __ATOMIC_RELEASE);
	} else {
		uint64_t *t64 = threshold;

		if (LOAD(t64) != t)
			__atomic_store_n(t64, t, __ATOMIC_RELEASE);
	}
	pcpu_policy_raise(max, t);
}

/*
 * The one rule for when to republish [republish]: a fold or slow path that
 * left central at @central asks whether the threshold for it,
 * pcpu_policy_threshold(@central, @divisor, @floor, @cap), stored in
 * *@want, is off the threshold in force @now by more than an eighth of
 * @now. (A fixed threshold passes @floor == @cap: never.)
 */
static inline bool pcpu_fold_retune(uint64_t now, int64_t central, uint64_t divisor,
				    uint64_t floor, uint64_t cap, uint64_t *want)
{
	uint64_t mag = pcpu_magnitude(central), lo, hi, diff;

	/* the common case, without a division: |central| / divisor within now +- now / 8 */
	if (!__builtin_mul_overflow(now - now / 8, divisor, &lo) &&
	    !__builtin_mul_overflow(now + now / 8 + 1, divisor, &hi) && mag >= lo && mag < hi)
		return false;
	*want = pcpu_policy_threshold(central, divisor, floor, cap);
	diff = *want > now ? *want - now : now - *want;
	return diff > now / 8;
}

/*
 * What a unit's sync_if_delta_above() supplies to pcpu_fold_sync(), for
 * its @unit and @item: a read-only walk that may show @read within @delta
 * (NULL: none), the fold of what read() depends on, and sum(); or, in
 * their place, one walk that folds and returns what sum() would
 * (@fold_sum; NULL: fold, then sum).
 */
struct pcpu_fold_sync {
	bool (*near)(void *unit, unsigned int item, int64_t read, uint64_t delta);
	void (*fold)(void *unit, unsigned int item);
	int64_t (*sum)(void *unit, unsigned int item);
	int64_t (*fold_sum)(void *unit, unsigned int item);
};

/*
 * sync_if_delta_above(@delta), one flow for every unit [sync]: @read and
 * @bound are the unit's read() and error_bound() of @item.
 */
static inline int64_t pcpu_fold_sync(const struct pcpu_fold_sync *ops, void *unit,
				     unsigned int item, uint64_t delta, int64_t read, uint64_t bound)
{
	if (bound <= delta || (ops->near && ops->near(unit, item, read, delta)))
		return read;
	if (ops->fold_sum)
		return ops->fold_sum(unit, item);
	ops->fold(unit, item);
	/* exact, even if another thread's fold has yet to reach central */
	return ops->sum(unit, item);
}

#endif /* PCPU_LIB_FOLD_H */
