/* SPDX-License-Identifier: MIT */
/*
 * Private stat-set hooks: for the registry, and test-only accessors that
 * let the tests look inside a set (never exported from the shared library).
 */
#ifndef PCPU_LIB_STAT_INTERNAL_H
#define PCPU_LIB_STAT_INTERNAL_H

#include <stdint.h>

#include <urcu/list.h>

#include <percpu/stat.h>

/*
 * The registry's hooks, each given the list head of a live set (registry.c
 * holds its lock around all three, and the fork in between):
 * before fork, freezes every line of the set and waits for folds in
 * progress to end; after it, the parent thaws the lines and the child, whose
 * readers are gone, clears them.
 */
void pcpu_stat_fork_prepare(struct cds_list_head *node);
void pcpu_stat_fork_parent(struct cds_list_head *node);
void pcpu_stat_fork_child(struct cds_list_head *node);

/* pcpu_stat_fold_all() of the set whose list head is @node. */
void pcpu_stat_fold_node(struct cds_list_head *node);

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
