/* SPDX-License-Identifier: MIT */
/*
 * The one validator of metric and item names, units, label names and
 * label values (lib/base/names.c), below every unit and client: stat
 * sets, shared segments and the metrics list check with the same rules.
 */
#ifndef PCPU_LIB_NAMES_H
#define PCPU_LIB_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include <percpu/client.h>

/* 0 if prefix_name (or name) is a valid metric name for @kind, and @unit fits it. */
int pcpu_metrics_check_name(const char *prefix, const char *name, const char *unit,
			    enum pcpu_metric_kind kind);

/* Number of pairs in @labels (NULL: 0), or -EINVAL. */
int pcpu_metrics_check_labels(const char *const *labels, enum pcpu_metric_kind kind);

/*
 * Would families @a of @kind_a and @b of @kind_b write a sample (or a
 * family) of the same name?
 */
bool pcpu_metrics_names_meet(const char *a, enum pcpu_metric_kind kind_a, const char *b,
			     enum pcpu_metric_kind kind_b);

/*
 * Calls @visit(F, @arg) for each family name F other than @name that,
 * with some kind's suffix, could write a sample that @name of @kind writes
 * (pcpu_metrics_names_meet() tells whether it does), until @visit returns
 * non-zero; returns that, 0, or -ENOMEM. So a registration checks the few
 * families that could clash, not every one.
 */
int pcpu_metrics_rivals(const char *name, enum pcpu_metric_kind kind,
			int (*visit)(const char *family, void *arg), void *arg);

/* 0 if @names ({"k", ..., NULL}) are 1 to @max distinct label names for @kind. */
int pcpu_metrics_check_label_names(const char *const *names, unsigned int max,
				   enum pcpu_metric_kind kind);

struct pcpu_stat_item;

/*
 * 0 if @it is an item that a stat set or a shared segment can hold: a name
 * of 1 to PCPU_STAT_MAX_NAME bytes, a kind of 0 (a counter), counter or
 * gauge, an accuracy of 0 to PCPU_STAT_MAX_ACCURACY and a floor of 0 to
 * @max_floor (which the width of the unit's per-CPU words sets); else
 * -EINVAL. Whether the name must also be a metric name is the unit's rule.
 */
int pcpu_stat_item_check(const struct pcpu_stat_item *it, int64_t max_floor);

/* 0 if @v is valid UTF-8 of at most @max bytes, else -EINVAL. */
int pcpu_metrics_check_label_value(const char *v, size_t max);

#endif /* PCPU_LIB_NAMES_H */
