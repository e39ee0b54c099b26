/* SPDX-License-Identifier: MIT */
/*
 * Histograms in a shared segment (see <percpu/shared.h>): an observation is
 * two adds on the path of pcpu_shared_add(), one to its bucket's counter
 * and one to the sum (the item's own), as <percpu/histogram.h> does in a
 * process. The bucket is searched in this process's copy of the bounds,
 * validated at open, so another process changing the segment's bounds
 * cannot send an add past the histogram's counters.
 */
#define _GNU_SOURCE /* as every shared_*.c: one view of <pthread.h> */
#include "base/misuse.h"
#include "base/policy.h"
#include "shared_internal.h"

/* pcpu_shared_add() for any slot, a bucket included (past add_items). */
static void add_slot(struct shared_handle *h, unsigned int slot, int64_t amount)
{
	uint64_t threshold = __atomic_load_n(&h->threshold[slot], __ATOMIC_RELAXED);

	if (pcpu_likely(__pcpu_within(amount, threshold) &&
			pcpu_this_cpu_add_armed(h->pub.pairs + 2 * (uintptr_t)slot, amount,
						threshold, h->pub.mode)))
		return;
	pcpu_shared_add_locked(h, slot, amount);
}

PCPU_EXPORT void pcpu_shared_observe(struct pcpu_shared *s, unsigned int item, int64_t value)
{
	struct shared_handle *h = shared_handle(s);
	const struct shared_meta *m;
	uint32_t lo = 0, hi;

	if (!shared_usable(s, item, "pcpu_shared_observe"))
		return;
	if (h->items[item].kind != PCPU_METRIC_HISTOGRAM || !h->writable) {
		pcpu_misuse("pcpu_shared_observe",
			    h->writable ? "not a histogram" : "segment opened read-only");
		return;
	}
	m = &h->meta[item];
	hi = m->nr_bounds;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (value <= m->bounds[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	add_slot(h, m->bucket + lo, 1);
	add_slot(h, item, value);
}
