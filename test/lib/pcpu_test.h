/* SPDX-License-Identifier: MIT */
/*
 * What every Criterion test of the library shares: the signal that misuse
 * raises, PCPU_TEST (Test() with a leak check under valgrind after the
 * body), scaling work down under valgrind, pinning to a CPU, |a - b|, a
 * deterministic generator, a monotonic clock, a watch for values that must
 * never go back, and running a check in a child with a deadline. test/meson.build puts this
 * directory on the include path of every test and defines
 * PCPU_TEST_HAVE_VALGRIND_H when <valgrind/valgrind.h> and
 * <valgrind/memcheck.h> are installed.
 */
#ifndef PCPU_TEST_COMMON_H
#define PCPU_TEST_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* before any system header: CPU_SET, sched_getcpu */
#endif
#include <criterion/criterion.h>
#include <percpu/common.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef PCPU_TEST_HAVE_VALGRIND_H
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#endif

/*
 * Misuse of a call that cannot report an error: the library aborts when
 * built without NDEBUG (test/meson.build defines PCPU_TEST_MISUSE_ABORTS
 * then), and does nothing in release builds.
 */
#ifdef PCPU_TEST_MISUSE_ABORTS
#define PCPU_TEST_MISUSE_SIGNAL SIGABRT
#else
#define PCPU_TEST_MISUSE_SIGNAL 0
#endif

/*
 * Under valgrind, fails the test if memory was definitely lost. Criterion
 * runs each test in a child process and ignores how that child exits after
 * the test body returned (valgrind's --error-exitcode included), and with
 * --tap it hides the child's stderr: a leak found at exit would go
 * unnoticed. So every test checks for leaks at the end of its body.
 */
static inline void pcpu_test_assert_no_leaks(void)
{
#ifdef PCPU_TEST_HAVE_VALGRIND_H
	unsigned long leaked = 0, dubious = 0, reachable = 0, suppressed = 0;

	if (!RUNNING_ON_VALGRIND)
		return;
	VALGRIND_DO_LEAK_CHECK;
	VALGRIND_COUNT_LEAKS(leaked, dubious, reachable, suppressed);
	(void)dubious;
	(void)reachable;
	(void)suppressed;
	cr_assert_eq(leaked, 0, "valgrind: %lu bytes definitely lost", leaked);
#endif
}

/* Test(), with a leak check under valgrind after the body. */
#define PCPU_TEST(suite, name, ...)                                             \
	static void pcpu_test_body_##suite##_##name(void);                      \
	Test(suite, name, ##__VA_ARGS__)                                        \
	{                                                                       \
		pcpu_test_body_##suite##_##name();                              \
		pcpu_test_assert_no_leaks();                                    \
	}                                                                       \
	static void pcpu_test_body_##suite##_##name(void)

/* True when the test runs under valgrind. */
static inline bool pcpu_test_on_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

#ifdef PCPU_TEST_HAVE_VALGRIND_H
	if (RUNNING_ON_VALGRIND)
		return true;
#endif
	return preload && strstr(preload, "vgpreload");
}

/*
 * Skips the test under qemu-user (.ci/run sets PCPU_TEST_UNDER_QEMU=1 there
 * for its aarch64 step): qemu 7.2 aborts itself (qemu_plugin_vcpu_init_hook:
 * assertion failed) when a forked child creates a thread, or when a guest's
 * thread creation fails midway.
 */
#define pcpu_test_skip_under_qemu()                                                    \
	do {                                                                           \
		if (getenv("PCPU_TEST_UNDER_QEMU"))                                    \
			cr_skip_test("qemu-user aborts on threads made in a forked child"); \
	} while (0)

/* True when the test runs under valgrind (or PCPU_TEST_SMALL is set). */
static inline bool pcpu_test_small(void)
{
	const char *small = getenv("PCPU_TEST_SMALL");

	if (small && *small && strcmp(small, "0") != 0)
		return true;
	return pcpu_test_on_valgrind();
}

/* @normal iterations, or a fiftieth of them (at least 1) when small. */
static inline long pcpu_test_iterations(long normal)
{
	if (pcpu_test_small()) {
		long n = normal / 50;

		return n > 0 ? n : 1;
	}
	return normal;
}

/* The CPUs this thread may run on, as a list; returns how many. */
static inline int pcpu_test_allowed_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0;
	for (int cpu = 0; cpu < CPU_SETSIZE && n < max; cpu++)
		if (CPU_ISSET(cpu, &set))
			cpus[n++] = cpu;
	return n;
}

/* Pins the calling thread to @cpu; returns whether it could. */
static inline bool pcpu_test_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		return false;
	return sched_getcpu() == cpu;
}

/*
 * A new thread's first add may take the slow path (its own rseq area is
 * registered there, and on the atomic path its slot is claimed), which sends
 * the amount to the central value: a thread that must leave a delta pending
 * adds 0 first.
 */
#define pcpu_test_first_add(counter) pcpu_counter_add((counter), 0)

/* What pcpu_test_on_cpu() hands its thread. */
struct pcpu_test_on_cpu_call {
	int cpu;
	void (*fn)(void *);
	void *arg;
	bool pinned;
};

static inline void *pcpu_test_on_cpu_thread(void *p)
{
	struct pcpu_test_on_cpu_call *call = p;

	call->pinned = pcpu_test_pin(call->cpu);
	if (call->pinned)
		call->fn(call->arg);
	return NULL;
}

/*
 * Runs @fn(@arg) in a new thread pinned to @cpu and waits for it; returns
 * whether it could pin it (and so ran @fn). A thread of its own: on the
 * atomic path a thread's counter adds all go to the one slot it owns
 * (lib/base/slot_owner.c), so only another thread puts a delta on another CPU.
 */
static inline bool pcpu_test_on_cpu(int cpu, void (*fn)(void *), void *arg)
{
	struct pcpu_test_on_cpu_call call = { cpu, fn, arg, false };
	pthread_t t;

	if (pthread_create(&t, NULL, pcpu_test_on_cpu_thread, &call) != 0)
		return false;
	pthread_join(t, NULL);
	return call.pinned;
}

/* Pins the calling thread to the first CPU it may run on; returns it, or -1. */
static inline int pcpu_test_try_pin_first(void)
{
	int cpu;

	if (pcpu_test_allowed_cpus(&cpu, 1) != 1 || !pcpu_test_pin(cpu))
		return -1;
	return cpu;
}

/* Pins the calling thread to the first CPU it may run on, or fails; returns it. */
static inline int pcpu_test_pin_first(void)
{
	int cpu = pcpu_test_try_pin_first();

	cr_assert_geq(cpu, 0, "cannot pin the thread to its first allowed CPU");
	return cpu;
}

/* Seconds since an arbitrary point, monotonic. */
static inline double pcpu_test_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * A watch on a value that must never move against @direction (+1: never
 * decrease, -1: never increase): pcpu_test_monotone_see() counts the steps
 * back and keeps the largest. Thread-local state; nothing shared.
 */
struct pcpu_test_monotone {
	int direction;
	bool seen;
	int64_t last;
	long backs;         /* steps against the direction */
	uint64_t worst;     /* the largest of them */
	int64_t worst_from; /* where the largest started... */
	int64_t worst_to;   /* ...and where it went */
};

static inline struct pcpu_test_monotone pcpu_test_monotone(int direction)
{
	return (struct pcpu_test_monotone){ .direction = direction };
}

static inline void pcpu_test_monotone_see(struct pcpu_test_monotone *m, int64_t v)
{
	if (m->seen && (m->direction > 0 ? v < m->last : v > m->last)) {
		uint64_t back = m->last > v ? (uint64_t)m->last - (uint64_t)v
					    : (uint64_t)v - (uint64_t)m->last;

		m->backs++;
		if (back > m->worst) {
			m->worst = back;
			m->worst_from = m->last;
			m->worst_to = v;
		}
	}
	m->seen = true;
	m->last = v;
}

/*
 * Runs @fn(@arg) in a fork()ed child that SIGALRM kills after @seconds, so
 * that a hang fails the test instead of hanging the suite; returns the
 * child's wait status. The child _exit()s with what @fn returns: 0 for
 * success, anything else names the check that failed. Criterion's
 * assertions must not be used in @fn (they would report from the child).
 */
static inline int pcpu_test_in_child(int (*fn)(void *arg), void *arg, unsigned int seconds)
{
	int status;
	pid_t pid;

	fflush(NULL); /* nothing buffered is written twice */
	pid = fork();
	cr_assert_neq(pid, -1, "fork failed");
	if (pid == 0) {
		alarm(seconds);
		_exit(fn(arg));
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid, "waitpid failed");
	return status;
}

/* Fails unless the wait status @status is a clean exit with 0; @what names the check. */
#define pcpu_test_assert_child_passed(status, what)                                     \
	do {                                                                             \
		int pt_st_ = (status);                                                   \
		cr_assert(!WIFSIGNALED(pt_st_) || WTERMSIG(pt_st_) != SIGALRM,           \
			  "%s: the child hung (killed by its deadline)", (what));        \
		cr_assert(WIFEXITED(pt_st_), "%s: the child died of signal %d", (what),  \
			  WIFSIGNALED(pt_st_) ? WTERMSIG(pt_st_) : 0);                   \
		cr_assert_eq(WEXITSTATUS(pt_st_), 0, "%s: check %d failed in the child", \
			     (what), WEXITSTATUS(pt_st_));                               \
	} while (0)

/*
 * Whether the kernel serves rseq(2) to this process (not valgrind, not
 * qemu-user): a registration with a bad length fails with EINVAL (or EBUSY
 * style errors), not ENOSYS.
 */
static inline bool pcpu_test_kernel_has_rseq(void)
{
	return syscall(SYS_rseq, NULL, 0, 0, 0) != 0 && errno != ENOSYS;
}

/* |a - b|, exact for any two int64_t. */
static inline uint64_t pcpu_test_distance(int64_t a, int64_t b)
{
	return a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

/*
 * A counter slot's pending delta from its two fields: the mark is stored
 * plus PCPU_SLOT_ARMED, and 0 while the slot is not armed (<percpu/common.h>).
 */
static inline int64_t pcpu_test_slot_pending(int64_t value, int64_t folded)
{
	uint64_t mark = folded ? (uint64_t)folded - PCPU_SLOT_ARMED : 0;

	return (int64_t)((uint64_t)value - mark);
}

/* |pcpu_test_slot_pending()|. */
static inline uint64_t pcpu_test_slot_distance(int64_t value, int64_t folded)
{
	return pcpu_test_distance(pcpu_test_slot_pending(value, folded), 0);
}

/* A small deterministic generator (PCG-style LCG, upper bits). */
static inline uint64_t pcpu_test_rand(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return *state >> 33;
}

#endif /* PCPU_TEST_COMMON_H */
