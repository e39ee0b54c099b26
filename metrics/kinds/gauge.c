/* SPDX-License-Identifier: MIT */
/*
 * Set-style gauges (see <percpu/gauge.h>): registration only; the values
 * are atomics that the header's inline calls and the exposition
 * (metrics_list.c) read and write directly.
 */
#include <errno.h>
#include <stddef.h>

#include <percpu/gauge.h>

#include "list/list_internal.h"

static int gauge_sample(void *obj, unsigned int item, struct pcpu_metric_sample *smp,
			uint64_t *buckets)
{
	(void)item;
	(void)buckets;
	smp->value = pcpu_gauge_get(obj);
	return 0;
}

/* The nearest int64 of @d, saturated; 0 for NaN. */
static int64_t double_to_int64(double d)
{
	if (d != d)
		return 0;
	if (d >= 9223372036854775807.0)
		return INT64_MAX;
	if (d <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
}

static int gauge_double_sample(void *obj, unsigned int item, struct pcpu_metric_sample *smp,
			       uint64_t *buckets)
{
	(void)item;
	(void)buckets;
	smp->dvalue = pcpu_gauge_double_get(obj);
	smp->flags = PCPU_METRIC_SAMPLE_F_DOUBLE;
	smp->value = double_to_int64(smp->dvalue);
	return 0;
}

static const struct metric_source pcpu_gauge_source = { .sample = gauge_sample };
static const struct metric_source pcpu_gauge_double_source = { .sample = gauge_double_sample };

/*
 * Claims the flag first, so that two concurrent registrations of one gauge
 * cannot both succeed (as pcpu_counter_register() does).
 */
static int register_gauge(void *g, uint32_t *flags, const struct metric_source *source,
			  const struct pcpu_metric_desc *d)
{
	struct metric_spec sp;
	int err;

	if (!g || !d || (d->kind != PCPU_METRIC_GAUGE &&
			 (d->kind != PCPU_METRIC_INFO || source != &pcpu_gauge_source)))
		return -EINVAL;
	/* a double needs no scale; pcpu_metrics_add() checks the rest */
	if (d->scale > 1 && source == &pcpu_gauge_double_source)
		return -EINVAL;
	if (__atomic_fetch_or(flags, PCPU_GAUGE_F_METRIC, __ATOMIC_ACQ_REL) & PCPU_GAUGE_F_METRIC)
		return -EEXIST;
	sp = (struct metric_spec){ .name = d->name, .help = d->help, .unit = d->unit,
				   .kind = d->kind, .labels = d->labels, .scale = d->scale,
				   .source = source, .obj = g };
	err = pcpu_metrics_add(d->registry, &sp, 1);
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
	return register_gauge(g, g ? &g->flags : NULL, &pcpu_gauge_source, d);
}

PCPU_EXPORT void pcpu_gauge_unregister(struct pcpu_gauge *g)
{
	if (g)
		unregister_gauge(g, &g->flags);
}

PCPU_EXPORT int pcpu_gauge_double_register(struct pcpu_gauge_double *g,
					   const struct pcpu_metric_desc *d)
{
	return register_gauge(g, g ? &g->flags : NULL, &pcpu_gauge_double_source, d);
}

PCPU_EXPORT void pcpu_gauge_double_unregister(struct pcpu_gauge_double *g)
{
	if (g)
		unregister_gauge(g, &g->flags);
}
