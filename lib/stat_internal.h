/* SPDX-License-Identifier: MIT */
/*
 * Private stat-set hooks: for the refresher, and test-only accessors that
 * let the tests look inside a set (never exported from the shared library).
 */
#ifndef PCPU_LIB_STAT_INTERNAL_H
#define PCPU_LIB_STAT_INTERNAL_H

#include <stdint.h>

#include <percpu/stat.h>

/*
 * Folds every CPU's pending deltas of every live stat set, as
 * pcpu_registry_fold_all() does for counters. Safe from any thread while
 * sets are created and destroyed.
 */
void pcpu_stat_fold_all_live(void);

/* Number of live stat sets. */
unsigned int pcpu_stat_live_count(void);

/* Test-only: the pending delta of @item on @cpu (value - mark). */
int32_t pcpu_stat_debug_pending(const struct pcpu_stat *s, unsigned int item, unsigned int cpu);

/* Test-only: the central line that holds @item. */
unsigned int pcpu_stat_debug_line(const struct pcpu_stat *s, unsigned int item);

/* Test-only: the number of central lines. */
unsigned int pcpu_stat_debug_nr_lines(const struct pcpu_stat *s);

/* Test-only: the 8 words of central line @line (word 0: its fold sequence). */
const int64_t *pcpu_stat_debug_line_words(const struct pcpu_stat *s, unsigned int line);

/*
 * Test-only: how many optimistic attempts sum() and snapshot() make before
 * they freeze lines (default 4; 0: always freeze).
 */
void pcpu_stat_debug_optimistic_tries(unsigned int tries);

#endif /* PCPU_LIB_STAT_INTERNAL_H */
