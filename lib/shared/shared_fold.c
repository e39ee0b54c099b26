/* SPDX-License-Identifier: MIT */
/*
 * Folds of a shared segment (see <percpu/shared.h>), and the slow path of
 * the add.
 *
 * A segment is the fold engine's process-shared layout (lib/fold.h has the
 * glossary): per row, one 64-bit slot {value, mark} per item.
 *
 * Invariants, per item, over every row r (the CPUs and the row without one):
 *   exact   = sum of value[r]        (only adds change a value)
 *   central = sum of mark[r]         (at every unlock of the segment's lock)
 * A fold of row r swaps {v, m} to {v, v} with a 16-byte compare-and-swap
 * (so a fold that read the pair before an add landed fails and retries, as
 * the counter's does: lib/policy.h) and then adds v - m to central. Marks,
 * centrals, thresholds and their maxima are written only under the lock,
 * a process-shared robust mutex; values are never written by a fold.
 *
 * Death. A process may die anywhere. Everything a death can leave stale
 * happens under the lock: the slow path takes it before its unchecked add
 * (a pending delta past the threshold), a fold swaps and then updates the
 * central value (half done between), a threshold is published in two
 * stores. The robust mutex hands the next locker, whatever it came to do,
 * EOWNERDEAD; as no other fold can run, it rebuilds every central value
 * from the marks (the invariant above), folds every row of every item (the
 * dead writer's pending delta), republishes the thresholds, and marks the
 * mutex consistent. So a death is repaired by the next fold of any writer,
 * as the header says. An add that completed is a committed instruction in
 * a value: nothing a fold or a death does can take it back, so sum() stays
 * exact.
 *
 * Order of publication: the engine's (pcpu_fold_publish()), raise the
 * maximum, store the threshold, raise again. A process killed between the
 * stores leaves the maximum raised and the threshold old (a loose bound),
 * never a threshold over the maximum. (Here nothing lowers a maximum and
 * every publication runs under the lock: the second raise finds it done.)
 */
#define _GNU_SOURCE /* pthread_mutex_consistent, robust mutexes */
#include <errno.h>
#include <pthread.h>

#include "base/atomics.h"
#include "base/cpu_internal.h"
#include "base/fold.h"
#include "base/misuse.h"
#include "base/policy.h"
#include "base/rseq_area.h"
#include "shared_internal.h"

void (*pcpu_shared_fold_hook)(void);

uint64_t pcpu_shared_threshold(const struct shared_handle *h, const struct shared_item *it,
			       int64_t central)
{
	return pcpu_policy_threshold(central, (uint64_t)it->accuracy * (h->rows - 1),
				     (uint64_t)it->floor, PCPU_SHARED_MAX_THRESH);
}

/* Under the lock: publishes the item's threshold for its central value. */
static void publish_threshold(struct shared_handle *h, unsigned int item, int64_t central)
{
	uint64_t t = pcpu_shared_threshold(h, &h->items[item], central);

	pcpu_fold_publish(&h->thresh[item], sizeof(h->thresh[item]), &h->central[item].thresh_max,
			  NULL, 0, t);
}

/* Under the lock: folds the slot of @item in @row; true if it moved any. */
static bool fold_row(struct shared_handle *h, unsigned int item, unsigned int row)
{
	int64_t *slot = shared_pair(h, item, row), snap[2], moved;
	int64_t *central = &h->central[item].value;

	pcpu_pair_snap(slot, snap);
	moved = pcpu_fold_take_pair(slot, snap);
	if (moved == 0)
		return false;
	if (pcpu_unlikely(pcpu_shared_fold_hook != NULL))
		pcpu_shared_fold_hook();
	pcpu_fold_credit(central, moved);
	return true;
}

/*
 * Under the lock, after a holder died: central = sum of marks (a fold half
 * done), then every row folded (an unchecked add not folded), for every item.
 */
static void recover(struct shared_handle *h)
{
	for (unsigned int item = 0; item < h->nr_items; item++) {
		uint64_t central = pcpu_fold_sum_marks(shared_pair(h, item, 0), h->rows);

		__atomic_store_n(&h->central[item].value, (int64_t)central, __ATOMIC_SEQ_CST);
		for (unsigned int row = 0; row < h->rows; row++)
			fold_row(h, item, row);
		publish_threshold(h, item, LOAD(&h->central[item].value));
	}
}

/* Takes the segment's lock; false if it cannot be had (the fold is skipped). */
static bool lock(struct shared_handle *h)
{
	int err = pthread_mutex_lock(&h->hdr->lock);

	if (err == EOWNERDEAD) {
		recover(h);
		pthread_mutex_consistent(&h->hdr->lock);
		return true;
	}
	return err == 0;
}

static void unlock(struct shared_handle *h)
{
	pthread_mutex_unlock(&h->hdr->lock);
}

/* Under the lock: every row of @item. */
static void fold_item(struct shared_handle *h, unsigned int item)
{
	bool moved = false;

	for (unsigned int row = 0; row < h->rows; row++)
		moved |= fold_row(h, item, row);
	if (moved)
		publish_threshold(h, item, LOAD(&h->central[item].value));
}

/*
 * Adds @amount to this CPU's value of @item without a check; returns the
 * row it landed on. A thread without a CPU number (no rseq area, or
 * sched_getcpu() failing) adds atomically to the last row, which no rseq
 * add ever writes.
 */
static unsigned int add_unchecked(struct shared_handle *h, unsigned int item, int64_t amount)
{
	int cpu;

	if (h->pub.mode == PCPU_CPU_RSEQ) {
		long offset = pcpu_arch_rseq_add(shared_pair(h, item, 0), amount);

		if (offset >= 0)
			return (unsigned int)(offset >> PCPU_STRIDE_SHIFT);
		/* no area yet (lib/rseq_area.c): this add goes to the last row */
		pcpu_rseq_area_register();
		cpu = -1;
	} else {
		cpu = pcpu_cpu_current();
	}
	if (cpu < 0)
		cpu = (int)h->rows - 1;
	__atomic_add_fetch(shared_pair(h, item, (unsigned int)cpu), amount, __ATOMIC_SEQ_CST);
	return (unsigned int)cpu;
}

/*
 * The fast path refused: the amount is over the threshold, this CPU's
 * pending delta would pass it, or the thread has no CPU number. Under the
 * lock, the amount goes to this CPU's value, then that pair is folded.
 * Between the two the pending delta may pass the threshold: taking the lock
 * first makes a death there one the next locker repairs (see the top). The
 * cost: an add that waits for the lock is not in sum() until it has it.
 */
PCPU_EXPORT void __pcpu_shared_add_slow(struct pcpu_shared *s, unsigned int item, int64_t amount)
{
	struct shared_handle *h = shared_handle(s);

	if (!shared_usable(s, item, "pcpu_shared_add"))
		return;
	if (!h->writable) {
		pcpu_misuse("pcpu_shared_add", "segment opened read-only");
		return;
	}
	pcpu_shared_add_locked(h, item, amount);
}

/* The above past its checks, for any slot (a histogram's buckets too). */
void pcpu_shared_add_locked(struct shared_handle *h, unsigned int item, int64_t amount)
{
	unsigned int row;

	if (!lock(h)) {
		add_unchecked(h, item, amount); /* the next fold moves it */
		return;
	}
	row = add_unchecked(h, item, amount);
	if (fold_row(h, item, row))
		publish_threshold(h, item, LOAD(&h->central[item].value));
	unlock(h);
}

PCPU_EXPORT int64_t pcpu_shared_sync_if_delta_above(struct pcpu_shared *s, unsigned int item,
						    uint64_t delta)
{
	struct shared_handle *h = shared_handle(s);
	int err;

	if (!shared_usable(s, item, "pcpu_shared_sync_if_delta_above"))
		return 0;
	if (pcpu_fold_within(pcpu_shared_error_bound(s, item), delta))
		return pcpu_shared_read(s, item);
	/* the fold loads every row too: not on a segment cut short */
	err = pcpu_shared_intact(h);
	if (err) {
		errno = -err;
		return 0;
	}
	if (h->writable && lock(h)) {
		fold_item(h, item);
		unlock(h);
	}
	return pcpu_shared_sum(s, item);
}

PCPU_EXPORT void pcpu_shared_fold_all(struct pcpu_shared *s)
{
	struct shared_handle *h = shared_handle(s);

	if (!s) {
		pcpu_misuse("pcpu_shared_fold_all", "NULL segment");
		return;
	}
	if (!h->writable || !lock(h))
		return;
	for (unsigned int item = 0; item < h->nr_items; item++)
		fold_item(h, item);
	unlock(h);
}
