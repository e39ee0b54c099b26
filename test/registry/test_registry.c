/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of <percpu/registry.h>: the count of live counters, folding
 * every live counter at once, and the refresher thread's lifecycle.
 */
#include "../counter/helpers.h"

#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/registry.h>

TestSuite(registry, .timeout = 30);

PCPU_TEST(registry, count_follows_init_and_destroy)
{
	struct pcpu_counter a, b;
	size_t live = pcpu_registry_count();

	cr_assert_eq(pcpu_counter_init(&a, 0), 0);
	cr_assert_eq(pcpu_registry_count(), live + 1);
	cr_assert_eq(pcpu_counter_init(&b, 0), 0);
	cr_assert_eq(pcpu_registry_count(), live + 2);
	pcpu_counter_destroy(&a);
	cr_assert_eq(pcpu_registry_count(), live + 1);
	pcpu_counter_destroy(&a);
	cr_assert_eq(pcpu_registry_count(), live + 1, "double destroy unregistered twice");
	pcpu_counter_destroy(&b);
	cr_assert_eq(pcpu_registry_count(), live);
}

PCPU_TEST(registry, count_follows_init_many_and_destroy_many)
{
	struct pcpu_counter many[7];
	size_t live = pcpu_registry_count();

	cr_assert_eq(pcpu_counter_init_many(many, 0, 7), 0);
	cr_assert_eq(pcpu_registry_count(), live + 7);
	pcpu_counter_destroy(&many[3]);
	cr_assert_eq(pcpu_registry_count(), live + 6);
	pcpu_counter_destroy_many(many, 7);
	cr_assert_eq(pcpu_registry_count(), live);
}

PCPU_TEST(registry, count_ignores_failed_inits)
{
	struct pcpu_counter a;
	struct pcpu_counter_options bad = { .accuracy = -1 };
	size_t live = pcpu_registry_count();

	cr_assert_eq(pcpu_counter_init_opts(&a, 0, &bad), -EINVAL);
	cr_assert_eq(pcpu_counter_init_many(&a, 0, 0), -EINVAL);
	cr_assert_eq(pcpu_registry_count(), live);
}

PCPU_TEST(registry, fold_all_folds_every_cpu_of_every_live_counter)
{
	struct pcpu_counter many[3];
	int cpus[8];
	int n = pcpu_test_allowed_cpus(cpus, 8);

	cr_assert_eq(pcpu_counter_init_many(many, 100, 3), 0);
	for (int i = 0; i < n; i++) {
		cr_assert(pcpu_test_pin(cpus[i]));
		for (int j = 0; j < 3; j++)
			pcpu_counter_add(&many[j], (j + 1) * (i % 2 ? -5 : 7));
	}
	for (int j = 0; j < 3; j++)
		cr_assert_eq(pcpu_counter_read(&many[j]), 100, "delta folded too early");
	pcpu_registry_fold_all();
	for (int j = 0; j < 3; j++) {
		cr_assert_eq(pcpu_counter_read(&many[j]), pcpu_counter_sum(&many[j]));
		cr_assert_neq(pcpu_counter_read(&many[j]), 100);
	}
	pcpu_counter_destroy_many(many, 3);
}

PCPU_TEST(registry, fold_all_skips_destroyed_counters)
{
	struct pcpu_counter many[3];

	cr_assert_eq(pcpu_counter_init_many(many, 0, 3), 0);
	pcpu_test_pin_first();
	for (int j = 0; j < 3; j++)
		pcpu_counter_add(&many[j], 9);
	pcpu_counter_destroy(&many[1]);
	memset(&many[1], 0xa5, sizeof(many[1])); /* reused by the caller */
	pcpu_registry_fold_all();
	cr_assert_eq(pcpu_counter_read(&many[0]), 9);
	cr_assert_eq(pcpu_counter_read(&many[2]), 9);
	memset(&many[1], 0, sizeof(many[1]));
	pcpu_counter_destroy_many(many, 3);
}

PCPU_TEST(registry, fold_all_with_no_live_counter_does_nothing)
{
	cr_assert_eq(pcpu_registry_count(), 0);
	pcpu_registry_fold_all();
	cr_assert_eq(pcpu_registry_count(), 0);
}

PCPU_TEST(registry, refresher_start_rejects_bad_intervals_with_einval)
{
	cr_assert_eq(pcpu_refresher_start(0), -EINVAL);
	cr_assert_eq(pcpu_refresher_start(3600001), -EINVAL);
	cr_assert_eq(pcpu_refresher_start(UINT32_MAX), -EINVAL);
	pcpu_refresher_stop(); /* none runs: a no-op */
}

PCPU_TEST(registry, refresher_start_twice_returns_ebusy)
{
	cr_assert_eq(pcpu_refresher_start(50), 0);
	cr_assert_eq(pcpu_refresher_start(50), -EBUSY);
	cr_assert_eq(pcpu_refresher_start(1), -EBUSY);
	cr_assert_eq(pcpu_refresher_start(0), -EINVAL, "bad interval must be checked first");
	pcpu_refresher_stop();
}

PCPU_TEST(registry, refresher_can_restart_after_stop)
{
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(pcpu_refresher_start(10), 0);
		pcpu_refresher_stop();
	}
	pcpu_refresher_stop();
	pcpu_refresher_stop();
}

PCPU_TEST(registry, refresher_stop_without_start_returns)
{
	pcpu_refresher_stop();
	cr_assert_eq(pcpu_refresher_start(5), 0, "stop must leave the refresher startable");
	pcpu_refresher_stop();
}

PCPU_TEST(registry, refresher_stop_wakes_a_long_interval_at_once)
{
	double t0;

	cr_assert_eq(pcpu_refresher_start(3600000), 0);
	usleep(10000);
	t0 = pcpu_test_now();
	pcpu_refresher_stop();
	cr_assert_lt(pcpu_test_now() - t0, 2.0, "stop waited for the interval");
}

PCPU_TEST(registry, refresher_folds_pending_deltas_in_the_background)
{
	struct pcpu_counter a;
	double deadline;

	cr_assert_eq(pcpu_counter_init(&a, 0), 0);
	pcpu_test_pin_first();
	pcpu_counter_add(&a, 20);
	cr_assert_eq(pcpu_counter_read(&a), 0);
	cr_assert_eq(pcpu_refresher_start(5), 0);
	deadline = pcpu_test_now() + 10.0;
	while (pcpu_counter_read(&a) != 20 && pcpu_test_now() < deadline)
		usleep(1000);
	pcpu_refresher_stop();
	cr_assert_eq(pcpu_counter_read(&a), 20, "the refresher did not fold");
	pcpu_counter_destroy(&a);
}

struct churn {
	volatile bool stop;
	long rounds;
};

static void *churn_counters(void *arg)
{
	struct churn *ch = arg;

	while (!__atomic_load_n(&ch->stop, __ATOMIC_RELAXED)) {
		struct pcpu_counter tmp[3];

		if (pcpu_counter_init_many(tmp, 1, 3) != 0)
			break;
		pcpu_counter_add(&tmp[0], 5);
		pcpu_counter_destroy(&tmp[1]);
		pcpu_counter_destroy_many(tmp, 3);
		__atomic_add_fetch(&ch->rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

PCPU_TEST(registry, fold_all_is_safe_while_counters_come_and_go)
{
	struct pcpu_counter a;
	struct churn ch = { 0 };
	pthread_t t;
	int64_t exact = 0;
	long n = pcpu_test_iterations(20000);

	cr_assert_eq(pcpu_counter_init(&a, 0), 0);
	cr_assert_eq(pthread_create(&t, NULL, churn_counters, &ch), 0);
	/* at least n adds, and until the other thread has churned a while */
	for (long i = 0; i < n || (__atomic_load_n(&ch.rounds, __ATOMIC_RELAXED) < 100 &&
				   i < 1000 * n); i++) {
		pcpu_counter_add(&a, i % 5);
		exact += i % 5;
		if (i % 16 == 0)
			pcpu_registry_fold_all();
	}
	__atomic_store_n(&ch.stop, true, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	cr_assert_gt(ch.rounds, 0);
	pcpu_test_assert_exact(&a, exact);
	pcpu_counter_destroy(&a);
	cr_assert_eq(pcpu_registry_count(), 0);
}
