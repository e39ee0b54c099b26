/* SPDX-License-Identifier: MIT */
/*
 * The five ways percpu-charge-bench charges against a limit, behind one set
 * of operations (see main.c for the workloads):
 *
 *   pcpu_charge  pcpu_charge_try() / pcpu_charge_uncharge() (<percpu/charge.h>)
 *   cas          one shared int64_t in its own cacheline: a compare-and-swap
 *                loop that checks the limit, an atomic subtract to uncharge
 *                (what a user writes first)
 *   kernel       the kernel's way on percpu-bench's port of percpu_counter
 *                (baselines.h): add, __percpu_counter_compare() with the
 *                default batch against the limit, subtract again if over;
 *                uncharge = add(-amount). Its add is a plain per-CPU add in
 *                a restartable sequence
 *   limited_add  pcpu_counter_limited_add(c, limit, amount), then
 *                pcpu_counter_add(c, -amount)
 *   stock        a private padded stock per thread, its pointer resolved
 *                once per thread, refilled from one shared atomic in chunks
 *                of CHUNK, given back only when it overflows 2 x CHUNK:
 *                nothing ever drains the other threads' stocks, so it may
 *                fail falsely (the practical limit of a stock)
 *
 * The operations switch on the implementation and are always inlined; the
 * loops call them with a constant implementation, so each is the
 * implementation's own inline code, with no indirect call in between.
 */
#ifndef PERCPU_BENCH_CHARGE_IMPLS_H
#define PERCPU_BENCH_CHARGE_IMPLS_H

#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>

#include <percpu/charge.h>
#include <percpu/counter.h>

#include "baselines.h"

#define BENCH_INLINE static inline __attribute__((always_inline))

/* the stock baseline's refill: 64 KiB (see stock_refill()) */
#define CHUNK (INT64_C(64) << 10)

enum impl { IMPL_CHARGE, IMPL_CAS, IMPL_KERNEL, IMPL_LIMITED, IMPL_STOCK, NR_IMPLS };

/* "pcpu_charge", "cas", "kernel", "limited_add", "stock" */
extern const char *const charge_impl_names[NR_IMPLS];
/* one-line descriptions for the report */
extern const char *const charge_impl_descriptions[NR_IMPLS];

/* One shared word, alone in its cacheline. */
struct cas_word {
	alignas(BENCH_CACHELINE) int64_t used;
	char pad[BENCH_CACHELINE - sizeof(int64_t)];
};

/* One thread's stock, alone in its cacheline; only its thread writes it. */
struct thread_stock {
	alignas(BENCH_CACHELINE) int64_t stock;
	char pad[BENCH_CACHELINE - sizeof(int64_t)];
};

/* The stock baseline's shared reservation: usage plus every stock. */
struct stock_central {
	alignas(BENCH_CACHELINE) int64_t reserved;
	char pad[BENCH_CACHELINE - sizeof(int64_t)];
};

/* One object of one implementation, each part in cachelines of its own. */
struct bench_obj {
	enum impl impl;
	int64_t limit;
	struct pcpu_charge *charge;
	struct cas_word *cas;
	struct kp_counter *kernel;
	struct pcpu_counter *counter;
	struct stock_central *central;
	struct thread_stock *stocks; /* one per thread, plus one for the main thread */
	unsigned int nr_stocks;
	int64_t held; /* limited_add's counter: its value besides the charges */
};

/*
 * What one thread uses, passed by value so that it stays in registers; the
 * stock baseline's own stock is resolved here, once per thread.
 */
struct target {
	int64_t limit;
	struct pcpu_charge *charge;
	struct cas_word *cas;
	struct kp_counter *kernel;
	struct pcpu_counter *counter;
	struct stock_central *central;
	struct thread_stock *own;
};

/*
 * Sets up @o for @threads threads (and the main thread) with @limit;
 * @stock_cap is pcpu_charge's option (0: the default). 0 or a negative errno.
 */
int obj_init(struct bench_obj *o, enum impl impl, int64_t limit, unsigned int threads,
	     int64_t stock_cap, int64_t held);
void obj_destroy(struct bench_obj *o);

/* What thread @thread uses (thread == threads: the main thread). */
struct target target_of(const struct bench_obj *o, unsigned int thread);

/* The amount charged and not uncharged; only at quiescence. */
int64_t obj_usage(const struct bench_obj *o);

/* The stock baseline's slow paths, out of line as slow paths are. */
bool stock_refill(struct stock_central *c, struct thread_stock *own, int64_t limit,
		  int64_t amount);
void stock_overflow(struct stock_central *c, struct thread_stock *own, int64_t s);

BENCH_INLINE bool cas_try(struct cas_word *w, int64_t limit, int64_t amount)
{
	int64_t v = __atomic_load_n(&w->used, __ATOMIC_RELAXED);

	do {
		if (v > limit - amount)
			return false;
	} while (!__atomic_compare_exchange_n(&w->used, &v, v + amount, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	return true;
}

/* The kernel's way: charge, then ask the counter whether that went over. */
BENCH_INLINE bool kernel_try(struct kp_counter *c, int64_t limit, int64_t amount)
{
	kp_counter_add(c, amount);
	if (kp_counter_compare(c, limit, kp_counter_batch) > 0) {
		kp_counter_add(c, -amount);
		return false;
	}
	return true;
}

/*
 * The owner is the only writer of its stock: a relaxed load and store
 * (plain movs), atomic only so that the main thread's read at quiescence
 * is not a data race.
 */
BENCH_INLINE bool stock_try(struct stock_central *c, struct thread_stock *own, int64_t limit,
			    int64_t amount)
{
	int64_t s = __atomic_load_n(&own->stock, __ATOMIC_RELAXED);

	if (__builtin_expect(s >= amount, 1)) {
		__atomic_store_n(&own->stock, s - amount, __ATOMIC_RELAXED);
		return true;
	}
	return stock_refill(c, own, limit, amount);
}

BENCH_INLINE void stock_uncharge(struct stock_central *c, struct thread_stock *own,
				 int64_t amount)
{
	int64_t s = __atomic_load_n(&own->stock, __ATOMIC_RELAXED) + amount;

	if (__builtin_expect(s > 2 * CHUNK, 0)) {
		stock_overflow(c, own, s);
		return;
	}
	__atomic_store_n(&own->stock, s, __ATOMIC_RELAXED);
}

BENCH_INLINE bool impl_try(enum impl impl, struct target t, int64_t amount)
{
	switch (impl) {
	case IMPL_CHARGE:
		return pcpu_charge_try(t.charge, amount);
	case IMPL_CAS:
		return cas_try(t.cas, t.limit, amount);
	case IMPL_KERNEL:
		return kernel_try(t.kernel, t.limit, amount);
	case IMPL_LIMITED:
		return pcpu_counter_limited_add(t.counter, t.limit, amount);
	case IMPL_STOCK:
	case NR_IMPLS:
		break;
	}
	return stock_try(t.central, t.own, t.limit, amount);
}

BENCH_INLINE void impl_uncharge(enum impl impl, struct target t, int64_t amount)
{
	switch (impl) {
	case IMPL_CHARGE:
		pcpu_charge_uncharge(t.charge, amount);
		break;
	case IMPL_CAS:
		__atomic_fetch_sub(&t.cas->used, amount, __ATOMIC_RELEASE);
		break;
	case IMPL_KERNEL:
		kp_counter_add(t.kernel, -amount);
		break;
	case IMPL_LIMITED:
		pcpu_counter_add(t.counter, -amount);
		break;
	case IMPL_STOCK:
	case NR_IMPLS:
		stock_uncharge(t.central, t.own, amount);
		break;
	}
}

#endif /* PERCPU_BENCH_CHARGE_IMPLS_H */
