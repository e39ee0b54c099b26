/* SPDX-License-Identifier: MIT */
/*
 * The driver of a deterministic race test (test/counter/test_fold_races.c,
 * test/charge/test_charge_races.c). A sweep forks one child per stop. The
 * child makes its setup, starts an untraced racer thread, stops for the
 * parent (PTRACE_TRACEME, SIGSTOP) and makes one traced call; the parent
 * steps it to the call's instruction number k (ptrace_steps.h), lets the
 * racer act there, does to the child's restartable sequence what the kernel
 * would, and lets the child finish and check its oracles at quiescence. A
 * sweep runs the child once without a stop, to learn the call's
 * instructions, then once per instruction, and runs every stop even after
 * one fails, so that the report says which stops break the promise.
 *
 * The restartable sequence: every ptrace stop preempts the tracee, and the
 * kernel aborts a critical section that was preempted, so single-stepping
 * through one restarts it for ever. Before resuming from a stop that is not
 * the chosen one, the parent clears the rseq_cs pointer in the tracee's rseq
 * area (the kernel then sees no critical section: the step is a plain step).
 * At the chosen stop the test's at_stop() says whether the traced thread
 * counts as preempted there: if so, the parent puts the pointer back as the
 * sequence had armed it, and checks that the kernel aborted it on resume
 * (one step lands outside the section); if not, it runs on.
 *
 * A test supplies a page shared with its children (struct pcpu_race_page at
 * its head), the child's body, the traced call and its end, what is done at
 * the stop, and its oracles. Include after pcpu_test.h.
 */
#ifndef PCPU_TEST_RACE_SWEEP_H
#define PCPU_TEST_RACE_SWEEP_H

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/cpu.h>

#include "ptrace_steps.h"

/* The child's exit statuses that the driver gives */
#define PCPU_RACE_EXIT_NO_THREAD 13 /* the racer could not start */
#define PCPU_RACE_EXIT_NO_PTRACE 15 /* ptrace is not allowed: the sweep skips */

/* The head of the page that a test shares with its children. */
struct pcpu_race_page {
	/* child -> parent, before the traced call */
	uintptr_t rseq_area; /* the traced thread's struct rseq; 0 if none */
	int ready;
	uint32_t mode; /* the child's update path */
	/* parent -> racer: act (go); racer -> child and parent: 1 ready, 2 done */
	volatile int go, done;
	/* child -> parent, at quiescence after the traced call */
	int64_t exact; /* the shadow tally its oracles held the unit to */
	int child_ok;  /* it got there, and exits 0 */
};

/* What one run saw. */
struct pcpu_race_run {
	long stop;     /* the racer acts before the traced call's instruction @stop; < 0: never */
	long steps;    /* instructions of the traced call (when the stop was not reached) */
	bool diverged; /* the free run to the anchor did not run as the stepped one */
	bool stopped;  /* the stop was reached and the racer acted there */
	bool in_cs;    /* the stop was inside an armed restartable sequence */
	long aborts;   /* aborts the kernel had to make: at a fence, or on resume */
	long aborted;  /* ... and made */
	long reruns;   /* fences after which the restarted sequence reached the stop again */
	/* the stepping, for at_stop() */
	pid_t pid;
	uintptr_t cs_field; /* the child's rseq_cs pointer; 0 if it has no rseq area */
	uintptr_t armed;    /* the last critical section the child armed; 0 if none */
	uint64_t ip;        /* where the stop stands */
};

/* A race test: what it supplies to the driver. */
struct pcpu_race {
	const char *name;   /* of the sweep, for its messages */
	void **page;        /* the test's page pointer: the sweep maps the page */
	size_t page_size;   /* its size, struct pcpu_race_page at its head */
	void (*child)(void); /* the child's body (pcpu_race_traced() in it); never returns */
	void (*call)(void); /* the traced call (noinline, noipa) */
	void (*done)(void); /* ... and what the child calls after it */
	/*
	 * At the stop (the child held there): lets the racer act and returns
	 * once it is done, and whether the traced thread counts as preempted
	 * at the stop (the kernel aborts its sequence on resume).
	 */
	bool (*at_stop)(struct pcpu_race_run *run);
	/* the child's oracles: writes every broken one to @why, returns whether all held */
	bool (*oracles)(char *why, size_t size);
	void (*whole)(void);      /* checks of the run without a stop; may be NULL */
	void (*after_stop)(void); /* tallies of each run with a stop; may be NULL */
	struct pcpu_race_trail trail; /* of the run without a stop */
};

/* What a sweep saw, over its stops. */
struct pcpu_race_totals {
	long stops, in_cs, aborts, aborted, reruns, diverged, failed;
};

static inline struct pcpu_race_page *pcpu_race_head(const struct pcpu_race *race)
{
	return *race->page;
}

/* The update path the child used is the one the environment asked for. */
static inline void pcpu_race_assert_mode(uint32_t mode)
{
	const char *force = getenv("PCPU_FORCE_FALLBACK");

	if (force && *force && strcmp(force, "0") != 0)
		cr_assert_eq(mode, PCPU_CPU_ATOMIC, "PCPU_FORCE_FALLBACK=1 but mode %u", mode);
}

/* In the child: starts @fn as the racer in @t and waits until it is ready. */
static inline void pcpu_race_start_racer(struct pcpu_race_page *head, pthread_t *t,
					 void *(*fn)(void *))
{
	if (pthread_create(t, NULL, fn, NULL) != 0)
		_exit(PCPU_RACE_EXIT_NO_THREAD);
	while (__atomic_load_n(&head->done, __ATOMIC_SEQ_CST) != 1)
		usleep(20);
	head->done = 0;
}

/* In the racer, set up: says so, and waits until the parent lets it act. */
static inline void pcpu_race_racer_ready(struct pcpu_race_page *head)
{
	__atomic_store_n(&head->done, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&head->go, __ATOMIC_SEQ_CST))
		usleep(20);
}

static inline void pcpu_race_racer_done(struct pcpu_race_page *head)
{
	__atomic_store_n(&head->done, 2, __ATOMIC_SEQ_CST);
}

/*
 * In the child, its setup made and racer @t ready, on the traced thread:
 * stops for the parent, makes the traced call, lets the racer go if the
 * stop was never reached, and joins it.
 */
static inline void pcpu_race_traced(const struct pcpu_race *race, pthread_t t)
{
	struct pcpu_race_page *head = pcpu_race_head(race);

#if PCPU_ARCH_HAVE_RSEQ_ADD
	if (pcpu_cpu_setup() == PCPU_CPU_RSEQ)
		head->rseq_area =
			(uintptr_t)__builtin_thread_pointer() + (uintptr_t)__pcpu_rseq_offset;
#endif
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
		_exit(PCPU_RACE_EXIT_NO_PTRACE);
	head->ready = 1;
	raise(SIGSTOP);

	race->call();
	race->done();

	__atomic_store_n(&head->go, 1, __ATOMIC_SEQ_CST); /* if the stop was never reached */
	pthread_join(t, NULL);
}

/*
 * At @run's stop: lets the racer act, and waits until it is done (5 s at
 * most). While it waits it calls @poll, if any, which returns whether it
 * had something to do (then the wait does not count).
 */
static inline void pcpu_race_let_act(struct pcpu_race_page *head, struct pcpu_race_run *run,
				     bool (*poll)(struct pcpu_race_run *run))
{
	__atomic_store_n(&head->go, 1, __ATOMIC_SEQ_CST);
	for (int ms = 0; __atomic_load_n(&head->done, __ATOMIC_SEQ_CST) != 2;) {
		if (poll && poll(run))
			continue;
		cr_assert_lt(ms++, 5000, "the racer is stuck at stop %ld", run->stop);
		usleep(1000);
	}
}

#if PCPU_RACE_HAVE_STEPS

/*
 * One child: the racer acts before the traced call's instruction number
 * @stop (counted from its first), or never if @stop < 0, when the run
 * leaves its trail. A run with a stop goes freely to the stop's anchor on
 * that trail (pcpu_race_run_to()), and is stepped from there.
 */
static inline struct pcpu_race_run pcpu_race_run(struct pcpu_race *race, long stop)
{
	struct pcpu_race_page *head = pcpu_race_head(race);
	struct pcpu_race_run r = { .stop = stop };
	long before = 0;
	bool inside = false;
	int status;

	memset(head, 0, race->page_size);
	fflush(NULL);
	r.pid = fork();
	cr_assert_geq(r.pid, 0);
	if (r.pid == 0)
		race->child();
	cr_assert_eq(waitpid(r.pid, &status, 0), r.pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == PCPU_RACE_EXIT_NO_PTRACE)
		cr_skip_test("ptrace is not allowed here");
	cr_assert(WIFSTOPPED(status) && head->ready, "child did not stop (status %#x)", status);
	r.cs_field = head->rseq_area ? head->rseq_area + 8 : 0;

	for (;;) {
		uint64_t ip = pcpu_race_ip(r.pid);
		long cs = 0;

		/* the sequence's own arming store is the only writer besides us */
		if (r.cs_field) {
			cs = pcpu_race_peek(r.pid, r.cs_field);
			cr_assert_eq(errno, 0);
			if (cs)
				r.armed = (uintptr_t)cs;
		}
		if (!inside && ip == (uint64_t)(uintptr_t)race->call) {
			inside = true;
			r.steps = pcpu_race_skip_to_anchor(r.pid, &race->trail, stop, r.cs_field,
							   &r.armed);
			if (r.steps > 0)
				continue;
		}
		if (inside && !pcpu_race_on_trail(r.pid, &race->trail, stop, r.steps, ip)) {
			r.diverged = true;
			return r;
		}
		if (inside && ip == (uint64_t)(uintptr_t)race->done)
			break;
		if (inside && r.steps == stop) {
			bool preempted;

			r.stopped = true;
			r.ip = ip;
			r.in_cs = r.armed && pcpu_race_in_section(r.pid, r.armed, ip);
			preempted = race->at_stop(&r);
			/* what the kernel does on resume to the sequence now held there */
			if (!r.armed || !pcpu_race_in_section(r.pid, r.armed, pcpu_race_ip(r.pid)))
				break;
			if (preempted) {
				r.aborts++;
				r.aborted += pcpu_race_abort_section(r.pid, r.cs_field, r.armed);
			} else {
				cr_assert_eq(ptrace(PTRACE_POKEDATA, r.pid, (void *)r.cs_field, NULL),
					     0);
			}
			break;
		}
		/* a plain step: no abort of a section the step is inside */
		if (cs)
			cr_assert_eq(ptrace(PTRACE_POKEDATA, r.pid, (void *)r.cs_field, NULL), 0);
		pcpu_race_step(r.pid, &status);
		if (inside)
			r.steps++;
		cr_assert_lt(++before, 1000000, "the traced call was never reached");
	}
	cr_assert_eq(ptrace(PTRACE_CONT, r.pid, NULL, NULL), 0);
	cr_assert_eq(waitpid(r.pid, &status, 0), r.pid);
	/*
	 * A signal for the child stops it under ptrace before delivery (a
	 * SIGCHLD from a grandchild it forked, when that exits now): deliver
	 * it and go on to the exit.
	 */
	while (WIFSTOPPED(status)) {
		cr_assert_eq(ptrace(PTRACE_CONT, r.pid, NULL,
				    (void *)(uintptr_t)WSTOPSIG(status)), 0);
		cr_assert_eq(waitpid(r.pid, &status, 0), r.pid);
	}
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0 && head->child_ok,
		  "child failed (status %#x)", status);
	return r;
}

/*
 * Sweeps @race: a run without a stop, then one per instruction of the
 * traced call (a run that diverged is made again, up to 10 times), and
 * asserts that every run's oracles held. Returns what the runs saw, with
 * the page of the last still mapped; pcpu_race_end() unmaps it.
 */
static inline struct pcpu_race_totals pcpu_race_sweep(struct pcpu_race *race)
{
	struct pcpu_race_totals t = { 0 };
	struct pcpu_race_run whole;
	long first = -2, last = -2;
	char why[1024], first_why[1024] = "";
	int64_t first_exact = 0;

	if (pcpu_test_small())
		cr_skip_test("valgrind: single-stepping its translated code means nothing");
	pcpu_test_skip_under_qemu();
	*race->page = mmap(NULL, race->page_size, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(*race->page, MAP_FAILED);
	pcpu_race_trail_init(&race->trail);
	whole = pcpu_race_run(race, -1);
	if (race->whole)
		race->whole();
	cr_assert(race->oracles(why, sizeof(why)), "%s, no stop: %s", race->name, why);
	cr_assert_gt(whole.steps, 0);
	t.stops = whole.steps;
	for (long k = 0; k < whole.steps; k++) {
		struct pcpu_race_run r = pcpu_race_run(race, k);

		for (int again = 0; r.diverged; again++) {
			cr_assert_lt(again, 10, "%s: stop %ld: every run diverged", race->name, k);
			t.diverged++;
			r = pcpu_race_run(race, k);
		}
		cr_assert(r.stopped, "%s: stop %ld of %ld never reached", race->name, k,
			  whole.steps);
		if (!race->oracles(why, sizeof(why))) {
			if (t.failed++ == 0) {
				first = k;
				first_exact = pcpu_race_head(race)->exact;
				strcpy(first_why, why);
			}
			last = k;
		}
		if (race->after_stop)
			race->after_stop();
		t.in_cs += r.in_cs;
		t.aborts += r.aborts;
		t.aborted += r.aborted;
		t.reruns += r.reruns;
	}
	cr_log_info("%s: %ld stops, %ld inside a restartable sequence, %ld aborts there, %ld "
		    "restarts back at their stop; %ld stops failed; %ld runs diverged and were "
		    "run again",
		    race->name, t.stops, t.in_cs, t.aborted, t.reruns, t.failed, t.diverged);
	cr_assert_eq(t.failed, 0,
		     "%s: %ld of %ld stops broke a promise (stops %ld to %ld); at stop %ld, "
		     "exact %" PRId64 ": %s",
		     race->name, t.failed, t.stops, first, last, first, first_exact, first_why);
	return t;
}

static inline void pcpu_race_end(struct pcpu_race *race)
{
	pcpu_race_trail_free(&race->trail);
	munmap(*race->page, race->page_size);
}

#endif /* PCPU_RACE_HAVE_STEPS */

#endif /* PCPU_TEST_RACE_SWEEP_H */
