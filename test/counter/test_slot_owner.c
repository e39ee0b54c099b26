// SPDX-License-Identifier: MIT
/*
 * Slot owners (lib/base/slot_owner.c): on the atomic path a thread adds to the
 * counter slot it owns while it lives. Seen from outside: an add below the
 * threshold by a thread that owns a slot stays pending (read() does not
 * move), and one by a thread that owns none goes to the central value
 * (read() moves). Each test forces the atomic path before its process's
 * first initialiser (Criterion runs each test in a process of its own).
 */
#define _GNU_SOURCE
#include "pcpu_test.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>

#include <percpu/counter.h>

#include "base/slot_owner.h" /* PCPU_SLOT_OWNERS */

static struct pcpu_counter c;

static void force_atomic_path(void)
{
	cr_assert_eq(setenv("PCPU_FORCE_FALLBACK", "1", 1), 0);
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	if (c.mode != PCPU_CPU_ATOMIC)
		cr_skip_test("the update path was chosen before this test");
	if (!PCPU_SLOT_OWNERS)
		cr_skip_test("no lock-free 64-bit atomics here: adds go by CPU number");
}

/* Threads that each add 1 (below every threshold), all alive at once. */
struct crowd {
	pthread_barrier_t added, leave;
};

static void *add_one_and_wait(void *arg)
{
	struct crowd *k = arg;

	pcpu_counter_add(&c, 1);
	pthread_barrier_wait(&k->added);
	pthread_barrier_wait(&k->leave);
	return NULL;
}

/* Starts @n threads that each add 1 and hold on; returns once all added. */
static void crowd_start(struct crowd *k, pthread_t *t, unsigned int n)
{
	cr_assert_eq(pthread_barrier_init(&k->added, NULL, n + 1), 0);
	cr_assert_eq(pthread_barrier_init(&k->leave, NULL, n + 1), 0);
	for (unsigned int i = 0; i < n; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, add_one_and_wait, k), 0);
	pthread_barrier_wait(&k->added);
}

static void crowd_leave(struct crowd *k, pthread_t *t, unsigned int n)
{
	pthread_barrier_wait(&k->leave);
	for (unsigned int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&k->added);
	pthread_barrier_destroy(&k->leave);
}

PCPU_TEST(slot_owner, a_slot_per_thread_up_to_the_possible_cpus_then_the_central_value)
{
	unsigned int n;
	struct crowd k;
	pthread_t *t;

	force_atomic_path();
	n = pcpu_cpu_possible();
	t = calloc(n + 2, sizeof(*t));
	cr_assert(t);
	/* n + 2 threads alive at once: n own a slot, 2 have none */
	crowd_start(&k, t, n + 2);
	cr_assert_eq(pcpu_counter_sum(&c), n + 2);
	cr_assert_eq(pcpu_counter_read(&c), 2, "read %" PRId64 ": %u slots for %u threads",
		     pcpu_counter_read(&c), n, n + 2);
	crowd_leave(&k, t, n + 2);
	/* the slots came back at exit: n new threads own them all again */
	crowd_start(&k, t, n);
	cr_assert_eq(pcpu_counter_read(&c), 2, "a slot was not given back at a thread's exit");
	crowd_leave(&k, t, n);
	cr_assert_eq(pcpu_counter_sum(&c), 2 * n + 2);
	cr_assert_leq(pcpu_test_distance(pcpu_counter_read(&c), pcpu_counter_sum(&c)),
		      pcpu_counter_error_bound(&c));
	pcpu_counter_destroy(&c);
	free(t);
}

/* In the child: only this thread is left, so the others' slots are free. */
static int threads_of_the_child_own_slots(void *arg)
{
	int64_t before = pcpu_counter_read(&c);
	unsigned int n = pcpu_cpu_possible() - 1;
	struct crowd k;
	pthread_t *t = calloc(n ? n : 1, sizeof(*t));

	(void)arg;
	if (!t)
		return 1;
	if (pthread_barrier_init(&k.added, NULL, n + 1) != 0 ||
	    pthread_barrier_init(&k.leave, NULL, n + 1) != 0)
		return 1;
	for (unsigned int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, add_one_and_wait, &k) != 0)
			return 1;
	pthread_barrier_wait(&k.added);
	if (pcpu_counter_read(&c) != before)
		return 2; /* some of them found no free slot */
	pthread_barrier_wait(&k.leave);
	for (unsigned int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t); /* valgrind checks the child's leaks at its exit */
	if (pcpu_counter_sum(&c) != 2 * (int64_t)n + 1)
		return 3;
	return 0;
}

PCPU_TEST(slot_owner, a_forked_child_keeps_only_the_forking_threads_slot)
{
	/* static: still reachable when the child exits, for valgrind's leak check */
	static pthread_t *t;
	unsigned int n;
	struct crowd k;
	int status;

	pcpu_test_skip_under_qemu(); /* qemu-user 7.2 aborts on threads made in a forked child */
	force_atomic_path();
	n = pcpu_cpu_possible();
	t = calloc(n, sizeof(*t));
	cr_assert(t);
	pcpu_counter_add(&c, 1); /* this thread owns a slot */
	crowd_start(&k, t, n - 1); /* and the others own the rest */
	cr_assert_eq(pcpu_counter_read(&c), 0);
	status = pcpu_test_in_child(threads_of_the_child_own_slots, NULL, 30);
	pcpu_test_assert_child_passed(status, "in the child (1 setup, 2 a thread without a slot, "
					      "3 sum)");
	crowd_leave(&k, t, n - 1);
	pcpu_counter_destroy(&c);
	free(t);
}

#if !PCPU_ARCH_HAVE_CAS_PAIR
#include "base/pair.h" /* pcpu_pair_debug_swap_hook */

#define LOCKED_T INT64_C(32)

/*
 * What the owner of the slot could do, on another CPU, while a fold holds
 * the pair lock between its compare and its store of the mark: two adds,
 * each within the threshold against the mark it loads (the old one), that
 * together are 2T - 1 away from the mark the fold stores.
 */
static void owner_adds_inside_a_swap(int64_t *pair)
{
	pcpu_pair_debug_swap_hook = NULL; /* once */
	cr_assert_eq(__pcpu_owner_add(0, pair, -LOCKED_T, (uint64_t)LOCKED_T), 1);
	cr_assert_eq(__pcpu_owner_add(0, pair, -(LOCKED_T - 1), (uint64_t)LOCKED_T), 1);
}
#endif

/*
 * Where pairs are swapped under a lock the owner's add takes no lock: a
 * fold that stored its mark over adds that landed after its compare goes
 * on and folds them too (pcpu_armed_settled(), lib/base/fold.h). Without that,
 * 2T - 1 stays pending here: |read - exact| past the bound.
 */
PCPU_TEST(slot_owner, a_fold_under_a_lock_also_folds_adds_that_landed_inside_its_swap)
{
#if PCPU_ARCH_HAVE_CAS_PAIR
	cr_skip_test("the pair swap is one instruction here: nothing lands inside it");
#else
	struct pcpu_counter_options o = { .batch = LOCKED_T + 1 };
	int64_t exact = LOCKED_T - 1 - LOCKED_T - (LOCKED_T - 1);
	uint64_t worst = 0;

	cr_assert_eq(setenv("PCPU_FORCE_FALLBACK", "1", 1), 0);
	cr_assert_eq(pcpu_counter_init_opts(&c, 0, &o), 0);
	if (!PCPU_SLOT_OWNERS)
		cr_skip_test("no lock-free 64-bit atomics here: adds go by CPU number");
	pcpu_counter_add(&c, 0); /* this thread claims a slot */
	pcpu_counter_add(&c, LOCKED_T - 1);
	cr_assert_eq(pcpu_counter_read(&c), 0, "the add did not stay in an owned slot");
	pcpu_pair_debug_swap_hook = owner_adds_inside_a_swap;
	(void)pcpu_counter_sync_if_delta_above(&c, 0); /* folds every slot */
	cr_assert_null(pcpu_pair_debug_swap_hook, "no fold swapped a pair");
	for (unsigned int cpu = 0; cpu < pcpu_cpu_possible(); cpu++) {
		const struct pcpu_slot *s =
			(const struct pcpu_slot *)(const void *)((const char *)c.slots +
								  (size_t)cpu * PCPU_STRIDE);
		uint64_t p = pcpu_test_slot_distance(s->value, s->mark);

		worst = p > worst ? p : worst;
	}
	cr_assert_eq(pcpu_counter_sum(&c), exact);
	cr_assert_leq(worst, c.threshold_max, "a slot holds %" PRIu64 " pending", worst);
	cr_assert_leq(pcpu_test_distance(pcpu_counter_read(&c), exact), pcpu_counter_error_bound(&c),
		      "read %" PRId64 ", exact %" PRId64, pcpu_counter_read(&c), exact);
	pcpu_counter_destroy(&c);
#endif
}
