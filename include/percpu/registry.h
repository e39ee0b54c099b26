/* SPDX-License-Identifier: MIT */
/**
 * @file registry.h
 * The registry of live objects, and the refresher that folds them.
 *
 * Every live counter, stat set and charge object is on the registry, with
 * what a client registers (<percpu/client.h>). A refresher folds every
 * CPU's pending delta of each now and then, as the kernel's vmstat refresh
 * does, so read() drifts back to exact when updates stop, without any
 * reader paying for a precise sum.
 *
 * Link: pkg-config percpu.
 */
#ifndef PERCPU_REGISTRY_H
#define PERCPU_REGISTRY_H

#include <stddef.h>

#include <percpu/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Number of live (initialised, not destroyed) counters. @since 0.1 */
PCPU_EXPORT size_t pcpu_registry_count(void);

/**
 * Folds every CPU's pending delta of every live counter and stat set into
 * its central value, once. Safe from any thread, while counters are created and
 * destroyed. @since 0.1
 */
PCPU_EXPORT void pcpu_registry_fold_all(void);

/**
 * Starts a background thread that calls pcpu_registry_fold_all() every
 * @p interval_ms milliseconds.
 * @return 0; -EINVAL if @p interval_ms is 0 or above 3600000; -EBUSY if one
 *         is already running; a negative errno from pthread_create().
 * @since 0.1
 */
PCPU_EXPORT int pcpu_refresher_start(unsigned int interval_ms);

/** Stops the refresher and waits for it; does nothing if none runs. @since 0.1 */
PCPU_EXPORT void pcpu_refresher_stop(void);

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_REGISTRY_H */
