/* SPDX-License-Identifier: MIT */
/*
 * Stat sets: reset, every item back to 0 (a daemon's "stats reset").
 *
 * Each central line in turn, inside its fold section: every armed CPU's
 * pending deltas of the line are folded into the central values (the fold
 * step of lib/base/fold.h), then each central value is exchanged for 0. An
 * amount is in exactly one place at any time: pending in a CPU's word, in
 * flight between a folder's take and its credit, or in central. So each
 * add is either in central at the exchange (dropped) or arrives after it,
 * in a word or through a credit (kept): never both, never neither, whatever
 * folds, slow paths and readers run meanwhile. The exchange is the one
 * change of central that is not an atomic add; it commutes with a fold
 * still in flight all the same, because that fold's credit lands after it
 * and is kept. Readers see the section as a fold and retry or freeze
 * [seq-read], so no sum() or snapshot() mixes a line's values from before
 * and after. Thresholds then follow the new central values as after any
 * fold [republish]; the bound keeps its largest threshold, which stays true.
 */
#define _GNU_SOURCE
#include <percpu/stat.h>

#include "stat_internal.h"

/* Item @i's threshold for its central value now (stat_internal.h's rule). */
static void republish(struct stat_set *s, uint32_t i, int64_t central)
{
	uint32_t want = threshold_for(&s->items[i], central);

	if (want != LOAD(&s->pub.hot[i].threshold))
		pcpu_fold_publish(&s->pub.hot[i].threshold, sizeof(s->pub.hot[i].threshold),
				  &s->threshold_max[i], want);
}

static void reset_line(struct stat_set *s, uint32_t line)
{
	const struct line *ln = &s->lines[line];
	int64_t *central = values_of(s, line);
	unsigned int cpu;

	fold_enter(s, line);
	pcpu_armset_for_each(s->armset, cpu_possible(), cpu) {
		uint64_t *w = words_of(s, cpu) + ln->first_slot;

		for (uint32_t k = 0; k < ln->nr; k++) {
			uint64_t snap;

			pcpu_word_snap(&w[k], &snap);
			pcpu_fold_step_word(&w[k], &snap, &central[k], 0, NULL);
		}
	}
	for (uint32_t k = 0; k < ln->nr; k++)
		(void)__atomic_exchange_n(&central[k], 0, __ATOMIC_SEQ_CST);
	fold_leave(s, line);
	for (uint32_t k = 0; k < ln->nr; k++)
		republish(s, ln->item[k], LOAD(&central[k]));
}

PCPU_EXPORT void pcpu_stat_reset(struct pcpu_stat *pub)
{
	struct stat_set *s;

	if (!pub) {
		pcpu_misuse(__func__, "NULL stat set");
		return;
	}
	s = set_of(pub);
	for (uint32_t l = 0; l < s->nr_lines; l++)
		reset_line(s, l);
}
