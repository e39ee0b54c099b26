/* SPDX-License-Identifier: MIT */
/*
 * The vendored 0.3 add's counter (see v03_add.h): per-CPU {value, mark}
 * slots a 4 KiB stride apart, the elastic threshold of 0.3's policy
 * (|count| / (64 x possible CPUs), at least 32), and a slow path that adds
 * to the base and folds the calling CPU's slot by a compare-and-swap of
 * its mark, which the rseq adds never write: exact whatever the
 * interleaving, and rare enough (once per threshold) not to count.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>

#include "placement.h"
#include "v03_add.h"

#if V03_HAVE_ADD

long v03_rseq_offset;

#define V03_STRIDE 4096
#define V03_ACCURACY 64
#define V03_FLOOR 32

static struct v03_slot *slot_of(const struct v03_counter *c, unsigned int cpu)
{
	return (struct v03_slot *)(void *)((char *)c->slots + (size_t)cpu * V03_STRIDE);
}

int v03_counter_init(struct v03_counter *c)
{
	*c = (struct v03_counter){ .thresh = V03_FLOOR, .mode = PCPU_CPU_RSEQ };
	v03_rseq_offset = __pcpu_rseq_offset;
	c->nr_slots = pcpu_cpu_possible();
	/* CPU 0's slot clear of rseq_cs (placement.h) */
	c->slots = bench_alloc_clear_of_rseq((size_t)c->nr_slots * V03_STRIDE,
					     sizeof(struct v03_slot));
	return c->slots ? 0 : -ENOMEM;
}

void v03_counter_destroy(struct v03_counter *c)
{
	bench_free_clear(c->slots);
	c->slots = NULL;
}

int64_t v03_counter_sum(const struct v03_counter *c)
{
	int64_t sum = __atomic_load_n(&c->base, __ATOMIC_RELAXED);

	for (unsigned int cpu = 0; cpu < c->nr_slots; cpu++)
		sum += __atomic_load_n(&slot_of(c, cpu)->value, __ATOMIC_RELAXED);
	return sum;
}

void v03_counter_add_slow(struct v03_counter *c, int64_t amount)
{
	int cpu = sched_getcpu();
	int64_t count, value, mark;
	uint64_t thresh;
	struct v03_slot *s;

	__atomic_fetch_add(&c->base, amount, __ATOMIC_RELAXED);
	count = __atomic_add_fetch(&c->count, amount, __ATOMIC_RELAXED);
	if (cpu >= 0 && (unsigned int)cpu < c->nr_slots) {
		s = slot_of(c, (unsigned int)cpu);
		mark = __atomic_load_n(&s->mark, __ATOMIC_RELAXED);
		do
			value = __atomic_load_n(&s->value, __ATOMIC_RELAXED);
		while (!__atomic_compare_exchange_n(&s->mark, &mark, value, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED));
		count = __atomic_add_fetch(&c->count, value - mark, __ATOMIC_RELAXED);
	}
	thresh = (uint64_t)(count < 0 ? -count : count) / (V03_ACCURACY * c->nr_slots);
	__atomic_store_n(&c->thresh, thresh < V03_FLOOR ? V03_FLOOR : (int64_t)thresh,
			 __ATOMIC_RELAXED);
}

#endif
