/* SPDX-License-Identifier: MIT */
/*
 * Deterministic races of arming (docs/internals.md [armed]): a CPU's first
 * add to a counter finds its slot zero-filled, fails the fast path's check,
 * and its slow path records the CPU in the counter's armed set, counts it,
 * arms the slot and adds once more. At every instruction of that first add
 * a racer on another CPU reads the counter (read, then sum, then the
 * bound: |read - sum| <= bound must hold while the add is in flight, and
 * sum is the tally before or after it), then folds every CPU (the
 * refresher's pass, or sync_if_delta_above(0)), then reads again. At
 * quiescence sum is exact, read within the bound, every armed CPU in the
 * set and counted, and no slot past the threshold.
 *
 * Setup: the traced thread pinned to CPU a, the racer to CPU b, which has
 * added BEFORE (its slot armed, the amount pending). The traced call adds
 * 1 on a, whose slot no add has reached. On the atomic path (forced) the
 * slots are the two threads' own. The same sweeps run on a stat set's item,
 * whose first add on a CPU arms all of that CPU's words.
 *
 * The driver is test/lib/race_sweep.h's. Skipped under valgrind, off
 * x86_64 (the registers), and with fewer than two CPUs.
 */
#include "helpers.h"
#include "race_sweep.h"

#include <pthread.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/registry.h>
#include <percpu/stat.h>

#include "base/armset.h"

TestSuite(arm_races, .timeout = 240);

#define BEFORE INT64_C(32) /* the racer's add, before the traced one: its whole threshold */
#define TRACED INT64_C(1) /* the traced first add of its CPU */

enum racer_fold {
	FOLD_ALL,  /* pcpu_registry_fold_all(): the refresher's pass */
	FOLD_SYNC, /* sync_if_delta_above(0) */
};

enum unit {
	UNIT_COUNTER, /* a counter */
	UNIT_STAT,    /* item 0 of a stat set of two */
};

/* What the child reports through a shared page. */
struct arm_page {
	struct pcpu_race_page race;
	int pin_failed;
	/* the racer's oracles at the stop: the first broken one, if any */
	char racer_broke[160];
	/* the child's at quiescence */
	int64_t sum, read;
	uint64_t bound, threshold_max, max_pending;
	uint32_t armed, in_set;
	int traced_armed; /* the traced thread's slot is armed */
};

static struct arm_page *page;
static enum racer_fold racer_fold;
static enum unit unit;
static struct pcpu_counter c;
static struct pcpu_stat *set;
static int cpu_a, cpu_b;

static void unit_add(int64_t amount)
{
	if (unit == UNIT_COUNTER)
		pcpu_counter_add(&c, amount);
	else
		pcpu_stat_add(set, 0, amount);
}

static int64_t unit_read(void)
{
	return unit == UNIT_COUNTER ? pcpu_counter_read(&c) : pcpu_stat_read(set, 0);
}

static int64_t unit_sum(void)
{
	return unit == UNIT_COUNTER ? pcpu_counter_sum(&c) : pcpu_stat_sum(set, 0);
}

static uint64_t unit_bound(void)
{
	return unit == UNIT_COUNTER ? pcpu_counter_error_bound(&c) : pcpu_stat_error_bound(set, 0);
}

static void unit_sync(void)
{
	if (unit == UNIT_COUNTER)
		(void)pcpu_counter_sync_if_delta_above(&c, 0);
	else
		(void)pcpu_stat_sync_if_delta_above(set, 0, 0);
}

static struct pcpu_slot *slot_of(unsigned int cpu)
{
	return (struct pcpu_slot *)(void *)((char *)c.slots + (size_t)cpu * PCPU_STRIDE);
}

/* Read, sum and bound, in that order, at the stop: within the bound, and either tally. */
static void racer_check(const char *when)
{
	int64_t read = unit_read(), sum = unit_sum();
	uint64_t bound = unit_bound();

	if (page->racer_broke[0])
		return;
	if (sum != BEFORE && sum != BEFORE + TRACED)
		snprintf(page->racer_broke, sizeof(page->racer_broke),
			 "%s: sum %" PRId64 " is neither tally", when, sum);
	else if (pcpu_test_distance(read, sum) > bound)
		snprintf(page->racer_broke, sizeof(page->racer_broke),
			 "%s: |read %" PRId64 " - sum %" PRId64 "| > bound %" PRIu64, when, read, sum,
			 bound);
}

static void *racer(void *arg)
{
	(void)arg;
	if (!pcpu_test_pin(cpu_b))
		page->pin_failed = 1;
	unit_add(BEFORE);
	pcpu_race_racer_ready(&page->race);
	racer_check("before the fold");
	if (racer_fold == FOLD_ALL)
		pcpu_registry_fold_all();
	else
		unit_sync();
	racer_check("after the fold");
	pcpu_race_racer_done(&page->race);
	return NULL;
}

__attribute__((noinline, noipa, unused)) static void traced_call(void)
{
	unit_add(TRACED);
}

__attribute__((noinline, noipa, unused)) static void traced_done(void)
{
	__asm__ __volatile__("" ::: "memory");
}

static struct pcpu_race race;

__attribute__((unused)) static void child_main(void)
{
	uint64_t worst = 0;
	uint32_t in_set = 0;
	pthread_t t;

	static const struct pcpu_stat_item items[] = { { .name = "a" }, { .name = "b" } };

	if (pcpu_counter_init(&c, 0) != 0)
		_exit(12);
	set = pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items, .nr_items = 2 });
	if (!set)
		_exit(12);
	page->race.mode = c.mode;
	if (!pcpu_test_pin(cpu_a))
		page->pin_failed = 1;
	pcpu_race_start_racer(&page->race, &t, racer);
	pcpu_race_traced(&race, t);

	/* quiescence: the racer is joined */
	page->race.exact = BEFORE + TRACED;
	page->sum = unit_sum();
	page->read = unit_read();
	page->bound = unit_bound();
	if (unit == UNIT_STAT) {
		/* two CPUs armed, at the threshold near zero: 2 x 32 */
		page->threshold_max = BEFORE;
		page->armed = page->in_set = (uint32_t)(page->bound / BEFORE);
		page->traced_armed = 1;
		page->race.child_ok = 1;
		_exit(0);
	}
	page->threshold_max = c.threshold_max;
	for (unsigned int cpu = 0; cpu < pcpu_cpu_possible(); cpu++) {
		uint64_t p = pcpu_test_slot_distance(slot_of(cpu)->value, slot_of(cpu)->mark);

		worst = p > worst ? p : worst;
		in_set += pcpu_armset_has(c.armset, cpu);
		if (slot_of(cpu)->mark && !pcpu_armset_has(c.armset, cpu))
			_exit(16); /* armed, not in the set */
	}
	page->max_pending = worst;
	page->armed = c.armed;
	page->in_set = in_set;
	page->traced_armed = c.mode == PCPU_CPU_RSEQ ? slot_of((unsigned int)cpu_a)->mark != 0 : 1;
	page->race.child_ok = 1;
	_exit(0);
}

#if PCPU_RACE_HAVE_STEPS
/* The racer runs on another CPU beside the traced thread, which runs on. */
static bool at_stop(struct pcpu_race_run *run)
{
	pcpu_race_let_act(&page->race, run, NULL);
	return false;
}
#endif

static bool oracles_hold(char *why, size_t size)
{
	const struct arm_page *p = page;

	why[0] = '\0';
	if (p->pin_failed)
		snprintf(why, size, "a thread could not pin");
	else if (p->racer_broke[0])
		snprintf(why, size, "%s", p->racer_broke);
	else if (p->sum != p->race.exact)
		snprintf(why, size, "sum %" PRId64 " != exact %" PRId64, p->sum, p->race.exact);
	else if (pcpu_test_distance(p->read, p->sum) > p->bound)
		snprintf(why, size, "|read %" PRId64 " - sum %" PRId64 "| > bound %" PRIu64, p->read,
			 p->sum, p->bound);
	else if (p->max_pending > p->threshold_max)
		snprintf(why, size, "a slot holds %" PRIu64 " pending > %" PRIu64, p->max_pending,
			 p->threshold_max);
	else if (p->armed != p->in_set || p->armed != 2)
		snprintf(why, size, "%u armed, %u in the set: two slots added", p->armed, p->in_set);
	else if (!p->traced_armed)
		snprintf(why, size, "the traced CPU's slot is not armed");
	return why[0] == '\0';
}

static void assert_mode(void)
{
	pcpu_race_assert_mode(page->race.mode);
}

static void sweep(const char *name, enum unit what, enum racer_fold fold)
{
#if PCPU_RACE_HAVE_STEPS
	struct pcpu_race_totals t;
	int allowed[2];

	if (pcpu_test_allowed_cpus(allowed, 2) < 2)
		cr_skip_test("needs two CPUs");
	cpu_a = allowed[0];
	cpu_b = allowed[1];
	racer_fold = fold;
	unit = what;
	race = (struct pcpu_race){ .name = name, .page = (void **)&page,
				   .page_size = sizeof(*page), .child = child_main,
				   .call = traced_call, .done = traced_done, .at_stop = at_stop,
				   .oracles = oracles_hold, .whole = assert_mode };
	t = pcpu_race_sweep(&race);
	/* the first add takes the slow path: arming is most of its instructions */
	cr_assert_gt(t.stops, 40, "%s: only %ld instructions in the first add", name, t.stops);
	pcpu_race_end(&race);
#else
	(void)name;
	(void)what;
	(void)fold;
	cr_skip_test("reads the instruction pointer of x86_64 only");
#endif
}

PCPU_TEST(arm_races, reads_and_the_refreshers_pass_anywhere_in_a_cpus_first_add)
{
	sweep("first add(1) / read, fold_all, read", UNIT_COUNTER, FOLD_ALL);
}

PCPU_TEST(arm_races, reads_and_a_folding_sync_anywhere_in_a_cpus_first_add)
{
	sweep("first add(1) / read, sync(0), read", UNIT_COUNTER, FOLD_SYNC);
}

PCPU_TEST(arm_races, reads_and_the_refreshers_pass_anywhere_in_a_cpus_first_stat_add)
{
	sweep("stat: first add(1) / read, fold_all, read", UNIT_STAT, FOLD_ALL);
}

PCPU_TEST(arm_races, reads_and_a_folding_sync_anywhere_in_a_cpus_first_stat_add)
{
	sweep("stat: first add(1) / read, sync(0), read", UNIT_STAT, FOLD_SYNC);
}
