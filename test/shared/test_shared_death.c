/* SPDX-License-Identifier: MIT */
/*
 * A writer SIGKILLed at every instruction of a slow-path add (every tenth
 * under valgrind's PCPU_TEST_SMALL: each kill steps the writer from its
 * start, so the run is quadratic; PCPU_SHARED_DEATH_STRIDE sets it): the unchecked
 * add, taking the robust lock, the fold's swap, the central update, the
 * threshold, the unlock. After each kill: the exact value has the add or
 * not (it is one instruction), the next sync repairs read() to exact and
 * does not hang on the lock the dead writer may hold, and the segment goes
 * on working. The writer is shared-peer (exec'd, its own address space),
 * single-stepped by ptrace from its stop before the add.
 *
 * On the atomic path (this test forces it before making the segment): a
 * restartable sequence restarts at every single step (the kernel sees a
 * preemption), so the rseq add cannot be stepped through; test_fold_races.c
 * shows how to, and the atomic path runs the same lock and fold. Skipped
 * under valgrind and qemu-user (no ptrace there).
 */
#include "shared_helpers.h"

#include <sys/ptrace.h>

TestSuite(shared_death, .timeout = 240);

/* The kernel's mark on a robust futex whose owner died (linux/futex.h). */
#define OWNER_DIED 0x40000000

static pid_t start_stopped(const char *name)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		char *argv[] = { (char *)SHARED_PEER, (char *)"die", (char *)name, NULL };
		extern char **environ;

		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execve(SHARED_PEER, argv, environ);
		_exit(127);
	}
	/* the exec's SIGTRAP, then its own SIGSTOP before the add */
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP, "status %#x", status);
	cr_assert_eq(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP, "status %#x", status);
	return pid;
}

/* Steps @pid @steps instructions; false if it stopped itself (the add returned) first. */
static bool step(pid_t pid, long steps)
{
	int status;

	for (long k = 0; k < steps; k++) {
		cr_assert_eq(ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL), 0);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFSTOPPED(status), "status %#x", status);
		if (WSTOPSIG(status) == SIGSTOP)
			return false;
		cr_assert_eq(WSTOPSIG(status), SIGTRAP);
	}
	return true;
}

PCPU_TEST(shared_death, killed_at_every_instruction_of_a_slow_add)
{
	static const struct pcpu_stat_item items[] = { { .name = "bytes", .floor = 16 } };
	struct pcpu_shared_desc d = { .items = items, .nr_items = 1 };
	const int64_t big = 2 * PCPU_SHARED_MAX_THRESH; /* what the peer adds: never fast */
	struct pcpu_shared *s;
	struct shared_handle *h;
	char name[64];
	int64_t before = 0;
	const char *env = getenv("PCPU_SHARED_DEATH_STRIDE");
	long k, in_lock = 0, stale = 0, stride = env ? atol(env) : 1;

	if (pcpu_test_on_valgrind() || getenv("PCPU_TEST_UNDER_QEMU"))
		cr_skip_test("no ptrace single-stepping here");
	setenv("PCPU_FORCE_FALLBACK", "1", 1); /* before the first pcpu_cpu_setup() */
	cr_assert_eq(pcpu_cpu_setup(), PCPU_CPU_ATOMIC, "the update path was chosen earlier");
	s = pcpu_shared_create(shared_test_name(name, sizeof(name), "death"), &d);
	cr_assert_not_null(s);
	h = shared_handle(s);
	if (stride < 1)
		stride = 1;
	if (pcpu_test_small())
		stride *= 10;
	for (k = 0;; k += stride) {
		pid_t pid = start_stopped(name);
		bool killed = step(pid, k);
		int status;
		int64_t exact;

		cr_assert_eq(kill(pid, SIGKILL), 0);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		exact = pcpu_shared_sum(s, 0);
		cr_assert(exact == before || exact == before + big, "step %ld: sum %" PRId64, k,
			  exact);
		in_lock += (__atomic_load_n(&h->hdr->lock.__data.__lock, __ATOMIC_RELAXED) &
			    OWNER_DIED) != 0;
		stale += pcpu_shared_read(s, 0) != exact;
		/* the next fold takes the dead writer's lock if it held it, and repairs */
		cr_assert_eq(pcpu_shared_sync_if_delta_above(s, 0, 0), exact, "step %ld", k);
		cr_assert_eq(pcpu_shared_read(s, 0), exact, "step %ld: read not repaired", k);
		before = exact;
		if (!killed)
			break;
		cr_assert_lt(k, 1000000, "the add never returned");
	}
	/* and the segment still works: a slow add, a fold_all */
	pcpu_shared_add(s, 0, big);
	pcpu_shared_fold_all(s);
	cr_assert_eq(pcpu_shared_read(s, 0), before + big);
	pcpu_shared_unlink(name);
	pcpu_shared_close(s);
	cr_assert_gt(in_lock, 0, "no kill landed while the lock was held");
	cr_assert_gt(stale, 0, "no kill left read() stale: the test proves nothing");
	cr_log_info("about %ld instructions, a kill every %ld: %ld with the lock held, %ld left "
		    "read() stale", k, stride, in_lock, stale);
}
