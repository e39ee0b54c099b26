/* SPDX-License-Identifier: MIT */
/*
 * The set of a unit's armed CPUs: a bitmap of one bit per possible CPU (or
 * slot index), set before the CPU's slot is armed and never cleared while
 * the unit lives, so that walks and the error bound visit and count the
 * CPUs that add, not the possible ones [armed]. A CPU's bit is set once, by
 * the first fold of its slot; a walk loads each word once.
 */
#ifndef PCPU_LIB_ARMSET_H
#define PCPU_LIB_ARMSET_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Words of a set over @cpus CPUs. */
static inline unsigned int pcpu_armset_words(unsigned int cpus)
{
	return (cpus + 63) / 64;
}

/* A set over @cpus CPUs, none armed; NULL if out of memory. */
static inline uint64_t *pcpu_armset_new(unsigned int cpus)
{
	return calloc(pcpu_armset_words(cpus), sizeof(uint64_t));
}

/*
 * Adds @cpu to @set: true if this call added it (its caller then counts
 * it), false if it was there. Sequentially consistent: the bit is visible
 * before anything the caller does next [armed].
 */
static inline bool pcpu_armset_add(uint64_t *set, unsigned int cpu)
{
	uint64_t bit = UINT64_C(1) << (cpu % 64);

	return !(__atomic_fetch_or(&set[cpu / 64], bit, __ATOMIC_SEQ_CST) & bit);
}

static inline bool pcpu_armset_has(const uint64_t *set, unsigned int cpu)
{
	return __atomic_load_n(&set[cpu / 64], __ATOMIC_ACQUIRE) >> (cpu % 64) & 1;
}

/* How many CPUs @set holds, over @cpus CPUs. */
static inline uint32_t pcpu_armset_count(const uint64_t *set, unsigned int cpus)
{
	uint32_t n = 0;

	for (unsigned int w = 0; w < pcpu_armset_words(cpus); w++)
		n += (uint32_t)__builtin_popcountll(__atomic_load_n(&set[w], __ATOMIC_ACQUIRE));
	return n;
}

/*
 * for (each CPU @cpu in @set over @cpus CPUs): one acquire load per word of
 * 64 CPUs, then its bits in order. @cpu is an unsigned int of the caller's.
 */
#define pcpu_armset_for_each(set, cpus, cpu)                                                        \
	for (unsigned int pcpu_w_ = 0; pcpu_w_ < pcpu_armset_words(cpus); pcpu_w_++)                \
		for (uint64_t pcpu_bits_ = __atomic_load_n(&(set)[pcpu_w_], __ATOMIC_ACQUIRE);     \
		     pcpu_bits_ &&                                                                 \
		     ((cpu) = pcpu_w_ * 64 + (unsigned int)__builtin_ctzll(pcpu_bits_), 1);       \
		     pcpu_bits_ &= pcpu_bits_ - 1)

#endif /* PCPU_LIB_ARMSET_H */
