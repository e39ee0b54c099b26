/* SPDX-License-Identifier: MIT */
/**
 * @file client.h
 * For a library built on percpu (libpercpu-metrics is one), not for programs
 * that only count: what an item says it counts (its kind), the one hook by
 * which a client that describes counters, stat sets and segments hears that
 * one goes and is told around fork(), and the registry of live objects that
 * the client's own classes join to be folded and forked with the rest.
 * Link: pkg-config percpu.
 */
#ifndef PERCPU_CLIENT_H
#define PERCPU_CLIENT_H

#include <percpu/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What an item (of a counter, stat set or segment) counts. @since 0.2 */
enum pcpu_metric_kind {
	PCPU_METRIC_COUNTER = 1,   /**< monotone; exposed as name_total */
	PCPU_METRIC_GAUGE = 2,     /**< any value */
	PCPU_METRIC_HISTOGRAM = 3, /**< <percpu/histogram.h> and segments only */
	/**
	 * An info metric: constant labels (a version, a build), exposed as
	 * name_info with the value 1 (OpenMetrics type info; a gauge in text
	 * 0.0.4). No unit. Through pcpu_gauge_register() or a collector.
	 * @since 0.3
	 */
	PCPU_METRIC_INFO = 4,
	/**
	 * Quantiles of a sliding window, with _sum and _count
	 * (<percpu/summary.h> and collectors only). @since 0.5
	 */
	PCPU_METRIC_SUMMARY = 5,
};

/**
 * Constant labels for a metric description or a shared segment's item:
 * PCPU_LABELS("key", "value", ...), NULL-terminated. C only. @since 0.3
 */
#define PCPU_LABELS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/**
 * A client: the library above percpu that keeps descriptions of objects.
 * An object carries PCPU_COUNTER_F_DESCRIBED (struct pcpu_counter's flags)
 * or PCPU_STAT_F_DESCRIBED (struct pcpu_stat's), set by the client; its
 * destroy then calls @c forget before the memory goes. @since 0.4
 */
struct pcpu_client {
	/** @p obj is going: forget it, waiting for any use in progress. */
	void (*forget)(const void *obj);
	/** Before fork(), from percpu's only fork handlers: take its locks. */
	void (*fork_prepare)(void);
	/** After fork(), in the parent: release them. */
	void (*fork_parent)(void);
	/** After fork(), in the child: remake them. */
	void (*fork_child)(void);
};

/**
 * Makes @p client the client (one per process; its memory must stay
 * valid), and installs percpu's fork handlers if they are not yet.
 * Calling it again with the same client only retries the handlers.
 * @return 0; -EINVAL for NULL; -EBUSY if another client is set; -ENOMEM
 *         (pthread_atfork() failed: call again). @since 0.4
 */
PCPU_EXPORT int pcpu_client_set(const struct pcpu_client *client);

/** The operations of a class of registered objects; NULL: nothing to do. @since 0.4 */
struct pcpu_class {
	/** Folds every CPU's pending deltas of @p obj into its central values. */
	void (*fold)(void *obj);
	/**
	 * Before fork(), with the registry locked (a walker may still be
	 * folding @p obj: the class's own state must cope).
	 */
	void (*fork_prepare)(void *obj);
	/** After fork(), in the parent. */
	void (*fork_parent)(void *obj);
	/** In the child, where only the forking thread is left. */
	void (*fork_child)(void *obj);
	/** In the child, once per class that has live objects, before them. */
	void (*fork_child_class)(void);
};

struct pcpu_registry_entry;

/**
 * Registers @p obj of class @p cls (@p cls and @p obj must stay valid until
 * it is removed): pcpu_registry_fold_all() and the refresher fold it, fork
 * calls its class's handlers. @return its entry; NULL with errno ENOMEM.
 * @since 0.4
 */
PCPU_EXPORT struct pcpu_registry_entry *pcpu_registry_add(const struct pcpu_class *cls, void *obj);

/**
 * Unregisters @p e (NULL: nothing). When it returns, no walker uses the
 * object any more, and none will. @since 0.4
 */
PCPU_EXPORT void pcpu_registry_remove(struct pcpu_registry_entry *e);

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_CLIENT_H */
