/* SPDX-License-Identifier: MIT */
/*
 * Slot owners: on the atomic path, a counter's add goes to a slot index
 * that the calling thread owns while it lives, with one unlocked add: no
 * locked instruction, no sched_getcpu(). (The restartable-sequence path
 * needs none of this: a sequence aborts when its thread leaves the CPU.)
 *
 * Why an unlocked add loses nothing, the add-first window (a slot may hold
 * up to twice the threshold while an add is in flight) and the fork rule:
 * docs/internals.md [pending-bound], paths 3 and 4.
 *
 * Who owns what. A thread claims an index on its first add: the CPU it runs
 * on if free, else the lowest free one. A thread-specific destructor gives
 * it back when the thread exits; adds after that, and adds of threads
 * beyond the possible CPUs, take the slow path. Nobody else may add to an
 * owned slot, so on this path counters never add by CPU number. A forked
 * child keeps only the forking thread's claim.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <percpu/cpu.h>

#include "atomics.h"
#include "cpu_internal.h"
#include "slot_owner.h"

#if PCPU_SLOT_OWNERS

/* The calling thread's claim (struct __pcpu_owner, <percpu/cpu.h>). */
static __thread struct __pcpu_owner me __attribute__((tls_model("initial-exec"))) = {
	.slot = -1,
};

/* Where me lies from the thread pointer: the same in every thread. */
PCPU_EXPORT long __pcpu_owner_offset;

#define UNCLAIMED (-1)
#define NOT_OWNED (-2)

static uint64_t *claimed; /* a bit per possible CPU; NULL: no claims */
static unsigned int nr_indices;
static pthread_key_t owner_key;
static pthread_once_t owner_once = PTHREAD_ONCE_INIT;

static void release(void *index_plus_one)
{
	unsigned int i = (unsigned int)((uintptr_t)index_plus_one - 1);

	me.slot = NOT_OWNED;
	/* every store of this thread to the slot before the bit is clear */
	__atomic_fetch_and(&claimed[i / 64], ~(UINT64_C(1) << (i % 64)), __ATOMIC_RELEASE);
}

static void owner_setup(void)
{
	unsigned int n = pcpu_cpu_possible();

#if PCPU_ARCH_HAVE_THREAD_POINTER
	__pcpu_owner_offset = (long)((char *)&me - (char *)__builtin_thread_pointer());
#endif

	if (pthread_key_create(&owner_key, release) != 0)
		return;
	claimed = calloc((n + 63) / 64, sizeof(*claimed));
	if (claimed)
		nr_indices = n;
}

static bool try_claim(unsigned int i)
{
	uint64_t bit = UINT64_C(1) << (i % 64);

	/* after the last owner's stores to the slot */
	return !(__atomic_fetch_or(&claimed[i / 64], bit, __ATOMIC_ACQUIRE) & bit);
}

void pcpu_slot_owner_setup(void)
{
	pthread_once(&owner_once, owner_setup);
}

static int claim(void)
{
	int cpu = sched_getcpu();

	pcpu_slot_owner_setup();
	if (!claimed)
		return -1;
	if (cpu >= 0 && (unsigned int)cpu < nr_indices && try_claim((unsigned int)cpu))
		return cpu;
	for (unsigned int i = 0; i < nr_indices; i++)
		if (!(LOAD(&claimed[i / 64]) & (UINT64_C(1) << (i % 64))) && try_claim(i))
			return (int)i;
	return -1;
}

/* A thread's first claim; then its owned index, or -1. */
static int __attribute__((noinline)) first_claim(void)
{
	int i;

	me.slot = NOT_OWNED; /* one claim per thread, whatever happens */
	i = claim();
	if (i < 0)
		return -1;
	if (pthread_setspecific(owner_key, (void *)(uintptr_t)(i + 1)) != 0) {
		release((void *)(uintptr_t)(i + 1));
		return -1;
	}
	me.slot = i;
	return i;
}

int pcpu_slot_owned(void)
{
	int i = me.slot;

	if (pcpu_likely(i >= 0))
		return i;
	return i == UNCLAIMED ? first_claim() : -1;
}

void pcpu_slot_owner_fork_child(void)
{
	if (!claimed)
		return;
	for (unsigned int w = 0; w < (nr_indices + 63) / 64; w++)
		STORE(&claimed[w], 0);
	if (me.slot >= 0)
		STORE(&claimed[me.slot / 64], UINT64_C(1) << (me.slot % 64));
}

/*
 * The atomic path of a counter's checked add: adds @amount to the value of
 * the caller's owned slot of the pairs whose CPU-0 copy is @cpu0, then
 * checks the new pending delta against +-@threshold. The caller has checked
 * |@amount| <= @threshold. Returns as pcpu_this_cpu_add_owned(): 1 added
 * within the threshold, 0 added nothing (no owned slot), -1 added past it.
 */
PCPU_EXPORT int __pcpu_cpu_add_owned(int64_t *cpu0, int64_t amount, uint64_t threshold)
{
	int32_t slot = me.slot;

	if (slot == UNCLAIMED)
		slot = first_claim();
	if (slot < 0)
		return 0;
	return __pcpu_owner_add(slot, cpu0, amount, threshold);
}
#else
/* Pairs swapped under a lock: counters add by CPU number, as the other units do. */
PCPU_EXPORT long __pcpu_owner_offset;

void pcpu_slot_owner_setup(void)
{
}

int pcpu_slot_owned(void)
{
	return -1;
}

void pcpu_slot_owner_fork_child(void)
{
}

PCPU_EXPORT int __pcpu_cpu_add_owned(int64_t *cpu0, int64_t amount, uint64_t threshold)
{
	return __pcpu_cpu_add_pair_atomic(cpu0, amount, threshold, PCPU_SLOT_ARMED);
}
#endif
