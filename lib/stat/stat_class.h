/* SPDX-License-Identifier: MIT */
/*
 * What a stat set tells its clients (the metrics list) beyond <percpu/stat.h>:
 * an item's help and kind, and the mark that it is registered as metrics.
 */
#ifndef PCPU_LIB_STAT_CLASS_H
#define PCPU_LIB_STAT_CLASS_H

#include <percpu/metrics.h>
#include <percpu/stat.h>

/* Item @item's help ("" if none) and kind; @item < pcpu_stat_count(@s). */
const char *pcpu_stat_help(const struct pcpu_stat *s, unsigned int item);
enum pcpu_metric_kind pcpu_stat_kind(const struct pcpu_stat *s, unsigned int item);

/* Marks @s registered: its destroy then tells the registry's client. */
void pcpu_stat_mark_metric(struct pcpu_stat *s);

#endif /* PCPU_LIB_STAT_CLASS_H */
