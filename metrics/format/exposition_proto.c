/* SPDX-License-Identifier: MIT */
/*
 * Prometheus's protobuf format (see <percpu/metrics.h>): one
 * io.prometheus.client.MetricFamily per family, each preceded by its
 * length as a varint, encoded by hand (the core takes no protobuf
 * library): a message is its fields in order, each a tag (field << 3 |
 * wire type) and a varint, a little-endian double, or a length and bytes.
 * Families come contiguous from the walk, as for the text formats.
 *
 * What the text format 0.0.4 does, this does: a counter family is named
 * NAME_total, an info family NAME_info typed gauge with value 1; HELP as
 * it is (no escaping: it is no text format). Histograms give their
 * buckets without +Inf (Prometheus makes it from sample_count); a native
 * one (PCPU_METRIC_SAMPLE_F_NATIVE) gives schema, zero bucket, its runs
 * of consecutive buckets (BucketSpan messages: positive_span) and their
 * deltas (positive_delta), and its classic buckets only where it has some;
 * a sparse one (PCPU_METRIC_SAMPLE_F_SPARSE) its negative ones too
 * (negative_span, negative_delta) and its double sum.
 * Exemplars (Exemplar: labels, value, a Timestamp) go on a counter, on a
 * histogram's classic buckets (a +Inf bucket is written for one of its
 * own; a native histogram's classic bucket takes the latest of the fine
 * buckets it spans), and in a native histogram's list of them
 * (Histogram.exemplars) too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/metrics.h>

#include "format/format_internal.h"
#include "kinds/kinds_internal.h"

/* Wire types. */
#define WT_VARINT 0
#define WT_I64 1
#define WT_LEN 2

/* io.prometheus.client field numbers (client_model's metrics.proto). */
enum {
	FAMILY_NAME = 1, FAMILY_HELP = 2, FAMILY_TYPE = 3, FAMILY_METRIC = 4,
	LABEL_NAME = 1, LABEL_VALUE = 2,
	METRIC_LABEL = 1, METRIC_GAUGE = 2, METRIC_COUNTER = 3, METRIC_SUMMARY = 4,
	METRIC_HISTOGRAM = 7,
	SUMMARY_COUNT = 1, SUMMARY_SUM = 2, SUMMARY_QUANTILE = 3,
	QUANTILE_QUANTILE = 1, QUANTILE_VALUE = 2,
	VALUE_VALUE = 1, /* Gauge.value, Counter.value */
	HIST_COUNT = 1, HIST_SUM = 2, HIST_BUCKET = 3, HIST_SCHEMA = 5, HIST_ZERO_THRESHOLD = 6,
	HIST_ZERO_COUNT = 7, HIST_NEGATIVE_SPAN = 9, HIST_NEGATIVE_DELTA = 10,
	HIST_POSITIVE_SPAN = 12, HIST_POSITIVE_DELTA = 13,
	HIST_EXEMPLARS = 16,
	BUCKET_CUMULATIVE = 1, BUCKET_UPPER_BOUND = 2, BUCKET_EXEMPLAR = 3,
	SPAN_OFFSET = 1, SPAN_LENGTH = 2,
	COUNTER_EXEMPLAR = 2,
	EXEMPLAR_LABEL = 1, EXEMPLAR_VALUE = 2, EXEMPLAR_TIMESTAMP = 3,
	TIMESTAMP_SECONDS = 1, TIMESTAMP_NANOS = 2, /* google.protobuf.Timestamp */
};

/* Created timestamps (client_model 0.5, July 2023: after Prometheus 2.42, which skips them). */
enum { COUNTER_CREATED = 3, SUMMARY_CREATED = 4, HIST_CREATED = 15 };

/* MetricType. */
enum { TYPE_COUNTER = 0, TYPE_GAUGE = 1, TYPE_SUMMARY = 2, TYPE_HISTOGRAM = 4 };

/* A message being built; a failed allocation sets @oom and drops what follows. */
struct buf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static void put_raw(struct buf *b, const void *data, size_t n)
{
	if (b->oom)
		return;
	if (b->cap - b->len < n) {
		size_t cap = b->cap ? b->cap : 64;
		uint8_t *p;

		while (cap - b->len < n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

/* @v in 7-bit groups, least significant first, the high bit on all but the last. */
static size_t encode_varint(uint8_t out[10], uint64_t v)
{
	size_t n = 0;

	do {
		out[n++] = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	return n;
}

static void put_varint(struct buf *b, uint64_t v)
{
	uint8_t out[10];

	put_raw(b, out, encode_varint(out, v));
}

static void put_tag(struct buf *b, unsigned int field, unsigned int wire)
{
	put_varint(b, (uint64_t)field << 3 | wire);
}

static void put_uint(struct buf *b, unsigned int field, uint64_t v)
{
	put_tag(b, field, WT_VARINT);
	put_varint(b, v);
}

/* sint32 and sint64: zigzag, so that small negative numbers are short. */
static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static void put_double(struct buf *b, unsigned int field, double d)
{
	uint64_t bits;
	uint8_t le[8];

	memcpy(&bits, &d, sizeof(bits));
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(bits >> (8 * i));
	put_tag(b, field, WT_I64);
	put_raw(b, le, sizeof(le));
}

static void put_bytes(struct buf *b, unsigned int field, const void *data, size_t n)
{
	put_tag(b, field, WT_LEN);
	put_varint(b, n);
	put_raw(b, data, n);
}

static void put_string(struct buf *b, unsigned int field, const char *s)
{
	put_bytes(b, field, s, strlen(s));
}

/* Appends @sub as field @field of @b, and empties @sub for the next. */
static void put_message(struct buf *b, unsigned int field, struct buf *sub)
{
	b->oom |= sub->oom;
	put_bytes(b, field, sub->p, sub->len);
	sub->len = 0;
	sub->oom = false;
}

/*
 * @v / @scale as the text formats write it: exactly the integer when
 * @scale divides @v, else the nearest double of the quotient.
 */
static double scaled(int64_t v, int64_t scale)
{
	if (scale <= 1)
		return (double)v;
	if (v % scale == 0)
		return (double)(v / scale);
	return (double)v / (double)scale;
}

/* The native buckets of one histogram as runs (BucketSpan) and deltas. */
struct runs {
	struct buf *runs, *deltas, *run; /* run: the open run's BucketSpan */
	int32_t next;                      /* the key after the last bucket */
	uint32_t length;                 /* of the open run */
	int32_t offset;
	uint64_t prev;                     /* the last bucket's count */
	bool any;
	unsigned int field;                /* HIST_POSITIVE_SPAN or HIST_NEGATIVE_SPAN */
};

static void close_run(struct runs *s)
{
	put_uint(s->run, SPAN_OFFSET, zigzag(s->offset));
	put_uint(s->run, SPAN_LENGTH, s->length);
	put_message(s->runs, s->field ? s->field : HIST_POSITIVE_SPAN, s->run);
}

static void put_delta(struct runs *s, uint64_t count)
{
	put_varint(s->deltas, zigzag((int64_t)(count - s->prev)));
	s->prev = count;
	s->length++;
}

/*
 * As the Go client: a gap of 1 or 2 empty buckets stays inside the run
 * (as zero counts), a longer one starts a new run whose offset is the gap
 * (the first run's: its first key).
 */
static void add_key(void *arg, int32_t key, uint64_t count)
{
	struct runs *s = arg;
	int64_t gap = s->any ? (int64_t)key - s->next : key;

	if (!s->any || gap > 2) {
		if (s->any)
			close_run(s);
		s->offset = (int32_t)gap;
		s->length = 0;
	} else {
		for (; gap > 0; gap--)
			put_delta(s, 0);
	}
	put_delta(s, count);
	s->next = key + 1;
	s->any = true;
}

/* Scratch messages, reused from sample to sample. */
struct scratch {
	struct buf family, metric, value, item, deltas, exemplar, part;
};

/* Exemplar @e (with labels) as field @field of @dst. */
static void put_exemplar(struct scratch *x, struct buf *dst, unsigned int field,
			 const struct pcpu_exemplar *e)
{
	double seconds = floor(e->timestamp);
	int64_t nanos = (int64_t)((e->timestamp - seconds) * 1e9 + 0.5);

	for (const char *const *l = e->labels; *l; l += 2) {
		put_string(&x->part, LABEL_NAME, l[0]);
		put_string(&x->part, LABEL_VALUE, l[1]);
		put_message(&x->exemplar, EXEMPLAR_LABEL, &x->part);
	}
	put_double(&x->exemplar, EXEMPLAR_VALUE, e->value);
	if (nanos >= 1000000000) { /* rounded up to the next second */
		seconds += 1;
		nanos = 0;
	}
	put_uint(&x->part, TIMESTAMP_SECONDS, (uint64_t)(int64_t)seconds);
	if (nanos)
		put_uint(&x->part, TIMESTAMP_NANOS, (uint64_t)nanos);
	put_message(&x->exemplar, EXEMPLAR_TIMESTAMP, &x->part);
	put_message(dst, field, &x->exemplar);
}

/*
 * Sample @m's created time, where it has one, as the Timestamp field
 * @field of @dst (Counter, Histogram or Summary).
 */
static void put_created(struct scratch *x, struct buf *dst, unsigned int field,
			const struct pcpu_metric_sample *m)
{
	double seconds;
	int64_t nanos;

	if (!(m->flags & PCPU_METRIC_SAMPLE_F_CREATED))
		return;
	seconds = floor(m->created);
	nanos = (int64_t)((m->created - seconds) * 1e9 + 0.5);
	if (nanos >= 1000000000) { /* rounded up to the next second */
		seconds += 1;
		nanos = 0;
	}
	put_uint(&x->part, TIMESTAMP_SECONDS, (uint64_t)(int64_t)seconds);
	if (nanos)
		put_uint(&x->part, TIMESTAMP_NANOS, (uint64_t)nanos);
	put_message(dst, field, &x->part);
}

/* Sample @m's exemplar of bucket @i, or NULL. */
static const struct pcpu_exemplar *exemplar_of(const struct pcpu_metric_sample *m, uint32_t i)
{
	return m->exemplars && m->exemplars[i].labels ? &m->exemplars[i] : NULL;
}

/*
 * One classic bucket: cumulative count, upper bound (scaled), and the
 * latest exemplar of the fine buckets it spans (a classic histogram's are
 * its own buckets: one each).
 */
struct classic {
	struct scratch *x;
	const struct pcpu_metric_sample *m;
	uint32_t next; /* the first fine bucket above the classic bucket before */
};

static void add_classic(void *arg, int64_t bound, uint64_t cumulative)
{
	struct classic *c = arg;
	struct buf *bucket = &c->x->item;
	const struct pcpu_exemplar *e;
	uint32_t to = c->next;

	/* every classic bound is a fine one */
	while (to < c->m->nr_bounds && c->m->bounds[to] < bound)
		to++;
	e = pcpu_latest_exemplar(c->m, c->next, to);
	c->next = to + 1;
	put_uint(bucket, BUCKET_CUMULATIVE, cumulative);
	put_double(bucket, BUCKET_UPPER_BOUND, scaled(bound, c->m->scale));
	if (e)
		put_exemplar(c->x, bucket, BUCKET_EXEMPLAR, e);
	put_message(&c->x->value, HIST_BUCKET, bucket);
}

static void put_native(struct scratch *x, const struct pcpu_metric_sample *m)
{
	struct runs s = { .runs = &x->value, .deltas = &x->deltas, .run = &x->item };
	double zero = m->nr_bounds ? scaled(m->bounds[0], m->scale) : 0;

	/* 2^-128 for a threshold of 0, as the Go client: below any positive observation */
	put_uint(&x->value, HIST_SCHEMA, zigzag(m->schema));
	put_double(&x->value, HIST_ZERO_THRESHOLD, zero > 0 ? zero : ldexp(1, -128));
	put_uint(&x->value, HIST_ZERO_COUNT, m->nr_bounds ? m->buckets[0] : 0);
	x->deltas.len = 0;
	x->deltas.oom = false;
	if (m->nr_bounds)
		pcpu_native_each_key(m, add_key, &s);
	if (s.any) {
		close_run(&s);
		/* packed: one length-delimited field of varints */
		put_message(&x->value, HIST_POSITIVE_DELTA, &x->deltas);
	}
}

/*
 * A sparse histogram's native buckets (PCPU_METRIC_SAMPLE_F_SPARSE): its
 * zero bucket, then its negative and positive buckets, each sign as runs
 * and deltas (negative_span and negative_delta: buckets of |v|), as the
 * Go client writes them.
 */
static void put_sparse(struct scratch *x, const struct pcpu_metric_sample *m)
{
	put_uint(&x->value, HIST_SCHEMA, zigzag(m->schema));
	put_double(&x->value, HIST_ZERO_THRESHOLD, m->zero_threshold);
	put_uint(&x->value, HIST_ZERO_COUNT, m->zero_count);
	for (int negative = 1; negative >= 0; negative--) {
		struct runs s = { .runs = &x->value, .deltas = &x->deltas, .run = &x->item,
				  .field = negative ? HIST_NEGATIVE_SPAN : HIST_POSITIVE_SPAN };
		uint32_t from = negative ? 0 : m->nr_negative, to = negative ? m->nr_negative :
									       m->nr_keys;

		x->deltas.len = 0;
		x->deltas.oom = false;
		for (uint32_t i = from; i < to; i++)
			add_key(&s, m->keys[i], m->key_counts[i]);
		if (s.any) {
			close_run(&s);
			put_message(&x->value, negative ? HIST_NEGATIVE_DELTA : HIST_POSITIVE_DELTA,
				    &x->deltas);
		}
	}
}

/*
 * The classic buckets (a native histogram's classic bounds), each with its
 * exemplar; +Inf is implicit, unless an exemplar above the last classic
 * bound needs it written (a native histogram without classic bounds too,
 * as client_golang's); then a native histogram's own list of exemplars.
 */
static void put_histogram(struct scratch *x, const struct pcpu_metric_sample *m)
{
	struct classic c = { .x = x, .m = m };
	const struct pcpu_exemplar *inf;
	uint64_t count = 0, total = 0;

	for (uint32_t i = 0; i <= m->nr_bounds; i++)
		total += m->buckets[i];
	put_uint(&x->value, HIST_COUNT, total);
	put_double(&x->value, HIST_SUM,
		   m->flags & PCPU_METRIC_SAMPLE_F_SPARSE ? m->dsum : scaled(m->sum, m->scale));
	if (m->flags & PCPU_METRIC_SAMPLE_F_NATIVE) {
		pcpu_native_each_classic(m, add_classic, &c);
	} else {
		for (uint32_t i = 0; i < m->nr_bounds; i++) {
			count += m->buckets[i];
			add_classic(&c, m->bounds[i], count);
		}
	}
	inf = pcpu_latest_exemplar(m, c.next, m->nr_bounds);
	if (inf) {
		put_uint(&x->item, BUCKET_CUMULATIVE, total);
		put_double(&x->item, BUCKET_UPPER_BOUND, INFINITY);
		put_exemplar(x, &x->item, BUCKET_EXEMPLAR, inf);
		put_message(&x->value, HIST_BUCKET, &x->item);
	}
	if (m->flags & (PCPU_METRIC_SAMPLE_F_NATIVE | PCPU_METRIC_SAMPLE_F_SPARSE)) {
		if (m->flags & PCPU_METRIC_SAMPLE_F_SPARSE)
			put_sparse(x, m);
		else
			put_native(x, m);
		/* a native histogram's exemplars: a list of their own */
		for (uint32_t i = 0; i <= m->nr_bounds; i++)
			if (exemplar_of(m, i))
				put_exemplar(x, &x->value, HIST_EXEMPLARS, exemplar_of(m, i));
	}
}

/* A Summary message: count, sum (scaled), a Quantile message per quantile. */
static void put_summary(struct scratch *x, const struct pcpu_metric_sample *m)
{
	put_uint(&x->value, SUMMARY_COUNT, m->count);
	put_double(&x->value, SUMMARY_SUM, scaled(m->sum, m->scale));
	for (uint32_t i = 0; i < m->nr_quantiles; i++) {
		put_double(&x->item, QUANTILE_QUANTILE, m->quantiles[i]);
		put_double(&x->item, QUANTILE_VALUE, m->quantile_values[i]);
		put_message(&x->value, SUMMARY_QUANTILE, &x->item);
	}
}

struct proto_writer {
	FILE *out;
	char *family; /* the family being built, NULL before the first */
	struct scratch x;
};

/* Writes the family built so far, preceded by its length. */
static void flush_family(struct proto_writer *w)
{
	uint8_t len[10];

	fwrite(len, 1, encode_varint(len, w->x.family.len), w->out);
	fwrite(w->x.family.p, 1, w->x.family.len, w->out);
	w->x.family.len = 0;
}

static void start_family(struct proto_writer *w, const struct pcpu_metric_sample *m)
{
	const char *suffix = m->kind == PCPU_METRIC_COUNTER ? "_total" :
			     m->kind == PCPU_METRIC_INFO    ? "_info" :
							      "";
	int type = m->kind == PCPU_METRIC_COUNTER   ? TYPE_COUNTER :
		   m->kind == PCPU_METRIC_HISTOGRAM ? TYPE_HISTOGRAM :
		   m->kind == PCPU_METRIC_SUMMARY   ? TYPE_SUMMARY :
						      TYPE_GAUGE;
	size_t n = strlen(m->name), s = strlen(suffix);

	put_tag(&w->x.family, FAMILY_NAME, WT_LEN);
	put_varint(&w->x.family, n + s);
	put_raw(&w->x.family, m->name, n);
	put_raw(&w->x.family, suffix, s);
	if (m->help[0])
		put_string(&w->x.family, FAMILY_HELP, m->help);
	put_uint(&w->x.family, FAMILY_TYPE, (uint64_t)type);
}

static int put_metric(const struct pcpu_metric_sample *m, void *arg)
{
	struct proto_writer *w = arg;
	struct scratch *x = &w->x;
	unsigned int field;

	if (!w->family || strcmp(w->family, m->name) != 0) {
		if (w->family)
			flush_family(w);
		free(w->family);
		w->family = strdup(m->name);
		if (!w->family)
			return -ENOMEM;
		start_family(w, m);
	}
	for (const char *const *l = m->labels; l && *l; l += 2) {
		put_string(&x->item, LABEL_NAME, l[0]);
		put_string(&x->item, LABEL_VALUE, l[1]);
		put_message(&x->metric, METRIC_LABEL, &x->item);
	}
	if (m->kind == PCPU_METRIC_HISTOGRAM) {
		put_histogram(x, m);
		put_created(x, &x->value, HIST_CREATED, m);
		field = METRIC_HISTOGRAM;
	} else if (m->kind == PCPU_METRIC_SUMMARY) {
		put_summary(x, m);
		put_created(x, &x->value, SUMMARY_CREATED, m);
		field = METRIC_SUMMARY;
	} else {
		double v = m->kind == PCPU_METRIC_INFO ? 1 : /* whatever its source holds */
			   m->flags & PCPU_METRIC_SAMPLE_F_DOUBLE ? m->dvalue :
								    scaled(m->value, m->scale);

		put_double(&x->value, VALUE_VALUE, v);
		field = m->kind == PCPU_METRIC_COUNTER ? METRIC_COUNTER : METRIC_GAUGE;
		if (field == METRIC_COUNTER && exemplar_of(m, 0))
			put_exemplar(x, &x->value, COUNTER_EXEMPLAR, exemplar_of(m, 0));
		if (field == METRIC_COUNTER)
			put_created(x, &x->value, COUNTER_CREATED, m);
	}
	put_message(&x->metric, field, &x->value);
	put_message(&x->family, FAMILY_METRIC, &x->metric);
	return x->family.oom ? -ENOMEM : 0;
}

int pcpu_exposition_write_proto(FILE *out, pcpu_sample_walk walk, void *ctx)
{
	struct proto_writer w = { .out = out };
	int err = walk(put_metric, &w, ctx);

	if (!err && w.x.family.oom)
		err = -ENOMEM;
	if (!err && w.family)
		flush_family(&w);
	free(w.family);
	free(w.x.family.p);
	free(w.x.metric.p);
	free(w.x.value.p);
	free(w.x.item.p);
	free(w.x.deltas.p);
	free(w.x.exemplar.p);
	free(w.x.part.p);
	return err;
}
