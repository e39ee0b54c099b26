/* SPDX-License-Identifier: MIT */
/*
 * The refresher (see <percpu/registry.h>): a thread that folds every
 * registered object every interval, through the registry's walk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include <percpu/registry.h>

#include "registry.h"

/*
 * The refresher thread. Its state machine, under refresher_lock:
 * IDLE -> (start) RUNNING -> (stop) STOPPING -> (joined) IDLE. A second
 * stop while one is joining waits for IDLE instead of joining twice. It
 * sleeps on CLOCK_MONOTONIC, so a change of the wall clock neither stalls
 * nor hurries it. A fork leaves the child IDLE: threads do not survive it.
 */
enum refresher_state { IDLE, RUNNING, STOPPING };

static pthread_t refresher;
static enum refresher_state refresher_state;
static unsigned int refresher_interval_ms;
static pthread_mutex_t refresher_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t refresher_wake;   /* to the refresher: stop now */
static pthread_cond_t refresher_idle;   /* to stoppers: it is joined */
static pthread_once_t refresher_once = PTHREAD_ONCE_INIT;

static void refresher_fork_child(void);

/* Once, before the first start or stop: a fork from then on remakes us. */
static void init_refresher_conds(void)
{
	pthread_condattr_t attr;

	pcpu_registry_on_fork_child(refresher_fork_child);

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&refresher_wake, &attr);
	pthread_condattr_destroy(&attr);
	pthread_cond_init(&refresher_idle, NULL);
}

/* In a forked child: the lock and state anew, IDLE (the thread is gone). */
static void refresher_fork_child(void)
{
	pthread_mutex_init(&refresher_lock, NULL);
	refresher_state = IDLE;
	init_refresher_conds();
}

static void deadline_after(struct timespec *t, unsigned int ms)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_sec += ms / 1000;
	t->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static void *refresher_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&refresher_lock);
	while (refresher_state == RUNNING) {
		struct timespec deadline;

		deadline_after(&deadline, refresher_interval_ms);
		while (refresher_state == RUNNING &&
		       pthread_cond_timedwait(&refresher_wake, &refresher_lock, &deadline) == 0)
			;
		if (refresher_state != RUNNING)
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
	pthread_once(&refresher_once, init_refresher_conds);
	pthread_mutex_lock(&refresher_lock);
	if (refresher_state != IDLE) {
		pthread_mutex_unlock(&refresher_lock);
		return -EBUSY;
	}
	refresher_interval_ms = interval_ms;
	refresher_state = RUNNING;
	err = pthread_create(&refresher, NULL, refresher_main, NULL);
	if (err)
		refresher_state = IDLE;
	pthread_mutex_unlock(&refresher_lock);
	return -err;
}

PCPU_EXPORT void pcpu_refresher_stop(void)
{
	pthread_once(&refresher_once, init_refresher_conds);
	pthread_mutex_lock(&refresher_lock);
	if (refresher_state == STOPPING) {
		while (refresher_state != IDLE)
			pthread_cond_wait(&refresher_idle, &refresher_lock);
		pthread_mutex_unlock(&refresher_lock);
		return;
	}
	if (refresher_state == IDLE) {
		pthread_mutex_unlock(&refresher_lock);
		return;
	}
	refresher_state = STOPPING;
	pthread_cond_signal(&refresher_wake);
	pthread_mutex_unlock(&refresher_lock);
	pthread_join(refresher, NULL);
	pthread_mutex_lock(&refresher_lock);
	refresher_state = IDLE;
	pthread_cond_broadcast(&refresher_idle);
	pthread_mutex_unlock(&refresher_lock);
}
