/* SPDX-License-Identifier: MIT */
/*
 * The registry of live objects and the library's fork handlers (see
 * registry.h and <percpu/registry.h>); the refresher, which walks it, is
 * in refresher.c.
 *
 * A walker and a remover meet on an entry like this (Dekker, seq_cst):
 *   walker:  walkers++;  if (obj) fold(obj);  walkers--
 *   remover: obj = NULL; wait until walkers == 0
 * Either the walker sees NULL, or the remover sees it inside and waits for
 * one fold. The entry itself may still be on a walker's path through the
 * list, so it is freed only after a grace period: dead entries wait in a
 * graveyard, reaped with one grace period for all once it holds REAP_BATCH
 * entries and as many as the live list (pcpu_registry_remove()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include <urcu-bp.h>
#include <urcu/rculist.h>

#include <percpu/registry.h>

#include "arena/arena.h"
#include "base/atomics.h"
#include "base/cpu_internal.h"
#include "base/pair.h"
#include "registry.h"
#include "base/slot_owner.h"

/* Dead entries freed together after one grace period. */
#define REAP_BATCH 64
/* Classes of objects (counters, stat sets, ...). */
#define MAX_CLASSES 8

struct pcpu_registry_entry {
	struct cds_list_head link;
	const struct pcpu_class *cls;
	void *obj;                 /* NULL once removed */
	unsigned int walkers;      /* walkers inside obj now */
	struct pcpu_registry_entry *next_dead;
};

struct class_tally {
	const struct pcpu_class *cls;
	size_t live;
};

static CDS_LIST_HEAD(live);
static struct class_tally classes[MAX_CLASSES];
static struct pcpu_registry_entry *graveyard;
static unsigned int graveyard_size;
static bool atfork_registered;
/* The client (<percpu/client.h>), or NULL. */
static const struct pcpu_client *client;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
/* the refresher's fork_child (pcpu_registry_on_fork_child()), or NULL */
static void (*on_fork_child)(void);


/* The tally of @cls (its live objects), taken if new; under the lock. */
static struct class_tally *tally_of(const struct pcpu_class *cls)
{
	for (unsigned int i = 0; i < MAX_CLASSES; i++) {
		if (classes[i].cls == cls || !classes[i].cls) {
			classes[i].cls = cls;
			return &classes[i];
		}
	}
	abort(); /* more classes than the library has: a bug here */
}

/* Entries on the live list, all classes; under the lock. */
static size_t live_entries(void)
{
	size_t n = 0;

	for (unsigned int i = 0; i < MAX_CLASSES; i++)
		n += classes[i].live;
	return n;
}

static void free_entries(struct pcpu_registry_entry *e)
{
	while (e) {
		struct pcpu_registry_entry *next = e->next_dead;

		free(e);
		e = next;
	}
}

/* Empties the graveyard and returns what it held; under the lock. */
static struct pcpu_registry_entry *take_graveyard(void)
{
	struct pcpu_registry_entry *dead = graveyard;

	graveyard = NULL;
	graveyard_size = 0;
	return dead;
}

/* Frees @dead once no walker can be on its way through any of them. */
static void free_after_grace_period(struct pcpu_registry_entry *dead)
{
	urcu_bp_synchronize_rcu();
	free_entries(dead);
}

/* Folds every live object, as pcpu_registry_fold_all() says. */
static void registry_walk(void)
{
	struct pcpu_registry_entry *e;

	urcu_bp_read_lock();
	cds_list_for_each_entry_rcu(e, &live, link) {
		void *obj;

		__atomic_fetch_add(&e->walkers, 1, __ATOMIC_SEQ_CST);
		obj = __atomic_load_n(&e->obj, __ATOMIC_SEQ_CST);
		if (obj && e->cls->fold)
			e->cls->fold(obj);
		__atomic_fetch_sub(&e->walkers, 1, __ATOMIC_RELEASE);
	}
	urcu_bp_read_unlock();
}

/*
 * Fork: the child must not inherit a held lock, a half-done grace period,
 * a walker count of a vanished thread or a half-done fold. The list cannot
 * change while the lock is held. Objects prepare after urcu's own
 * preparation: that waits for a grace period in progress, which may be
 * waiting for a refresher that is itself waiting for a stat-set line an
 * object's preparation froze.
 */
static void before_fork(void)
{
	struct pcpu_registry_entry *e;

	pthread_mutex_lock(&registry_lock);
	urcu_bp_before_fork();
	cds_list_for_each_entry(e, &live, link)
		if (e->obj && e->cls->fork_prepare)
			e->cls->fork_prepare(e->obj);
	pcpu_arena_fork_prepare();
	if (client)
		client->fork_prepare();
	pcpu_pair_fork_prepare(); /* last: see lib/base/pair.h */
}

static void after_fork_parent(void)
{
	struct pcpu_registry_entry *e;

	pcpu_pair_fork_release();
	if (client)
		client->fork_parent();
	pcpu_arena_fork_parent();
	cds_list_for_each_entry(e, &live, link)
		if (e->obj && e->cls->fork_parent)
			e->cls->fork_parent(e->obj);
	urcu_bp_after_fork_parent();
	pthread_mutex_unlock(&registry_lock);
}

/*
 * In the child. Locks that the handlers did not take before fork (the
 * refresher's, the limited adds' table) are made anew: only this thread is
 * left, and what they protect is rebuilt or reset here (the refresher is
 * IDLE, a counter's central value is rebuilt from its slots).
 */
static void after_fork_child(void)
{
	struct pcpu_registry_entry *e, *next;

	/* single-threaded now: no walker, no reader of the graveyard */
	pcpu_pair_fork_release();
	pcpu_slot_owner_fork_child();
	if (client)
		client->fork_child();
	pcpu_arena_fork_child();
	urcu_bp_after_fork_child();
	cds_list_for_each_entry_safe(e, next, &live, link) {
		STORE(&e->walkers, 0);
		if (!e->obj) {
			/* a removal the fork interrupted: its thread is gone, finish it */
			cds_list_del(&e->link);
			tally_of(e->cls)->live--;
			free(e);
		}
	}
	for (unsigned int i = 0; i < MAX_CLASSES; i++)
		if (classes[i].cls && classes[i].live && classes[i].cls->fork_child_class)
			classes[i].cls->fork_child_class();
	cds_list_for_each_entry(e, &live, link)
		if (e->cls->fork_child)
			e->cls->fork_child(e->obj);
	free_entries(take_graveyard()); /* no walker is left to wait for */
	if (on_fork_child)
		on_fork_child();
	pthread_mutex_init(&registry_lock, NULL);
}

void pcpu_registry_on_fork_child(void (*fn)(void))
{
	__atomic_store_n(&on_fork_child, fn, __ATOMIC_RELEASE);
}

int pcpu_registry_setup(void)
{
	int err = 0;

	pthread_mutex_lock(&registry_lock);
	if (!atfork_registered) {
		err = pthread_atfork(before_fork, after_fork_parent, after_fork_child);
		atfork_registered = err == 0;
	}
	pthread_mutex_unlock(&registry_lock);
	return err ? -ENOMEM : 0;
}

PCPU_EXPORT struct pcpu_registry_entry *pcpu_registry_add(const struct pcpu_class *cls,
							 void *obj)
{
	struct pcpu_registry_entry *e;

	if (pcpu_registry_setup() != 0) {
		errno = ENOMEM;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	e->cls = cls;
	e->obj = obj;
	pthread_mutex_lock(&registry_lock);
	tally_of(cls)->live++;
	cds_list_add_rcu(&e->link, &live);
	pthread_mutex_unlock(&registry_lock);
	return e;
}

PCPU_EXPORT void pcpu_registry_remove(struct pcpu_registry_entry *e)
{
	struct pcpu_registry_entry *reap = NULL;
	unsigned int spins = 0;

	if (!e)
		return;
	/* under the lock: the fork handlers must see one obj from prepare to parent */
	pthread_mutex_lock(&registry_lock);
	__atomic_store_n(&e->obj, NULL, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&registry_lock);
	while (__atomic_load_n(&e->walkers, __ATOMIC_SEQ_CST))
		pcpu_relax(&spins);
	pthread_mutex_lock(&registry_lock);
	cds_list_del_rcu(&e->link);
	tally_of(e->cls)->live--;
	e->next_dead = graveyard;
	graveyard = e;
	/*
	 * One grace period per REAP_BATCH removals at least, and per as many
	 * removals as there are live entries: a mass removal (a family's
	 * reclaim) waits for a few grace periods, not one per 64 objects,
	 * and the dead entries never outnumber the live ones by much.
	 */
	if (++graveyard_size >= REAP_BATCH && graveyard_size >= live_entries())
		reap = take_graveyard();
	pthread_mutex_unlock(&registry_lock);
	if (reap)
		free_after_grace_period(reap);
}

void pcpu_registry_reap(void)
{
	struct pcpu_registry_entry *reap;

	pthread_mutex_lock(&registry_lock);
	reap = take_graveyard();
	pthread_mutex_unlock(&registry_lock);
	free_after_grace_period(reap);
}

size_t pcpu_registry_count_of(const struct pcpu_class *cls)
{
	size_t n;

	pthread_mutex_lock(&registry_lock);
	n = tally_of(cls)->live;
	pthread_mutex_unlock(&registry_lock);
	return n;
}

PCPU_EXPORT int pcpu_client_set(const struct pcpu_client *c)
{
	const struct pcpu_client *none = NULL;

	if (!c)
		return -EINVAL;
	if (!__atomic_compare_exchange_n(&client, &none, c, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE) && none != c)
		return -EBUSY;
	return pcpu_registry_setup() ? -ENOMEM : 0;
}

void pcpu_registry_forget(const void *obj)
{
	const struct pcpu_client *c = __atomic_load_n(&client, __ATOMIC_ACQUIRE);

	if (c)
		c->forget(obj);
}

PCPU_EXPORT void pcpu_registry_fold_all(void)
{
	registry_walk();
}
