/* SPDX-License-Identifier: MIT */
/*
 * fork() beside an exemplar writer and a scraper: none of the three waits
 * for good, and the child can record and scrape. A plain program, not a
 * Criterion test: Criterion 2.4.1's runner leaks under LeakSanitizer when
 * a test forks hundreds of times, and its exit then loses the report.
 *
 * The hazard: a lock of the exemplars that fork's handlers took before the
 * metrics lock, while a scrape that holds the metrics lock waits for it,
 * hangs the fork and the scrape (0.4's first exemplar stores did). An
 * alarm turns a hang into a failure.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/histogram.h>
#include <percpu/metrics.h>

#define PCPU_CHECK_PROGRAM "exemplar-fork"
#include "check.h"

#define FORKS 300


static atomic_bool stop;
static struct pcpu_histogram *h;
static const char *const trace[] = { "trace_id", "f0", NULL };
static const char *const child_trace[] = { "trace_id", "child", NULL };

/* The exposition in OpenMetrics (malloc()ed), or NULL. */
static char *scrape(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return NULL;
	if (pcpu_metrics_write(out, PCPU_METRICS_OPENMETRICS) != 0) {
		fclose(out);
		free(text);
		return NULL;
	}
	fclose(out);
	return text;
}

static void *writer(void *arg)
{
	(void)arg;
	for (int64_t v = 0; !atomic_load(&stop); v++)
		pcpu_histogram_observe_exemplar(h, v % 200, trace);
	return NULL;
}

static void *scraper(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		free(scrape());
	return NULL;
}

int main(void)
{
	static const int64_t bounds[] = { 10, 100 };
	pthread_t w, s;

#ifdef __SANITIZE_ADDRESS__
	/*
	 * gcc 12's ASan takes no allocator lock around fork(): a child forked
	 * while the writer is in malloc() waits for good in its own first
	 * malloc(), whatever the library does
	 */
	puts("exemplar-fork: skipped under AddressSanitizer (its allocator and fork())");
	return 77;
#endif

	/*
	 * Not under valgrind (PCPU_TEST_SMALL: meson's valgrind setup), whose
	 * leak check at a child's exit counts the parent's other threads'
	 * blocks as lost, nor under qemu-user
	 */
	if (getenv("PCPU_TEST_SMALL") || getenv("PCPU_TEST_UNDER_QEMU")) {
		puts("exemplar-fork: skipped under valgrind and qemu-user");
		return 77;
	}
	/* a hang anywhere (the parent's fork, a child) fails the program */
	alarm(60);
	h = pcpu_histogram_create(&(struct pcpu_histogram_desc){ .name = "ex_fork",
								  .bounds = bounds, .nr_bounds = 2 });
	CHECK(1, h != NULL);
	CHECK(2, pthread_create(&w, NULL, writer, NULL) == 0);
	CHECK(3, pthread_create(&s, NULL, scraper, NULL) == 0);
	for (int i = 0; i < FORKS; i++) {
		pid_t pid;
		int status;

		fflush(NULL);
		pid = fork();
		CHECK(4, pid != -1);
		if (pid == 0) {
			char *text;

			alarm(20);
			if (pcpu_histogram_observe_exemplar(h, 5, child_trace) != 0)
				_exit(1);
			text = scrape();
			_exit(text && strstr(text, "trace_id=\"child\"") ? 0 : 2);
		}
		CHECK(5, waitpid(pid, &status, 0) == pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fprintf(stderr, "exemplar-fork: child %d: status %d\n", i, status);
		CHECK(6, WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	atomic_store(&stop, true);
	pthread_join(w, NULL);
	pthread_join(s, NULL);
	pcpu_histogram_destroy(h);
	printf("exemplar-fork: %d forks beside an exemplar writer and a scraper\n", FORKS);
	return 0;
}
