/* SPDX-License-Identifier: MIT */
/*
 * Counters and gauges that add doubles (see <percpu/counter_double.h>): a
 * pcpu_counter in fixed point, registered as a scaled counter, so that the
 * list and the formats need nothing of their own. The add is the header's
 * inline; here are the calls around it.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <percpu/counter_double.h>

/* 2^53: the largest scale whose every unit count up to it a double holds */
#define COUNTER_DOUBLE_MAX_SCALE (INT64_C(1) << 53)
/* the per-CPU threshold floor, in amounts of 1: the default floor's 32 */
#define DOUBLE_FLOOR_AMOUNTS 32

PCPU_EXPORT int pcpu_counter_double_init(struct pcpu_counter_double *c,
					 enum pcpu_metric_kind kind, int64_t scale)
{
	struct pcpu_counter_options opts = { 0 };
	int err;

	if (!c || (kind != PCPU_METRIC_COUNTER && kind != PCPU_METRIC_GAUGE) || scale < 0 ||
	    scale > COUNTER_DOUBLE_MAX_SCALE)
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	scale = scale ? scale : PCPU_COUNTER_DOUBLE_SCALE;
	/*
	 * The per-CPU floor in whole amounts, as an integer counter's is 32
	 * adds of 1: in units, 0.25 is 2.5e8 of them at 10^9, and the default
	 * floor (32 units) would send every add to the central value.
	 */
	opts.floor = scale > PCPU_COUNTER_MAX_BATCH / DOUBLE_FLOOR_AMOUNTS ?
			     PCPU_COUNTER_MAX_BATCH : DOUBLE_FLOOR_AMOUNTS * scale;
	err = pcpu_counter_init_opts(&c->counter, 0, &opts);
	if (err)
		return err;
	c->iscale = scale;
	c->scale = (double)c->iscale;
	c->kind = kind;
	return 0;
}

PCPU_EXPORT void pcpu_counter_double_destroy(struct pcpu_counter_double *c)
{
	if (c && c->iscale)
		pcpu_counter_destroy(&c->counter);
}

PCPU_EXPORT int pcpu_counter_double_register(struct pcpu_counter_double *c,
					     const struct pcpu_metric_desc *d)
{
	struct pcpu_metric_desc scaled;

	if (!c || !c->iscale || !d || d->kind != (enum pcpu_metric_kind)c->kind ||
	    (d->scale != 0 && d->scale != c->iscale))
		return -EINVAL;
	scaled = *d;
	scaled.scale = c->iscale;
	return pcpu_counter_register(&c->counter, &scaled);
}

PCPU_EXPORT int __pcpu_counter_double_refuse(struct pcpu_counter_double *c)
{
	__atomic_fetch_add(&c->refused, 1, __ATOMIC_RELAXED);
	return -EINVAL;
}

PCPU_EXPORT double pcpu_counter_double_sum(const struct pcpu_counter_double *c)
{
	if (!c || !c->iscale)
		return 0;
	return (double)pcpu_counter_sum(&c->counter) / c->scale;
}
