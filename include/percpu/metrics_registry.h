/* SPDX-License-Identifier: MIT */
/**
 * @file metrics_registry.h
 * Registries: metrics exposed apart from the process's, with constant
 * labels of their own (a module's or a tenant's), as prometheus-cpp's and
 * the Go client's registries.
 *
 * Every metric is registered in one registry: the process's (what
 * pcpu_metrics_write(), pcpu_metrics_respond() and the built-in server
 * expose, with the collectors), or one made by
 * pcpu_metrics_registry_create(), named by the @c registry field of its
 * descriptor (struct pcpu_metric_desc, pcpu_histogram_desc,
 * pcpu_family_desc) or pcpu_stat_register_in(); NULL is the process's.
 * Names are unique within a registry, so that two registries may each
 * have "requests". A registry's exposition holds its own metrics, each
 * series with the registry's constant labels added, and no collector.
 *
 * To serve a registry alone: pcpu_metrics_registry_write(),
 * pcpu_metrics_registry_respond(), or the @c registry option of
 * pcpu_metrics_serve_opts(). To merge it into the process's exposition:
 * pcpu_metrics_collector_add(pcpu_metrics_registry_collector, r).
 *
 * Concurrency: as the process's metrics (<percpu/metrics.h>): one lock for
 * all registries, taken by registration and by walks, never by an add.
 *
 * Link: pkg-config percpu-metrics.
 * @since 0.4
 */
#ifndef PERCPU_METRICS_REGISTRY_H
#define PERCPU_METRICS_REGISTRY_H

#include <stdio.h>

#include <percpu/common.h>
#include <percpu/metrics.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pcpu_stat;

/** The most constant labels of a registry. @since 0.4 */
#define PCPU_METRICS_REGISTRY_MAX_LABELS 16

/**
 * Creates a registry whose every series carries the constant labels
 * @p labels: NULL or {"key", "value", ..., NULL}, at most
 * PCPU_METRICS_REGISTRY_MAX_LABELS, as a struct pcpu_metric_desc's labels
 * (copied), and no "le". A metric registered in it may not have a label of
 * the same name (EINVAL).
 * @return the registry; NULL with errno EINVAL (a bad, repeated or "le"
 *         name, an odd list, a value not UTF-8 or longer than 1024 bytes,
 *         too many labels) or ENOMEM. @since 0.4
 */
PCPU_EXPORT struct pcpu_metrics_registry *pcpu_metrics_registry_create(const char *const *labels);

/**
 * Destroys @p r, which must hold no metric: destroy or unregister them
 * first. No other call on @p r may overlap it or follow it: remove
 * pcpu_metrics_registry_collector() with @p r, and stop a server of it,
 * first. NULL: nothing.
 * @return 0; -EBUSY while a metric is registered in @p r (nothing done).
 * @since 0.4
 */
PCPU_EXPORT int pcpu_metrics_registry_destroy(struct pcpu_metrics_registry *r);

/**
 * Registers every item of @p s in registry @p r (NULL: the process's), as
 * pcpu_stat_register() does in the process's.
 * A set may be registered in several registries.
 * @return as pcpu_stat_register(). @since 0.4
 */
PCPU_EXPORT int pcpu_stat_register_in(struct pcpu_stat *s, const char *prefix,
				      struct pcpu_metrics_registry *r);

/**
 * Writes the metrics of @p r (NULL: the process's, as pcpu_metrics_write())
 * to @p out in format @p f.
 * @return as pcpu_metrics_write(); a registry's exposition does not fail
 *         for a failed file-scope definition (those are the process's).
 * @since 0.4
 */
PCPU_EXPORT int pcpu_metrics_registry_write(struct pcpu_metrics_registry *r, FILE *out,
					    enum pcpu_metrics_format f);

/**
 * Calls @p cb for every metric of @p r (NULL: the process's, as
 * pcpu_metrics_foreach(), collectors included) with the registry's
 * constant labels among each sample's, under the metrics lock, as
 * pcpu_metrics_foreach() does.
 * @return 0, what @p cb returned, -EINVAL for NULL @p cb, or -ENOMEM.
 * @since 0.4
 */
PCPU_EXPORT int pcpu_metrics_registry_foreach(struct pcpu_metrics_registry *r,
					      int (*cb)(const struct pcpu_metric_sample *, void *),
					      void *arg);

/**
 * A collector (pcpu_metrics_collector_fn) of the registry @p registry (a
 * struct pcpu_metrics_registry *, not NULL): added with
 * pcpu_metrics_collector_add(pcpu_metrics_registry_collector, r), the
 * registry's metrics, with its constant labels, join the process's
 * exposition. emit() checks them as any collector's samples: a family that
 * the exposition has written already (the same name in the process's
 * registry, or in another registry merged before) is refused and counted
 * (pcpu_metrics_collector_refused()), and the registry's other samples
 * still go. Remove it before destroying the registry.
 * @return 0; -EINVAL for NULL @p emit or @p registry; -ENOMEM; or what
 *         @p emit returned other than a refusal. @since 0.4
 */
PCPU_EXPORT int pcpu_metrics_registry_collector(int (*emit)(const struct pcpu_metric_sample *s,
							    void *ctx),
						void *ctx, void *registry);

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_METRICS_REGISTRY_H */
