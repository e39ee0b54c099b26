/* SPDX-License-Identifier: MIT */
/*
 * Collectors (see <percpu/metrics.h>): callbacks that write samples
 * computed at scrape time. Every walk of the metrics list runs them after
 * the registered metrics (metrics_list.c), so they join one exposition; what
 * they emit is checked against what the exposition has written.
 *
 * They run outside the metrics lock, which fork() and every registration
 * take: a slow collector must hold up neither. The list is under the lock;
 * a walk pins the collectors it runs (users), and removal waits until
 * none is running the one it removes. A fork() resets the pins in the
 * child (a new epoch), whose copies of running walks have no thread.
 *
 * A collector that returns an error stops the exposition, unless it was
 * added with PCPU_METRICS_COLLECTOR_F_CONTINUE: then the walk goes on with
 * the next one. What it emitted before is kept: emit() wrote only whole
 * series that keep the body valid, so the body stays valid without them
 * as with them. An error of the output itself (the callback's return, kept
 * in the scrape) stops every walk, whatever the flags: nothing more can be
 * written, and a callback of pcpu_metrics_foreach() that asked to stop must
 * not be called again.
 */
#define _GNU_SOURCE /* stpcpy, strdup */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/metrics.h>
#include <percpu/metrics_registry.h>

#include "list/list_internal.h"

/* Collectors, in the order they were added; under the metrics lock. */
struct collector {
	const struct pcpu_metrics_registry *registry; /* whose exposition runs it; NULL: the process's */
	pcpu_metrics_collector_fn fn;
	void *arg;
	struct collector *next;
	unsigned int users; /* walks running it now */
	unsigned int flags; /* PCPU_METRICS_COLLECTOR_F_* */
};

static struct collector *collectors;
/* signalled when a walk unpins its collectors; under the metrics lock */
static pthread_cond_t unpinned = PTHREAD_COND_INITIALIZER;
/* bumped by fork() in the child: pins of an older epoch are void */
static unsigned int epoch;

/*
 * What this thread's exposition refused last (the metric and its labels,
 * cut at 256 bytes, and why), and the errno of the first collector that
 * stopped it, which a 500's body says (pcpu_collectors_failure(),
 * metrics_serve.c), as the Go client's names the metric. Per thread: an
 * exposition runs on one, and concurrent scrapes must not see each
 * other's; small, as every thread of the process has them. @nesting: a
 * merged registry's collectors run inside a collector of the exposition.
 */
static __thread char refused_series[256];
static __thread const char *refused_why;
static __thread int failed_err;
static __thread unsigned int nesting;

/* Notes why @m was refused (@err, from check_sample() if @malformed, else check_place()). */
static void note_refusal(const struct pcpu_metric_sample *m, int err, bool malformed)
{
	size_t len, size = sizeof(refused_series);

	if (failed_err)
		return; /* the failure's refusal stays */
	len = (size_t)snprintf(refused_series, size, "\"%s\"", m->name ? m->name : "(null)");
	for (unsigned int i = 0; m->labels && m->labels[i] && m->labels[i + 1] && len < size;
	     i += 2)
		len += (size_t)snprintf(refused_series + len, size - len, "%s%s=\"%s\"",
					i ? "," : "{", m->labels[i], m->labels[i + 1]);
	if (m->labels && m->labels[0] && len < size)
		snprintf(refused_series + len, size - len, "}");
	refused_why = err == -EEXIST ? "this exposition has written a family of that name (or "
				       "one whose series it would meet) or this series already: "
				       "a name clash" :
		      malformed      ? "malformed (a bad name, unit, label, help, bounds or "
				       "exemplar)" :
				       "its kind or unit differs from its family's samples before it";
}

char *pcpu_collectors_failure(char *buf, size_t size)
{
	if (!failed_err)
		return NULL;
	snprintf(buf, size, "a collector failed (%s)%s%s%s%s", strerror(-failed_err),
		 refused_why ? ": metric " : "", refused_why ? refused_series : "",
		 refused_why ? " refused: " : "", refused_why ? refused_why : "");
	return buf;
}

/* The longest label value a collector may emit, in bytes. */
#define LABEL_VALUE_MAX 4096

/* Samples a collector emitted that emit() refused (pcpu_metrics_collector_refused()). */
static uint64_t refused;
/* Collector runs that returned an error (pcpu_metrics_collector_failed()). */
static uint64_t failed;

/*
 * What one exposition has written, so that no collector's sample makes it
 * invalid: the name of every family (registered or collected), and the
 * label sets of the family a collector writes now. A parser rejects the
 * whole body for a family written twice, two families whose samples meet
 * (a gauge "x_total" beside a counter "x"), or one series twice; each is
 * refused at emit() instead. The names are copies: a collector runs after
 * the registered metrics were written, and they may be gone by then.
 */

/* Strings in open addressing: a scrape's families, a family's label sets. */
struct strset {
	char **slot;
	size_t cap, nr;
};

/* FNV-1a of @s. */
static size_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (size_t)(h ^ (h >> 31));
}

/*
 * The slot of key @k, or the empty one where it would go. A family's entry
 * is its kind (one character) and its name; the key is the name.
 */
static char **strset_find(const struct strset *set, const char *k, size_t skip)
{
	size_t i = str_hash(k) & (set->cap - 1);

	while (set->slot[i] && strcmp(set->slot[i] + skip, k) != 0)
		i = (i + 1) & (set->cap - 1);
	return &set->slot[i];
}

static const char *strset_get(const struct strset *set, const char *k, size_t skip)
{
	return set->cap ? *strset_find(set, k, skip) : NULL;
}

/* Adds @entry (owned by the set from now on) of key @entry + @skip; -ENOMEM. */
static int strset_put(struct strset *set, char *entry, size_t skip)
{
	if (2 * (set->nr + 1) > set->cap) {
		struct strset big = { calloc(set->cap ? 2 * set->cap : 64, sizeof(char *)),
				      set->cap ? 2 * set->cap : 64, set->nr };

		if (!big.slot) {
			free(entry);
			return -ENOMEM;
		}
		for (size_t i = 0; i < set->cap; i++)
			if (set->slot[i])
				*strset_find(&big, set->slot[i] + skip, skip) = set->slot[i];
		free(set->slot);
		*set = big;
	}
	*strset_find(set, entry + skip, skip) = entry;
	set->nr++;
	return 0;
}

static void strset_free(struct strset *set)
{
	for (size_t i = 0; i < set->cap; i++)
		free(set->slot[i]);
	free(set->slot);
	*set = (struct strset){ 0 };
}

struct pcpu_scrape {
	int (*cb)(const struct pcpu_metric_sample *, void *);
	void *arg;
	struct strset families; /* kind + name of every family written */
	const char *last;       /* the family written last (in families) */
	char *open_unit;        /* the unit of the family a collector writes now */
	struct strset series;   /* its label sets (series_key()) */
	int stopped;            /* the callback's first non-zero return */
};

struct pcpu_scrape *pcpu_scrape_new(int (*cb)(const struct pcpu_metric_sample *, void *),
				    void *arg)
{
	struct pcpu_scrape *s = calloc(1, sizeof(*s));

	/* a new exposition (not a merged registry's inside one) has no failure yet */
	if (!nesting)
		failed_err = 0;
	if (s) {
		s->cb = cb;
		s->arg = arg;
	}
	return s;
}

void pcpu_scrape_free(struct pcpu_scrape *s)
{
	if (!s)
		return;
	strset_free(&s->families);
	strset_free(&s->series);
	free(s->open_unit);
	free(s);
}

/* Passes @m to the callback; its first non-zero return ends the scrape. */
static int put(struct pcpu_scrape *s, const struct pcpu_metric_sample *m)
{
	if (!s->stopped)
		s->stopped = s->cb(m, s->arg);
	return s->stopped;
}

/* Records family @name of @kind as written; -ENOMEM. */
static int note_family(struct pcpu_scrape *s, const char *name, enum pcpu_metric_kind kind)
{
	size_t len = strlen(name);
	char *e = malloc(len + 2);
	int err;

	if (!e)
		return -ENOMEM;
	e[0] = (char)('0' + kind);
	memcpy(e + 1, name, len + 1);
	err = strset_put(&s->families, e, 1);
	if (!err)
		s->last = e;
	return err;
}

int pcpu_scrape_note(const struct pcpu_metric_sample *m, void *scrape)
{
	struct pcpu_scrape *s = scrape;

	/* a registered family is contiguous and checked at registration */
	if (!s->last || strcmp(s->last + 1, m->name) != 0) {
		int err = note_family(s, m->name, m->kind);

		if (err)
			return err;
	}
	return put(s, m);
}

/* Does a family written in @arg's scrape meet the sample of pending_name? */
struct rival_arg {
	const struct pcpu_scrape *s;
	const struct pcpu_metric_sample *m;
};

static int rival_written(const char *family, void *arg)
{
	struct rival_arg *ra = arg;
	const char *e = strset_get(&ra->s->families, family, 1);

	return e && pcpu_metrics_names_meet(e + 1, (enum pcpu_metric_kind)(e[0] - '0'),
					    ra->m->name, ra->m->kind) ? -EEXIST : 0;
}

/*
 * The label set of @m as one string: pairs sorted by key, "key" 0xfe
 * "value" 0xff each (bytes that valid UTF-8 never holds); NULL for want of
 * memory.
 */
static char *series_key(const struct pcpu_metric_sample *m)
{
	const char *const *l = m->labels;
	unsigned int n = 0, order[64];
	size_t len = 1;
	char *k, *p;

	for (; l && l[2 * n]; n++)
		len += strlen(l[2 * n]) + strlen(l[2 * n + 1]) + 2;
	/* insertion sort: a few labels (pcpu_metrics_check_labels() bounds them) */
	for (unsigned int i = 0; i < n; i++) {
		unsigned int j = i;

		for (; j > 0 && strcmp(l[2 * order[j - 1]], l[2 * i]) > 0; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	k = p = malloc(len);
	if (!k)
		return NULL;
	for (unsigned int i = 0; i < n; i++) {
		p = stpcpy(p, l[2 * order[i]]);
		*p++ = (char)0xfe;
		p = stpcpy(p, l[2 * order[i] + 1]);
		*p++ = (char)0xff;
	}
	*p = '\0';
	return k;
}

/* 0 if @m is well formed (as registration checks it), else -EINVAL. */
/*
 * A sample's exemplars: on counters (one) and histograms (one a bucket)
 * only, labels as pcpu_counter_add_exemplar()'s, value and timestamp
 * finite; else -EINVAL.
 */
static int check_exemplars(const struct pcpu_metric_sample *m)
{
	uint32_t n;

	if (!m->exemplars)
		return 0;
	if (m->kind != PCPU_METRIC_COUNTER && m->kind != PCPU_METRIC_HISTOGRAM)
		return -EINVAL;
	n = m->kind == PCPU_METRIC_HISTOGRAM ? m->nr_bounds + 1 : 1;
	for (uint32_t i = 0; i < n; i++) {
		const struct pcpu_exemplar *e = &m->exemplars[i];

		if (!e->labels)
			continue;
		if (pcpu_exemplar_check_labels(e->labels) || !isfinite(e->value) ||
		    !isfinite(e->timestamp))
			return -EINVAL;
	}
	return 0;
}

/*
 * A native sample as the exposition reads it (PCPU_METRIC_SAMPLE_F_NATIVE):
 * a histogram of a known schema with a zero bucket (bounds[0] >= 0, so
 * that every later bound is > 0 and has a key) and ascending classic
 * bounds; else -EINVAL. Its bounds ascend as every histogram's must.
 */
static int check_native(const struct pcpu_metric_sample *m)
{
	if (m->kind != PCPU_METRIC_HISTOGRAM || m->schema < PCPU_HISTOGRAM_MIN_SCHEMA ||
	    m->schema > PCPU_HISTOGRAM_MAX_SCHEMA || m->nr_bounds < 1 || !m->bounds ||
	    m->bounds[0] < 0 || (m->nr_classic && !m->classic))
		return -EINVAL;
	for (uint32_t i = 1; i < m->nr_classic; i++)
		if (m->classic[i] <= m->classic[i - 1])
			return -EINVAL;
	return 0;
}

/*
 * A sparse native sample (PCPU_METRIC_SAMPLE_F_SPARSE): a histogram of a
 * known schema, a zero threshold >= 0, keys strictly ascending within each
 * sign with counts > 0, and not native as well; else -EINVAL.
 */
static int check_sparse(const struct pcpu_metric_sample *m)
{
	if (m->kind != PCPU_METRIC_HISTOGRAM || (m->flags & PCPU_METRIC_SAMPLE_F_NATIVE) ||
	    m->schema < PCPU_HISTOGRAM_MIN_SCHEMA || m->schema > PCPU_HISTOGRAM_MAX_SCHEMA ||
	    !(m->zero_threshold >= 0) || m->nr_negative > m->nr_keys ||
	    !m->buckets || (m->nr_keys && (!m->keys || !m->key_counts)))
		return -EINVAL;
	for (uint32_t i = 0; i < m->nr_keys; i++)
		if (!m->key_counts[i] || (i && i != m->nr_negative && m->keys[i] <= m->keys[i - 1]))
			return -EINVAL;
	return 0;
}

/*
 * A summary sample (fields appended in 0.5, read for this kind only): at
 * most PCPU_SUMMARY_MAX_QUANTILES quantiles, ascending in [0, 1], with
 * their values; else -EINVAL.
 */
static int check_summary(const struct pcpu_metric_sample *m)
{
	if (m->nr_quantiles > PCPU_SUMMARY_MAX_QUANTILES ||
	    (m->nr_quantiles && (!m->quantiles || !m->quantile_values)))
		return -EINVAL;
	for (uint32_t i = 0; i < m->nr_quantiles; i++)
		if (!(m->quantiles[i] >= 0 && m->quantiles[i] <= 1) ||
		    (i && !(m->quantiles[i] > m->quantiles[i - 1])))
			return -EINVAL;
	return 0;
}

static int check_sample(const struct pcpu_metric_sample *m)
{
	if (!m || !m->name || !m->help || !m->unit ||
	    pcpu_metrics_check_name(NULL, m->name, m->unit, m->kind) != 0 ||
	    pcpu_metrics_check_labels(m->labels, m->kind) < 0 ||
	    pcpu_metrics_check_label_value(m->help, SIZE_MAX) != 0)
		return -EINVAL;
	if ((m->flags & PCPU_METRIC_SAMPLE_F_NATIVE) && check_native(m))
		return -EINVAL;
	if ((m->flags & PCPU_METRIC_SAMPLE_F_SPARSE) && check_sparse(m))
		return -EINVAL;
	/* a created time is a time: the formats write it as one */
	if ((m->flags & PCPU_METRIC_SAMPLE_F_CREATED) && !(isfinite(m->created) && m->created >= 0))
		return -EINVAL;
	for (unsigned int i = 0; m->labels && m->labels[2 * i]; i++)
		if (pcpu_metrics_check_label_value(m->labels[2 * i + 1], LABEL_VALUE_MAX) != 0)
			return -EINVAL;
	if (m->kind == PCPU_METRIC_HISTOGRAM) {
		if (m->nr_bounds && (!m->bounds || !m->buckets))
			return -EINVAL;
		/* le values must ascend, or the parser refuses the buckets */
		for (uint32_t i = 1; i < m->nr_bounds; i++)
			if (m->bounds[i] <= m->bounds[i - 1])
				return -EINVAL;
	}
	if (m->kind == PCPU_METRIC_SUMMARY && check_summary(m))
		return -EINVAL;
	return check_exemplars(m);
}

/* 0 if @m may follow what @s has written; -EINVAL or -EEXIST. */
static int check_place(struct pcpu_scrape *s, const struct pcpu_metric_sample *m)
{
	struct rival_arg ra = { s, m };
	char *key;
	int err;

	if (s->open_unit && strcmp(s->last + 1, m->name) == 0) {
		/* the family being written: its samples agree, each series once */
		if (s->last[0] - '0' != (int)m->kind || strcmp(s->open_unit, m->unit) != 0)
			return -EINVAL;
	} else {
		/* a new family: no name written before, no sample meeting one */
		if (strset_get(&s->families, m->name, 1))
			return -EEXIST;
		err = pcpu_metrics_rivals(m->name, m->kind, rival_written, &ra);
		if (err)
			return err;
		err = note_family(s, m->name, m->kind);
		if (err)
			return err;
		free(s->open_unit);
		s->open_unit = strdup(m->unit);
		strset_free(&s->series);
		if (!s->open_unit)
			return -ENOMEM;
	}
	key = series_key(m);
	if (!key)
		return -ENOMEM;
	if (strset_get(&s->series, key, 0)) {
		free(key);
		return -EEXIST;
	}
	return strset_put(&s->series, key, 0);
}

int pcpu_scrape_emit(const struct pcpu_metric_sample *m, void *scrape)
{
	struct pcpu_scrape *s = scrape;
	int err = check_sample(m);

	bool malformed = err != 0;

	if (s->stopped)
		return s->stopped;
	if (!err)
		err = check_place(s, m);
	if (err == -ENOMEM)
		return err;
	if (err) {
		__atomic_fetch_add(&refused, 1, __ATOMIC_RELAXED);
		note_refusal(m, err, malformed);
		return err;
	}
	return put(s, m);
}

PCPU_EXPORT uint64_t pcpu_metrics_collector_refused(void)
{
	return __atomic_load_n(&refused, __ATOMIC_RELAXED);
}

PCPU_EXPORT uint64_t pcpu_metrics_collector_failed(void)
{
	return __atomic_load_n(&failed, __ATOMIC_RELAXED);
}

/* Emits counter @name of @value; what emit() returned. */
static int emit_counter(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx,
			const char *name, const char *help, uint64_t value)
{
	struct pcpu_metric_sample s = { .name = name, .help = help, .unit = "",
					.kind = PCPU_METRIC_COUNTER, .scale = 1,
					.value = value > INT64_MAX ? INT64_MAX : (int64_t)value };

	return emit(&s, ctx);
}

PCPU_EXPORT int pcpu_metrics_failures_collector(int (*emit)(const struct pcpu_metric_sample *s,
							    void *ctx),
						void *ctx, void *arg)
{
	int err;

	(void)arg;
	if (!emit)
		return -EINVAL;
	err = emit_counter(emit, ctx, "percpu_collector_failed",
			   "Collector runs that returned an error.",
			   pcpu_metrics_collector_failed());
	if (!err)
		err = emit_counter(emit, ctx, "percpu_collector_refused",
				   "Samples from collectors that emit() refused.",
				   pcpu_metrics_collector_refused());
	return err;
}

bool pcpu_collectors_of(const struct pcpu_metrics_registry *r)
{
	for (struct collector *c = collectors; c; c = c->next)
		if (c->registry == r)
			return true;
	return false;
}

int pcpu_collectors_run(const struct pcpu_metrics_registry *r, struct pcpu_scrape *s,
			int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx)
{
	struct collector **run = NULL;
	size_t n = 0, i;
	unsigned int pinned_in;
	int ret = 0;

	pcpu_metrics_lock();
	for (struct collector *c = collectors; c; c = c->next)
		n += c->registry == r;
	if (n) {
		run = malloc(n * sizeof(*run));
		if (!run) {
			pcpu_metrics_unlock();
			return -ENOMEM;
		}
	}
	n = 0;
	for (struct collector *c = collectors; c; c = c->next) {
		if (c->registry != r)
			continue;
		c->users++;
		run[n++] = c;
	}
	pinned_in = epoch;
	pcpu_metrics_unlock();

	/* an output that failed before (the registered metrics' walk) ends it too */
	ret = s->stopped;
	nesting++;
	for (i = 0; i < n && ret == 0; i++) {
		int err;

		if (!failed_err)
			refused_why = NULL;
		err = run[i]->fn(emit, ctx, run[i]->arg);
		/* the output's error is not the collector's */
		ret = s->stopped;
		if (err && !ret) {
			__atomic_fetch_add(&failed, 1, __ATOMIC_RELAXED);
			if (!(run[i]->flags & PCPU_METRICS_COLLECTOR_F_CONTINUE)) {
				if (!failed_err)
					failed_err = err;
				ret = err;
			}
		}
	}
	nesting--;

	pcpu_metrics_lock();
	if (pinned_in == epoch)
		for (i = 0; i < n; i++)
			run[i]->users--;
	pthread_cond_broadcast(&unpinned);
	pcpu_metrics_unlock();
	free(run);
	return ret;
}

/* In the child of fork() (one thread): no walk runs there. */
static void collectors_fork_child(void)
{
	epoch++;
	for (struct collector *c = collectors; c; c = c->next)
		c->users = 0;
	pthread_cond_init(&unpinned, NULL);
}

PCPU_EXPORT int pcpu_metrics_collector_add(pcpu_metrics_collector_fn fn, void *arg)
{
	return pcpu_metrics_registry_collector_add(NULL, fn, arg, 0);
}

PCPU_EXPORT int pcpu_metrics_collector_add_flags(pcpu_metrics_collector_fn fn, void *arg,
						 unsigned int flags)
{
	return pcpu_metrics_registry_collector_add(NULL, fn, arg, flags);
}

PCPU_EXPORT int pcpu_metrics_registry_collector_add(struct pcpu_metrics_registry *r,
						    pcpu_metrics_collector_fn fn, void *arg,
						    unsigned int flags)
{
	struct collector *c, **tail;

	if (!fn || (flags & ~PCPU_METRICS_COLLECTOR_F_CONTINUE))
		return -EINVAL;
	/* the fork handlers reset the pins of running walks in the child */
	if (pcpu_metrics_client_setup() != 0)
		return -ENOMEM;
	pcpu_metrics_on_fork_child(collectors_fork_child);
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (struct collector){ .registry = r, .fn = fn, .arg = arg, .flags = flags };
	pcpu_metrics_lock();
	for (tail = &collectors; *tail; tail = &(*tail)->next) {
		if ((*tail)->registry == r && (*tail)->fn == fn && (*tail)->arg == arg) {
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
	return pcpu_metrics_registry_collector_remove(NULL, fn, arg);
}

PCPU_EXPORT int pcpu_metrics_registry_collector_remove(struct pcpu_metrics_registry *r,
						       pcpu_metrics_collector_fn fn, void *arg)
{
	struct collector *found = NULL;

	pcpu_metrics_lock();
	for (struct collector **p = &collectors; *p; p = &(*p)->next) {
		if ((*p)->registry == r && (*p)->fn == fn && (*p)->arg == arg) {
			found = *p;
			*p = found->next;
			break;
		}
	}
	while (found && found->users)
		pcpu_metrics_wait(&unpinned);
	pcpu_metrics_unlock();
	free(found);
	return found ? 0 : -ENOENT;
}
