/* SPDX-License-Identifier: MIT */
/*
 * The metrics list (see <percpu/metrics.h>): the registered metrics and
 * their walk. The registration calls of counters, stat sets and file-scope
 * definitions are in metrics/kinds/metrics_register.c, collectors in
 * collectors.c, the name rules in lib/base/names.c, the text formats in
 * metrics/format/exposition.c.
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
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/client.h>
#include <percpu/metrics.h>
#include <percpu/stat.h>

#include "list/list_internal.h"

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
	double created;     /* when registered (PCPU_METRIC_SAMPLE_F_CREATED) */
};

/*
 * A registry (<percpu/metrics_registry.h>): a list of its own. The
 * process's registry is the one that pcpu_metrics_write() exposes, with the
 * collectors; every other is made by pcpu_metrics_registry_create(). All
 * share the metrics lock, which guards the list of registries too.
 */
struct pcpu_metrics_registry {
	struct pcpu_metrics_registry *next; /* on the list of registries */
	struct metric **by_name, **by_obj;
	size_t nr_metrics, capacity;
	char **labels;           /* constant labels, sorted by key: {k, v, ..., NULL} */
	unsigned int nr_labels;
};

static struct pcpu_metrics_registry process_registry;
static struct pcpu_metrics_registry *registries = &process_registry;

/* @r, or the process's registry for NULL. */
static struct pcpu_metrics_registry *registry_or_process(struct pcpu_metrics_registry *r)
{
	return r ? r : &process_registry;
}

/* Metrics. */

/* Frees a label array of sorted_labels() (NULL: nothing). */
static void free_labels(char **labels)
{
	if (labels)
		for (char **l = labels; *l; l++)
			free(*l);
	free(labels);
}

/* A copy of the @n labels of @labels, sorted by key; NULL for want of memory. */
static char **sorted_labels(const char *const *labels, int n)
{
	char **sorted = calloc(2 * (size_t)n + 1, sizeof(char *));

	if (!sorted)
		return NULL;
	/* insertion sort by key: a few labels */
	for (int i = 0; i < n; i++) {
		const char *k = labels[2 * i], *v = labels[2 * i + 1];
		int j = i;

		while (j > 0 && strcmp(sorted[2 * (j - 1)], k) > 0) {
			sorted[2 * j] = sorted[2 * (j - 1)];
			sorted[2 * j + 1] = sorted[2 * (j - 1) + 1];
			j--;
		}
		sorted[2 * j] = strdup(k);
		sorted[2 * j + 1] = strdup(v);
		if (!sorted[2 * j] || !sorted[2 * j + 1]) {
			/* keep the array NULL-terminated for free_labels() */
			free(sorted[2 * j]);
			free(sorted[2 * j + 1]);
			for (int t = j; t < i; t++) {
				sorted[2 * t] = sorted[2 * (t + 1)];
				sorted[2 * t + 1] = sorted[2 * (t + 1) + 1];
			}
			sorted[2 * i] = sorted[2 * i + 1] = NULL;
			free_labels(sorted);
			return NULL;
		}
	}
	return sorted;
}

static void free_metric(struct metric *m)
{
	if (!m)
		return;
	free_labels(m->labels);
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

	if (!m)
		return NULL;
	m->name = malloc(plen + 1 + strlen(sp->name) + 1);
	m->help = dup_or_empty(sp->help);
	m->unit = dup_or_empty(sp->unit);
	m->labels = sorted_labels(sp->labels, nr_labels);
	if (!m->name || !m->help || !m->unit || !m->labels) {
		free_metric(m);
		return NULL;
	}
	if (plen)
		strcpy(stpcpy(stpcpy(m->name, sp->prefix), "_"), sp->name);
	else
		strcpy(m->name, sp->name);
	m->kind = sp->kind;
	m->source = sp->source;
	m->obj = sp->obj;
	m->item = sp->item;
	m->scale = sp->scale > 1 ? sp->scale : 1;
	m->created = pcpu_metrics_now();
	return m;
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

/* The first index of @r's by_name not below (@name, @labels); NULL @labels: @name's first. */
static size_t name_rank(const struct pcpu_metrics_registry *r, const char *name,
			char *const *labels)
{
	size_t lo = 0, hi = r->nr_metrics;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (compare_key(r->by_name[mid], name, labels) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first index of @r's by_obj whose object is not below @obj. */
static size_t obj_rank(const struct pcpu_metrics_registry *r, const void *obj)
{
	size_t lo = 0, hi = r->nr_metrics;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((uintptr_t)r->by_obj[mid]->obj < (uintptr_t)obj)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first metric of the family @name in @r, or NULL. */
static struct metric *family_of(const struct pcpu_metrics_registry *r, const char *name)
{
	size_t i = name_rank(r, name, NULL);

	return i < r->nr_metrics && strcmp(r->by_name[i]->name, name) == 0 ? r->by_name[i] : NULL;
}

/* Room for @more metrics in both of @r's arrays; -ENOMEM. Under the lock. */
static int reserve(struct pcpu_metrics_registry *r, size_t more)
{
	size_t cap = r->capacity ? r->capacity : 64;
	struct metric **a;

	if (r->nr_metrics + more <= r->capacity)
		return 0;
	while (cap < r->nr_metrics + more)
		cap *= 2;
	a = realloc(r->by_name, cap * sizeof(*a));
	if (!a)
		return -ENOMEM;
	r->by_name = a;
	a = realloc(r->by_obj, cap * sizeof(*a));
	if (!a)
		return -ENOMEM;
	r->by_obj = a;
	r->capacity = cap;
	return 0;
}

/* Shifts @a[@i..] up one and puts @m at @i (@n metrics before it). */
static void insert_at(struct metric **a, size_t n, size_t i, struct metric *m)
{
	memmove(&a[i + 1], &a[i], (n - i) * sizeof(*a));
	a[i] = m;
}

/* Shifts @a[@i + 1..] down one (@n metrics, counting the one at @i). */
static void remove_at(struct metric **a, size_t n, size_t i)
{
	memmove(&a[i], &a[i + 1], (n - i - 1) * sizeof(*a));
}

/* A metric to link, and the registry it goes in: rival_meets()'s argument. */
struct linking {
	const struct pcpu_metrics_registry *r;
	const struct metric *m;
};

/* -EEXIST if family @name is registered and its samples meet @arg's. */
static int rival_meets(const char *name, void *arg)
{
	const struct linking *l = arg;
	const struct metric *e = family_of(l->r, name);

	return e && samples_meet(e, l->m) ? -EEXIST : 0;
}

/*
 * Links @m in order in @r; -EEXIST if it clashes with a metric registered
 * there. Under the lock, with room reserved.
 */
static int link_metric(struct pcpu_metrics_registry *r, struct metric *m)
{
	const struct metric *e = family_of(r, m->name);
	size_t at = name_rank(r, m->name, m->labels);
	int err;

	if (e) {
		/* a label family's name is its own: its children are its samples */
		if (e->source->own_name || m->source->own_name)
			return -EEXIST;
		/* every member agrees with the first */
		if (e->kind != m->kind || strcmp(e->unit, m->unit) != 0)
			return -EEXIST;
		if (at < r->nr_metrics && compare_key(r->by_name[at], m->name, m->labels) == 0)
			return -EEXIST;
	}
	err = pcpu_metrics_rivals(m->name, m->kind, rival_meets,
				  &(struct linking){ .r = r, .m = m });
	if (err)
		return err;
	insert_at(r->by_name, r->nr_metrics, at, m);
	insert_at(r->by_obj, r->nr_metrics, obj_rank(r, m->obj), m);
	r->nr_metrics++;
	return 0;
}

/* Unlinks @m, which is linked in @r. Under the lock. */
static void unlink_metric(struct pcpu_metrics_registry *r, struct metric *m)
{
	size_t i = obj_rank(r, m->obj);

	while (r->by_obj[i] != m)
		i++;
	remove_at(r->by_obj, r->nr_metrics, i);
	remove_at(r->by_name, r->nr_metrics, name_rank(r, m->name, m->labels));
	r->nr_metrics--;
}

/* Whether the @n labels of @labels have one named @name. */
static bool has_label(const char *const *labels, unsigned int n, const char *name)
{
	for (unsigned int i = 0; i < n; i++)
		if (strcmp(labels[2 * i], name) == 0)
			return true;
	return false;
}

/* Whether @name is one of @r's constant label names. */
static bool registry_label(const struct pcpu_metrics_registry *r, const char *name)
{
	return has_label((const char *const *)r->labels, r->nr_labels, name);
}

/* -EINVAL if a label name of @sp is one of @r's constant labels. */
static int check_against_registry(const struct pcpu_metrics_registry *r,
				  const struct metric_spec *sp)
{
	for (unsigned int i = 0; sp->labels && sp->labels[2 * i]; i++)
		if (registry_label(r, sp->labels[2 * i]))
			return -EINVAL;
	for (unsigned int i = 0; i < sp->nr_label_names; i++)
		if (registry_label(r, sp->label_names[i]))
			return -EINVAL;
	return 0;
}

int pcpu_metrics_add(struct pcpu_metrics_registry *r, const struct metric_spec *specs,
		     unsigned int n)
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
		/* a registry's constant labels are not the metric's to set */
		if (check_against_registry(registry_or_process(r), &specs[i]))
			return -EINVAL;
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
	pcpu_metrics_on_forget(pcpu_metrics_forget);
	for (i = 0; i < n; i++) {
		made[i] = new_metric(&specs[i], pcpu_metrics_check_labels(specs[i].labels, specs[i].kind));
		if (!made[i]) {
			while (i--)
				free_metric(made[i]);
			return -ENOMEM;
		}
	}
	r = registry_or_process(r);
	pcpu_metrics_lock();
	err = reserve(r, n);
	for (; !err && linked < n; linked++) {
		err = link_metric(r, made[linked]);
		if (err)
			break;
	}
	if (err)
		for (i = 0; i < linked; i++)
			unlink_metric(r, made[i]);
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
	/* an object may be registered in several registries (a stat set) */
	for (struct pcpu_metrics_registry *r = registries; r; r = r->next)
		for (size_t i = obj_rank(r, obj); i < r->nr_metrics && r->by_obj[i]->obj == obj;) {
			struct metric *m = r->by_obj[i];

			unlink_metric(r, m);
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
 * A registry's constant labels on each sample of its walk, merged into the
 * sample's own (both sorted by key) before @next(sample, @arg) sees it.
 */
struct labelled {
	const struct pcpu_metrics_registry *r;
	int (*next)(const struct pcpu_metric_sample *, void *);
	void *arg;
};

static int with_registry_labels(const struct pcpu_metric_sample *smp, void *labelled)
{
	const struct labelled *l = labelled;
	const char *const *own = smp->labels, *const *reg = (const char *const *)l->r->labels;
	const char *stack[2 * 32 + 1], **merged = stack;
	unsigned int nr_own = 0, i = 0, j = 0, n = 0;
	struct pcpu_metric_sample copy = { 0 };
	int ret;

	if (!l->r->nr_labels)
		return l->next(smp, l->arg);
	/*
	 * A collector built against 0.4 has no fields past exemplars: 0.5's
	 * are read where they are said to be there (created: its flag; the
	 * summary's fields, which come after it: a summary sample).
	 */
	memcpy(&copy, smp, smp->kind == PCPU_METRIC_SUMMARY ? sizeof(copy) :
			   smp->flags & PCPU_METRIC_SAMPLE_F_CREATED ?
			   offsetof(struct pcpu_metric_sample, nr_quantiles) :
			   offsetof(struct pcpu_metric_sample, created));
	while (own && own[2 * nr_own])
		nr_own++;
	if (nr_own + l->r->nr_labels > 32) {
		merged = malloc((2 * (nr_own + l->r->nr_labels) + 1) * sizeof(*merged));
		if (!merged)
			return -ENOMEM;
	}
	/* in key order where the sample's are in it (a collector's need not be) */
	while (i < nr_own || j < l->r->nr_labels) {
		const char *const *from;

		if (j < l->r->nr_labels && has_label(own, nr_own, reg[2 * j])) {
			j++; /* the sample's own wins (percpu_family_refused's "family") */
			continue;
		}
		if (i < nr_own && (j == l->r->nr_labels || strcmp(own[2 * i], reg[2 * j]) < 0))
			from = &own[2 * i++];
		else
			from = &reg[2 * j++];
		merged[2 * n] = from[0];
		merged[2 * n + 1] = from[1];
		n++;
	}
	merged[2 * n] = NULL;
	copy.labels = merged;
	ret = l->next(&copy, l->arg);
	if (merged != stack)
		free(merged);
	return ret;
}

/*
 * percpu_family_refused_total{family="..."}: one series per label family
 * of @r that refused a get or has an overflow child (<percpu/family.h>),
 * through @emit (the collectors' checks: a registered metric of that name
 * wins). Under the lock.
 */
static int expose_refusals(const struct pcpu_metrics_registry *r, struct labelled *emit)
{
	for (size_t i = 0; i < r->nr_metrics; i++) {
		struct metric *m = r->by_name[i];
		const char *labels[] = { "family", m->name, NULL };
		struct pcpu_metric_sample smp = {
			.name = "percpu_family_refused",
			.help = "Gets of a label family answered without a child of their own.",
			.unit = "", .kind = PCPU_METRIC_COUNTER, .labels = labels, .scale = 1,
		};

		if (!m->source->refusals || !m->source->refusals(m->obj, &smp.value))
			continue;
		if (with_registry_labels(&smp, emit) == -ENOMEM)
			return -ENOMEM;
	}
	return 0;
}

/* Writes @r's metrics to @scrape: 0 or what its callback returned. */
static int walk_registry(const struct pcpu_metrics_registry *r, struct pcpu_scrape *scrape)
{
	uint64_t buckets[PCPU_HISTOGRAM_MAX_BOUNDS + 1];
	struct labelled note = { .r = r, .next = pcpu_scrape_note, .arg = scrape };
	struct labelled emit = { .r = r, .next = pcpu_scrape_emit, .arg = scrape };
	/* before the lock: a family's walk must not register with urcu under it */
	void (*before)(void) = __atomic_load_n(&before_scrape, __ATOMIC_ACQUIRE);
	int ret = 0;

	if (before)
		before();
	pcpu_metrics_lock();
	for (size_t i = 0; i < r->nr_metrics && ret == 0; i++) {
		struct metric *m = r->by_name[i];
		struct pcpu_metric_sample smp = {
			.name = m->name, .help = m->help, .unit = m->unit, .kind = m->kind,
			.labels = (const char *const *)m->labels, .scale = m->scale,
		};

		if (m->source->walk) {
			/* samples of its own (a family's children) */
			ret = m->source->walk(m->obj, &smp, with_registry_labels, &note);
			continue;
		}
		ret = m->source->sample(m->obj, m->item, &smp, buckets);
		if (ret == 0) {
			smp.value = monotone(m, smp.value);
			/* a source may know better (a reset); else: registered then */
			if (!(smp.flags & PCPU_METRIC_SAMPLE_F_CREATED) &&
			    (m->kind == PCPU_METRIC_COUNTER || m->kind == PCPU_METRIC_HISTOGRAM ||
			     m->kind == PCPU_METRIC_SUMMARY)) {
				smp.created = m->created;
				smp.flags |= PCPU_METRIC_SAMPLE_F_CREATED;
			}
			ret = with_registry_labels(&smp, &note);
		}
	}
	if (ret == 0)
		ret = expose_refusals(r, &emit);
	pcpu_metrics_unlock();
	return ret;
}

/*
 * Every sample of @r to @cb(sample, @arg): its metrics', then its
 * collectors', with its constant labels.
 */
static int expose(const struct pcpu_metrics_registry *r,
		  int (*cb)(const struct pcpu_metric_sample *, void *), void *arg)
{
	bool process = r == &process_registry;
	struct pcpu_scrape *scrape;
	struct labelled emit;
	int ret;

	if (!cb)
		return -EINVAL;
	/* a failed definition fails every exposition of theirs (define_failure.c) */
	ret = process ? pcpu_metrics_define_failure(NULL) : 0;
	if (ret)
		return ret;
	/* what the registered metrics wrote, for the collectors' checks */
	scrape = pcpu_scrape_new(cb, arg);
	if (!scrape)
		return -ENOMEM;
	ret = walk_registry(r, scrape);
	/* outside the lock: a slow collector holds up neither fork() nor registration */
	emit = (struct labelled){ .r = r, .next = pcpu_scrape_emit, .arg = scrape };
	if (ret == 0)
		ret = pcpu_collectors_run(process ? NULL : r, scrape, with_registry_labels, &emit);
	pcpu_scrape_free(scrape);
	return ret;
}

PCPU_EXPORT int pcpu_metrics_foreach(int (*cb)(const struct pcpu_metric_sample *, void *),
				     void *arg)
{
	return expose(&process_registry, cb, arg);
}

PCPU_EXPORT int pcpu_metrics_registry_foreach(struct pcpu_metrics_registry *r,
					      int (*cb)(const struct pcpu_metric_sample *, void *),
					      void *arg)
{
	return expose(registry_or_process(r), cb, arg);
}

/* A collector's emit(), which refusals do not stop: the registry collector's. */
struct forward {
	int (*emit)(const struct pcpu_metric_sample *, void *);
	void *ctx;
};

static int emit_past_refusals(const struct pcpu_metric_sample *smp, void *forward)
{
	const struct forward *f = forward;
	int ret = f->emit(smp, f->ctx);

	/* refused and counted: the registry's other samples still go */
	return ret == -EINVAL || ret == -EEXIST ? 0 : ret;
}

/* Registry collectors running in this thread: registries that merge each other loop. */
static __thread unsigned int merging;

PCPU_EXPORT int pcpu_metrics_registry_collector(int (*emit)(const struct pcpu_metric_sample *s,
							    void *ctx),
						void *ctx, void *arg)
{
	struct pcpu_metrics_registry *r = arg;
	int ret;

	/* the process's registry would walk itself again */
	if (!emit || !r || r == &process_registry)
		return -EINVAL;
	if (merging >= PCPU_METRICS_REGISTRY_MAX_NESTING)
		return -ELOOP;
	merging++;
	ret = expose(r, emit_past_refusals, &(struct forward){ .emit = emit, .ctx = ctx });
	merging--;
	return ret;
}

/* Registries. */

PCPU_EXPORT struct pcpu_metrics_registry *pcpu_metrics_registry_create(const char *const *labels)
{
	/* as a histogram's: no "le" */
	int n = pcpu_metrics_check_labels(labels, PCPU_METRIC_HISTOGRAM);
	struct pcpu_metrics_registry *r;

	if (n < 0 || n > PCPU_METRICS_REGISTRY_MAX_LABELS) {
		errno = EINVAL;
		return NULL;
	}
	for (int i = 0; i < n; i++)
		if (pcpu_metrics_check_label_value(labels[2 * i + 1], METRIC_MAX_LABEL_VALUE)) {
			errno = EINVAL;
			return NULL;
		}
	r = calloc(1, sizeof(*r));
	if (!r || pcpu_metrics_client_setup() != 0 || !(r->labels = sorted_labels(labels, n))) {
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	r->nr_labels = (unsigned int)n;
	pcpu_metrics_lock();
	r->next = process_registry.next;
	process_registry.next = r;
	pcpu_metrics_unlock();
	return r;
}

PCPU_EXPORT int pcpu_metrics_registry_destroy(struct pcpu_metrics_registry *r)
{
	struct pcpu_metrics_registry **p;

	if (!r)
		return 0;
	pcpu_metrics_lock();
	if (r->nr_metrics || pcpu_collectors_of(r)) {
		pcpu_metrics_unlock();
		return -EBUSY;
	}
	for (p = &process_registry.next; *p != r; p = &(*p)->next)
		;
	*p = r->next;
	pcpu_metrics_unlock();
	free_labels(r->labels);
	free(r->by_name);
	free(r->by_obj);
	free(r);
	return 0;
}
