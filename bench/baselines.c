/* SPDX-License-Identifier: MIT */
/*
 * The baselines (see baselines.h).
 *
 * The kernel port follows lib/percpu_counter.c (percpu_counter_add_batch,
 * __percpu_counter_sum, __percpu_counter_compare) line by line. Userspace
 * cannot disable preemption or interrupts, which the kernel relies on to
 * make "read this CPU's slot, decide, update it" one step; a thread may
 * migrate between sched_getcpu() and the update, and two threads may share
 * a CPU (and so a slot). To stay correct, with the same structure:
 *
 * - the per-CPU update is an atomic add on the slot (lock add; the kernel's
 *   this_cpu_add() is a plain add on %gs-relative memory), so two threads
 *   that pick the same slot never lose an update;
 * - the fold exchanges the slot with 0 under the lock and adds what it took
 *   (plus the amount) to the count, so an add that lands on the slot
 *   concurrently is either taken by the exchange or stays in the slot;
 *   nothing is lost or counted twice (the kernel subtracts what it read,
 *   which is the same thing with interrupts off);
 * - the batch test reads the slot before the update, as the kernel does;
 *   a slot may therefore exceed the batch by the amounts of threads racing
 *   on it, which the kernel's compare bound (batch * online CPUs) ignores
 *   just as it ignores CPUs being added while it runs;
 * - the spinlock is test-and-test-and-set with pause (the uncontended cost
 *   of the kernel's qspinlock: one locked exchange), and yields after a
 *   while: a userspace lock holder can be preempted, and a spinner that
 *   never yields could then burn its whole time slice;
 * - slots exist for every possible CPU and sum() reads all of them (the
 *   kernel reads online and dying CPUs; it drains a CPU that goes offline
 *   in a hotplug callback, which userspace does not get).
 * The slots are int64_t, where the kernel's are s32; every value they hold
 * stays far below 2^31, so this changes nothing but their width.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baselines.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

int kp_counter_batch = 32;
int kp_online_cpus = 1;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

static void kp_lock(int *lock)
{
	unsigned int spins = 0;

	while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE)) {
		while (LOAD(lock)) {
			if (++spins < 1000) {
				cpu_relax();
			} else {
				sched_yield();
				spins = 0;
			}
		}
	}
}

static void kp_unlock(int *lock)
{
	__atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

static void kp_setup(void)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	kp_online_cpus = online > 0 ? (int)online : 1;
	kp_counter_batch = 2 * kp_online_cpus > 32 ? 2 * kp_online_cpus : 32;
}

int kp_counter_init(struct kp_counter *c, int64_t value)
{
	long possible = sysconf(_SC_NPROCESSORS_CONF);

	kp_setup();
	memset(c, 0, sizeof(*c));
	c->nr_slots = possible > 0 ? (unsigned int)possible : 1;
	c->slots = aligned_alloc(BENCH_CACHELINE, c->nr_slots * sizeof(struct kp_slot));
	if (!c->slots)
		return -ENOMEM;
	memset(c->slots, 0, c->nr_slots * sizeof(struct kp_slot));
	c->count = value;
	return 0;
}

void kp_counter_destroy(struct kp_counter *c)
{
	free(c->slots);
	c->slots = NULL;
}

/* this_cpu_ptr(fbc->counters) */
static struct kp_slot *this_cpu_slot(struct kp_counter *c)
{
	int cpu = sched_getcpu();

	/* any slot is correct (the updates are atomic); this one is fast */
	if (cpu < 0 || (unsigned int)cpu >= c->nr_slots)
		cpu = 0;
	return &c->slots[cpu];
}

void kp_counter_add_batch(struct kp_counter *c, int64_t amount, int batch)
{
	struct kp_slot *slot = this_cpu_slot(c);
	int64_t count = LOAD(&slot->value);

	if (__builtin_expect(llabs(count + amount) >= batch, 0)) {
		kp_lock(&c->lock);
		count = __atomic_exchange_n(&slot->value, 0, __ATOMIC_RELAXED);
		STORE(&c->count, c->count + count + amount);
		kp_unlock(&c->lock);
		return;
	}
	__atomic_fetch_add(&slot->value, amount, __ATOMIC_RELAXED);
}

int64_t kp_counter_sum(struct kp_counter *c)
{
	int64_t ret;

	kp_lock(&c->lock);
	ret = c->count;
	for (unsigned int cpu = 0; cpu < c->nr_slots; cpu++)
		ret += LOAD(&c->slots[cpu].value);
	kp_unlock(&c->lock);
	return ret;
}

int kp_counter_compare(struct kp_counter *c, int64_t rhs, int batch)
{
	int64_t count = kp_counter_read(c);

	/* Check to see if rough count will be sufficient for comparison */
	if (llabs(count - rhs) > (int64_t)batch * kp_online_cpus)
		return count > rhs ? 1 : -1;
	/* Need to use precise count */
	count = kp_counter_sum(c);
	return count > rhs ? 1 : count < rhs ? -1 : 0;
}

int64_t kp_counter_sync_if_delta_above(struct kp_counter *c, uint64_t delta)
{
	if ((uint64_t)kp_counter_batch * (uint64_t)kp_online_cpus <= delta)
		return kp_counter_read(c);
	kp_lock(&c->lock);
	for (unsigned int cpu = 0; cpu < c->nr_slots; cpu++) {
		int64_t moved = __atomic_exchange_n(&c->slots[cpu].value, 0, __ATOMIC_RELAXED);

		STORE(&c->count, c->count + moved);
	}
	kp_unlock(&c->lock);
	return kp_counter_read(c);
}

int thread_slots_init(struct thread_slots *t, int64_t value, unsigned int nr_threads)
{
	t->nr_slots = nr_threads ? nr_threads : 1;
	t->slots = aligned_alloc(BENCH_CACHELINE, t->nr_slots * sizeof(struct thread_slot));
	if (!t->slots)
		return -ENOMEM;
	memset(t->slots, 0, t->nr_slots * sizeof(struct thread_slot));
	t->base = value;
	return 0;
}

void thread_slots_destroy(struct thread_slots *t)
{
	free(t->slots);
	t->slots = NULL;
}

int64_t thread_slots_sum(const struct thread_slots *t)
{
	int64_t sum = t->base;

	for (unsigned int i = 0; i < t->nr_slots; i++)
		sum += LOAD(&t->slots[i].value);
	return sum;
}
