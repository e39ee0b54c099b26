/* SPDX-License-Identifier: MIT */
/*
 * Set-style gauges (see <percpu/gauge.h>): registration only; the values
 * are atomics that the header's inline calls and the exposition
 * (metrics.c) read and write directly.
 */
#include <errno.h>
#include <stddef.h>

#include <percpu/gauge.h>

#include "metrics_internal.h"

/*
 * Claims the flag first, so that two concurrent registrations of one gauge
 * cannot both succeed (as pcpu_counter_register() does).
 */
static int register_gauge(void *g, uint32_t *flags, enum metric_source source,
			  const struct pcpu_metric_desc *d)
{
	struct metric_spec sp;
	int err;

	if (!g || !d || (d->kind != PCPU_METRIC_GAUGE &&
			 (d->kind != PCPU_METRIC_INFO || source != METRIC_FROM_GAUGE)))
		return -EINVAL;
	if (__atomic_fetch_or(flags, PCPU_GAUGE_F_METRIC, __ATOMIC_ACQ_REL) & PCPU_GAUGE_F_METRIC)
		return -EEXIST;
	sp = (struct metric_spec){ .name = d->name, .help = d->help, .unit = d->unit,
				   .kind = d->kind, .labels = d->labels, .source = source,
				   .obj = g };
	err = pcpu_metrics_add(&sp, 1);
	if (err)
		__atomic_fetch_and(flags, ~PCPU_GAUGE_F_METRIC, __ATOMIC_ACQ_REL);
	return err;
}

static void unregister_gauge(void *g, uint32_t *flags)
{
	if (__atomic_load_n(flags, __ATOMIC_ACQUIRE) & PCPU_GAUGE_F_METRIC) {
		pcpu_metrics_forget(g);
		__atomic_fetch_and(flags, ~PCPU_GAUGE_F_METRIC, __ATOMIC_ACQ_REL);
	}
}

PCPU_EXPORT int pcpu_gauge_register(struct pcpu_gauge *g, const struct pcpu_metric_desc *d)
{
	return register_gauge(g, g ? &g->flags : NULL, METRIC_FROM_GAUGE, d);
}

PCPU_EXPORT void pcpu_gauge_unregister(struct pcpu_gauge *g)
{
	if (g)
		unregister_gauge(g, &g->flags);
}

PCPU_EXPORT int pcpu_gauge_double_register(struct pcpu_gauge_double *g,
					   const struct pcpu_metric_desc *d)
{
	return register_gauge(g, g ? &g->flags : NULL, METRIC_FROM_GAUGE_DOUBLE, d);
}

PCPU_EXPORT void pcpu_gauge_double_unregister(struct pcpu_gauge_double *g)
{
	if (g)
		unregister_gauge(g, &g->flags);
}
