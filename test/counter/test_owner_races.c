/* SPDX-License-Identifier: MIT */
/*
 * Deterministic races of the atomic path's owned slots (lib/base/slot_owner.c),
 * at every instruction of an add: the add lands first, in one step, and is
 * checked against the threshold after, so for a moment its slot may hold
 * more than the threshold. Two things may stop a thread in that moment:
 *
 *   a signal handler of the same thread, which adds too: nothing may be
 *   lost, and once both have returned the slot is within the threshold;
 *
 *   a fork by another thread: the child has no copy of the adding thread,
 *   so nothing will ever make its check; the child must still be within
 *   the bound (counter_fork_child() folds such a slot).
 *
 * Setup: the atomic path forced, a fixed batch of T + 1 (threshold T), and
 * a pending delta in the traced thread's slot: 0, and the traced call adds
 * 1 (its check passes); or T - 1, and it adds 2 (its check fails, and its
 * slow path folds the slot, the 2 with it). At the stop the parent delivers
 * a signal whose handler adds T, or an untraced thread forks and the
 * grandchild checks the bound. An add that checked first and stored after
 * loses the handler's T at the stops between its load and its store.
 *
 * The driver is test/lib/race_sweep.h's. Skipped under valgrind, where
 * ptrace is not allowed, off x86_64 (the registers), and where pairs are
 * swapped under a lock (adds go by CPU number there, no slot is owned).
 */
#include "helpers.h"
#include "race_sweep.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <percpu/counter.h>

#include "base/slot_owner.h" /* PCPU_SLOT_OWNERS */

TestSuite(owner_races, .timeout = 240);

#define T INT64_C(32) /* the threshold: batch T + 1 */
#define HANDLER T     /* the handler's add */

enum stop_action {
	AT_STOP_SIGNAL, /* a handler that adds HANDLER runs at the stop */
	AT_STOP_FORK,   /* another thread forks at the stop */
};

/* A sweep: the pending delta before the traced add, its amount, the stop's action. */
struct owner_case {
	int64_t before, traced;
	enum stop_action action;
};

static const struct owner_case within = { 0, 1, AT_STOP_SIGNAL };
static const struct owner_case past = { T - 1, 2, AT_STOP_SIGNAL };
static const struct owner_case fork_past = { T - 1, 2, AT_STOP_FORK };

/* What the child reports through a shared page. */
struct owner_page {
	struct pcpu_race_page race;
	int handler_ran;
	int forked;      /* the racer forked */
	int fork_status; /* the grandchild's wait status */
	/* the child's oracles at quiescence */
	int64_t sum, read;
	uint64_t bound, threshold_max, max_pending;
};

static struct owner_page *page;
static struct owner_case sweep_case;
static struct pcpu_counter c;

static struct pcpu_slot *slot_of(unsigned int cpu)
{
	return (struct pcpu_slot *)(void *)((char *)c.slots + (size_t)cpu * PCPU_STRIDE);
}

static uint64_t max_pending(void)
{
	uint64_t worst = 0;

	for (unsigned int cpu = 0; cpu < pcpu_cpu_possible(); cpu++) {
		uint64_t p = pcpu_test_slot_distance(slot_of(cpu)->value, slot_of(cpu)->mark);

		if (p > worst)
			worst = p;
	}
	return worst;
}

static void handler_adds(int sig)
{
	(void)sig;
	pcpu_counter_add(&c, HANDLER);
	page->handler_ran = 1;
}

/*
 * In the grandchild, forked while the traced add was stopped: 0 if every
 * slot is within the bound's threshold and read within the bound of sum; 1
 * or 2 which failed; 3 if sum is neither before nor after the traced add.
 */
static int child_within_the_bound(void)
{
	int64_t sum = pcpu_counter_sum(&c);

	if (max_pending() > c.threshold_max)
		return 1;
	if (pcpu_test_distance(pcpu_counter_read(&c), sum) > pcpu_counter_error_bound(&c))
		return 2;
	return sum == sweep_case.before || sum == sweep_case.before + sweep_case.traced ? 0 : 3;
}

static void *racer(void *arg)
{
	(void)arg;
	pcpu_race_racer_ready(&page->race);
	if (sweep_case.action == AT_STOP_FORK) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(child_within_the_bound());
		if (pid > 0 && waitpid(pid, &page->fork_status, 0) == pid)
			page->forked = 1;
	}
	pcpu_race_racer_done(&page->race);
	return NULL;
}

__attribute__((noinline, noipa, unused)) static void traced_call(void)
{
	pcpu_counter_add(&c, sweep_case.traced);
}

__attribute__((noinline, noipa, unused)) static void traced_done(void)
{
	__asm__ __volatile__("" ::: "memory");
}

static struct pcpu_race race;

__attribute__((unused)) static void child_main(void)
{
	struct pcpu_counter_options o = { .batch = T + 1 };
	pthread_t t;

	if (pcpu_counter_init_opts(&c, 0, &o) != 0)
		_exit(12);
	page->race.mode = c.mode;
	if (signal(SIGUSR1, handler_adds) == SIG_ERR)
		_exit(13);
	pcpu_counter_add(&c, 0); /* claims a slot */
	pcpu_counter_add(&c, sweep_case.before);
	if (pcpu_counter_read(&c) != 0)
		_exit(14); /* no slot was owned */
	pcpu_race_start_racer(&page->race, &t, racer);
	pcpu_race_traced(&race, t);

	/* quiescence: the racer is joined, the handler returned */
	page->race.exact =
		sweep_case.before + sweep_case.traced + (page->handler_ran ? HANDLER : 0);
	page->sum = pcpu_counter_sum(&c);
	page->read = pcpu_counter_read(&c);
	page->bound = pcpu_counter_error_bound(&c);
	page->threshold_max = c.threshold_max;
	page->max_pending = max_pending();
	page->race.child_ok = 1;
	_exit(0);
}

#if PCPU_RACE_HAVE_STEPS
static bool at_stop(struct pcpu_race_run *run)
{
	int status;

	if (sweep_case.action == AT_STOP_SIGNAL) {
		/* delivered before the stop's instruction: the handler's first one is next */
		cr_assert_eq(ptrace(PTRACE_SINGLESTEP, run->pid, NULL, (void *)(long)SIGUSR1), 0);
		cr_assert_eq(waitpid(run->pid, &status, 0), run->pid);
		cr_assert(WIFSTOPPED(status), "the child left (status %#x)", status);
	}
	pcpu_race_let_act(&page->race, run, NULL);
	return false;
}
#endif

static bool oracles_hold(char *why, size_t size)
{
	const struct owner_page *p = page;

	why[0] = '\0';
	if (p->sum != p->race.exact)
		snprintf(why, size, "sum %" PRId64 " != exact %" PRId64 " (handler %s)", p->sum,
			 p->race.exact, p->handler_ran ? "ran" : "did not run");
	else if (p->max_pending > (uint64_t)T)
		snprintf(why, size, "a slot holds %" PRIu64 " pending > threshold %" PRId64,
			 p->max_pending, T);
	else if (pcpu_test_distance(p->read, p->sum) > p->bound)
		snprintf(why, size, "|read %" PRId64 " - sum %" PRId64 "| > bound %" PRIu64, p->read,
			 p->sum, p->bound);
	else if (sweep_case.action == AT_STOP_FORK && p->forked &&
		 !(WIFEXITED(p->fork_status) && WEXITSTATUS(p->fork_status) == 0))
		snprintf(why, size, "the forked child broke the bound (status %#x: 1 a slot past "
				    "threshold_max, 2 read off sum, 3 sum)",
			 p->fork_status);
	return why[0] == '\0';
}

/* The run without a stop was on the atomic path (each stop did its part: after_stop()). */
static void check_whole(void)
{
	if (page->race.mode != PCPU_CPU_ATOMIC)
		cr_skip_test("the atomic path could not be forced");
}

static void after_stop(void)
{
	if (sweep_case.action == AT_STOP_SIGNAL)
		cr_assert(page->handler_ran, "the handler did not run at the stop");
	else
		cr_assert(page->forked, "the racer did not fork at the stop");
}

static void sweep(const char *name, struct owner_case what)
{
#if PCPU_RACE_HAVE_STEPS
	struct pcpu_race_totals t;

	if (!PCPU_SLOT_OWNERS)
		cr_skip_test("no lock-free 64-bit atomics here: adds go by CPU number");
	cr_assert_eq(setenv("PCPU_FORCE_FALLBACK", "1", 1), 0);
	sweep_case = what;
	race = (struct pcpu_race){ .name = name, .page = (void **)&page,
				   .page_size = sizeof(*page), .child = child_main,
				   .call = traced_call, .done = traced_done, .at_stop = at_stop,
				   .oracles = oracles_hold, .whole = check_whole,
				   .after_stop = after_stop };
	t = pcpu_race_sweep(&race);
	cr_assert_gt(t.stops, 10, "%s: only %ld instructions in the add", name, t.stops);
	pcpu_race_end(&race);
#else
	(void)name;
	(void)what;
	cr_skip_test("reads the instruction pointer of x86_64 only");
#endif
}

/* A handler that adds, at every instruction of an add within the threshold ... */
PCPU_TEST(owner_races, a_handler_adding_anywhere_in_an_owned_add_loses_nothing)
{
	sweep("add(1) / a handler's add(T)", within);
}

/* ... and of one that passes it, and folds. */
PCPU_TEST(owner_races, a_handler_adding_anywhere_in_an_owned_add_past_the_threshold_loses_nothing)
{
	sweep("add(2) past T / a handler's add(T)", past);
}

/* A fork at every instruction of an add that passes the threshold: the child is within the bound. */
PCPU_TEST(owner_races, a_fork_anywhere_in_an_owned_add_leaves_the_child_within_the_bound)
{
	sweep("add(2) past T / a fork", fork_past);
}
