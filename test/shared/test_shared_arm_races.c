/* SPDX-License-Identifier: MIT */
/*
 * Deterministic races of a segment's arming (docs/internals.md
 * [armed-segment]): a CPU's first add to a segment's item finds its pair
 * zero-filled, fails the fast path's check, and its slow path takes the
 * lock, puts the CPU's row in the segment's armed set (count, then bit),
 * arms the pair, adds and folds. At every instruction of that first add a
 * racer on another CPU reads the item (read, then sum, then the bound:
 * |read - sum| <= bound must hold while the add is in flight, and sum and
 * snapshot are the tally before or after it), then folds (fold_all, or
 * sync_if_delta_above(0)) and reads again. Folds take the segment's lock:
 * where the traced thread holds it at the stop, the racer's fold waits
 * for it after the stop (the child joins the racer before its checks). At
 * quiescence sum is exact, read within the bound, both rows in the set
 * and counted, their pairs armed, no row outside the set written, and no
 * pair past the threshold.
 *
 * Setup: the traced thread pinned to CPU a, the racer to CPU b, which has
 * added before (its row armed, BEFORE - 1 pending: its whole threshold).
 * The traced call adds 1 on a, whose row no add has reached. Checked to
 * catch a slow path that adds before arming and sets the row's bit before
 * counting it (|read 1 - sum 34| > bound 32 at stops 220-222 of 413).
 *
 * The driver is test/lib/race_sweep.h's. Skipped under valgrind, off
 * x86_64 (the registers), and with fewer than two CPUs.
 */
#include "shared_helpers.h"
#include "race_sweep.h"

#include <pthread.h>

TestSuite(shared_arm_races, .timeout = 240);

#define BEFORE INT64_C(33) /* the racer's adds before the traced one: 1 (arms), then 32 */
#define TRACED INT64_C(1)  /* the traced first add of its CPU */

enum racer_fold {
	FOLD_ALL,  /* pcpu_shared_fold_all() */
	FOLD_SYNC, /* pcpu_shared_sync_if_delta_above(s, 0, 0) */
};

/* What the child reports through a shared page. */
struct arm_page {
	struct pcpu_race_page race;
	int pin_failed;
	char racer_broke[160]; /* the racer's first broken oracle, if any */
	int folded_at_stop;    /* the lock was free at the stop: the racer folded there */
	/* the child's at quiescence */
	int64_t sum, read;
	uint64_t bound, threshold_max, max_pending, count, in_set;
	int unarmed_in_set, written_outside;
};

static struct arm_page *page;
static enum racer_fold racer_fold;
static struct pcpu_shared *s;
static int cpu_a, cpu_b;

/* Read, sum and bound, in that order, then a snapshot: within the bound, and either tally. */
static void racer_check(const char *when)
{
	int64_t read = pcpu_shared_read(s, 0), sum = pcpu_shared_sum(s, 0), values[1];
	uint64_t bound = pcpu_shared_error_bound(s, 0);

	if (page->racer_broke[0])
		return;
	if (sum != BEFORE && sum != BEFORE + TRACED)
		snprintf(page->racer_broke, sizeof(page->racer_broke),
			 "%s: sum %" PRId64 " is neither tally", when, sum);
	else if (pcpu_test_distance(read, sum) > bound)
		snprintf(page->racer_broke, sizeof(page->racer_broke),
			 "%s: |read %" PRId64 " - sum %" PRId64 "| > bound %" PRIu64, when, read, sum,
			 bound);
	else if (pcpu_shared_snapshot(s, values, NULL) != 0 ||
		 (values[0] != BEFORE && values[0] != BEFORE + TRACED))
		snprintf(page->racer_broke, sizeof(page->racer_broke),
			 "%s: snapshot %" PRId64 " is neither tally", when, values[0]);
}

static void racer_fold_now(void)
{
	if (racer_fold == FOLD_ALL)
		pcpu_shared_fold_all(s);
	else
		(void)pcpu_shared_sync_if_delta_above(s, 0, 0);
}

static void *racer(void *arg)
{
	pthread_mutex_t *lock = &shared_handle(s)->hdr->lock;

	(void)arg;
	if (!pcpu_test_pin(cpu_b))
		page->pin_failed = 1;
	pcpu_shared_add(s, 0, 1);          /* arms this row, folds */
	pcpu_shared_add(s, 0, BEFORE - 1); /* the fast path: pending */
	pcpu_race_racer_ready(&page->race);
	racer_check("at the stop");
	/* the traced thread is stopped: if it does not hold the lock, nothing takes it now */
	if (pthread_mutex_trylock(lock) == 0) {
		pthread_mutex_unlock(lock);
		racer_fold_now();
		racer_check("after the fold");
		page->folded_at_stop = 1;
		pcpu_race_racer_done(&page->race);
	} else {
		pcpu_race_racer_done(&page->race);
		racer_fold_now(); /* once the traced add unlocks */
		racer_check("after the fold, after the stop");
	}
	return NULL;
}

__attribute__((noinline, noipa, unused)) static void traced_call(void)
{
	pcpu_shared_add(s, 0, TRACED);
}

__attribute__((noinline, noipa, unused)) static void traced_done(void)
{
	__asm__ __volatile__("" ::: "memory");
}

static struct pcpu_race race;

__attribute__((unused)) static void child_main(void)
{
	static const struct pcpu_stat_item items[] = { { .name = "hits", .floor = 32 } };
	struct pcpu_shared_desc d = { .items = items, .nr_items = 1 };
	struct shared_handle *h;
	uint64_t worst = 0, set = 0;
	unsigned int row;
	pthread_t t;

	s = pcpu_shared_create(NULL, &d);
	if (!s)
		_exit(12);
	h = shared_handle(s);
	page->race.mode = s->mode;
	if (!pcpu_test_pin(cpu_a))
		page->pin_failed = 1;
	pcpu_race_start_racer(&page->race, &t, racer);
	pcpu_race_traced(&race, t);

	/* quiescence: the racer is joined */
	page->race.exact = BEFORE + TRACED;
	page->sum = pcpu_shared_sum(s, 0);
	page->read = pcpu_shared_read(s, 0);
	page->bound = pcpu_shared_error_bound(s, 0);
	page->threshold_max = h->central[0].threshold_max;
	for (row = 0; row < h->rows; row++) {
		const int64_t *pair = shared_pair(h, 0, row);
		bool in = shared_row_armed(h, row);
		uint64_t p = pcpu_test_distance(pair[0], pair[1] ? (int64_t)((uint64_t)pair[1] -
									 PCPU_SLOT_ARMED) : 0);

		worst = p > worst ? p : worst;
		set += in;
		page->unarmed_in_set |= in && pair[1] == 0;
		page->written_outside |= !in && (pair[0] || pair[1]);
	}
	page->max_pending = worst;
	page->count = h->armed->nr;
	page->in_set = set;
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

static long folded_at_stops;

static bool oracles_hold(char *why, size_t size)
{
	const struct arm_page *p = page;

	why[0] = '\0';
	folded_at_stops += p->folded_at_stop;
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
		snprintf(why, size, "a pair holds %" PRIu64 " pending > %" PRIu64, p->max_pending,
			 p->threshold_max);
	else if (p->count != p->in_set || p->count != 2)
		snprintf(why, size, "%" PRIu64 " counted, %" PRIu64 " in the set: two rows added",
			 p->count, p->in_set);
	else if (p->unarmed_in_set)
		snprintf(why, size, "a row in the set with its pair not armed");
	else if (p->written_outside)
		snprintf(why, size, "a row outside the set written");
	return why[0] == '\0';
}

static void assert_mode(void)
{
	pcpu_race_assert_mode(page->race.mode);
}

static void sweep(const char *name, enum racer_fold fold)
{
#if PCPU_RACE_HAVE_STEPS
	struct pcpu_race_totals t;
	int allowed[2];

	if (pcpu_test_allowed_cpus(allowed, 2) < 2)
		cr_skip_test("needs two CPUs");
	cpu_a = allowed[0];
	cpu_b = allowed[1];
	racer_fold = fold;
	folded_at_stops = 0;
	race = (struct pcpu_race){ .name = name, .page = (void **)&page,
				   .page_size = sizeof(*page), .child = child_main,
				   .call = traced_call, .done = traced_done, .at_stop = at_stop,
				   .oracles = oracles_hold, .whole = assert_mode };
	t = pcpu_race_sweep(&race);
	/* the first add takes the slow path: the lock, arming, the fold */
	cr_assert_gt(t.stops, 40, "%s: only %ld instructions in the first add", name, t.stops);
	cr_assert_gt(folded_at_stops, 0, "%s: the lock was never free at a stop", name);
	cr_assert_lt(folded_at_stops, t.stops, "%s: the lock was never held at a stop", name);
	pcpu_race_end(&race);
#else
	(void)name;
	(void)fold;
	cr_skip_test("reads the instruction pointer of x86_64 only");
#endif
}

PCPU_TEST(shared_arm_races, reads_and_fold_all_anywhere_in_a_cpus_first_add)
{
	sweep("first add(1) / read, fold_all, read", FOLD_ALL);
}

PCPU_TEST(shared_arm_races, reads_and_a_folding_sync_anywhere_in_a_cpus_first_add)
{
	sweep("first add(1) / read, sync(0), read", FOLD_SYNC);
}
