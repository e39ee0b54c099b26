/* SPDX-License-Identifier: MIT */
/*
 * The baselines (see baselines.h).
 *
 * The kernel port follows lib/percpu_counter.c (percpu_counter_add_batch,
 * __percpu_counter_sum, __percpu_counter_compare). Userspace cannot
 * disable preemption or interrupts, which the kernel relies on to make
 * "read this CPU's slot, decide, update it" one step. The port keeps the
 * kernel's structure and stays correct this way.
 *
 * rseq path (the kernel's way: no atomic read-modify-write on an add):
 * - the invariant is exact == count + sum of all slots, and every write to
 *   a slot is a restartable sequence committed by a thread running on that
 *   slot's CPU (pcpu_arch_rseq_add()). Writes to one slot are therefore
 *   serialised by the CPU itself: a thread preempted, migrated or signalled
 *   before its committing add restarts and adds on its new CPU. No thread
 *   ever writes another CPU's slot, so no plain add can erase another.
 * - the add lands first and the batch test reads the slot it landed in
 *   (pcpu_arch_rseq_add() returns its offset). The kernel tests before it
 *   adds; with the amount already in, the condition |slot| >= batch is the
 *   kernel's |slot + amount| >= batch and the fold moves the same total.
 * - the fold (kp_counter_fold()) takes the lock, reads the slot the add
 *   landed in (value v), adds v to count and subtracts v with another rseq
 *   add, still under the lock. That subtraction lands on the slot of the CPU
 *   the thread runs on *then*: the same slot unless the thread migrated
 *   since its add, in which case v leaves another slot. Either way count
 *   gains v and the slots lose v, so count + sum of slots is unchanged and
 *   nothing is lost or counted twice, whatever adds land meanwhile (they
 *   stay in their slots). A migration can only leave one slot above the
 *   batch and another below -batch until their next fold; the sum of slots,
 *   the error of read(), is what the kernel's bound counts. This is the
 *   kernel's own remark ("by now we might have migrated to another CPU ...
 *   not a problem").
 * - sum() and sync take the lock, so they never see a fold half done; sync
 *   moves the sum of all slots into count and subtracts it from the
 *   caller's own slot in one rseq add (it may not write other CPUs' slots).
 * - a thread without an rseq area (pcpu_arch_rseq_add() returns -1) adds to
 *   count under the lock: count is only ever written under it.
 *
 * atomic path (no rseq, or PCPU_FORCE_FALLBACK=1; libpercpu does the same):
 * - the per-CPU update is an atomic add on the slot sched_getcpu() names,
 *   so two threads that pick the same slot never lose an update;
 * - the fold exchanges the slot with 0 under the lock and adds what it took
 *   (plus the amount) to the count, so an add that lands on the slot
 *   concurrently is either taken by the exchange or stays in the slot;
 * - the batch test reads the slot before the update, as the kernel does.
 * The two paths never write the same counter: the path is chosen once per
 * process, as libpercpu's is.
 *
 * Both paths: a slot may exceed the batch by the amounts of threads racing
 * on it, which the kernel's compare bound (batch * online CPUs) ignores just
 * as it ignores CPUs being added while it runs. The spinlock is
 * test-and-test-and-set with pause (the uncontended cost of the kernel's
 * qspinlock: one locked exchange), and yields after a while: a userspace
 * lock holder can be preempted. Slots exist for every possible CPU and
 * sum() reads all of them. The slots are int64_t, where the kernel's are
 * s32; every value they hold stays far below 2^31.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_arch.h"
#include "baselines.h"
#include "placement.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

int kp_counter_batch = 32;
int kp_online_cpus = 1;

static void kp_lock(int *lock)
{
	unsigned int spins = 0;

	while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE)) {
		while (LOAD(lock)) {
			if (++spins < 1000) {
				bench_relax();
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

const char *kp_path_name(enum kp_path path)
{
	return path == KP_PATH_RSEQ ? "rseq" : "atomic";
}

enum kp_path kp_path_current(void)
{
#if PCPU_ARCH_HAVE_RSEQ_ADD
	if (pcpu_cpu_setup() == PCPU_CPU_RSEQ)
		return KP_PATH_RSEQ;
#endif
	return KP_PATH_ATOMIC;
}

int kp_counter_init(struct kp_counter *c, int64_t value)
{
	size_t size;

	kp_setup();
	memset(c, 0, sizeof(*c));
	c->path = kp_path_current();
	c->nr_slots = pcpu_cpu_possible();
	if (c->nr_slots == 0)
		c->nr_slots = 1;
	/* CPU 0's slot at a page offset clear of rseq_cs (bench/common/placement.h) */
	size = (size_t)c->nr_slots * KP_STRIDE;
	c->slots = bench_alloc_clear_of_rseq(size, sizeof(*c->slots));
	if (!c->slots)
		return -ENOMEM;
	c->count = value;
	return 0;
}

void kp_counter_destroy(struct kp_counter *c)
{
	bench_free_clear(c->slots);
	c->slots = NULL;
}

static int64_t *slot_of(struct kp_counter *c, unsigned int cpu)
{
	return (int64_t *)(void *)((char *)c->slots + (size_t)cpu * KP_STRIDE);
}

/*
 * The rseq path's fold: see the top of this file for why it cannot lose an
 * update. @offset: where the add that found the slot over the batch landed.
 */
void kp_counter_fold(struct kp_counter *c, long offset)
{
#if PCPU_ARCH_HAVE_RSEQ_ADD
	int64_t count;

	kp_lock(&c->lock);
	count = LOAD((int64_t *)(void *)((char *)c->slots + offset));
	if (pcpu_arch_rseq_add(c->slots, -count) >= 0)
		STORE(&c->count, c->count + count);
	kp_unlock(&c->lock);
#else
	(void)c;
	(void)offset;
#endif
}

void kp_counter_add_unregistered(struct kp_counter *c, int64_t amount)
{
	kp_lock(&c->lock);
	STORE(&c->count, c->count + amount);
	kp_unlock(&c->lock);
}

/* this_cpu_ptr(fbc->counters) on the atomic path */
static int64_t *this_cpu_slot(struct kp_counter *c)
{
	int cpu = sched_getcpu();

	/* any slot is correct (the updates are atomic); this one is fast */
	if (cpu < 0 || (unsigned int)cpu >= c->nr_slots)
		cpu = 0;
	return slot_of(c, (unsigned int)cpu);
}

void kp_counter_add_batch_atomic(struct kp_counter *c, int64_t amount, int batch)
{
	int64_t *slot = this_cpu_slot(c);
	int64_t count = LOAD(slot);

	if (__builtin_expect(llabs(count + amount) >= batch, 0)) {
		kp_lock(&c->lock);
		count = __atomic_exchange_n(slot, 0, __ATOMIC_RELAXED);
		STORE(&c->count, c->count + count + amount);
		kp_unlock(&c->lock);
		return;
	}
	__atomic_fetch_add(slot, amount, __ATOMIC_RELAXED);
}

int64_t kp_counter_sum(struct kp_counter *c)
{
	int64_t ret;

	kp_lock(&c->lock);
	ret = c->count;
	for (unsigned int cpu = 0; cpu < c->nr_slots; cpu++)
		ret += LOAD(slot_of(c, cpu));
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
#if PCPU_ARCH_HAVE_RSEQ_ADD
	if (c->path == KP_PATH_RSEQ) {
		int64_t moved = 0;

		for (unsigned int cpu = 0; cpu < c->nr_slots; cpu++)
			moved += LOAD(slot_of(c, cpu));
		if (pcpu_arch_rseq_add(c->slots, -moved) >= 0)
			STORE(&c->count, c->count + moved);
		kp_unlock(&c->lock);
		return kp_counter_read(c);
	}
#endif
	for (unsigned int cpu = 0; cpu < c->nr_slots; cpu++) {
		int64_t moved = __atomic_exchange_n(slot_of(c, cpu), 0, __ATOMIC_RELAXED);

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
