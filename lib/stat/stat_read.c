/* SPDX-License-Identifier: MIT */
/*
 * Stat sets: the readers (see stat_internal.h for the layout and the fold
 * sequence they validate against) and the names.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/stat.h>

#include "stat_internal.h"

/* Optimistic reads before a reader freezes the lines it still needs. */
unsigned int pcpu_stat_optimistic_tries = OPTIMISTIC_TRIES;

/* Reads. */

PCPU_EXPORT int64_t pcpu_stat_read(const struct pcpu_stat *pub, unsigned int item)
{
	const struct stat_set *s;

	if (!usable(pub, item, __func__))
		return 0;
	s = set_of(pub);
	return LOAD(&s->central[s->items[item].word]);
}

PCPU_EXPORT uint64_t pcpu_stat_error_bound(const struct pcpu_stat *pub, unsigned int item)
{
	uint32_t armed;

	if (!usable(pub, item, __func__))
		return 0;
	/* both only grow: loaded after a read, they cover it [armed] */
	armed = __atomic_load_n(&set_of(pub)->armed, __ATOMIC_SEQ_CST);
	return pcpu_policy_bound(__atomic_load_n(&set_of(pub)->threshold_max[item],
						 __ATOMIC_SEQ_CST),
				 armed);
}

PCPU_EXPORT int64_t pcpu_stat_sum(struct pcpu_stat *pub, unsigned int item)
{
	unsigned int cpus = cpu_possible(), spins = 0, cpu;
	struct stat_set *s;
	uint32_t line, slot;
	uint64_t *seq;

	if (!usable(pub, item, __func__))
		return 0;
	s = set_of(pub);
	line = s->items[item].line;
	slot = pub->hot[item].slot;
	seq = seq_of(s, line);
	for (unsigned int attempt = 0;; attempt++) {
		bool frozen = attempt >= LOAD(&pcpu_stat_optimistic_tries);
		uint64_t before, after, total;

		if (frozen) {
			stat_freeze(s, line);
			stat_wait_quiet(s, line);
		}
		before = LOAD_ACQ(seq);
		if (!frozen && seq_folds(before)) {
			pcpu_relax(&spins);
			continue;
		}
		total = (uint64_t)LOAD_ACQ(&s->central[s->items[item].word]);
		pcpu_armset_for_each(s->armset, cpus, cpu)
			total += (uint64_t)(int64_t)pending_of(LOAD_ACQ(&words_of(s, cpu)[slot]));
		/* the loads above are acquire: this one cannot pass them */
		after = __atomic_load_n(seq, __ATOMIC_SEQ_CST);
		if (frozen)
			stat_thaw(s, line);
		if (frozen || stat_stable(before, after))
			return (int64_t)total;
		pcpu_relax(&spins);
	}
}

/* Per-line state of a snapshot. */
struct snap_line {
	uint64_t before;
	bool done;
	bool frozen;
};

/*
 * One attempt's first step over the lines not done: frozen (@freezing),
 * each line's sequence read, then its items' central values into @values.
 */
static void snap_central(struct stat_set *s, struct snap_line *st, int64_t *values,
			 bool freezing)
{
	for (uint32_t l = 0; l < s->nr_lines; l++) {
		if (st[l].done)
			continue;
		st[l].frozen = freezing;
		if (freezing)
			stat_freeze(s, l);
	}
	for (uint32_t l = 0; l < s->nr_lines; l++) {
		const struct line *ln = &s->lines[l];

		if (st[l].done)
			continue;
		if (st[l].frozen)
			stat_wait_quiet(s, l);
		st[l].before = LOAD_ACQ(seq_of(s, l));
		for (uint32_t k = 0; k < ln->nr; k++)
			values[ln->item[k]] = LOAD_ACQ(&s->central[s->items[ln->item[k]].word]);
	}
}

/* The second: every armed CPU's pending deltas added to @values, in one walk. */
static void snap_pending(struct stat_set *s, const struct snap_line *st, int64_t *values)
{
	unsigned int cpus = cpu_possible(), cpu;

	pcpu_armset_for_each(s->armset, cpus, cpu) {
		const uint64_t *w = words_of(s, cpu);

		for (uint32_t l = 0; l < s->nr_lines; l++) {
			const struct line *ln = &s->lines[l];

			if (st[l].done)
				continue;
			for (uint32_t k = 0; k < ln->nr; k++)
				values[ln->item[k]] = (int64_t)((uint64_t)values[ln->item[k]] +
					(uint64_t)(int64_t)pending_of(LOAD_ACQ(&w[ln->first_slot + k])));
		}
	}
}

/*
 * The last: each line's sequence read again, a frozen line thawed. Returns
 * how many lines are done now (frozen ones, and those no fold crossed).
 */
static uint32_t snap_validate(struct stat_set *s, struct snap_line *st)
{
	uint32_t done = 0;

	/* the loads before are acquire: the loads below cannot pass them */
	for (uint32_t l = 0; l < s->nr_lines; l++) {
		uint64_t after;

		if (st[l].done)
			continue;
		after = __atomic_load_n(seq_of(s, l), __ATOMIC_SEQ_CST);
		if (st[l].frozen) {
			stat_thaw(s, l);
			st[l].done = true;
		} else {
			st[l].done = stat_stable(st[l].before, after);
		}
		done += st[l].done;
	}
	return done;
}

PCPU_EXPORT int pcpu_stat_snapshot(struct pcpu_stat *pub, int64_t *values, uint64_t *bounds)
{
	struct snap_line stack[64], *st = stack;
	unsigned int spins = 0;
	struct stat_set *s;
	uint32_t left;

	if (!pub || !values)
		return -EINVAL;
	s = set_of(pub);
	if (s->nr_lines > sizeof(stack) / sizeof(stack[0])) {
		st = malloc(s->nr_lines * sizeof(*st));
		if (!st)
			return -ENOMEM;
	}
	memset(st, 0, s->nr_lines * sizeof(*st));
	left = s->nr_lines;
	for (unsigned int attempt = 0; left; attempt++) {
		snap_central(s, st, values, attempt >= LOAD(&pcpu_stat_optimistic_tries));
		snap_pending(s, st, values);
		left -= snap_validate(s, st);
		if (left)
			pcpu_relax(&spins);
	}
	if (st != stack)
		free(st);
	if (bounds)
		for (uint32_t i = 0; i < pub->nr_items; i++)
			bounds[i] = pcpu_stat_error_bound(pub, i);
	return 0;
}

/* Names and groups. */

PCPU_EXPORT unsigned int pcpu_stat_count(const struct pcpu_stat *pub)
{
	return pub ? pub->nr_items : 0;
}

/* Item @item of @pub; NULL with errno EINVAL (no set) or ERANGE (no such item). */
static const struct item *item_of(const struct pcpu_stat *pub, unsigned int item)
{
	if (!pub) {
		errno = EINVAL;
		return NULL;
	}
	if (item >= pub->nr_items) {
		errno = ERANGE;
		return NULL;
	}
	return &set_of(pub)->items[item];
}

PCPU_EXPORT const char *pcpu_stat_help(const struct pcpu_stat *pub, unsigned int item)
{
	const struct item *it = item_of(pub, item);

	return !it ? NULL : it->help ? it->help : "";
}

PCPU_EXPORT enum pcpu_metric_kind pcpu_stat_kind(const struct pcpu_stat *pub, unsigned int item)
{
	const struct item *it = item_of(pub, item);

	return it ? (enum pcpu_metric_kind)it->kind : (enum pcpu_metric_kind)0;
}

PCPU_EXPORT int64_t pcpu_stat_scale(const struct pcpu_stat *pub, unsigned int item)
{
	const struct item *it = item_of(pub, item);

	return it ? it->scale : 0;
}

PCPU_EXPORT const char *pcpu_stat_name(const struct pcpu_stat *pub, unsigned int item)
{
	const struct item *it = item_of(pub, item);

	return it ? it->name : NULL;
}

PCPU_EXPORT int pcpu_stat_lookup(const struct pcpu_stat *pub, const char *name)
{
	if (!pub || !name)
		return -EINVAL;
	for (uint32_t i = 0; i < pub->nr_items; i++)
		if (strcmp(set_of(pub)->items[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

PCPU_EXPORT int pcpu_stat_group(const struct pcpu_stat *pub, unsigned int item, uint32_t *group)
{
	if (!pub || !group)
		return -EINVAL;
	if (item >= pub->nr_items)
		return -ERANGE;
	*group = set_of(pub)->items[item].group;
	return 0;
}
