/* SPDX-License-Identifier: MIT */
/*
 * Stress tests of <percpu/stat.h>: more threads than CPUs, threads moved
 * between CPUs, thresholds small enough that folds (and folds racing with
 * adds, readers and other folds) happen all the time, and a shadow exact
 * tally per item and thread (the oracle). At quiescence every item's sum and
 * snapshot equal the tally and read is within error_bound of it; while the
 * writers run, sum and snapshot of a positive-only workload lie between the
 * total of adds completed before the call and that of adds started before
 * it returned (no fold counted twice, none missed).
 */
#include "stat_helpers.h"

#include <pthread.h>
#include <sched.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

TestSuite(stat_stress, .timeout = 240);

#define NR_ITEMS 30
#define MAX_THREADS 64

static unsigned int nr_threads(void)
{
	unsigned int n = 2 * pcpu_cpu_online() + 1;

	if (n < 5)
		n = 5;
	return n > MAX_THREADS ? MAX_THREADS : n;
}

/* A vm_stat-like set: 30 items in 8 groups of 3-4, updated a group at a time. */
static const uint32_t vm_groups[NR_ITEMS] = {
	1, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 0,
};

/* The items of group @g (1-8), and how many. */
static unsigned int group_items(uint32_t g, unsigned int *items)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < NR_ITEMS; i++)
		if (vm_groups[i] == g)
			items[n++] = i;
	return n;
}

/* Moves the calling thread to a pseudo-random CPU it may run on. */
static void migrate(const cpu_set_t *allowed, uint64_t *rng)
{
	int cpus[CPU_SETSIZE], n = 0;
	cpu_set_t one;

	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, allowed))
			cpus[n++] = cpu;
	if (n < 2)
		return;
	CPU_ZERO(&one);
	CPU_SET(cpus[pcpu_test_rand(rng) % (uint64_t)n], &one);
	sched_setaffinity(0, sizeof(one), &one);
}

/* ---- oracle per item ------------------------------------------------------ */

struct writer {
	pthread_t thread;
	struct pcpu_stat *s;
	uint64_t seed;
	long ops;
	bool migrate;
	bool big;
	int64_t tally[NR_ITEMS];
};

static cpu_set_t allowed_cpus;

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t rng = w->seed;

	for (long op = 0; op < w->ops; op++) {
		unsigned int items[NR_ITEMS];
		unsigned int n = group_items((uint32_t)(pcpu_test_rand(&rng) % 8) + 1, items);

		if (w->migrate && op % 997 == 0)
			migrate(&allowed_cpus, &rng);
		for (unsigned int k = 0; k < n; k++) {
			int64_t amount = (int64_t)(pcpu_test_rand(&rng) % 9) - 3;

			if (w->big && pcpu_test_rand(&rng) % 512 == 0)
				amount = ((int64_t)(pcpu_test_rand(&rng) % (1u << 31)) - (1 << 30)) *
					 (int64_t)(1 + pcpu_test_rand(&rng) % 4);
			pcpu_stat_add(w->s, items[k], amount);
			w->tally[items[k]] += amount;
		}
		if (op % 64 == 0) {
			pcpu_stat_add(w->s, NR_ITEMS - 1, 1);
			w->tally[NR_ITEMS - 1]++;
		}
	}
	return NULL;
}

/* Reads, syncs and folds of every kind while the writers run. */
struct meddler {
	pthread_t thread;
	struct pcpu_stat *s;
	volatile bool stop;
	long rounds;
};

static void *meddler_main(void *arg)
{
	struct meddler *m = arg;
	uint64_t rng = 99;
	int64_t values[NR_ITEMS];
	uint64_t bounds[NR_ITEMS];

	while (!__atomic_load_n(&m->stop, __ATOMIC_RELAXED)) {
		unsigned int item = (unsigned int)(pcpu_test_rand(&rng) % NR_ITEMS);

		switch (pcpu_test_rand(&rng) % 6) {
		case 0: (void)pcpu_stat_sum(m->s, item); break;
		case 1: cr_assert_eq(pcpu_stat_snapshot(m->s, values, bounds), 0); break;
		case 2: (void)pcpu_stat_sync_if_delta_above(m->s, item, pcpu_test_rand(&rng) % 200); break;
		case 3: pcpu_stat_fold_all(m->s); break;
		case 4: pcpu_registry_fold_all(); break;
		default: (void)pcpu_stat_read(m->s, item); break;
		}
		m->rounds++;
	}
	return NULL;
}

static void run_oracle(int64_t floor, uint32_t flags, bool big, unsigned int optimistic)
{
	unsigned int threads = nr_threads();
	struct pcpu_stat *s = stat_test_create(NR_ITEMS, vm_groups, floor, flags);
	struct writer *w = calloc(threads, sizeof(*w));
	struct meddler m = { .s = s };
	int64_t exact[NR_ITEMS] = { 0 }, values[NR_ITEMS];
	uint64_t bounds[NR_ITEMS];

	cr_assert_not_null(w);
	cr_assert_eq(sched_getaffinity(0, sizeof(allowed_cpus), &allowed_cpus), 0);
	pcpu_stat_debug_optimistic_tries(optimistic);
	for (unsigned int t = 0; t < threads; t++) {
		w[t] = (struct writer){ .s = s, .seed = 1000 + t, .ops = pcpu_test_iterations(60000),
					.migrate = t % 2 == 0, .big = big };
		cr_assert_eq(pthread_create(&w[t].thread, NULL, writer_main, &w[t]), 0);
	}
	cr_assert_eq(pthread_create(&m.thread, NULL, meddler_main, &m), 0);
	for (unsigned int t = 0; t < threads; t++) {
		pthread_join(w[t].thread, NULL);
		for (unsigned int i = 0; i < NR_ITEMS; i++)
			exact[i] += w[t].tally[i];
	}
	__atomic_store_n(&m.stop, true, __ATOMIC_RELAXED);
	pthread_join(m.thread, NULL);
	pcpu_stat_debug_optimistic_tries(4);

	stat_test_assert_exact(s, exact);
	cr_assert_eq(pcpu_stat_snapshot(s, values, bounds), 0);
	for (unsigned int i = 0; i < NR_ITEMS; i++) {
		cr_assert_eq(values[i], exact[i], "item %u: snapshot %" PRId64 " != %" PRId64, i,
			     values[i], exact[i]);
		cr_assert_eq(bounds[i], pcpu_stat_error_bound(s, i));
	}
	/* no fold left half done, no reader left a line frozen */
	for (unsigned int l = 0; l < pcpu_stat_debug_nr_lines(s); l++)
		cr_assert(pcpu_stat_debug_line_idle(s, l));
	pcpu_stat_fold_all(s);
	for (unsigned int i = 0; i < NR_ITEMS; i++)
		cr_assert_eq(pcpu_stat_read(s, i), exact[i], "item %u: read after fold_all", i);
	free(w);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat_stress, oracle_per_item_with_tiny_thresholds)
{
	run_oracle(2, 0, false, 4);
}

PCPU_TEST(stat_stress, oracle_per_item_with_default_thresholds_and_huge_amounts)
{
	run_oracle(0, 0, true, 4);
}

PCPU_TEST(stat_stress, oracle_per_item_one_per_line)
{
	run_oracle(3, PCPU_STAT_ONE_PER_LINE, true, 4);
}

PCPU_TEST(stat_stress, oracle_per_item_with_readers_that_always_freeze)
{
	run_oracle(2, 0, true, 0);
}

/* ---- reads while the writers run ------------------------------------------- */

struct window {
	struct pcpu_stat *s;
	pthread_t thread;
	uint64_t seed;
	long ops;
};

/* Totals of amounts added to item 0: started before the add, completed after it. */
static uint64_t started, completed;
static unsigned int writers_done;

static void *positive_writer(void *arg)
{
	struct window *w = arg;
	uint64_t rng = w->seed;

	for (long op = 0; op < w->ops; op++) {
		uint64_t amount = 1 + pcpu_test_rand(&rng) % 3;

		if (op % 997 == 0)
			migrate(&allowed_cpus, &rng);
		if (pcpu_test_rand(&rng) % 256 == 0)
			amount = 1 + pcpu_test_rand(&rng) % 100000;
		__atomic_fetch_add(&started, amount, __ATOMIC_SEQ_CST);
		pcpu_stat_add(w->s, 0, (int64_t)amount);
		__atomic_fetch_add(&completed, amount, __ATOMIC_SEQ_CST);
		/* the line mates fold with item 0 and make it fold */
		pcpu_stat_add(w->s, 1 + (unsigned int)(op % 3), op % 2 ? 1 : -1);
	}
	__atomic_fetch_add(&writers_done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void run_window(bool use_snapshot, unsigned int optimistic)
{
	static const uint32_t groups[] = { 1, 1, 1, 1, 2 };
	unsigned int threads = nr_threads();
	struct pcpu_stat *s = stat_test_create(5, groups, 2, 0);
	struct window *w = calloc(threads, sizeof(*w));
	long checks = 0;

	cr_assert_not_null(w);
	cr_assert_eq(sched_getaffinity(0, sizeof(allowed_cpus), &allowed_cpus), 0);
	started = completed = 0;
	writers_done = 0;
	pcpu_stat_debug_optimistic_tries(optimistic);
	for (unsigned int t = 0; t < threads; t++) {
		w[t] = (struct window){ .s = s, .seed = 77 + t, .ops = pcpu_test_iterations(100000) };
		cr_assert_eq(pthread_create(&w[t].thread, NULL, positive_writer, &w[t]), 0);
	}
	while (__atomic_load_n(&writers_done, __ATOMIC_SEQ_CST) < threads || checks < 10) {
		uint64_t lo = __atomic_load_n(&completed, __ATOMIC_SEQ_CST), hi;
		int64_t v, values[5];

		if (use_snapshot) {
			cr_assert_eq(pcpu_stat_snapshot(s, values, NULL), 0);
			v = values[0];
		} else {
			v = pcpu_stat_sum(s, 0);
		}
		hi = __atomic_load_n(&started, __ATOMIC_SEQ_CST);
		cr_assert(v >= 0 && (uint64_t)v >= lo && (uint64_t)v <= hi,
			  "read %" PRId64 " outside [%" PRIu64 ", %" PRIu64 "]", v, lo, hi);
		checks++;
	}
	for (unsigned int t = 0; t < threads; t++)
		pthread_join(w[t].thread, NULL);
	pcpu_stat_debug_optimistic_tries(4);
	cr_assert_eq(pcpu_stat_sum(s, 0), (int64_t)completed);
	cr_assert_geq(checks, 10);
	free(w);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat_stress, sum_while_folding_counts_every_fold_once)
{
	run_window(false, 4);
}

PCPU_TEST(stat_stress, snapshot_while_folding_counts_every_fold_once)
{
	run_window(true, 4);
}

PCPU_TEST(stat_stress, frozen_sum_while_folding_counts_every_fold_once)
{
	run_window(false, 0);
}

/* ---- bounds at every quiescent point ---------------------------------------- */

struct phased {
	pthread_t thread;
	struct pcpu_stat *s;
	pthread_barrier_t *barrier;
	uint64_t seed;
	int phases;
	int64_t tally[NR_ITEMS];
};

static void *phased_main(void *arg)
{
	struct phased *p = arg;
	uint64_t rng = p->seed;

	for (int phase = 0; phase < p->phases; phase++) {
		long n = pcpu_test_iterations(20000);

		for (long k = 0; k < n; k++) {
			unsigned int i = (unsigned int)(pcpu_test_rand(&rng) % NR_ITEMS);
			/* drift upward by phase, so thresholds grow, then shrink back */
			int64_t amount = (int64_t)(pcpu_test_rand(&rng) % 2001) - 1000 +
					 (phase < p->phases / 2 ? 600 : -600);

			pcpu_stat_add(p->s, i, amount);
			p->tally[i] += amount;
		}
		pthread_barrier_wait(p->barrier); /* quiescence */
		pthread_barrier_wait(p->barrier); /* checked */
	}
	return NULL;
}

PCPU_TEST(stat_stress, bounds_hold_per_item_at_every_quiescent_point)
{
	unsigned int threads = nr_threads();
	struct pcpu_stat *s = stat_test_create(NR_ITEMS, vm_groups, 0, 0);
	struct phased *p = calloc(threads, sizeof(*p));
	pthread_barrier_t barrier;
	int phases = 8;

	cr_assert_not_null(p);
	pthread_barrier_init(&barrier, NULL, threads + 1);
	for (unsigned int t = 0; t < threads; t++) {
		p[t] = (struct phased){ .s = s, .barrier = &barrier, .seed = 5 + t, .phases = phases };
		cr_assert_eq(pthread_create(&p[t].thread, NULL, phased_main, &p[t]), 0);
	}
	for (int phase = 0; phase < phases; phase++) {
		int64_t exact[NR_ITEMS] = { 0 };

		pthread_barrier_wait(&barrier);
		for (unsigned int t = 0; t < threads; t++)
			for (unsigned int i = 0; i < NR_ITEMS; i++)
				exact[i] += p[t].tally[i];
		stat_test_assert_exact(s, exact);
		for (unsigned int i = 0; i < NR_ITEMS; i++) {
			/* the bound counts the CPUs that added: armed ones [armed] */
			uint64_t armed = pcpu_stat_debug_armed(s);
			uint64_t bound = pcpu_stat_error_bound(s, i);
			uint64_t t = s->hot[i].threshold;

			cr_assert(armed >= 1 && armed <= pcpu_cpu_possible(), "%u CPUs armed",
				  (unsigned int)armed);
			cr_assert_leq((uint64_t)pcpu_test_distance(pcpu_stat_read(s, i), exact[i]),
				      bound);
			cr_assert_leq(t, PCPU_STAT_MAX_THRESH);
			cr_assert_leq(t * armed, bound);
			for (unsigned int cpu = 0; cpu < pcpu_cpu_possible(); cpu++)
				cr_assert_leq(pcpu_test_distance(pcpu_stat_debug_pending(s, i, cpu), 0),
					      bound / armed,
					      "item %u cpu %u: pending beyond the largest threshold",
					      i, cpu);
		}
		pthread_barrier_wait(&barrier);
	}
	for (unsigned int t = 0; t < threads; t++)
		pthread_join(p[t].thread, NULL);
	pthread_barrier_destroy(&barrier);
	free(p);
	pcpu_stat_destroy(s);
}

/* ---- adds from a signal handler ------------------------------------------- */

static struct pcpu_stat *signal_set;
static volatile sig_atomic_t signal_adds;

static void on_alarm(int sig)
{
	(void)sig;
	/* lands in the middle of adds, folds and slow paths of the same line */
	pcpu_stat_add(signal_set, 1, 7);
	pcpu_stat_add(signal_set, 0, 1 << 20);
	signal_adds = signal_adds + 1;
}

PCPU_TEST(stat_stress, adds_from_a_signal_handler_are_never_lost)
{
	static const uint32_t groups[] = { 1, 1 };
	struct itimerval every = { .it_interval = { 0, 50 }, .it_value = { 0, 50 } };
	struct itimerval off = { 0 };
	struct sigaction sa = { .sa_handler = on_alarm };
	long n = pcpu_test_iterations(3000000);
	int64_t exact0 = 0;

	signal_set = stat_test_create(2, groups, 4, 0);
	signal_adds = 0;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
	cr_assert_eq(setitimer(ITIMER_REAL, &every, NULL), 0);
	for (long k = 0; k < n; k++) {
		int64_t amount = k % 3 == 0 ? 5 : -1;

		pcpu_stat_add(signal_set, 0, amount);
		exact0 += amount;
	}
	cr_assert_eq(setitimer(ITIMER_REAL, &off, NULL), 0);
	/* a SIGALRM may still be pending: it must not run after the destroy */
	signal(SIGALRM, SIG_IGN);
	cr_assert_gt(signal_adds, 0, "the timer never fired");
	cr_assert_eq(pcpu_stat_sum(signal_set, 0), exact0 + (int64_t)signal_adds * (1 << 20));
	cr_assert_eq(pcpu_stat_sum(signal_set, 1), (int64_t)signal_adds * 7);
	pcpu_stat_destroy(signal_set);
}

/* ---- fork while other threads fold ------------------------------------------ */

struct forker_writer {
	pthread_t thread;
	struct pcpu_stat *s;
	volatile bool stop;
};

static void *fork_writer_main(void *arg)
{
	struct forker_writer *w = arg;
	uint64_t rng = 3;

	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		unsigned int i = (unsigned int)(pcpu_test_rand(&rng) % NR_ITEMS);

		pcpu_stat_add(w->s, i, (int64_t)(pcpu_test_rand(&rng) % 7) - 2);
		if (pcpu_test_rand(&rng) % 1000 == 0)
			(void)pcpu_stat_sum(w->s, i);
	}
	return NULL;
}

/* Creates and destroys sets: a grace period is often in progress at fork. */
static void *set_churn_main(void *arg)
{
	struct forker_writer *w = arg;

	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		struct pcpu_stat *t = stat_test_create(3, NULL, 0, 0);

		pcpu_stat_add(t, 1, 5);
		pcpu_stat_destroy(t);
	}
	return NULL;
}

/*
 * Forks while writers fold, the refresher folds every set inside an RCU
 * read-side section, and another thread's destroy waits for a grace period:
 * the fork handlers must neither deadlock nor leave a fold half done. (Not
 * the churn under valgrind: a child's leak check at _exit would report the
 * set a vanished churn thread was creating.)
 */
PCPU_TEST(stat_stress, fork_while_folding_leaves_the_child_consistent)
{
	/* static: reachable from the forked children, whose leak check runs at _exit */
	static struct forker_writer w[MAX_THREADS], churn;
	unsigned int threads = nr_threads();
	struct pcpu_stat *s = stat_test_create(NR_ITEMS, vm_groups, 2, 0);
	int forks = pcpu_test_small() ? 3 : 30;

	cr_assert_eq(pcpu_refresher_start(1), 0);
	churn = (struct forker_writer){ .stop = pcpu_test_on_valgrind() };
	if (!churn.stop)
		cr_assert_eq(pthread_create(&churn.thread, NULL, set_churn_main, &churn), 0);
	for (unsigned int t = 0; t < threads; t++) {
		w[t] = (struct forker_writer){ .s = s };
		cr_assert_eq(pthread_create(&w[t].thread, NULL, fork_writer_main, &w[t]), 0);
	}
	for (int f = 0; f < forks; f++) {
		int status;
		pid_t pid;

		usleep(2000);
		pid = fork();
		cr_assert_neq(pid, -1);
		if (pid == 0) {
			int64_t before[NR_ITEMS], values[NR_ITEMS];
			int bad = 0;

			alarm(20); /* a fold left half done would hang the child */
			for (unsigned int i = 0; i < NR_ITEMS; i++)
				before[i] = pcpu_stat_sum(s, i);
			if (pcpu_stat_snapshot(s, values, NULL) != 0)
				_exit(2);
			pcpu_stat_fold_all(s);
			for (unsigned int i = 0; i < NR_ITEMS; i++) {
				bad |= values[i] != before[i];
				bad |= pcpu_stat_read(s, i) != before[i];
				bad |= pcpu_stat_sum(s, i) != before[i];
				pcpu_stat_add(s, i, 1000);
				bad |= pcpu_stat_sum(s, i) != before[i] + 1000;
			}
			for (unsigned int l = 0; l < pcpu_stat_debug_nr_lines(s); l++)
				bad |= !pcpu_stat_debug_line_idle(s, l);
			_exit(bad ? 1 : 0);
		}
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "fork %d: child status %#x", f, status);
	}
	for (unsigned int t = 0; t < threads; t++) {
		__atomic_store_n(&w[t].stop, true, __ATOMIC_RELAXED);
		pthread_join(w[t].thread, NULL);
	}
	if (!churn.stop) {
		__atomic_store_n(&churn.stop, true, __ATOMIC_RELAXED);
		pthread_join(churn.thread, NULL);
	}
	pcpu_refresher_stop();
	for (unsigned int l = 0; l < pcpu_stat_debug_nr_lines(s); l++)
		cr_assert(pcpu_stat_debug_line_idle(s, l),
			     "the parent kept a line frozen after fork");
	pcpu_stat_destroy(s);
}

/* ---- monotone reads while writers and a folder run ------------------------- */

/*
 * Three items in one central line: item 0 with the default options (its
 * threshold grows with the value), item 1 with a threshold near a floor of
 * 8 (its writers take the slow path every few adds), item 2 a line mate
 * that every fold of the line moves too. Every update has the same sign.
 */
#define MONO_ITEMS 3

struct one_sign_writer {
	struct pcpu_stat *s;
	pthread_t thread;
	uint64_t seed;
	long ops;
	int sign;
	int64_t tally[MONO_ITEMS];
};

static void *add_one_sign(void *arg)
{
	struct one_sign_writer *w = arg;

	for (long op = 0; op < w->ops; op++) {
		uint64_t r = pcpu_test_rand(&w->seed);
		int64_t a = w->sign * (int64_t)(r % 8 + (r % 512 == 0 ? 100000 : 0));
		unsigned int mate = 2 - (unsigned int)(op % 2); /* item 1 or 2 */

		if (op % 997 == 0)
			migrate(&allowed_cpus, &w->seed);
		pcpu_stat_add(w->s, 0, a);
		w->tally[0] += a;
		pcpu_stat_add(w->s, mate, a);
		w->tally[mate] += a;
	}
	return NULL;
}

struct monotone_side {
	struct pcpu_stat *s;
	pthread_t thread;
	volatile bool *stop;
	long rounds;
	struct pcpu_test_monotone read[MONO_ITEMS], sum[MONO_ITEMS], sync[MONO_ITEMS];
};

/* Folds every CPU, continuously, three ways; watches what sync returns. */
static void *fold_every_cpu_nonstop(void *arg)
{
	struct monotone_side *f = arg;

	while (!__atomic_load_n(f->stop, __ATOMIC_ACQUIRE)) {
		pcpu_stat_fold_all(f->s);
		for (unsigned int k = 0; k < MONO_ITEMS; k++)
			pcpu_test_monotone_see(&f->sync[k],
					       pcpu_stat_sync_if_delta_above(f->s, k, 0));
		pcpu_registry_fold_all();
		/* its only writer; read by the test to start the writers */
		__atomic_store_n(&f->rounds, f->rounds + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Watches its own successive read() and sum() of each item. */
static void *watch_reads(void *arg)
{
	struct monotone_side *r = arg;

	while (!__atomic_load_n(r->stop, __ATOMIC_ACQUIRE)) {
		for (unsigned int k = 0; k < MONO_ITEMS; k++) {
			pcpu_test_monotone_see(&r->read[k], pcpu_stat_read(r->s, k));
			pcpu_test_monotone_see(&r->sum[k], pcpu_stat_sum(r->s, k));
		}
		__atomic_store_n(&r->rounds, r->rounds + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void assert_side_monotone(const struct monotone_side *s, const char *who)
{
	cr_assert_gt(s->rounds, 0, "%s never ran", who);
	for (unsigned int k = 0; k < MONO_ITEMS; k++) {
		const struct pcpu_test_monotone *r = &s->read[k], *m = &s->sum[k];

		cr_assert_eq(r->backs, 0,
			     "%s, item %u: read() went back %ld times; worst %" PRIu64 " (%" PRId64
			     " -> %" PRId64 ")",
			     who, k, r->backs, r->worst, r->worst_from, r->worst_to);
		cr_assert_eq(m->backs, 0,
			     "%s, item %u: sum() went back %ld times; worst %" PRIu64 " (%" PRId64
			     " -> %" PRId64 ")",
			     who, k, m->backs, m->worst, m->worst_from, m->worst_to);
		cr_assert_eq(s->sync[k].backs, 0,
			     "%s, item %u: sync_if_delta_above() went back %ld times; worst %" PRIu64,
			     who, k, s->sync[k].backs, s->sync[k].worst);
	}
}

/*
 * More writers than CPUs add amounts of @sign, a folder folds every CPU
 * without a pause, and two readers each check that their own successive
 * read() and sum() of every item never move against @sign.
 */
static void assert_reads_monotone_while_writers_and_a_folder_run(int sign)
{
	const struct pcpu_stat_item items[MONO_ITEMS] = {
		{ .name = "default" },
		{ .name = "tight", .accuracy = PCPU_STAT_MAX_ACCURACY, .floor = 8 },
		{ .name = "mate" },
	};
	const struct pcpu_stat_desc desc = { .items = items, .nr_items = MONO_ITEMS };
	unsigned int threads = nr_threads();
	struct pcpu_stat *s = pcpu_stat_create(&desc);
	struct one_sign_writer *w = calloc(threads, sizeof(*w));
	struct monotone_side side[3];
	volatile bool stop = false;
	int64_t exact[MONO_ITEMS] = { 0 };

	cr_assert_not_null(s, "pcpu_stat_create: %s", strerror(errno));
	cr_assert_not_null(w);
	cr_assert_eq(sched_getaffinity(0, sizeof(allowed_cpus), &allowed_cpus), 0);
	for (int i = 0; i < 3; i++) {
		side[i] = (struct monotone_side){ .s = s, .stop = &stop };
		for (unsigned int k = 0; k < MONO_ITEMS; k++) {
			side[i].read[k] = pcpu_test_monotone(sign);
			side[i].sum[k] = pcpu_test_monotone(sign);
			side[i].sync[k] = pcpu_test_monotone(sign);
		}
	}
	cr_assert_eq(pthread_create(&side[0].thread, NULL, fold_every_cpu_nonstop, &side[0]), 0);
	cr_assert_eq(pthread_create(&side[1].thread, NULL, watch_reads, &side[1]), 0);
	cr_assert_eq(pthread_create(&side[2].thread, NULL, watch_reads, &side[2]), 0);
	/* the writers start once every side thread has run a round (none checks nothing) */
	for (int i = 0; i < 3; i++)
		while (!__atomic_load_n(&side[i].rounds, __ATOMIC_ACQUIRE))
			sched_yield();
	for (unsigned int t = 0; t < threads; t++) {
		w[t] = (struct one_sign_writer){ .s = s, .seed = 31 + 7919 * t, .sign = sign,
						 .ops = pcpu_test_iterations(500000) };
		cr_assert_eq(pthread_create(&w[t].thread, NULL, add_one_sign, &w[t]), 0);
	}
	for (unsigned int t = 0; t < threads; t++) {
		cr_assert_eq(pthread_join(w[t].thread, NULL), 0);
		for (unsigned int k = 0; k < MONO_ITEMS; k++)
			exact[k] += w[t].tally[k];
	}
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pthread_join(side[i].thread, NULL), 0);
	assert_side_monotone(&side[0], "the folder");
	assert_side_monotone(&side[1], "reader 1");
	assert_side_monotone(&side[2], "reader 2");
	stat_test_assert_exact(s, exact);
	free(w);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat_stress, reads_never_drop_while_positive_writers_and_a_folder_run)
{
	assert_reads_monotone_while_writers_and_a_folder_run(1);
}

PCPU_TEST(stat_stress, reads_never_rise_while_negative_writers_and_a_folder_run)
{
	assert_reads_monotone_while_writers_and_a_folder_run(-1);
}
