/* SPDX-License-Identifier: MIT */
/*
 * The locks that serialise precise limited adds (counter_limited.c),
 * hashed by counter address, and their renewal in a forked child. Their own
 * file, below both users: the counter's class (counter.c) stores
 * pcpu_counter_limited_fork_child() for the registry's fork handler, and
 * the limited adds call the counter's sum(); neither names the other.
 */
#include <pthread.h>
#include <stdint.h>

#include "counter_internal.h"

#define LIMIT_LOCKS 64
static pthread_mutex_t limit_locks[LIMIT_LOCKS];
static pthread_once_t limit_locks_once = PTHREAD_ONCE_INIT;

static void init_limit_locks(void)
{
	for (int i = 0; i < LIMIT_LOCKS; i++)
		pthread_mutex_init(&limit_locks[i], NULL);
}

void pcpu_counter_limited_fork_child(void)
{
	init_limit_locks();
}

pthread_mutex_t *pcpu_counter_limit_lock(const struct pcpu_counter *c)
{
	pthread_once(&limit_locks_once, init_limit_locks);
	return &limit_locks[((uintptr_t)c >> 6) % LIMIT_LOCKS];
}
