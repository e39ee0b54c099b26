/* SPDX-License-Identifier: MIT */
/*
 * The registry of live counters and stat sets, and the refresher (see
 * registry.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include <urcu-bp.h>
#include <urcu/rculist.h>

#include <percpu/registry.h>

#include "counter_internal.h"
#include "registry.h"
#include "stat_internal.h"

_Static_assert(sizeof(struct cds_list_head) == sizeof(((struct pcpu_counter *)0)->registry_node),
	       "registry_node must hold a cds_list_head");

static CDS_LIST_HEAD(live);
static size_t live_count;
static CDS_LIST_HEAD(live_sets);
static size_t live_set_count;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

static struct cds_list_head *node_of(struct pcpu_counter *c)
{
	return (struct cds_list_head *)(void *)c->registry_node;
}

static struct pcpu_counter *counter_of(struct cds_list_head *node)
{
	return (struct pcpu_counter *)(void *)((char *)node -
					       offsetof(struct pcpu_counter, registry_node));
}

/*
 * Fork: the child must not inherit a held lock, a half-done grace period or
 * a half-done fold. The list cannot change while the lock is held. Stat sets
 * drain their folds after urcu's own preparation: that waits for a grace
 * period in progress, which may be waiting for a refresher that is itself
 * waiting for a frozen line to thaw.
 */
static void before_fork(void)
{
	struct cds_list_head *pos;

	pthread_mutex_lock(&registry_lock);
	urcu_bp_before_fork();
	cds_list_for_each(pos, &live_sets)
		pcpu_stat_fork_prepare(pos);
}

static void after_fork_parent(void)
{
	struct cds_list_head *pos;

	cds_list_for_each(pos, &live_sets)
		pcpu_stat_fork_parent(pos);
	urcu_bp_after_fork_parent();
	pthread_mutex_unlock(&registry_lock);
}

static void after_fork_child(void)
{
	struct cds_list_head *pos;

	urcu_bp_after_fork_child();
	/* single-threaded now */
	cds_list_for_each(pos, &live)
		pcpu_counter_after_fork(counter_of(pos));
	pcpu_counter_after_fork_locks();
	cds_list_for_each(pos, &live_sets)
		pcpu_stat_fork_child(pos);
	pthread_mutex_unlock(&registry_lock);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void register_atfork(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

void pcpu_registry_add(struct pcpu_counter *c)
{
	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&registry_lock);
	cds_list_add_rcu(node_of(c), &live);
	live_count++;
	pthread_mutex_unlock(&registry_lock);
}

void pcpu_registry_remove(struct pcpu_counter *const *cs, size_t n)
{
	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; i < n; i++) {
		cds_list_del_rcu(node_of(cs[i]));
		live_count--;
	}
	pthread_mutex_unlock(&registry_lock);
	urcu_bp_synchronize_rcu();
}

void pcpu_registry_add_set(struct cds_list_head *node)
{
	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&registry_lock);
	cds_list_add_rcu(node, &live_sets);
	live_set_count++;
	pthread_mutex_unlock(&registry_lock);
}

void pcpu_registry_remove_set(struct cds_list_head *node)
{
	pthread_mutex_lock(&registry_lock);
	cds_list_del_rcu(node);
	live_set_count--;
	pthread_mutex_unlock(&registry_lock);
	urcu_bp_synchronize_rcu();
}

size_t pcpu_registry_set_count(void)
{
	size_t n;

	pthread_mutex_lock(&registry_lock);
	n = live_set_count;
	pthread_mutex_unlock(&registry_lock);
	return n;
}

PCPU_EXPORT size_t pcpu_registry_count(void)
{
	size_t n;

	pthread_mutex_lock(&registry_lock);
	n = live_count;
	pthread_mutex_unlock(&registry_lock);
	return n;
}

PCPU_EXPORT void pcpu_registry_fold_all(void)
{
	struct cds_list_head *pos;

	urcu_bp_read_lock();
	cds_list_for_each_rcu(pos, &live) {
		struct pcpu_counter *c = counter_of(pos);

		/* init stored slots last, with release: fold only what is ready */
		if (__atomic_load_n(&c->slots, __ATOMIC_ACQUIRE))
			pcpu_counter_fold_all(c);
	}
	cds_list_for_each_rcu(pos, &live_sets)
		pcpu_stat_fold_node(pos);
	urcu_bp_read_unlock();
}

/* The refresher thread. */
static pthread_t refresher;
static bool refresher_running;
static bool refresher_stopping;
static unsigned int refresher_interval_ms;
static pthread_mutex_t refresher_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t refresher_wake = PTHREAD_COND_INITIALIZER;

static void *refresher_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&refresher_lock);
	while (!refresher_stopping) {
		struct timespec deadline;

		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += refresher_interval_ms / 1000;
		deadline.tv_nsec += (long)(refresher_interval_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&refresher_wake, &refresher_lock, &deadline);
		if (refresher_stopping)
			break;
		pthread_mutex_unlock(&refresher_lock);
		pcpu_registry_fold_all();
		pthread_mutex_lock(&refresher_lock);
	}
	pthread_mutex_unlock(&refresher_lock);
	return NULL;
}

PCPU_EXPORT int pcpu_refresher_start(unsigned int interval_ms)
{
	int err;

	if (interval_ms == 0 || interval_ms > 3600000u)
		return -EINVAL;
	pthread_mutex_lock(&refresher_lock);
	if (refresher_running) {
		pthread_mutex_unlock(&refresher_lock);
		return -EBUSY;
	}
	refresher_interval_ms = interval_ms;
	refresher_stopping = false;
	err = pthread_create(&refresher, NULL, refresher_main, NULL);
	refresher_running = err == 0;
	pthread_mutex_unlock(&refresher_lock);
	return -err;
}

PCPU_EXPORT void pcpu_refresher_stop(void)
{
	pthread_mutex_lock(&refresher_lock);
	if (!refresher_running) {
		pthread_mutex_unlock(&refresher_lock);
		return;
	}
	refresher_stopping = true;
	pthread_cond_signal(&refresher_wake);
	pthread_mutex_unlock(&refresher_lock);
	pthread_join(refresher, NULL);
	pthread_mutex_lock(&refresher_lock);
	refresher_running = false;
	pthread_mutex_unlock(&refresher_lock);
}
