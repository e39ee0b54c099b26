/* SPDX-License-Identifier: MIT */
/*
 * The registration calls (see <percpu/metrics.h>): a counter, a stat set's
 * items and a file-scope definition become metrics on the list
 * (metrics.c), through pcpu_metrics_add(), all or none.
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

#include "metrics_internal.h"

/* File-scope definitions that failed (pcpu_metrics_define_errors()). */
static unsigned int define_errors;
/* The first failure: its negative errno, and what it was, for every scrape */
static int define_err;
static char define_what[256];

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
				   .kind = d->kind, .labels = d->labels,
				   .source = METRIC_FROM_COUNTER, .obj = c };
	err = pcpu_metrics_add(&sp, 1);
	if (err)
		__atomic_fetch_and(&c->flags, ~PCPU_COUNTER_F_DESCRIBED, __ATOMIC_ACQ_REL);
	return err;
}

PCPU_EXPORT int pcpu_stat_register(struct pcpu_stat *pub, const char *prefix)
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
					      .source = METRIC_FROM_STAT, .obj = pub, .item = i };
	err = pcpu_metrics_add(sp, pub->nr_items);
	free(sp);
	if (!err)
		__atomic_fetch_or(&pub->flags, PCPU_STAT_F_DESCRIBED, __ATOMIC_RELEASE);
	return err;
}

/*
 * A definition that failed must be impossible to miss (issue 24: a name
 * defined in two files hid the second's adds): it is said on stderr at
 * once, the only channel a constructor has, and from then on every
 * exposition fails with its errno (pcpu_metrics_foreach()), so that the
 * first scrape reports it (HTTP 500 with this text).
 */
static void define_failed(const struct pcpu_metric_desc *d, int err)
{
	int expected = 0;

	__atomic_fetch_add(&define_errors, 1, __ATOMIC_RELAXED);
	if (!__atomic_compare_exchange_n(&define_err, &expected, err, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	snprintf(define_what, sizeof(define_what),
		 "the file-scope definition of metric \"%s\" failed: %s%s",
		 d && d->name ? d->name : "(null)", strerror(-err),
		 err == -EEXIST ? " (the name is defined twice, or registered)" : "");
	fprintf(stderr, "percpu: %s; every exposition fails until the program is fixed\n",
		define_what);
}

int pcpu_metrics_define_failure(const char **what)
{
	int err = __atomic_load_n(&define_err, __ATOMIC_ACQUIRE);

	if (what)
		*what = err ? define_what : NULL;
	return err;
}

PCPU_EXPORT void __pcpu_metrics_define_desc(struct pcpu_counter *c,
					    const struct pcpu_metric_desc *d)
{
	int err = pcpu_counter_init(c, 0);

	if (!err)
		err = pcpu_counter_register(c, d);
	if (err)
		define_failed(d, err);
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

PCPU_EXPORT unsigned int pcpu_metrics_define_errors(void)
{
	return __atomic_load_n(&define_errors, __ATOMIC_RELAXED);
}
