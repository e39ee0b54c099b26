/* SPDX-License-Identifier: MIT */
/*
 * Deterministic races between charges and takes, at every instruction.
 *
 * The promises under test (<percpu/charge.h>), at quiescence after any
 * interleaving: usage() is the exact tally of what was charged and not
 * uncharged; reserved() is usage plus every CPU's stock and never above the
 * limit; every stock lies in [0, cap]; a drain leaves reserved() ==
 * usage(); and try() fails only for want of room. The protocol that keeps
 * them (lib/charge/charge.c): a taker marks every stock, fences with membarrier's
 * rseq command (the one inline try past its check commits or aborts), and
 * only then moves what is left to the central reservation.
 *
 * Setup, in a child pinned to CPU q (the last CPU it may use): a limit of
 * 2^20 and a stock cap of 64 (half = 32, the inline window); a refill on
 * another CPU r if there is one (its stock: 64), a refill on q and inline
 * tries that leave q's stock at exactly 20. Then a traced thread makes one
 * call and is stopped before its k-th instruction, for every k from its
 * first instruction to its return, one child per k. At the stop a second,
 * untraced thread acts, then the traced one finishes:
 *
 *   traced try(8) (inline: 20 >= 8) or uncharge(8) (inline: 28 <= 64) on
 *       q, the other thread drains from r (a take of every stock);
 *   traced try(24) on q (20 < 24: the refill), the other thread drains
 *       from r, or tries 8 and uncharges 8 on q;
 *   ... with the limit lowered to reserved() + 10 first, so that the refill
 *       must take every stock back before it fits (the traced call is the
 *       taker), the other thread tries 4 and uncharges 4 on q (4 fits in
 *       the room, so it never needs the taking lock the traced call holds);
 *   traced drain from r (the take itself: mark, fence, take), the other
 *       thread tries 8 and uncharges 8 on q, the CPU being taken;
 *   traced try(24), uncharge(50) (slow) or uncharge(8) (inline) on q, the
 *       other thread lowers the limit from r (set_limit, a take when it is
 *       below reserved()), and the reverse: traced set_limit from r, the
 *       other thread tries 24 or uncharges 50 or 8 on q (1000 charged
 *       first, so that usage stays above the uncharge; the limit is set
 *       from the reservation R0 or the usage U0 the setup left).
 *
 * The restartable sequence. Every ptrace stop preempts the tracee, and the
 * kernel aborts a critical section that was preempted, so single-stepping
 * through one restarts it for ever. Before resuming from a stop that is not
 * the chosen one, the parent clears the rseq_cs pointer in the tracee's rseq
 * area (the kernel then sees no critical section: the step is a plain
 * step), as the driver of every race test does (test/lib/race_sweep.h:
 * a child per stop, the stepping). At the chosen stop the
 * traced thread stands for one running on q while the other thread acts,
 * and the parent does to its sequence what the kernel would:
 *   - the other thread runs on q too: the traced one was preempted, and the
 *     kernel aborts its sequence on resume;
 *   - the other thread runs on r and fences (membarrier
 *     MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ): the fence's IPI aborts the
 *     sequence on q then, and the restarted sequence may run while the
 *     other thread goes on. So the other thread waits after each fence
 *     while the parent aborts the sequence and steps the restarted one
 *     back to the stop's instruction (or out of the section, where its
 *     check failed), then lets the other thread finish;
 *   - the other thread runs on r and does not fence: nothing interrupts the
 *     sequence on q; it runs on and commits.
 * For an abort the parent puts the pointer back as the sequence had armed
 * it and checks that the kernel aborted it (one step lands outside the
 * section); otherwise it clears the pointer and lets the sequence run on.
 * The fence is seen by interposing syscall(2), through which lib/base/fence.c
 * makes it (a fence made some other way would go unseen, and the sweep of
 * try(8) / drain would fail, not pass falsely); the traced drains' stops
 * include the interposer's few instructions.
 *
 * Without the fence, or with the fence before the marking, a try that
 * passed its check before the marking commits into a stock already taken:
 * CPU q's stock goes below zero at the stops between the try's read of the
 * mark and its commit. Uncharges and refills do not need the fence: an
 * uncharge that lands after a take leaves a stock of its own amount, and
 * the refill's inline attempt fails its check anyway.
 *
 * Skipped under valgrind (single-stepping its translated code means
 * nothing), under qemu-user (threads in a forked child), where ptrace is
 * not allowed, and off x86_64 (the registers).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <percpu/charge.h>

#include "pcpu_test.h"
#include "race_sweep.h"

/* the longest sweep (~2300 stops under ASan) takes ~17 s on two CPUs */
TestSuite(charge_races, .timeout = 240);

#define LIMIT (INT64_C(1) << 20)
#define CAP INT64_C(64)
#define STOCK_Q INT64_C(20) /* q's stock before the traced call */

/* membarrier(2)'s rseq fence, as <linux/membarrier.h> numbers it */
#define FENCE_CMD_RSEQ (1 << 7)

enum traced_call {
	TRACED_TRY_FAST,      /* try(8): inline, 20 >= 8 */
	TRACED_UNCHARGE_FAST, /* uncharge(8): inline, 20 + 8 <= 64 */
	TRACED_TRY_SLOW,      /* try(24): 20 < 24, the refill */
	TRACED_TRY_TAKE,      /* try(24) with 10 left under the limit: the refill takes */
	TRACED_DRAIN,         /* drain() from r */
	TRACED_UNCHARGE_SLOW, /* uncharge(50): above the inline window, into q's stock */
	TRACED_SET_LIMIT,     /* set_limit(new_limit) from r */
};

enum racer_action {
	RACER_DRAIN,        /* drain() from r */
	RACER_TRY_UNCHARGE, /* try(a) and uncharge(a) on q */
	RACER_SET_LIMIT,    /* set_limit(new_limit) from r */
	RACER_TRY,          /* try(a) on q, kept */
	RACER_UNCHARGE,     /* uncharge(a) on q */
};

/*
 * The limit that a sweep's set_limit() sets, from the state the setup
 * leaves: the reservation (R0) or the usage (U0), plus an offset.
 */
struct new_limit {
	bool of_usage;
	int64_t plus;
};

/* What the child reports through a shared page. */
struct charge_page {
	struct pcpu_race_page race; /* the driver's: go, done, exact, ... */
	/* child -> parent, before the traced call */
	int traced_cpu, racer_cpu;
	/* parent <-> racer */
	int racer_error;
	int hold_fences;     /* at the stop: the racer waits after each fence (from r) */
	volatile int fence_held, fence_released; /* fences waited after; let go */
	int racer_fences;    /* membarrier rseq fences the racer's action made */
	int64_t racer_tally; /* what the racer charged less what it uncharged */
	/* child's oracles at quiescence, after the traced call */
	int traced_ok;       /* the traced try charged */
	int64_t limit, usage, reserved, stock_sum;
	int bad_stock_cpu;   /* the first CPU whose stock is out of [0, cap]; -1 if none */
	int64_t bad_stock;
	int64_t room;        /* limit - usage */
	int room_ok, one_more_ok;
	int over_try_ok;     /* above the limit: try(0) or try(1) charged */
	int64_t full_usage, full_reserved;
	int64_t drained_usage, drained_reserved, drained_stock_sum;
};

static struct charge_page *page;
static struct pcpu_charge ch;
static enum traced_call traced;
static enum racer_action action;
static int64_t racer_amount;
static struct new_limit limit_spec; /* for TRACED_SET_LIMIT and RACER_SET_LIMIT */
static int64_t new_limit;           /* ... worked out by the child after its setup */
static int64_t base_usage;          /* charged first by the setup (room for uncharge(50)) */
static int cpu_q = -1, cpu_r = -1;
static long fences;            /* membarrier rseq fences made through syscall(2) */
static __thread bool in_racer; /* this thread is the racer, acting */
static volatile sig_atomic_t signal_at_fence; /* raise SIGUSR1 after the next fence */

#if PCPU_RACE_HAVE_STEPS

/*
 * A fence has returned: its IPI aborted the sequence that the traced thread
 * was running on q. If the racer made it from r, wait until the parent has
 * restarted that sequence and run it on to where it stood (or out of the
 * section), as it could run while the racer goes on; 10 s at most, in case
 * the parent is gone.
 */
static void hold_after_fence(void)
{
	int n;

	__atomic_add_fetch(&fences, 1, __ATOMIC_SEQ_CST);
	if (signal_at_fence) {
		signal_at_fence = 0;
		raise(SIGUSR1);
	}
	if (!in_racer || !page->hold_fences)
		return;
	n = __atomic_add_fetch(&page->fence_held, 1, __ATOMIC_SEQ_CST);
	for (int us = 0; __atomic_load_n(&page->fence_released, __ATOMIC_SEQ_CST) < n; us += 20) {
		if (us > 10 * 1000 * 1000)
			_exit(17);
		usleep(20);
	}
}

/*
 * syscall(2), interposed to see the fences (the static library's call of
 * syscall() binds to this definition); passes every call on unchanged.
 * After a fence made by a racer on r, the racer waits while the parent
 * aborts the traced sequence and runs it on (see hold_after_fence()).
 */
long syscall(long number, ...)
{
	va_list ap;
	long a[6], ret;

	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	ret = pcpu_race_raw_syscall(number, a);
	if (number == SYS_membarrier && (int)a[0] == FENCE_CMD_RSEQ && ret == 0)
		hold_after_fence();
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

#endif

static struct pcpu_charge_slot *slot_of(unsigned int cpu)
{
	return (struct pcpu_charge_slot *)(void *)((char *)ch.slots + (size_t)cpu * PCPU_STRIDE);
}

/* lib/charge/charge.c's mark of a stock being taken, or closed above the limit */
#define TAKEN (INT64_C(1) << 62)

/*
 * CPU @cpu's stock: mark + half - charged (wrapping, as a marked one would),
 * plus TAKEN for a stock that is closed (reserved() above the limit) and so
 * marked at quiescence.
 */
static int64_t stock_of(unsigned int cpu)
{
	const struct pcpu_charge_slot *s = slot_of(cpu);
	int64_t stock = (int64_t)((uint64_t)s->mark + (uint64_t)ch.half - (uint64_t)s->charged);

	return stock < -(TAKEN / 2) ? (int64_t)((uint64_t)stock + (uint64_t)TAKEN) : stock;
}

static int64_t traced_amount(void)
{
	switch (traced) {
	case TRACED_TRY_FAST:
	case TRACED_UNCHARGE_FAST:
		return 8;
	case TRACED_TRY_SLOW:
	case TRACED_TRY_TAKE:
		return 24;
	case TRACED_UNCHARGE_SLOW:
		return 50;
	case TRACED_DRAIN:
	case TRACED_SET_LIMIT:
		break;
	}
	return 0;
}

/* unused off x86_64, where the sweeps skip */
__attribute__((unused)) static bool traced_is_try(enum traced_call what)
{
	return what == TRACED_TRY_FAST || what == TRACED_TRY_SLOW || what == TRACED_TRY_TAKE;
}

static void *racer(void *arg)
{
	bool remote = action == RACER_DRAIN || action == RACER_SET_LIMIT;
	int cpu = remote && cpu_r >= 0 ? cpu_r : cpu_q;
	long before;

	(void)arg;
	/* pinned now, not at the stop */
	if (!pcpu_test_pin(cpu))
		page->racer_error = 1;
	page->racer_cpu = cpu;
	(void)pcpu_charge_usage(&ch);
	pcpu_race_racer_ready(&page->race);
	before = __atomic_load_n(&fences, __ATOMIC_SEQ_CST);
	in_racer = true;
	switch (action) {
	case RACER_DRAIN:
		pcpu_charge_drain(&ch);
		break;
	case RACER_TRY_UNCHARGE:
		if (pcpu_charge_try(&ch, racer_amount))
			page->racer_tally += racer_amount;
		pcpu_charge_uncharge(&ch, racer_amount);
		page->racer_tally -= racer_amount;
		break;
	case RACER_SET_LIMIT:
		if (pcpu_charge_set_limit(&ch, new_limit) != 0)
			page->racer_error = 2;
		break;
	case RACER_TRY:
		if (pcpu_charge_try(&ch, racer_amount))
			page->racer_tally += racer_amount;
		break;
	case RACER_UNCHARGE:
		pcpu_charge_uncharge(&ch, racer_amount);
		page->racer_tally -= racer_amount;
		break;
	}
	in_racer = false;
	page->racer_fences = (int)(__atomic_load_n(&fences, __ATOMIC_SEQ_CST) - before);
	pcpu_race_racer_done(&page->race);
	return NULL;
}

/* The traced call and its end, where the parent stops counting (unused off x86_64). */
__attribute__((noinline, noipa, unused)) static void traced_call(void)
{
	switch (traced) {
	case TRACED_TRY_FAST:
	case TRACED_TRY_SLOW:
	case TRACED_TRY_TAKE:
		page->traced_ok = pcpu_charge_try(&ch, traced_amount());
		break;
	case TRACED_UNCHARGE_FAST:
	case TRACED_UNCHARGE_SLOW:
		pcpu_charge_uncharge(&ch, traced_amount());
		break;
	case TRACED_DRAIN:
		pcpu_charge_drain(&ch);
		break;
	case TRACED_SET_LIMIT:
		page->traced_ok = pcpu_charge_set_limit(&ch, new_limit) == 0;
		break;
	}
}

__attribute__((noinline, noipa, unused)) static void traced_done(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/* The sum of every CPU's stock; if @note, notes the first out of [0, cap] in the page. */
static int64_t sum_stocks(bool note)
{
	unsigned int cpus = pcpu_cpu_possible();
	uint64_t sum = 0;

	for (unsigned int cpu = 0; cpu < cpus; cpu++) {
		int64_t s = stock_of(cpu);

		sum += (uint64_t)s;
		if (note && (s < 0 || s > 2 * ch.half) && page->bad_stock_cpu < 0) {
			page->bad_stock_cpu = (int)cpu;
			page->bad_stock = s;
		}
	}
	return (int64_t)sum;
}

/* The oracles, at quiescence, against the shadow tally @exact. */
static void check_at_quiescence(int64_t exact)
{
	page->race.exact = exact;
	page->limit = pcpu_charge_limit(&ch);
	page->usage = pcpu_charge_usage(&ch);
	page->reserved = pcpu_charge_reserved(&ch);
	page->bad_stock_cpu = -1;
	page->stock_sum = sum_stocks(true);
	/*
	 * No false failure: exactly the room left fits, and not one more (with
	 * the stocks where the race left them: the try must take them back).
	 * Above the limit (a set_limit() below the usage) every try fails,
	 * try(0) too.
	 */
	page->room = page->limit - page->usage;
	if (page->room < 0) {
		page->over_try_ok = pcpu_charge_try(&ch, 0) || pcpu_charge_try(&ch, 1);
	} else {
		page->room_ok = pcpu_charge_try(&ch, page->room);
		page->one_more_ok = pcpu_charge_try(&ch, 1);
		page->full_usage = pcpu_charge_usage(&ch);
		page->full_reserved = pcpu_charge_reserved(&ch);
		if (page->room_ok)
			pcpu_charge_uncharge(&ch, page->room);
		if (page->one_more_ok)
			pcpu_charge_uncharge(&ch, 1);
	}
	/* a drain takes every stock back */
	pcpu_charge_drain(&ch);
	page->drained_usage = pcpu_charge_usage(&ch);
	page->drained_reserved = pcpu_charge_reserved(&ch);
	page->drained_stock_sum = sum_stocks(false);
}

/* Tries @amount on this CPU or exits with @code. */
static void charge_or_exit(int64_t amount, int code)
{
	if (!pcpu_charge_try(&ch, amount))
		_exit(code);
}

static struct pcpu_race race;

/* unused off x86_64, where the sweeps skip */
__attribute__((unused)) static void child_main(void)
{
	struct pcpu_charge_options o = { .limit = LIMIT, .stock_cap = CAP };
	int cpus[64], n = pcpu_test_allowed_cpus(cpus, 64), traced_cpu;
	int64_t setup = 0;
	pthread_t t;

	if (n < 1)
		_exit(10);
	cpu_q = cpus[n - 1];
	cpu_r = n > 1 ? cpus[0] : -1;
	if (pcpu_charge_init(&ch, &o) != 0)
		_exit(12);
	page->race.mode = ch.mode;
	/* r's stock: one refill there */
	if (cpu_r >= 0) {
		if (!pcpu_test_pin(cpu_r))
			_exit(11);
		charge_or_exit(5, 16);
		setup += 5;
	}
	/* q's stock: a refill, then inline tries down to STOCK_Q */
	if (!pcpu_test_pin(cpu_q))
		_exit(11);
	if (base_usage) {
		charge_or_exit(base_usage, 16);
		setup += base_usage;
	}
	charge_or_exit(3, 16);
	setup += 3;
	while (stock_of((unsigned int)cpu_q) > STOCK_Q) {
		int64_t a = stock_of((unsigned int)cpu_q) - STOCK_Q;

		a = a < ch.half ? a : ch.half;
		charge_or_exit(a, 16);
		setup += a;
	}
	if (stock_of((unsigned int)cpu_q) != STOCK_Q || pcpu_charge_usage(&ch) != setup ||
	    (cpu_r >= 0 && stock_of((unsigned int)cpu_r) != CAP))
		_exit(14);
	if (traced == TRACED_TRY_TAKE &&
	    pcpu_charge_set_limit(&ch, pcpu_charge_reserved(&ch) + 10) != 0)
		_exit(14);
	new_limit = (limit_spec.of_usage ? setup : pcpu_charge_reserved(&ch)) + limit_spec.plus;
	/* the racer inherits q and pins itself */
	pcpu_race_start_racer(&page->race, &t, racer);
	traced_cpu = (traced == TRACED_DRAIN || traced == TRACED_SET_LIMIT) && cpu_r >= 0 ? cpu_r
										   : cpu_q;
	if (!pcpu_test_pin(traced_cpu))
		_exit(11);
	page->traced_cpu = traced_cpu;
	pcpu_race_traced(&race, t);
	switch (traced) {
	case TRACED_TRY_FAST:
	case TRACED_TRY_SLOW:
	case TRACED_TRY_TAKE:
		setup += page->traced_ok ? traced_amount() : 0;
		break;
	case TRACED_UNCHARGE_FAST:
	case TRACED_UNCHARGE_SLOW:
		setup -= traced_amount();
		break;
	case TRACED_DRAIN:
		break;
	case TRACED_SET_LIMIT:
		if (!page->traced_ok)
			_exit(18);
		break;
	}
	check_at_quiescence(setup + page->racer_tally);
	page->race.child_ok = 1;
	_exit(0);
}

#if PCPU_RACE_HAVE_STEPS

static int released; /* fences after which the racer was let go, at this stop */

/*
 * A fence's IPI aborted the sequence held at @run's stop: abort it, then
 * run the restarted sequence on, step by step, until it is back at the
 * stop or has left the section (its check failed). Returns whether it is
 * back.
 */
static bool rerun(struct pcpu_race_run *run)
{
	int status;
	bool entered = false;

	run->aborts++;
	run->aborted += pcpu_race_abort_section(run->pid, run->cs_field, run->armed);
	for (long n = 0;; n++) {
		uint64_t ip = pcpu_race_ip(run->pid);
		bool in = pcpu_race_in_section(run->pid, run->armed, ip);

		entered = entered || in;
		if (entered && (ip == run->ip || !in))
			return ip == run->ip;
		cr_assert_lt(n, 10000, "the restarted sequence never came back");
		cr_assert_eq(ptrace(PTRACE_POKEDATA, run->pid, (void *)run->cs_field, NULL), 0);
		pcpu_race_step(run->pid, &status);
	}
}

/* While the racer acts: after each fence it made from r, the sequence on q aborts. */
static bool at_fence(struct pcpu_race_run *run)
{
	int held = __atomic_load_n(&page->fence_held, __ATOMIC_SEQ_CST);

	if (held <= released)
		return false;
	if (run->armed && pcpu_race_in_section(run->pid, run->armed, pcpu_race_ip(run->pid)))
		run->reruns += rerun(run);
	released = held;
	__atomic_store_n(&page->fence_released, released, __ATOMIC_SEQ_CST);
	return true;
}

/*
 * At the stop: the racer acts. The traced thread counts as preempted if
 * the racer ran on its CPU, or fenced unseen; otherwise nothing
 * interrupted its sequence, which runs on.
 */
static bool at_stop(struct pcpu_race_run *run)
{
	released = 0;
	page->hold_fences = page->racer_cpu != page->traced_cpu;
	pcpu_race_let_act(&page->race, run, at_fence);
	return page->racer_cpu == page->traced_cpu || page->racer_fences > released;
}

/*
 * The oracles of one run: writes every broken one to @why (so that a
 * failure shows all that went wrong at that stop) and returns whether all
 * held.
 */
static bool oracles_hold(char *why, size_t size)
{
	const struct charge_page *p = page;
	int64_t exact = p->race.exact; /* the shadow tally */

	why[0] = '\0';
	if (p->racer_error)
		broke(why, size, "the racer could not pin or set the limit (%d)", p->racer_error);
	if (p->usage != exact)
		broke(why, size, "usage %" PRId64 " != exact %" PRId64, p->usage, exact);
	/* above the limit only by usage alone: no stock */
	if (p->reserved > p->limit && p->reserved != p->usage)
		broke(why, size, "reserved %" PRId64 " > limit %" PRId64 " with usage %" PRId64,
		      p->reserved, p->limit, p->usage);
	if (p->reserved != p->usage + p->stock_sum)
		broke(why, size, "reserved %" PRId64 " != usage %" PRId64 " + stocks %" PRId64,
		      p->reserved, p->usage, p->stock_sum);
	if (p->bad_stock_cpu >= 0)
		broke(why, size, "CPU %d's stock %" PRId64 " is out of [0, %" PRId64 "]",
		      p->bad_stock_cpu, p->bad_stock, CAP);
	if (p->room < 0 && p->over_try_ok)
		broke(why, size, "a try charged at usage %" PRId64 " above the limit %" PRId64,
		      p->usage, p->limit);
	if (p->room >= 0 && !p->room_ok)
		broke(why, size, "try(limit - usage = %" PRId64 ") failed", p->room);
	if (p->room_ok && p->one_more_ok)
		broke(why, size, "try(1) succeeded at usage %" PRId64 " of limit %" PRId64,
		      p->full_usage - 1, p->limit);
	if (p->room_ok && !p->one_more_ok &&
	    (p->full_usage != p->limit || p->full_reserved != p->limit))
		broke(why, size, "full: usage %" PRId64 ", reserved %" PRId64 " != limit %" PRId64,
		      p->full_usage, p->full_reserved, p->limit);
	if (p->drained_reserved != p->drained_usage || p->drained_stock_sum != 0)
		broke(why, size,
		      "after a drain reserved %" PRId64 ", usage %" PRId64 ", stocks %" PRId64,
		      p->drained_reserved, p->drained_usage, p->drained_stock_sum);
	if (p->drained_usage != exact)
		broke(why, size, "after a drain usage %" PRId64 " != exact %" PRId64,
		      p->drained_usage, exact);
	return why[0] == '\0';
}

static long refused; /* stops at which the traced try failed */

/* The run without a stop: the update path asked for, and a try with room charges. */
static void check_whole(void)
{
	pcpu_race_assert_mode(page->race.mode);
	/* alone, with room for it, the traced try must charge */
	if (traced_is_try(traced))
		cr_assert(page->traced_ok, "%s, no stop: the traced try failed", race.name);
}

static void count_refused(void)
{
	if (traced_is_try(traced) && !page->traced_ok)
		refused++;
}

/*
 * Sweeps the traced call @what against the racer's @act (of @amount) at
 * every instruction (test/lib/race_sweep.h).
 */
static void sweep(const char *name, enum traced_call what, enum racer_action act,
		  int64_t amount)
{
	struct pcpu_race_totals t;

	traced = what;
	action = act;
	racer_amount = amount;
	refused = 0;
	race = (struct pcpu_race){ .name = name, .page = (void **)&page,
				   .page_size = sizeof(*page), .child = child_main,
				   .call = traced_call, .done = traced_done, .at_stop = at_stop,
				   .oracles = oracles_hold, .whole = check_whole,
				   .after_stop = count_refused };
	t = pcpu_race_sweep(&race);
	cr_log_info("%s: racer on %s CPU, %ld traced tries refused", name,
		    page->racer_cpu != page->traced_cpu ? "another" : "the same", refused);
	/* every stop inside a sequence that the kernel had to abort restarted it */
	cr_assert_eq(t.aborted, t.aborts, "%s: %ld of %ld aborts of a restartable sequence "
		     "did not happen", name, t.aborts - t.aborted, t.aborts);
	/* the calls that start with an inline attempt */
	if (page->race.mode == PCPU_CPU_RSEQ && what != TRACED_DRAIN &&
	    what != TRACED_UNCHARGE_SLOW && what != TRACED_SET_LIMIT)
		cr_assert_gt(t.in_cs, 0, "%s: no stop inside the restartable sequence", name);
	pcpu_race_end(&race);
}

#else /* !PCPU_RACE_HAVE_STEPS */

static void sweep(const char *name, enum traced_call what, enum racer_action act,
		  int64_t amount)
{
	(void)name;
	(void)what;
	(void)act;
	(void)amount;
	cr_skip_test("reads the instruction pointer of x86_64 only");
}

#endif

/* A sweep around set_limit(): @spec's limit; 1000 charged first (room for uncharge(50)). */
static void sweep_limit(const char *name, enum traced_call what, enum racer_action act,
			int64_t amount, struct new_limit spec)
{
	limit_spec = spec;
	base_usage = 1000;
	sweep(name, what, act, amount);
}

/* A test named @test that sweeps @what against @act of @amount (@label in its messages). */
#define CHARGE_RACE(test, label, what, act, amount)   \
	PCPU_TEST(charge_races, test)                  \
	{                                              \
		sweep(label, what, act, amount);       \
	}

/* ... around a set_limit() to the usage (@of_usage) or the reservation, @plus. */
#define LIMIT_RACE(test, label, what, act, amount, of_usage, plus)                        \
	PCPU_TEST(charge_races, test)                                                      \
	{                                                                                  \
		sweep_limit(label, what, act, amount, (struct new_limit){ of_usage, plus }); \
	}

/* A take of every stock anywhere in an inline try: the try must not charge a taken stock. */
CHARGE_RACE(a_drain_anywhere_in_an_inline_try_keeps_every_promise, "try(8) / drain",
	    TRACED_TRY_FAST, RACER_DRAIN, 0)
CHARGE_RACE(a_drain_anywhere_in_an_inline_uncharge_keeps_every_promise, "uncharge(8) / drain",
	    TRACED_UNCHARGE_FAST, RACER_DRAIN, 0)

/* The refill: reserve, charge, raise the stock, give back the rest. */
CHARGE_RACE(a_drain_anywhere_in_a_refill_keeps_every_promise, "try(24) / drain", TRACED_TRY_SLOW,
	    RACER_DRAIN, 0)
CHARGE_RACE(charges_on_the_same_cpu_anywhere_in_a_refill_keep_every_promise,
	    "try(24) / try+uncharge(8)", TRACED_TRY_SLOW, RACER_TRY_UNCHARGE, 8)

/* A refill that must take every stock back first: the traced call is the taker. */
CHARGE_RACE(charges_on_the_same_cpu_anywhere_in_a_taking_refill_keep_every_promise,
	    "try(24) near the limit / try+uncharge(4)", TRACED_TRY_TAKE, RACER_TRY_UNCHARGE, 4)

/* The take itself: mark, fence, take, with charges on the CPU being taken. */
CHARGE_RACE(charges_on_the_taken_cpu_anywhere_in_a_drain_keep_every_promise,
	    "drain / try+uncharge(8)", TRACED_DRAIN, RACER_TRY_UNCHARGE, 8)

/*
 * set_limit() anywhere in a refill, an uncharge, and the reverse: once
 * set_limit(L) has returned, no try takes usage above L, whatever was in
 * flight (a try whose reservation was made before is one that returned
 * before). At quiescence reserved() is within L, or equal to usage() with
 * every stock empty and no try charging.
 */

/* The refill read the old limit: its reservation must not stand above the new one. */
LIMIT_RACE(a_lower_limit_anywhere_in_a_refill_leaves_no_reservation_above_it,
	   "try(24) / set_limit(R0 + 40)", TRACED_TRY_SLOW, RACER_SET_LIMIT, 0, false, 40)

/* The refill reserved under the old limit: it must not stock q after the take. */
LIMIT_RACE(a_limit_at_the_usage_anywhere_in_a_refill_leaves_no_stock_to_spend,
	   "try(24) / set_limit(U0)", TRACED_TRY_SLOW, RACER_SET_LIMIT, 0, true, 0)

/* The uncharge's stock target was worked out under the old limit. */
LIMIT_RACE(a_limit_below_the_usage_anywhere_in_an_uncharge_leaves_no_stock_above_it,
	   "uncharge(50) / set_limit(U0 - 20)", TRACED_UNCHARGE_SLOW, RACER_SET_LIMIT, 0, true, -20)

/* The inline uncharge must not restock q above the limit. */
LIMIT_RACE(a_limit_below_the_usage_anywhere_in_an_inline_uncharge_leaves_no_stock_above_it,
	   "uncharge(8) / set_limit(U0 - 4)", TRACED_UNCHARGE_FAST, RACER_SET_LIMIT, 0, true, -4)

LIMIT_RACE(a_refill_anywhere_in_a_lower_set_limit_leaves_no_reservation_above_it,
	   "set_limit(R0 + 40) / try(24)", TRACED_SET_LIMIT, RACER_TRY, 24, false, 40)
LIMIT_RACE(an_uncharge_anywhere_in_a_set_limit_below_the_usage_leaves_no_stock_above_it,
	   "set_limit(U0 - 20) / uncharge(50)", TRACED_SET_LIMIT, RACER_UNCHARGE, 50, true, -20)
LIMIT_RACE(an_inline_uncharge_anywhere_in_a_set_limit_below_the_usage_leaves_no_stock_above_it,
	   "set_limit(U0 - 4) / uncharge(8)", TRACED_SET_LIMIT, RACER_UNCHARGE, 8, true, -4)

static int handler_rc;
static int64_t handler_limit;

static void set_limit_in_handler(int sig)
{
	(void)sig;
	handler_rc = pcpu_charge_set_limit(&ch, 5);
	handler_limit = pcpu_charge_limit(&ch);
}

/*
 * set_limit() in a signal handler that interrupted this thread's own take
 * (at its fence, with the take's lock held) cannot wait for the take: it
 * says so and changes nothing, rather than leave the stocks open under a
 * lower limit.
 */
PCPU_TEST(charge_races, set_limit_in_a_handler_that_interrupted_a_take_changes_nothing)
{
	struct pcpu_charge_options o = { .limit = LIMIT, .stock_cap = CAP };
	struct sigaction sa = { .sa_handler = set_limit_in_handler };

#if !PCPU_RACE_HAVE_STEPS
	cr_skip_test("the fence is seen through the x86_64 syscall(2) interposer");
#endif
	pcpu_test_pin_first();
	cr_assert_eq(pcpu_charge_init(&ch, &o), 0);
	if (ch.mode != PCPU_CPU_RSEQ)
		cr_skip_test("a take fences only on the restartable-sequence path");
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	cr_assert(pcpu_charge_try(&ch, 5)); /* a refill: a stock to take */
	handler_rc = 1;
	signal_at_fence = 1;
	pcpu_charge_drain(&ch);
	cr_assert_eq(signal_at_fence, 0, "the drain made no fence");
	cr_assert_eq(handler_rc, -EDEADLK);
	cr_assert_eq(handler_limit, LIMIT);
	cr_assert_eq(pcpu_charge_limit(&ch), LIMIT);
	cr_assert_eq(pcpu_charge_reserved(&ch), 5);
	cr_assert_eq(pcpu_charge_set_limit(&ch, 5), 0);
	cr_assert_not(pcpu_charge_try(&ch, 1));
	pcpu_charge_destroy(&ch);
}
