/* SPDX-License-Identifier: MIT */
/*
 * A compare-and-swap of a 16-byte pair {int64_t value; int64_t mark}, the
 * one operation by which anyone but a CPU's own fast path changes a counter
 * slot. Swapping both halves together is what makes a stale folder fail: it
 * read the value before an add landed, so its expected pair no longer
 * matches. The architecture's lock-free one (pcpu_arch_cas_pair()) where it
 * has one; elsewhere (i386, armhf, riscv64, ...) an emulation under a lock
 * (lib/base/pair_lock.c), which serialises the swaps of one process only: so
 * there, shared segments, whose pairs other processes swap, are refused.
 */
#ifndef PCPU_LIB_PAIR_H
#define PCPU_LIB_PAIR_H

#include <stdbool.h>
#include <stdint.h>

#include <percpu/arch.h>

/*
 * Whether the swap is lock-free, so that processes sharing the pairs may
 * swap them too.
 */
#define PCPU_PAIR_LOCK_FREE PCPU_ARCH_HAVE_CAS_PAIR

#if !PCPU_ARCH_HAVE_CAS_PAIR
/* The emulation: under a lock striped by address, with signals blocked. */
bool pcpu_pair_cas_locked(int64_t *pair, int64_t expected[2], int64_t value, int64_t mark);

/*
 * Around fork(): the library's fork handlers (lib/registry/registry.c) take every
 * pair lock after every other lock of the library, and release them
 * first. Last, because a thread that holds another lock of the library (a
 * scrape's, a fold's) may swap a pair before it lets go: taken first, the
 * pair locks would wait on that thread while it waits on them.
 */
void pcpu_pair_fork_prepare(void);
void pcpu_pair_fork_release(void);

/*
 * A test hook, in the suite's internal library only (PCPU_TEST_HOOKS):
 * called under the lock, between the compare and the stores of a swap
 * that succeeds, with the pair: what another thread's lock-free add could
 * do there (test/counter/test_slot_owner.c).
 */
extern void (*pcpu_pair_debug_swap_hook)(int64_t *pair);
#else
static inline void pcpu_pair_fork_prepare(void)
{
}

static inline void pcpu_pair_fork_release(void)
{
}
#endif

/*
 * If the pair at @pair (16-byte aligned) holds {expected[0], expected[1]},
 * stores {value, mark} and returns true; otherwise stores what it holds in
 * @expected and returns false. A full barrier either way.
 */
static inline bool pcpu_pair_cas(int64_t *pair, int64_t expected[2], int64_t value, int64_t mark)
{
#if PCPU_ARCH_HAVE_CAS_PAIR
	return pcpu_arch_cas_pair(pair, expected, value, mark);
#else
	return pcpu_pair_cas_locked(pair, expected, value, mark);
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
