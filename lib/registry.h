/* SPDX-License-Identifier: MIT */
/*
 * The registry of live counters: an RCU list (liburcu, bulletproof flavour,
 * so walkers need no registration) that the refresher walks while counters
 * come and go. A counter's per-CPU memory is freed only after a grace period
 * following its removal, so a walker never folds memory that was reused.
 */
#ifndef PCPU_LIB_REGISTRY_H
#define PCPU_LIB_REGISTRY_H

#include <stddef.h>

#include <percpu/counter.h>

void pcpu_registry_add(struct pcpu_counter *c);

/* Unlinks @n counters; returns after a grace period, when no walker sees them. */
void pcpu_registry_remove(struct pcpu_counter *const *cs, size_t n);

#endif /* PCPU_LIB_REGISTRY_H */
