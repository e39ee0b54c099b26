/* SPDX-License-Identifier: MIT */
/*
 * Allocation failure, at every allocation in turn: the promise of
 * <percpu/counter.h>, <percpu/stat.h> and <percpu/percpu_counter.h> that an
 * allocation failure gives -ENOMEM (or NULL with errno ENOMEM), never an
 * exit or a crash, leaves nothing half made and leaks nothing; that a failed
 * init leaves the counter zero-filled (destroy is a no-op); and that the
 * init_many calls are all or none. The same for the metrics calls
 * (<percpu/metrics.h>, <percpu/histogram.h>): -ENOMEM, nothing registered.
 *
 * How: failalloc (failalloc.h) replaces malloc and mmap for the whole
 * process, libnuma and liburcu included, and fails the n-th allocation
 * attempt after failalloc_arm(n). For each call, every test runs failure
 * point n = 0, 1, 2, ... in a fork()ed child, so that an exit() or a crash
 * in the library is the failure of that one point, with its number. The
 * child arms right around the call, disarms, then checks the outcome and
 * reports by its exit status and a line on a pipe (its stderr goes there
 * too). The loop ends at the first point the call never reaches.
 *
 * Each call runs in up to three modes. "cold": a fresh process, where the
 * failures hit the one-time paths (CPU and NUMA setup, the first arena
 * chunk, urcu's reader registry, pthread_atfork); there one-time state may
 * legitimately stay, so there is no leak check. "warm": the child first
 * does one full successful call and teardown; then everything the failed
 * call allocated must be given back. "boundary" (the init_many calls): warm,
 * then as many live counters as leave room for exactly 3 more in the
 * memory that exists (measured once, in a child, by counting until an init
 * allocates), so that init_many fails on its 4th counter, after 3 have
 * succeeded.
 *
 * After each failing point the child checks: -ENOMEM (NULL and ENOMEM for
 * stat_create, a negative errno for refresher_start); the counter(s)
 * zero-filled and not initialized() although they held garbage before,
 * destroy (destroy_many on the whole array) a no-op; nothing left
 * allocated (warm); a retry without failures succeeds and counts. A call
 * may also succeed despite the failed allocation when it could do without
 * it (libnuma and the CPU count fall back when /sys cannot be read): then
 * its object must work.
 *
 * Not run under valgrind (its own malloc replaces ours; each test skips at
 * run time) nor under AddressSanitizer, ThreadSanitizer or MemorySanitizer
 * (their runtimes own malloc: failalloc.c compiles to stubs there and each
 * test skips).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/percpu_counter.h>
#include <percpu/registry.h>
#include <percpu/stat.h>

#include "failalloc.h"
#include "registry/registry.h"
#include "pcpu_test.h"

/*
 * How a child ends. Anything else (0 and 1 included) is the library's own
 * exit().
 */
enum {
	POINT_PASSED = 5,      /* the call failed cleanly at the point */
	POINT_NOT_REACHED = 3, /* the call made fewer attempts: no point left */
	POINT_FAILED = 4,      /* a check failed; the reason is on the pipe */
};

/* What a child sets up before it arms. */
enum mode {
	COLD,     /* nothing: a fresh process */
	WARM,     /* one full successful call and teardown */
	BOUNDARY, /* warm, then live counters until 3 more need new memory */
};

static const char *const mode_names[] = {
	[COLD] = "cold",
	[WARM] = "warm",
	[BOUNDARY] = "warm, 3 counters before the arena is full",
};

#define MAX_POINTS 1000   /* more means the loop never ends */
#define CHILD_SECONDS 30  /* a child that hangs (a lock left held) is killed */
#define MAX_REPORTED 12   /* failing points reported one by one */

/* ---- in the child ------------------------------------------------------- */

static long the_point; /* the allocation attempt that fails */

/* Reports why the point failed (on stderr, which is the pipe) and exits. */
__attribute__((format(printf, 1, 2), noreturn)) static void child_fail(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (len > 0)
		(void)!write(STDERR_FILENO, line, (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1);
	_exit(POINT_FAILED);
}

#define CHILD_CHECK(cond, ...)                                                  \
	do {                                                                    \
		if (!(cond))                                                    \
			child_fail(__VA_ARGS__);                                \
	} while (0)

/* Checks that the failed call gave back every block and mapping it took. */
static void check_nothing_left(void)
{
	struct failalloc_entry e;

	/* removed registry entries wait for a batched grace period: not a leak */
	pcpu_registry_reap();
	CHILD_CHECK(!failalloc_overflowed(), "failalloc's table overflowed (a test bug)");
	if (failalloc_first_live(&e))
		child_fail("%zu allocation(s) left after the failure, the first %s of %zu bytes "
			   "(attempt %ld)",
			   failalloc_live(), e.kind == FAILALLOC_MAPPING ? "an mmap" : "a block",
			   e.size, e.attempt);
}

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* Number of threads of this process. */
static int thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/*
 * The threads of this process once their number is @want, or after 1 s
 * the last count: a joined thread may stay listed in /proc/self/task for a
 * moment after pthread_join() returns (its exit clears the tid that join
 * waits on before the kernel releases the task).
 */
static int thread_count_settled(int want)
{
	int n = thread_count();

	for (int ms = 0; n != want && ms < 1000; ms++) {
		usleep(1000);
		n = thread_count();
	}
	return n;
}

/* @c was initialised to @value: it counts. */
static void check_counter_works(struct pcpu_counter *c, int64_t value, const char *what)
{
	int64_t want = value + 5;
	int64_t read;

	CHILD_CHECK(pcpu_counter_initialized(c), "%s: not initialised after success", what);
	pcpu_counter_add(c, 5);
	CHILD_CHECK(pcpu_counter_sum(c) == want, "%s: sum %lld after adding 5 to %lld", what,
		    (long long)pcpu_counter_sum(c), (long long)value);
	read = pcpu_counter_read(c);
	CHILD_CHECK(pcpu_test_distance(read, want) <= pcpu_counter_error_bound(c),
		    "%s: read %lld is more than error_bound %llu from %lld", what,
		    (long long)read, (unsigned long long)pcpu_counter_error_bound(c),
		    (long long)want);
}

/* A failed init left @c zero-filled, not initialised, and destroy is a no-op. */
static void check_counter_untouched(struct pcpu_counter *c, const char *what)
{
	CHILD_CHECK(!pcpu_counter_initialized(c), "%s: initialized() is true after -ENOMEM", what);
	CHILD_CHECK(all_zero(c, sizeof(*c)), "%s: not zero-filled after -ENOMEM", what);
	pcpu_counter_destroy(c);
	CHILD_CHECK(all_zero(c, sizeof(*c)), "%s: destroy after -ENOMEM changed it", what);
}

/* Memory that was never a counter (so init must zero-fill it on failure). */
static void scribble(void *p, size_t n)
{
	memset(p, 0xa5, n);
}

/*
 * The outcome of the armed call: @ret from it, @attempts made. Returns true
 * if it failed, false if it succeeded: when the point was never reached, or
 * when the failing allocation was one the call could do without (libnuma
 * and the CPU count fall back when /sys cannot be read); the caller then
 * checks that the object works.
 */
static bool check_return(int ret, long attempts, enum mode mode)
{
	if (attempts <= the_point)
		CHILD_CHECK(ret == 0, "no allocation failed, yet it returned %d", ret);
	if (ret == 0)
		return false;
	CHILD_CHECK(ret == -ENOMEM, "returned %d (%s), not -ENOMEM", ret,
		    ret < 0 ? strerror(-ret) : "success");
	if (mode != COLD)
		check_nothing_left();
	return true;
}

/* The point's exit status once the call succeeded and its object worked. */
static int succeeded(long attempts)
{
	return attempts <= the_point ? POINT_NOT_REACHED : POINT_PASSED;
}

/* ---- the operations ----------------------------------------------------- */

static void warm_counter(void)
{
	struct pcpu_counter c;

	CHILD_CHECK(pcpu_counter_init(&c, 1) == 0, "warm-up init failed");
	check_counter_works(&c, 1, "warm-up counter");
	pcpu_counter_destroy(&c);
}

/*
 * BOUNDARY: how many live counters fill the per-CPU memory that exists
 * after a warm-up, so that the next init needs more; -1 if unknown. The
 * parent measures it in a child of its own (probe_ballast()); the point
 * children inherit it.
 */
static long ballast = -1;
#define MAX_BALLAST 100000
#define BEFORE_FULL 3 /* counters of init_many that fit before the boundary */

/* Counters kept live to bring the arena to the boundary; never destroyed. */
static struct pcpu_counter *ballast_counters;

static void fill_ballast(long n)
{
	if (n <= 0)
		return;
	ballast_counters = calloc((size_t)n, sizeof(*ballast_counters));
	CHILD_CHECK(ballast_counters, "no memory for %ld ballast counters", n);
	for (long i = 0; i < n; i++)
		CHILD_CHECK(pcpu_counter_init(&ballast_counters[i], 0) == 0,
			    "ballast counter %ld: init failed", i);
}

/* What every point child of @mode does before it arms. */
static void prepare(enum mode mode)
{
	if (mode == COLD)
		return;
	warm_counter();
	if (mode == BOUNDARY)
		fill_ballast(ballast - BEFORE_FULL);
}

/*
 * In a child: after a warm-up, counts counters until one allocates. Every
 * warm-up destroys all it made, so the one of pcpu_counter_init() leaves
 * the arena as the others do.
 */
static int probe_child(enum mode mode)
{
	struct pcpu_counter *cs = calloc(MAX_BALLAST, sizeof(*cs));
	char line[32];
	int len;

	(void)mode;
	CHILD_CHECK(cs, "no memory for the probe");
	warm_counter();
	for (long i = 0; i < MAX_BALLAST; i++) {
		long attempts;
		int ret;

		failalloc_arm(-1); /* count, fail nothing */
		ret = pcpu_counter_init(&cs[i], 0);
		attempts = failalloc_disarm();
		CHILD_CHECK(ret == 0, "probe: init of counter %ld returned %d", i, ret);
		if (attempts > 0) {
			len = snprintf(line, sizeof(line), "%ld", i);
			(void)!write(STDERR_FILENO, line, (size_t)len);
			return POINT_PASSED;
		}
	}
	return POINT_NOT_REACHED;
}

static int point_counter_init(enum mode mode)
{
	struct pcpu_counter c;
	long attempts;
	int ret;

	prepare(mode);
	scribble(&c, sizeof(c));
	failalloc_arm(the_point);
	ret = pcpu_counter_init(&c, 42);
	attempts = failalloc_disarm();
	if (!check_return(ret, attempts, mode)) {
		check_counter_works(&c, 42, "the counter");
		pcpu_counter_destroy(&c);
		return succeeded(attempts);
	}
	check_counter_untouched(&c, "the counter");
	CHILD_CHECK(pcpu_counter_init(&c, 42) == 0, "init without failures after it failed");
	check_counter_works(&c, 42, "the counter initialised again");
	pcpu_counter_destroy(&c);
	CHILD_CHECK(!pcpu_counter_initialized(&c), "initialized() after destroy");
	return POINT_PASSED;
}

static const struct pcpu_counter_options some_options = {
	.accuracy = 16,
	.floor = 8,
};

static int point_counter_init_opts(enum mode mode)
{
	struct pcpu_counter c;
	long attempts;
	int ret;

	prepare(mode);
	scribble(&c, sizeof(c));
	failalloc_arm(the_point);
	ret = pcpu_counter_init_opts(&c, -7, &some_options);
	attempts = failalloc_disarm();
	if (!check_return(ret, attempts, mode)) {
		check_counter_works(&c, -7, "the counter");
		pcpu_counter_destroy(&c);
		return succeeded(attempts);
	}
	check_counter_untouched(&c, "the counter");
	CHILD_CHECK(pcpu_counter_init_opts(&c, -7, &some_options) == 0,
		    "init_opts without failures after it failed");
	check_counter_works(&c, -7, "the counter initialised again");
	pcpu_counter_destroy(&c);
	return POINT_PASSED;
}

#define MANY 10

static void check_many_work(struct pcpu_counter *cs, int64_t value)
{
	char what[64];

	for (unsigned int i = 0; i < MANY; i++) {
		snprintf(what, sizeof(what), "counter %u of %u", i, MANY);
		check_counter_works(&cs[i], value, what);
	}
}

/* None of the @MANY counters at @cs is initialised after the failure. */
static void check_many_untouched(struct pcpu_counter *cs)
{
	for (unsigned int i = 0; i < MANY; i++) {
		CHILD_CHECK(!pcpu_counter_initialized(&cs[i]),
			    "counter %u of %u: initialized() is true after -ENOMEM (not all or none)",
			    i, MANY);
		CHILD_CHECK(all_zero(&cs[i], sizeof(cs[i])),
			    "counter %u of %u: not zero-filled after -ENOMEM", i, MANY);
	}
	/* the kernel idiom: a failed init_many, then destroy_many on it all */
	pcpu_counter_destroy_many(cs, MANY);
	for (unsigned int i = 0; i < MANY; i++)
		CHILD_CHECK(all_zero(&cs[i], sizeof(cs[i])),
			    "counter %u of %u: destroy_many after -ENOMEM changed it", i, MANY);
}

static int point_counter_init_many(enum mode mode)
{
	struct pcpu_counter cs[MANY];
	long attempts;
	int ret;

	if (mode != COLD) {
		CHILD_CHECK(pcpu_counter_init_many(cs, 1, MANY) == 0, "warm-up init_many failed");
		check_many_work(cs, 1);
		pcpu_counter_destroy_many(cs, MANY);
	}
	if (mode == BOUNDARY)
		fill_ballast(ballast - BEFORE_FULL);
	scribble(cs, sizeof(cs));
	failalloc_arm(the_point);
	ret = pcpu_counter_init_many(cs, 100, MANY);
	attempts = failalloc_disarm();
	if (!check_return(ret, attempts, mode)) {
		check_many_work(cs, 100);
		pcpu_counter_destroy_many(cs, MANY);
		return succeeded(attempts);
	}
	check_many_untouched(cs);
	CHILD_CHECK(pcpu_counter_init_many(cs, 100, MANY) == 0,
		    "init_many without failures after it failed");
	check_many_work(cs, 100);
	pcpu_counter_destroy_many(cs, MANY);
	for (unsigned int i = 0; i < MANY; i++)
		CHILD_CHECK(!pcpu_counter_initialized(&cs[i]), "counter %u: initialized() after "
			    "destroy_many", i);
	return POINT_PASSED;
}

/* The kernel drop-in, through its own names only. */
static void check_kernel_many_work(struct percpu_counter *fbc, s64 value)
{
	for (unsigned int i = 0; i < MANY; i++) {
		CHILD_CHECK(percpu_counter_initialized(&fbc[i]),
			    "percpu_counter %u of %u: not initialised after success", i, MANY);
		percpu_counter_add(&fbc[i], (s64)i + 1);
		CHILD_CHECK(percpu_counter_sum(&fbc[i]) == value + (s64)i + 1,
			    "percpu_counter %u of %u: sum %lld, expected %lld", i, MANY,
			    (long long)percpu_counter_sum(&fbc[i]), (long long)(value + i + 1));
	}
}

static int point_percpu_counter_init_many(enum mode mode)
{
	struct percpu_counter fbc[MANY];
	long attempts;
	int ret;

	if (mode != COLD) {
		CHILD_CHECK(percpu_counter_init_many(fbc, 0, GFP_KERNEL, MANY) == 0,
			    "warm-up percpu_counter_init_many failed");
		check_kernel_many_work(fbc, 0);
		percpu_counter_destroy_many(fbc, MANY);
	}
	if (mode == BOUNDARY)
		fill_ballast(ballast - BEFORE_FULL);
	scribble(fbc, sizeof(fbc));
	failalloc_arm(the_point);
	ret = percpu_counter_init_many(fbc, 1000, GFP_KERNEL, MANY);
	attempts = failalloc_disarm();
	if (!check_return(ret, attempts, mode)) {
		check_kernel_many_work(fbc, 1000);
		percpu_counter_destroy_many(fbc, MANY);
		return succeeded(attempts);
	}
	for (unsigned int i = 0; i < MANY; i++) {
		CHILD_CHECK(!percpu_counter_initialized(&fbc[i]),
			    "percpu_counter %u of %u: initialized() is true after -ENOMEM "
			    "(not all or none)", i, MANY);
		CHILD_CHECK(all_zero(&fbc[i], sizeof(fbc[i])),
			    "percpu_counter %u of %u: not zero-filled after -ENOMEM", i, MANY);
	}
	percpu_counter_destroy_many(fbc, MANY);
	CHILD_CHECK(percpu_counter_init_many(fbc, 1000, GFP_KERNEL, MANY) == 0,
		    "percpu_counter_init_many without failures after it failed");
	check_kernel_many_work(fbc, 1000);
	percpu_counter_destroy_many(fbc, MANY);
	return POINT_PASSED;
}

/* Three items, two groups. */
static const struct pcpu_stat_item stat_items[] = {
	{ .name = "rx_packets", .group = 1 },
	{ .name = "rx_bytes", .group = 1 },
	{ .name = "tx_drops", .group = 2 },
};
static const struct pcpu_stat_desc stat_desc = {
	.items = stat_items,
	.nr_items = 3,
};

static void check_stat_works(struct pcpu_stat *s, const char *what)
{
	for (unsigned int i = 0; i < stat_desc.nr_items; i++) {
		pcpu_stat_add(s, i, 10 * (int64_t)i + 3);
		CHILD_CHECK(pcpu_stat_sum(s, i) == 10 * (int64_t)i + 3,
			    "%s: item %u sums to %lld after adding %d to 0", what, i,
			    (long long)pcpu_stat_sum(s, i), 10 * (int)i + 3);
	}
}

static int point_stat_create(enum mode mode)
{
	struct pcpu_stat *s;
	long attempts;
	int err;

	if (mode != COLD) {
		s = pcpu_stat_create(&stat_desc);
		CHILD_CHECK(s, "warm-up pcpu_stat_create failed: %s", strerror(errno));
		check_stat_works(s, "the warm-up set");
		pcpu_stat_destroy(s);
	}
	errno = 0;
	failalloc_arm(the_point);
	s = pcpu_stat_create(&stat_desc);
	err = errno;
	attempts = failalloc_disarm();
	if (attempts <= the_point)
		CHILD_CHECK(s, "no allocation failed, yet it returned NULL (errno %d)", err);
	if (s) { /* the failure was one it could do without (see check_return()) */
		check_stat_works(s, "the set");
		pcpu_stat_destroy(s);
		return succeeded(attempts);
	}
	CHILD_CHECK(err == ENOMEM, "returned NULL with errno %d (%s), not ENOMEM", err,
		    strerror(err));
	if (mode != COLD)
		check_nothing_left();
	s = pcpu_stat_create(&stat_desc);
	CHILD_CHECK(s, "create without failures after it failed: %s", strerror(errno));
	check_stat_works(s, "the set created again");
	pcpu_stat_destroy(s);
	return POINT_PASSED;
}

/* A set made like another: its own words and thresholds, the shared descriptions. */
static int point_stat_create_like(enum mode mode)
{
	struct pcpu_stat *proto, *s;
	long attempts;
	int err;

	proto = pcpu_stat_create(&stat_desc);
	CHILD_CHECK(proto, "pcpu_stat_create failed: %s", strerror(errno));
	if (mode != COLD) {
		s = pcpu_stat_create_like(proto);
		CHILD_CHECK(s, "warm-up pcpu_stat_create_like failed: %s", strerror(errno));
		check_stat_works(s, "the warm-up set");
		pcpu_stat_destroy(s);
	}
	errno = 0;
	failalloc_arm(the_point);
	s = pcpu_stat_create_like(proto);
	err = errno;
	attempts = failalloc_disarm();
	if (attempts <= the_point)
		CHILD_CHECK(s, "no allocation failed, yet it returned NULL (errno %d)", err);
	if (s) {
		/* the prototype may go first: the set keeps the descriptions */
		pcpu_stat_destroy(proto);
		check_stat_works(s, "the set");
		pcpu_stat_destroy(s);
		return succeeded(attempts);
	}
	CHILD_CHECK(err == ENOMEM, "returned NULL with errno %d (%s), not ENOMEM", err,
		    strerror(err));
	if (mode != COLD)
		check_nothing_left();
	s = pcpu_stat_create_like(proto);
	CHILD_CHECK(s, "create_like without failures after it failed: %s", strerror(errno));
	pcpu_stat_destroy(proto);
	check_stat_works(s, "the set created again");
	pcpu_stat_destroy(s);
	return POINT_PASSED;
}

static int point_refresher_start(enum mode mode)
{
	long attempts;
	int ret, threads = thread_count(), n;

	if (mode != COLD) {
		CHILD_CHECK(pcpu_refresher_start(5) == 0, "warm-up refresher_start failed");
		pcpu_refresher_stop();
		threads = thread_count_settled(threads);
	}
	failalloc_arm(the_point);
	ret = pcpu_refresher_start(5);
	attempts = failalloc_disarm();
	if (attempts <= the_point)
		CHILD_CHECK(ret == 0, "no allocation failed, yet it returned %d", ret);
	if (ret == 0) {
		CHILD_CHECK(thread_count() == threads + 1,
			    "%d threads with the refresher, %d before", thread_count(), threads);
		pcpu_refresher_stop();
		return succeeded(attempts);
	}
	CHILD_CHECK(ret < 0, "returned %d, not a negative errno", ret);
	if (mode != COLD)
		check_nothing_left();
	CHILD_CHECK(thread_count() == threads,
		    "%d threads after the failed start, %d before (a thread started)",
		    thread_count(), threads);
	/* no stop() in between: a failed start must not count as running */
	ret = pcpu_refresher_start(5);
	CHILD_CHECK(ret == 0, "start without failures after it failed returned %d (%s)", ret,
		    strerror(-ret));
	CHILD_CHECK(thread_count() == threads + 1, "%d threads with the refresher, %d before",
		    thread_count(), threads);
	pcpu_refresher_stop();
	n = thread_count_settled(threads);
	CHILD_CHECK(n == threads, "%d threads after stop, %d before", n, threads);
	return POINT_PASSED;
}

/* ---- in the parent ------------------------------------------------------ */

struct outcome {
	long points; /* failure points visited */
	long failed; /* of them, how many failed */
};

/*
 * Runs @child (failure point @n) in a child process and returns its
 * status; @why gets what it printed (its reason, or the library's stderr).
 */
static int run_child(int (*child)(enum mode mode), enum mode mode, long n, char *why,
		     size_t why_size)
{
	size_t got = 0;
	int fds[2], status;
	pid_t pid;
	ssize_t r;

	cr_assert_eq(pipe(fds), 0, "pipe: %s", strerror(errno));
	fflush(NULL); /* nothing buffered is written twice by an exit() in the child */
	pid = fork();
	cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		close(fds[1]);
		alarm(CHILD_SECONDS);
		the_point = n;
		_exit(child(mode));
	}
	close(fds[1]);
	while (got + 1 < why_size && (r = read(fds[0], why + got, why_size - 1 - got)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		got += (size_t)r;
	}
	why[got] = '\0';
	while (got > 0 && (why[got - 1] == '\n' || why[got - 1] == ' '))
		why[--got] = '\0';
	for (size_t i = 0; i < got; i++)
		if (why[i] == '\n')
			why[i] = ' ';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		cr_assert_eq(errno, EINTR, "waitpid: %s", strerror(errno));
	return status;
}

/* ---- metrics ---------------------------------------------------------------- */

/* The exposition (Prometheus text), malloc'ed; only while disarmed. */
static char *exposition(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	int err;

	CHILD_CHECK(out, "open_memstream failed");
	err = pcpu_metrics_write(out, PCPU_METRICS_PROMETHEUS);
	fclose(out);
	CHILD_CHECK(err == 0, "pcpu_metrics_write without failures: %d", err);
	return text;
}

static void check_exposition(const char *want, const char *what)
{
	char *text = exposition();

	CHILD_CHECK(strcmp(text, want) == 0, "%s: the exposition is \"%s\", not \"%s\"", what,
		    text, want);
	free(text);
}

static const struct pcpu_metric_desc metric_desc = {
	.name = "m", .help = "H.", .kind = PCPU_METRIC_GAUGE,
	.labels = (const char *const[]){ "k", "v", NULL },
};

static void warm_metrics(void)
{
	struct pcpu_counter c;
	char *text;

	CHILD_CHECK(pcpu_counter_init(&c, 0) == 0, "warm-up init failed");
	CHILD_CHECK(pcpu_counter_register(&c, &metric_desc) == 0, "warm-up register failed");
	text = exposition();
	free(text);
	pcpu_counter_destroy(&c);
}

static int point_counter_register(enum mode mode)
{
	struct pcpu_counter c;
	long attempts;
	int ret;

	if (mode != COLD)
		warm_metrics();
	CHILD_CHECK(pcpu_counter_init(&c, 3) == 0, "init failed");
	failalloc_arm(the_point);
	ret = pcpu_counter_register(&c, &metric_desc);
	attempts = failalloc_disarm();
	if (attempts <= the_point)
		CHILD_CHECK(ret == 0, "no allocation failed, yet it returned %d", ret);
	if (ret == 0) {
		check_exposition("# HELP m H.\n# TYPE m gauge\nm{k=\"v\"} 3\n", "registered");
		pcpu_counter_destroy(&c);
		return succeeded(attempts);
	}
	CHILD_CHECK(ret == -ENOMEM, "returned %d, not -ENOMEM", ret);
	check_exposition("", "after the failure");
	pcpu_counter_destroy(&c);
	if (mode != COLD)
		check_nothing_left();
	CHILD_CHECK(pcpu_counter_init(&c, 3) == 0, "init failed");
	CHILD_CHECK(pcpu_counter_register(&c, &metric_desc) == 0, "register again failed");
	pcpu_counter_destroy(&c);
	return POINT_PASSED;
}

static int point_stat_register(enum mode mode)
{
	struct pcpu_stat *s;
	long attempts;
	int ret;

	if (mode != COLD)
		warm_metrics();
	s = pcpu_stat_create(&stat_desc);
	CHILD_CHECK(s, "stat_create failed");
	failalloc_arm(the_point);
	ret = pcpu_stat_register(s, "p");
	attempts = failalloc_disarm();
	if (attempts <= the_point)
		CHILD_CHECK(ret == 0, "no allocation failed, yet it returned %d", ret);
	if (ret == 0) {
		pcpu_stat_destroy(s);
		return succeeded(attempts);
	}
	CHILD_CHECK(ret == -ENOMEM, "returned %d, not -ENOMEM", ret);
	check_exposition("", "after the failure (all items or none)");
	pcpu_stat_destroy(s);
	if (mode != COLD)
		check_nothing_left();
	return POINT_PASSED;
}

static int point_histogram_create(enum mode mode)
{
	static const int64_t bounds[] = { 1, 10, 100 };
	const struct pcpu_histogram_desc d = { .name = "h", .bounds = bounds, .nr_bounds = 3 };
	struct pcpu_histogram *h;
	uint64_t counts[4];
	long attempts;
	int err;

	if (mode != COLD) {
		warm_metrics();
		h = pcpu_histogram_create(&d);
		CHILD_CHECK(h, "warm-up histogram_create failed");
		pcpu_histogram_destroy(h);
	}
	errno = 0;
	failalloc_arm(the_point);
	h = pcpu_histogram_create(&d);
	err = errno;
	attempts = failalloc_disarm();
	if (attempts <= the_point)
		CHILD_CHECK(h, "no allocation failed, yet it returned NULL (errno %d)", err);
	if (h) {
		pcpu_histogram_observe(h, 5);
		CHILD_CHECK(pcpu_histogram_snapshot(h, counts, NULL) == 0 && counts[1] == 1,
			    "the histogram does not count");
		pcpu_histogram_destroy(h);
		return succeeded(attempts);
	}
	CHILD_CHECK(err == ENOMEM, "returned NULL with errno %d (%s), not ENOMEM", err,
		    strerror(err));
	check_exposition("", "after the failure");
	if (mode != COLD)
		check_nothing_left();
	h = pcpu_histogram_create(&d);
	CHILD_CHECK(h, "create without failures after it failed: %s", strerror(errno));
	pcpu_histogram_destroy(h);
	return POINT_PASSED;
}

static int point_metrics_write(enum mode mode)
{
	static const int64_t bounds[] = { 1 };
	struct pcpu_histogram *h;
	struct pcpu_counter c;
	long attempts;
	FILE *out;
	int ret;

	if (mode != COLD)
		warm_metrics();
	CHILD_CHECK(pcpu_counter_init(&c, 0) == 0 && pcpu_counter_register(&c, &metric_desc) == 0,
		    "register failed");
	h = pcpu_histogram_create(&(struct pcpu_histogram_desc){ .name = "h", .bounds = bounds,
								 .nr_bounds = 1 });
	CHILD_CHECK(h, "histogram_create failed");
	out = fopen("/dev/null", "w");
	CHILD_CHECK(out, "fopen(/dev/null) failed");
	setvbuf(out, NULL, _IONBF, 0);
	failalloc_arm(the_point);
	ret = pcpu_metrics_write(out, PCPU_METRICS_OPENMETRICS);
	attempts = failalloc_disarm();
	fclose(out);
	if (attempts <= the_point)
		CHILD_CHECK(ret == 0, "no allocation failed, yet it returned %d", ret);
	else
		CHILD_CHECK(ret == 0 || ret == -ENOMEM, "returned %d, not -ENOMEM", ret);
	check_exposition("# TYPE h histogram\nh_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 0\n"
			 "h_sum 0\nh_count 0\n# HELP m H.\n# TYPE m gauge\nm{k=\"v\"} 0\n",
			 "the next write");
	pcpu_histogram_destroy(h);
	pcpu_counter_destroy(&c);
	return ret == 0 ? succeeded(attempts) : POINT_PASSED;
}

/*
 * Runs every failure point of @call in @mode; each one that crashes, exits
 * or fails a check is reported (the first MAX_REPORTED one by one).
 */
static struct outcome every_point(const char *call, int (*point)(enum mode mode),
				  enum mode mode)
{
	const char *name = mode_names[mode];
	struct outcome o = { 0, 0 };
	char why[512];

	for (long n = 0; n < MAX_POINTS; n++) {
		int status = run_child(point, mode, n, why, sizeof(why));

		if (WIFEXITED(status) && WEXITSTATUS(status) == POINT_NOT_REACHED)
			return o;
		o.points++;
		if (WIFEXITED(status) && WEXITSTATUS(status) == POINT_PASSED)
			continue;
		if (++o.failed > MAX_REPORTED)
			continue;
		if (WIFSIGNALED(status))
			cr_expect_fail("%s (%s), allocation %ld failing: killed by signal %d (%s)%s%s",
				       call, name, n, WTERMSIG(status), strsignal(WTERMSIG(status)),
				       *why ? "; stderr: " : "", why);
		else if (WEXITSTATUS(status) == POINT_FAILED)
			cr_expect_fail("%s (%s), allocation %ld failing: %s", call, name, n, why);
		else
			cr_expect_fail("%s (%s), allocation %ld failing: the process exited with "
				       "status %d instead of returning an error%s%s",
				       call, name, n, WEXITSTATUS(status),
				       *why ? "; stderr: " : "", why);
	}
	cr_assert_fail("%s (%s): still allocating after %d failure points", call, name,
		       MAX_POINTS);
	return o;
}

/* BOUNDARY: measures the ballast (see probe_child()); false if unknown. */
static bool probe_ballast(void)
{
	char why[512];
	int status = run_child(probe_child, WARM, 0, why, sizeof(why));

	cr_assert(WIFEXITED(status) && (WEXITSTATUS(status) == POINT_PASSED ||
					WEXITSTATUS(status) == POINT_NOT_REACHED),
		  "probing how many counters fill the arena failed (status %#x): %s", status,
		  why);
	if (WEXITSTATUS(status) != POINT_PASSED)
		return false;
	ballast = strtol(why, NULL, 10);
	return ballast >= BEFORE_FULL;
}

static void skip_if_not_meaningful(void)
{
	if (!failalloc_available())
		cr_skip_test("failalloc is compiled out under a sanitizer: its runtime owns malloc");
	if (pcpu_test_on_valgrind())
		cr_skip_test("valgrind replaces malloc itself: failalloc cannot fail it");
}

/*
 * Every failure point of @call, cold and warm (and at the arena's
 * boundary if @boundary). A call that allocates nothing even in a fresh
 * process would test nothing: at least one point must exist there.
 */
static void check_every_point(const char *call, int (*point)(enum mode mode), bool boundary)
{
	struct outcome o[3] = { { 0, 0 }, { 0, 0 }, { 0, 0 } };
	long failed = 0;

	skip_if_not_meaningful();
	o[COLD] = every_point(call, point, COLD);
	cr_expect_gt(o[COLD].points, 0, "%s made no allocation in a fresh process: nothing tested",
		     call);
	o[WARM] = every_point(call, point, WARM);
	if (boundary && probe_ballast()) {
		o[BOUNDARY] = every_point(call, point, BOUNDARY);
		cr_expect_gt(o[BOUNDARY].points, 0,
			     "%s made no allocation with %ld live counters, %d short of "
			     "filling the arena: nothing tested", call, ballast - BEFORE_FULL,
			     BEFORE_FULL);
	}
	for (int m = COLD; m <= BOUNDARY; m++)
		failed += o[m].failed;
	cr_assert_eq(failed, 0,
		     "%s: failure points failed: %ld of %ld in a fresh process, %ld of %ld after a "
		     "warm-up, %ld of %ld at the arena's boundary",
		     call, o[COLD].failed, o[COLD].points, o[WARM].failed, o[WARM].points,
		     o[BOUNDARY].failed, o[BOUNDARY].points);
}

Test(alloc_failure, counter_init_fails_cleanly_at_every_allocation)
{
	check_every_point("pcpu_counter_init(&c, 42)", point_counter_init, false);
}

Test(alloc_failure, counter_init_opts_fails_cleanly_at_every_allocation)
{
	check_every_point("pcpu_counter_init_opts(&c, -7, {accuracy 16, floor 8})",
			  point_counter_init_opts, false);
}

Test(alloc_failure, counter_init_many_is_all_or_none_at_every_allocation)
{
	check_every_point("pcpu_counter_init_many(cs, 100, 10)", point_counter_init_many, true);
}

Test(alloc_failure, percpu_counter_init_many_is_all_or_none_at_every_allocation)
{
	check_every_point("percpu_counter_init_many(fbc, 1000, GFP_KERNEL, 10)",
			  point_percpu_counter_init_many, true);
}

Test(alloc_failure, stat_create_returns_null_enomem_at_every_allocation)
{
	check_every_point("pcpu_stat_create(3 items, 2 groups)", point_stat_create, false);
}

Test(alloc_failure, stat_create_like_returns_null_enomem_at_every_allocation)
{
	check_every_point("pcpu_stat_create_like(3 items, 2 groups)", point_stat_create_like,
			  false);
}

Test(alloc_failure, refresher_start_fails_cleanly_at_every_allocation)
{
	pcpu_test_skip_under_qemu();
	check_every_point("pcpu_refresher_start(5)", point_refresher_start, false);
}

Test(alloc_failure, counter_register_fails_cleanly_at_every_allocation)
{
	check_every_point("pcpu_counter_register(&c, gauge m{k=v})", point_counter_register, false);
}

Test(alloc_failure, stat_register_is_all_or_none_at_every_allocation)
{
	check_every_point("pcpu_stat_register(s, \"p\")", point_stat_register, false);
}

Test(alloc_failure, histogram_create_returns_null_enomem_at_every_allocation)
{
	check_every_point("pcpu_histogram_create(3 bounds)", point_histogram_create, false);
}

Test(alloc_failure, metrics_write_fails_cleanly_at_every_allocation)
{
	check_every_point("pcpu_metrics_write(/dev/null, OpenMetrics)", point_metrics_write, false);
}
