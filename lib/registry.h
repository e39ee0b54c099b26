/* SPDX-License-Identifier: MIT */
/*
 * The registry of live counters and stat sets: RCU lists (liburcu,
 * bulletproof flavour, so walkers need no registration) that the refresher
 * walks while objects come and go. An object's memory is freed only after a
 * grace period following its removal, so a walker never folds memory that
 * was reused. The registry's fork handlers are the only ones: they bring
 * every live object through fork (see registry.c).
 */
#ifndef PCPU_LIB_REGISTRY_H
#define PCPU_LIB_REGISTRY_H

#include <stddef.h>

#include <urcu/list.h>

#include <percpu/counter.h>

void pcpu_registry_add(struct pcpu_counter *c);

/* Unlinks @n counters; returns after a grace period, when no walker sees them. */
void pcpu_registry_remove(struct pcpu_counter *const *cs, size_t n);

/* Stat sets, linked through a list head of their own (see stat.c). */
void pcpu_registry_add_set(struct cds_list_head *node);

/* Unlinks a set; returns after a grace period, when no walker sees it. */
void pcpu_registry_remove_set(struct cds_list_head *node);

/* Number of live stat sets. */
size_t pcpu_registry_set_count(void);

#endif /* PCPU_LIB_REGISTRY_H */
