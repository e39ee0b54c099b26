/* SPDX-License-Identifier: MIT */
/*
 * The atomic update path's adds to a CPU's pair (see <percpu/cpu.h>): one
 * compare-and-swap of value and mark, as a remote fold's is. Counters'
 * owned adds are slot_owner.c's.
 */
#define _GNU_SOURCE
#include <stdint.h>

#include <percpu/cpu.h>

#include "cpu_internal.h"
#include "pair.h"

/*
 * The atomic path of pcpu_this_cpu_add_checked(): threads that believe they
 * run on one CPU may add at once, so the check and the add are one
 * compare-and-swap of the pair, as a remote fold's is. The mark is stored
 * plus @armed (<percpu/common.h>).
 */
PCPU_EXPORT int __pcpu_cpu_add_pair_atomic(int64_t *cpu0, int64_t amount, uint64_t threshold,
					   uint64_t armed)
{
	int cpu = pcpu_sched_cpu(); /* no rseq area to register on this path */
	int64_t *pair, old[2];

	if (pcpu_unlikely(cpu < 0))
		return 0;
	pair = cpu_copy(cpu0, (unsigned int)cpu);
	pcpu_pair_load(pair, old);
	do {
		uint64_t value = (uint64_t)old[0] + (uint64_t)amount;

		if (!__pcpu_within((int64_t)(value - (uint64_t)old[1] + armed), threshold))
			return 0;
		if (pcpu_pair_cas(pair, old, (int64_t)value, old[1]))
			return 1;
	} while (1);
}

/*
 * The atomic path of pcpu_this_cpu_add32(): the word's low half is the
 * value, the high half the mark plus PCPU_WORD_ARMED; the add lands only if
 * the new pending delta stays within +-@threshold, in one compare-and-swap.
 */
PCPU_EXPORT uint64_t *__pcpu_cpu_add32_atomic(uint64_t *cpu0, int32_t amount, uint32_t threshold)
{
	int cpu = pcpu_sched_cpu(); /* no rseq area to register on this path */
	uint64_t *copy, old, word;

	if (pcpu_unlikely(cpu < 0))
		return NULL;
	copy = cpu_copy(cpu0, (unsigned int)cpu);
	old = __atomic_load_n(copy, __ATOMIC_RELAXED);
	do {
		uint32_t value = (uint32_t)old + (uint32_t)amount;

		if ((uint32_t)(value - (uint32_t)(old >> 32) + PCPU_WORD_ARMED) + threshold >
		    2 * threshold)
			return NULL;
		word = (old & ~(uint64_t)UINT32_MAX) | value;
	} while (!__atomic_compare_exchange_n(copy, &old, word, true, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	return copy;
}
