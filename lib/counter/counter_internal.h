/* SPDX-License-Identifier: MIT */
/*
 * Counters, inside: what counter.c (adds, folds, reads) and
 * counter_limited.c (limited adds) share.
 */
#ifndef PCPU_LIB_COUNTER_INTERNAL_H
#define PCPU_LIB_COUNTER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <percpu/counter.h>

#include "base/misuse.h"
#include "registry/registry.h"

/*
 * The counter's fold sequence [seq-read], read inside the far path of a
 * limited add. Its layout is not a stat line's: it is a uint32_t of the
 * public struct, and the far path's restartable sequence (arch/) masks it
 * with COUNTER_SEQ_GEN - 1, folds and gate together:
 *   bits 0-14   folds in flight (a fold changes a slot, then count), and
 *               threshold raises in flight (pcpu_fold_publish())
 *   bit  15     the gate: a limited add is deciding precisely, or did and
 *               found the limit near; the far path stays out while it is set
 *   bits 16-31  generation: folds completed, modulo 2^16
 * The far path reads it, then count, the bound and its slot, then it
 * again, inside one restartable sequence: equal words with the low 16 bits
 * clear mean that nothing it read was half changed by a fold, the bound
 * covered every threshold in force, and no precise decision was under way.
 * (The generation could only wrap between the two reads if 65536 folds
 * completed while the sequence ran unpreempted: a few nanoseconds, unless
 * a hypervisor stalls the virtual CPU for milliseconds at that very point
 * while folds run elsewhere, and then only exactly 65536 of them.)
 */
#define COUNTER_SEQ_FOLD 1u
#define COUNTER_SEQ_GATE (1u << 15)
#define COUNTER_SEQ_GEN_SHIFT 16
#define COUNTER_SEQ_GEN (1u << COUNTER_SEQ_GEN_SHIFT)
#define COUNTER_SEQ_FOLDS (COUNTER_SEQ_GATE - 1) /* the field of folds in flight */

/*
 * A test hook, in the suite's internal library only (PCPU_TEST_HOOKS):
 * called by a folding walk (fold_all()) after it took CPU @cpu's pending
 * delta, before it credits it (test/counter/test_walk_budget.c).
 */
extern void (*pcpu_counter_debug_walk_hook)(struct pcpu_counter *c, unsigned int cpu);

/* The counters' operations for the registry. */
extern const struct pcpu_class pcpu_counter_class;

static inline bool pcpu_counter_usable(const struct pcpu_counter *c, const char *call)
{
	if (pcpu_likely(c && __atomic_load_n(&c->slots, __ATOMIC_RELAXED)))
		return true;
	if (c && (__atomic_load_n(&c->flags, __ATOMIC_RELAXED) & PCPU_COUNTER_F_STATIC))
		return false; /* not set up yet: the caller's exact answer from base */
	pcpu_misuse(call, c ? "counter not initialised (or destroyed)" : "NULL counter");
	return false;
}

/*
 * A counter of PCPU_COUNTER_INITIALIZER() (not destroyed). While
 * pcpu_counter_usable() finds no slots, its value is base (= central),
 * exactly: nothing adds to slots before they are published.
 */
static inline bool pcpu_counter_is_static(const struct pcpu_counter *c)
{
	return c && (__atomic_load_n(&c->flags, __ATOMIC_RELAXED) & PCPU_COUNTER_F_STATIC);
}

/*
 * Sets up a counter of PCPU_COUNTER_INITIALIZER() with the default options,
 * once, whichever thread comes first (counter.c). @return 0 (set up, now or
 * before), or -ENOMEM: it stays unset, and its value is base.
 */
int pcpu_counter_setup_static(struct pcpu_counter *c);

/* Adds @amount to the exact and the central value together (counter.c). */
void pcpu_counter_add_central(struct pcpu_counter *c, int64_t amount);

/* Folds CPU @cpu's pending delta (nothing for a negative @cpu). */
void pcpu_counter_fold_cpu(struct pcpu_counter *c, int cpu);

/* In a forked child: the limited adds' locks, which another thread may have held. */
void pcpu_counter_limited_fork_child(void);

/* The lock that serialises @c's precise limited adds (limit_locks.c). */
pthread_mutex_t *pcpu_counter_limit_lock(const struct pcpu_counter *c);

#endif /* PCPU_LIB_COUNTER_INTERNAL_H */
