/* SPDX-License-Identifier: MIT */
/*
 * Exemplars (see pcpu_histogram_observe_exemplar() and
 * pcpu_counter_add_exemplar()): a slow path beside the lock-free adds.
 * This file is their store, below the metrics it serves: histograms
 * (histogram.c) keep a store of their own; counters, which have no room
 * for a pointer, find theirs in the table at the end.
 *
 * A store holds one slot per bucket (a counter's: one). A record is one
 * malloc()ed block, never changed once made: its labels and text follow
 * it. Under the exemplar lock, cur[i] is the slot's latest record and
 * shown[i] the one that the last scrape exposed; a record is freed when
 * neither points at it (a writer frees the record it replaces unless
 * shown[i] holds it; a scrape frees the shown record it moves past, which
 * cur[i] no longer holds). shown[] and out[] are written only by scrapes,
 * which the metrics lock serialises and which read out[] (the sample's
 * exemplars) after dropping the exemplar lock: no writer frees what they
 * read. So a store holds at most two records a slot.
 *
 * One lock for all exemplars, taken after the metrics lock wherever both
 * are held: a scrape holds the metrics lock when it takes it, and so does
 * fork(), whose handlers (pcpu_exemplars_fork_*(), from the metrics
 * lock's) take it last and make it anew in the child. A lock per store
 * taken by the registry's object handlers would come before the metrics
 * lock at fork and after it in a scrape: a deadlock.
 *
 * Counters. struct pcpu_counter has no room for a pointer: a sorted table
 * maps a counter to its store, under the same lock. A counter's entry
 * goes when its metric is forgotten (pcpu_metrics_forget(), at destroy).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <percpu/counter.h>
#include <percpu/metrics.h>

#include "list/list_internal.h"

struct record {
	struct pcpu_exemplar pub; /* unscaled; pub.labels points at the array after it */
};

struct pcpu_exemplars {
	uint32_t n;
	struct record **cur;        /* under exemplar_lock */
	struct record **shown;      /* under exemplar_lock; written by scrapes */
	struct pcpu_exemplar *out;  /* scrapes only (the metrics lock) */
};

static pthread_mutex_t exemplar_lock = PTHREAD_MUTEX_INITIALIZER;

/* Fork, under the metrics lock: the lock must not be left held in the child. */

void pcpu_exemplars_fork_prepare(void)
{
	pthread_mutex_lock(&exemplar_lock);
}

void pcpu_exemplars_fork_parent(void)
{
	pthread_mutex_unlock(&exemplar_lock);
}

void pcpu_exemplars_fork_child(void)
{
	pthread_mutex_init(&exemplar_lock, NULL);
}

/* The labels. */

/* Characters (UTF-8 code points) of @s, which is valid UTF-8. */
static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

int pcpu_exemplar_check_labels(const char *const *labels)
{
	size_t chars = 0;
	int n;

	if (!labels)
		return 0;
	n = pcpu_metrics_check_labels(labels, PCPU_METRIC_COUNTER);
	if (n < 0)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		if (pcpu_metrics_check_label_value(labels[2 * i + 1], SIZE_MAX) != 0)
			return -EINVAL;
		chars += utf8_chars(labels[2 * i]) + utf8_chars(labels[2 * i + 1]);
	}
	return chars > PCPU_EXEMPLAR_MAX_CHARS ? -EINVAL : 0;
}

/* A record of @labels (checked), @value, now; NULL for want of memory. */
static struct record *new_record(const char *const *labels, double value)
{
	size_t nr = 0, text = 0;
	struct record *r;
	const char **l;
	char *p;
	struct timespec ts;

	for (; labels && labels[nr]; nr++)
		text += strlen(labels[nr]) + 1;
	r = malloc(sizeof(*r) + (nr + 1) * sizeof(char *) + text);
	if (!r)
		return NULL;
	l = (const char **)(r + 1);
	p = (char *)(l + nr + 1);
	for (size_t i = 0; i < nr; i++) {
		l[i] = p;
		p = stpcpy(p, labels[i]) + 1;
	}
	l[nr] = NULL;
	clock_gettime(CLOCK_REALTIME, &ts);
	r->pub = (struct pcpu_exemplar){ .labels = l, .value = value,
					 .timestamp = (double)ts.tv_sec + ts.tv_nsec / 1e9 };
	return r;
}

/* Stores. */

void pcpu_exemplars_free(struct pcpu_exemplars *st)
{
	if (!st)
		return;
	for (uint32_t i = 0; i < st->n; i++) {
		if (st->shown[i] != st->cur[i])
			free(st->shown[i]);
		free(st->cur[i]);
	}
	free(st->cur);
	free(st->shown);
	free(st->out);
	free(st);
}

/* A store of @n slots; NULL for want of memory. */
static struct pcpu_exemplars *store_new(uint32_t n)
{
	struct pcpu_exemplars *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->n = n;
	st->cur = calloc(n, sizeof(*st->cur));
	st->shown = calloc(n, sizeof(*st->shown));
	st->out = calloc(n, sizeof(*st->out));
	if (!st->cur || !st->shown || !st->out) {
		pcpu_exemplars_free(st);
		return NULL;
	}
	return st;
}

struct pcpu_exemplars *pcpu_exemplars_attach(struct pcpu_exemplars **slot, uint32_t n)
{
	struct pcpu_exemplars *st = __atomic_load_n(slot, __ATOMIC_ACQUIRE), *none = NULL;

	if (st)
		return st;
	st = store_new(n);
	if (!st)
		return NULL;
	/* two first exemplars at once: one store wins */
	if (!__atomic_compare_exchange_n(slot, &none, st, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		pcpu_exemplars_free(st);
		st = none;
	}
	return st;
}

int pcpu_exemplars_put(struct pcpu_exemplars *st, uint32_t i, const char *const *labels,
		     double value)
{
	struct record *r = new_record(labels, value), *old;

	if (!r)
		return -ENOMEM;
	pthread_mutex_lock(&exemplar_lock);
	old = st->cur[i];
	st->cur[i] = r;
	if (old == st->shown[i])
		old = NULL; /* the last scrape's: it frees it when it moves past */
	pthread_mutex_unlock(&exemplar_lock);
	free(old);
	return 0;
}

const struct pcpu_exemplar *pcpu_exemplars_show(struct pcpu_exemplars *st, int64_t scale)
{
	pthread_mutex_lock(&exemplar_lock);
	for (uint32_t i = 0; i < st->n; i++) {
		if (st->shown[i] != st->cur[i]) {
			/* cur[i] replaced it: nobody else points at it */
			free(st->shown[i]);
			st->shown[i] = st->cur[i];
		}
		st->out[i] = st->shown[i] ? st->shown[i]->pub : (struct pcpu_exemplar){ 0 };
		if (scale > 1)
			st->out[i].value /= (double)scale;
	}
	pthread_mutex_unlock(&exemplar_lock);
	return st->out;
}

/* Counters. */

struct counter_entry {
	const struct pcpu_counter *c;
	struct pcpu_exemplars *st;
};

static struct counter_entry *table; /* sorted by counter; under exemplar_lock */
static size_t nr_table, table_cap;

/* The first index of the table not below @c; under exemplar_lock. */
static size_t table_rank(const void *c)
{
	size_t lo = 0, hi = nr_table;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((uintptr_t)table[mid].c < (uintptr_t)c)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* @c's store, or NULL; under exemplar_lock. */
static struct counter_entry *table_find(const void *c)
{
	size_t i = table_rank(c);

	return i < nr_table && table[i].c == c ? &table[i] : NULL;
}

/* @c's store, made on its first exemplar; NULL for want of memory. */
static struct pcpu_exemplars *counter_store(struct pcpu_counter *c)
{
	struct counter_entry *e;
	struct pcpu_exemplars *st;

	size_t i;

	pthread_mutex_lock(&exemplar_lock);
	e = table_find(c);
	if (e) {
		st = e->st;
		pthread_mutex_unlock(&exemplar_lock);
		return st;
	}
	st = store_new(1);
	if (st && nr_table == table_cap) {
		size_t cap = table_cap ? 2 * table_cap : 16;
		struct counter_entry *t = realloc(table, cap * sizeof(*t));

		if (t) {
			table = t;
			table_cap = cap;
		} else {
			pcpu_exemplars_free(st);
			st = NULL;
		}
	}
	if (st) {
		i = table_rank(c);
		memmove(&table[i + 1], &table[i], (nr_table - i) * sizeof(*table));
		table[i] = (struct counter_entry){ .c = c, .st = st };
		__atomic_store_n(&nr_table, nr_table + 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&exemplar_lock);
	return st;
}

PCPU_EXPORT int pcpu_counter_add_exemplar(struct pcpu_counter *c, int64_t delta,
					  const char *const *labels)
{
	struct pcpu_exemplars *st;

	if (!c || !pcpu_counter_initialized(c))
		return -EINVAL;
	pcpu_counter_add(c, delta);
	if (pcpu_exemplar_check_labels(labels))
		return -EINVAL;
	if (!(__atomic_load_n(&c->flags, __ATOMIC_ACQUIRE) & PCPU_COUNTER_F_DESCRIBED))
		return -ENOENT;
	st = counter_store(c);
	if (!st)
		return -ENOMEM;
	return pcpu_exemplars_put(st, 0, labels, (double)delta);
}

const struct pcpu_exemplar *pcpu_counter_exemplars(const struct pcpu_counter *c, int64_t scale)
{
	struct counter_entry *e;
	struct pcpu_exemplars *st;

	if (!__atomic_load_n(&nr_table, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&exemplar_lock);
	e = table_find(c);
	st = e ? e->st : NULL;
	pthread_mutex_unlock(&exemplar_lock);
	/* the store lives until its counter's metric is forgotten, after this scrape */
	return st ? pcpu_exemplars_show(st, scale) : NULL;
}

void pcpu_exemplars_forget(const void *obj)
{
	struct counter_entry *e;
	struct pcpu_exemplars *st = NULL;

	if (!__atomic_load_n(&nr_table, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&exemplar_lock);
	e = table_find(obj);
	if (e) {
		size_t i = (size_t)(e - table);

		st = e->st;
		memmove(&table[i], &table[i + 1], (nr_table - i - 1) * sizeof(*table));
		__atomic_store_n(&nr_table, nr_table - 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&exemplar_lock);
	pcpu_exemplars_free(st);
}
