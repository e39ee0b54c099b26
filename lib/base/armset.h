/* SPDX-License-Identifier: MIT */
/*
 * The set of a unit's armed CPUs: one bit per possible CPU (or slot
 * index), set before the CPU's slot is armed and never cleared while the
 * unit lives, so that walks and the error bound visit and count the CPUs
 * that add, not the possible ones [armed]. Word 0 summarises the rest: its
 * bit i says that some word 1 + w with w % 64 == i has a bit set, so that a
 * walk over a few CPUs of thousands loads a few words (exactly the
 * non-empty ones up to 4096 CPUs). A CPU's bits are set by whoever arms
 * its slot, the word's bit and then the summary's, before the slot is
 * armed.
 */
#ifndef PCPU_LIB_ARMSET_H
#define PCPU_LIB_ARMSET_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Words of CPU bits over @cpus CPUs (the summary not included). */
static inline unsigned int pcpu_armset_words(unsigned int cpus)
{
	return (cpus + 63) / 64;
}

/* A set over @cpus CPUs, none armed; NULL if out of memory. */
static inline uint64_t *pcpu_armset_new(unsigned int cpus)
{
	return calloc(1 + pcpu_armset_words(cpus), sizeof(uint64_t));
}

/* Is @cpu in @set: its bit, and its word's in the summary? */
static inline bool pcpu_armset_has(const uint64_t *set, unsigned int cpu)
{
	unsigned int w = cpu / 64;

	return (__atomic_load_n(&set[0], __ATOMIC_ACQUIRE) >> (w % 64) & 1) &&
	       (__atomic_load_n(&set[1 + w], __ATOMIC_ACQUIRE) >> (cpu % 64) & 1);
}

/*
 * Adds @cpu to @set: true if this call set its bit (its caller then counts
 * it), false if it was set. Either way the summary holds its word before
 * this returns, so that no caller arms a slot that a walk could miss.
 * Sequentially consistent.
 */
static inline bool pcpu_armset_add(uint64_t *set, unsigned int cpu)
{
	unsigned int w = cpu / 64;
	uint64_t bit = UINT64_C(1) << (cpu % 64), word = UINT64_C(1) << (w % 64);
	bool added = !(__atomic_fetch_or(&set[1 + w], bit, __ATOMIC_SEQ_CST) & bit);

	if (!(__atomic_load_n(&set[0], __ATOMIC_SEQ_CST) & word))
		__atomic_fetch_or(&set[0], word, __ATOMIC_SEQ_CST);
	return added;
}

/*
 * Joins @cpu to @set, counted in *@armed: the count first, so that it runs
 * ahead of the set, never behind (a bound that multiplies it covers every
 * CPU a walk can find); of two callers that join one CPU, the one that
 * finds it set takes its count back [armed].
 */
static inline void pcpu_armset_join(uint64_t *set, uint32_t *armed, unsigned int cpu)
{
	if (pcpu_armset_has(set, cpu))
		return;
	__atomic_add_fetch(armed, 1, __ATOMIC_SEQ_CST);
	if (!pcpu_armset_add(set, cpu))
		__atomic_sub_fetch(armed, 1, __ATOMIC_SEQ_CST);
}

/* How many CPUs @set holds, over @cpus CPUs. */
static inline uint32_t pcpu_armset_count(const uint64_t *set, unsigned int cpus)
{
	uint32_t n = 0;

	for (unsigned int w = 0; w < pcpu_armset_words(cpus); w++)
		n += (uint32_t)__builtin_popcountll(__atomic_load_n(&set[1 + w], __ATOMIC_ACQUIRE));
	return n;
}

/*
 * for (each CPU @cpu in @set over @cpus CPUs): the summary, then each
 * non-empty word once, acquire loads. @cpu is an unsigned int of the
 * caller's. Three nested loops: the body must not break out.
 */
#define pcpu_armset_for_each(set, cpus, cpu)                                                       \
	for (uint64_t pcpu_sum_ = __atomic_load_n(&(set)[0], __ATOMIC_ACQUIRE); pcpu_sum_;          \
	     pcpu_sum_ &= pcpu_sum_ - 1)                                                            \
		for (unsigned int pcpu_w_ = (unsigned int)__builtin_ctzll(pcpu_sum_);              \
		     pcpu_w_ < pcpu_armset_words(cpus); pcpu_w_ += 64)                             \
			for (uint64_t pcpu_bits_ =                                                 \
				     __atomic_load_n(&(set)[1 + pcpu_w_], __ATOMIC_ACQUIRE);       \
			     pcpu_bits_ &&                                                         \
			     ((cpu) = pcpu_w_ * 64 + (unsigned int)__builtin_ctzll(pcpu_bits_), 1); \
			     pcpu_bits_ &= pcpu_bits_ - 1)

#endif /* PCPU_LIB_ARMSET_H */
