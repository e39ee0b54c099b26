/* SPDX-License-Identifier: MIT */
/*
 * Stat sets (see <percpu/stat.h>).
 *
 * Memory. Per CPU, one uint64_t word per item (value in the low half, mark
 * in the high half), in layout order: the items of central line 0, then of
 * line 1, ... so a CPU's words of one line are contiguous. Centrally, lines
 * of 8 int64_t: word 0 is the line's fold sequence, words 1-7 the central
 * values of its items. Per item, a read-mostly pcpu_stat_hot (slot and
 * threshold, read by every add) and a cold struct item.
 *
 * Invariant, per item i, with pending_i(c) = (int32_t)(value - mark) of CPU
 * c's word:  exact_i = central_i + sum over CPUs of pending_i(c).
 * Adds change a value (only on the fast path, and only if the new pending
 * stays within the threshold) or a central value (slow path). A fold moves
 * m from a word to the central value: compare-and-swap of the word that
 * advances the mark by m, then central += m; both inside the line's fold
 * section, so that readers can tell a fold in progress (see the sequence).
 * Nothing but the fast path ever writes a value, so in the rseq mode the
 * only plain stores to a word are the owner CPU's stores to its low half,
 * and every other write is a compare-and-swap that leaves the low half as
 * it found it: no update can be lost.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/stat.h>

#include "arena.h"
#include "cpu_internal.h"
#include "elastic.h"
#include "misuse.h"
#include "registry.h"
#include "stat_internal.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

#define LINE_WORDS 8
#define LINE_BYTES 64

/*
 * The fold sequence, word 0 of each central line:
 *   bits 0-15   folds in progress on the line (writers)
 *   bits 16-31  readers that froze the line (freezers)
 *   bits 32-63  generation: folds completed, modulo 2^32
 * A folder enters only while no reader froze the line, and leaves by
 * bumping the generation. A reader that saw no writer before and after its
 * walk, and the same generation, saw every fold entirely or not at all.
 */
#define SEQ_WRITER UINT64_C(1)
#define SEQ_FREEZER (UINT64_C(1) << 16)
#define SEQ_GEN (UINT64_C(1) << 32)
#define SEQ_FIELD_MAX 0xffffu

static unsigned int seq_writers(uint64_t s)
{
	return (unsigned int)(s & SEQ_FIELD_MAX);
}

static unsigned int seq_freezers(uint64_t s)
{
	return (unsigned int)((s >> 16) & SEQ_FIELD_MAX);
}

/* Optimistic reads before a reader freezes the lines it still needs. */
#define OPTIMISTIC_TRIES 4

static unsigned int optimistic_tries = OPTIMISTIC_TRIES; /* a test hook may lower it */

struct line {
	uint32_t first_slot;                 /* slot of its first item; the rest follow */
	uint32_t nr;                         /* 1 to PCPU_STAT_LINE_ITEMS */
	uint32_t item[PCPU_STAT_LINE_ITEMS]; /* item index at each position */
};

struct item {
	const char *name;
	uint64_t thresh_max; /* largest threshold ever published; raised atomically */
	int64_t floor;
	uint64_t divisor; /* accuracy * possible CPUs: thresh = |central| / divisor */
	uint32_t accuracy;
	uint32_t group;
	uint32_t line;
	uint32_t word; /* index of its central value: line * LINE_WORDS + 1 + position */
};

struct stat_set {
	struct pcpu_stat pub; /* first: callers hold &pub; read by every add */
	/* below, on other lines: written rarely, never by adds */
	_Alignas(LINE_BYTES) int64_t *central;
	struct line *lines;
	struct item *items;
	char *names;
	size_t words_bytes;
	uint32_t nr_lines;
	struct cds_list_head node; /* on the registry's list of live sets */
};

static struct stat_set *set_of(const struct pcpu_stat *s)
{
	return (struct stat_set *)(void *)((char *)s - offsetof(struct stat_set, pub));
}

static uint64_t *seq_of(const struct stat_set *s, uint32_t line)
{
	return (uint64_t *)(void *)&s->central[(size_t)line * LINE_WORDS];
}

/* The central values of @line's items, by position (word 0 is the sequence). */
static int64_t *values_of(const struct stat_set *s, uint32_t line)
{
	return &s->central[(size_t)line * LINE_WORDS + 1];
}

/* CPU @cpu's word of slot 0. */
static uint64_t *words_of(const struct stat_set *s, unsigned int cpu)
{
	return cpu_copy(s->pub.words, cpu);
}

static int32_t pending_of(uint64_t word)
{
	return (int32_t)((uint32_t)word - (uint32_t)(word >> 32));
}

static bool usable(const struct pcpu_stat *s, unsigned int item, const char *call)
{
	if (pcpu_likely(s && item < s->nr_items))
		return true;
	pcpu_misuse(call, s ? "item index out of range" : "NULL stat set");
	return false;
}

/* Waiting politely: spin a little, then give the CPU away. */
static void relax(unsigned int *spins)
{
	if (++*spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
		return;
	}
	sched_yield();
}

/* Thresholds. */

static uint32_t threshold_for(const struct item *it, int64_t central)
{
	return (uint32_t)pcpu_elastic_threshold(central, it->divisor, (uint64_t)it->floor,
						PCPU_STAT_MAX_THRESH);
}

static void raise_max(struct item *it, uint64_t thresh)
{
	uint64_t max = LOAD(&it->thresh_max);

	while (max < thresh && !__atomic_compare_exchange_n(&it->thresh_max, &max, thresh, true,
							     __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
}

/*
 * Re-derives item @i's threshold from its central value. The bound is
 * raised before the threshold is published, so no add ever checks against
 * a threshold that error_bound() does not cover. A threshold a little off
 * its ideal is harmless, a write to the line every add reads is not: it is
 * republished only when it moves by an eighth or more.
 */
static void retune(struct stat_set *s, uint32_t i, int64_t central)
{
	struct item *it = &s->items[i];
	uint32_t now = LOAD(&s->pub.hot[i].thresh), want, diff;
	uint64_t mag = pcpu_magnitude(central);

	/* the common case, without a division: |central| / divisor within now +- now / 8 */
	if (mag >= (uint64_t)(now - now / 8) * it->divisor &&
	    mag < (uint64_t)(now + now / 8 + 1) * it->divisor)
		return;
	want = threshold_for(it, central);
	diff = want > now ? want - now : now - want;
	if (diff == 0 || diff < now / 8)
		return;
	raise_max(it, want);
	STORE(&s->pub.hot[i].thresh, want);
}

static void add_central(struct stat_set *s, uint32_t i, int64_t amount)
{
	int64_t *c = &s->central[s->items[i].word];

	retune(s, i, __atomic_add_fetch(c, amount, __ATOMIC_SEQ_CST));
}

/* The fold section of a line. */

/* Enters unless a reader froze the line; never waits. */
static bool fold_try_enter(struct stat_set *s, uint32_t line)
{
	uint64_t *seq = seq_of(s, line);
	uint64_t v = LOAD(seq);

	do {
		if (seq_freezers(v) || seq_writers(v) == SEQ_FIELD_MAX)
			return false;
	} while (!__atomic_compare_exchange_n(seq, &v, v + SEQ_WRITER, true, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	return true;
}

/* Enters, waiting for readers that froze the line. */
static void fold_enter(struct stat_set *s, uint32_t line)
{
	unsigned int spins = 0;

	while (!fold_try_enter(s, line))
		relax(&spins);
}

static void fold_exit(struct stat_set *s, uint32_t line)
{
	/* one less writer, one more generation */
	__atomic_fetch_add(seq_of(s, line), SEQ_GEN - SEQ_WRITER, __ATOMIC_SEQ_CST);
}

/* Stops new folds on the line; wait_quiet() then lets folds in progress end. */
static void freeze(struct stat_set *s, uint32_t line)
{
	uint64_t *seq = seq_of(s, line);
	uint64_t v = LOAD(seq);
	unsigned int spins = 0;

	for (;;) {
		if (seq_freezers(v) == SEQ_FIELD_MAX) {
			relax(&spins);
			v = LOAD(seq);
			continue;
		}
		if (__atomic_compare_exchange_n(seq, &v, v + SEQ_FREEZER, true, __ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED))
			return;
	}
}

static void wait_quiet(struct stat_set *s, uint32_t line)
{
	unsigned int spins = 0;

	while (seq_writers(LOAD_ACQ(seq_of(s, line))))
		relax(&spins);
}

static void thaw(struct stat_set *s, uint32_t line)
{
	__atomic_fetch_sub(seq_of(s, line), SEQ_FREEZER, __ATOMIC_SEQ_CST);
}

/* Did the walk between sequence values @before and @after see no fold half done? */
static bool stable(uint64_t before, uint64_t after)
{
	return seq_writers(before) == 0 && seq_writers(after) == 0 &&
	       (before >> 32) == (after >> 32);
}

/*
 * Moves the pending delta of @word, plus @amount, toward the central value:
 * if the total passes +-@limit, all but @over against the direction of
 * travel (vmstat's overstep: a steady stream then folds every 1.5
 * thresholds, not on every add); otherwise all of it. Returns how far the
 * mark moved; the caller adds that plus @amount to the central value.
 */
static int64_t drain(uint64_t *word, int64_t amount, uint32_t limit, uint32_t over)
{
	uint64_t old = LOAD(word), new;
	int64_t moved;

	do {
		uint32_t value = (uint32_t)old;
		int32_t pending = pending_of(old);
		int32_t keep = 0;
		int64_t total;

		/* amounts near INT64_MAX: the sign of the total is the amount's */
		if (__builtin_add_overflow(amount, (int64_t)pending, &total))
			total = amount;

		if (total > (int64_t)limit)
			keep = -(int32_t)over;
		else if (total < -(int64_t)limit)
			keep = (int32_t)over;
		if (pending == keep)
			return 0;
		new = (uint64_t)(uint32_t)(value - (uint32_t)keep) << 32 | value;
		moved = (int64_t)pending - keep;
	} while (!__atomic_compare_exchange_n(word, &old, new, true, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	return moved;
}

/*
 * Inside @line's fold section: folds CPU @cpu's pending deltas of every
 * item of the line; item @trigger (or none: UINT32_MAX) also gets @amount
 * and keeps vmstat's overstep. Returns a mask of the line positions whose
 * central value changed. Only the two writes of each fold happen here: a
 * reader may have to wait for this section to end.
 */
static uint32_t fold_cpu_line(struct stat_set *s, uint32_t line, unsigned int cpu,
			      uint32_t trigger, int64_t amount)
{
	const struct line *ln = &s->lines[line];
	uint64_t *w = words_of(s, cpu) + ln->first_slot;
	int64_t *central = values_of(s, line);
	uint32_t changed = 0;

	for (uint32_t k = 0; k < ln->nr; k++) {
		int64_t moved;

		if (ln->item[k] == trigger) {
			uint32_t limit = LOAD(&s->pub.hot[trigger].thresh);

			/* the central value wraps as an int64_t, like any add to it */
			moved = (int64_t)((uint64_t)drain(&w[k], amount, limit, limit / 2) +
					  (uint64_t)amount);
		} else {
			moved = drain(&w[k], 0, 0, 0);
		}
		if (moved) {
			__atomic_add_fetch(&central[k], moved, __ATOMIC_SEQ_CST);
			changed |= 1u << k;
		}
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

/* Folds every CPU's pending deltas of the items of @line. */
static void fold_line(struct stat_set *s, uint32_t line)
{
	unsigned int cpus = cpu_possible();
	uint32_t changed = 0;

	fold_enter(s, line);
	for (unsigned int cpu = 0; cpu < cpus; cpu++)
		changed |= fold_cpu_line(s, line, cpu, UINT32_MAX, 0);
	fold_exit(s, line);
	retune_line(s, line, changed);
}

PCPU_EXPORT void pcpu_stat_add_slow(struct pcpu_stat *pub, unsigned int item, int64_t amount)
{
	struct stat_set *s;
	uint32_t line, changed;
	int cpu;

	if (!usable(pub, item, "pcpu_stat_add"))
		return;
	s = set_of(pub);
	line = s->items[item].line;
	cpu = pcpu_cpu_current();
	if (cpu < 0 || !fold_try_enter(s, line)) {
		/* no CPU, or a reader froze the line: the central value takes it */
		if (amount)
			add_central(s, item, amount);
		return;
	}
	changed = fold_cpu_line(s, line, (unsigned int)cpu, item, amount);
	fold_exit(s, line);
	retune_line(s, line, changed);
}

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
	uint64_t max, cpus = cpu_possible();

	if (!usable(pub, item, __func__))
		return 0;
	max = LOAD(&set_of(pub)->items[item].thresh_max);
	return max > UINT64_MAX / cpus ? UINT64_MAX : max * cpus;
}

PCPU_EXPORT int64_t pcpu_stat_sum(struct pcpu_stat *pub, unsigned int item)
{
	unsigned int cpus = cpu_possible(), spins = 0;
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
		bool frozen = attempt >= LOAD(&optimistic_tries);
		uint64_t before, after, total;

		if (frozen) {
			freeze(s, line);
			wait_quiet(s, line);
		}
		before = LOAD_ACQ(seq);
		if (!frozen && seq_writers(before)) {
			relax(&spins);
			continue;
		}
		total = (uint64_t)LOAD_ACQ(&s->central[s->items[item].word]);
		for (unsigned int cpu = 0; cpu < cpus; cpu++)
			total += (uint64_t)(int64_t)pending_of(LOAD_ACQ(&words_of(s, cpu)[slot]));
		/* the loads above are acquire: this one cannot pass them */
		after = __atomic_load_n(seq, __ATOMIC_SEQ_CST);
		if (frozen)
			thaw(s, line);
		if (frozen || stable(before, after))
			return (int64_t)total;
		relax(&spins);
	}
}

/* Per-line state of a snapshot. */
struct snap_line {
	uint64_t before;
	bool done;
	bool frozen;
};

PCPU_EXPORT int pcpu_stat_snapshot(struct pcpu_stat *pub, int64_t *values, uint64_t *bounds)
{
	unsigned int cpus = cpu_possible();
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
		bool freezing = attempt >= LOAD(&optimistic_tries);

		for (uint32_t l = 0; l < s->nr_lines; l++) {
			if (st[l].done)
				continue;
			st[l].frozen = freezing;
			if (freezing)
				freeze(s, l);
		}
		for (uint32_t l = 0; l < s->nr_lines; l++) {
			const struct line *ln = &s->lines[l];

			if (st[l].done)
				continue;
			if (st[l].frozen)
				wait_quiet(s, l);
			st[l].before = LOAD_ACQ(seq_of(s, l));
			for (uint32_t k = 0; k < ln->nr; k++)
				values[ln->item[k]] = LOAD_ACQ(&s->central[s->items[ln->item[k]].word]);
		}
		/* one walk over the CPUs */
		for (unsigned int cpu = 0; cpu < cpus; cpu++) {
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
		/* the loads above are acquire: the loads below cannot pass them */
		for (uint32_t l = 0; l < s->nr_lines; l++) {
			uint64_t after;

			if (st[l].done)
				continue;
			after = __atomic_load_n(seq_of(s, l), __ATOMIC_SEQ_CST);
			if (st[l].frozen) {
				thaw(s, l);
				st[l].done = true;
			} else {
				st[l].done = stable(st[l].before, after);
			}
			left -= st[l].done;
		}
		if (left)
			relax(&spins);
	}
	if (st != stack)
		free(st);
	if (bounds)
		for (uint32_t i = 0; i < pub->nr_items; i++)
			bounds[i] = pcpu_stat_error_bound(pub, i);
	return 0;
}

PCPU_EXPORT int64_t pcpu_stat_sync_if_delta_above(struct pcpu_stat *pub, unsigned int item,
						  uint64_t delta)
{
	if (!usable(pub, item, __func__))
		return 0;
	if (pcpu_stat_error_bound(pub, item) > delta)
		fold_line(set_of(pub), set_of(pub)->items[item].line);
	return pcpu_stat_read(pub, item);
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
		fold_line(s, l);
}

/* Names and groups. */

PCPU_EXPORT unsigned int pcpu_stat_count(const struct pcpu_stat *pub)
{
	return pub ? pub->nr_items : 0;
}

PCPU_EXPORT const char *pcpu_stat_name(const struct pcpu_stat *pub, unsigned int item)
{
	if (!pub) {
		errno = EINVAL;
		return NULL;
	}
	if (item >= pub->nr_items) {
		errno = ERANGE;
		return NULL;
	}
	return set_of(pub)->items[item].name;
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

/* The registry's hooks: for fork, and for the refresher. */

static struct stat_set *set_of_node(struct cds_list_head *node)
{
	return (struct stat_set *)(void *)((char *)node - offsetof(struct stat_set, node));
}

/*
 * A fork copies a set as it is, but only the forking thread: a fold another
 * thread had half done would stay half done in the child, and its sequence
 * would show a writer forever. So before fork every line is frozen and the
 * folds in progress drain (adders meanwhile send their amounts to the
 * central values); the child starts with no writer and no freezer, since the
 * threads that were reading are not in it.
 */
void pcpu_stat_fork_prepare(struct cds_list_head *node)
{
	struct stat_set *s = set_of_node(node);

	for (uint32_t l = 0; l < s->nr_lines; l++)
		freeze(s, l);
	for (uint32_t l = 0; l < s->nr_lines; l++)
		wait_quiet(s, l);
}

void pcpu_stat_fork_parent(struct cds_list_head *node)
{
	struct stat_set *s = set_of_node(node);

	for (uint32_t l = 0; l < s->nr_lines; l++)
		thaw(s, l);
}

void pcpu_stat_fork_child(struct cds_list_head *node)
{
	struct stat_set *s = set_of_node(node);

	for (uint32_t l = 0; l < s->nr_lines; l++) {
		uint64_t *seq = seq_of(s, l);

		STORE(seq, LOAD(seq) & ~(SEQ_GEN - 1));
	}
}

void pcpu_stat_fold_node(struct cds_list_head *node)
{
	pcpu_stat_fold_all(&set_of_node(node)->pub);
}

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
		size_t len;

		if (!it->name)
			return EINVAL;
		len = strnlen(it->name, PCPU_STAT_MAX_NAME + 1);
		if (len == 0 || len > PCPU_STAT_MAX_NAME)
			return EINVAL;
		if (it->accuracy < 0 || it->accuracy > PCPU_STAT_MAX_ACCURACY)
			return EINVAL;
		if (it->floor < 0 || it->floor > PCPU_STAT_MAX_THRESH)
			return EINVAL;
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(d->items[j].name, it->name) == 0)
				return EINVAL;
		bytes += len + 1;
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
	int64_t dflt_floor;
	char *name;
	int err;

	err = check_desc(desc, &names_bytes);
	if (err) {
		errno = err;
		return NULL;
	}
	pcpu_cpu_setup();
	n = desc->nr_items;
	order = malloc(n * sizeof(*order));
	placed = calloc(n, sizeof(*placed));
	starts = calloc(n, sizeof(*starts));
	s = aligned_alloc(LINE_BYTES, round_up_line(sizeof(*s)));
	if (!order || !placed || !starts || !s)
		goto nomem;
	memset(s, 0, sizeof(*s));
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
	if (!s->pub.hot || !s->central || !s->lines || !s->items || !s->names)
		goto nomem;
	s->pub.words = pcpu_arena_alloc(s->words_bytes);
	if (!s->pub.words)
		goto nomem;
	memset(s->pub.hot, 0, round_up_line(n * sizeof(*s->pub.hot)));
	memset(s->central, 0, (size_t)nr_lines * LINE_BYTES);

	dflt_floor = 2 * (int64_t)pcpu_cpu_online();
	if (dflt_floor < 32)
		dflt_floor = 32;
	if (dflt_floor > PCPU_STAT_MAX_THRESH)
		dflt_floor = PCPU_STAT_MAX_THRESH;
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
		it->accuracy = d->accuracy ? (uint32_t)d->accuracy : 64;
		it->divisor = (uint64_t)it->accuracy * cpu_possible();
		it->floor = d->floor ? d->floor : dflt_floor;
		it->name = name;
		strcpy(name, d->name);
		name += strlen(d->name) + 1;
		s->pub.hot[i].slot = p;
		s->pub.hot[i].thresh = threshold_for(it, 0);
		it->thresh_max = s->pub.hot[i].thresh;
	}
	free(order);
	free(placed);
	free(starts);

	pcpu_registry_add_set(&s->node);
	return &s->pub;

nomem:
	free(order);
	free(placed);
	free(starts);
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
	pcpu_registry_remove_set(&s->node);
	free_set(s);
}

/* Test-only accessors. */

int32_t pcpu_stat_debug_pending(const struct pcpu_stat *pub, unsigned int item, unsigned int cpu)
{
	return pending_of(LOAD(&words_of(set_of(pub), cpu)[pub->hot[item].slot]));
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
	STORE(&optimistic_tries, tries);
}

const int64_t *pcpu_stat_debug_line_words(const struct pcpu_stat *pub, unsigned int line)
{
	return &set_of(pub)->central[(size_t)line * LINE_WORDS];
}
