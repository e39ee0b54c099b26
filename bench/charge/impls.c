/* SPDX-License-Identifier: MIT */
/* The implementations under test (see impls.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "impls.h"

const char *const charge_impl_names[NR_IMPLS] = {
	"pcpu_charge", "cas", "kernel", "limited_add", "stock",
};

const char *const charge_impl_descriptions[NR_IMPLS] = {
	"pcpu_charge_try / pcpu_charge_uncharge (per-CPU stocks, drained before a failure)",
	"one shared int64_t, own cacheline: CAS loop checking the limit; atomic sub",
	"kernel port (percpu-bench): add, __percpu_counter_compare(batch), undo if over",
	"pcpu_counter_limited_add(c, limit, 4096), pcpu_counter_add(c, -4096)",
	"per-thread padded stock, 64 KiB refills from one atomic, never drained",
};

static void *alloc_lines(size_t size)
{
	size_t rounded = (size + BENCH_CACHELINE - 1) / BENCH_CACHELINE * BENCH_CACHELINE;
	void *p = aligned_alloc(BENCH_CACHELINE, rounded);

	if (p)
		memset(p, 0, rounded);
	return p;
}

void obj_destroy(struct bench_obj *o)
{
	if (o->charge)
		pcpu_charge_destroy(o->charge);
	if (o->kernel)
		kp_counter_destroy(o->kernel);
	if (o->counter)
		pcpu_counter_destroy(o->counter);
	free(o->charge);
	free(o->cas);
	free(o->kernel);
	free(o->counter);
	free(o->central);
	free(o->stocks);
	memset(o, 0, sizeof(*o));
}

int obj_init(struct bench_obj *o, enum impl impl, int64_t limit, unsigned int threads,
	     int64_t stock_cap, int64_t held)
{
	struct pcpu_charge_options co = { .limit = limit, .stock_cap = stock_cap };
	int err = 0;

	memset(o, 0, sizeof(*o));
	o->impl = impl;
	o->limit = limit;
	switch (impl) {
	case IMPL_CHARGE:
		o->charge = alloc_lines(sizeof(*o->charge));
		err = o->charge ? pcpu_charge_init(o->charge, &co) : -ENOMEM;
		break;
	case IMPL_CAS:
		o->cas = alloc_lines(sizeof(*o->cas));
		err = o->cas ? 0 : -ENOMEM;
		break;
	case IMPL_KERNEL:
		o->kernel = alloc_lines(sizeof(*o->kernel));
		err = o->kernel ? kp_counter_init(o->kernel, 0) : -ENOMEM;
		break;
	case IMPL_LIMITED:
		o->counter = alloc_lines(sizeof(*o->counter));
		o->held = held;
		err = o->counter ? pcpu_counter_init(o->counter, held) : -ENOMEM;
		break;
	case IMPL_STOCK:
	case NR_IMPLS:
		o->central = alloc_lines(sizeof(*o->central));
		o->nr_stocks = threads + 1;
		o->stocks = alloc_lines(o->nr_stocks * sizeof(*o->stocks));
		err = o->central && o->stocks ? 0 : -ENOMEM;
		break;
	}
	if (err)
		obj_destroy(o);
	return err;
}

struct target target_of(const struct bench_obj *o, unsigned int thread)
{
	return (struct target){
		.limit = o->limit + o->held, /* limited_add's counter holds more */
		.charge = o->charge,
		.cas = o->cas,
		.kernel = o->kernel,
		.counter = o->counter,
		.central = o->central,
		.own = o->stocks && thread < o->nr_stocks ? &o->stocks[thread] : NULL,
	};
}

/*
 * The stock baseline's refill: reserve what the charge lacks plus a chunk
 * (or only what it lacks, if that is all the room left) from the shared
 * word, with the CAS loop of cas_try(). Out of line, as a slow path is.
 */
__attribute__((noinline)) bool stock_refill(struct stock_central *c, struct thread_stock *own,
					    int64_t limit, int64_t amount)
{
	int64_t s = __atomic_load_n(&own->stock, __ATOMIC_RELAXED);
	int64_t need = amount - s, r = __atomic_load_n(&c->reserved, __ATOMIC_RELAXED), got;

	do {
		int64_t room = limit - r;

		if (room < need)
			return false;
		got = need + CHUNK < room ? need + CHUNK : room;
	} while (!__atomic_compare_exchange_n(&c->reserved, &r, r + got, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	__atomic_store_n(&own->stock, s + got - amount, __ATOMIC_RELAXED);
	return true;
}

__attribute__((noinline)) void stock_overflow(struct stock_central *c, struct thread_stock *own,
					      int64_t s)
{
	__atomic_fetch_sub(&c->reserved, s - CHUNK, __ATOMIC_RELEASE);
	__atomic_store_n(&own->stock, CHUNK, __ATOMIC_RELAXED);
}

int64_t obj_usage(const struct bench_obj *o)
{
	int64_t u;

	switch (o->impl) {
	case IMPL_CHARGE:
		return pcpu_charge_usage(o->charge);
	case IMPL_CAS:
		return __atomic_load_n(&o->cas->used, __ATOMIC_RELAXED);
	case IMPL_KERNEL:
		return kp_counter_sum(o->kernel);
	case IMPL_LIMITED:
		return pcpu_counter_sum(o->counter) - o->held;
	case IMPL_STOCK:
	case NR_IMPLS:
		break;
	}
	u = __atomic_load_n(&o->central->reserved, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < o->nr_stocks; i++)
		u -= __atomic_load_n(&o->stocks[i].stock, __ATOMIC_RELAXED);
	return u;
}

