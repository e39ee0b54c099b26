/* SPDX-License-Identifier: MIT */
/*
 * Internal to <percpu/stat.h>: the slow path of its inline add.
 * Not API: these names may change in any release.
 */
#ifndef PERCPU_STATIC_STAT_H
#define PERCPU_STATIC_STAT_H

#ifndef PERCPU_STAT_H
#error "include <percpu/stat.h>, not <percpu/static/stat.h>"
#endif

/* The one out-of-line slow path of pcpu_stat_add(). */
PCPU_EXPORT void __pcpu_stat_add_slow(struct pcpu_stat *s, unsigned int item, int64_t amount);

#endif /* PERCPU_STATIC_STAT_H */
