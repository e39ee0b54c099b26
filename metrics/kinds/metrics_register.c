/* SPDX-License-Identifier: MIT */
/*
 * The registration calls (see <percpu/metrics.h>): a counter, a stat set's
 * items and a file-scope definition become metrics on the list
 * (metrics_list.c), through pcpu_metrics_add(), all or none.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/counter.h>
#include <percpu/cpu.h>
#include <percpu/metrics.h>
#include <percpu/stat.h>

#include "list/list_internal.h"

static int counter_sample(void *obj, unsigned int item, struct pcpu_metric_sample *smp,
			  uint64_t *buckets)
{
	(void)item;
	(void)buckets;
	smp->value = pcpu_counter_sum(obj);
	if (smp->kind == PCPU_METRIC_COUNTER)
		smp->exemplars = pcpu_counter_exemplars(obj, smp->scale);
	return 0;
}

static int stat_item_sample(void *obj, unsigned int item, struct pcpu_metric_sample *smp,
			    uint64_t *buckets)
{
	(void)buckets;
	smp->value = pcpu_stat_sum(obj, item);
	return 0;
}

static const struct metric_source pcpu_counter_source = { .sample = counter_sample };
static const struct metric_source pcpu_stat_item_source = { .sample = stat_item_sample };

PCPU_EXPORT int pcpu_counter_register(struct pcpu_counter *c, const struct pcpu_metric_desc *d)
{
	struct metric_spec sp;
	int err;

	if (!c || !d || !pcpu_counter_initialized(c))
		return -EINVAL;
	if (d->kind != PCPU_METRIC_COUNTER && d->kind != PCPU_METRIC_GAUGE)
		return -EINVAL;
	/*
	 * Claim the bit first, so that two concurrent registrations of one
	 * counter cannot both succeed; folders read the fixed-batch flag, so
	 * change only this bit.
	 */
	if (__atomic_fetch_or(&c->flags, PCPU_COUNTER_F_DESCRIBED, __ATOMIC_ACQ_REL) &
	    PCPU_COUNTER_F_DESCRIBED)
		return -EEXIST;
	sp = (struct metric_spec){ .name = d->name, .help = d->help, .unit = d->unit,
				   .kind = d->kind, .labels = d->labels, .scale = d->scale,
				   .source = &pcpu_counter_source, .obj = c };
	err = pcpu_metrics_add(d->registry, &sp, 1);
	if (err)
		__atomic_fetch_and(&c->flags, ~PCPU_COUNTER_F_DESCRIBED, __ATOMIC_ACQ_REL);
	return err;
}

PCPU_EXPORT int pcpu_stat_register(struct pcpu_stat *pub, const char *prefix)
{
	return pcpu_stat_register_in(pub, prefix, NULL);
}

PCPU_EXPORT int pcpu_stat_register_in(struct pcpu_stat *pub, const char *prefix,
				      struct pcpu_metrics_registry *r)
{
	struct metric_spec *sp;
	int err;

	if (!pub)
		return -EINVAL;
	sp = calloc(pub->nr_items, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	for (unsigned int i = 0; i < pub->nr_items; i++)
		sp[i] = (struct metric_spec){ .prefix = prefix, .name = pcpu_stat_name(pub, i),
					      .help = pcpu_stat_help(pub, i),
					      .kind = pcpu_stat_kind(pub, i),
					      .scale = pcpu_stat_scale(pub, i),
					      .source = &pcpu_stat_item_source, .obj = pub,
					      .item = i };
	err = pcpu_metrics_add(r, sp, pub->nr_items);
	free(sp);
	if (!err)
		__atomic_fetch_or(&pub->flags, PCPU_STAT_F_DESCRIBED, __ATOMIC_RELEASE);
	return err;
}

PCPU_EXPORT void __pcpu_metrics_define_desc(struct pcpu_counter *c,
					    const struct pcpu_metric_desc *d)
{
	int err = pcpu_counter_init(c, 0);

	if (!err)
		err = pcpu_counter_register(c, d);
	if (err)
		pcpu_metrics_define_failed(d ? d->name : NULL, err);
}

PCPU_EXPORT void __pcpu_metrics_define(struct pcpu_counter *c, const char *name,
				       const char *help, enum pcpu_metric_kind kind)
{
	struct pcpu_metric_desc d = { .name = name, .help = help, .kind = kind };

	__pcpu_metrics_define_desc(c, &d);
}

PCPU_EXPORT void __pcpu_metrics_undefine(struct pcpu_counter *c)
{
	pcpu_counter_destroy(c);
	pcpu_cpu_disarm_rseq();
}
