/* SPDX-License-Identifier: MIT */
/*
 * Defaults for whatever the architecture file did not provide; an
 * architecture without a file of its own gets all of them: the atomic
 * update path, which is correct everywhere.
 */
#ifndef PERCPU_ARCH_GENERIC_H
#define PERCPU_ARCH_GENERIC_H

#ifndef PERCPU_ARCH_H
#error "Never include <percpu/arch/generic.h> directly; include <percpu/arch.h>"
#endif

#include <stdint.h>

/*
 * No restartable sequences: every add takes the atomic path. The sequences
 * answer "no rseq area", so that callers need no conditional of their own.
 */
#ifndef PCPU_ARCH_HAVE_RSEQ_ADD
#define PCPU_ARCH_HAVE_RSEQ_ADD 0
PCPU_INLINE long pcpu_arch_rseq_add(int64_t *cpu0, int64_t amount)
{
	(void)cpu0, (void)amount;
	return -1;
}

PCPU_INLINE int pcpu_arch_rseq_add_checked(int64_t *cpu0, int64_t amount, uint64_t threshold,
					   uint64_t armed)
{
	(void)cpu0, (void)amount, (void)threshold, (void)armed;
	return 0;
}

PCPU_INLINE long pcpu_arch_rseq_add32(uint64_t *cpu0, int32_t amount, uint32_t threshold)
{
	(void)cpu0, (void)amount, (void)threshold;
	return -1;
}
#endif

/*
 * The 16-byte compare-and-swap of a pair (see arch/x86_64.h), where the
 * compiler has a lock-free one: __sync, not __atomic, which would call
 * libatomic, whose 16-byte operations may take a lock. Elsewhere (i386,
 * armhf, riscv64, ...) PCPU_ARCH_HAVE_CAS_PAIR is 0 and the library
 * emulates it (lib/base/pair.h).
 */
#ifndef PCPU_ARCH_HAVE_CAS_PAIR
#if defined(__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16) || defined(__aarch64__)
#define PCPU_ARCH_HAVE_CAS_PAIR 1
PCPU_INLINE int pcpu_arch_cas_pair(int64_t *pair, int64_t expected[2], int64_t lo, int64_t hi)
{
	__extension__ typedef unsigned __int128 pcpu_u128;
	pcpu_u128 want, desired, now;
	int64_t desired_pair[2] = { lo, hi };

	__builtin_memcpy(&want, expected, sizeof(want));
	__builtin_memcpy(&desired, desired_pair, sizeof(desired));
	now = __sync_val_compare_and_swap((pcpu_u128 *)(void *)pair, want, desired);
	if (now == want)
		return 1;
	__builtin_memcpy(expected, &now, sizeof(now));
	return 0;
}
#else
#define PCPU_ARCH_HAVE_CAS_PAIR 0
#endif
#endif

/*
 * An add that no signal handler of this thread can split, returning the
 * value after it (see arch/x86_64.h): elsewhere an atomic add, which is
 * that too; sequentially consistent, for where pairs are swapped under a
 * lock (lib/base/fold.h).
 */
#ifndef PCPU_ARCH_HAVE_LOCAL_ADD
#define PCPU_ARCH_HAVE_LOCAL_ADD 1
PCPU_INLINE int64_t pcpu_arch_local_add(int64_t *p, int64_t amount)
{
	return __atomic_add_fetch(p, amount, __ATOMIC_SEQ_CST);
}
#endif

/* No thread pointer to find a thread's owned slot from inline. */
#ifndef PCPU_ARCH_HAVE_THREAD_POINTER
#define PCPU_ARCH_HAVE_THREAD_POINTER 0
#endif

/* One spin of a busy wait: nothing but a compiler barrier. */
#ifndef PCPU_ARCH_HAVE_RELAX
#define PCPU_ARCH_HAVE_RELAX 1
static inline void pcpu_arch_relax(void)
{
	__asm__ __volatile__("" ::: "memory");
}
#endif

#endif /* PERCPU_ARCH_GENERIC_H */
