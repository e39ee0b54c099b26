/* SPDX-License-Identifier: MIT */
/*
 * Counters initialised statically with PCPU_COUNTER_INITIALIZER(): exact
 * and without memory until their first add, set up once by that add
 * whichever thread makes it (even before main()), and any counter after.
 * Criterion runs each test in a child forked from the runner, so each test
 * finds the counters below as the runner left them: the constructor's add
 * done, the others never touched.
 */
#include "helpers.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/registry.h>

static struct pcpu_counter untouched = PCPU_COUNTER_INITIALIZER(1000);
static struct pcpu_counter raced = PCPU_COUNTER_INITIALIZER(0);
static struct pcpu_counter before_main = PCPU_COUNTER_INITIALIZER(7);

#define BEFORE_MAIN_AMOUNT 4096

/* An allocator's statistics are counted before main(): so is this. */
__attribute__((constructor)) static void add_before_main(void)
{
	pcpu_counter_add(&before_main, BEFORE_MAIN_AMOUNT);
	pcpu_counter_add(&before_main, -1);
}

TestSuite(counter_static, .timeout = 60);

PCPU_TEST(counter_static, holds_its_value_exactly_and_takes_nothing_before_its_first_add)
{
	size_t counters = pcpu_registry_count();

	cr_assert_not(pcpu_counter_initialized(&untouched));
	cr_assert_eq(pcpu_counter_read(&untouched), 1000);
	cr_assert_eq(pcpu_counter_sum(&untouched), 1000);
	cr_assert_eq(pcpu_counter_error_bound(&untouched), 0);
	cr_assert_eq(pcpu_counter_compare(&untouched, 1000), 0);
	cr_assert_eq(pcpu_counter_compare(&untouched, 999), 1);
	cr_assert_eq(pcpu_counter_compare(&untouched, 1001), -1);
	cr_assert_eq(pcpu_counter_sync_if_delta_above(&untouched, 0), 1000);
	pcpu_counter_fold_this_cpu(&untouched);
	/* none of these set it up */
	cr_assert_not(pcpu_counter_initialized(&untouched));
	cr_assert_eq(pcpu_registry_count(), counters);
}

PCPU_TEST(counter_static, set_before_the_first_add_stores_the_value)
{
	pcpu_counter_set(&untouched, -5);
	cr_assert_not(pcpu_counter_initialized(&untouched));
	cr_assert_eq(pcpu_counter_read(&untouched), -5);
	pcpu_counter_add(&untouched, 3);
	pcpu_test_assert_exact(&untouched, -2);
}

PCPU_TEST(counter_static, the_first_add_sets_it_up_as_a_counter)
{
	size_t counters = pcpu_registry_count();

	pcpu_counter_add(&untouched, 24);
	cr_assert(pcpu_counter_initialized(&untouched));
	cr_assert_eq(pcpu_registry_count(), counters + 1);
	pcpu_test_assert_exact(&untouched, 1024);
	/* from here on it is any counter: the default elastic threshold, a bound */
	for (int i = 0; i < 10000; i++)
		pcpu_counter_add(&untouched, 3);
	pcpu_test_assert_exact(&untouched, 31024);
	cr_assert_gt(pcpu_counter_error_bound(&untouched), 0);
	pcpu_counter_destroy(&untouched);
	cr_assert_not(pcpu_counter_initialized(&untouched));
	cr_assert_eq(pcpu_registry_count(), counters);
}

PCPU_TEST(counter_static, a_limited_add_sets_it_up_too)
{
	cr_assert(pcpu_counter_limited_add(&untouched, 1010, 10));
	cr_assert(pcpu_counter_initialized(&untouched));
	cr_assert_not(pcpu_counter_limited_add(&untouched, 1010, 1));
	pcpu_test_assert_exact(&untouched, 1010);
}

PCPU_TEST(counter_static, an_add_before_main_counts)
{
	cr_assert(pcpu_counter_initialized(&before_main));
	pcpu_test_assert_exact(&before_main, 7 + BEFORE_MAIN_AMOUNT - 1);
}

#define RACERS 8
#define RACER_ADDS 20000

static pthread_barrier_t start;

static void *race_first_add(void *arg)
{
	int64_t amount = (int64_t)(intptr_t)arg;

	pthread_barrier_wait(&start);
	for (int i = 0; i < RACER_ADDS; i++)
		pcpu_counter_add(&raced, amount);
	return NULL;
}

PCPU_TEST(counter_static, threads_racing_to_the_first_add_set_it_up_once_and_lose_nothing)
{
	pthread_t threads[RACERS];
	size_t counters = pcpu_registry_count();
	int64_t exact = 0;

	cr_assert_eq(pthread_barrier_init(&start, NULL, RACERS), 0);
	for (int i = 0; i < RACERS; i++) {
		/* mixed signs and sizes, some above the threshold */
		int64_t amount = (i % 2 ? -1 : 1) * (int64_t)(1 + i * 97);

		exact += amount * RACER_ADDS;
		cr_assert_eq(pthread_create(&threads[i], NULL, race_first_add,
					    (void *)(intptr_t)amount), 0);
	}
	for (int i = 0; i < RACERS; i++)
		pthread_join(threads[i], NULL);
	pthread_barrier_destroy(&start);
	cr_assert_eq(pcpu_registry_count(), counters + 1, "set up %zu times",
		     pcpu_registry_count() - counters);
	pcpu_test_assert_exact(&raced, exact);
}

PCPU_TEST(counter_static, a_forked_child_counts_on_from_the_parents_value)
{
	pid_t pid;
	int status;

	pcpu_counter_add(&raced, 100);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pcpu_counter_add(&raced, 50);
		_exit(pcpu_counter_sum(&raced) == 150 ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	pcpu_test_assert_exact(&raced, 100);
}

/* ---- compare_value() (any counter; here a static one and an initialised one) ---- */

PCPU_TEST(counter_static, compare_value_gives_the_exact_sum_when_the_bound_straddles)
{
	struct pcpu_counter c;
	int64_t value;
	uint64_t error;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert(pcpu_test_pin(0));
	/* within this CPU's threshold: the add stays in its slot, read() is behind */
	pcpu_counter_add(&c, 5);
	cr_assert_eq(pcpu_counter_read(&c), 0);
	cr_assert_eq(pcpu_counter_compare_value(&c, 5, &value, &error), 0);
	cr_assert_eq(value, 5);
	cr_assert_eq(error, 0);
	cr_assert_eq(pcpu_counter_compare_value(&c, 4, &value, &error), 1);
	cr_assert_eq(value, 5);
	cr_assert_eq(error, 0);
	pcpu_counter_destroy(&c);
}

PCPU_TEST(counter_static, compare_value_gives_read_and_its_bound_far_from_rhs)
{
	struct pcpu_counter c;
	int64_t value;
	uint64_t error;

	cr_assert_eq(pcpu_counter_init(&c, 1000000), 0);
	pcpu_counter_add(&c, 7);
	cr_assert_eq(pcpu_counter_compare_value(&c, 10, &value, &error), 1);
	cr_assert_eq(value, pcpu_counter_read(&c));
	cr_assert_eq(error, pcpu_counter_error_bound(&c));
	cr_assert_leq(pcpu_test_distance(value, 1000007), error);
	cr_assert_eq(pcpu_counter_compare_value(&c, 100000000, &value, &error), -1);
	cr_assert_eq(error, pcpu_counter_error_bound(&c));
	pcpu_counter_destroy(&c);
}

PCPU_TEST(counter_static, compare_value_of_a_static_counter_not_set_up_is_exact)
{
	int64_t value;
	uint64_t error;

	cr_assert_eq(pcpu_counter_compare_value(&untouched, 2000, &value, &error), -1);
	cr_assert_eq(value, 1000);
	cr_assert_eq(error, 0);
	cr_assert_not(pcpu_counter_initialized(&untouched));
}
