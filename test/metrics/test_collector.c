/* SPDX-License-Identifier: MIT */
/*
 * Collectors (<percpu/metrics.h>): samples computed at scrape time join the
 * exposition in both formats (one "# EOF"), a failing collector fails it
 * and writes nothing, bad samples are refused, the standard process
 * metrics agree with /proc and getrlimit(), and a shared segment's items
 * join the process's own metrics through pcpu_shared_collector().
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/metrics.h>
#include <percpu/shared.h>

#include "helpers.h"
#include "pcpu_test.h"

TestSuite(collector, .timeout = 30);

static int queue_depth(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx,
		       void *arg)
{
	static const char *const a[] = { "queue", "in\"coming\\", NULL };
	static const char *const b[] = { "queue", "outgoing", NULL };
	struct pcpu_metric_sample s = { .name = "test_queue_depth", .help = "Jobs waiting.",
					.unit = "", .kind = PCPU_METRIC_GAUGE, .labels = a,
					.value = *(int64_t *)arg, .scale = 1 };
	int err = emit(&s, ctx);

	if (err)
		return err;
	s.labels = b;
	s.value = 2;
	return emit(&s, ctx);
}

static int count_lines(const char *text, const char *line)
{
	int n = 0;
	size_t len = strlen(line);

	for (const char *p = text; p && *p;) {
		if (strncmp(p, line, len) == 0 && (p[len] == '\n' || p[len] == '\0'))
			n++;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return n;
}

Test(collector, samples_join_the_exposition_in_both_formats)
{
	int64_t depth = 7;
	struct pcpu_counter c;
	struct pcpu_metric_desc d = { .name = "test_jobs", .help = "Jobs.",
				      .kind = PCPU_METRIC_COUNTER };
	char *text, *om;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(pcpu_counter_register(&c, &d), 0);
	pcpu_counter_add(&c, 5);
	cr_assert_eq(pcpu_metrics_collector_add(queue_depth, &depth), 0);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(text);
	cr_assert(metrics_has_line(text, "test_jobs_total 5"), "%s", text);
	cr_assert(metrics_has_line(text, "# TYPE test_queue_depth gauge"), "%s", text);
	cr_assert(metrics_has_line(text, "test_queue_depth{queue=\"in\\\"coming\\\\\"} 7"), "%s",
		  text);
	cr_assert(metrics_has_line(text, "test_queue_depth{queue=\"outgoing\"} 2"), "%s", text);
	cr_assert_eq(count_lines(text, "# TYPE test_queue_depth gauge"), 1, "one family");
	depth = 9; /* computed at scrape time */
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert(metrics_has_line(om, "test_queue_depth{queue=\"in\\\"coming\\\\\"} 9"), "%s", om);
	cr_assert_eq(count_lines(om, "# EOF"), 1);
	cr_assert_eq(strcmp(om + strlen(om) - 6, "# EOF\n"), 0);
	cr_assert_eq(pcpu_metrics_collector_remove(queue_depth, &depth), 0);
	free(text);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_null(strstr(text, "test_queue_depth"), "removed, yet written");
	free(text);
	free(om);
	pcpu_counter_destroy(&c);
}

static int nothing(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx, void *arg)
{
	(void)emit, (void)ctx, (void)arg;
	return 0;
}

static int fails(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx, void *arg)
{
	(void)arg;
	queue_depth(emit, ctx, &(int64_t){ 1 });
	return -EIO;
}

Test(collector, a_failing_collector_fails_the_exposition_and_writes_nothing)
{
	char *before = metrics_text(PCPU_METRICS_PROMETHEUS), *buf = NULL, *after;
	size_t len = 0;
	FILE *out;

	cr_assert_eq(pcpu_metrics_collector_add(nothing, NULL), 0);
	after = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_str_eq(after, before, "a collector that writes nothing changes nothing");
	cr_assert_eq(pcpu_metrics_collector_add(fails, NULL), 0);
	out = open_memstream(&buf, &len);
	cr_assert_eq(pcpu_metrics_write(out, PCPU_METRICS_OPENMETRICS), -EIO);
	fclose(out);
	cr_assert_eq(len, 0, "a failed exposition wrote %zu bytes", len);
	cr_assert_eq(pcpu_metrics_collector_remove(fails, NULL), 0);
	cr_assert_eq(pcpu_metrics_collector_remove(nothing, NULL), 0);
	free(buf);
	free(before);
	free(after);
}

static int bad_name(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx, void *arg)
{
	struct pcpu_metric_sample s = { .name = "bad name", .help = "", .unit = "",
					.kind = PCPU_METRIC_GAUGE, .scale = 1 };
	int *seen = arg;

	*seen = emit(&s, ctx);
	return *seen;
}

static int bad_label_value(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx,
			   void *arg)
{
	static const char *const labels[] = { "path", "\xff\xfe", NULL };
	struct pcpu_metric_sample s = { .name = "test_paths", .help = "", .unit = "",
					.kind = PCPU_METRIC_GAUGE, .labels = labels, .scale = 1 };
	int *seen = arg;

	*seen = emit(&s, ctx);
	return *seen;
}

Test(collector, bad_samples_and_calls_are_refused_with_an_errno)
{
	int seen = 0;

	cr_assert_eq(pcpu_metrics_collector_add(NULL, NULL), -EINVAL);
	cr_assert_eq(pcpu_metrics_collector_remove(nothing, NULL), -ENOENT);
	cr_assert_eq(pcpu_metrics_collector_add(nothing, NULL), 0);
	cr_assert_eq(pcpu_metrics_collector_add(nothing, NULL), -EEXIST);
	cr_assert_eq(pcpu_metrics_collector_remove(nothing, NULL), 0);

	cr_assert_eq(pcpu_metrics_collector_add(bad_name, &seen), 0);
	cr_assert_null(metrics_text(PCPU_METRICS_PROMETHEUS));
	cr_assert_eq(seen, -EINVAL, "emit() of a bad name returned %d", seen);
	cr_assert_eq(pcpu_metrics_collector_remove(bad_name, &seen), 0);

	seen = 0;
	cr_assert_eq(pcpu_metrics_collector_add(bad_label_value, &seen), 0);
	cr_assert_null(metrics_text(PCPU_METRICS_PROMETHEUS));
	cr_assert_eq(seen, -EINVAL, "emit() of a label value not UTF-8 returned %d", seen);
	cr_assert_eq(pcpu_metrics_collector_remove(bad_label_value, &seen), 0);
}

static long fds_now(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
			n++;
	closedir(d);
	return n;
}

static double sample_double(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = text; p && *p;) {
		if (strncmp(p, name, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	cr_assert_fail("%s missing from:\n%s", name, text);
	return 0;
}

Test(collector, process_metrics_agree_with_proc_and_getrlimit)
{
	struct rlimit rl;
	long long rss_pages = 0, size_pages = 0;
	FILE *statm = fopen("/proc/self/statm", "r");
	double now = (double)time(NULL), start, rss;
	char *text;

	if (getenv("PCPU_TEST_UNDER_QEMU"))
		cr_skip_test("qemu-user fakes /proc/self/stat (zeros for the times and sizes)");
	cr_assert_not_null(statm);
	cr_assert_eq(fscanf(statm, "%lld %lld", &size_pages, &rss_pages), 2);
	fclose(statm);
	cr_assert_eq(pcpu_metrics_collector_add(pcpu_metrics_process_collector, NULL), 0);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(text);
	cr_assert(metrics_has_line(text, "# TYPE process_cpu_seconds_total counter"), "%s", text);
	cr_assert_geq(sample_double(text, "process_cpu_seconds_total"), 0);
	cr_assert_leq(sample_double(text, "process_cpu_seconds_total"),
		      (double)clock() / CLOCKS_PER_SEC + 1);
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	cr_assert_eq(sample_double(text, "process_max_fds"), (double)rl.rlim_cur);
	cr_assert_eq(sample_double(text, "process_open_fds"), (double)fds_now());
	rss = sample_double(text, "process_resident_memory_bytes");
	cr_assert(rss > 0.5 * (double)rss_pages * (double)sysconf(_SC_PAGESIZE) &&
			  rss < 2.0 * (double)rss_pages * (double)sysconf(_SC_PAGESIZE),
		  "resident %f bytes, /proc/self/statm says %lld pages", rss, rss_pages);
	cr_assert_geq(sample_double(text, "process_virtual_memory_bytes"), rss);
	start = sample_double(text, "process_start_time_seconds");
	cr_assert(start <= now + 1 && start > now - 3600, "started at %f, now %f", start, now);
	cr_assert_eq(pcpu_metrics_collector_remove(pcpu_metrics_process_collector, NULL), 0);
	free(text);
}

Test(collector, a_shared_segments_items_join_in_one_exposition)
{
	static const struct pcpu_stat_item items[] = {
		{ .name = "test_seg_requests", .help = "Requests.", .kind = PCPU_METRIC_COUNTER },
		{ .name = "test_seg_depth", .kind = PCPU_METRIC_GAUGE },
	};
	struct pcpu_shared_desc d = { .items = items, .nr_items = 2 };
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);
	char *om;

	if (!s && errno == ENOTSUP)
		cr_skip_test("no shared segments on this architecture");
	cr_assert_not_null(s, "pcpu_shared_create: %s", strerror(errno));
	pcpu_shared_add(s, 0, 12345);
	pcpu_shared_add(s, 1, -3);
	cr_assert_eq(pcpu_shared_collector(NULL, NULL, s), -EINVAL);
	cr_assert_eq(pcpu_metrics_collector_add(pcpu_shared_collector, s), 0);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(om);
	cr_assert(metrics_has_line(om, "test_seg_requests_total 12345"), "%s", om);
	cr_assert(metrics_has_line(om, "test_seg_depth -3"), "%s", om);
	cr_assert_eq(count_lines(om, "# EOF"), 1, "%s", om);
	cr_assert_eq(pcpu_metrics_collector_remove(pcpu_shared_collector, s), 0);
	pcpu_shared_close(s);
	free(om);
}

/*
 * fork() while a scrape's collector, under the metrics lock, adds to a
 * counter. Where pairs are swapped under locks (i386, armhf:
 * lib/base/pair_lock.c) the fork handlers must take those locks last: taken
 * first, the forking thread holds them while it waits for the metrics
 * lock, and the collector's add waits for them, both for ever (the test
 * then times out). The forker's own handler, registered after the
 * library's, runs before them and tells the collector when to add. Since
 * 0.4 collectors run outside the metrics lock and fork() does not wait
 * for them: the child may or may not hold the collector's add.
 */
static struct pcpu_counter forked;
static volatile int fork_wanted, fork_started;

static void note_fork(void)
{
	fork_started = 1;
}

static int add_while_forking(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx,
			     void *arg)
{
	(void)emit;
	(void)ctx;
	(void)arg;
	fork_wanted = 1;
	while (!fork_started)
		usleep(100);
	usleep(200 * 1000); /* the forker goes on into the library's handlers */
	pcpu_counter_add(&forked, 1);
	return 0;
}

static void *forker(void *arg)
{
	int status = -1;
	pid_t pid;

	while (!fork_wanted)
		usleep(100);
	pid = fork();
	if (pid == 0) {
		pcpu_counter_add(&forked, 1);
		int64_t sum = pcpu_counter_sum(&forked);

		_exit(sum == 2 || sum == 3 ? 0 : 1);
	}
	if (pid > 0 && waitpid(pid, &status, 0) != pid)
		status = -1;
	*(int *)arg = status;
	return NULL;
}

Test(collector, a_fork_while_a_collector_adds_under_the_metrics_lock_completes)
{
	FILE *devnull;
	int status = -1;
	pthread_t t;

	/*
	 * The scrape in flight (allocated by the scraping thread, which the
	 * child lacks) is unreachable in the forked process: valgrind's leak
	 * check there fails it.
	 */
	if (pcpu_test_on_valgrind())
		cr_skip_test("valgrind reports the other threads' allocations in flight as leaks");
	devnull = fopen("/dev/null", "w");
	cr_assert_not_null(devnull);
	cr_assert_eq(pcpu_counter_init(&forked, 0), 0);
	pcpu_counter_add(&forked, 1); /* the first swap of a pair, where there are locks */
	cr_assert_eq(pthread_atfork(note_fork, NULL, NULL), 0);
	cr_assert_eq(pcpu_metrics_collector_add(add_while_forking, NULL), 0);
	cr_assert_eq(pthread_create(&t, NULL, forker, &status), 0);
	cr_assert_eq(pcpu_metrics_write(devnull, PCPU_METRICS_PROMETHEUS), 0);
	pthread_join(t, NULL);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the child did not see the first add and its own (status %#x)", status);
	cr_expect_eq(pcpu_counter_sum(&forked), 2);
	pcpu_metrics_collector_remove(add_while_forking, NULL);
	pcpu_counter_destroy(&forked);
	fclose(devnull);
}
