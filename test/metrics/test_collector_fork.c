/* SPDX-License-Identifier: MIT */
/*
 * Collectors run outside every lock that fork() or registration takes
 * (issue 24, defect 3): while a slow collector runs, fork() and
 * registration return at once; removing a collector waits for the walks
 * running it; a child forked meanwhile can scrape and remove it.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/family.h>
#include <percpu/gauge.h>
#include <percpu/metrics.h>

#include "helpers.h"
#include "pcpu_test.h"

TestSuite(collector_fork, .timeout = 60);

#define SLOW_MS 1000
/* what fork() or a registration may take while the collector sleeps */
#define QUICK_MS (pcpu_test_small() ? 600 : 250)

static atomic_int running, finished;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int slow(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx, void *arg)
{
	struct pcpu_metric_sample s = { .name = "slow_depth", .help = "", .unit = "",
					.kind = PCPU_METRIC_GAUGE, .value = 1, .scale = 1 };

	(void)arg;
	atomic_fetch_add(&running, 1);
	usleep(SLOW_MS * 1000);
	atomic_fetch_add(&finished, 1);
	return emit(&s, ctx);
}

static void *scrape(void *p)
{
	(void)p;
	return metrics_text(PCPU_METRICS_PROMETHEUS);
}

static void start_slow_scrape(pthread_t *t)
{
	atomic_store(&running, 0);
	atomic_store(&finished, 0);
	cr_assert_eq(pcpu_metrics_collector_add(slow, NULL), 0);
	pthread_create(t, NULL, scrape, NULL);
	while (atomic_load(&running) == 0)
		usleep(1000);
}

static void end_slow_scrape(pthread_t t)
{
	char *text;

	pthread_join(t, (void **)&text);
	cr_assert_not_null(text);
	cr_expect(metrics_has_line(text, "slow_depth 1"), "%s", text);
	free(text);
}

PCPU_TEST(collector_fork, fork_and_registration_do_not_wait_for_a_slow_collector)
{
	struct pcpu_counter c;
	struct pcpu_gauge g = { 0 };
	struct pcpu_family *f;
	pthread_t t;
	double t0, fork_ms, reg_ms, fam_ms;
	pid_t pid;
	int st;

	/* one slow scrape for each, so that none waits only for another's */
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	start_slow_scrape(&t);
	t0 = now_ms();
	pid = fork();
	if (pid == 0)
		_exit(0);
	fork_ms = now_ms() - t0;
	cr_assert_gt(pid, 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect_eq(atomic_load(&finished), 0, "the collector ended first: no evidence");
	end_slow_scrape(t);
	cr_assert_eq(pcpu_metrics_collector_remove(slow, NULL), 0);

	start_slow_scrape(&t);
	t0 = now_ms();
	cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
		.name = "slow_registered", .kind = PCPU_METRIC_COUNTER }), 0);
	cr_assert_eq(pcpu_gauge_register(&g, &(struct pcpu_metric_desc){
		.name = "slow_gauge", .kind = PCPU_METRIC_GAUGE }), 0);
	reg_ms = now_ms() - t0;
	cr_expect_eq(atomic_load(&finished), 0, "the collector ended first: no evidence");
	end_slow_scrape(t);
	cr_assert_eq(pcpu_metrics_collector_remove(slow, NULL), 0);

	start_slow_scrape(&t);
	t0 = now_ms();
	f = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "slow_family", .kind = PCPU_METRIC_COUNTER,
		.label_names = (const char *const[]){ "k", NULL } });
	fam_ms = now_ms() - t0;
	cr_assert_not_null(f);

	fprintf(stderr, "# behind a %d ms collector: fork %.1f ms, registrations %.1f ms, "
		"family %.1f ms\n", SLOW_MS, fork_ms, reg_ms, fam_ms);
	cr_expect_eq(atomic_load(&finished), 0, "the collector ended first: no evidence");
	cr_expect_lt(fork_ms, QUICK_MS, "fork() took %.1f ms", fork_ms);
	cr_expect_lt(reg_ms, QUICK_MS, "registration took %.1f ms", reg_ms);
	cr_expect_lt(fam_ms, QUICK_MS, "family creation took %.1f ms", fam_ms);
	end_slow_scrape(t);
	cr_assert_eq(pcpu_metrics_collector_remove(slow, NULL), 0);
	pcpu_family_destroy(f);
	pcpu_gauge_unregister(&g);
	pcpu_counter_destroy(&c);
}

PCPU_TEST(collector_fork, removal_waits_for_the_walks_running_the_collector)
{
	pthread_t t;

	start_slow_scrape(&t);
	cr_assert_eq(pcpu_metrics_collector_remove(slow, NULL), 0);
	cr_expect_eq(atomic_load(&finished), 1, "removed while it ran");
	end_slow_scrape(t);
	cr_expect_eq(pcpu_metrics_collector_remove(slow, NULL), -ENOENT);
}

PCPU_TEST(collector_fork, a_child_forked_during_a_collector_scrapes_and_removes_it)
{
	pthread_t t;
	pid_t pid;
	int st;

	/* the scraping thread's allocations are unreachable in the child */
	if (pcpu_test_on_valgrind())
		cr_skip_test("valgrind reports the other threads' allocations in flight as leaks");
	start_slow_scrape(&t);
	pid = fork();
	if (pid == 0) {
		char *text;

		alarm(10);
		/* the parent's walk has no thread here: its pin must not hold removal */
		if (pcpu_metrics_collector_remove(slow, NULL) != 0)
			_exit(3);
		text = metrics_text(PCPU_METRICS_PROMETHEUS);
		_exit(text && !strstr(text, "slow_depth") ? 0 : 4);
	}
	cr_assert_gt(pid, 0);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	end_slow_scrape(t);
	cr_assert_eq(pcpu_metrics_collector_remove(slow, NULL), 0);
}
