/* SPDX-License-Identifier: MIT */
/*
 * The CPU layer: which CPU a thread runs on, and "add to this CPU's copy".
 *
 * A process uses one of two update paths, chosen once, at the first counter
 * initialisation, and never mixed: the restartable-sequence path (a plain
 * add, x86_64 with glibc >= 2.35 rseq) or the atomic path (sched_getcpu()
 * and an atomic add). Mixing them would let a plain rseq add on one CPU erase
 * an atomic add from a thread that believes it runs there. Setting the
 * environment variable PCPU_FORCE_FALLBACK=1 forces the atomic path.
 */
#ifndef PERCPU_CPU_H
#define PERCPU_CPU_H

#include <stdint.h>
#include <stddef.h>

#include <percpu/common.h>
#include <percpu/arch.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The update paths. @since 0.1 */
enum pcpu_cpu_mode {
	PCPU_CPU_UNSET = 0, /**< no counter initialised yet */
	PCPU_CPU_RSEQ = 1, /**< restartable sequences, plain adds */
	PCPU_CPU_ATOMIC = 2, /**< sched_getcpu() and atomic adds */
};

/** The process's update path; read-only for callers. @since 0.1 */
extern PCPU_EXPORT int pcpu_cpu_mode_current;

/**
 * Chooses the update path if not chosen yet and returns it. Called by every
 * initialiser; safe from any thread. @since 0.1
 */
PCPU_EXPORT enum pcpu_cpu_mode pcpu_cpu_setup(void);

/** The CPU the caller runs on (sched_getcpu()), or -1. @since 0.1 */
PCPU_EXPORT int pcpu_cpu_current(void);

/**
 * Number of possible CPUs: every per-CPU object has this many copies, and
 * every CPU number a thread can see is below it. @since 0.1
 */
PCPU_EXPORT unsigned int pcpu_cpu_possible(void);

/** Number of online CPUs when the library was set up. @since 0.1 */
PCPU_EXPORT unsigned int pcpu_cpu_online(void);

/**
 * The atomic path of pcpu_this_cpu_add(): sched_getcpu() and an atomic add.
 * Out of line so that the rseq fast path needs no stack frame. @since 0.1
 */
PCPU_EXPORT int64_t *pcpu_cpu_add_atomic(int64_t *cpu0, int64_t amount);

/**
 * Adds @amount to this CPU's copy of the int64_t whose CPU-0 copy is @cpu0,
 * and returns the address of the copy it added to; NULL if it could not
 * (the thread has no CPU number), in which case nothing was added.
 */
static inline int64_t *pcpu_this_cpu_add(int64_t *cpu0, int64_t amount)
{
#if PCPU_ARCH_HAVE_RSEQ_ADD
	if (pcpu_likely(pcpu_cpu_mode_current == PCPU_CPU_RSEQ)) {
		long offset = pcpu_arch_rseq_add(cpu0, amount);

		if (pcpu_unlikely(offset < 0))
			return (int64_t *)0;
		return (int64_t *)(void *)((char *)cpu0 + offset);
	}
#endif
	return pcpu_cpu_add_atomic(cpu0, amount);
}

/**
 * The atomic path of pcpu_this_cpu_add32(): sched_getcpu() and a
 * compare-and-swap of the whole word. Out of line so that the rseq fast path
 * needs no stack frame. @since 0.1
 */
PCPU_EXPORT uint64_t *pcpu_cpu_add32_atomic(uint64_t *cpu0, int32_t amount, uint32_t limit);

/**
 * The 32-bit sibling of pcpu_this_cpu_add(), for words whose low 32 bits are
 * a value and whose high 32 bits a mark: adds @amount to the value of this
 * CPU's copy of the uint64_t whose CPU-0 copy is @cpu0, unless the new value
 * would be more than @limit (below 2^31) away from the mark, modulo 2^32.
 * The check and the add are one step: a restartable sequence committed by a
 * plain 32-bit store (rseq path), or a compare-and-swap of the whole word
 * (atomic path). Returns the address of the copy it added to; NULL if it
 * added nothing (the limit would be passed, or the thread has no CPU
 * number). Other threads may change the mark, and only the mark, with a
 * compare-and-swap of the whole word, in either path.
 */
static inline uint64_t *pcpu_this_cpu_add32(uint64_t *cpu0, int32_t amount, uint32_t limit)
{
#if PCPU_ARCH_HAVE_RSEQ_ADD
	if (pcpu_likely(pcpu_cpu_mode_current == PCPU_CPU_RSEQ)) {
		long offset = pcpu_arch_rseq_add32(cpu0, amount, limit);

		if (pcpu_unlikely(offset < 0))
			return (uint64_t *)0;
		return (uint64_t *)(void *)((char *)cpu0 + offset);
	}
#endif
	return pcpu_cpu_add32_atomic(cpu0, amount, limit);
}

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_CPU_H */
