/* SPDX-License-Identifier: MIT */
/*
 * The metrics lock, and the metrics library as the core's client
 * (<percpu/client.h>): the core's fork handlers take and remake the lock,
 * and tell the list (metrics_list.c) when an object it describes goes. Below
 * the list and the collectors, which both take the lock: it names neither.
 * Their functions come down at run time (the list's forget through
 * pcpu_metrics_on_forget(), the collectors' fork_child through
 * pcpu_metrics_on_fork_child()).
 */
#include <errno.h>
#include <pthread.h>

#include <percpu/client.h>
#include <percpu/metrics.h>

#include "list/list_internal.h"

static pthread_mutex_t metrics_lock = PTHREAD_MUTEX_INITIALIZER;

/* pcpu_metrics_on_forget()'s function, or NULL: no metric was registered */
static void (*on_forget)(const void *obj);

void pcpu_metrics_on_forget(void (*fn)(const void *obj))
{
	__atomic_store_n(&on_forget, fn, __ATOMIC_RELEASE);
}

/*
 * An object the core destroys: the list forgets its metrics. Set before
 * the first metric is registered, so an object with metrics never finds
 * it NULL.
 */
static void metrics_forget(const void *obj)
{
	void (*fn)(const void *obj) = __atomic_load_n(&on_forget, __ATOMIC_ACQUIRE);

	if (fn)
		fn(obj);
}

/*
 * A fork must not leave the child with the lock held by a vanished thread:
 * the registry's fork handlers, the library's only ones, call these.
 */
static const struct pcpu_client metrics_client = {
	.forget = metrics_forget,
	.fork_prepare = pcpu_metrics_fork_prepare,
	.fork_parent = pcpu_metrics_fork_parent,
	.fork_child = pcpu_metrics_fork_child,
};

/* before any metric exists, and before any fork() can find the lock held */
__attribute__((constructor)) static void metrics_client_setup(void)
{
	/* -ENOMEM leaves the handlers to pcpu_metrics_add(), which retries */
	(void)pcpu_client_set(&metrics_client);
}

int pcpu_metrics_client_setup(void)
{
	return pcpu_client_set(&metrics_client) != 0 ? -ENOMEM : 0;
}

void pcpu_metrics_lock(void)
{
	pthread_mutex_lock(&metrics_lock);
}

void pcpu_metrics_unlock(void)
{
	pthread_mutex_unlock(&metrics_lock);
}

void pcpu_metrics_fork_prepare(void)
{
	pthread_mutex_lock(&metrics_lock);
	/* after the metrics lock, as a scrape takes it (exemplar.c) */
	pcpu_exemplars_fork_prepare();
	/* then the leaf locks: a sparse histogram's (fork_leaves.c) */
	pcpu_fork_leaves_prepare();
}

void pcpu_metrics_fork_parent(void)
{
	pcpu_fork_leaves_parent();
	pcpu_exemplars_fork_parent();
	pthread_mutex_unlock(&metrics_lock);
}

/* pcpu_metrics_on_fork_child()'s function, or NULL */
static void (*on_fork_child)(void);

void pcpu_metrics_on_fork_child(void (*fn)(void))
{
	__atomic_store_n(&on_fork_child, fn, __ATOMIC_RELEASE);
}

void pcpu_metrics_fork_child(void)
{
	pthread_mutex_init(&metrics_lock, NULL);
	pcpu_exemplars_fork_child();
	pcpu_fork_leaves_child();
	if (on_fork_child)
		on_fork_child();
}

void pcpu_metrics_wait(pthread_cond_t *cv)
{
	pthread_cond_wait(cv, &metrics_lock);
}
