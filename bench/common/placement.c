/* SPDX-License-Identifier: MIT */
/* Counters placed clear of rseq_cs (see placement.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/cpu.h>

#include "placement.h"

#define PAGE 4096u
#define LINE 64u
#define TRIES 8 /* counters made to move one's slots past an aliased line */

static unsigned int cs_offsets[2], nr_cs_offsets;
static pthread_once_t cs_once = PTHREAD_ONCE_INIT;

#if PCPU_ARCH_HAVE_RSEQ_ADD && PCPU_ARCH_HAVE_THREAD_POINTER
static unsigned int this_thread_cs(void)
{
	return (unsigned int)(((uintptr_t)__builtin_thread_pointer() +
			       (uintptr_t)__pcpu_rseq_offset + PCPU_RSEQ_CS_OFFSET) % PAGE);
}

static void *record_cs(void *arg)
{
	*(unsigned int *)arg = this_thread_cs();
	return NULL;
}
#endif

/*
 * The main thread's and a created thread's: glibc places every created
 * thread's area at the same page offset (its descriptor ends its stack),
 * the main thread's elsewhere.
 */
static void find_cs(void)
{
#if PCPU_ARCH_HAVE_RSEQ_ADD && PCPU_ARCH_HAVE_THREAD_POINTER
	pthread_t t;

	if (pcpu_cpu_setup() != PCPU_CPU_RSEQ)
		return;
	cs_offsets[nr_cs_offsets++] = this_thread_cs();
	if (pthread_create(&t, NULL, record_cs, &cs_offsets[1]) == 0 &&
	    pthread_join(t, NULL) == 0)
		nr_cs_offsets++;
#endif
}

unsigned int bench_rseq_cs_offsets(unsigned int offsets[2])
{
	pthread_once(&cs_once, find_cs);
	memcpy(offsets, cs_offsets, sizeof(cs_offsets));
	return nr_cs_offsets;
}

bool bench_clear_of_rseq(const void *p, size_t size)
{
	unsigned int cs[2], n = bench_rseq_cs_offsets(cs);
	unsigned int start = (unsigned int)((uintptr_t)p % PAGE);

	for (unsigned int i = 0; i < n; i++) {
		/* where the 8-byte word lies after the object's start, modulo the page */
		unsigned int after = (cs[i] + PAGE - start) % PAGE;

		if (size + 2 * LINE + 8 > PAGE || after < size + LINE || after > PAGE - LINE - 8)
			return false;
	}
	return true;
}

/* In a page-aligned block: the block's start is the pointer's page. */
void *bench_alloc_clear_of_rseq(size_t size, size_t hot)
{
	size_t total = (PAGE + size + PAGE - 1) / PAGE * PAGE;
	char *base = aligned_alloc(PAGE, total);
	size_t offset = 0;

	if (!base)
		return NULL;
	memset(base, 0, total);
	while (offset + LINE < PAGE && !bench_clear_of_rseq(base + offset, hot))
		offset += LINE;
	return base + offset;
}

void bench_free_clear(void *p)
{
	if (p)
		free((void *)((uintptr_t)p / PAGE * PAGE));
}

struct pcpu_counter *bench_percpu_new(int64_t value)
{
	struct pcpu_counter *blockers[TRIES], *c = NULL;
	unsigned int nr_blockers = 0;

	/* the arena hands out slots in turn: keep aliased ones taken until one is clear */
	for (int i = 0; i < TRIES; i++) {
		int err;

		c = bench_alloc_clear_of_rseq(sizeof(*c), sizeof(*c));
		if (!c)
			break;
		err = pcpu_counter_init(c, value);
		if (err) {
			bench_free_clear(c);
			c = NULL;
			errno = -err;
			break;
		}
		if (i == TRIES - 1 || bench_clear_of_rseq(c->slots, sizeof(*c->slots)))
			break;
		blockers[nr_blockers++] = c;
		c = NULL;
	}
	while (nr_blockers)
		bench_percpu_free(blockers[--nr_blockers]);
	return c;
}

void bench_percpu_free(struct pcpu_counter *c)
{
	if (c) {
		pcpu_counter_destroy(c);
		bench_free_clear(c);
	}
}
