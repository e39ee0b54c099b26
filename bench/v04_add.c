/* SPDX-License-Identifier: MIT */
/*
 * The vendored 0.4 add's counter (see v04_add.h): per-CPU armed {value,
 * mark} slots a 4 KiB stride apart (the mark stored plus 2^63, a zero slot
 * not armed: its first add fails the check and arms it here), the elastic
 * threshold of the policy (|central| / (64 x possible CPUs), at least 32),
 * and a slow path that adds to the base and folds the calling CPU's slot
 * by a compare-and-swap of its mark, which the rseq adds never write:
 * exact whatever the interleaving, and rare enough (once per threshold)
 * not to count.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdbool.h>

#include "placement.h"
#include "v04_add.h"

#if V04_HAVE_ADD

#define V04_STRIDE 4096
#define V04_ACCURACY 64
#define V04_FLOOR 32

static struct v04_slot *slot_of(const struct v04_counter *c, unsigned int cpu)
{
	return (struct v04_slot *)(void *)((char *)c->slots + (size_t)cpu * V04_STRIDE);
}

int v04_counter_init(struct v04_counter *c)
{
	*c = (struct v04_counter){ .threshold = V04_FLOOR, .threshold_max = V04_FLOOR,
				   .mode = PCPU_CPU_RSEQ };
	c->nr_slots = pcpu_cpu_possible();
	/* CPU 0's slot clear of rseq_cs (placement.h) */
	c->slots = bench_alloc_clear_of_rseq((size_t)c->nr_slots * V04_STRIDE,
					     sizeof(struct v04_slot));
	return c->slots ? 0 : -ENOMEM;
}

void v04_counter_destroy(struct v04_counter *c)
{
	bench_free_clear(c->slots);
	c->slots = NULL;
}

int64_t v04_counter_sum(const struct v04_counter *c)
{
	int64_t sum = __atomic_load_n(&c->base, __ATOMIC_RELAXED);

	for (unsigned int cpu = 0; cpu < c->nr_slots; cpu++)
		sum += __atomic_load_n(&slot_of(c, cpu)->value, __ATOMIC_RELAXED);
	return sum;
}

void v04_counter_add_slow(struct v04_counter *c, int64_t amount)
{
	int cpu = sched_getcpu();
	int64_t central, value, mark;
	uint64_t threshold;
	struct v04_slot *s;

	__atomic_fetch_add(&c->base, amount, __ATOMIC_RELAXED);
	central = __atomic_add_fetch(&c->central, amount, __ATOMIC_RELAXED);
	if (cpu >= 0 && (unsigned int)cpu < c->nr_slots) {
		s = slot_of(c, (unsigned int)cpu);
		mark = __atomic_load_n(&s->mark, __ATOMIC_RELAXED);
		do
			value = __atomic_load_n(&s->value, __ATOMIC_RELAXED);
		while (!__atomic_compare_exchange_n(&s->mark, &mark,
						    (int64_t)((uint64_t)value ^ V04_SLOT_ARMED),
						    false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
		/* an armed mark's own value; a slot not armed yet held nothing folded */
		mark = mark ? (int64_t)((uint64_t)mark ^ V04_SLOT_ARMED) : 0;
		central = __atomic_add_fetch(&c->central, value - mark, __ATOMIC_RELAXED);
	}
	threshold = (uint64_t)(central < 0 ? -central : central) / (V04_ACCURACY * c->nr_slots);
	__atomic_store_n(&c->threshold, threshold < V04_FLOOR ? V04_FLOOR : (int64_t)threshold,
			 __ATOMIC_RELAXED);
}

#endif
