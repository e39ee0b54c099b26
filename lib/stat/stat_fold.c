/* SPDX-License-Identifier: MIT */
/*
 * Stat sets' folds over the engine (see stat_internal.h for the layout). Adds
 * that leave the fast path, folds of a CPU's line, sync and fold-all, and
 * the registry's operations (the refresher's fold, fork).
 */
#define _GNU_SOURCE
#include <percpu/stat.h>

#include "stat_internal.h"

/* Thresholds. */

/* After item @i's central value changed to @central: the engine's rule [republish]. */
static void retune(struct stat_set *s, uint32_t i, int64_t central)
{
	const struct item *it = &s->items[i];
	uint64_t want;

	if (pcpu_fold_retune(LOAD(&s->pub.hot[i].threshold), central, it->divisor, (uint64_t)it->floor,
			     PCPU_STAT_MAX_THRESH, &want))
		pcpu_fold_publish(&s->pub.hot[i].threshold, sizeof(s->pub.hot[i].threshold),
				  &s->threshold_max[i], want);
}

static void add_central(struct stat_set *s, uint32_t i, int64_t amount)
{
	retune(s, i, pcpu_fold_credit(&s->central[s->items[i].word], amount));
}

/*
 * Inside @line's fold section: folds CPU @cpu's pending deltas of every
 * item of the line; item @trigger (or none: UINT32_MAX) also gets @amount.
 * Returns a mask of the line positions whose central value changed. Only
 * the two writes of each fold happen here: a reader may have to wait for
 * this section to end.
 */
static uint32_t fold_cpu_line(struct stat_set *s, uint32_t line, unsigned int cpu,
			      uint32_t trigger, int64_t amount)
{
	const struct line *ln = &s->lines[line];
	uint64_t *w = words_of(s, cpu) + ln->first_slot;
	int64_t *central = values_of(s, line);
	uint32_t changed = 0;

	for (uint32_t k = 0; k < ln->nr; k++) {
		uint64_t snap;

		pcpu_word_snap(&w[k], &snap);
		if (pcpu_fold_step_word(&w[k], &snap, &central[k], ln->item[k] == trigger ? amount : 0,
					NULL))
			changed |= 1u << k;
	}
	return changed;
}

/* After a fold section: re-derives the thresholds of the positions in @changed. */
static void retune_line(struct stat_set *s, uint32_t line, uint32_t changed)
{
	const struct line *ln = &s->lines[line];

	for (uint32_t k = 0; k < ln->nr; k++)
		if (changed & (1u << k))
			retune(s, ln->item[k], LOAD(&values_of(s, line)[k]));
}

#ifdef PCPU_TEST_HOOKS
void (*pcpu_stat_debug_walk_hook)(struct pcpu_stat *s, unsigned int line, unsigned int cpu);
#define WALK_HOOK(s, line, cpu)                                                                    \
	(pcpu_stat_debug_walk_hook ? pcpu_stat_debug_walk_hook(&(s)->pub, line, cpu) : (void)0)
#else
#define WALK_HOOK(s, line, cpu) ((void)0)
#endif

/*
 * Folds every armed CPU's pending deltas of the items of @line, inside one
 * fold section for the whole walk, as a counter's fold_all() does: each
 * position of the line credits its central value only when what the walk
 * took and has not credited would pass the item's budget
 * (pcpu_fold_walk_budget() of its maximum and its bound) with the next
 * CPU's pending delta, and once at the end for the rest. So read() lags by
 * at most the budget more than at quiescence [central-marks], and a word
 * folded costs one locked instruction (the swap) plus a credit every
 * budget's worth, not two. Thresholds follow central after the last credit.
 */
void pcpu_stat_fold_line(struct stat_set *s, uint32_t line)
{
	const struct line *ln = &s->lines[line];
	int64_t *central = values_of(s, line);
	int64_t owed[PCPU_STAT_LINE_ITEMS] = { 0 }; /* taken, not yet credited */
	uint64_t budget[PCPU_STAT_LINE_ITEMS];
	uint32_t changed = 0;
	unsigned int cpu;

	for (uint32_t k = 0; k < ln->nr; k++)
		budget[k] = pcpu_fold_walk_budget(LOAD(&s->threshold_max[ln->item[k]]),
						  pcpu_stat_error_bound(&s->pub, ln->item[k]));
	fold_enter(s, line);
	pcpu_armset_for_each(s->armset, cpu_possible(), cpu) {
		uint64_t *w = words_of(s, cpu) + ln->first_slot;
		bool took = false;

		for (uint32_t k = 0; k < ln->nr; k++) {
			uint64_t snap;
			int64_t pending;

			pcpu_word_snap(&w[k], &snap);
			pending = pcpu_word_pending(&snap);
			if (pending == 0)
				continue;
			if (pcpu_fold_walk_due(owed[k], pending, budget[k])) {
				pcpu_fold_credit(&central[k], owed[k]);
				changed |= 1u << k;
				owed[k] = 0;
			}
			owed[k] = (int64_t)((uint64_t)owed[k] +
					    (uint64_t)pcpu_fold_take_word(&w[k], &snap));
			took = true;
		}
		if (took)
			WALK_HOOK(s, line, cpu);
	}
	for (uint32_t k = 0; k < ln->nr; k++)
		if (owed[k]) {
			pcpu_fold_credit(&central[k], owed[k]);
			changed |= 1u << k;
		}
	fold_leave(s, line);
	retune_line(s, line, changed);
}

/*
 * Arms every word of CPU @cpu, as a counter arms its slot: the count, the
 * set, then the words (each mark 0 stored armed: nothing moves) [armed].
 * True if the caller should try the fast path once more.
 */
static bool arm_cpu(struct stat_set *s, unsigned int cpu)
{
	uint64_t *w = words_of(s, cpu);

	if (pcpu_armset_has(s->armset, cpu))
		return false;
	pcpu_armset_join(s->armset, &s->armed, cpu);
	for (uint32_t k = 0; k < s->pub.nr_items; k++) {
		uint64_t snap;

		pcpu_word_snap(&w[k], &snap);
		pcpu_word_arm(&w[k], &snap);
	}
	return true;
}

PCPU_EXPORT void __pcpu_stat_add_slow(struct pcpu_stat *pub, unsigned int item, int64_t amount)
{
	struct stat_set *s;
	uint32_t line, changed;
	int cpu;

	if (!usable(pub, item, "pcpu_stat_add"))
		return;
	s = set_of(pub);
	line = s->items[item].line;
	cpu = pcpu_cpu_current();
	if (cpu >= 0 && arm_cpu(s, (unsigned int)cpu)) {
		/* this CPU's first add: the fast path's add, once more */
		uint32_t threshold = LOAD(&pub->hot[item].threshold);

		if (__pcpu_within(amount, threshold) &&
		    pcpu_this_cpu_add32(pub->words + pub->hot[item].slot, (int32_t)amount,
					threshold, pub->mode))
			return;
	}
	if (cpu < 0 || !fold_try_enter(s, line)) {
		/* no CPU, or a reader froze the line: the central value takes it */
		if (amount)
			add_central(s, item, amount);
		return;
	}
	changed = fold_cpu_line(s, line, (unsigned int)cpu, item, amount);
	fold_leave(s, line);
	retune_line(s, line, changed);
}

static void sync_fold(void *pub, unsigned int item)
{
	pcpu_stat_fold_line(set_of(pub), set_of(pub)->items[item].line);
}

static int64_t sync_sum(void *pub, unsigned int item)
{
	return pcpu_stat_sum(pub, item);
}

PCPU_EXPORT int64_t pcpu_stat_sync_if_delta_above(struct pcpu_stat *pub, unsigned int item,
						  uint64_t delta)
{
	static const struct pcpu_fold_sync ops = { .fold = sync_fold, .sum = sync_sum };

	if (!usable(pub, item, __func__))
		return 0;
	return pcpu_fold_sync(&ops, pub, item, delta, pcpu_stat_read(pub, item),
			      pcpu_stat_error_bound(pub, item));
}

PCPU_EXPORT void pcpu_stat_fold_all(struct pcpu_stat *pub)
{
	struct stat_set *s;

	if (!pub) {
		pcpu_misuse(__func__, "NULL stat set");
		return;
	}
	s = set_of(pub);
	for (uint32_t l = 0; l < s->nr_lines; l++)
		pcpu_stat_fold_line(s, l);
}

/* The registry's operations. */

/*
 * A fork copies a set as it is, but only the forking thread: a fold another
 * thread had half done would stay half done in the child, and its sequence
 * would show a fold in progress forever. So before fork every line is
 * frozen and the folds in progress end (adders meanwhile send their
 * amounts to the central values); the child starts with no fold in
 * progress and no freezer, since the threads that were reading are not in
 * it.
 */
static void set_fork_prepare(void *obj)
{
	struct stat_set *s = obj;

	for (uint32_t l = 0; l < s->nr_lines; l++)
		stat_freeze(s, l);
	for (uint32_t l = 0; l < s->nr_lines; l++)
		stat_wait_quiet(s, l);
}

static void set_fork_parent(void *obj)
{
	struct stat_set *s = obj;

	for (uint32_t l = 0; l < s->nr_lines; l++)
		stat_thaw(s, l);
}

static void set_fork_child(void *obj)
{
	struct stat_set *s = obj;

	for (uint32_t l = 0; l < s->nr_lines; l++)
		pcpu_fold_seq_fork_child(seq_of(s, l), STAT_SEQ_GEN);
	/* an arming thread may have counted its CPU and not yet found it in the set */
	STORE(&s->armed, pcpu_armset_count(s->armset, cpu_possible()));
}

static void set_fold(void *obj)
{
	pcpu_stat_fold_all(&((struct stat_set *)obj)->pub);
}

const struct pcpu_class pcpu_stat_class = {
	.fold = set_fold,
	.fork_prepare = set_fork_prepare,
	.fork_parent = set_fork_parent,
	.fork_child = set_fork_child,
};
