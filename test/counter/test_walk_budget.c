/* SPDX-License-Identifier: MIT */
/*
 * A folding walk's budget (fold_all(), pcpu_fold_walk_budget() in
 * lib/base/fold.h) on 64 CPUs of the library's CPU model: every armed CPU
 * holds the maximum M pending, the walk folds each, and the test hook,
 * after each CPU's take, refills that CPU's slot with M again (its owner
 * adding at once). At every such point read() must lag sum() by at most
 * error_bound() plus the budget (an eighth of the bound, 8 M here), and
 * the walk must credit central about once a budget's worth: at most
 * 64 M / 8 M + 1 = 9 times, not once per CPU or two. Crediting once at the
 * end fails the first check, crediting every M the second.
 */
#include "pcpu_test.h" /* first: _GNU_SOURCE */

#include <percpu/counter.h>

#include "base/armset.h"
#include "base/cpu_internal.h"
#include "base/fold.h"
#include "counter/counter_internal.h"
#include "helpers.h"

#define MODEL_CPUS 64u

static int model_err = 1;

/* before the library's first look at its CPUs (see test_floor_at_scale.c) */
__attribute__((constructor(101))) static void set_model(void)
{
	model_err = pcpu_cpu_model(MODEL_CPUS, MODEL_CPUS);
}

static struct pcpu_counter c;
static int64_t m; /* the maximum threshold */
static uint64_t worst_gap, limit;
static unsigned int takes, credits;
static int64_t last_read;

/* CPU @cpu's slot, armed as counter.c's arm() leaves it, then @pending pending. */
static void set_pending(unsigned int cpu, int64_t pending)
{
	int64_t *slot = &((struct pcpu_slot *)cpu_copy(c.slots, cpu))->value, snap[2];

	pcpu_armed_snap(slot, snap);
	if (!pcpu_armed_armed(snap)) {
		pcpu_armset_join(c.armset, &c.armed, cpu);
		pcpu_armed_arm(slot, snap);
		pcpu_armed_snap(slot, snap);
	}
	__atomic_store_n(slot, (int64_t)((uint64_t)pcpu_armed_mark(snap[1]) + (uint64_t)pending),
			 __ATOMIC_RELAXED);
}

/* After the walk took @cpu's delta: its owner adds M again, then the lag is measured. */
static void after_take(struct pcpu_counter *walked, unsigned int cpu)
{
	uint64_t gap;

	cr_assert_eq(walked, &c);
	takes++;
	set_pending(cpu, m);
	if (pcpu_counter_read(&c) != last_read)
		credits++;
	last_read = pcpu_counter_read(&c);
	gap = pcpu_test_distance(last_read, pcpu_counter_sum(&c));
	if (gap > worst_gap)
		worst_gap = gap;
	cr_assert_leq(gap, limit, "after CPU %u: |read %" PRId64 " - sum %" PRId64 "| = %" PRIu64
		      " > error_bound + budget = %" PRIu64, cpu, last_read, pcpu_counter_sum(&c),
		      gap, limit);
}

Test(walk_budget, lag_and_credits)
{
	uint64_t bound, budget;
	int64_t synced;

	cr_assert_eq(model_err, 0, "pcpu_cpu_model(%u, %u): %d", MODEL_CPUS, MODEL_CPUS, model_err);
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	m = (int64_t)c.threshold_max;
	cr_assert_gt(m, 0);
	for (unsigned int cpu = 0; cpu < MODEL_CPUS; cpu++)
		set_pending(cpu, m);
	bound = pcpu_counter_error_bound(&c);
	cr_assert_eq(bound, MODEL_CPUS * (uint64_t)m, "64 armed CPUs at M = %" PRId64, m);
	budget = bound / 8; /* pcpu_fold_walk_budget()'s, on more than 8 CPUs */
	limit = bound + budget;
	last_read = pcpu_counter_read(&c);

	pcpu_counter_debug_walk_hook = after_take;
	synced = pcpu_counter_sync_if_delta_above(&c, 0);
	pcpu_counter_debug_walk_hook = NULL;

	cr_assert_eq(takes, MODEL_CPUS, "the walk folded %u of %u CPUs", takes, MODEL_CPUS);
	cr_assert_eq(synced, MODEL_CPUS * m, "the walk returns the values it saw");
	cr_assert_eq(pcpu_counter_read(&c), MODEL_CPUS * m, "every delta it took is credited");
	cr_assert_eq(pcpu_counter_sum(&c), 2 * MODEL_CPUS * m, "and the refills are pending");
	/* the final credit comes after the last hook call: count it here */
	credits += pcpu_counter_read(&c) != last_read;
	cr_assert_leq(credits, MODEL_CPUS / 8 + 1, "%u credits for %u CPUs", credits, MODEL_CPUS);
	cr_assert_gt(worst_gap, bound + (uint64_t)m,
		     "the walk used its budget: worst lag %" PRIu64 ", bound %" PRIu64, worst_gap,
		     bound);
	pcpu_counter_destroy(&c);
}
