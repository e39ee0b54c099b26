/* SPDX-License-Identifier: MIT */
/*
 * Leaf locks at fork(): objects of the metrics library (a sparse
 * histogram's, sparse.c) whose lock a scrape takes under the metrics lock
 * and other threads take under no lock of the fork handlers'. So the core's
 * per-object handlers, which run before the metrics lock is taken, cannot
 * take it (a scrape holding the metrics lock and waiting for it would
 * meet fork() holding it and waiting for the metrics lock); the metrics
 * lock's own handlers take every leaf's after the metrics lock and the
 * exemplar lock (pcpu_fork_leaves_prepare()), release them in the parent
 * and have each leaf remake its locks in the child.
 *
 * The list has a mutex of its own, taken after the metrics lock at fork
 * and under no lock of the library's elsewhere (a leaf joins and leaves
 * with nothing held but what its caller holds, never a leaf's lock), so
 * the order is: metrics lock, exemplar lock, the list's mutex, each
 * leaf's lock.
 */
#include <pthread.h>

#include "list/list_internal.h"

static pthread_mutex_t leaves_lock = PTHREAD_MUTEX_INITIALIZER;
static CDS_LIST_HEAD(leaves);

void pcpu_fork_leaf_add(struct pcpu_fork_leaf *l)
{
	pthread_mutex_lock(&leaves_lock);
	cds_list_add_tail(&l->link, &leaves);
	pthread_mutex_unlock(&leaves_lock);
}

void pcpu_fork_leaf_remove(struct pcpu_fork_leaf *l)
{
	pthread_mutex_lock(&leaves_lock);
	cds_list_del(&l->link);
	pthread_mutex_unlock(&leaves_lock);
}

void pcpu_fork_leaves_prepare(void)
{
	struct pcpu_fork_leaf *l;

	pthread_mutex_lock(&leaves_lock);
	cds_list_for_each_entry(l, &leaves, link)
		l->ops->prepare(l);
}

void pcpu_fork_leaves_parent(void)
{
	struct pcpu_fork_leaf *l;

	cds_list_for_each_entry(l, &leaves, link)
		l->ops->parent(l);
	pthread_mutex_unlock(&leaves_lock);
}

/* In the child (one thread): the list's mutex and every leaf's locks anew. */
void pcpu_fork_leaves_child(void)
{
	struct pcpu_fork_leaf *l;

	pthread_mutex_init(&leaves_lock, NULL);
	cds_list_for_each_entry(l, &leaves, link)
		l->ops->child(l);
}
