/* SPDX-License-Identifier: MIT */
/*
 * Limited adds (pcpu_counter_limited_add(), the kernel's
 * percpu_counter_limited_add()): add only if the result stays within the
 * limit, and concurrent limited adds never take the counter past it.
 *
 * Two paths.
 *
 * Far from the limit (the restartable-sequence path only), one sequence
 * on this CPU decides and adds, writing nothing shared: it reads the seq
 * word (no fold in flight, the gate open), count and the bound, checks
 * that the room between count and the limit, in the amount's direction, is
 * at least the bound, checks this CPU's slot as the plain inline add does,
 * reads the seq word again (unchanged: nothing it read was half folded, and
 * no threshold was being raised past the bound), and adds. Why that never
 * overshoots: with no fold half done, exact = count + every CPU's pending
 * delta, and every pending delta stays within the bound's threshold, after
 * this add too ([pending-bound], path 1); so exact stays on the limit's side of
 * count + bound. Another far-path add on another CPU is covered by the same
 * argument; a fold that lands after the second read moves pending that was
 * checked with this add into count and changes nothing exact; a plain add
 * is not limited. The second read must come after the slot's: a fold of
 * this CPU between them would otherwise hand the check an emptied slot
 * beside the count from before the fold.
 *
 * Otherwise (nearer the limit, or an amount above the threshold) the
 * precise path decides and commits to the central value. Precise adds
 * serialise on a lock hashed by counter address (folds, adds and reads
 * never take it): two of them deciding at once could each see the other's
 * room. One that can decide from count and the bound (room for the bound
 * plus its amount, with no fold in flight) needs nothing more: far-path
 * adds keep exact within count + bound, its own amount included. One that
 * must decide from sum() shuts the far path out with the gate: set the
 * gate bit, then pcpu_cpu_fence() (every far-path sequence in flight
 * commits before it, or aborts and then sees the gate), else a far-path
 * add could land after the sum read its CPU. The gate stays shut after
 * such a decision, so that a run of them pays for one fence; a precise add
 * that finds the counter far from the limit again opens it.
 *
 * On the atomic path (and where the kernel has no rseq fence) every limited
 * add takes the precise path.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>

#include <percpu/counter.h>

#include "base/atomics.h"
#include "counter_internal.h"
#include "base/cpu_internal.h"
#include "base/fold.h"
#include "base/policy.h"

/*
 * 128-bit two's complement arithmetic, enough for value + amount +- slack
 * without overflow, on targets without __int128 too (hi stays within +-2).
 */
struct wide {
	int64_t hi;
	uint64_t lo;
};

static struct wide wide_of(int64_t v)
{
	return (struct wide){ v < 0 ? -1 : 0, (uint64_t)v };
}

static struct wide wide_add(struct wide a, struct wide b)
{
	uint64_t lo = a.lo + b.lo;

	return (struct wide){ a.hi + b.hi + (lo < a.lo), lo };
}

static struct wide wide_sub(struct wide a, struct wide b)
{
	return (struct wide){ a.hi - b.hi - (a.lo < b.lo), a.lo - b.lo };
}

/* -1, 0 or 1 as @a compares with @b */
static int wide_cmp(struct wide a, struct wide b)
{
	if (a.hi != b.hi)
		return a.hi < b.hi ? -1 : 1;
	return (a.lo > b.lo) - (a.lo < b.lo);
}

/*
 * Would @value + @amount pass @limit? @slack is how far @value may be from
 * exact: returns 1 (certainly passes), -1 (certainly not) or 0 (unsure).
 */
static int passes_limit(int64_t value, uint64_t slack, int64_t limit, int64_t amount)
{
	struct wide sum = wide_add(wide_of(value), wide_of(amount)), s = { 0, slack };
	int lo = wide_cmp(wide_sub(sum, s), wide_of(limit));
	int hi = wide_cmp(wide_add(sum, s), wide_of(limit));

	if (amount > 0)
		return lo > 0 ? 1 : hi <= 0 ? -1 : 0;
	return hi < 0 ? 1 : lo >= 0 ? -1 : 0;
}

/* ---- the far path ------------------------------------------------------- */

enum far_result {
	FAR_ADDED,
	FAR_BUSY,    /* a fold in flight, or the gate shut */
	FAR_NO_ROOM, /* count + bound is not within the limit */
	FAR_FULL,    /* this CPU's pending delta would pass the threshold */
};

#if PCPU_ARCH_HAVE_RSEQ_ADD

/* The sequence (arch/x86_64.h, arch/aarch64.h), over the counter's fields. */
#define FAR_ASM(ROOM)                                                                      \
	PCPU_ARCH_RSEQ_GATED_ADD(ROOM, c, offsetof(struct pcpu_counter, central),         \
				 offsetof(struct pcpu_counter, armed),                     \
				 offsetof(struct pcpu_counter, threshold_max),             \
				 offsetof(struct pcpu_counter, seq), COUNTER_SEQ_GEN - 1, \
				 &c->slots->value, limit, amount, threshold, offset, room, seq, \
				 bound, abort, unregistered, busy, no_room, full)

/* The far path, for |amount| <= threshold, the counter's threshold. */
static enum far_result far_add(struct pcpu_counter *c, int64_t limit, int64_t amount,
			       uint64_t threshold)
{
	long offset;
	int64_t room;
	uint32_t seq;
	uint64_t bound;

retry:
	if (amount > 0)
		FAR_ASM(PCPU_ARCH_GATED_ROOM_UP);
	else
		FAR_ASM(PCPU_ARCH_GATED_ROOM_DOWN);
	return FAR_ADDED;
abort:
	goto retry;
unregistered:
busy:
	return FAR_BUSY;
no_room:
	return FAR_NO_ROOM;
full:
	return FAR_FULL;
}

#else

static enum far_result far_add(struct pcpu_counter *c, int64_t limit, int64_t amount,
			       uint64_t threshold)
{
	(void)c, (void)limit, (void)amount, (void)threshold;
	return FAR_BUSY;
}

#endif

/* ---- the precise path --------------------------------------------------- */

/* Does this counter have a far path (which the gate must then shut out)? */
static bool has_far_path(const struct pcpu_counter *c)
{
	return PCPU_ARCH_HAVE_RSEQ_ADD && c->mode == PCPU_CPU_RSEQ && pcpu_cpu_fence_setup() == 0;
}

/*
 * passes_limit() of read() with the bound as slack, or 0 (unsure) if a fold
 * or a threshold raise was in flight: count may then be short of what a
 * fold already took from a slot (which may have taken new adds since), or
 * adds may already hold more than the bound says.
 */
static int verdict_from_count(const struct pcpu_counter *c, int64_t limit, int64_t amount)
{
	uint32_t before = __atomic_load_n(&c->seq, __ATOMIC_SEQ_CST);
	int64_t central = __atomic_load_n(&c->central, __ATOMIC_SEQ_CST);
	int verdict = passes_limit(central, __pcpu_counter_bound(c), limit, amount);
	uint32_t after = __atomic_load_n(&c->seq, __ATOMIC_SEQ_CST);

	/* the gate moves only under the limit lock, which the callers hold */
	return pcpu_fold_seq_stable(before, after, COUNTER_SEQ_FOLDS, COUNTER_SEQ_GEN_SHIFT) ?
		       verdict : 0;
}

static bool precise_add(struct pcpu_counter *c, int64_t limit, int64_t amount)
{
	pthread_mutex_t *lock = pcpu_counter_limit_lock(c);
	bool far = has_far_path(c);
	int verdict;

	pthread_mutex_lock(lock);
	/*
	 * Certain from count and the bound: as safe beside far-path adds as
	 * they are beside each other (each keeps exact within count + bound,
	 * and this one checked count + bound + amount), so no gate.
	 */
	verdict = verdict_from_count(c, limit, amount);
	if (verdict == 0) {
		/* from sum(): no far-path add may land unseen meanwhile */
		if (far && !(LOAD(&c->seq) & COUNTER_SEQ_GATE)) {
			__atomic_fetch_or(&c->seq, COUNTER_SEQ_GATE, __ATOMIC_SEQ_CST);
			pcpu_cpu_fence();
		}
		verdict = passes_limit(pcpu_counter_sum(c), 0, limit, amount);
	}
	if (verdict < 0)
		pcpu_counter_add_central(c, amount);
	/* far again, with room for the bound twice over: let the far path back in */
	if (far && (LOAD(&c->seq) & COUNTER_SEQ_GATE) &&
	    passes_limit(pcpu_counter_read(c), pcpu_policy_bound(__pcpu_counter_bound(c), 2), limit,
			 amount) < 0 &&
	    verdict_from_count(c, limit, amount) < 0)
		__atomic_fetch_and(&c->seq, ~COUNTER_SEQ_GATE, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(lock);
	return verdict < 0;
}

/* ---- the call ----------------------------------------------------------- */

/* How often the far path waits for a fold in flight before deciding precisely. */
#define FAR_TRIES 4

PCPU_EXPORT bool pcpu_counter_limited_add(struct pcpu_counter *c, int64_t limit, int64_t amount)
{
	uint64_t threshold;

	if (!pcpu_counter_usable(c, __func__))
		return false;
	if (amount == 0)
		return true;
	threshold = (uint64_t)LOAD(&c->threshold);
	if (__pcpu_within(amount, threshold) && has_far_path(c)) {
		unsigned int spins = 0;

		for (int tries = 0; tries < FAR_TRIES; tries++) {
			switch (far_add(c, limit, amount, threshold)) {
			case FAR_ADDED:
				return true;
			case FAR_FULL:
				/* make room on this CPU; a fold changes nothing exact */
				pcpu_counter_fold_cpu(c, pcpu_cpu_current());
				continue;
			case FAR_BUSY:
				if (LOAD(&c->seq) & COUNTER_SEQ_GATE)
					break;
				pcpu_relax(&spins); /* a fold in flight: about a hundred ns */
				continue;
			case FAR_NO_ROOM:
				break;
			}
			break;
		}
	}
	return precise_add(c, limit, amount);
}
