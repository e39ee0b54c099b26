/* SPDX-License-Identifier: MIT */
/*
 * fork() while another thread reads a summary (pcpu_summary_quantile(),
 * pcpu_summary_count()) and a third scrapes: the child can read and
 * scrape it. A plain program, as exemplar_fork.c (see its head).
 *
 * The hazard: 0.5's first summaries kept their readers' state under a
 * lock of their own that no fork handler took, so a fork while the reader
 * held it left the lock held in the child, whose first read waited for
 * ever. The state is under the metrics lock now, which the fork handlers
 * take. An alarm turns a hang into a failure.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/metrics.h>
#include <percpu/summary.h>

#define PCPU_CHECK_PROGRAM "summary-fork"
#include "check.h"

#define FORKS 300
#define OBSERVED 1000

static atomic_bool stop;
static struct pcpu_summary *s;

static void *reader(void *arg)
{
	double q;
	uint64_t n;

	(void)arg;
	while (!atomic_load(&stop)) {
		(void)pcpu_summary_quantile(s, 0.5, &q);
		(void)pcpu_summary_count(s, &n, NULL);
	}
	return NULL;
}

static void *scraper(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		FILE *out = fopen("/dev/null", "w");

		if (!out)
			break;
		(void)pcpu_metrics_write(out, PCPU_METRICS_PROMETHEUS);
		fclose(out);
	}
	return NULL;
}

/* The child: one more observation, then both reads and a scrape. */
static int child(void)
{
	FILE *out = fopen("/dev/null", "w");
	uint64_t n = 0;
	double q = NAN;

	alarm(20);
	if (pcpu_summary_observe(s, 7) != 0 || pcpu_summary_quantile(s, 0.5, &q) != 0 ||
	    pcpu_summary_count(s, &n, NULL) != 0 || !out)
		return 1;
	if (pcpu_metrics_write(out, PCPU_METRICS_PROMETHEUS) != 0)
		return 2;
	fclose(out);
	return n == OBSERVED + 1 && q > 0 ? 0 : 3;
}

int main(void)
{
	static const double quantiles[] = { 0.5, 0.99 };
	pthread_t r, w;

#ifdef __SANITIZE_ADDRESS__
	puts("summary-fork: skipped under AddressSanitizer (its allocator and fork())");
	return 77;
#endif
	if (getenv("PCPU_TEST_SMALL") || getenv("PCPU_TEST_UNDER_QEMU")) {
		puts("summary-fork: skipped under valgrind and qemu-user");
		return 77;
	}
	alarm(60);
	s = pcpu_summary_create(&(struct pcpu_summary_desc){
		.name = "fork_latency", .quantiles = quantiles, .nr_quantiles = 2 });
	CHECK(1, s != NULL);
	for (int64_t v = 1; v <= OBSERVED; v++)
		CHECK(2, pcpu_summary_observe(s, v) == 0);
	CHECK(3, pthread_create(&r, NULL, reader, NULL) == 0);
	CHECK(4, pthread_create(&w, NULL, scraper, NULL) == 0);
	for (int i = 0; i < FORKS; i++) {
		pid_t pid;
		int status;

		fflush(NULL);
		pid = fork();
		CHECK(5, pid != -1);
		if (pid == 0)
			_exit(child());
		CHECK(6, waitpid(pid, &status, 0) == pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fprintf(stderr, "summary-fork: child %d: status %d\n", i, status);
		CHECK(7, WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	atomic_store(&stop, true);
	pthread_join(r, NULL);
	pthread_join(w, NULL);
	pcpu_summary_destroy(s);
	printf("summary-fork: %d forks beside a summary's reader and a scraper\n", FORKS);
	return 0;
}
