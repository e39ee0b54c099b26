/* SPDX-License-Identifier: MIT */
/*
 * A compare-and-swap of a 16-byte pair {int64_t value; int64_t mark}, the
 * one operation by which anyone but a CPU's own fast path changes a counter
 * slot. Swapping both halves together is what makes a stale folder fail: it
 * read the value before an add landed, so its expected pair no longer
 * matches. On x86_64 it is cmpxchg16b in inline asm: the builtins would
 * need -mcx16 or libatomic, and ThreadSanitizer's emulation of 16-byte
 * atomics takes a lock that a plain rseq add does not respect.
 */
#ifndef PCPU_LIB_PAIR_H
#define PCPU_LIB_PAIR_H

#include <stdbool.h>
#include <stdint.h>

/*
 * If the pair at @pair (16-byte aligned) holds {expected[0], expected[1]},
 * stores {value, mark} and returns true; otherwise stores what it holds in
 * @expected and returns false. A full barrier either way.
 */
static inline bool pcpu_pair_cas(int64_t *pair, int64_t expected[2], int64_t value, int64_t mark)
{
#if defined(__x86_64__)
	bool ok;

	__asm__ __volatile__("lock cmpxchg16b %[mem]"
			     : [mem] "+m"(*(int64_t(*)[2])pair), "=@ccz"(ok),
			       "+a"(expected[0]), "+d"(expected[1])
			     : "b"(value), "c"(mark)
			     : "memory");
	return ok;
#else
	/*
	 * __sync, not __atomic: gcc inlines it (or calls libgcc's lock-free
	 * outline atomics, aarch64's __aarch64_cas16_sync), where __atomic
	 * calls libatomic, whose 16-byte operations may take a lock.
	 */
	__extension__ typedef unsigned __int128 u128;
	u128 want, desired, now;
	int64_t desired_pair[2] = { value, mark };

	__builtin_memcpy(&want, expected, sizeof(want));
	__builtin_memcpy(&desired, desired_pair, sizeof(desired));
	now = __sync_val_compare_and_swap((u128 *)(void *)pair, want, desired);
	if (now == want)
		return true;
	__builtin_memcpy(expected, &now, sizeof(now));
	return false;
#endif
}

/*
 * A snapshot of the pair good enough to start a compare-and-swap from (each
 * half is loaded atomically, the pair need not be consistent: the swap
 * checks it).
 */
static inline void pcpu_pair_load(const int64_t *pair, int64_t out[2])
{
	out[0] = __atomic_load_n(&pair[0], __ATOMIC_ACQUIRE);
	out[1] = __atomic_load_n(&pair[1], __ATOMIC_ACQUIRE);
}

#endif /* PCPU_LIB_PAIR_H */
