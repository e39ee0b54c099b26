/* SPDX-License-Identifier: MIT */
/*
 * Slot owners (slot_owner.c): on the atomic path, the counter slot index
 * a thread owns while it lives.
 */
#ifndef PCPU_LIB_SLOT_OWNER_H
#define PCPU_LIB_SLOT_OWNER_H

#include "pair.h"

/*
 * Whether counters on the atomic path add to owned slots (see slot_owner.c):
 * where the owner's add and its 64-bit loads take no lock (every Debian
 * architecture; not armel's ARMv5, whose 64-bit atomics libatomic locks).
 */
#ifdef __GCC_HAVE_SYNC_COMPARE_AND_SWAP_8
#define PCPU_SLOT_OWNERS 1
#else
#define PCPU_SLOT_OWNERS 0
#endif

/*
 * Allocates what the claims need, once: the path's setup calls it (a
 * thread's first claim then takes no lock and allocates nothing).
 */
void pcpu_slot_owner_setup(void);

/*
 * The calling thread's slot index, claimed on its first call; -1 if it has
 * none (more threads than possible CPUs, or the thread is exiting).
 */
int pcpu_slot_owned(void);

/* In a forked child: only the forking thread's claim stays. */
void pcpu_slot_owner_fork_child(void);

#endif /* PCPU_LIB_SLOT_OWNER_H */
