/* SPDX-License-Identifier: MIT */
/*
 * What the deterministic race tests (test/counter/test_fold_races.c,
 * test/charge/test_charge_races.c) share: single-stepping a traced child on
 * x86_64 and reading its restartable-sequence descriptor, and collecting
 * the broken promises of one stop into one message. Include after
 * <criterion/criterion.h> (pcpu_test.h).
 */
#ifndef PCPU_TEST_PTRACE_STEPS_H
#define PCPU_TEST_PTRACE_STEPS_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#if defined(__x86_64__)
#include <sys/user.h>
#endif

/* Appends one broken promise to @why ("; " between them), as room allows. */
static void broke(char *why, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), unused));

static void broke(char *why, size_t size, const char *fmt, ...)
{
	size_t used = strlen(why);
	va_list ap;

	if (used + 3 >= size)
		return;
	if (used)
		strcat(why, "; ");
	used = strlen(why);
	va_start(ap, fmt);
	vsnprintf(why + used, size - used, fmt, ap);
	va_end(ap);
}

#if defined(__x86_64__)

/* A word of the child's memory (errno tells a failure from a value of -1). */
static inline long pcpu_race_peek(pid_t pid, uintptr_t addr)
{
	errno = 0;
	return ptrace(PTRACE_PEEKDATA, pid, (void *)addr, NULL);
}

static inline uint64_t pcpu_race_ip(pid_t pid)
{
	struct user_regs_struct regs;

	cr_assert_eq(ptrace(PTRACE_GETREGS, pid, NULL, &regs), 0);
	return regs.rip;
}

/* One instruction; the child must still be there, stopped, after it. */
static inline void pcpu_race_step(pid_t pid, int *status)
{
	cr_assert_eq(ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL), 0);
	cr_assert_eq(waitpid(pid, status, 0), pid);
	cr_assert(WIFSTOPPED(*status), "the child left while stepped (status %#x)", *status);
}

/* Does the critical section described at @cs (a struct rseq_cs) hold @ip? */
static inline bool pcpu_race_in_section(pid_t pid, uintptr_t cs, uint64_t ip)
{
	uint64_t start = (uint64_t)pcpu_race_peek(pid, cs + 8);
	uint64_t length = (uint64_t)pcpu_race_peek(pid, cs + 16);

	return ip >= start && ip < start + length;
}

#endif /* __x86_64__ */

#endif /* PCPU_TEST_PTRACE_STEPS_H */
