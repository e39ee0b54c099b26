/* SPDX-License-Identifier: MIT */
/*
 * The pair swap where the architecture has no lock-free 16-byte
 * compare-and-swap (lib/base/pair.h): the compare and the stores under a spin
 * lock striped by the pair's address. The swaps of one process are
 * serialised per pair; readers load each half atomically, and a swap
 * changes one half in each use of it (an add its value, a fold its mark),
 * so they never see a torn half. One writer takes no lock, a counter
 * slot's owner (slot_owner.c): so a swap stores only the half it changes
 * (docs/internals.md [pending-bound], path 4).
 *
 * Signals are blocked while a lock is held: a handler that adds to a
 * counter would otherwise spin for ever on a lock its own thread holds.
 * fork() takes every lock (the library's handlers, lib/registry/registry.c, after
 * all its other locks), so that the child finds none held by a thread
 * that did not come along.
 */
#include <signal.h>
#include <stdint.h>

#include "cpu_internal.h"
#include "pair.h"

#if !PCPU_ARCH_HAVE_CAS_PAIR

#define PAIR_LOCKS 64

/*
 * Words, not bytes: riscv64 has no byte-wide atomic exchange, and GCC 12
 * calls libatomic's __atomic_exchange_1 for one (which the library does not
 * link).
 */
static unsigned int locks[PAIR_LOCKS];

static void lock(unsigned int *l)
{
	unsigned int spins = 0;

	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		pcpu_relax(&spins);
}

static void unlock(unsigned int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

void pcpu_pair_fork_prepare(void)
{
	for (int i = 0; i < PAIR_LOCKS; i++)
		lock(&locks[i]);
}

void pcpu_pair_fork_release(void)
{
	for (int i = PAIR_LOCKS - 1; i >= 0; i--)
		unlock(&locks[i]);
}

#ifdef PCPU_TEST_HOOKS
void (*pcpu_pair_debug_swap_hook)(int64_t *pair);
#endif

bool pcpu_pair_cas_locked(int64_t *pair, int64_t expected[2], int64_t value, int64_t mark)
{
	unsigned int *l = &locks[((uintptr_t)pair >> 4) % PAIR_LOCKS];
	sigset_t all, old;
	int64_t now[2];
	bool ok;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	lock(l);
	/* under the lock, against the swaps: the lock-free adds' halves may move */
	now[0] = __atomic_load_n(&pair[0], __ATOMIC_ACQUIRE);
	now[1] = __atomic_load_n(&pair[1], __ATOMIC_ACQUIRE);
	ok = now[0] == expected[0] && now[1] == expected[1];
#ifdef PCPU_TEST_HOOKS
	if (ok && pcpu_pair_debug_swap_hook)
		pcpu_pair_debug_swap_hook(pair);
#endif
	if (ok) {
		if (value != now[0])
			__atomic_store_n(&pair[0], value, __ATOMIC_SEQ_CST);
		if (mark != now[1])
			__atomic_store_n(&pair[1], mark, __ATOMIC_SEQ_CST);
	} else {
		expected[0] = now[0];
		expected[1] = now[1];
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	unlock(l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ok;
}

#endif
