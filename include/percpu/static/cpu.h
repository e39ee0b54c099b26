/* SPDX-License-Identifier: MIT */
/*
 * Internal to <percpu/cpu.h>: the inline adds to this CPU's copy, and
 * their out-of-line atomic paths.
 * Not API: these names may change in any release.
 */
#ifndef PERCPU_STATIC_CPU_H
#define PERCPU_STATIC_CPU_H

#ifndef PERCPU_CPU_H
#error "include <percpu/cpu.h>, not <percpu/static/cpu.h>"
#endif

#include <percpu/static/owner.h>

/*
 * The atomic path of pcpu_this_cpu_add_checked() and, where pairs are
 * swapped under a lock, of pcpu_this_cpu_add_owned(), out of line so that
 * the rseq fast path needs no stack frame. @armed: as the sequence's.
 */
PCPU_EXPORT int __pcpu_cpu_add_pair_atomic(int64_t *cpu0, int64_t amount, uint64_t threshold,
					   uint64_t armed);

/* The atomic path of pcpu_this_cpu_add32(). */
PCPU_EXPORT uint64_t *__pcpu_cpu_add32_atomic(uint64_t *cpu0, int32_t amount, uint32_t threshold);

/*
 * For pairs {int64_t value; int64_t mark} whose CPU-0 copy is at @cpu0:
 * adds @amount to this CPU's value unless the new value would be more than
 * @threshold away from the mark, in one step (a restartable sequence on @mode
 * PCPU_CPU_RSEQ, a compare-and-swap of the pair otherwise). Returns 1 if it
 * added; 0 if it added nothing (the threshold would be passed, or the thread
 * has no CPU number). A truth value, not the address added to: the inline
 * caller then needs no test of an offset after the sequence. Other threads
 * may change the mark, never the value, with a compare-and-swap of the
 * whole pair.
 */
PCPU_INLINE int pcpu_this_cpu_add_checked(int64_t *cpu0, int64_t amount, uint64_t threshold,
					  unsigned int mode)
{
	if (PCPU_ARCH_HAVE_RSEQ_ADD && pcpu_likely(mode == PCPU_CPU_RSEQ))
		return pcpu_arch_rseq_add_checked(cpu0, amount, threshold, 0);
	return __pcpu_cpu_add_pair_atomic(cpu0, amount, threshold, 0);
}

/*
 * pcpu_this_cpu_add_checked() for armed pairs (PCPU_SLOT_ARMED, no owners:
 * shared segments): a slot not armed yet fails the check, and the caller's
 * slow path arms it (docs/internals.md [armed]).
 */
PCPU_INLINE int pcpu_this_cpu_add_armed(int64_t *cpu0, int64_t amount, uint64_t threshold,
					unsigned int mode)
{
	if (PCPU_ARCH_HAVE_RSEQ_ADD && pcpu_likely(mode == PCPU_CPU_RSEQ))
		return pcpu_arch_rseq_add_checked(cpu0, amount, threshold, PCPU_SLOT_ARMED);
	return __pcpu_cpu_add_pair_atomic(cpu0, amount, threshold, PCPU_SLOT_ARMED);
}

/* The atomic path of pcpu_this_cpu_add_owned(), out of line: it claims. */
PCPU_EXPORT int __pcpu_cpu_add_owned(int64_t *cpu0, int64_t amount, uint64_t threshold);

/*
 * pcpu_this_cpu_add_checked() for armed pairs (PCPU_SLOT_ARMED) whose
 * values nothing but these adds writes (counters): a slot not armed yet
 * fails the check. On the atomic path it adds to the slot the calling
 * thread owns while it lives, with no locked instruction, rather than to
 * its CPU's with a compare-and-swap; inline where the thread pointer is at
 * hand. The caller has checked |@amount| <= @threshold. Returns 1 if it added
 * within the threshold; 0 if it added nothing (the rseq path's check failed,
 * or the thread owns no slot); -1 if it added and its slot's pending delta
 * is now past the threshold, for the caller to fold.
 */
PCPU_INLINE int pcpu_this_cpu_add_owned(int64_t *cpu0, int64_t amount, uint64_t threshold,
					unsigned int mode)
{
	if (PCPU_ARCH_HAVE_RSEQ_ADD && pcpu_likely(mode == PCPU_CPU_RSEQ))
		return pcpu_arch_rseq_add_checked(cpu0, amount, threshold, PCPU_SLOT_ARMED);
#if PCPU_ARCH_HAVE_CAS_PAIR && PCPU_ARCH_HAVE_THREAD_POINTER
	{
		const char *tp = (const char *)__builtin_thread_pointer();
		const struct __pcpu_owner *me =
			(const struct __pcpu_owner *)(const void *)(tp + __pcpu_owner_offset);
		int32_t slot = __atomic_load_n(&me->slot, __ATOMIC_RELAXED);

		if (pcpu_likely(slot >= 0))
			return __pcpu_owner_add(slot, cpu0, amount, threshold);
	}
#endif
	return __pcpu_cpu_add_owned(cpu0, amount, threshold);
}

/*
 * pcpu_this_cpu_add_owned() after the fast paths' range check, |@amount| <=
 * @threshold in one unsigned comparison: 0 (nothing added) if it is not.
 */
PCPU_INLINE int pcpu_this_cpu_add_within(int64_t *cpu0, int64_t amount, uint64_t threshold,
					 unsigned int mode)
{
	if (pcpu_unlikely(!__pcpu_within(amount, threshold)))
		return 0;
	return pcpu_this_cpu_add_owned(cpu0, amount, threshold, mode);
}

/*
 * The 32-bit sibling, for words whose low 32 bits are a value and whose
 * high 32 bits a mark plus PCPU_WORD_ARMED (0: not armed, which fails the
 * check; docs/internals.md [armed]): adds @amount to the value of
 * this CPU's copy of the uint64_t whose CPU-0 copy is @cpu0, unless the new
 * value would be more than @threshold (below 2^31) away from the mark, modulo
 * 2^32; a restartable sequence committed by a plain 32-bit store, or a
 * compare-and-swap of the whole word. Returns the word it added to; NULL if
 * it added nothing. Other threads may change the mark, and only the mark,
 * with a compare-and-swap of the whole word.
 */
PCPU_INLINE uint64_t *pcpu_this_cpu_add32(uint64_t *cpu0, int32_t amount, uint32_t threshold,
					  unsigned int mode)
{
	if (PCPU_ARCH_HAVE_RSEQ_ADD && pcpu_likely(mode == PCPU_CPU_RSEQ)) {
		long offset = pcpu_arch_rseq_add32(cpu0, amount, threshold);

		if (pcpu_unlikely(offset < 0))
			return (uint64_t *)0;
		return (uint64_t *)(void *)((char *)cpu0 + offset);
	}
	return __pcpu_cpu_add32_atomic(cpu0, amount, threshold);
}

#endif /* PERCPU_STATIC_CPU_H */
