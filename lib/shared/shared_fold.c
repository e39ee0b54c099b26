/* SPDX-License-Identifier: MIT */
/*
 * Folds of a shared segment (see <percpu/shared.h>), and the slow path of
 * the add.
 *
 * A segment is the fold engine's armed layout, process-shared
 * (lib/base/fold.h has the glossary): per row, one 64-bit slot {value,
 * mark} per item, the mark stored armed. Walks visit the armed rows
 * [armed-segment]: exact = sum of their values [exact-sum], central = sum
 * of their marks at every unlock [central-marks]. Marks, centrals, thresholds and their
 * maxima are written only under the segment's lock, a process-shared
 * robust mutex; values never by a fold. A process that dies anywhere
 * loses no completed add, and the next locker repairs what it left
 * [segment-recovery] (docs/internals.md).
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

/* Under the lock: the item's threshold for its central value [republish]. */
static void retune(struct shared_handle *h, unsigned int item)
{
	const struct shared_item *it = &h->items[item];
	uint64_t want;

	if (pcpu_fold_retune(LOAD(&h->threshold[item]), LOAD(&h->central[item].value),
			     (uint64_t)it->accuracy * (h->rows - 1), (uint64_t)it->floor,
			     PCPU_SHARED_MAX_THRESH, &want))
		pcpu_fold_publish(&h->threshold[item], sizeof(h->threshold[item]),
				  &h->central[item].threshold_max, want);
}

/*
 * Folds the slot of @item in @row (under the lock; a slot not armed is
 * armed by it, [armed]); true if it moved any.
 */
static bool fold_row(struct shared_handle *h, unsigned int item, unsigned int row)
{
	int64_t *slot = shared_pair(h, item, row), snap[2];

	pcpu_armed_snap(slot, snap);
	return pcpu_fold_step_armed(slot, snap, &h->central[item].value, 0, pcpu_shared_fold_hook);
}

/*
 * Puts @row in the armed set, if it is not there, and arms the slot of
 * @item in it: the count first, then the row's bit (a second armer that
 * finds it set takes its count back), then the slot's compare-and-swap,
 * which moves nothing [armed-segment]. Under the lock but where it cannot
 * be had: a walk that sees the row's values finds the count covering it.
 */
static void arm(struct shared_handle *h, unsigned int item, unsigned int row)
{
	int64_t *slot = shared_pair(h, item, row), snap[2];

	if (!shared_row_armed(h, row)) {
		__atomic_add_fetch(&h->armed->nr, 1, __ATOMIC_SEQ_CST);
		if (!shared_armed_add(h, row))
			__atomic_sub_fetch(&h->armed->nr, 1, __ATOMIC_SEQ_CST);
	}
	pcpu_armed_snap(slot, snap);
	pcpu_armed_arm(slot, snap);
}

/* Is anything stored in @row (a value or a mark of any slot)? */
static bool row_used(const struct shared_handle *h, unsigned int row)
{
	for (unsigned int item = 0; item < h->nr_items; item++) {
		const int64_t *slot = shared_pair(h, item, row);

		if (LOAD(&slot[0]) || LOAD(&slot[1]))
			return true;
	}
	return false;
}

/*
 * Under the lock, after a holder died [segment-recovery]: it may have
 * added to a row it had not yet put in the set, or counted a row it did
 * not put there. Every row is looked at (O(possible CPUs), only after a
 * death): a used row joins the set, then the count is the set's size.
 */
static void recover(struct shared_handle *h)
{
	uint64_t count = 0;
	unsigned int row;

	for (row = 0; row < h->rows; row++) {
		if (!shared_row_armed(h, row) && row_used(h, row))
			shared_armed_add(h, row);
		count += shared_row_armed(h, row);
	}
	__atomic_store_n(&h->armed->nr, count, __ATOMIC_SEQ_CST);
	for (unsigned int item = 0; item < h->nr_items; item++) {
		uint64_t central = 0;

		shared_for_each_armed(h, row)
			central += (uint64_t)pcpu_armed_mark(LOAD(&shared_pair(h, item, row)[1]));
		__atomic_store_n(&h->central[item].value, (int64_t)central, __ATOMIC_SEQ_CST);
		shared_for_each_armed(h, row)
			fold_row(h, item, row);
		retune(h, item);
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
	unsigned int row;

	shared_for_each_armed(h, row)
		moved |= fold_row(h, item, row);
	if (moved)
		retune(h, item);
}

/* The row this thread's next add goes to, as far as it can tell. */
static unsigned int current_row(const struct shared_handle *h)
{
	int cpu = pcpu_cpu_current();

	return cpu < 0 ? h->rows - 1 : (unsigned int)cpu;
}

/*
 * Adds @amount to this CPU's value of @item without a check; returns the
 * row it landed on. On the atomic path that is @row (every add to a pair
 * there is atomic, so any row will do: the caller's, armed already); on
 * the rseq path this CPU's, which may differ from @row after a migration.
 * A thread without a CPU number (no rseq area, or sched_getcpu() failing)
 * adds atomically to the last row, which no rseq add ever writes.
 */
static unsigned int add_unchecked(struct shared_handle *h, unsigned int item, int64_t amount,
				  unsigned int row)
{
	if (h->pub.mode == PCPU_CPU_RSEQ) {
		long offset = pcpu_arch_rseq_add(shared_pair(h, item, 0), amount);

		if (offset >= 0)
			return (unsigned int)(offset >> PCPU_STRIDE_SHIFT);
		/* no area yet (lib/base/rseq_area.c): this add goes to the last row */
		pcpu_rseq_area_register();
		row = h->rows - 1;
	}
	__atomic_add_fetch(shared_pair(h, item, row), amount, __ATOMIC_SEQ_CST);
	return row;
}

/*
 * The fast path refused: the amount is over the threshold, this CPU's
 * pending delta would pass it, its slot is not armed yet (this CPU's first
 * add of the item), or the thread has no CPU number. Under the lock: the
 * row this CPU adds to is armed if it is not, so that the add lands in a
 * row that walks visit [armed-segment]; the amount goes to this CPU's
 * value; a row it landed on after a migration is armed too; then that pair
 * is folded. Between the add and the fold the pending delta may pass the
 * threshold: taking the lock first makes a death there one the next
 * locker repairs [pending-bound], path 5. The cost: an add that waits for
 * the lock is not in sum() until it has it.
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
	bool locked = lock(h);
	unsigned int row = current_row(h), landed;

	arm(h, item, row);
	landed = add_unchecked(h, item, amount, row);
	if (landed != row)
		arm(h, item, landed);
	if (!locked)
		return; /* the next fold moves it */
	if (fold_row(h, item, landed))
		retune(h, item);
	unlock(h);
}

/* [sync]: a read-only handle does not fold (sum() checks a segment cut short) */
static void sync_fold(void *s, unsigned int item)
{
	struct shared_handle *h = shared_handle(s);

	if (h->writable && lock(h)) {
		fold_item(h, item);
		unlock(h);
	}
}

static int64_t sync_sum(void *s, unsigned int item)
{
	return pcpu_shared_sum(s, item);
}

PCPU_EXPORT int64_t pcpu_shared_sync_if_delta_above(struct pcpu_shared *s, unsigned int item,
						    uint64_t delta)
{
	static const struct pcpu_fold_sync ops = { .fold = sync_fold, .sum = sync_sum };

	if (!shared_usable(s, item, "pcpu_shared_sync_if_delta_above"))
		return 0;
	return pcpu_fold_sync(&ops, s, item, delta, pcpu_shared_read(s, item),
			      pcpu_shared_error_bound(s, item));
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
