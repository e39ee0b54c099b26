/* SPDX-License-Identifier: MIT */
/*
 * Internal to <percpu/cpu.h>: a thread's owned slot on the atomic path, and
 * the owner's add, which both the inline adds (static/cpu.h) and the
 * out-of-line claim (lib/base/slot_owner.c) use. It calls nothing, so the
 * CPU layer stays a line.
 * Not API: these names may change in any release.
 */
#ifndef PERCPU_STATIC_OWNER_H
#define PERCPU_STATIC_OWNER_H

#ifndef PERCPU_CPU_H
#error "include <percpu/cpu.h>, not <percpu/static/owner.h>"
#endif

/*
 * A thread's block on the atomic path (lib/base/slot_owner.c, which says why it
 * is safe): the counter slot index it owns. Every thread's lies
 * __pcpu_owner_offset bytes from its thread pointer.
 */
struct __pcpu_owner {
	int32_t slot; /* negative: none (not claimed yet, or none to claim) */
};

PCPU_EXPORT extern long __pcpu_owner_offset;

/*
 * The owner's add to the value of slot @slot of the armed pairs whose CPU-0
 * copy is @cpu0: the add first, in one step no signal handler can split,
 * then the check of the new pending delta against +-@threshold. 1: within
 * it; -1: past it, or the slot is not armed (the caller folds the slot,
 * which holds the amount already, and a fold arms it).
 */
PCPU_INLINE int __pcpu_owner_add(int32_t slot, int64_t *cpu0, int64_t amount, uint64_t threshold)
{
	int64_t *pair = (int64_t *)(void *)((char *)cpu0 +
					    ((size_t)(uint32_t)slot << PCPU_STRIDE_SHIFT));
	uint64_t value = (uint64_t)pcpu_arch_local_add(&pair[0], amount);
	/* after the add: a fold under a lock checks the value after its mark (lib/base/fold.h) */
	uint64_t pending = value - (uint64_t)__atomic_load_n(&pair[1], __ATOMIC_SEQ_CST) +
			   PCPU_SLOT_ARMED;

	return pcpu_likely(__pcpu_within((int64_t)pending, threshold)) ? 1 : -1;
}

#endif /* PERCPU_STATIC_OWNER_H */
