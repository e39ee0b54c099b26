/* SPDX-License-Identifier: MIT */
/*
 * The metrics list (see <percpu/metrics.h>): the registered metrics and
 * their walk. The registration calls of counters, stat sets and file-scope
 * definitions are in metrics_register.c, collectors in collectors.c, the
 * name rules in metric_names.c, the text formats in exposition.c.
 *
 * One mutex guards the list, the collectors' list and every walk of the
 * registered metrics (collectors run outside it: collectors.c). Adds never
 * take it: a metric only points at its counter, stat set or histogram, and
 * reading their values is what sum() and snapshot() already do beside adds.
 * Destroying an object takes the lock to unlink its metrics before its
 * memory goes, so a walk in progress (which holds the lock) never reads
 * freed memory.
 *
 * The list is two sorted arrays of the same metrics. By name, then labels:
 * a family (same name) is contiguous, output is deterministic, and a
 * name's family, the one check a registration makes against each family
 * whose samples could clash with its own, is a binary search. By the object
 * a metric reads: destroying an object finds its metrics by binary search.
 * So registering or forgetting a metric costs O(log n) comparisons and a
 * memmove of pointers, not a walk of every metric.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/client.h>
#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/stat.h>

#include "metrics_internal.h"

/* The longest constant label value, as a family's (PCPU_FAMILY_MAX_VALUE_LEN). */
#define METRIC_MAX_LABEL_VALUE 1024

struct metric {
	struct metric *next; /* on the list of the unlinked, to free */
	char *name;    /* the family name */
	char *help;    /* "" if none */
	char *unit;    /* "" if none */
	char **labels; /* sorted by key: {k, v, ..., NULL} */
	enum pcpu_metric_kind kind;
	const struct metric_source *source;
	void *obj;
	unsigned int item;
	int64_t scale;      /* 1: none */
	int64_t high_water; /* counters: the largest value exposed */
};

static struct metric **by_name, **by_obj;
static size_t nr_metrics, capacity;

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
	m->scale = sp->scale > 1 ? sp->scale : 1;
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

/* The order of by_name; NULL @labels sort before any. */
static int compare_key(const struct metric *e, const char *name, char *const *labels)
{
	int d = strcmp(e->name, name);

	return d || !labels ? d : compare_labels(e->labels, labels);
}

/* The first index of by_name not below (@name, @labels); NULL @labels: @name's first. */
static size_t name_rank(const char *name, char *const *labels)
{
	size_t lo = 0, hi = nr_metrics;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (compare_key(by_name[mid], name, labels) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first index of by_obj whose object is not below @obj. */
static size_t obj_rank(const void *obj)
{
	size_t lo = 0, hi = nr_metrics;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((uintptr_t)by_obj[mid]->obj < (uintptr_t)obj)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first metric of the family @name, or NULL. */
static struct metric *family_of(const char *name)
{
	size_t i = name_rank(name, NULL);

	return i < nr_metrics && strcmp(by_name[i]->name, name) == 0 ? by_name[i] : NULL;
}

/* Room for @more metrics in both arrays; -ENOMEM. Under the lock. */
static int reserve(size_t more)
{
	size_t cap = capacity ? capacity : 64;
	struct metric **a;

	if (nr_metrics + more <= capacity)
		return 0;
	while (cap < nr_metrics + more)
		cap *= 2;
	a = realloc(by_name, cap * sizeof(*a));
	if (!a)
		return -ENOMEM;
	by_name = a;
	a = realloc(by_obj, cap * sizeof(*a));
	if (!a)
		return -ENOMEM;
	by_obj = a;
	capacity = cap;
	return 0;
}

/* Shifts @a[@i..] up one and puts @m at @i (nr_metrics not yet counting it). */
static void insert_at(struct metric **a, size_t i, struct metric *m)
{
	memmove(&a[i + 1], &a[i], (nr_metrics - i) * sizeof(*a));
	a[i] = m;
}

/* Shifts @a[@i + 1..] down one (nr_metrics still counting the one at @i). */
static void remove_at(struct metric **a, size_t i)
{
	memmove(&a[i], &a[i + 1], (nr_metrics - i - 1) * sizeof(*a));
}

/* -EEXIST if family @name is registered and its samples meet @arg's. */
static int rival_meets(const char *name, void *arg)
{
	const struct metric *e = family_of(name);

	return e && samples_meet(e, arg) ? -EEXIST : 0;
}

/*
 * Links @m in order; -EEXIST if it clashes with a registered metric. Under
 * the lock, with room reserved.
 */
static int link_metric(struct metric *m)
{
	const struct metric *e = family_of(m->name);
	size_t at = name_rank(m->name, m->labels);
	int err;

	if (e) {
		/* a label family's name is its own: its children are its samples */
		if (e->source->own_name || m->source->own_name)
			return -EEXIST;
		/* every member agrees with the first */
		if (e->kind != m->kind || strcmp(e->unit, m->unit) != 0)
			return -EEXIST;
		if (at < nr_metrics && compare_key(by_name[at], m->name, m->labels) == 0)
			return -EEXIST;
	}
	err = pcpu_metrics_rivals(m->name, m->kind, rival_meets, m);
	if (err)
		return err;
	insert_at(by_name, at, m);
	insert_at(by_obj, obj_rank(m->obj), m);
	nr_metrics++;
	return 0;
}

/* Unlinks @m, which is linked. Under the lock. */
static void unlink_metric(struct metric *m)
{
	size_t i = obj_rank(m->obj);

	while (by_obj[i] != m)
		i++;
	remove_at(by_obj, i);
	remove_at(by_name, name_rank(m->name, m->labels));
	nr_metrics--;
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
		if (specs[i].scale < 0 ||
		    (specs[i].scale > 1 && specs[i].kind != PCPU_METRIC_COUNTER &&
		     specs[i].kind != PCPU_METRIC_GAUGE))
			return -EINVAL;
		/* both formats are UTF-8: a value that is not would spoil the body */
		for (int k = 0; k < err; k++)
			if (pcpu_metrics_check_label_value(specs[i].labels[2 * k + 1],
							   METRIC_MAX_LABEL_VALUE))
				return -EINVAL;
	}
	if (pcpu_metrics_client_setup() != 0)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		made[i] = new_metric(&specs[i], pcpu_metrics_check_labels(specs[i].labels, specs[i].kind));
		if (!made[i]) {
			while (i--)
				free_metric(made[i]);
			return -ENOMEM;
		}
	}
	pcpu_metrics_lock();
	err = reserve(n);
	for (; !err && linked < n; linked++) {
		err = link_metric(made[linked]);
		if (err)
			break;
	}
	if (err)
		for (i = 0; i < linked; i++)
			unlink_metric(made[i]);
	pcpu_metrics_unlock();
	if (err)
		for (i = 0; i < n; i++)
			free_metric(made[i]);
	return err;
}

void pcpu_metrics_forget(const void *obj)
{
	struct metric *dead = NULL;

	pcpu_metrics_lock();
	for (size_t i = obj_rank(obj); i < nr_metrics && by_obj[i]->obj == obj;) {
		struct metric *m = by_obj[i];

		unlink_metric(m);
		m->next = dead;
		dead = m;
	}
	pcpu_metrics_unlock();
	/* no scrape reads @obj's exemplars now (they are in its metrics' samples) */
	pcpu_exemplars_forget(obj);
	while (dead) {
		struct metric *next = dead->next;

		free_metric(dead);
		dead = next;
	}
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

/* pcpu_metrics_before_scrape()'s function, or NULL */
static void (*before_scrape)(void);

void pcpu_metrics_before_scrape(void (*fn)(void))
{
	__atomic_store_n(&before_scrape, fn, __ATOMIC_RELEASE);
}

/*
 * percpu_family_refused_total{family="..."}: one series per label family
 * that refused a get or has an overflow child (<percpu/family.h>). Through
 * the collectors' checks: a registered metric of that name wins. Under the
 * lock.
 */
static int expose_refusals(struct pcpu_scrape *scrape)
{
	for (size_t i = 0; i < nr_metrics; i++) {
		struct metric *m = by_name[i];
		const char *labels[] = { "family", m->name, NULL };
		struct pcpu_metric_sample smp = {
			.name = "percpu_family_refused",
			.help = "Gets of a label family answered without a child of their own.",
			.unit = "", .kind = PCPU_METRIC_COUNTER, .labels = labels, .scale = 1,
		};

		if (!m->source->refusals || !m->source->refusals(m->obj, &smp.value))
			continue;
		if (pcpu_scrape_emit(&smp, scrape) == -ENOMEM)
			return -ENOMEM;
	}
	return 0;
}

PCPU_EXPORT int pcpu_metrics_foreach(int (*cb)(const struct pcpu_metric_sample *, void *),
				     void *arg)
{
	uint64_t buckets[PCPU_HISTOGRAM_MAX_BOUNDS + 1];
	struct pcpu_scrape *scrape;
	int ret = 0;

	if (!cb)
		return -EINVAL;
	/* a failed definition fails every exposition (metrics_register.c) */
	ret = pcpu_metrics_define_failure(NULL);
	if (ret)
		return ret;
	/* what the registered metrics wrote, for the collectors' checks */
	scrape = pcpu_scrape_new(cb, arg);
	if (!scrape)
		return -ENOMEM;
	cb = pcpu_scrape_note;
	arg = scrape;
	/* before the lock: a family's walk must not register with urcu under it */
	void (*before)(void) = __atomic_load_n(&before_scrape, __ATOMIC_ACQUIRE);

	if (before)
		before();
	pcpu_metrics_lock();
	for (size_t i = 0; i < nr_metrics && ret == 0; i++) {
		struct metric *m = by_name[i];
		struct pcpu_metric_sample smp = {
			.name = m->name, .help = m->help, .unit = m->unit, .kind = m->kind,
			.labels = (const char *const *)m->labels, .scale = m->scale,
		};

		if (m->source->walk) {
			/* samples of its own (a family's children) */
			ret = m->source->walk(m->obj, &smp, cb, arg);
			continue;
		}
		ret = m->source->sample(m->obj, m->item, &smp, buckets);
		if (ret == 0) {
			smp.value = monotone(m, smp.value);
			ret = cb(&smp, arg);
		}
	}
	if (ret == 0)
		ret = expose_refusals(scrape);
	pcpu_metrics_unlock();
	/* outside the lock: a slow collector holds up neither fork() nor registration */
	if (ret == 0)
		ret = pcpu_collectors_run(scrape);
	pcpu_scrape_free(scrape);
	return ret;
}
