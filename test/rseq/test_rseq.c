/* SPDX-License-Identifier: MIT */
/*
 * The hard cases of the update path, each with an exact oracle: threads
 * that migrate every few adds, more threads than CPUs, signal handlers that
 * add while the interrupted thread is mid-add, threads that exit with
 * unfolded deltas, and fork in the middle of a run. Run with the rseq path
 * (default), with PCPU_FORCE_FALLBACK=1 (meson test --setup fallback) and
 * under valgrind (which has no rseq, so it also takes the fallback).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/registry.h>

#include "pcpu_test.h"

#include "base/rseq_area.h"

/* glibc >= 2.35: the kernel's struct rseq and the signature glibc registers */
#if defined(__has_include)
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#define HAVE_SYS_RSEQ_H 1
#endif
#endif

/* glibc's, weak: absent before 2.35 and on other libcs */
extern const unsigned int __rseq_size __attribute__((weak));

static struct pcpu_counter counter;

static void setup(void)
{
	cr_assert_eq(pcpu_counter_init(&counter, 0), 0);
}

static void teardown(void)
{
	pcpu_counter_destroy(&counter);
}

TestSuite(rseq, .init = setup, .fini = teardown, .timeout = 60);

static unsigned int online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (unsigned int)n : 1;
}

static void assert_exact_and_bounded(struct pcpu_counter *c, int64_t tally)
{
	int64_t read = pcpu_counter_read(c);
	uint64_t diff = read > tally ? (uint64_t)read - (uint64_t)tally
				     : (uint64_t)tally - (uint64_t)read;

	cr_assert_eq(pcpu_counter_sum(c), tally, "sum %lld != tally %lld",
		     (long long)pcpu_counter_sum(c), (long long)tally);
	cr_assert_leq(diff, pcpu_counter_error_bound(c), "|read %lld - tally %lld| > bound %llu",
		      (long long)read, (long long)tally,
		      (unsigned long long)pcpu_counter_error_bound(c));
}

PCPU_TEST(rseq, update_path_is_the_one_the_environment_asks_for)
{
	const char *force = getenv("PCPU_FORCE_FALLBACK");
	bool forced = force && *force && strcmp(force, "0") != 0;

	if (forced) {
		cr_assert_eq(pcpu_cpu_setup(), PCPU_CPU_ATOMIC);
		return;
	}
#if PCPU_ARCH_HAVE_RSEQ_ADD
	if (!pcpu_test_kernel_has_rseq()) {
		cr_assert_eq(pcpu_cpu_setup(), PCPU_CPU_ATOMIC);
		return;
	}
	cr_assert_eq(pcpu_cpu_setup(), PCPU_CPU_RSEQ, "the kernel has rseq but it is not used");
	/* glibc's registration where it made one, the library's own otherwise */
	if (&__rseq_size != NULL && __rseq_size > 0)
		cr_assert_eq(pcpu_rseq_area_owner(), PCPU_RSEQ_LIBC);
	else
		cr_assert_eq(pcpu_rseq_area_owner(), PCPU_RSEQ_OWN);
#else
	cr_assert_eq(pcpu_cpu_setup(), PCPU_CPU_ATOMIC);
#endif
}

/*
 * The sequences hard-code the kernel's struct rseq offsets and the
 * signature before each abort handler (arch/x86_64.h, arch/aarch64.h). A
 * wrong signature would kill the first thread whose sequence the kernel
 * aborts; the kernel says which one the area was registered with: asked
 * to register the same area again, it answers EBUSY if the signature
 * matches and EPERM if not.
 */
PCPU_TEST(rseq, sequences_use_the_kernels_offsets_and_the_registered_signature)
{
#if PCPU_ARCH_HAVE_RSEQ_ADD
	void *area;

#ifdef HAVE_SYS_RSEQ_H
	cr_assert_eq(offsetof(struct rseq, cpu_id), PCPU_RSEQ_CPU_ID_OFFSET);
	cr_assert_eq(offsetof(struct rseq, rseq_cs), PCPU_RSEQ_CS_OFFSET);
	cr_assert_eq(RSEQ_SIG, PCPU_RSEQ_SIG, "glibc registers %#x, the sequences say %#x",
		     (unsigned int)RSEQ_SIG, (unsigned int)PCPU_RSEQ_SIG);
#endif
	if (pcpu_cpu_setup() != PCPU_CPU_RSEQ)
		cr_skip_test("no rseq area here");
	area = (char *)__builtin_thread_pointer() + __pcpu_rseq_offset;
	/* 32: the original struct rseq, as glibc and lib/base/rseq_area.c register it */
	errno = 0;
	cr_assert_eq(syscall(SYS_rseq, area, 32u, 0, PCPU_RSEQ_SIG ^ 1), -1);
	if (errno == EINVAL)
		cr_skip_test("the area was registered with another length");
	cr_assert_eq(errno, EPERM, "the kernel does not tell signatures apart (errno %d)", errno);
	errno = 0;
	cr_assert_eq(syscall(SYS_rseq, area, 32u, 0, PCPU_RSEQ_SIG), -1);
	cr_assert_eq(errno, EBUSY, "registered with another signature than %#x (errno %d)",
		     (unsigned int)PCPU_RSEQ_SIG, errno);
#else
	cr_skip_test("no restartable sequences on this architecture");
#endif
}

#if PCPU_ARCH_HAVE_RSEQ_ADD

/* Shared with the traced child of the test below. */
struct restart_page {
	uintptr_t rseq_cs_addr; /* the child's rseq->rseq_cs */
	int entered;		/* the child is about to add */
	int adds_done;		/* adds it has returned from */
};

#define RESTART_ADDS 3

/* The sequences of arch/: each adds 1 to this CPU's copy, or fails. */
enum restart_kind { RESTART_ADD, RESTART_CHECKED, RESTART_ADD32, RESTART_KINDS };
static const char *const restart_names[] = { "plain", "checked", "32-bit" };

static bool restart_add(enum restart_kind kind, int64_t *cpu0)
{
	switch (kind) {
	case RESTART_ADD:
		return pcpu_arch_rseq_add(cpu0, 1) >= 0;
	case RESTART_CHECKED:
		return pcpu_arch_rseq_add_checked(cpu0, 1, 1000, 0) == 1;
	default:
		return pcpu_arch_rseq_add32((uint64_t *)(void *)cpu0, 1, 1000) >= 0;
	}
}

/* The traced child: RESTART_ADDS adds of 1 by @kind, each exactly once. */
static void restart_child(struct restart_page *page, enum restart_kind kind)
{
	int64_t *cpu0 = NULL, sum = 0;
	size_t cpus = pcpu_cpu_possible();

	if (posix_memalign((void **)&cpu0, PCPU_STRIDE, cpus * PCPU_STRIDE) != 0)
		_exit(12);
	memset(cpu0, 0, cpus * PCPU_STRIDE);
	/* a 32-bit word's mark is stored armed (docs/internals.md [armed]) */
	if (kind == RESTART_ADD32)
		for (size_t cpu = 0; cpu < cpus; cpu++)
			*(uint64_t *)(void *)((char *)cpu0 + cpu * PCPU_STRIDE) =
				(uint64_t)PCPU_WORD_ARMED << 32;
	page->rseq_cs_addr = (uintptr_t)__builtin_thread_pointer() +
			     (uintptr_t)__pcpu_rseq_offset + PCPU_RSEQ_CS_OFFSET;
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
		_exit(13);
	raise(SIGSTOP);
	__atomic_store_n(&page->entered, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < RESTART_ADDS; i++) {
		if (!restart_add(kind, cpu0))
			_exit(14);
		__atomic_store_n(&page->adds_done, i + 1, __ATOMIC_SEQ_CST);
	}
	/* the 32-bit sequence adds to the low half, the others to the whole */
	for (size_t cpu = 0; cpu < cpus; cpu++) {
		int64_t v = *(int64_t *)(void *)((char *)cpu0 + cpu * PCPU_STRIDE);

		sum += kind == RESTART_ADD32 ? (int64_t)(uint32_t)v : v;
	}
	_exit(sum == RESTART_ADDS ? 0 : 15);
}

/*
 * Every stop of a thread inside a sequence (here: each single step) makes
 * the kernel abort it: clear rseq->rseq_cs and resume at the abort
 * handler, after checking the signature before it; the handler starts the
 * sequence again, which arms rseq_cs again. So a single-stepped sequence
 * restarts at every step and never commits, and once let run, it commits
 * exactly once. Counted from the child's rseq_cs going from 0 to armed: a
 * wrong signature raises SIGSEGV at the first abort, a handler that did
 * not restart would leave it unarmed. Steps @kind's child into its first
 * sequence, then lets it run.
 */
static void step_through(enum restart_kind kind)
{
	const char *name = restart_names[kind];
	struct restart_page *page;
	long steps, armings = 0;
	uint64_t armed = 0;
	int status;
	pid_t pid;

	page = mmap(NULL, sizeof(*page), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		    0);
	cr_assert_neq(page, MAP_FAILED);
	memset(page, 0, sizeof(*page));
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		restart_child(page, kind);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 13)
		cr_skip_test("ptrace is not allowed here");
	cr_assert(WIFSTOPPED(status), "%s: child did not stop (status %#x)", name, status);
	/* into the first sequence, then 200 steps in its restart loop */
	for (steps = 0; steps < 100000 && armings < 200; steps++) {
		uint64_t now;

		cr_assert_eq(ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL), 0);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP,
			  "%s: child not stopped by its step (status %#x)", name, status);
		errno = 0;
		now = (uint64_t)ptrace(PTRACE_PEEKDATA, pid, (void *)page->rseq_cs_addr, NULL);
		cr_assert_eq(errno, 0);
		if (now != 0 && armed == 0 && __atomic_load_n(&page->entered, __ATOMIC_SEQ_CST))
			armings++;
		armed = now;
	}
	cr_assert_eq(armings, 200, "%s: the sequence was armed %ld times in %ld steps", name,
		     armings, steps);
	cr_assert_eq(__atomic_load_n(&page->adds_done, __ATOMIC_SEQ_CST), 0,
		     "%s: a sequence committed while stepped", name);
	cr_assert_eq(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "%s: child failed (status %#x): not exactly one add per call", name, status);
	munmap(page, sizeof(*page));
}

PCPU_TEST(rseq, a_stepped_sequence_restarts_at_every_stop_and_then_adds_exactly_once)
{
	if (pcpu_cpu_setup() != PCPU_CPU_RSEQ)
		cr_skip_test("no rseq area here");
	for (int kind = 0; kind < RESTART_KINDS; kind++)
		step_through((enum restart_kind)kind);
}

#endif

/* Deterministic per-thread pseudo-random signed amounts. */
static int64_t next_amount(uint64_t *state)
{
	return (int64_t)(pcpu_test_rand(state) % 2001) - 1000;
}

struct worker {
	pthread_t thread;
	uint64_t seed;
	long adds;
	int migrate_every; /* 0: never */
	int64_t tally;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned int cpus = online_cpus();

	for (long i = 0; i < w->adds; i++) {
		int64_t a = next_amount(&w->seed);

		if (w->migrate_every && i % w->migrate_every == 0) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET((unsigned int)(w->seed >> 40) % cpus, &set);
			sched_setaffinity(0, sizeof(set), &set); /* may fail: CPU offline */
		}
		pcpu_counter_add(&counter, a);
		w->tally += a;
	}
	return NULL;
}

static int64_t run_workers(int nthreads, long adds, int migrate_every)
{
	struct worker *w = calloc((size_t)nthreads, sizeof(*w));
	int64_t tally = 0;

	cr_assert_not_null(w);
	for (int i = 0; i < nthreads; i++) {
		w[i] = (struct worker){ .seed = (uint64_t)i * 7919 + 1, .adds = adds,
					.migrate_every = migrate_every };
		cr_assert_eq(pthread_create(&w[i].thread, NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].thread, NULL);
		tally += w[i].tally;
	}
	free(w);
	return tally;
}

PCPU_TEST(rseq, nothing_lost_when_threads_migrate_every_few_adds)
{
	int64_t tally = run_workers(4, pcpu_test_iterations(40000), 3);

	assert_exact_and_bounded(&counter, tally);
}

PCPU_TEST(rseq, nothing_lost_with_eight_times_more_threads_than_cpus)
{
	int64_t tally = run_workers(8 * (int)online_cpus(), pcpu_test_iterations(100000), 0);

	assert_exact_and_bounded(&counter, tally);
}

/* Signals: the handler adds while the thread it interrupted may be mid-add. */
static atomic_long handler_adds;
static atomic_bool stop_signalling;

static int64_t handler_amount;

static void add_in_handler(int sig)
{
	(void)sig;
	pcpu_counter_add(&counter, handler_amount);
	atomic_fetch_add(&handler_adds, 1);
}

static void *signal_sender(void *arg)
{
	pthread_t target = *(pthread_t *)arg;

	while (!atomic_load(&stop_signalling)) {
		pthread_kill(target, SIGUSR1);
		sched_yield();
	}
	return NULL;
}

/*
 * This thread adds 1 at a time while another floods it with signals whose
 * handler adds @amount, until at least @signals have landed; the counter
 * must hold every add of both.
 */
static void adds_beside_a_handler_adding(int64_t amount, long signals)
{
	struct sigaction sa = { .sa_handler = add_in_handler };
	pthread_t self = pthread_self(), sender;
	/*
	 * Where pairs are swapped under a lock (i386, armhf), every add blocks
	 * and unblocks signals, two system calls, and a flood of signals
	 * slows each further: a tenth of the adds (the loop still waits for
	 * the signals to land).
	 */
	long adds = pcpu_test_iterations(PCPU_ARCH_HAVE_CAS_PAIR ? 3000000 : 300000);
	int64_t tally = 0;

	handler_amount = amount;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert_eq(pthread_create(&sender, NULL, signal_sender, &self), 0);
	/* keep adding until enough signals have landed, not just for a while */
	for (long i = 0; i < adds || atomic_load(&handler_adds) < signals; i++) {
		pcpu_counter_add(&counter, 1);
		tally++;
	}
	atomic_store(&stop_signalling, true);
	pthread_join(sender, NULL);
	signal(SIGUSR1, SIG_IGN);
	cr_assert_gt(atomic_load(&handler_adds), 0, "no signal arrived: the test proved nothing");
	assert_exact_and_bounded(&counter, tally + amount * atomic_load(&handler_adds));
}

/* An amount over the threshold: the handler's add takes the slow path. */
PCPU_TEST(rseq, nothing_lost_when_a_signal_handler_adds_mid_add)
{
	adds_beside_a_handler_adding(1000003, 100);
}

/*
 * Small adds in the handler take the fast path too: on the rseq path the
 * interrupted sequence aborts and restarts; on the atomic path each add
 * lands in one instruction before its check (lib/base/slot_owner.c), so no store
 * overwrites the handler's. Many signals: each lands mid-add now and then
 * (test/counter/test_owner_races.c puts one at every instruction).
 */
PCPU_TEST(rseq, nothing_lost_when_a_signal_handler_adds_on_the_fast_path_mid_add)
{
	adds_beside_a_handler_adding(1, 2000);
}

/* Threads that exit holding unfolded deltas: nothing is per thread. */
static void *add_a_little_and_exit(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5; i++)
		pcpu_counter_add(&counter, 3);
	return NULL;
}

PCPU_TEST(rseq, deltas_of_exited_threads_are_kept)
{
	enum { THREADS = 64 };
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, add_a_little_and_exit, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_exact_and_bounded(&counter, THREADS * 5 * 3);
	pcpu_registry_fold_all();
	cr_assert_eq(pcpu_counter_read(&counter), THREADS * 5 * 3,
		     "after a fold of every CPU, read must be exact");
}

/* fork() while writers run: parent and child each keep exact counts. */
static atomic_llong started, completed;
static atomic_bool stop_writers;

static void *positive_writer(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_writers)) {
		atomic_fetch_add(&started, 7);
		pcpu_counter_add(&counter, 7);
		atomic_fetch_add(&completed, 7);
	}
	return NULL;
}

static int child_checks(void)
{
	/* only this thread exists here; memory is the parent's at fork time */
	long long lo = atomic_load(&completed), hi = atomic_load(&started);
	int64_t at_fork = pcpu_counter_sum(&counter);
	struct pcpu_counter fresh;

	if (at_fork < lo || at_fork > hi)
		return 10;
	for (int i = 0; i < 100000; i++)
		pcpu_counter_add(&counter, 5);
	if (pcpu_counter_sum(&counter) != at_fork + 500000)
		return 11;
	/* locks taken by parent threads must not be held here */
	if (pcpu_counter_sync_if_delta_above(&counter, 0) != at_fork + 500000)
		return 12;
	if (pcpu_counter_init(&fresh, 42) != 0)
		return 13;
	pcpu_counter_add(&fresh, 1);
	if (pcpu_counter_sum(&fresh) != 43)
		return 14;
	pcpu_counter_destroy(&fresh);
	return 0;
}

PCPU_TEST(rseq, parent_and_child_keep_exact_counts_across_fork)
{
	enum { WRITERS = 3 };
	pthread_t t[WRITERS];
	int status;
	pid_t pid;

	for (int i = 0; i < WRITERS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, positive_writer, NULL), 0);
	while (atomic_load(&completed) < 7 * 10000)
		sched_yield();
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(child_checks());
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	atomic_store(&stop_writers, true);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(t[i], NULL);
	cr_assert(WIFEXITED(status), "child died");
	cr_assert_eq(WEXITSTATUS(status), 0, "child check %d failed", WEXITSTATUS(status));
	assert_exact_and_bounded(&counter, atomic_load(&completed));
}
