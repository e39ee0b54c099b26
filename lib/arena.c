/* SPDX-License-Identifier: MIT */
/*
 * The per-CPU arena (see arena.h). Chunks are mapped lazily
 * (MAP_NORESERVE): a CPU that never runs a thread never touches its pages.
 * With libnuma, each CPU's stride is bound to that CPU's node before it is
 * first touched. Slots are handed out first-fit from a bitmap per chunk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef PCPU_HAVE_NUMA
#include <numa.h>
#endif

#include <percpu/cpu.h>

#include "arena.h"
#include "cpu_internal.h"

#define UNITS_PER_CHUNK (PCPU_STRIDE / PCPU_ARENA_UNIT)
#define WORD_BITS 64

struct chunk {
	char *base;
	size_t bytes;
	uint64_t used[UNITS_PER_CHUNK / WORD_BITS];
	struct chunk *next;
};

static struct chunk *chunks;
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static long fail_after = -1;

/* A fork while another thread holds the lock must not leave it held. */
void pcpu_arena_fork_prepare(void)
{
	pthread_mutex_lock(&arena_lock);
}

void pcpu_arena_fork_parent(void)
{
	pthread_mutex_unlock(&arena_lock);
}

void pcpu_arena_fork_child(void)
{
	pthread_mutex_init(&arena_lock, NULL);
}

static bool unit_used(const struct chunk *ch, size_t unit)
{
	return ch->used[unit / WORD_BITS] & (UINT64_C(1) << (unit % WORD_BITS));
}

static void mark_units(struct chunk *ch, size_t first, size_t n, bool used)
{
	for (size_t u = first; u < first + n; u++) {
		uint64_t bit = UINT64_C(1) << (u % WORD_BITS);

		if (used)
			ch->used[u / WORD_BITS] |= bit;
		else
			ch->used[u / WORD_BITS] &= ~bit;
	}
}

/* First run of @n free units in @ch, or -1. */
static long find_free_run(const struct chunk *ch, size_t n)
{
	size_t run = 0;

	for (size_t u = 0; u < UNITS_PER_CHUNK; u++) {
		run = unit_used(ch, u) ? 0 : run + 1;
		if (run == n)
			return (long)(u + 1 - n);
	}
	return -1;
}

static void bind_strides_to_nodes(char *base, unsigned int cpus)
{
#ifdef PCPU_HAVE_NUMA
	if (numa_available() < 0)
		return;
	for (unsigned int cpu = 0; cpu < cpus; cpu++) {
		int node = numa_node_of_cpu((int)cpu);

		if (node >= 0)
			numa_tonode_memory(base + (size_t)cpu * PCPU_STRIDE, PCPU_STRIDE, node);
	}
#else
	(void)base;
	(void)cpus;
#endif
}

static struct chunk *new_chunk(void)
{
	unsigned int cpus = cpu_possible();
	struct chunk *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->bytes = (size_t)cpus * PCPU_STRIDE;
	ch->base = mmap(NULL, ch->bytes, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (ch->base == MAP_FAILED) {
		free(ch);
		return NULL;
	}
	bind_strides_to_nodes(ch->base, cpus);
	ch->next = chunks;
	chunks = ch;
	return ch;
}

void *pcpu_arena_alloc(size_t size)
{
	size_t units = (size + PCPU_ARENA_UNIT - 1) / PCPU_ARENA_UNIT;
	unsigned int cpus = cpu_possible();
	struct chunk *ch;
	long first = -1;
	char *cpu0;

	if (size == 0 || size > PCPU_STRIDE) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&arena_lock);
	if (fail_after == 0) {
		pthread_mutex_unlock(&arena_lock);
		errno = ENOMEM;
		return NULL;
	}
	for (ch = chunks; ch; ch = ch->next) {
		first = find_free_run(ch, units);
		if (first >= 0)
			break;
	}
	if (!ch) {
		ch = new_chunk();
		first = 0;
	}
	if (!ch) {
		pthread_mutex_unlock(&arena_lock);
		errno = ENOMEM;
		return NULL;
	}
	mark_units(ch, (size_t)first, units, true);
	if (fail_after > 0)
		fail_after--;
	pthread_mutex_unlock(&arena_lock);

	cpu0 = ch->base + (size_t)first * PCPU_ARENA_UNIT;
	for (unsigned int cpu = 0; cpu < cpus; cpu++)
		memset(cpu0 + (size_t)cpu * PCPU_STRIDE, 0, size);
	return cpu0;
}

void pcpu_arena_free(void *cpu0, size_t size)
{
	size_t units = (size + PCPU_ARENA_UNIT - 1) / PCPU_ARENA_UNIT;
	char *p = cpu0;

	if (!p)
		return;
	pthread_mutex_lock(&arena_lock);
	for (struct chunk *ch = chunks; ch; ch = ch->next) {
		if (p >= ch->base && p < ch->base + PCPU_STRIDE) {
			mark_units(ch, (size_t)(p - ch->base) / PCPU_ARENA_UNIT, units, false);
			break;
		}
	}
	pthread_mutex_unlock(&arena_lock);
}

void pcpu_arena_fail_after(long successes)
{
	pthread_mutex_lock(&arena_lock);
	fail_after = successes < 0 ? -1 : successes;
	pthread_mutex_unlock(&arena_lock);
}
