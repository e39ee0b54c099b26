/* SPDX-License-Identifier: MIT */
/*
 * What the deterministic race tests (test/counter/test_fold_races.c,
 * test/charge/test_charge_races.c, through race_sweep.h) share: single-stepping
 * a traced child, running it on to a stop with a breakpoint (a sweep of n
 * stops then steps a few instructions per stop, not n^2 / 2 in all), reading
 * its restartable-sequence descriptor, making a system call without libc,
 * and collecting the broken promises of one stop into one message. Include
 * after <criterion/criterion.h> (pcpu_test.h).
 *
 * The registers are x86_64's: everything architectural of the race tests
 * stands here, behind PCPU_RACE_HAVE_STEPS (0 elsewhere, where they skip).
 */
#ifndef PCPU_TEST_PTRACE_STEPS_H
#define PCPU_TEST_PTRACE_STEPS_H

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#if defined(__x86_64__)
#include <sys/user.h>
#define PCPU_RACE_HAVE_STEPS 1
#else
#define PCPU_RACE_HAVE_STEPS 0
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

#define PCPU_RACE_MAX_STEPS 200000 /* instructions of one traced call, at most */

/*
 * The trail of a run without a stop: where each instruction of the traced
 * call stood, and whether in this program's code, where a breakpoint can
 * take a later run on to it.
 */
struct pcpu_race_trail {
	uint64_t *ip;
	bool *in_program;
	long steps;
};

#if PCPU_RACE_HAVE_STEPS

/*
 * syscall(2) without libc: for a test that interposes syscall() to see the
 * calls the library makes through it. Returns what the kernel returned
 * (-errno on failure).
 */
static inline long pcpu_race_raw_syscall(long number, const long a[6])
{
	register long r10 __asm__("r10") = a[3];
	register long r8 __asm__("r8") = a[4];
	register long r9 __asm__("r9") = a[5];
	long ret;

	__asm__ __volatile__("syscall"
			     : "=a"(ret)
			     : "a"(number), "D"(a[0]), "S"(a[1]), "d"(a[2]), "r"(r10), "r"(r8),
			       "r"(r9)
			     : "rcx", "r11", "memory");
	return ret;
}

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

/*
 * Is @ip in this test program itself (its code and the static library),
 * not in a shared library? The child is forked from this process, so an
 * address means the same code in both.
 */
static inline bool pcpu_race_in_program(uint64_t ip)
{
	static Dl_info self;
	Dl_info info;

	if (!self.dli_fbase)
		cr_assert(dladdr((void *)(uintptr_t)&pcpu_race_in_program, &self));
	return dladdr((void *)(uintptr_t)ip, &info) && info.dli_fbase == self.dli_fbase;
}

/*
 * Fast-forwarding a sweep. Stopping before instruction k of a traced call
 * by single-stepping from its first costs k steps, so a sweep of n stops
 * costs n^2 / 2 (under ASan, which triples n, nine times as much). Instead
 * the child runs freely to an earlier instruction of the same run, the
 * anchor, with a breakpoint (int3) on it, and is stepped from there.
 *
 * Runs the stopped child on until it is about to run @ip for the @nth time,
 * counting its present instruction if it is @ip. Until then it runs as a
 * stepped child does: before each resumption the restartable-sequence
 * pointer at @cs_field (if any) is cleared, so that no stop aborts a
 * sequence, and the last one armed is kept in @armed.
 *
 * Only the traced thread may meet the breakpoint (another would die of its
 * SIGTRAP): @ip must be code that no other thread of the child runs
 * meanwhile. A free run can differ from the stepped one: a real preemption
 * inside a sequence that armed itself aborts and restarts it, and the
 * caller sees that as a different instruction where it expected one.
 */
static inline void pcpu_race_run_to(pid_t pid, uint64_t ip, long nth, uintptr_t cs_field,
				    uintptr_t *armed)
{
	struct user_regs_struct regs;
	long text, seen = 0;
	int status;

	errno = 0;
	text = ptrace(PTRACE_PEEKTEXT, pid, (void *)(uintptr_t)ip, NULL);
	cr_assert_eq(errno, 0);
	for (;;) {
		cr_assert_eq(ptrace(PTRACE_GETREGS, pid, NULL, &regs), 0);
		if (regs.rip == ip && ++seen == nth)
			return;
		if (cs_field) {
			long cs = pcpu_race_peek(pid, cs_field);

			cr_assert_eq(errno, 0);
			if (cs) {
				*armed = (uintptr_t)cs;
				cr_assert_eq(ptrace(PTRACE_POKEDATA, pid, (void *)cs_field, NULL), 0);
			}
		}
		if (regs.rip == ip) {
			pcpu_race_step(pid, &status); /* off the breakpoint's address */
			continue;
		}
		cr_assert_eq(ptrace(PTRACE_POKETEXT, pid, (void *)(uintptr_t)ip,
				    (void *)((text & ~0xffL) | 0xcc)), 0);
		cr_assert_eq(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP,
			  "the child left or stopped elsewhere on its way (status %#x)", status);
		cr_assert_eq(ptrace(PTRACE_POKETEXT, pid, (void *)(uintptr_t)ip, (void *)text), 0);
		cr_assert_eq(ptrace(PTRACE_GETREGS, pid, NULL, &regs), 0);
		cr_assert_eq(regs.rip, ip + 1, "the child stopped off the breakpoint");
		regs.rip = ip;
		cr_assert_eq(ptrace(PTRACE_SETREGS, pid, NULL, &regs), 0);
	}
}

static inline void pcpu_race_trail_init(struct pcpu_race_trail *t)
{
	t->ip = calloc(PCPU_RACE_MAX_STEPS, sizeof(*t->ip));
	t->in_program = calloc(PCPU_RACE_MAX_STEPS, sizeof(*t->in_program));
	t->steps = 0;
	cr_assert(t->ip && t->in_program);
}

/* Instruction @step of the run without a stop stood at @ip. */
static inline void pcpu_race_trail_note(struct pcpu_race_trail *t, long step, uint64_t ip)
{
	cr_assert_lt(step, PCPU_RACE_MAX_STEPS, "the traced call never returned");
	t->ip[step] = ip;
	t->in_program[step] = pcpu_race_in_program(ip);
	t->steps = step + 1;
}

/*
 * The anchor of @stop: the last instruction up to it in this program's
 * code, as its number in the trail and as which of the visits to its
 * address it is (@nth); 0 (the call's first instruction) if none.
 */
static inline long pcpu_race_anchor(const struct pcpu_race_trail *t, long stop, long *nth)
{
	long anchor = stop;

	while (anchor > 0 && !t->in_program[anchor])
		anchor--;
	*nth = 0;
	for (long i = 0; i <= anchor; i++)
		*nth += t->ip[i] == t->ip[anchor];
	return anchor;
}

/*
 * The child @pid stands at the traced call's first instruction: runs it on
 * to @stop's anchor on @t (see pcpu_race_run_to() for @cs_field and
 * @armed). Returns the anchor's number, where stepping goes on; 0 if there
 * is none, or no @stop (< 0).
 */
static inline long pcpu_race_skip_to_anchor(pid_t pid, const struct pcpu_race_trail *t, long stop,
					    uintptr_t cs_field, uintptr_t *armed)
{
	long nth, anchor = stop > 0 ? pcpu_race_anchor(t, stop, &nth) : 0;

	if (anchor > 0)
		pcpu_race_run_to(pid, t->ip[anchor], nth, cs_field, armed);
	return anchor;
}

/*
 * Instruction @step of the traced call stands at @ip: a run without a stop
 * (@stop < 0) notes it on @t; a run with one checks it against @t. False
 * if it is elsewhere (a real preemption restarted a sequence on the free
 * run to the anchor): the child is killed, and the run must be made again.
 */
static inline bool pcpu_race_on_trail(pid_t pid, struct pcpu_race_trail *t, long stop, long step,
				      uint64_t ip)
{
	int status;

	if (stop < 0) {
		pcpu_race_trail_note(t, step, ip);
		return true;
	}
	if (ip == t->ip[step])
		return true;
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return false;
}

static inline void pcpu_race_trail_free(struct pcpu_race_trail *t)
{
	free(t->ip);
	free(t->in_program);
}

/*
 * The child stands in the restartable sequence @armed, which the kernel
 * must abort on resume (it was preempted there): re-arms the sequence as it
 * left it (@cs_field: its rseq_cs pointer, which the steps clear) and steps
 * once. Did the kernel abort it (the step lands outside the section, and
 * not at its end, where a commit lands)?
 */
static inline bool pcpu_race_abort_section(pid_t pid, uintptr_t cs_field, uintptr_t armed)
{
	int status;
	uint64_t ip;

	cr_assert_eq(ptrace(PTRACE_POKEDATA, pid, (void *)cs_field, (void *)armed), 0);
	pcpu_race_step(pid, &status);
	ip = pcpu_race_ip(pid);
	return !pcpu_race_in_section(pid, armed, ip) &&
	       ip != (uint64_t)pcpu_race_peek(pid, armed + 8) +
			     (uint64_t)pcpu_race_peek(pid, armed + 16);
}

#endif /* PCPU_RACE_HAVE_STEPS */

#endif /* PCPU_TEST_PTRACE_STEPS_H */
