/* SPDX-License-Identifier: MIT */
/*
 * Stat sets: creation (checking the descriptor, laying items out in central
 * lines) and destruction; see stat_internal.h for the layout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/stat.h>

#include "arena/arena.h"
#include "base/names.h"
#include "stat_internal.h"

/* Creation. */

static int check_desc(const struct pcpu_stat_desc *d, size_t *names_bytes)
{
	size_t bytes = 0;

	if (!d || !d->items || d->nr_items == 0 || d->nr_items > PCPU_STAT_MAX_ITEMS)
		return EINVAL;
	if (d->flags & ~PCPU_STAT_ONE_PER_LINE)
		return EINVAL;
	for (uint32_t i = 0; i < d->nr_items; i++) {
		const struct pcpu_stat_item *it = &d->items[i];

		/* 32-bit words: the floor stays below 2^29 */
		if (pcpu_stat_item_check(it, PCPU_STAT_MAX_THRESH) != 0)
			return EINVAL;
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(d->items[j].name, it->name) == 0)
				return EINVAL;
		bytes += strlen(it->name) + 1;
		if (it->help)
			bytes += strlen(it->help) + 1;
	}
	*names_bytes = bytes;
	return 0;
}

/*
 * Layout order: the groups in order of first appearance, each group's items
 * in descriptor order, then the ungrouped items. Fills @order (item at each
 * position) and @starts (does a line start at this position?) and returns
 * the number of lines: a line ends when it is full, when the group changes,
 * or after every item with PCPU_STAT_ONE_PER_LINE. @placed: n falses.
 */
static uint32_t lay_out(const struct pcpu_stat_desc *d, uint32_t *order, bool *starts,
			bool *placed)
{
	uint32_t n = 0, lines = 0, in_line = 0, group = 0;

	for (uint32_t i = 0; i < d->nr_items; i++) {
		uint32_t g = d->items[i].group;

		if (placed[i] || g == 0)
			continue;
		for (uint32_t j = i; j < d->nr_items; j++)
			if (!placed[j] && d->items[j].group == g) {
				placed[j] = true;
				order[n++] = j;
			}
	}
	for (uint32_t i = 0; i < d->nr_items; i++)
		if (!placed[i])
			order[n++] = i;
	for (uint32_t p = 0; p < n; p++) {
		uint32_t g = d->items[order[p]].group;

		starts[p] = p == 0 || in_line == PCPU_STAT_LINE_ITEMS || g != group ||
			    (d->flags & PCPU_STAT_ONE_PER_LINE);
		if (starts[p]) {
			lines++;
			in_line = 0;
			group = g;
		}
		in_line++;
	}
	return lines;
}

static void free_set(struct stat_set *s)
{
	if (s->pub.words)
		pcpu_arena_free(s->pub.words, s->words_bytes);
	free(s->armset);
	free(s->pub.hot);
	free(s->central);
	free(s->lines);
	free(s->items);
	free(s->names);
	free(s);
}

static size_t round_up_line(size_t bytes)
{
	return (bytes + LINE_BYTES - 1) / LINE_BYTES * LINE_BYTES;
}

PCPU_EXPORT struct pcpu_stat *pcpu_stat_create(const struct pcpu_stat_desc *desc)
{
	uint32_t n, *order = NULL, nr_lines;
	struct stat_set *s = NULL;
	size_t names_bytes = 0;
	bool *placed = NULL, *starts = NULL;
	char *name;
	int err;

	err = check_desc(desc, &names_bytes);
	if (err) {
		errno = err;
		return NULL;
	}
	if (pcpu_registry_setup() != 0) {
		errno = ENOMEM;
		return NULL;
	}
	n = desc->nr_items;
	/* zeroed before anything can fail: free_set() frees what is not NULL */
	s = aligned_alloc(LINE_BYTES, round_up_line(sizeof(*s)));
	if (!s)
		goto nomem;
	memset(s, 0, sizeof(*s));
	order = malloc(n * sizeof(*order));
	placed = calloc(n, sizeof(*placed));
	starts = calloc(n, sizeof(*starts));
	if (!order || !placed || !starts)
		goto nomem;
	s->pub.mode = pcpu_cpu_setup();
	nr_lines = lay_out(desc, order, starts, placed);
	s->nr_lines = nr_lines;
	s->pub.nr_items = n;
	s->pub.flags = desc->flags;
	s->words_bytes = (size_t)n * sizeof(uint64_t);
	s->pub.hot = aligned_alloc(LINE_BYTES, round_up_line(n * sizeof(*s->pub.hot)));
	s->central = aligned_alloc(LINE_BYTES, (size_t)nr_lines * LINE_BYTES);
	s->lines = calloc(nr_lines, sizeof(*s->lines));
	s->items = calloc(n, sizeof(*s->items));
	s->names = malloc(names_bytes);
	s->armset = pcpu_armset_new(cpu_possible());
	if (!s->pub.hot || !s->central || !s->lines || !s->items || !s->names || !s->armset)
		goto nomem;
	s->pub.words = pcpu_arena_alloc(s->words_bytes);
	if (!s->pub.words)
		goto nomem;
	memset(s->pub.hot, 0, round_up_line(n * sizeof(*s->pub.hot)));
	memset(s->central, 0, (size_t)nr_lines * LINE_BYTES);

	name = s->names;
	for (uint32_t p = 0, l = 0; p < n; p++) {
		uint32_t i = order[p];
		const struct pcpu_stat_item *d = &desc->items[i];
		struct item *it = &s->items[i];
		struct line *ln;

		if (starts[p] && p > 0)
			l++;
		ln = &s->lines[l];
		if (ln->nr == 0)
			ln->first_slot = p;
		it->line = l;
		it->word = l * LINE_WORDS + 1 + ln->nr;
		ln->item[ln->nr++] = i;
		it->group = d->group;
		it->accuracy = d->accuracy ? (uint32_t)d->accuracy : PCPU_POLICY_ACCURACY;
		it->divisor = (uint64_t)it->accuracy * cpu_possible();
		it->floor = d->floor ? d->floor : PCPU_POLICY_FLOOR;
		it->name = name;
		strcpy(name, d->name);
		name += strlen(d->name) + 1;
		if (d->help) {
			it->help = name;
			strcpy(name, d->help);
			name += strlen(d->help) + 1;
		}
		it->kind = d->kind ? (uint32_t)d->kind : PCPU_METRIC_COUNTER;
		it->scale = d->scale > 1 ? d->scale : 1;
		s->pub.hot[i].slot = p;
		s->pub.hot[i].threshold = threshold_for(it, 0);
		it->threshold_max = s->pub.hot[i].threshold;
	}
	free(order);
	free(placed);
	free(starts);

	s->entry = pcpu_registry_add(&pcpu_stat_class, s);
	if (!s->entry)
		goto nomem_set;
	return &s->pub;

nomem:
	free(order);
	free(placed);
	free(starts);
nomem_set:
	if (s)
		free_set(s);
	errno = ENOMEM;
	return NULL;
}

PCPU_EXPORT void pcpu_stat_destroy(struct pcpu_stat *pub)
{
	struct stat_set *s;

	if (!pub)
		return;
	s = set_of(pub);
	if (__atomic_load_n(&pub->flags, __ATOMIC_ACQUIRE) & PCPU_STAT_F_DESCRIBED)
		pcpu_registry_forget(pub);
	pcpu_registry_remove(s->entry);
	free_set(s);
}


/* Test-only accessors: in the suite's internal library only. */
#ifdef PCPU_TEST_HOOKS


int32_t pcpu_stat_debug_pending(const struct pcpu_stat *pub, unsigned int item, unsigned int cpu)
{
	return pending_of(LOAD(&words_of(set_of(pub), cpu)[pub->hot[item].slot]));
}

uint32_t pcpu_stat_debug_armed(const struct pcpu_stat *pub)
{
	return LOAD(&set_of(pub)->armed);
}

unsigned int pcpu_stat_debug_line(const struct pcpu_stat *pub, unsigned int item)
{
	return set_of(pub)->items[item].line;
}

unsigned int pcpu_stat_debug_nr_lines(const struct pcpu_stat *pub)
{
	return set_of(pub)->nr_lines;
}

void pcpu_stat_debug_optimistic_tries(unsigned int tries)
{
	STORE(&pcpu_stat_optimistic_tries, tries);
}

bool pcpu_stat_debug_line_idle(const struct pcpu_stat *pub, unsigned int line)
{
	uint64_t seq = LOAD(seq_of(set_of(pub), line));

	return seq_folds(seq) == 0 && seq_freezers(seq) == 0;
}

uint32_t pcpu_stat_debug_line_folds(const struct pcpu_stat *pub, unsigned int line)
{
	return (uint32_t)(LOAD(seq_of(set_of(pub), line)) / STAT_SEQ_GEN);
}

const int64_t *pcpu_stat_debug_line_words(const struct pcpu_stat *pub, unsigned int line)
{
	return &set_of(pub)->central[(size_t)line * LINE_WORDS];
}

#endif /* PCPU_TEST_HOOKS */
