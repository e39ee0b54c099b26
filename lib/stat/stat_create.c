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
		return -EINVAL;
	if (d->flags & ~PCPU_STAT_ONE_PER_LINE)
		return -EINVAL;
	for (uint32_t i = 0; i < d->nr_items; i++) {
		const struct pcpu_stat_item *it = &d->items[i];

		/* 32-bit words: the floor stays below 2^29 */
		if (pcpu_stat_item_check(it, PCPU_STAT_MAX_THRESH) != 0)
			return -EINVAL;
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(d->items[j].name, it->name) == 0)
				return -EINVAL;
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

static void shape_put(struct stat_shape *sh)
{
	if (!sh || __atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	free(sh->lines);
	free(sh->items);
	free(sh->names);
	free(sh);
}

static void free_set(struct stat_set *s)
{
	if (s->pub.words)
		pcpu_arena_free(s->pub.words, s->words_bytes);
	free(s->armset);
	free(s->threshold_max);
	free(s->pub.hot);
	free(s->central);
	shape_put(s->shape);
	free(s);
}

static size_t round_up_line(size_t bytes)
{
	return (bytes + LINE_BYTES - 1) / LINE_BYTES * LINE_BYTES;
}

/*
 * A set of @n items in @nr_lines lines, at 0, without its shape: what each
 * set owns. NULL when an allocation fails, nothing left allocated.
 */
static struct stat_set *alloc_set(uint32_t n, uint32_t nr_lines, uint32_t flags)
{
	size_t hot_bytes = round_up_line(n * sizeof(struct pcpu_stat_hot));
	struct stat_set *s;

	s = aligned_alloc(LINE_BYTES, round_up_line(sizeof(*s)));
	if (!s)
		return NULL;
	/* zeroed before anything can fail: free_set() frees what is not NULL */
	memset(s, 0, sizeof(*s));
	s->pub.mode = pcpu_cpu_setup();
	s->nr_lines = nr_lines;
	s->pub.nr_items = n;
	s->pub.flags = flags;
	s->words_bytes = (size_t)n * sizeof(uint64_t);
	s->pub.hot = aligned_alloc(LINE_BYTES, hot_bytes);
	s->central = aligned_alloc(LINE_BYTES, (size_t)nr_lines * LINE_BYTES);
	s->threshold_max = calloc(n, sizeof(*s->threshold_max));
	s->armset = pcpu_armset_new(cpu_possible());
	if (!s->pub.hot || !s->central || !s->threshold_max || !s->armset)
		goto err_free;
	s->pub.words = pcpu_arena_alloc(s->words_bytes);
	if (!s->pub.words)
		goto err_free;
	memset(s->pub.hot, 0, hot_bytes);
	memset(s->central, 0, (size_t)nr_lines * LINE_BYTES);
	return s;
err_free:
	free_set(s);
	return NULL;
}

/* Gives @s's items their first thresholds and registers it; false: no memory. */
static bool start_set(struct stat_set *s)
{
	for (uint32_t i = 0; i < s->pub.nr_items; i++) {
		s->pub.hot[i].threshold = threshold_for(&s->items[i], 0);
		s->threshold_max[i] = s->pub.hot[i].threshold;
	}
	s->entry = pcpu_registry_add(&pcpu_stat_class, s);
	return s->entry != NULL;
}

/* Where each item of a descriptor goes: lay_out()'s result. */
struct layout {
	uint32_t *order; /* the item at each position */
	bool *starts;    /* does a line start at this position? */
	uint32_t nr_lines;
};

static void layout_free(struct layout *lay)
{
	free(lay->order);
	free(lay->starts);
}

/* Lays @d's items out into @lay: 0 or -ENOMEM (@lay then holds nothing). */
static int layout_new(const struct pcpu_stat_desc *d, struct layout *lay)
{
	bool *placed = calloc(d->nr_items, sizeof(*placed));

	lay->order = malloc(d->nr_items * sizeof(*lay->order));
	lay->starts = calloc(d->nr_items, sizeof(*lay->starts));
	if (!placed || !lay->order || !lay->starts)
		goto err_free;
	lay->nr_lines = lay_out(d, lay->order, lay->starts, placed);
	free(placed);
	return 0;

err_free:
	free(placed);
	layout_free(lay);
	return -ENOMEM;
}

/*
 * A shape of @n items in @nr_lines lines with room for @names_bytes of
 * names, one reference, its items not yet filled; NULL for want of memory.
 */
static struct stat_shape *shape_new(uint32_t n, uint32_t nr_lines, size_t names_bytes)
{
	struct stat_shape *sh = calloc(1, sizeof(*sh));

	if (!sh)
		return NULL;
	sh->refs = 1;
	sh->lines = calloc(nr_lines, sizeof(*sh->lines));
	sh->items = calloc(n, sizeof(*sh->items));
	sh->names = malloc(names_bytes);
	if (!sh->lines || !sh->items || !sh->names) {
		shape_put(sh); /* frees what was allocated */
		return NULL;
	}
	return sh;
}

/* Copies item @d into @it with its defaults, its strings to *@name (moved past them). */
static void describe_item(struct item *it, const struct pcpu_stat_item *d, char **name)
{
	it->group = d->group;
	it->accuracy = d->accuracy ? (uint32_t)d->accuracy : PCPU_POLICY_ACCURACY;
	it->divisor = (uint64_t)it->accuracy * cpu_possible();
	it->floor = d->floor ? d->floor : PCPU_POLICY_FLOOR;
	it->name = strcpy(*name, d->name);
	*name += strlen(d->name) + 1;
	if (d->help) {
		it->help = strcpy(*name, d->help);
		*name += strlen(d->help) + 1;
	}
	it->kind = d->kind ? (uint32_t)d->kind : PCPU_METRIC_COUNTER;
	it->scale = d->scale > 1 ? d->scale : 1;
}

/* Places @d's items in @s's shape as @lay says: lines, words, slots. */
static void place_items(struct stat_set *s, const struct pcpu_stat_desc *d,
			const struct layout *lay)
{
	char *name = s->shape->names;

	for (uint32_t p = 0, l = 0; p < d->nr_items; p++) {
		uint32_t i = lay->order[p];
		struct item *it = &s->shape->items[i];
		struct line *ln;

		if (lay->starts[p] && p > 0)
			l++;
		ln = &s->shape->lines[l];
		if (ln->nr == 0)
			ln->first_slot = p;
		it->line = l;
		it->word = l * LINE_WORDS + 1 + ln->nr;
		ln->item[ln->nr++] = i;
		describe_item(it, &d->items[i], &name);
		s->pub.hot[i].slot = p;
	}
}

PCPU_EXPORT struct pcpu_stat *pcpu_stat_create(const struct pcpu_stat_desc *desc)
{
	struct layout lay = { 0 };
	struct stat_shape *sh;
	struct stat_set *s;
	size_t names_bytes = 0;
	int err;

	err = check_desc(desc, &names_bytes);
	if (err)
		goto err_out;
	err = -ENOMEM;
	if (pcpu_registry_setup() != 0 || layout_new(desc, &lay) != 0)
		goto err_out;
	sh = shape_new(desc->nr_items, lay.nr_lines, names_bytes);
	if (!sh)
		goto err_layout;
	s = alloc_set(desc->nr_items, lay.nr_lines, desc->flags);
	if (!s)
		goto err_shape;
	s->shape = sh;
	s->lines = sh->lines;
	s->items = sh->items;
	place_items(s, desc, &lay);
	if (!start_set(s))
		goto err_set;
	layout_free(&lay);
	return &s->pub;

err_set:
	s->shape = NULL; /* the next step drops the shape's one reference */
	free_set(s);
err_shape:
	shape_put(sh);
err_layout:
	layout_free(&lay);
err_out:
	errno = -err;
	return NULL;
}

PCPU_EXPORT struct pcpu_stat *pcpu_stat_create_like(const struct pcpu_stat *proto)
{
	const struct stat_set *p;
	struct stat_set *s;

	if (!proto) {
		errno = EINVAL;
		return NULL;
	}
	p = set_of(proto);
	s = alloc_set(proto->nr_items, p->nr_lines,
		      __atomic_load_n(&proto->flags, __ATOMIC_ACQUIRE) & ~PCPU_STAT_F_DESCRIBED);
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	/* @proto holds a reference until this returns: the count is above 0 */
	__atomic_add_fetch(&p->shape->refs, 1, __ATOMIC_RELAXED);
	s->shape = p->shape;
	s->lines = p->lines;
	s->items = p->items;
	for (uint32_t i = 0; i < proto->nr_items; i++)
		s->pub.hot[i].slot = proto->hot[i].slot;
	if (!start_set(s)) {
		free_set(s);
		errno = ENOMEM;
		return NULL;
	}
	return &s->pub;
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
