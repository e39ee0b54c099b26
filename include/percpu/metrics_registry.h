/* SPDX-License-Identifier: MIT */
/**
 * @file metrics_registry.h
 * Registries: metrics exposed apart from the process's, with constant
 * labels of their own (a module's or a tenant's), as prometheus-cpp's and
 * the Go client's registries.
 *
 * Every metric is registered in one registry: the process's (what
 * pcpu_metrics_write(), pcpu_metrics_respond() and the built-in server
 * expose), or one made by
 * pcpu_metrics_registry_create(), named by the @c registry field of its
 * descriptor (struct pcpu_metric_desc, pcpu_histogram_desc,
 * pcpu_family_desc) or pcpu_stat_register_in(); NULL is the process's.
 * Names are unique within a registry, so that two registries may each
 * have "requests". A registry's exposition holds its own metrics, then the
 * samples of its own collectors (pcpu_metrics_registry_collector_add();
 * pcpu_metrics_collector_add() adds to the process's), each series with the
 * registry's constant labels added (a collector's sample keeps its own
 * label where it has one of the same name).
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
 * The most registries that one exposition may merge within each other
 * (pcpu_metrics_registry_collector()), so that registries that merge each
 * other end with ELOOP rather than recurse without end. @since 0.4
 */
#define PCPU_METRICS_REGISTRY_MAX_NESTING 8

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
 * Destroys @p r, which must hold no metric and no collector: destroy or
 * unregister them, and remove its collectors, first. No other call on
 * @p r may overlap it or follow it: remove pcpu_metrics_registry_collector()
 * with @p r from where it was added, and stop a server of it, first. NULL:
 * nothing.
 * @return 0; -EBUSY while a metric is registered in @p r or a collector
 *         added to it (nothing done).
 * @since 0.4
 */
PCPU_EXPORT int pcpu_metrics_registry_destroy(struct pcpu_metrics_registry *r);

/**
 * Adds collector @p fn with argument @p arg to the expositions of registry
 * @p r (NULL: the process's, as pcpu_metrics_collector_add_flags()), after
 * the ones added to it before. As pcpu_metrics_collector_add_flags()
 * otherwise: @p flags 0 or PCPU_METRICS_COLLECTOR_F_CONTINUE; the same
 * @p fn and @p arg may be added to several registries.
 * @return 0; -EINVAL for NULL @p fn or an unknown flag; -EEXIST if @p fn
 *         with @p arg is already added to @p r; -ENOMEM. @since 0.4
 */
PCPU_EXPORT int pcpu_metrics_registry_collector_add(struct pcpu_metrics_registry *r,
						    pcpu_metrics_collector_fn fn, void *arg,
						    unsigned int flags);

/**
 * Removes collector @p fn with argument @p arg from registry @p r (NULL: the
 * process's), after every exposition running it has returned from it.
 * @return 0, or -ENOENT if it was not added to @p r. @since 0.4
 */
PCPU_EXPORT int pcpu_metrics_registry_collector_remove(struct pcpu_metrics_registry *r,
						       pcpu_metrics_collector_fn fn, void *arg);

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
 * pcpu_metrics_foreach()), then for its collectors' samples, with the
 * registry's constant labels among each sample's, as pcpu_metrics_foreach()
 * does (the metrics under the metrics lock, the collectors outside it).
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
 * still go. The registry's own collectors run too. Remove it before
 * destroying the registry.
 * @return 0; -EINVAL for NULL @p emit or @p registry; -ELOOP past
 *         PCPU_METRICS_REGISTRY_MAX_NESTING registries merged within each
 *         other (registries that merge each other); -ENOMEM; what a
 *         collector of the registry returned (as its exposition does); or
 *         what @p emit returned other than a refusal. @since 0.4
 */
PCPU_EXPORT int pcpu_metrics_registry_collector(int (*emit)(const struct pcpu_metric_sample *s,
							    void *ctx),
						void *ctx, void *registry);

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_METRICS_REGISTRY_H */
