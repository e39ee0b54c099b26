/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the shared-segment tests: unique names (pid-based, so that
 * parallel test processes never meet), a small descriptor, running the
 * exec'd peer (shared_peer.c) with its output captured, and running it
 * traced, one instruction at a time.
 */
#ifndef PCPU_TEST_SHARED_HELPERS_H
#define PCPU_TEST_SHARED_HELPERS_H

#include "pcpu_test.h"

#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>

#include <percpu/metrics.h>
#include <percpu/shared.h>

#include "shared/shared_internal.h"

/* "/pcpu-test-PID-TAG", in @buf. */
static inline const char *shared_test_name(char *buf, size_t size, const char *tag)
{
	snprintf(buf, size, "/pcpu-test-%ld-%s", (long)getpid(), tag);
	shm_unlink(buf); /* a leftover of a crashed earlier run */
	return buf;
}

static const struct pcpu_stat_item shared_test_items[] = {
	{ .name = "requests", .help = "Requests served." },
	{ .name = "bytes", .help = "Bytes sent.\nWith a \"newline\" and a \\." },
	{ .name = "depth", .kind = PCPU_METRIC_GAUGE, .floor = 8 },
};

static inline struct pcpu_shared_desc shared_test_desc(void)
{
	return (struct pcpu_shared_desc){ .items = shared_test_items, .nr_items = 3 };
}

/*
 * Runs the peer with @arg1 @arg2 and environment @env (NULL: ours), puts
 * the first line of what it printed in @out; returns its exit status, -1
 * if it did not exit.
 */
static inline int shared_test_peer(const char *arg1, const char *arg2, char *const *env,
				   char *out, size_t size)
{
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		char *argv[] = { (char *)SHARED_PEER, (char *)arg1, (char *)arg2, NULL };
		extern char **environ;

		dup2(fds[1], 1);
		close(fds[0]);
		execve(SHARED_PEER, argv, env ? env : environ);
		_exit(127);
	}
	close(fds[1]);
	n = 0;
	while (n < (ssize_t)size - 1) {
		ssize_t r = read(fds[0], out + n, size - 1 - (size_t)n);

		if (r <= 0)
			break;
		n += r;
	}
	out[n] = '\0';
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * Runs the peer with @cmd @name traced; returns once it has stopped itself
 * (its first SIGSTOP: the part to step comes next).
 */
static inline pid_t shared_test_start_stopped(const char *cmd, const char *name)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		char *argv[] = { (char *)SHARED_PEER, (char *)cmd, (char *)name, NULL };
		extern char **environ;

		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execve(SHARED_PEER, argv, environ);
		_exit(127);
	}
	/* the exec's SIGTRAP, then its own SIGSTOP */
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP, "status %#x", status);
	cr_assert_eq(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP, "status %#x", status);
	return pid;
}

/* Steps @pid @steps instructions; false if it stopped itself (SIGSTOP) first. */
static inline bool shared_test_step(pid_t pid, long steps)
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

#endif /* PCPU_TEST_SHARED_HELPERS_H */
