/* SPDX-License-Identifier: MIT */
/**
 * @file cpu.h
 * The CPU layer: which CPU a thread runs on, and "add to this CPU's copy".
 *
 * A process uses one of two update paths, never mixed: the
 * restartable-sequence path (plain adds; x86_64 and aarch64, on the rseq
 * area glibc >= 2.35 registers or the library's own) or the atomic path (sched_getcpu() and
 * atomic read-modify-writes). Mixing them would let a plain rseq add on one
 * CPU erase an atomic update from a thread that believes it runs there. The
 * path is chosen once, by the first call of pcpu_cpu_setup(), which every
 * counter or stat-set initialiser makes; nothing earlier (loading the
 * library, pcpu_cpu_possible(), the kernel drop-in's percpu_counter_batch)
 * chooses it, so setting PCPU_FORCE_FALLBACK=1 in the environment before
 * the first initialiser forces the atomic path. Each object records the
 * path it was made with, and its inline fast path follows that record.
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
	PCPU_CPU_UNSET = 0, /**< not chosen yet */
	PCPU_CPU_RSEQ = 1, /**< restartable sequences, plain adds */
	PCPU_CPU_ATOMIC = 2, /**< sched_getcpu() and atomic read-modify-writes */
};

/**
 * Chooses the process's update path if not chosen yet and returns it:
 * PCPU_CPU_ATOMIC if PCPU_FORCE_FALLBACK is set to anything but "" or "0",
 * or if this thread has no rseq area; PCPU_CPU_RSEQ otherwise. Safe from any
 * thread. @since 0.1
 */
PCPU_EXPORT enum pcpu_cpu_mode pcpu_cpu_setup(void);

/** The CPU the caller runs on (sched_getcpu()), or -1. @since 0.1 */
PCPU_EXPORT int pcpu_cpu_current(void);

/**
 * Number of possible CPUs: every per-CPU object has this many copies, and
 * every CPU number a thread can see is below it. @since 0.1
 */
PCPU_EXPORT unsigned int pcpu_cpu_possible(void);

/** Number of online CPUs when the library first needed it. @since 0.1 */
PCPU_EXPORT unsigned int pcpu_cpu_online(void);

/*
 * Internal to the headers: the atomic path of pcpu_this_cpu_add_checked(),
 * out of line so that the rseq fast path needs no stack frame.
 */
PCPU_EXPORT int __pcpu_cpu_add_checked_atomic(int64_t *cpu0, int64_t amount, uint64_t limit);

/*
 * Internal to the headers: the atomic path of pcpu_this_cpu_add32().
 */
PCPU_EXPORT uint64_t *__pcpu_cpu_add32_atomic(uint64_t *cpu0, int32_t amount, uint32_t limit);

/*
 * Internal to the headers. For pairs {int64_t value; int64_t mark} whose
 * CPU-0 copy is at @cpu0: adds @amount to this CPU's value unless the new
 * value would be more than @limit away from the mark, in one step (a
 * restartable sequence on @mode PCPU_CPU_RSEQ, a compare-and-swap of the
 * pair otherwise). Returns 1 if it added; 0 if it added nothing (the limit
 * would be passed, or the thread has no CPU number). A truth value, not the
 * address added to: the inline caller then needs no test of an offset
 * after the sequence. Other
 * threads may change the mark, never the value, with a compare-and-swap of
 * the whole pair.
 */
static inline int pcpu_this_cpu_add_checked(int64_t *cpu0, int64_t amount, uint64_t limit,
					    unsigned int mode)
{
	if (PCPU_ARCH_HAVE_RSEQ_ADD && pcpu_likely(mode == PCPU_CPU_RSEQ))
		return pcpu_arch_rseq_add_checked(cpu0, amount, limit);
	return __pcpu_cpu_add_checked_atomic(cpu0, amount, limit);
}

/*
 * Internal to the headers. The 32-bit sibling, for words whose low 32 bits
 * are a value and whose high 32 bits a mark: adds @amount to the value of
 * this CPU's copy of the uint64_t whose CPU-0 copy is @cpu0, unless the new
 * value would be more than @limit (below 2^31) away from the mark, modulo
 * 2^32; a restartable sequence committed by a plain 32-bit store, or a
 * compare-and-swap of the whole word. Returns the word it added to; NULL if
 * it added nothing. Other threads may change the mark, and only the mark,
 * with a compare-and-swap of the whole word.
 */
static inline uint64_t *pcpu_this_cpu_add32(uint64_t *cpu0, int32_t amount, uint32_t limit,
					    unsigned int mode)
{
	if (PCPU_ARCH_HAVE_RSEQ_ADD && pcpu_likely(mode == PCPU_CPU_RSEQ)) {
		long offset = pcpu_arch_rseq_add32(cpu0, amount, limit);

		if (pcpu_unlikely(offset < 0))
			return (uint64_t *)0;
		return (uint64_t *)(void *)((char *)cpu0 + offset);
	}
	return __pcpu_cpu_add32_atomic(cpu0, amount, limit);
}

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_CPU_H */
