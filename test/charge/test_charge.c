/* SPDX-License-Identifier: MIT */
/*
 * Charges (<percpu/charge.h>): each promise of the header, one thread at a
 * time, then many threads with CPU hopping, signals and threads that exit
 * with a stock, against a shadow tally and a watcher of the limit.
 *
 * The stock of a CPU is reserved() - usage() summed over CPUs; with one
 * thread pinned to one CPU, reserved() - usage() is that CPU's stock.
 */
#include "pcpu_test.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/charge.h>
#include <percpu/registry.h>

TestSuite(charge, .timeout = 120);

static struct pcpu_charge ch;
static const struct pcpu_charge zero_charge;

static void init(int64_t limit, int64_t cap)
{
	struct pcpu_charge_options o = { .limit = limit, .stock_cap = cap };

	cr_assert_eq(pcpu_charge_init(&ch, &o), 0);
}

static int64_t stocks(void)
{
	return pcpu_charge_reserved(&ch) - pcpu_charge_usage(&ch);
}

/* ---- bad input ---------------------------------------------------------- */

PCPU_TEST(charge, init_rejects_bad_input_and_leaves_the_charge_zero_filled)
{
	struct pcpu_charge_options bad[] = {
		{ .limit = -1 },
		{ .limit = PCPU_CHARGE_MAX + 1 },
		{ .limit = 10, .stock_cap = -1 },
		{ .limit = 10, .stock_cap = PCPU_CHARGE_MAX + 1 },
	};
	size_t live = pcpu_registry_count();

	cr_assert_eq(pcpu_charge_init(NULL, &bad[0]), -EINVAL);
	memset(&ch, 0xa5, sizeof(ch));
	cr_assert_eq(pcpu_charge_init(&ch, NULL), -EINVAL);
	cr_assert_eq(memcmp(&ch, &zero_charge, sizeof(ch)), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&ch, 0xa5, sizeof(ch));
		cr_assert_eq(pcpu_charge_init(&ch, &bad[i]), -EINVAL, "options %zu", i);
		cr_assert_eq(memcmp(&ch, &zero_charge, sizeof(ch)), 0);
	}
	cr_assert_eq(pcpu_registry_count(), live);
	pcpu_charge_destroy(&ch); /* zero-filled: nothing */
	pcpu_charge_destroy(NULL);
}

PCPU_TEST(charge, set_limit_rejects_bad_input)
{
	cr_assert_eq(pcpu_charge_set_limit(NULL, 5), -EINVAL);
	memset(&ch, 0, sizeof(ch));
	cr_assert_eq(pcpu_charge_set_limit(&ch, 5), -EINVAL);
	init(100, 0);
	cr_assert_eq(pcpu_charge_set_limit(&ch, -1), -EINVAL);
	cr_assert_eq(pcpu_charge_set_limit(&ch, PCPU_CHARGE_MAX + 1), -EINVAL);
	cr_assert_eq(pcpu_charge_limit(&ch), 100);
	pcpu_charge_destroy(&ch);
}

static struct pcpu_charge *null_charge(void)
{
	return NULL;
}

static struct pcpu_charge *zero_filled_charge(void)
{
	memset(&ch, 0, sizeof(ch));
	return &ch;
}

static struct pcpu_charge *destroyed_charge(void)
{
	init(100, 10);
	cr_assert(pcpu_charge_try(&ch, 3));
	pcpu_charge_destroy(&ch);
	return &ch;
}

static struct pcpu_charge *live_charge(void)
{
	init(100, 10);
	return &ch;
}

#define MISUSE_ONE(call, state, statement)                                         \
	Test(charge, call##_on_##state##_charge_is_reported,                        \
	     .signal = PCPU_TEST_MISUSE_SIGNAL)                                     \
	{                                                                           \
		struct pcpu_charge *C = state##_charge();                           \
		statement;                                                          \
		if (C)                                                              \
			cr_assert_eq(memcmp(C, &zero_charge, sizeof(*C)), 0);       \
	}
#define MISUSE(call, statement)                                                    \
	MISUSE_ONE(call, null, statement)                                          \
	MISUSE_ONE(call, zero_filled, statement)                                   \
	MISUSE_ONE(call, destroyed, statement)

MISUSE(try, cr_assert_not(pcpu_charge_try(C, 1)))
MISUSE(try_large, cr_assert_not(pcpu_charge_try(C, 1000)))
MISUSE(uncharge, pcpu_charge_uncharge(C, 1))
MISUSE(usage, cr_assert_eq(pcpu_charge_usage(C), 0))
MISUSE(reserved, cr_assert_eq(pcpu_charge_reserved(C), 0))
MISUSE(drain, pcpu_charge_drain(C))

/* A negative amount on a live charge: reported, and nothing changes. */
Test(charge, try_of_a_negative_amount_is_reported, .signal = PCPU_TEST_MISUSE_SIGNAL)
{
	struct pcpu_charge *C = live_charge();

	cr_assert_not(pcpu_charge_try(C, -1));
	cr_assert_eq(pcpu_charge_usage(C), 0);
	cr_assert_eq(pcpu_charge_reserved(C), 0);
	pcpu_charge_destroy(C);
}

Test(charge, uncharge_of_a_negative_amount_is_reported, .signal = PCPU_TEST_MISUSE_SIGNAL)
{
	struct pcpu_charge *C = live_charge();

	pcpu_charge_uncharge(C, -1);
	cr_assert_eq(pcpu_charge_usage(C), 0);
	cr_assert_eq(pcpu_charge_reserved(C), 0);
	pcpu_charge_destroy(C);
}

/* ---- one thread --------------------------------------------------------- */

PCPU_TEST(charge, try_succeeds_exactly_while_usage_plus_amount_fits)
{
	uint64_t rng = 42;
	int64_t exact = 0;

	pcpu_test_pin_first();
	init(10000, 200);
	for (int i = 0; i < 20000; i++) {
		int64_t a = (int64_t)(pcpu_test_rand(&rng) % 300);

		if (pcpu_test_rand(&rng) % 2 && exact >= a) {
			pcpu_charge_uncharge(&ch, a);
			exact -= a;
		} else {
			bool fits = exact + a <= 10000;

			cr_assert_eq(pcpu_charge_try(&ch, a), fits, "try(%ld) at usage %ld",
				     (long)a, (long)exact);
			if (fits)
				exact += a;
		}
		cr_assert_eq(pcpu_charge_usage(&ch), exact);
		cr_assert_leq(pcpu_charge_reserved(&ch), 10000);
		cr_assert_geq(stocks(), 0);
		cr_assert_leq(stocks(), 200, "one CPU's stock above its cap");
	}
	pcpu_charge_destroy(&ch);
}

PCPU_TEST(charge, a_charge_within_the_stock_writes_no_shared_word)
{
	int64_t reserved;

	pcpu_test_pin_first();
	init(1 << 30, 1 << 20);
	cr_assert(pcpu_charge_try(&ch, 4096)); /* refills this CPU's stock */
	reserved = pcpu_charge_reserved(&ch);
	cr_assert_gt(stocks(), 4096, "a refill reserves more than it needs");
	for (int i = 0; i < 1000; i++) {
		cr_assert(pcpu_charge_try(&ch, 4096));
		pcpu_charge_uncharge(&ch, 4096);
	}
	cr_assert_eq(pcpu_charge_reserved(&ch), reserved, "the central reservation moved");
	cr_assert_eq(ch.used, 4096, "a slow path ran");
	cr_assert_eq(pcpu_charge_usage(&ch), 4096);
	pcpu_charge_destroy(&ch);
}

PCPU_TEST(charge, refills_shrink_as_the_limit_nears)
{
	int64_t first, later;

	pcpu_test_pin_first();
	init(1 << 20, 1 << 20);
	cr_assert(pcpu_charge_try(&ch, 1));
	first = stocks();
	pcpu_charge_drain(&ch);
	cr_assert(pcpu_charge_try(&ch, (1 << 20) - 1000 - pcpu_charge_usage(&ch)));
	pcpu_charge_drain(&ch);
	cr_assert(pcpu_charge_try(&ch, 1));
	later = stocks();
	cr_assert_gt(first, 0);
	cr_assert_lt(later, first / 100, "stock %ld near the limit, %ld far from it", (long)later,
		     (long)first);
	cr_assert_leq(pcpu_charge_reserved(&ch), 1 << 20);
	pcpu_charge_destroy(&ch);
}

PCPU_TEST(charge, an_uncharge_that_overflows_the_stock_returns_only_the_excess)
{
	pcpu_test_pin_first();
	init(1 << 20, 1000);
	cr_assert(pcpu_charge_try(&ch, 5000)); /* above the inline window: central */
	pcpu_charge_drain(&ch);
	cr_assert_eq(stocks(), 0);
	pcpu_charge_uncharge(&ch, 4000);
	cr_assert_eq(stocks(), 1000, "the stock is filled to its cap, not emptied");
	cr_assert_eq(pcpu_charge_usage(&ch), 1000);
	cr_assert_eq(pcpu_charge_reserved(&ch), 2000, "only the excess went back");
	pcpu_charge_destroy(&ch);
}

PCPU_TEST(charge, a_charge_larger_than_the_stock_uncharges_nothing)
{
	int64_t before;

	pcpu_test_pin_first();
	init(1 << 30, 1 << 16);
	cr_assert(pcpu_charge_try(&ch, 10));
	before = stocks();
	cr_assert_gt(before, 0);
	cr_assert(pcpu_charge_try(&ch, 1 << 20)); /* far larger than the stock */
	cr_assert_geq(stocks(), before, "the large charge gave the stock back");
	cr_assert_eq(pcpu_charge_usage(&ch), 10 + (1 << 20));
	pcpu_charge_destroy(&ch);
}

PCPU_TEST(charge, drain_leaves_reserved_equal_to_usage)
{
	pcpu_test_pin_first();
	init(1 << 20, 4096);
	cr_assert(pcpu_charge_try(&ch, 100));
	cr_assert_gt(stocks(), 0);
	pcpu_charge_drain(&ch);
	cr_assert_eq(pcpu_charge_reserved(&ch), 100);
	cr_assert_eq(pcpu_charge_usage(&ch), 100);
	pcpu_charge_destroy(&ch);
}

PCPU_TEST(charge, a_limit_below_the_usage_refuses_every_charge_until_uncharges)
{
	pcpu_test_pin_first();
	init(1000, 100);
	cr_assert(pcpu_charge_try(&ch, 600));
	cr_assert_eq(pcpu_charge_set_limit(&ch, 500), 0);
	cr_assert_eq(pcpu_charge_reserved(&ch), 600, "the stocks were not taken back");
	cr_assert_not(pcpu_charge_try(&ch, 0 + 1));
	cr_assert_not(pcpu_charge_try(&ch, 200));
	pcpu_charge_uncharge(&ch, 200);
	cr_assert_leq(pcpu_charge_reserved(&ch), 500);
	cr_assert(pcpu_charge_try(&ch, 100));
	cr_assert_not(pcpu_charge_try(&ch, 1));
	cr_assert_eq(pcpu_charge_usage(&ch), 500);
	cr_assert_eq(pcpu_charge_set_limit(&ch, 2000), 0);
	cr_assert(pcpu_charge_try(&ch, 1500));
	cr_assert_not(pcpu_charge_try(&ch, 1));
	pcpu_charge_destroy(&ch);
}

/*
 * Above the limit the stocks are closed: an uncharge gives back what it
 * frees and keeps no stock that a try could spend, before and after a
 * drain, and try(0) fails like every other try until usage is back under
 * the limit.
 */
PCPU_TEST(charge, above_the_limit_an_uncharge_keeps_no_stock_for_a_try)
{
	pcpu_test_pin_first();
	init(1000, 100);
	cr_assert(pcpu_charge_try(&ch, 600));
	cr_assert_eq(pcpu_charge_set_limit(&ch, 500), 0);
	for (int round = 0; round < 3; round++) {
		pcpu_charge_uncharge(&ch, 20);
		cr_assert_not(pcpu_charge_try(&ch, 20), "round %d: try(20) at usage %ld of 500",
			      round, (long)pcpu_charge_usage(&ch));
		cr_assert_not(pcpu_charge_try(&ch, 0), "round %d: try(0) at usage %ld of 500",
			      round, (long)pcpu_charge_usage(&ch));
		cr_assert_eq(pcpu_charge_usage(&ch), 580 - 20 * round);
		cr_assert_eq(pcpu_charge_reserved(&ch), pcpu_charge_usage(&ch),
			     "round %d: a stock kept above the limit", round);
		if (round == 1)
			pcpu_charge_drain(&ch);
	}
	/* back to the limit: try(0) fits again, one more does not */
	pcpu_charge_uncharge(&ch, 40);
	cr_assert(pcpu_charge_try(&ch, 0));
	cr_assert_not(pcpu_charge_try(&ch, 1));
	pcpu_charge_uncharge(&ch, 50);
	cr_assert(pcpu_charge_try(&ch, 50));
	cr_assert_not(pcpu_charge_try(&ch, 1));
	cr_assert_eq(pcpu_charge_usage(&ch), 500);
	cr_assert_leq(pcpu_charge_reserved(&ch), 500);
	pcpu_charge_destroy(&ch);
}

/*
 * The same with uncharges on every CPU, in pieces the inline path takes,
 * until usage is just under the lowered limit: no CPU kept a stock that
 * would take usage past it.
 */
PCPU_TEST(charge, uncharges_on_every_cpu_above_the_limit_leave_no_stock_past_it)
{
	int cpus[8], n = pcpu_test_allowed_cpus(cpus, 8);
	int64_t exact = 600000;

	cr_assert_gt(n, 0);
	cr_assert(pcpu_test_pin(cpus[0]));
	init(1 << 20, 4096);
	cr_assert(pcpu_charge_try(&ch, exact));
	cr_assert_eq(pcpu_charge_set_limit(&ch, 400000), 0);
	for (int i = 0; exact > 399000; i++) {
		int64_t a = exact - 399000 < 2048 ? exact - 399000 : 2048;

		cr_assert(pcpu_test_pin(cpus[i % n]));
		pcpu_charge_uncharge(&ch, a);
		exact -= a;
	}
	cr_assert_eq(pcpu_charge_usage(&ch), exact);
	for (int i = 0; i < n; i++) {
		cr_assert(pcpu_test_pin(cpus[i]));
		cr_assert_not(pcpu_charge_try(&ch, 2048), "try(2048) on CPU %d at usage %ld",
			      cpus[i], (long)pcpu_charge_usage(&ch));
	}
	cr_assert_leq(pcpu_charge_reserved(&ch), 400000);
	cr_assert(pcpu_charge_try(&ch, 1000));
	cr_assert_not(pcpu_charge_try(&ch, 1));
	cr_assert_eq(pcpu_charge_usage(&ch), 400000);
	pcpu_charge_destroy(&ch);
}

PCPU_TEST(charge, a_zero_limit_refuses_all_but_zero)
{
	init(0, 0);
	cr_assert(pcpu_charge_try(&ch, 0));
	cr_assert_not(pcpu_charge_try(&ch, 1));
	cr_assert_eq(pcpu_charge_reserved(&ch), 0);
	pcpu_charge_destroy(&ch);
}

/* Another CPU's stock holds the room: the try takes it back, no false failure. */
PCPU_TEST(charge, a_try_that_cannot_refill_takes_the_other_cpus_stocks)
{
	int cpus[2];

	if (pcpu_test_allowed_cpus(cpus, 2) < 2)
		cr_skip_test("needs two CPUs");
	init(1 << 20, 1 << 16);
	cr_assert(pcpu_test_pin(cpus[0]));
	cr_assert(pcpu_charge_try(&ch, 1000));
	pcpu_charge_uncharge(&ch, 1000); /* CPU 0 keeps up to 64 KiB */
	cr_assert_gt(stocks(), 0);
	cr_assert(pcpu_test_pin(cpus[1]));
	cr_assert(pcpu_charge_try(&ch, 1 << 20), "failed with %ld in other stocks",
		  (long)stocks());
	cr_assert_eq(pcpu_charge_usage(&ch), 1 << 20);
	cr_assert_not(pcpu_charge_try(&ch, 1));
	pcpu_charge_destroy(&ch);
}

/* ---- fork --------------------------------------------------------------- */

PCPU_TEST(charge, a_forked_child_keeps_exact_usage_and_the_limit)
{
	pid_t pid;
	int status;

	pcpu_test_pin_first();
	init(1 << 20, 1 << 12);
	cr_assert(pcpu_charge_try(&ch, 1000));
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		bool ok = pcpu_charge_usage(&ch) == 1000 &&
			  pcpu_charge_try(&ch, (1 << 20) - 1000) && !pcpu_charge_try(&ch, 1);

		pcpu_charge_drain(&ch);
		ok = ok && pcpu_charge_reserved(&ch) == 1 << 20;
		_exit(ok ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	cr_assert_eq(pcpu_charge_usage(&ch), 1000);
	pcpu_charge_destroy(&ch);
}

/* A child forked while the stocks are closed (above the limit) keeps them closed. */
PCPU_TEST(charge, a_child_forked_above_the_limit_keeps_the_stocks_closed)
{
	pid_t pid;
	int status;

	pcpu_test_pin_first();
	init(1000, 100);
	cr_assert(pcpu_charge_try(&ch, 600));
	cr_assert_eq(pcpu_charge_set_limit(&ch, 500), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		bool ok = !pcpu_charge_try(&ch, 0);

		pcpu_charge_uncharge(&ch, 20);
		ok = ok && !pcpu_charge_try(&ch, 20) && pcpu_charge_usage(&ch) == 580 &&
		     pcpu_charge_reserved(&ch) == 580;
		pcpu_charge_uncharge(&ch, 100);
		ok = ok && pcpu_charge_try(&ch, 20) && !pcpu_charge_try(&ch, 1);
		_exit(ok ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	cr_assert_eq(pcpu_charge_usage(&ch), 600);
	pcpu_charge_destroy(&ch);
}

/*
 * A fork while another thread is taking the stocks back: the child has the
 * stocks marked and the take's lock held by a thread it does not have. The
 * state is made here as the take leaves it after its marking step (lib/
 * charge.c: subtract TAKEN from the mark, hold ch.taking), then the fork.
 */
#define TAKEN (INT64_C(1) << 62)

PCPU_TEST(charge, a_fork_in_the_middle_of_a_take_leaves_the_child_a_finished_take)
{
	struct pcpu_charge_slot *slot;
	pid_t pid;
	int status, cpu = pcpu_test_pin_first();

	cr_assert_geq(cpu, 0);
	init(1 << 20, 1 << 12);
	cr_assert(pcpu_charge_try(&ch, 1000));
	cr_assert_gt(stocks(), 0);
	slot = (struct pcpu_charge_slot *)(void *)((char *)ch.slots + (size_t)cpu * PCPU_STRIDE);
	slot->mark -= TAKEN; /* as the take's first step */
	ch.taking = 1;
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* the take is finished: nothing marked, the lock free, nothing lost */
		bool ok;

		alarm(10); /* a take left held would make drain spin for ever */
		ok = ch.taking == 0 && slot->mark + ch.half - slot->charged >= 0 &&
			  pcpu_charge_usage(&ch) == 1000 &&
			  pcpu_charge_reserved(&ch) <= 1 << 20;

		pcpu_charge_drain(&ch);
		ok = ok && pcpu_charge_reserved(&ch) == 1000 &&
		     pcpu_charge_try(&ch, (1 << 20) - 1000) && !pcpu_charge_try(&ch, 1);
		_exit(ok ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	slot->mark += TAKEN; /* the parent's take, finished by hand */
	ch.taking = 0;
	cr_assert_eq(pcpu_charge_usage(&ch), 1000);
	pcpu_charge_destroy(&ch);
}

/* ---- many threads ------------------------------------------------------- */

#define LIMIT (INT64_C(1) << 24)

struct worker {
	pthread_t thread;
	unsigned int index;
	int64_t charged; /* this thread's shadow tally */
	uint64_t fails_at_room; /* failures while its own shadow said it fit: informative */
};

static volatile int stop_watch;
static int64_t watch_max;
static int allowed[64];
static int nr_allowed;

static void *watcher(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_watch, __ATOMIC_ACQUIRE)) {
		int64_t r = pcpu_charge_reserved(&ch);

		if (r > watch_max)
			watch_max = r;
	}
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
	/* a charge and its uncharge inside a handler: the stock survives it */
	if (pcpu_charge_try(&ch, 7))
		pcpu_charge_uncharge(&ch, 7);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = 1000 + w->index;
	long rounds = pcpu_test_iterations(100000);
	int64_t held[16] = { 0 };
	unsigned int nheld = 0;

	for (long i = 0; i < rounds; i++) {
		uint64_t r = pcpu_test_rand(&rng);
		/* mostly small (inline), sometimes above the window */
		int64_t a = r % 64 ? (int64_t)(r >> 8) % 8192 : (int64_t)(r >> 8) % (1 << 20);

		if (nr_allowed > 1 && r % 997 == 0)
			pcpu_test_pin(allowed[(r >> 20) % (uint64_t)nr_allowed]);
		if (nheld == 16 || (nheld && r % 3 == 0)) {
			nheld--;
			pcpu_charge_uncharge(&ch, held[nheld]);
			w->charged -= held[nheld];
		} else if (pcpu_charge_try(&ch, a)) {
			held[nheld++] = a;
			w->charged += a;
		}
	}
	/* exit holding what it holds: the stock stays with the CPU */
	return NULL;
}

PCPU_TEST(charge, many_threads_hopping_and_signalled_keep_usage_exact_and_under_the_limit)
{
	unsigned int n = 2 * pcpu_cpu_online() + 2;
	struct worker w[64];
	pthread_t watch;
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	int64_t exact = 0, usage, room;

	pcpu_test_skip_under_qemu();
	if (n > 64)
		n = 64;
	nr_allowed = pcpu_test_allowed_cpus(allowed, 64);
	init(LIMIT, 1 << 16);
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	stop_watch = 0;
	watch_max = 0;
	cr_assert_eq(pthread_create(&watch, NULL, watcher, NULL), 0);
	for (unsigned int i = 0; i < n; i++) {
		w[i] = (struct worker){ .index = i };
		cr_assert_eq(pthread_create(&w[i].thread, NULL, work, &w[i]), 0);
	}
	for (int k = 0; k < 200; k++) {
		pthread_kill(w[k % n].thread, SIGUSR1); /* may have exited: ESRCH is fine */
		usleep(100);
	}
	for (unsigned int i = 0; i < n; i++) {
		cr_assert_eq(pthread_join(w[i].thread, NULL), 0);
		exact += w[i].charged;
	}
	__atomic_store_n(&stop_watch, 1, __ATOMIC_RELEASE);
	pthread_join(watch, NULL);
	signal(SIGUSR1, SIG_DFL);

	usage = pcpu_charge_usage(&ch);
	cr_assert_eq(usage, exact, "usage %ld, threads charged %ld", (long)usage, (long)exact);
	cr_assert_leq(watch_max, LIMIT, "reserved reached %ld", (long)watch_max);
	cr_assert_leq(pcpu_charge_reserved(&ch), LIMIT);
	/* no false failure at quiescence, whatever stocks the threads left */
	room = LIMIT - usage;
	cr_assert(pcpu_charge_try(&ch, room), "try(%ld) failed at quiescence", (long)room);
	cr_assert_not(pcpu_charge_try(&ch, 1));
	pcpu_charge_uncharge(&ch, room);
	pcpu_charge_drain(&ch);
	cr_assert_eq(pcpu_charge_reserved(&ch), exact);
	pcpu_charge_destroy(&ch);
}
