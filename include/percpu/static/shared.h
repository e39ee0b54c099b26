/* SPDX-License-Identifier: MIT */
/*
 * Internal to <percpu/shared.h>: the slow path of its inline add.
 * Not API: these names may change in any release.
 */
#ifndef PERCPU_STATIC_SHARED_H
#define PERCPU_STATIC_SHARED_H

#ifndef PERCPU_SHARED_H
#error "include <percpu/shared.h>, not <percpu/static/shared.h>"
#endif

/* The one out-of-line slow path of pcpu_shared_add(). */
PCPU_EXPORT void __pcpu_shared_add_slow(struct pcpu_shared *s, unsigned int item,
					int64_t amount);

#endif /* PERCPU_STATIC_SHARED_H */
