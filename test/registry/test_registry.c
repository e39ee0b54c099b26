/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of <percpu/registry.h>: the count of live counters, folding
 * every live counter at once, the refresher thread's lifecycle (in a forked
 * child and with concurrent stops too), and destroy without a grace period
 * per call. A check that could hang runs in a child with a deadline
 * (pcpu_test_in_child()), so a hang fails the test instead of the suite.
 */
#include "../counter/helpers.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <urcu-bp.h>

#include <percpu/counter.h>
#include <percpu/registry.h>
#include <percpu/stat.h>

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

/* ---- the refresher in a forked child, and concurrent stops ------------- */

static struct pcpu_counter forked;

/*
 * In the child: no refresher runs (threads do not survive fork), so start
 * must succeed, and the refresher it starts must fold there: a pending
 * delta reaches read() before the deadline. Returns the failed check.
 */
static int refresher_in_the_child(void *arg)
{
	double deadline;

	(void)arg;
	if (pcpu_test_try_pin_first() < 0)
		return 1;
	pcpu_counter_add(&forked, 20); /* below the floor: pending */
	if (pcpu_counter_read(&forked) != 100)
		return 2;
	if (pcpu_refresher_start(5) != 0)
		return 3;
	deadline = pcpu_test_now() + 15.0;
	while (pcpu_counter_read(&forked) != 120 && pcpu_test_now() < deadline)
		usleep(1000);
	if (pcpu_counter_read(&forked) != 120)
		return 4;
	pcpu_refresher_stop();
	if (pcpu_refresher_start(5) != 0) /* and again, after a stop */
		return 5;
	pcpu_refresher_stop();
	pcpu_counter_destroy(&forked);
	return 0;
}

/* Does every thread of this process but the caller sleep (state S)? */
static bool other_threads_asleep(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	bool asleep = d != NULL;

	while (asleep && (de = readdir(d))) {
		char path[300], stat[512], *end;
		FILE *f;

		if (de->d_name[0] == '.' || atoi(de->d_name) == gettid())
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* it has exited */
		if (!fgets(stat, sizeof(stat), f))
			stat[0] = 0;
		fclose(f);
		end = strrchr(stat, ')'); /* "tid (comm) S ...": comm may hold anything */
		asleep = end && end[1] == ' ' && end[2] == 'S';
	}
	if (d)
		closedir(d);
	return asleep;
}

PCPU_TEST(registry, a_forked_child_can_start_a_refresher_that_folds_there)
{
	int status;

	pcpu_test_skip_under_qemu();
	cr_assert_eq(pcpu_counter_init(&forked, 100), 0);
	/* the parent's refresher runs, with an interval that never comes */
	cr_assert_eq(pcpu_refresher_start(3600000), 0);
	/*
	 * Fork once it waits: a thread just started may be inside malloc(),
	 * and gcc 12's ASan takes no allocator lock around fork, so the
	 * child's next allocation (its own refresher's start) would wait for
	 * good (1 in about 60 runs, check 4).
	 */
	for (int ms = 0; ms < 2000 && !other_threads_asleep(); ms++)
		usleep(1000);
	status = pcpu_test_in_child(refresher_in_the_child, NULL, 25);
	pcpu_test_assert_child_passed(status, "start in the child (1 pin, 2 pending, 3 start "
					      "returned non-zero, 4 no fold, 5 restart)");
	cr_assert_eq(pcpu_refresher_start(5), -EBUSY, "the parent's refresher must still run");
	pcpu_refresher_stop();
	cr_assert_eq(pcpu_counter_read(&forked), 100, "the child's add reached the parent");
	pcpu_counter_destroy(&forked);
}

static pthread_barrier_t stoppers_ready;

static void *stop_refresher(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&stoppers_ready);
	pcpu_refresher_stop();
	return NULL;
}

/* Two threads stop one refresher at once, many times; both must return. */
static int two_stoppers(void *arg)
{
	long rounds = *(const long *)arg;

	if (pthread_barrier_init(&stoppers_ready, NULL, 2) != 0)
		return 1;
	for (long i = 0; i < rounds; i++) {
		pthread_t t[2];

		if (pcpu_refresher_start(1) != 0)
			return 2;
		for (int k = 0; k < 2; k++)
			if (pthread_create(&t[k], NULL, stop_refresher, NULL) != 0)
				return 3;
		for (int k = 0; k < 2; k++)
			if (pthread_join(t[k], NULL) != 0)
				return 4;
	}
	/* stopped, so startable again */
	if (pcpu_refresher_start(1) != 0)
		return 5;
	pcpu_refresher_stop();
	pthread_barrier_destroy(&stoppers_ready);
	return 0;
}

PCPU_TEST(registry, two_concurrent_stops_both_return_and_leave_it_startable)
{
	long rounds = pcpu_test_iterations(500);
	int status;

	pcpu_test_skip_under_qemu();
	/* the deadline comes before the suite's timeout, to report a hang as one */
	status = pcpu_test_in_child(two_stoppers, &rounds, 20);

	pcpu_test_assert_child_passed(status, "concurrent stops (2 start, 3 create, 4 join, "
					      "5 restart)");
}

PCPU_TEST(registry, start_stop_start_works_and_the_second_refresher_folds)
{
	struct pcpu_counter a;
	double deadline;

	cr_assert_eq(pcpu_counter_init(&a, 0), 0);
	cr_assert_eq(pcpu_refresher_start(5), 0);
	pcpu_refresher_stop();
	pcpu_test_pin_first();
	pcpu_counter_add(&a, 20);
	cr_assert_eq(pcpu_counter_read(&a), 0, "folded with no refresher running");
	cr_assert_eq(pcpu_refresher_start(5), 0, "start after stop");
	deadline = pcpu_test_now() + 20.0;
	while (pcpu_counter_read(&a) != 20 && pcpu_test_now() < deadline)
		usleep(1000);
	pcpu_refresher_stop();
	cr_assert_eq(pcpu_counter_read(&a), 20, "the restarted refresher did not fold");
	pcpu_counter_destroy(&a);
}

/* ---- destroy without a grace period per call ---------------------------- */

static volatile bool reader_inside, reader_may_leave;

static void *hold_a_read_side_lock(void *arg)
{
	(void)arg;
	urcu_bp_read_lock();
	__atomic_store_n(&reader_inside, true, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&reader_may_leave, __ATOMIC_ACQUIRE))
		usleep(1000);
	urcu_bp_read_unlock();
	return NULL;
}

/*
 * While another thread sits in an RCU read-side critical section, 10
 * counters and 10 stat sets are made and destroyed: a destroy that waited
 * for a grace period would wait for that reader, and the deadline would
 * kill the child.
 */
static int destroy_beside_a_reader(void *arg)
{
	static const struct pcpu_stat_item item = { .name = "x" };
	static const struct pcpu_stat_desc desc = { .items = &item, .nr_items = 1 };
	struct pcpu_counter cs[10];
	size_t live = pcpu_registry_count();
	pthread_t t;

	(void)arg;
	if (pthread_create(&t, NULL, hold_a_read_side_lock, NULL) != 0)
		return 1;
	while (!__atomic_load_n(&reader_inside, __ATOMIC_ACQUIRE))
		usleep(1000);
	for (int i = 0; i < 10; i++) {
		if (pcpu_counter_init(&cs[i], i) != 0)
			return 2;
		pcpu_counter_add(&cs[i], 1);
		pcpu_counter_destroy(&cs[i]);
	}
	for (int i = 0; i < 10; i++) {
		struct pcpu_stat *s = pcpu_stat_create(&desc);

		if (!s)
			return 3;
		pcpu_stat_add(s, 0, 1);
		pcpu_stat_destroy(s);
	}
	if (pcpu_registry_count() != live)
		return 4;
	__atomic_store_n(&reader_may_leave, true, __ATOMIC_RELEASE);
	if (pthread_join(t, NULL) != 0)
		return 5;
	return 0;
}

PCPU_TEST(registry, destroy_does_not_wait_for_a_reader_in_a_read_side_section)
{
	int status;

	pcpu_test_skip_under_qemu();
	status = pcpu_test_in_child(destroy_beside_a_reader, NULL, 10);
	pcpu_test_assert_child_passed(status, "destroy beside a reader (2 init, 3 create, "
					      "4 count)");
}

PCPU_TEST(registry, making_and_destroying_100k_counters_twice_restores_the_count)
{
	long n = pcpu_test_iterations(100000);
	struct pcpu_counter *cs = calloc((size_t)n, sizeof(*cs));
	size_t live = pcpu_registry_count();

	cr_assert_not_null(cs);
	for (int round = 0; round < 2; round++) {
		for (long i = 0; i < n; i++)
			cr_assert_eq(pcpu_counter_init(&cs[i], i), 0, "round %d, counter %ld", round, i);
		cr_assert_eq(pcpu_registry_count(), live + (size_t)n, "round %d", round);
		for (long i = 0; i < n; i += n / 97 + 1)
			cr_assert_eq(pcpu_counter_sum(&cs[i]), i, "round %d, counter %ld", round, i);
		for (long i = 0; i < n; i++)
			pcpu_counter_destroy(&cs[i]);
		cr_assert_eq(pcpu_registry_count(), live, "round %d", round);
	}
	free(cs);
}
