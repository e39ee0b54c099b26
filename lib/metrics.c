/* SPDX-License-Identifier: MIT */
/*
 * The metrics list (see <percpu/metrics.h>): the list of registered
 * metrics, its walk, and the registration calls of counters, stat sets and
 * file-scope definitions. The name rules are in metric_names.c, the text
 * formats in exposition.c, histograms in histogram.c.
 *
 * One mutex guards the list. Adds never take it: a metric only points at
 * its counter, stat set or histogram, and reading their values is what
 * sum() and snapshot() already do beside adds. Destroying an object takes
 * the lock to unlink its metrics before its memory goes, so a walk in
 * progress (which holds the lock) never reads freed memory.
 *
 * The list is sorted by name, then labels: a family (same name) is
 * contiguous, and output is deterministic.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/stat.h>

#include "cpu_internal.h"
#include "metrics_internal.h"
#include "registry.h"
#include "stat_class.h"

struct metric {
	struct metric *next;
	char *name;    /* the family name */
	char *help;    /* "" if none */
	char *unit;    /* "" if none */
	char **labels; /* sorted by key: {k, v, ..., NULL} */
	enum pcpu_metric_kind kind;
	enum metric_source source;
	void *obj;
	unsigned int item;
	int64_t high_water; /* counters: the largest value exposed */
};

static struct metric *metrics;
static pthread_mutex_t metrics_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int define_errors;

/* Metrics. */

static void free_metric(struct metric *m)
{
	if (!m)
		return;
	if (m->labels)
		for (char **l = m->labels; *l; l++)
			free(*l);
	free(m->labels);
	free(m->name);
	free(m->help);
	free(m->unit);
	free(m);
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

static struct metric *new_metric(const struct metric_spec *sp, int nr_labels)
{
	size_t plen = sp->prefix ? strlen(sp->prefix) : 0;
	struct metric *m = calloc(1, sizeof(*m));
	int i;

	if (!m)
		return NULL;
	m->name = malloc(plen + 1 + strlen(sp->name) + 1);
	m->help = dup_or_empty(sp->help);
	m->unit = dup_or_empty(sp->unit);
	m->labels = calloc(2 * (size_t)nr_labels + 1, sizeof(char *));
	if (!m->name || !m->help || !m->unit || !m->labels)
		goto fail;
	if (plen)
		strcpy(stpcpy(stpcpy(m->name, sp->prefix), "_"), sp->name);
	else
		strcpy(m->name, sp->name);
	/* insertion sort by key: a few labels */
	for (i = 0; i < nr_labels; i++) {
		const char *k = sp->labels[2 * i], *v = sp->labels[2 * i + 1];
		int j = i;

		while (j > 0 && strcmp(m->labels[2 * (j - 1)], k) > 0) {
			m->labels[2 * j] = m->labels[2 * (j - 1)];
			m->labels[2 * j + 1] = m->labels[2 * (j - 1) + 1];
			j--;
		}
		m->labels[2 * j] = strdup(k);
		m->labels[2 * j + 1] = strdup(v);
		if (!m->labels[2 * j] || !m->labels[2 * j + 1]) {
			/* keep the array NULL-terminated for free_metric() */
			free(m->labels[2 * j]);
			free(m->labels[2 * j + 1]);
			for (int t = j; t < i; t++) {
				m->labels[2 * t] = m->labels[2 * (t + 1)];
				m->labels[2 * t + 1] = m->labels[2 * (t + 1) + 1];
			}
			m->labels[2 * i] = m->labels[2 * i + 1] = NULL;
			goto fail;
		}
	}
	m->kind = sp->kind;
	m->source = sp->source;
	m->obj = sp->obj;
	m->item = sp->item;
	return m;
fail:
	free_metric(m);
	return NULL;
}

static int compare_labels(char *const *a, char *const *b)
{
	for (;; a += 2, b += 2) {
		int d;

		if (!*a || !*b)
			return (*a != NULL) - (*b != NULL);
		d = strcmp(a[0], b[0]);
		if (!d)
			d = strcmp(a[1], b[1]);
		if (d)
			return d;
	}
}

/* Does a sample (or family) name of @a equal one of @b? */
static bool samples_meet(const struct metric *a, const struct metric *b)
{
	return pcpu_metrics_names_meet(a->name, a->kind, b->name, b->kind);
}

/* Links @m in order; -EEXIST if it clashes with a registered metric. Under the lock. */
static int link_metric(struct metric *m)
{
	struct metric **pos = &metrics;

	for (struct metric *e = metrics; e; e = e->next) {
		if (strcmp(e->name, m->name) == 0) {
			/* a label family's name is its own: its children are its samples */
			if (e->source == METRIC_FROM_FAMILY || m->source == METRIC_FROM_FAMILY)
				return -EEXIST;
			if (e->kind != m->kind || strcmp(e->unit, m->unit) != 0 ||
			    compare_labels(e->labels, m->labels) == 0)
				return -EEXIST;
		} else if (samples_meet(e, m)) {
			return -EEXIST;
		}
	}
	while (*pos) {
		int d = strcmp((*pos)->name, m->name);

		if (d > 0 || (d == 0 && compare_labels((*pos)->labels, m->labels) > 0))
			break;
		pos = &(*pos)->next;
	}
	m->next = *pos;
	*pos = m;
	return 0;
}

static void unlink_metric(struct metric *m)
{
	for (struct metric **pos = &metrics; *pos; pos = &(*pos)->next)
		if (*pos == m) {
			*pos = m->next;
			return;
		}
}

/*
 * A fork must not leave the child with the lock held by a vanished thread:
 * the registry's fork handlers, the library's only ones, call these.
 */
static const struct pcpu_registry_client metrics_client = {
	.forget = pcpu_metrics_forget,
	.fork_prepare = pcpu_metrics_fork_prepare,
	.fork_parent = pcpu_metrics_fork_parent,
	.fork_child = pcpu_metrics_fork_child,
};

/* before any metric exists, and before any fork() can find the lock held */
__attribute__((constructor)) static void metrics_client_setup(void)
{
	pcpu_registry_set_client(&metrics_client);
}

void pcpu_metrics_fork_prepare(void)
{
	pthread_mutex_lock(&metrics_lock);
}

void pcpu_metrics_fork_parent(void)
{
	pthread_mutex_unlock(&metrics_lock);
}

void pcpu_metrics_fork_child(void)
{
	pthread_mutex_init(&metrics_lock, NULL);
}

int pcpu_metrics_add(const struct metric_spec *specs, unsigned int n)
{
	struct metric *made[PCPU_STAT_MAX_ITEMS];
	unsigned int i, linked = 0;
	int err = 0;

	if (n > PCPU_STAT_MAX_ITEMS)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		err = pcpu_metrics_check_name(specs[i].prefix, specs[i].name, specs[i].unit,
					      specs[i].kind);
		if (err)
			return err;
		err = pcpu_metrics_check_labels(specs[i].labels, specs[i].kind);
		if (err < 0)
			return err;
	}
	if (pcpu_registry_setup() != 0)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		made[i] = new_metric(&specs[i], pcpu_metrics_check_labels(specs[i].labels, specs[i].kind));
		if (!made[i]) {
			while (i--)
				free_metric(made[i]);
			return -ENOMEM;
		}
	}
	pthread_mutex_lock(&metrics_lock);
	for (; linked < n; linked++) {
		err = link_metric(made[linked]);
		if (err)
			break;
	}
	if (err)
		for (i = 0; i < linked; i++)
			unlink_metric(made[i]);
	pthread_mutex_unlock(&metrics_lock);
	if (err)
		for (i = 0; i < n; i++)
			free_metric(made[i]);
	return err;
}

void pcpu_metrics_forget(const void *obj)
{
	struct metric *dead = NULL;

	pthread_mutex_lock(&metrics_lock);
	for (struct metric **pos = &metrics; *pos;) {
		struct metric *m = *pos;

		if (m->obj == obj) {
			*pos = m->next;
			m->next = dead;
			dead = m;
		} else {
			pos = &m->next;
		}
	}
	pthread_mutex_unlock(&metrics_lock);
	while (dead) {
		struct metric *next = dead->next;

		free_metric(dead);
		dead = next;
	}
}

/* Registration calls. */

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
	if (__atomic_fetch_or(&c->flags, PCPU_COUNTER_F_METRIC, __ATOMIC_ACQ_REL) &
	    PCPU_COUNTER_F_METRIC)
		return -EEXIST;
	sp = (struct metric_spec){ .name = d->name, .help = d->help, .unit = d->unit,
				   .kind = d->kind, .labels = d->labels,
				   .source = METRIC_FROM_COUNTER, .obj = c };
	err = pcpu_metrics_add(&sp, 1);
	if (err)
		__atomic_fetch_and(&c->flags, ~PCPU_COUNTER_F_METRIC, __ATOMIC_ACQ_REL);
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
		pcpu_stat_mark_metric(pub);
	return err;
}

PCPU_EXPORT void __pcpu_metrics_define_desc(struct pcpu_counter *c,
					    const struct pcpu_metric_desc *d)
{
	if (pcpu_counter_init(c, 0) != 0 || pcpu_counter_register(c, d) != 0)
		__atomic_fetch_add(&define_errors, 1, __ATOMIC_RELAXED);
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

/* The walk. */

/* A counter's value never goes down in the exposition. Under the lock. */
static int64_t monotone(struct metric *m, int64_t v)
{
	if (m->kind != PCPU_METRIC_COUNTER)
		return v;
	if (v < m->high_water)
		return m->high_water;
	m->high_water = v;
	return v;
}

/* The nearest int64 of @d, saturated; 0 for NaN (a double gauge's value). */
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

/* Collectors, in the order they were added; under metrics_lock. */
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

PCPU_EXPORT int pcpu_metrics_foreach(int (*cb)(const struct pcpu_metric_sample *, void *),
				     void *arg)
{
	uint64_t buckets[PCPU_HISTOGRAM_MAX_BOUNDS + 1];
	int ret = 0;

	if (!cb)
		return -EINVAL;
	/* before the lock: a family's walk must not register with urcu under it */
	pcpu_family_walk_prepare();
	pthread_mutex_lock(&metrics_lock);
	for (struct metric *m = metrics; m && ret == 0; m = m->next) {
		struct pcpu_metric_sample smp = {
			.name = m->name, .help = m->help, .unit = m->unit, .kind = m->kind,
			.labels = (const char *const *)m->labels, .scale = 1,
		};

		if (m->source == METRIC_FROM_FAMILY) {
			/* one sample per child, written by the family */
			ret = pcpu_family_walk(m->obj, &smp, cb, arg);
			continue;
		}
		switch (m->source) {
		case METRIC_FROM_FAMILY:
			break;
		case METRIC_FROM_GAUGE:
			smp.value = pcpu_gauge_get(m->obj);
			break;
		case METRIC_FROM_GAUGE_DOUBLE:
			smp.dvalue = pcpu_gauge_double_get(m->obj);
			smp.flags = PCPU_METRIC_SAMPLE_F_DOUBLE;
			smp.value = double_to_int64(smp.dvalue);
			break;
		case METRIC_FROM_COUNTER:
			smp.value = monotone(m, pcpu_counter_sum(m->obj));
			break;
		case METRIC_FROM_STAT:
			smp.value = monotone(m, pcpu_stat_sum(m->obj, m->item));
			break;
		case METRIC_FROM_HISTOGRAM: {
			struct pcpu_histogram *h = m->obj;

			ret = pcpu_histogram_snapshot(h, buckets, &smp.sum);
			if (ret)
				break;
			smp.nr_bounds = h->nr_bounds;
			smp.bounds = h->bounds;
			smp.buckets = buckets;
			for (uint32_t i = 0; i <= h->nr_bounds; i++)
				smp.count += buckets[i];
			smp.scale = h->scale;
			break;
		}
		}
		if (ret == 0)
			ret = cb(&smp, arg);
	}
	for (struct collector *c = collectors; c && ret == 0; c = c->next) {
		struct checked_emit ce = { cb, arg };

		ret = c->fn(emit_checked, &ce, c->arg);
	}
	pthread_mutex_unlock(&metrics_lock);
	return ret;
}

/* ---- collectors ---------------------------------------------------------- */

PCPU_EXPORT int pcpu_metrics_collector_add(pcpu_metrics_collector_fn fn, void *arg)
{
	struct collector *c, **tail;

	if (!fn)
		return -EINVAL;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (struct collector){ .fn = fn, .arg = arg };
	pthread_mutex_lock(&metrics_lock);
	for (tail = &collectors; *tail; tail = &(*tail)->next) {
		if ((*tail)->fn == fn && (*tail)->arg == arg) {
			pthread_mutex_unlock(&metrics_lock);
			free(c);
			return -EEXIST;
		}
	}
	*tail = c;
	pthread_mutex_unlock(&metrics_lock);
	return 0;
}

PCPU_EXPORT int pcpu_metrics_collector_remove(pcpu_metrics_collector_fn fn, void *arg)
{
	struct collector *found = NULL;

	pthread_mutex_lock(&metrics_lock);
	for (struct collector **p = &collectors; *p; p = &(*p)->next) {
		if ((*p)->fn == fn && (*p)->arg == arg) {
			found = *p;
			*p = found->next;
			break;
		}
	}
	pthread_mutex_unlock(&metrics_lock);
	free(found);
	return found ? 0 : -ENOENT;
}
