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
 * dead entries in batches: every REAP_BATCH-th removal waits for one grace
 * period for the whole batch.
 */
#ifndef PCPU_LIB_REGISTRY_H
#define PCPU_LIB_REGISTRY_H

#include <stddef.h>

/* The operations of a class of registered objects. NULL: nothing to do. */
struct pcpu_class {
	/* Folds every CPU's pending deltas of @obj into its central values. */
	void (*fold)(void *obj);
	/*
	 * Around fork(), with the registry locked (a walker may still be
	 * folding @obj: the class's own state must cope, as the stat sets'
	 * line freeze does).
	 */
	void (*fork_prepare)(void *obj);
	void (*fork_parent)(void *obj);
	/* In the child, where only the forking thread is left. */
	void (*fork_child)(void *obj);
	/* In the child, once per class that has live objects, before them. */
	void (*fork_child_class)(void);
};

struct pcpu_registry_entry;

/*
 * The client of the live objects above the units (the metrics list): told
 * when an object that it may know goes, and around fork(). Set once, by the
 * client, before it can know any object; the registry knows nothing else
 * of it, so units and registry never include the client.
 */
struct pcpu_registry_client {
	/* @obj is going: forget it, waiting for any use of it in progress */
	void (*forget)(const void *obj);
	void (*fork_prepare)(void);
	void (*fork_parent)(void);
	void (*fork_child)(void);
};

void pcpu_registry_set_client(const struct pcpu_registry_client *client);

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
 * Registers @obj of class @cls (whose memory must stay valid until it is
 * removed). Returns its entry; NULL with errno ENOMEM.
 */
struct pcpu_registry_entry *pcpu_registry_add(const struct pcpu_class *cls, void *obj);

/*
 * Unregisters @e (NULL: nothing). When it returns, no walker uses the
 * object any more, and none will.
 */
void pcpu_registry_remove(struct pcpu_registry_entry *e);

/*
 * Frees the dead entries now, after one grace period (removal does it by
 * itself every REAP_BATCH entries). For leak checks, which would otherwise
 * see up to a batch of entries waiting.
 */
void pcpu_registry_reap(void);

/* Number of live objects of class @cls. */
size_t pcpu_registry_count_of(const struct pcpu_class *cls);

/*
 * In a forked child (the registry's fork handler calls it): the refresher's
 * lock and state made anew, IDLE, since its thread did not come along
 * (refresher.c).
 */
void pcpu_refresher_fork_child(void);

#endif /* PCPU_LIB_REGISTRY_H */
