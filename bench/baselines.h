/* SPDX-License-Identifier: MIT */
/*
 * The three baselines percpu is measured against, in the same binary:
 *
 * - atomic_counter: one shared int64_t, updated with __atomic_fetch_add.
 *   What most people write first; every add bounces one cacheline.
 *
 * - kp_counter: a port of the Linux kernel's fixed-batch percpu_counter
 *   (lib/percpu_counter.c): per-CPU slots a 4 KiB stride apart, updated by
 *   a plain add in a restartable sequence (the kernel's this_cpu_add()), a
 *   spinlock-protected central count, and a fold into it when
 *   |slot| >= batch, batch = max(32, 2 * online CPUs). Without rseq it
 *   falls back to sched_getcpu() and a locked add, as libpercpu does. See
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

#include <percpu/cpu.h>

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

/*
 * Per-CPU slots are laid out as the kernel's percpu allocator and libpercpu
 * lay them out: CPU n's slot is n * KP_STRIDE bytes after CPU 0's, the
 * stride pcpu_arch_rseq_add() hard-codes.
 */
#define KP_STRIDE 4096
#ifdef PCPU_STRIDE
_Static_assert(PCPU_STRIDE == KP_STRIDE, "pcpu_arch_rseq_add() stride");
#endif

/* How the kernel port's this_cpu_add() is done, chosen at init. */
enum kp_path {
	KP_PATH_RSEQ,   /* a plain add in a restartable sequence, as the kernel */
	KP_PATH_ATOMIC, /* sched_getcpu() and a locked add (no rseq) */
};

struct kp_counter {
	/* as in the kernel, the lock and the count share a cacheline */
	alignas(BENCH_CACHELINE) int lock;
	enum kp_path path;
	int64_t count;
	int64_t *slots; /* CPU 0's slot; CPU n's is n * KP_STRIDE bytes on */
	unsigned int nr_slots;
};

/*
 * The kernel's percpu_counter_batch, max(32, 2 * online CPUs), and
 * num_online_cpus(); set by the first kp_counter_init().
 */
extern int kp_counter_batch;
extern int kp_online_cpus;

/*
 * percpu_counter_init(); 0 or -ENOMEM. The path is libpercpu's own
 * (pcpu_cpu_setup()): rseq unless it is unavailable or PCPU_FORCE_FALLBACK=1.
 */
int kp_counter_init(struct kp_counter *c, int64_t value);
void kp_counter_destroy(struct kp_counter *c);

/* "rseq" or "atomic": the path kp_counter_init() chose. */
const char *kp_path_name(enum kp_path path);

/* The path the next kp_counter_init() chooses. */
enum kp_path kp_path_current(void);

/* The slow paths of kp_counter_add_batch(), out of line as in the kernel. */
void kp_counter_fold(struct kp_counter *c, long offset);
void kp_counter_add_unregistered(struct kp_counter *c, int64_t amount);
void kp_counter_add_batch_atomic(struct kp_counter *c, int64_t amount, int batch);

static inline int64_t kp_llabs(int64_t v)
{
	return v < 0 ? -v : v;
}

/*
 * percpu_counter_add_batch(). On the rseq path, the kernel's
 * this_cpu_add(): one plain add to this CPU's slot in a restartable
 * sequence (pcpu_arch_rseq_add(), the same code libpercpu uses), then the
 * batch test on the slot it landed in; the fold is out of line. The fast
 * path is inline, like pcpu_counter_add(), so the comparison measures the
 * algorithms and not a function call (the kernel's add_batch is a call).
 */
static inline void kp_counter_add_batch(struct kp_counter *c, int64_t amount, int batch)
{
#if PCPU_ARCH_HAVE_RSEQ_ADD
	if (__builtin_expect(c->path == KP_PATH_RSEQ, 1)) {
		long offset = pcpu_arch_rseq_add(c->slots, amount);
		int64_t count;

		if (__builtin_expect(offset < 0, 0)) {
			kp_counter_add_unregistered(c, amount);
			return;
		}
		count = __atomic_load_n((int64_t *)(void *)((char *)c->slots + offset),
					__ATOMIC_RELAXED);
		if (__builtin_expect(kp_llabs(count) >= batch, 0))
			kp_counter_fold(c, offset);
		return;
	}
#endif
	kp_counter_add_batch_atomic(c, amount, batch);
}
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
