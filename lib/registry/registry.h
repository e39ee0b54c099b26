/* SPDX-License-Identifier: MIT */
/*
 * The registry of live per-CPU objects, and the refresher that folds them
 * (see <percpu/registry.h>). It knows no concrete type: each class of
 * object (counters, stat sets) hands it a struct pcpu_class of operations,
 * as liburcu's call_rcu takes a callback. All fork handling of the library
 * is here, in one set of pthread_atfork handlers.
 *
 * Entries are library-owned and linked on an RCU list (liburcu, bulletproof
 * flavour, so walkers need no registration). Removal does not wait for a
 * grace period per call: it marks the entry dead, waits only for a walker
 * that is inside that object at that moment (one fold, O(CPUs)), and frees
 * dead entries in batches: a removal that finds REAP_BATCH dead entries,
 * and as many as live ones, waits for one grace period for them all (so a
 * mass removal takes a few grace periods, and the dead stay about as many
 * as the live).
 */
#ifndef PCPU_LIB_REGISTRY_H
#define PCPU_LIB_REGISTRY_H

#include <stddef.h>

#include <percpu/client.h>

/*
 * struct pcpu_class, struct pcpu_client, pcpu_client_set(),
 * pcpu_registry_add() and pcpu_registry_remove() are in <percpu/client.h>:
 * the client (libpercpu-metrics) uses them too.
 */

/* Tells the client that @obj goes (a unit calls it before freeing @obj). */
void pcpu_registry_forget(const void *obj);

/*
 * Installs the library's fork handlers, once (pthread_atfork() allocates:
 * 0 or -ENOMEM, and a later call tries again). Every initialiser calls it
 * before it allocates anything, so that no lock of the library (the
 * arena's among them) is ever held across a fork unhandled.
 */
int pcpu_registry_setup(void);

/*
 * Frees the dead entries now, after one grace period (removal does it by
 * itself, as above). For leak checks, which would otherwise see entries
 * waiting.
 */
void pcpu_registry_reap(void);

/* Number of live objects of class @cls. */
size_t pcpu_registry_count_of(const struct pcpu_class *cls);

/*
 * Has the registry's fork handler call @fn in a forked child, after the
 * classes (one function: the refresher's, which makes its lock and state
 * anew, IDLE, since its thread did not come along). The refresher is a
 * client of the registry: the registry does not know it by name.
 */
void pcpu_registry_on_fork_child(void (*fn)(void));

#endif /* PCPU_LIB_REGISTRY_H */
