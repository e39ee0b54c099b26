/* SPDX-License-Identifier: MIT */
/*
 * Deterministic races between adds and folds, at every instruction.
 *
 * The promise under test (lib/base/policy.h): whatever folds run beside the adds,
 * at quiescence every CPU's pending delta is within the threshold, so
 * |read - exact| <= error_bound() and compare(), sync_if_delta_above() and
 * limited_add() answer as if read were exact within the bound. In 0.1 a
 * fold read a slot's value and then swapped only its folded mark: adds that
 * landed between the read and the swap were left pending unchecked.
 *
 * Setup, the case that broke 0.1: a fixed batch of 33 (threshold T = 32,
 * the default floor on two CPUs), the child pinned to CPU q (the last CPU
 * it may use, so the one folded last), and pending = -T on q. Then a traced
 * thread makes one call and is stopped before its k-th instruction, for
 * every k from its first instruction to its return, one child per k. At the
 * stop a second, untraced thread acts, then the traced one finishes:
 *
 *   traced add(+T) or add(-1) (the slow path), the other thread folds:
 *       sync_if_delta_above(c, 0) or pcpu_registry_fold_all();
 *   traced add(-1), whose own slow-path fold is a folder too, or a traced
 *   remote fold (sync or registry), the other thread adds:
 *       +T and +T on q (pending goes -T, 0, T: each add passes its check
 *       against the pending it sees), then +T on another CPU r if there is
 *       one (after a fold has passed r, so it stays pending: legal, <= T).
 *
 * In 0.1 the adds case leaves 2T pending on q after the folder swaps its
 * stale mark, plus T on r: |read - exact| = 3T = 96 > error_bound() = 64,
 * and every oracle below fails for the ~33 stops between the folder's read
 * of the value and its swap. A whole fold beside one add cannot break even
 * 0.1 (the fold moves what is pending, the add then takes at most T): those
 * cases guard the add itself, its restart and its swap of the pair.
 *
 * The restartable sequence: every ptrace stop preempts the tracee, and the
 * kernel aborts a critical section that was preempted, so single-stepping
 * through one restarts it for ever. Before resuming from a stop that is not
 * the chosen one, the parent clears the rseq_cs pointer in the tracee's rseq
 * area (the kernel then sees no critical section: the step is a plain
 * step). At the chosen stop it puts the pointer back, as the sequence had
 * armed it, so the kernel aborts the sequence on resume exactly as on a real
 * preemption there; the parent checks that it did (one step lands outside
 * the section), and the add restarts against the pair the other thread left.
 *
 * The driver (a child per stop, the stepping, the restartable sequence)
 * is test/lib/race_sweep.h's. Skipped under valgrind (single-stepping its
 * translated code means nothing), where ptrace is not allowed, and off
 * x86_64 (the registers).
 */
#include "helpers.h"
#include "race_sweep.h"

#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/registry.h>

/* 0.1 has no c.mode: set to 0 to build this file against it. */
#ifndef FOLD_RACES_HAVE_MODE
#define FOLD_RACES_HAVE_MODE 1
#endif

TestSuite(fold_races, .timeout = 240); /* a child per instruction: slow under ASan */

#define T INT64_C(32) /* the threshold: batch T + 1 */

enum traced_call {
	TRACED_ADD_PLUS_T,   /* add(+T): the fast path (-T + T = 0) */
	TRACED_ADD_MINUS_ONE, /* add(-1): the slow path (-T - 1), which folds q */
	TRACED_SYNC,         /* sync_if_delta_above(c, 0) */
	TRACED_REGISTRY,     /* pcpu_registry_fold_all() */
	TRACED_LIMITED,      /* limited_add(c, 2T, +T): room = bound, the far path */
	TRACED_LIMITED_FULL, /* the same from +T pending on q and r: exact is 2T, must fail */
	TRACED_RAISE,        /* add(BIG) to an elastic counter: its threshold rises */
};

enum racer_action {
	RACER_SYNC,     /* sync_if_delta_above(c, 0) */
	RACER_REGISTRY, /* pcpu_registry_fold_all() */
	RACER_ADDS,     /* +T, +T on q, then +T on r */
	RACER_LIMITED,  /* -T on q, then limited_add(c, -2T, -T) on r: must fail */
	RACER_REMOTE,   /* sync_if_delta_above(c, 0) from r, without preempting q */
	RACER_RAISED,   /* on r: add(RAISED) under the new threshold, limited_add(BIG + 2 * CPUs * floor, 1) */
};

/*
 * TRACED_RAISE: from 0 on an elastic counter (floor 32), add(BIG) makes the
 * threshold BIG / (64 * CPUs), far above the bound of the floor; RAISED
 * fits under the new threshold. A limited add that trusted count and the
 * bound between the store of the threshold and the raise of the bound
 * would see room for the old bound while r already holds RAISED.
 */
#define BIG (INT64_C(1) << 20)
#define RAISED INT64_C(4000)

/* What the child reports through a shared page. */
struct fold_page {
	struct pcpu_race_page race; /* the driver's: go, done, exact, ... */
	/* racer -> parent */
	int racer_error;
	int64_t racer_added;
	int racer_limited_ok, traced_limited_ok;
	int64_t racer_sum_before; /* RACER_RAISED: the exact value its limited add met */
	int64_t racer_read_before; /* ... and read() before it added: BIG once add(BIG) landed */
	uint64_t racer_gap, racer_bound; /* ... |read - sum| and error_bound() after it added
					    (RACER_ADDS too) */
	int64_t racer_limit;
	uint64_t threshold_max;      /* the counter's, at quiescence: what a CPU may hold */
	/* child's oracles at quiescence, after the traced call */
	int64_t sum, read;
	uint64_t bound;
	uint64_t max_pending; /* largest |value - folded| over the CPUs */
	int max_pending_cpu;
	long compares, compare_wrong;
	int64_t compare_rhs;
	int compare_got;
	int64_t sync_at_bound, sync_at_t, exact_at_sync_t;
	int limited_over, limited_exact;
	int64_t sum_final;
};

static struct fold_page *page;
static struct pcpu_counter c;
static enum traced_call traced;
static enum racer_action action;
static int cpu_q = -1, cpu_r = -1;

static struct pcpu_slot *slot_of(unsigned int cpu)
{
	return (struct pcpu_slot *)(void *)((char *)c.slots + (size_t)cpu * PCPU_STRIDE);
}

static void add_t(void *arg)
{
	(void)arg;
	pcpu_test_first_add(&c);
	pcpu_counter_add(&c, T);
}

static void *racer(void *arg)
{
	(void)arg;
	/* on another CPU, where it runs beside the traced thread, not instead */
	if ((action == RACER_REMOTE || action == RACER_RAISED) &&
	    (cpu_r < 0 || !pcpu_test_pin(cpu_r)))
		page->racer_error = 1;
	pcpu_registry_fold_all(); /* registers this thread with urcu now, not at the stop */
	pcpu_race_racer_ready(&page->race);
	switch (action) {
	case RACER_SYNC:
	case RACER_REMOTE:
		(void)pcpu_counter_sync_if_delta_above(&c, 0);
		break;
	case RACER_REGISTRY:
		pcpu_registry_fold_all();
		break;
	case RACER_ADDS:
		pcpu_counter_add(&c, T);
		pcpu_counter_add(&c, T);
		page->racer_added = 2 * T;
		if (cpu_r >= 0) {
			if (!pcpu_test_pin(cpu_r)) {
				page->racer_error = 1;
				break;
			}
			pcpu_counter_add(&c, T);
			page->racer_added += T;
		}
		/* a traced walk stopped mid-fold: read() lags by one slot's worth at most */
		page->racer_gap = pcpu_test_distance(pcpu_counter_read(&c), pcpu_counter_sum(&c));
		page->racer_bound = pcpu_counter_error_bound(&c);
		break;
	case RACER_LIMITED:
		/*
		 * Mid-fold of q, count is T above exact (the fold took -T from
		 * q and has not added it yet), and q takes -T again: a limited
		 * add that trusted count + bound would see room 2T and pass
		 * the limit, which exact already sits on.
		 */
		pcpu_counter_add(&c, -T);
		page->racer_added = -T;
		if (cpu_r >= 0 && !pcpu_test_pin(cpu_r)) {
			page->racer_error = 1;
			break;
		}
		page->racer_limited_ok = pcpu_counter_limited_add(&c, -2 * T, -T);
		if (page->racer_limited_ok)
			page->racer_added -= T;
		break;
	case RACER_RAISED:
		page->racer_read_before = pcpu_counter_read(&c);
		pcpu_counter_add(&c, RAISED);
		page->racer_added = RAISED;
		page->racer_sum_before = pcpu_counter_sum(&c);
		page->racer_gap = pcpu_test_distance(pcpu_counter_read(&c), page->racer_sum_before);
		page->racer_bound = pcpu_counter_error_bound(&c);
		page->racer_limit = BIG + 2 * (int64_t)pcpu_cpu_possible() * pcpu_counter_default_floor();
		page->racer_limited_ok = pcpu_counter_limited_add(&c, page->racer_limit, 1);
		if (page->racer_limited_ok)
			page->racer_added += 1;
		break;
	}
	pcpu_race_racer_done(&page->race);
	return NULL;
}

/* The traced call and its end, where the parent stops counting (unused off x86_64). */
__attribute__((noinline, noipa, unused)) static void traced_call(void)
{
	switch (traced) {
	case TRACED_ADD_PLUS_T:
		pcpu_counter_add(&c, T);
		break;
	case TRACED_ADD_MINUS_ONE:
		pcpu_counter_add(&c, -1);
		break;
	case TRACED_SYNC:
		(void)pcpu_counter_sync_if_delta_above(&c, 0);
		break;
	case TRACED_REGISTRY:
		pcpu_registry_fold_all();
		break;
	case TRACED_LIMITED:
	case TRACED_LIMITED_FULL:
		page->traced_limited_ok = pcpu_counter_limited_add(&c, 2 * T, T);
		break;
	case TRACED_RAISE:
		pcpu_counter_add(&c, BIG);
		break;
	}
}

__attribute__((noinline, noipa, unused)) static void traced_done(void)
{
	__asm__ __volatile__("" ::: "memory");
}

static int64_t traced_amount(void)
{
	if (traced == TRACED_LIMITED || traced == TRACED_LIMITED_FULL)
		return page->traced_limited_ok ? T : 0;
	if (traced == TRACED_RAISE)
		return BIG;
	return traced == TRACED_ADD_PLUS_T ? T : traced == TRACED_ADD_MINUS_ONE ? -1 : 0;
}

/* The oracles, at quiescence, against the shadow tally @exact. */
static void check_at_quiescence(int64_t exact)
{
	unsigned int cpus = pcpu_cpu_possible();
	int64_t span;

	page->race.exact = exact;
	page->sum = pcpu_counter_sum(&c);
	page->read = pcpu_counter_read(&c);
	page->bound = pcpu_counter_error_bound(&c);
	page->threshold_max = c.threshold_max;
	for (unsigned int cpu = 0; cpu < cpus; cpu++) {
		uint64_t p = pcpu_test_slot_distance(slot_of(cpu)->value, slot_of(cpu)->mark);

		if (p > page->max_pending) {
			page->max_pending = p;
			page->max_pending_cpu = (int)cpu;
		}
	}
	/* compare() must give the exact sign for every rhs, near or far */
	span = 3 * (int64_t)page->bound + 2;
	for (int64_t rhs = exact - span; rhs <= exact + span; rhs++) {
		int got = pcpu_counter_compare(&c, rhs);
		int want = (exact > rhs) - (exact < rhs);

		page->compares++;
		if (got != want && page->compare_wrong++ == 0) {
			page->compare_rhs = rhs;
			page->compare_got = got;
		}
	}
	/* within the bound sync returns read, without folding */
	page->sync_at_bound = pcpu_counter_sync_if_delta_above(&c, page->bound);
	/* one past the limit must fail (and add nothing), before anything folds */
	page->limited_over = pcpu_counter_limited_add(&c, exact + 1, 2);
	if (page->limited_over)
		exact += 2;
	/* within T it may have to fold */
	page->exact_at_sync_t = exact;
	page->sync_at_t = pcpu_counter_sync_if_delta_above(&c, (uint64_t)T);
	/* exactly up to the limit must succeed */
	page->limited_exact = pcpu_counter_limited_add(&c, page->race.exact + 1, 1);
	page->sum_final = pcpu_counter_sum(&c);
}

static struct pcpu_race race;

/* unused off x86_64, where the sweeps skip */
__attribute__((unused)) static void child_main(void)
{
	/* TRACED_RAISE: the default, elastic threshold; the others: fixed */
	struct pcpu_counter_options o = { .batch = traced == TRACED_RAISE ? 0 : T + 1 };
	int cpus[64], n = pcpu_test_allowed_cpus(cpus, 64);
	pthread_t t;

	if (n < 1)
		_exit(10);
	cpu_q = cpus[n - 1];
	cpu_r = n > 1 ? cpus[0] : -1;
	if (!pcpu_test_pin(cpu_q))
		_exit(11);
	if (pcpu_counter_init_opts(&c, 0, &o) != 0)
		_exit(12);
#if FOLD_RACES_HAVE_MODE
	page->race.mode = c.mode;
#endif
	pcpu_registry_fold_all(); /* registers this thread with urcu */
	/*
	 * A limited add on each path once, so that the traced one finds the
	 * fence set up (net 0: +1 on the far path, -1 on the precise path,
	 * whose overflowing room the far path leaves to it), then fold all.
	 */
	if (!pcpu_counter_limited_add(&c, INT64_MAX, 1) ||
	    !pcpu_counter_limited_add(&c, INT64_MIN, -1) ||
	    pcpu_counter_sync_if_delta_above(&c, 0) != 0 || (c.seq & 0xffff) != 0)
		_exit(16);
	pcpu_race_start_racer(&page->race, &t, racer);
	if (traced == TRACED_RAISE) {
		if (pcpu_counter_read(&c) != 0 || c.threshold != pcpu_counter_default_floor())
			_exit(14);
	} else if (traced == TRACED_LIMITED_FULL) {
		/* +T pending on r (another thread's) and on q: exact 2T, count 0, the limit reached */
		if (cpu_r < 0 || !pcpu_test_on_cpu(cpu_r, add_t, NULL))
			_exit(17);
		pcpu_counter_add(&c, T);
		if (pcpu_test_slot_pending(slot_of((unsigned int)cpu_q)->value, slot_of((unsigned int)cpu_q)->mark) != T ||
		    pcpu_test_slot_pending(slot_of((unsigned int)cpu_r)->value, slot_of((unsigned int)cpu_r)->mark) != T ||
		    pcpu_counter_read(&c) != 0)
			_exit(14);
	} else {
		pcpu_counter_add(&c, -T); /* pending -T on q: stays, |-T| <= T */
		if (pcpu_test_slot_pending(slot_of((unsigned int)cpu_q)->value, slot_of((unsigned int)cpu_q)->mark) != -T ||
		    pcpu_counter_read(&c) != 0)
			_exit(14);
	}
	pcpu_race_traced(&race, t);
	check_at_quiescence((traced == TRACED_LIMITED_FULL ? 2 * T : traced == TRACED_RAISE ? 0 : -T) +
			    traced_amount() + page->racer_added);
	page->race.child_ok = 1;
	_exit(0);
}

#if PCPU_RACE_HAVE_STEPS

/*
 * At the stop: the racer acts. The traced thread counts as preempted there
 * (the kernel aborts its sequence on resume), but for RACER_REMOTE's fold
 * from another CPU, which runs beside the sequence: that runs on.
 */
static bool at_stop(struct pcpu_race_run *run)
{
	pcpu_race_let_act(&page->race, run, NULL);
	return action != RACER_REMOTE;
}

/*
 * The oracles of one run: writes every broken one to @why (so that a
 * failure shows all that went wrong at that stop) and returns whether all
 * held.
 */
static bool oracles_hold(char *why, size_t size)
{
	const struct fold_page *p = page;
	int64_t exact = p->race.exact; /* the shadow tally */

	why[0] = '\0';
	if (p->racer_error)
		broke(why, size, "the racer could not pin");
	if (action == RACER_LIMITED && p->racer_limited_ok)
		broke(why, size, "the racer's limited_add(c, %" PRId64 ", %" PRId64 ") returned true",
		      -2 * T, -T);
	if (traced == TRACED_LIMITED_FULL && p->traced_limited_ok)
		broke(why, size, "limited_add(c, %" PRId64 ", %" PRId64 ") passed the limit at %" PRId64,
		      2 * T, T, 2 * T);
	if (traced == TRACED_LIMITED && !p->traced_limited_ok)
		broke(why, size, "limited_add(c, %" PRId64 ", %" PRId64 ") failed with room", 2 * T,
		      T);
	if (p->sum != exact)
		broke(why, size, "sum %" PRId64 " != exact %" PRId64, p->sum, exact);
	if (p->max_pending > (traced == TRACED_RAISE ? p->threshold_max : (uint64_t)T))
		broke(why, size, "CPU %d holds %" PRIu64 " pending > threshold %" PRIu64,
		      p->max_pending_cpu, p->max_pending,
		      traced == TRACED_RAISE ? p->threshold_max : (uint64_t)T);
	/*
	 * Past the limit only if the plain add of BIG had not reached count:
	 * a plain add between its two central updates may be ordered after a
	 * limited add (plain adds are not limited). Once count holds it, only
	 * the publication of its threshold is left, and must not be missed.
	 */
	if (action == RACER_RAISED && p->racer_limited_ok && p->racer_read_before >= BIG)
		broke(why, size, "limited_add(c, %" PRId64 ", 1) returned true at %" PRId64,
		      p->racer_limit, p->racer_sum_before);
	/*
	 * Mid-publication too (the traced thread is stopped): once count holds
	 * BIG, the racer's add either met the old threshold (and went to
	 * count) or the new one, which the bound already covered
	 * (pcpu_fold_publish() raises first).
	 */
	if (action == RACER_RAISED && p->racer_read_before >= BIG && p->racer_gap > p->racer_bound)
		broke(why, size, "mid-publication |read - sum| %" PRIu64 " > error_bound %" PRIu64,
		      p->racer_gap, p->racer_bound);
	/*
	 * A walk that folds (sync, registry) stopped anywhere: what it moved
	 * and has not credited stays within its budget (fold_all(),
	 * pcpu_fold_walk_budget(): one threshold on two CPUs), so read() lags
	 * by at most one slot's worth more than at quiescence.
	 */
	if (action == RACER_ADDS && (traced == TRACED_SYNC || traced == TRACED_REGISTRY) &&
	    p->racer_gap > p->racer_bound + (uint64_t)T)
		broke(why, size, "mid-walk |read - sum| %" PRIu64 " > error_bound %" PRIu64 " + T",
		      p->racer_gap, p->racer_bound);
	if (pcpu_test_distance(p->read, exact) > p->bound)
		broke(why, size, "|read %" PRId64 " - exact %" PRId64 "| > error_bound %" PRIu64,
		      p->read, exact, p->bound);
	if (p->compare_wrong)
		broke(why, size, "%ld of %ld compares wrong, first compare(c, %" PRId64 ") = %d",
		      p->compare_wrong, p->compares, p->compare_rhs, p->compare_got);
	if (pcpu_test_distance(p->sync_at_bound, exact) > p->bound)
		broke(why, size, "sync_if_delta_above(c, %" PRIu64 ") = %" PRId64, p->bound,
		      p->sync_at_bound);
	if (p->limited_over)
		broke(why, size, "limited_add(c, %" PRId64 ", 2) returned true", exact + 1);
	if (pcpu_test_distance(p->sync_at_t, p->exact_at_sync_t) > (uint64_t)T)
		broke(why, size, "sync_if_delta_above(c, %" PRId64 ") = %" PRId64 ", exact %" PRId64,
		      T, p->sync_at_t, p->exact_at_sync_t);
	if (!p->limited_exact)
		broke(why, size, "limited_add(c, %" PRId64 ", 1) returned false", exact + 1);
	if (p->sum_final != exact + 1 + (p->limited_over ? 2 : 0))
		broke(why, size, "sum %" PRId64 " after the limited adds", p->sum_final);
	return why[0] == '\0';
}

/* The update path the child used is the one the environment asked for. */
static void assert_mode(void)
{
#if FOLD_RACES_HAVE_MODE
	pcpu_race_assert_mode(page->race.mode);
#endif
}

/*
 * Sweeps the traced call @what against the racer's @act at every
 * instruction (test/lib/race_sweep.h), on @cpus CPUs at least.
 */
static void sweep(int cpus, const char *name, enum traced_call what, enum racer_action act)
{
	struct pcpu_race_totals t;
	int allowed[2];

	if (pcpu_test_allowed_cpus(allowed, 2) < cpus)
		cr_skip_test("needs two CPUs");
	traced = what;
	action = act;
	race = (struct pcpu_race){ .name = name, .page = (void **)&page,
				   .page_size = sizeof(*page), .child = child_main,
				   .call = traced_call, .done = traced_done, .at_stop = at_stop,
				   .oracles = oracles_hold, .whole = assert_mode };
	t = pcpu_race_sweep(&race);
	/* every stop inside a sequence must have restarted it (one preempted there) */
	if (act != RACER_REMOTE)
		cr_assert_eq(t.aborted, t.in_cs, "%s: %ld of %ld stops inside a restartable "
			     "sequence did not abort it", name, t.in_cs - t.aborted, t.in_cs);
#if FOLD_RACES_HAVE_MODE
	if (page->race.mode == PCPU_CPU_RSEQ &&
	    (what == TRACED_ADD_PLUS_T || what == TRACED_ADD_MINUS_ONE))
		cr_assert_gt(t.in_cs, 0, "%s: no stop inside the add's restartable sequence", name);
#endif
	pcpu_race_end(&race);
}

#else /* !PCPU_RACE_HAVE_STEPS */

static void sweep(int cpus, const char *name, enum traced_call what, enum racer_action act)
{
	(void)cpus;
	(void)name;
	(void)what;
	(void)act;
	cr_skip_test("reads the instruction pointer of x86_64 only");
}

#endif

/*
 * A test named @test that sweeps @what against @act (@label in its
 * messages), on @cpus CPUs at least.
 */
#define FOLD_RACE(test, cpus, label, what, act)    \
	PCPU_TEST(fold_races, test)                 \
	{                                           \
		sweep(cpus, label, what, act);      \
	}

/* A fold by sync_if_delta_above(c, 0) before any instruction of add(+T). */
FOLD_RACE(a_sync_fold_anywhere_in_a_fast_add_keeps_every_bound, 1, "add(+T) / sync",
	  TRACED_ADD_PLUS_T, RACER_SYNC)
FOLD_RACE(a_registry_fold_anywhere_in_a_fast_add_keeps_every_bound, 1, "add(+T) / fold_all",
	  TRACED_ADD_PLUS_T, RACER_REGISTRY)

/* add(-1) from pending -T takes the slow path, and folds q itself. */
FOLD_RACE(a_sync_fold_anywhere_in_a_slow_add_keeps_every_bound, 1, "add(-1) / sync",
	  TRACED_ADD_MINUS_ONE, RACER_SYNC)
FOLD_RACE(a_registry_fold_anywhere_in_a_slow_add_keeps_every_bound, 1, "add(-1) / fold_all",
	  TRACED_ADD_MINUS_ONE, RACER_REGISTRY)

/* Three adds by another thread anywhere in add(+T) (restarts, or fails its swap). */
FOLD_RACE(adds_anywhere_in_a_fast_add_keep_every_bound, 1, "add(+T) / adds", TRACED_ADD_PLUS_T,
	  RACER_ADDS)

/* ... and in add(-1), whose own fold of q must not swap a stale pair. */
FOLD_RACE(adds_anywhere_in_a_slow_add_keep_every_bound, 1, "add(-1) / adds", TRACED_ADD_MINUS_ONE,
	  RACER_ADDS)

/* The case that broke 0.1: adds between a remote folder's read and its swap. */
FOLD_RACE(adds_anywhere_in_a_sync_fold_keep_every_bound, 1, "sync / adds", TRACED_SYNC,
	  RACER_ADDS)
FOLD_RACE(adds_anywhere_in_a_registry_fold_keep_every_bound, 1, "fold_all / adds",
	  TRACED_REGISTRY, RACER_ADDS)

/*
 * A limited add beside a fold half done must not trust count: the fold
 * sequence. (The registry's fold is the same fold_slot(): sync only, as
 * each sweep forks a child per instruction, which sanitizers make slow.)
 */
FOLD_RACE(a_limited_add_anywhere_in_a_sync_fold_never_passes_its_limit, 1, "sync / limited",
	  TRACED_SYNC, RACER_LIMITED)

/* The far path of a limited add, with a fold at every instruction of it. */
FOLD_RACE(a_fold_anywhere_in_a_far_limited_add_keeps_every_bound, 1, "limited / sync",
	  TRACED_LIMITED, RACER_SYNC)

/*
 * A limited add on r at every instruction of a plain add that raises the
 * threshold: between the store of the new threshold and the raise of the
 * bound, r may already hold more than the old bound says (the threshold is
 * published inside the fold sequence for that).
 */
FOLD_RACE(a_limited_add_anywhere_in_a_threshold_raise_never_passes_its_limit, 2,
	  "add(BIG) / limited", TRACED_RAISE, RACER_RAISED)

/*
 * A fold from another CPU while the far path runs on q, unpreempted (the
 * sequence goes on: only preemption, migration or a signal restarts it).
 * With +T pending on q and r the limit 2T is reached; the far path sees
 * room 2T for a bound of 2T, and must not let a fold of q between its reads
 * hand its slot check an emptied slot beside the count from before.
 */
FOLD_RACE(a_remote_fold_anywhere_in_a_far_limited_add_never_passes_its_limit, 2,
	  "limited at the limit / remote sync", TRACED_LIMITED_FULL, RACER_REMOTE)
