/* SPDX-License-Identifier: MIT */
/*
 * Stat sets, inside (see <percpu/stat.h>): the layout that the three files
 * of the unit share. stat_create.c makes and destroys sets, stat_fold.c
 * folds (thresholds, folds, sync, the registry's operations) over the fold
 * engine of lib/base/fold.h, stat_read.c has the exact readers and names.
 *
 * Memory: the fold engine's 32-bit layout (lib/base/fold.h has the glossary). Per
 * CPU, one uint64_t word (the item's slot: value in the low half, mark plus
 * 2^31 in the high half, 0 until the CPU's first add arms its words) per
 * item, in layout order: the items of central line 0, then of
 * line 1, ... so a CPU's words of one line are contiguous. Centrally, lines
 * of 8 int64_t: word 0 is the line's fold sequence, words 1-7 the central
 * values of its items. Per item, a read-mostly pcpu_stat_hot (slot and
 * threshold, read by every add) and a cold struct item.
 *
 * Invariants: docs/internals.md. exact_i = central_i + the sum over CPUs
 * of (int32_t)(value - mark) over the armed CPUs [exact-sum] [armed], which
 * sum() and snapshot() read
 * against the line's fold sequence, freezing it after OPTIMISTIC_TRIES
 * failed tries [seq-read]; a 32-bit pending delta stays within
 * PCPU_STAT_MAX_THRESH = 2^29 - 1 [pending-bound]. Every write to a word
 * but its CPU's add is a compare-and-swap that leaves the low half as it
 * found it, so no add is lost. A counter's 64-bit slots make its sum()
 * wait-free at 16 bytes per item per CPU; a set's items are updated and
 * read together, and the compact word halves that footprint.
 */
#ifndef PCPU_LIB_STAT_INTERNAL_H
#define PCPU_LIB_STAT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <percpu/stat.h>

#include "base/armset.h"
#include "base/atomics.h"
#include "base/cpu_internal.h"
#include "base/fold.h"
#include "base/misuse.h"
#include "base/policy.h"
#include "registry/registry.h"

/*
 * The fold sequence [seq-read], word 0 of each central line:
 *   bits 0-15   folds in progress on the line
 *   bits 16-31  readers that froze the line (freezers)
 *   bits 32-63  generation: folds completed, modulo 2^32
 * A fold enters only while no reader froze the line. (A counter's sequence
 * is another layout, a uint32_t with a gate bit: counter_internal.h.)
 */
#define STAT_SEQ_FOLD UINT64_C(1)
#define STAT_SEQ_FREEZE (UINT64_C(1) << 16)
#define STAT_SEQ_GEN_SHIFT 32
#define STAT_SEQ_GEN (UINT64_C(1) << STAT_SEQ_GEN_SHIFT)
#define STAT_SEQ_FIELD_MAX 0xffffu

#define LINE_WORDS 8
#define LINE_BYTES 64

static inline unsigned int seq_folds(uint64_t s)
{
	return (unsigned int)(s & STAT_SEQ_FIELD_MAX);
}

static inline unsigned int seq_freezers(uint64_t s)
{
	return (unsigned int)((s >> 16) & STAT_SEQ_FIELD_MAX);
}

/* Optimistic reads before a reader freezes the lines it still needs. */
#define OPTIMISTIC_TRIES 4

extern unsigned int pcpu_stat_optimistic_tries; /* a test hook may lower it */

struct line {
	uint32_t first_slot;                 /* slot of its first item; the rest follow */
	uint32_t nr;                         /* 1 to PCPU_STAT_LINE_ITEMS */
	uint32_t item[PCPU_STAT_LINE_ITEMS]; /* item index at each position */
};

struct item {
	const char *name;
	const char *help; /* NULL: none */
	uint32_t kind;    /* PCPU_METRIC_COUNTER or PCPU_METRIC_GAUGE */
	int64_t scale;    /* >= 1 */
	int64_t floor;
	uint64_t divisor; /* accuracy * possible CPUs: threshold = |central| / divisor */
	uint32_t accuracy;
	uint32_t group;
	uint32_t line;
	uint32_t word; /* index of its central value: line * LINE_WORDS + 1 + position */
};

/*
 * The immutable descriptions of a set's items, shared by the sets made
 * like it (pcpu_stat_create_like()): freed with the last of them.
 */
struct stat_shape {
	uint32_t refs; /* sets that use it; atomic */
	struct line *lines;
	struct item *items;
	char *names;
};

struct stat_set {
	struct pcpu_stat pub; /* first: callers hold &pub; read by every add */
	/* below, on other lines: written rarely, never by adds */
	_Alignas(LINE_BYTES) int64_t *central;
	const struct line *lines;  /* shape->lines */
	const struct item *items;  /* shape->items */
	struct stat_shape *shape;
	uint64_t *threshold_max;   /* per item: largest threshold ever published; raised atomically */
	size_t words_bytes;
	uint64_t *armset; /* the CPUs whose words are armed [armed] */
	uint32_t armed;   /* how many: the count runs ahead of the set, never behind */
	uint32_t nr_lines;
	struct pcpu_registry_entry *entry; /* in the registry of live objects */
};

static inline struct stat_set *set_of(const struct pcpu_stat *s)
{
	return (struct stat_set *)(void *)((char *)s - offsetof(struct stat_set, pub));
}

static inline uint64_t *seq_of(const struct stat_set *s, uint32_t line)
{
	return (uint64_t *)(void *)&s->central[(size_t)line * LINE_WORDS];
}

/* The central values of @line's items, by position (word 0 is the sequence). */
static inline int64_t *values_of(const struct stat_set *s, uint32_t line)
{
	return &s->central[(size_t)line * LINE_WORDS + 1];
}

/* CPU @cpu's word of slot 0. */
static inline uint64_t *words_of(const struct stat_set *s, unsigned int cpu)
{
	return cpu_copy(s->pub.words, cpu);
}

static inline int32_t pending_of(uint64_t word)
{
	return (int32_t)pcpu_word_pending(&word);
}

static inline bool usable(const struct pcpu_stat *s, unsigned int item, const char *call)
{
	if (pcpu_likely(s && item < s->nr_items))
		return true;
	pcpu_misuse(call, s ? "item index out of range" : "NULL stat set");
	return false;
}

/* The elastic threshold of item @it for a central value of @central. */
static inline uint32_t threshold_for(const struct item *it, int64_t central)
{
	return (uint32_t)pcpu_policy_threshold(central, it->divisor, (uint64_t)it->floor,
					       PCPU_STAT_MAX_THRESH);
}

/* The fold section of a line. */

/* Enters unless a reader froze the line; never waits. */
static inline bool fold_try_enter(struct stat_set *s, uint32_t line)
{
	uint64_t *seq = seq_of(s, line);
	uint64_t v = LOAD(seq);

	do {
		if (seq_freezers(v) || seq_folds(v) == STAT_SEQ_FIELD_MAX)
			return false;
	} while (!__atomic_compare_exchange_n(seq, &v, v + STAT_SEQ_FOLD, true, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	return true;
}

/* Enters, waiting for readers that froze the line. */
static inline void fold_enter(struct stat_set *s, uint32_t line)
{
	unsigned int spins = 0;

	while (!fold_try_enter(s, line))
		pcpu_relax(&spins);
}

static inline void fold_leave(struct stat_set *s, uint32_t line)
{
	pcpu_fold_seq_leave(seq_of(s, line), STAT_SEQ_FOLD, STAT_SEQ_GEN);
}

/* Stops new folds on the line; stat_wait_quiet() then lets folds in progress end. */
static inline void stat_freeze(struct stat_set *s, uint32_t line)
{
	uint64_t *seq = seq_of(s, line);
	uint64_t v = LOAD(seq);
	unsigned int spins = 0;

	for (;;) {
		if (seq_freezers(v) == STAT_SEQ_FIELD_MAX) {
			pcpu_relax(&spins);
			v = LOAD(seq);
			continue;
		}
		if (__atomic_compare_exchange_n(seq, &v, v + STAT_SEQ_FREEZE, true, __ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED))
			return;
	}
}

static inline void stat_wait_quiet(struct stat_set *s, uint32_t line)
{
	unsigned int spins = 0;

	while (seq_folds(LOAD_ACQ(seq_of(s, line))))
		pcpu_relax(&spins);
}

static inline void stat_thaw(struct stat_set *s, uint32_t line)
{
	__atomic_fetch_sub(seq_of(s, line), STAT_SEQ_FREEZE, __ATOMIC_SEQ_CST);
}

/* Did the walk between sequence values @before and @after see no fold half done? */
static inline bool stat_stable(uint64_t before, uint64_t after)
{
	return pcpu_fold_seq_stable(before, after, STAT_SEQ_FIELD_MAX, STAT_SEQ_GEN_SHIFT);
}

/* Folds (stat_fold.c). */

/* Folds every CPU's pending deltas of the items of @line. */
void pcpu_stat_fold_line(struct stat_set *s, uint32_t line);

/*
 * A test hook, in the suite's internal library only (PCPU_TEST_HOOKS):
 * called by a line's folding walk (pcpu_stat_fold_line()) after it took
 * CPU @cpu's pending deltas of @line, before it credits them
 * (test/stat/test_stat_walk_budget.c).
 */
extern void (*pcpu_stat_debug_walk_hook)(struct pcpu_stat *s, unsigned int line, unsigned int cpu);

/* The stat sets' operations for the registry. */
extern const struct pcpu_class pcpu_stat_class;

/* Test-only: the pending delta of @item on @cpu (value - mark). */
int32_t pcpu_stat_debug_pending(const struct pcpu_stat *s, unsigned int item, unsigned int cpu);

/* Test-only: the set's count of armed CPUs [armed]. */
uint32_t pcpu_stat_debug_armed(const struct pcpu_stat *s);

/* Test-only: the central line that holds @item. */
unsigned int pcpu_stat_debug_line(const struct pcpu_stat *s, unsigned int item);

/* Test-only: the number of central lines. */
unsigned int pcpu_stat_debug_nr_lines(const struct pcpu_stat *s);

/*
 * Test-only: is central line @line idle (no fold in progress, no reader
 * freezing it)? And how many folds has it seen (modulo 2^32)?
 */
bool pcpu_stat_debug_line_idle(const struct pcpu_stat *s, unsigned int line);
uint32_t pcpu_stat_debug_line_folds(const struct pcpu_stat *s, unsigned int line);

/* Test-only: the 8 words of central line @line (word 0: its fold sequence). */
const int64_t *pcpu_stat_debug_line_words(const struct pcpu_stat *s, unsigned int line);

/*
 * Test-only: how many optimistic attempts sum() and snapshot() make before
 * they freeze lines (default 4; 0: always freeze).
 */
void pcpu_stat_debug_optimistic_tries(unsigned int tries);

#endif /* PCPU_LIB_STAT_INTERNAL_H */
