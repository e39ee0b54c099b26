/* SPDX-License-Identifier: MIT */
/*
 * A stat line's folding walk and its budget (pcpu_stat_fold_line(),
 * pcpu_fold_walk_budget() in lib/base/fold.h) on 64 CPUs of the library's
 * CPU model: every armed CPU holds the maximum M pending on item 0 and -M
 * on item 1, an item of the same line; a folding sync walks the line, and
 * the test hook, after each CPU's take, refills that CPU's words with +M
 * and -M again (its owner adding at once). At every such point each
 * item's read() must lag its exact value (a shadow tally: sum() would wait
 * for the walk's own fold section) by at most error_bound() plus the
 * budget (an eighth of the bound, 8 M here), and the walk must credit each
 * central value about once a budget's worth: at most 64 M / 8 M + 1 = 9
 * times, not once per CPU. Crediting once at the end fails the first
 * check, crediting every CPU the second.
 */
#include "stat_helpers.h" /* first: _GNU_SOURCE */

#include "base/armset.h"
#include "base/cpu_internal.h"
#include "base/fold.h"

#define MODEL_CPUS 64u
#define ITEMS 2u

static int model_err = 1;

/* before the library's first look at its CPUs (see test/counter/test_walk_budget.c) */
__attribute__((constructor(101))) static void set_model(void)
{
	model_err = pcpu_cpu_model(MODEL_CPUS, MODEL_CPUS);
}

static struct pcpu_stat *set;
static unsigned int walked_line;
static int64_t want[ITEMS];   /* what each CPU holds pending of each item: +M, -M */
static int64_t exact[ITEMS];  /* the shadow tally: every delta the test put in */
static int64_t last_read[ITEMS];
static uint64_t bound[ITEMS], limit[ITEMS], worst_gap[ITEMS];
static unsigned int takes, credits[ITEMS];

/*
 * CPU @cpu's word of @item, armed as stat_fold.c's arm_cpu() leaves it (the
 * CPU counted and in the set, every word's mark stored armed), then with
 * @pending pending; the shadow tally follows.
 */
static void set_pending(unsigned int cpu, unsigned int item, int64_t pending)
{
	struct stat_set *s = set_of(set);
	uint64_t *words = cpu_copy(set->words, cpu), *w = &words[set->hot[item].slot], snap;

	if (!pcpu_armset_has(s->armset, cpu)) {
		pcpu_armset_join(s->armset, &s->armed, cpu);
		for (unsigned int i = 0; i < set->nr_items; i++) {
			pcpu_word_snap(&words[set->hot[i].slot], &snap);
			pcpu_word_arm(&words[set->hot[i].slot], &snap);
		}
	}
	pcpu_word_snap(w, &snap);
	exact[item] += pending - pcpu_word_pending(&snap);
	__atomic_store_n(w, (snap & ~(uint64_t)UINT32_MAX) |
			    (uint32_t)(pcpu_word_mark(snap) + (uint32_t)pending),
			 __ATOMIC_RELAXED);
}

/* After the walk took @cpu's deltas of the line: its owner adds again, then the lags. */
static void after_take(struct pcpu_stat *walked, unsigned int line, unsigned int cpu)
{
	cr_assert_eq(walked, set);
	cr_assert_eq(line, walked_line);
	takes++;
	for (unsigned int i = 0; i < ITEMS; i++) {
		int64_t read;
		uint64_t gap;

		cr_assert_eq(pcpu_stat_debug_pending(set, i, cpu), 0, "CPU %u item %u taken", cpu,
			     i);
		set_pending(cpu, i, want[i]);
		read = pcpu_stat_read(set, i);
		if (read != last_read[i])
			credits[i]++;
		last_read[i] = read;
		gap = pcpu_test_distance(read, exact[i]);
		if (gap > worst_gap[i])
			worst_gap[i] = gap;
		cr_assert_leq(gap, limit[i],
			      "item %u after CPU %u: |read %" PRId64 " - exact %" PRId64 "| = %" PRIu64
			      " > error_bound + budget = %" PRIu64,
			      i, cpu, read, exact[i], gap, limit[i]);
	}
}

Test(stat_walk_budget, lag_and_credits)
{
	struct stat_set *s;
	int64_t m, synced;

	cr_assert_eq(model_err, 0, "pcpu_cpu_model(%u, %u): %d", MODEL_CPUS, MODEL_CPUS, model_err);
	set = stat_test_create(ITEMS, NULL, 0, 0);
	s = set_of(set);
	walked_line = pcpu_stat_debug_line(set, 0);
	cr_assert_eq(pcpu_stat_debug_line(set, 1), walked_line, "both items on one line");
	m = (int64_t)set->hot[0].threshold;
	cr_assert_gt(m, 0);
	want[0] = m;
	want[1] = -m;
	for (unsigned int i = 0; i < ITEMS; i++)
		cr_assert_eq(s->threshold_max[i], (uint64_t)m, "item %u: the maximum is M", i);
	for (unsigned int cpu = 0; cpu < MODEL_CPUS; cpu++)
		for (unsigned int i = 0; i < ITEMS; i++)
			set_pending(cpu, i, want[i]);
	for (unsigned int i = 0; i < ITEMS; i++) {
		bound[i] = pcpu_stat_error_bound(set, i);
		cr_assert_eq(bound[i], MODEL_CPUS * (uint64_t)m, "64 armed CPUs at M = %" PRId64, m);
		/* pcpu_fold_walk_budget()'s, on more than 8 CPUs: an eighth of the bound */
		limit[i] = bound[i] + bound[i] / 8;
		last_read[i] = pcpu_stat_read(set, i);
		cr_assert_eq(last_read[i], 0);
	}

	pcpu_stat_debug_walk_hook = after_take;
	synced = pcpu_stat_sync_if_delta_above(set, 0, 0);
	pcpu_stat_debug_walk_hook = NULL;

	cr_assert_eq(takes, MODEL_CPUS, "the walk folded %u of %u CPUs", takes, MODEL_CPUS);
	cr_assert_eq(synced, 2 * MODEL_CPUS * m, "sync returns exact, refills included");
	cr_assert(pcpu_stat_debug_line_idle(set, walked_line), "the walk left its fold section");
	for (unsigned int i = 0; i < ITEMS; i++) {
		int64_t read = pcpu_stat_read(set, i);

		cr_assert_eq(read, MODEL_CPUS * want[i], "item %u: every delta taken is credited", i);
		cr_assert_eq(pcpu_stat_sum(set, i), exact[i], "item %u: and the refills are pending",
			     i);
		cr_assert_eq(exact[i], 2 * MODEL_CPUS * want[i]);
		/* the final credit comes after the last hook call: count it here */
		credits[i] += read != last_read[i];
		cr_assert_leq(credits[i], MODEL_CPUS / 8 + 1, "item %u: %u credits for %u CPUs", i,
			      credits[i], MODEL_CPUS);
		cr_assert_gt(worst_gap[i], bound[i] + (uint64_t)m,
			     "item %u: the walk used its budget: worst lag %" PRIu64 ", bound %" PRIu64,
			     i, worst_gap[i], bound[i]);
	}
	pcpu_stat_destroy(set);
}
