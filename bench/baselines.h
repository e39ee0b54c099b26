/* SPDX-License-Identifier: MIT */
/*
 * The three baselines percpu is measured against, in the same binary:
 *
 * - atomic_counter: one shared int64_t, updated with __atomic_fetch_add.
 *   What most people write first; every add bounces one cacheline.
 *
 * - kp_counter: a port of the Linux kernel's fixed-batch percpu_counter
 *   (lib/percpu_counter.c): per-CPU slots padded to a cacheline, indexed by
 *   sched_getcpu(), a spinlock-protected central count, and a fold into it
 *   when |slot + amount| >= batch, batch = max(32, 2 * online CPUs). See
 *   baselines.c for what had to change to keep it correct in userspace.
 *
 * - thread_slots: one padded slot per thread, updated with a plain
 *   load-add-store. No other thread ever writes the slot, so nothing is
 *   shared on the update: the practical limit for any counter. It has no
 *   central value, so every read has to sum all the slots.
 */
#ifndef PERCPU_BENCH_BASELINES_H
#define PERCPU_BENCH_BASELINES_H

#include <stdalign.h>
#include <stdint.h>

#define BENCH_CACHELINE 64

/* One shared atomic. */
struct atomic_counter {
	alignas(BENCH_CACHELINE) int64_t value;
	char pad[BENCH_CACHELINE - sizeof(int64_t)];
};

static inline void atomic_counter_init(struct atomic_counter *c, int64_t value)
{
	__atomic_store_n(&c->value, value, __ATOMIC_RELAXED);
}

static inline void atomic_counter_add(struct atomic_counter *c, int64_t amount)
{
	__atomic_fetch_add(&c->value, amount, __ATOMIC_RELAXED);
}

static inline int64_t atomic_counter_read(const struct atomic_counter *c)
{
	return __atomic_load_n(&c->value, __ATOMIC_RELAXED);
}

/* The kernel's percpu_counter, ported. */
struct kp_slot {
	alignas(BENCH_CACHELINE) int64_t value;
	char pad[BENCH_CACHELINE - sizeof(int64_t)];
};

struct kp_counter {
	/* as in the kernel, the lock and the count share a cacheline */
	alignas(BENCH_CACHELINE) int lock;
	int64_t count;
	struct kp_slot *slots; /* one per possible CPU */
	unsigned int nr_slots;
};

/*
 * The kernel's percpu_counter_batch, max(32, 2 * online CPUs), and
 * num_online_cpus(); set by the first kp_counter_init().
 */
extern int kp_counter_batch;
extern int kp_online_cpus;

/* percpu_counter_init(); 0 or -ENOMEM. */
int kp_counter_init(struct kp_counter *c, int64_t value);
void kp_counter_destroy(struct kp_counter *c);

/* percpu_counter_add_batch(); out of line, as in the kernel. */
void kp_counter_add_batch(struct kp_counter *c, int64_t amount, int batch);

/* percpu_counter_add(): the default batch. */
static inline void kp_counter_add(struct kp_counter *c, int64_t amount)
{
	kp_counter_add_batch(c, amount, kp_counter_batch);
}

/* percpu_counter_read(): the central count, one load, no lock. */
static inline int64_t kp_counter_read(const struct kp_counter *c)
{
	return __atomic_load_n(&c->count, __ATOMIC_RELAXED);
}

/* __percpu_counter_sum(): the count plus every slot, under the lock. */
int64_t kp_counter_sum(struct kp_counter *c);

/* __percpu_counter_compare(): precise only within batch * online CPUs. */
int kp_counter_compare(struct kp_counter *c, int64_t rhs, int batch);

/*
 * The kernel has no sync_if_delta_above(); the equivalent built from its
 * parts: read() when batch * online CPUs is within @delta, otherwise fold
 * every CPU's slot into the count under the lock (what the kernel's
 * percpu_counter_sync() does for one CPU) and return the count.
 */
int64_t kp_counter_sync_if_delta_above(struct kp_counter *c, uint64_t delta);

/* One padded slot per thread. */
struct thread_slot {
	alignas(BENCH_CACHELINE) int64_t value;
	char pad[BENCH_CACHELINE - sizeof(int64_t)];
};

struct thread_slots {
	struct thread_slot *slots;
	unsigned int nr_slots;
	int64_t base; /* the initial value */
};

/* 0 or -ENOMEM. */
int thread_slots_init(struct thread_slots *t, int64_t value, unsigned int nr_threads);
void thread_slots_destroy(struct thread_slots *t);

/*
 * A plain add: the owner is the only writer, so a relaxed load and store
 * (a plain mov/add/mov, no lock prefix) suffice; they are atomic accesses
 * only so that a concurrent reader is not a data race. The compiler may not
 * merge or drop them, so every add really reaches memory.
 */
static inline void thread_slot_add(struct thread_slot *s, int64_t amount)
{
	__atomic_store_n(&s->value, __atomic_load_n(&s->value, __ATOMIC_RELAXED) + amount,
			 __ATOMIC_RELAXED);
}

/* The only way to read it: the base plus every slot. */
int64_t thread_slots_sum(const struct thread_slots *t);

#endif /* PERCPU_BENCH_BASELINES_H */
