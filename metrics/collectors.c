/* SPDX-License-Identifier: MIT */
/*
 * Collectors (see <percpu/metrics.h>): callbacks that write samples
 * computed at scrape time. Every walk of the metrics list runs them after
 * the registered metrics, under the metrics lock (metrics.c), so they join
 * one exposition; what they emit is checked as a registration would be.
 */
#include <errno.h>
#include <stdlib.h>

#include <percpu/metrics.h>

#include "metrics_internal.h"

/* Collectors, in the order they were added; under the metrics lock. */
struct collector {
	pcpu_metrics_collector_fn fn;
	void *arg;
	struct collector *next;
};

static struct collector *collectors;

/* The longest label value a collector may emit, in bytes. */
#define LABEL_VALUE_MAX 4096

/* What a collector's emit() hands on, once the sample passed the checks. */
struct checked_emit {
	int (*cb)(const struct pcpu_metric_sample *, void *);
	void *arg;
};

static int emit_checked(const struct pcpu_metric_sample *s, void *ctx)
{
	struct checked_emit *ce = ctx;

	if (!s || !s->name || !s->help || !s->unit ||
	    pcpu_metrics_check_name(NULL, s->name, s->unit, s->kind) != 0 ||
	    pcpu_metrics_check_labels(s->labels, s->kind) < 0 ||
	    (s->kind == PCPU_METRIC_HISTOGRAM && s->nr_bounds && (!s->bounds || !s->buckets)))
		return -EINVAL;
	for (unsigned int i = 0; s->labels && s->labels[2 * i]; i++)
		if (pcpu_metrics_check_label_value(s->labels[2 * i + 1], LABEL_VALUE_MAX) != 0)
			return -EINVAL;
	return ce->cb(s, ce->arg);
}

int pcpu_collectors_run(int (*cb)(const struct pcpu_metric_sample *, void *), void *arg)
{
	int ret = 0;

	for (struct collector *c = collectors; c && ret == 0; c = c->next) {
		struct checked_emit ce = { cb, arg };

		ret = c->fn(emit_checked, &ce, c->arg);
	}
	return ret;
}

PCPU_EXPORT int pcpu_metrics_collector_add(pcpu_metrics_collector_fn fn, void *arg)
{
	struct collector *c, **tail;

	if (!fn)
		return -EINVAL;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (struct collector){ .fn = fn, .arg = arg };
	pcpu_metrics_lock();
	for (tail = &collectors; *tail; tail = &(*tail)->next) {
		if ((*tail)->fn == fn && (*tail)->arg == arg) {
			pcpu_metrics_unlock();
			free(c);
			return -EEXIST;
		}
	}
	*tail = c;
	pcpu_metrics_unlock();
	return 0;
}

PCPU_EXPORT int pcpu_metrics_collector_remove(pcpu_metrics_collector_fn fn, void *arg)
{
	struct collector *found = NULL;

	pcpu_metrics_lock();
	for (struct collector **p = &collectors; *p; p = &(*p)->next) {
		if ((*p)->fn == fn && (*p)->arg == arg) {
			found = *p;
			*p = found->next;
			break;
		}
	}
	pcpu_metrics_unlock();
	free(found);
	return found ? 0 : -ENOENT;
}
