/* SPDX-License-Identifier: MIT */
/*
 * Prometheus's protobuf format (PCPU_METRICS_PROTOBUF): hand-made samples
 * through pcpu_exposition_write(), the body decoded here by a decoder of
 * its own (varints, zigzag, length-delimited fields, little-endian
 * doubles, packed repeated fields) that refuses what it does not expect,
 * and every field checked against io.prometheus.client's metrics.proto.
 * Native samples are built by the layout of PCPU_METRIC_SAMPLE_F_NATIVE,
 * their keys worked out by hand (and checked against
 * pcpu_metrics_native_key()).
 */
#define _GNU_SOURCE /* open_memstream */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/family.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/metrics_registry.h>

#include "format/format_internal.h"
#include "kinds/kinds_internal.h"

/* The decoder. */

struct d_label {
	char name[64], value[64];
};

struct d_exemplar {
	int nr_labels;
	struct d_label labels[2];
	double value;
	int64_t seconds, nanos;
	bool has_value, has_timestamp;
};

struct d_bucket {
	uint64_t cumulative;
	double upper;
	bool has_cumulative, has_upper, has_exemplar;
	struct d_exemplar exemplar;
};

struct d_span {
	int32_t offset;
	uint32_t length;
};

struct d_metric {
	int nr_labels;
	struct d_label labels[4];
	bool has_counter, has_gauge, has_histogram;
	double value;
	bool has_value;
	/* histogram */
	uint64_t count;
	double sum;
	bool has_count, has_sum, has_schema, has_zero_threshold, has_zero_count;
	int nr_buckets;
	struct d_bucket buckets[16];
	int32_t schema;
	double zero_threshold;
	uint64_t zero_count;
	int nr_spans;
	struct d_span spans[8];
	int nr_deltas;
	int64_t deltas[32];
	/* negative_span (9) and negative_delta (10): a sparse histogram's */
	int nr_nspans;
	struct d_span nspans[8];
	int nr_ndeltas;
	int64_t ndeltas[32];
	/* a counter's exemplar; a native histogram's list */
	bool has_exemplar;
	struct d_exemplar exemplar;
	int nr_exemplars;
	struct d_exemplar exemplars[4];
	/* created_timestamp (a Counter's 3, a Histogram's 15), when present */
	bool has_created;
};

struct d_family {
	char name[64], help[512];
	bool has_name, has_help, has_type;
	int type;
	int nr_metrics;
	struct d_metric metrics[4];
};

/* A reader of one message: [p, end). */
struct rd {
	const uint8_t *p, *end;
};

static uint64_t rd_varint(struct rd *r)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		cr_assert(r->p < r->end, "varint past the end");
		uint8_t b = *r->p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	cr_assert_fail("varint of more than 10 bytes");
	return 0;
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static double rd_double(struct rd *r)
{
	uint64_t bits = 0;
	double d;

	cr_assert(r->end - r->p >= 8, "double past the end");
	for (int i = 0; i < 8; i++)
		bits |= (uint64_t)r->p[i] << (8 * i);
	r->p += 8;
	memcpy(&d, &bits, sizeof(d));
	return d;
}

/* A length-delimited field's contents, as a reader. */
static struct rd rd_sub(struct rd *r)
{
	uint64_t n = rd_varint(r);
	struct rd sub = { r->p, r->p + n };

	cr_assert(n <= (uint64_t)(r->end - r->p), "length %llu past the end", (unsigned long long)n);
	r->p += n;
	return sub;
}

static void rd_string(struct rd *r, char *out, size_t size)
{
	struct rd s = rd_sub(r);
	size_t n = (size_t)(s.end - s.p);

	cr_assert_lt(n, size);
	memcpy(out, s.p, n);
	out[n] = '\0';
	cr_assert_eq(strlen(out), n, "a NUL inside a string");
}

/* The next field's number, checked to have wire type @wire. */
static unsigned int rd_tag(struct rd *r, const int *wires, size_t nr_wires)
{
	uint64_t tag = rd_varint(r);
	unsigned int field = (unsigned int)(tag >> 3);

	cr_assert(field > 0 && (size_t)field < nr_wires && wires[field] >= 0,
		  "unexpected field %u", field);
	cr_assert_eq((int)(tag & 7), wires[field], "field %u: wire type %d", field, (int)(tag & 7));
	return field;
}

#define VARINT 0
#define I64 1
#define LEN 2
#define NOPE (-1)

static void decode_label(struct rd r, struct d_label *l)
{
	static const int wires[] = { NOPE, LEN, LEN };

	while (r.p < r.end) {
		if (rd_tag(&r, wires, 3) == 1)
			rd_string(&r, l->name, sizeof(l->name));
		else
			rd_string(&r, l->value, sizeof(l->value));
	}
}

/* Exemplar: 1 label (repeated), 2 value, 3 timestamp {1 seconds, 2 nanos}. */
static void decode_exemplar(struct rd r, struct d_exemplar *e)
{
	static const int wires[] = { NOPE, LEN, I64, LEN };
	static const int ts_wires[] = { NOPE, VARINT, VARINT };

	while (r.p < r.end) {
		switch (rd_tag(&r, wires, 4)) {
		case 1:
			cr_assert_lt(e->nr_labels, 2);
			decode_label(rd_sub(&r), &e->labels[e->nr_labels++]);
			break;
		case 2:
			e->value = rd_double(&r);
			e->has_value = true;
			break;
		case 3: {
			struct rd ts = rd_sub(&r);

			e->has_timestamp = true;
			while (ts.p < ts.end) {
				if (rd_tag(&ts, ts_wires, 3) == 1)
					e->seconds = (int64_t)rd_varint(&ts);
				else
					e->nanos = (int64_t)rd_varint(&ts);
			}
			break;
		}
		}
	}
}

/* Gauge or Counter: value = 1; a Counter's exemplar = 2, created_timestamp = 3. */
static void decode_value(struct rd r, struct d_metric *m)
{
	static const int wires[] = { NOPE, I64, LEN, LEN };

	while (r.p < r.end) {
		unsigned int field = rd_tag(&r, wires, 4);

		if (field == 3) {
			cr_assert(m->has_counter, "a created timestamp on a gauge");
			rd_sub(&r);
			m->has_created = true;
			continue;
		}
		if (field == 2) {
			cr_assert(m->has_counter, "an exemplar on a gauge");
			decode_exemplar(rd_sub(&r), &m->exemplar);
			m->has_exemplar = true;
			continue;
		}
		cr_assert(!m->has_value, "value twice");
		m->value = rd_double(&r);
		m->has_value = true;
	}
}

static void decode_bucket(struct rd r, struct d_bucket *b)
{
	static const int wires[] = { NOPE, VARINT, I64, LEN };

	while (r.p < r.end) {
		switch (rd_tag(&r, wires, 4)) {
		case 1:
			b->cumulative = rd_varint(&r);
			b->has_cumulative = true;
			break;
		case 2:
			b->upper = rd_double(&r);
			b->has_upper = true;
			break;
		case 3:
			decode_exemplar(rd_sub(&r), &b->exemplar);
			b->has_exemplar = true;
			break;
		}
	}
}

static void decode_span(struct rd r, struct d_span *s)
{
	static const int wires[] = { NOPE, VARINT, VARINT };

	while (r.p < r.end) {
		if (rd_tag(&r, wires, 3) == 1)
			s->offset = (int32_t)unzigzag(rd_varint(&r));
		else
			s->length = (uint32_t)rd_varint(&r);
	}
}

/* A packed sint64 list (a side's bucket deltas) into @deltas[32] after *@nr. */
static void decode_deltas(struct rd packed, int64_t *deltas, int *nr)
{
	while (packed.p < packed.end) {
		cr_assert_lt(*nr, 32);
		deltas[(*nr)++] = unzigzag(rd_varint(&packed));
	}
}

static void decode_histogram(struct rd r, struct d_metric *m)
{
	/* 1 count, 2 sum, 3 bucket, 5 schema, 6 zero_threshold, 7 zero_count,
	 * 9 negative_span, 10 negative_delta (packed), 12 positive_span, 13 positive_delta (packed), 15 created_timestamp,
	 * 16 exemplars */
	static const int wires[] = { NOPE, VARINT, I64, LEN, NOPE, VARINT, I64, VARINT, NOPE,
				     LEN,  LEN,    NOPE, LEN, LEN, NOPE, LEN,  LEN };

	while (r.p < r.end) {
		switch (rd_tag(&r, wires, sizeof(wires) / sizeof(wires[0]))) {
		case 1:
			m->count = rd_varint(&r);
			m->has_count = true;
			break;
		case 2:
			m->sum = rd_double(&r);
			m->has_sum = true;
			break;
		case 3:
			cr_assert_lt(m->nr_buckets, 16);
			decode_bucket(rd_sub(&r), &m->buckets[m->nr_buckets++]);
			break;
		case 5:
			m->schema = (int32_t)unzigzag(rd_varint(&r));
			m->has_schema = true;
			break;
		case 6:
			m->zero_threshold = rd_double(&r);
			m->has_zero_threshold = true;
			break;
		case 7:
			m->zero_count = rd_varint(&r);
			m->has_zero_count = true;
			break;
		case 15:
			rd_sub(&r);
			m->has_created = true;
			break;
		case 9:
			cr_assert_lt(m->nr_nspans, 8);
			decode_span(rd_sub(&r), &m->nspans[m->nr_nspans++]);
			break;
		case 10:
			decode_deltas(rd_sub(&r), m->ndeltas, &m->nr_ndeltas);
			break;
		case 12:
			cr_assert_lt(m->nr_spans, 8);
			decode_span(rd_sub(&r), &m->spans[m->nr_spans++]);
			break;
		case 13:
			decode_deltas(rd_sub(&r), m->deltas, &m->nr_deltas);
			break;
		case 16:
			cr_assert_lt(m->nr_exemplars, 4);
			decode_exemplar(rd_sub(&r), &m->exemplars[m->nr_exemplars++]);
			break;
		}
	}
}

static void decode_metric(struct rd r, struct d_metric *m)
{
	static const int wires[] = { NOPE, LEN, LEN, LEN, NOPE, NOPE, NOPE, LEN };

	while (r.p < r.end) {
		switch (rd_tag(&r, wires, 8)) {
		case 1:
			cr_assert_lt(m->nr_labels, 4);
			decode_label(rd_sub(&r), &m->labels[m->nr_labels++]);
			break;
		case 2:
			m->has_gauge = true;
			decode_value(rd_sub(&r), m);
			break;
		case 3:
			m->has_counter = true;
			decode_value(rd_sub(&r), m);
			break;
		case 7:
			m->has_histogram = true;
			decode_histogram(rd_sub(&r), m);
			break;
		}
	}
}

static void decode_family(struct rd r, struct d_family *f)
{
	static const int wires[] = { NOPE, LEN, LEN, VARINT, LEN };

	memset(f, 0, sizeof(*f));
	while (r.p < r.end) {
		switch (rd_tag(&r, wires, 5)) {
		case 1:
			rd_string(&r, f->name, sizeof(f->name));
			f->has_name = true;
			break;
		case 2:
			rd_string(&r, f->help, sizeof(f->help));
			f->has_help = true;
			break;
		case 3:
			f->type = (int)rd_varint(&r);
			f->has_type = true;
			break;
		case 4:
			cr_assert_lt(f->nr_metrics, 4);
			decode_metric(rd_sub(&r), &f->metrics[f->nr_metrics++]);
			break;
		}
	}
}

/* Splits a delimited body into families; returns how many. */
static int decode_body(const char *body, size_t len, struct d_family *out, int max)
{
	struct rd r = { (const uint8_t *)body, (const uint8_t *)body + len };
	int n = 0;

	while (r.p < r.end) {
		cr_assert_lt(n, max);
		decode_family(rd_sub(&r), &out[n++]);
	}
	return n;
}

/* The samples and the walk. */

static const struct pcpu_metric_sample *walk_samples;
static size_t walk_nr;

static int walk(int (*cb)(const struct pcpu_metric_sample *, void *), void *arg, void *ctx)
{
	(void)ctx;
	for (size_t i = 0; i < walk_nr; i++) {
		int err = cb(&walk_samples[i], arg);

		if (err)
			return err;
	}
	return 0;
}

/* The protobuf body of @nr samples @s, in *@len. */
static char *body_of(const struct pcpu_metric_sample *s, size_t nr, size_t *len)
{
	char *body = NULL;
	FILE *out = open_memstream(&body, len);

	cr_assert_not_null(out);
	walk_samples = s;
	walk_nr = nr;
	cr_assert_eq(pcpu_exposition_write(out, PCPU_METRICS_PROTOBUF, walk, NULL), 0);
	cr_assert_eq(fclose(out), 0);
	return body;
}

static struct d_family families[8];

static int decode(const struct pcpu_metric_sample *s, size_t nr)
{
	size_t len;
	char *body = body_of(s, nr, &len);
	int n = decode_body(body, len, families, 8);

	free(body);
	return n;
}

#define COUNTER 0
#define GAUGE 1
#define HISTOGRAM 4

static const char *const no_labels[] = { NULL };

static void assert_family(const struct d_family *f, const char *name, const char *help, int type,
			  int nr_metrics)
{
	cr_assert(f->has_name);
	cr_assert_str_eq(f->name, name);
	cr_assert_eq(f->has_help, help != NULL, "%s: HELP", name);
	if (help)
		cr_assert_str_eq(f->help, help);
	cr_assert(f->has_type, "%s: the type is written, even COUNTER (0)", name);
	cr_assert_eq(f->type, type, "%s", name);
	cr_assert_eq(f->nr_metrics, nr_metrics, "%s", name);
}

static void assert_value(const struct d_metric *m, bool counter, double v)
{
	cr_assert_eq(m->has_counter, counter);
	cr_assert_eq(m->has_gauge, !counter);
	cr_assert_not(m->has_histogram);
	cr_assert(m->has_value);
	cr_assert_eq(m->value, v, "%.17g != %.17g", m->value, v);
}

Test(protobuf, an_empty_walk_is_an_empty_body)
{
	size_t len = 99;
	char *body = body_of(NULL, 0, &len);

	cr_assert_eq(len, 0);
	free(body);
}

Test(protobuf, counters_are_name_total_with_the_scaled_or_double_value)
{
	static const char *const l200[] = { "code", "200", "method", "get", NULL };
	static const char *const l500[] = { "code", "500", "method", "post", NULL };
	const struct pcpu_metric_sample s[] = {
		{ .name = "requests", .help = "Requests \\ and\nlines \"as is\".", .unit = "",
		  .kind = PCPU_METRIC_COUNTER, .labels = l200, .value = 42 },
		{ .name = "requests", .help = "Requests \\ and\nlines \"as is\".", .unit = "",
		  .kind = PCPU_METRIC_COUNTER, .labels = l500, .value = 7 },
		{ .name = "cpu_seconds", .help = "", .unit = "seconds", .kind = PCPU_METRIC_COUNTER,
		  .labels = no_labels, .value = 1500000000, .scale = 1000000000 },
		{ .name = "exact_seconds", .help = "", .unit = "", .kind = PCPU_METRIC_COUNTER,
		  .labels = NULL, .value = 3000000000, .scale = 1000000000 },
		{ .name = "ratio", .help = "", .unit = "", .kind = PCPU_METRIC_COUNTER,
		  .labels = NULL, .value = 0, .flags = PCPU_METRIC_SAMPLE_F_DOUBLE, .dvalue = 0.125 },
	};
	int n = decode(s, 5);

	cr_assert_eq(n, 4, "one family per name, the same name contiguous");
	assert_family(&families[0], "requests_total", "Requests \\ and\nlines \"as is\".",
		      COUNTER, 2);
	assert_value(&families[0].metrics[0], true, 42);
	cr_assert_eq(families[0].metrics[0].nr_labels, 2);
	cr_assert_str_eq(families[0].metrics[0].labels[0].name, "code");
	cr_assert_str_eq(families[0].metrics[0].labels[0].value, "200");
	cr_assert_str_eq(families[0].metrics[0].labels[1].name, "method");
	cr_assert_str_eq(families[0].metrics[0].labels[1].value, "get");
	assert_value(&families[0].metrics[1], true, 7);
	cr_assert_eq(families[0].metrics[1].nr_labels, 2);
	cr_assert_str_eq(families[0].metrics[1].labels[0].value, "500");
	cr_assert_str_eq(families[0].metrics[1].labels[1].value, "post");

	assert_family(&families[1], "cpu_seconds_total", NULL, COUNTER, 1);
	assert_value(&families[1].metrics[0], true, 1.5);
	cr_assert_eq(families[1].metrics[0].nr_labels, 0);
	assert_family(&families[2], "exact_seconds_total", NULL, COUNTER, 1);
	assert_value(&families[2].metrics[0], true, 3);
	assert_family(&families[3], "ratio_total", NULL, COUNTER, 1);
	assert_value(&families[3].metrics[0], true, 0.125);
}

Test(protobuf, gauges_and_info_are_gauges_info_is_one)
{
	static const char *const lv[] = { "version", "1.2.3", NULL };
	const struct pcpu_metric_sample s[] = {
		{ .name = "temperature", .help = "Degrees.", .unit = "", .kind = PCPU_METRIC_GAUGE,
		  .labels = no_labels, .value = -3 },
		{ .name = "load", .help = "", .unit = "", .kind = PCPU_METRIC_GAUGE,
		  .labels = no_labels, .value = -1, .scale = 4 },
		{ .name = "fill", .help = "", .unit = "", .kind = PCPU_METRIC_GAUGE,
		  .labels = no_labels, .value = 1, .flags = PCPU_METRIC_SAMPLE_F_DOUBLE,
		  .dvalue = 0.1 },
		{ .name = "build", .help = "Build.", .unit = "", .kind = PCPU_METRIC_INFO,
		  .labels = lv, .value = 17 },
	};

	cr_assert_eq(decode(s, 4), 4);
	assert_family(&families[0], "temperature", "Degrees.", GAUGE, 1);
	assert_value(&families[0].metrics[0], false, -3);
	assert_family(&families[1], "load", NULL, GAUGE, 1);
	assert_value(&families[1].metrics[0], false, -0.25);
	assert_family(&families[2], "fill", NULL, GAUGE, 1);
	assert_value(&families[2].metrics[0], false, 0.1);
	assert_family(&families[3], "build_info", "Build.", GAUGE, 1);
	assert_value(&families[3].metrics[0], false, 1);
	cr_assert_eq(families[3].metrics[0].nr_labels, 1);
	cr_assert_str_eq(families[3].metrics[0].labels[0].name, "version");
	cr_assert_str_eq(families[3].metrics[0].labels[0].value, "1.2.3");
}

static void assert_bucket(const struct d_metric *m, int i, uint64_t cumulative, double upper)
{
	cr_assert(m->buckets[i].has_cumulative && m->buckets[i].has_upper, "bucket %d", i);
	cr_assert_eq(m->buckets[i].cumulative, cumulative, "bucket %d", i);
	cr_assert_eq(m->buckets[i].upper, upper, "bucket %d: %.17g", i, m->buckets[i].upper);
}

Test(protobuf, a_classic_histogram_has_cumulative_buckets_without_inf)
{
	static const int64_t bounds[] = { 100, 250, 1000 };
	static const uint64_t buckets[] = { 1, 2, 3, 4 };
	static const char *const l[] = { "route", "/x", NULL };
	const struct pcpu_metric_sample s[] = {
		{ .name = "latency_seconds", .help = "Latency.", .unit = "seconds",
		  .kind = PCPU_METRIC_HISTOGRAM, .labels = l, .nr_bounds = 3, .bounds = bounds,
		  .buckets = buckets, .count = 10, .sum = 5678, .scale = 1000 },
	};
	const struct d_metric *m = &families[0].metrics[0];

	cr_assert_eq(decode(s, 1), 1);
	assert_family(&families[0], "latency_seconds", "Latency.", HISTOGRAM, 1);
	cr_assert(m->has_histogram);
	cr_assert_not(m->has_counter || m->has_gauge);
	cr_assert_eq(m->nr_labels, 1);
	cr_assert_str_eq(m->labels[0].value, "/x");
	cr_assert(m->has_count && m->has_sum);
	cr_assert_eq(m->count, 10);
	cr_assert_eq(m->sum, (double)5.678); /* a double, not i386's long double */
	cr_assert_eq(m->nr_buckets, 3, "no +Inf bucket: Prometheus adds it from the count");
	assert_bucket(m, 0, 1, 0.1);
	assert_bucket(m, 1, 3, 0.25);
	assert_bucket(m, 2, 6, 1);
	cr_assert_not(m->has_schema || m->has_zero_threshold || m->has_zero_count);
	cr_assert_eq(m->nr_spans + m->nr_deltas, 0);
}

/*
 * Schema 0, scale 1: native key k holds (2^(k-1), 2^k]. Fine bounds: the
 * zero threshold 0, then 1, 2, 3, 4, 8, ..., 256 (3 is a classic bound
 * inside key 2, as pcpu_native_bounds() merges them).
 */
static const int64_t nat_bounds[] = { 0, 1, 2, 3, 4, 8, 16, 32, 64, 128, 256 };
static const int32_t nat_keys[] = { 0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8 }; /* of each bound */
static const uint64_t nat_buckets[] = {
	5,    /* zero bucket */
	2,    /* (0, 1]: key 0 */
	0,    /* (1, 2]: key 1 */
	3, 4, /* (2, 3], (3, 4]: key 2, 7 in all */
	0,    /* key 3 */
	1,    /* (8, 16]: key 4 */
	0, 0, 0, /* keys 5, 6, 7 */
	2,    /* (128, 256]: key 8 */
	6,    /* above 256: the top bound's key, 8 */
};
static const int64_t nat_classic[] = { 3, 64 };

Test(protobuf, the_hand_made_keys_are_the_library_keys)
{
	for (int i = 1; i < 11; i++)
		cr_assert_eq(pcpu_metrics_native_key((double)nat_bounds[i], 0), nat_keys[i],
			     "bound %lld", (long long)nat_bounds[i]);
	cr_assert_eq(pcpu_metrics_native_key(0.707, 1), -1);
	cr_assert_eq(pcpu_metrics_native_key(1.0, 1), 0);
	cr_assert_eq(pcpu_metrics_native_key(2.828, 1), 3);
	cr_assert_eq(pcpu_metrics_native_key(4.0, 1), 4);
	cr_assert_eq(pcpu_metrics_native_key(8.0, 1), 6);
}

Test(protobuf, a_native_histogram_has_zero_bucket_spans_deltas_and_its_classic_buckets)
{
	static const char *const l[] = { "op", "read", NULL };
	const struct pcpu_metric_sample s[] = {
		{ .name = "size_bytes", .help = "Sizes.", .unit = "bytes",
		  .kind = PCPU_METRIC_HISTOGRAM, .labels = l, .nr_bounds = 11, .bounds = nat_bounds,
		  .buckets = nat_buckets, .count = 23, .sum = 1234,
		  .flags = PCPU_METRIC_SAMPLE_F_NATIVE, .schema = 0, .nr_classic = 2,
		  .classic = nat_classic },
	};
	const struct d_metric *m = &families[0].metrics[0];
	static const int64_t deltas[] = { 2, -2, 7, -7, 1, 7 };

	cr_assert_eq(decode(s, 1), 1);
	assert_family(&families[0], "size_bytes", "Sizes.", HISTOGRAM, 1);
	cr_assert(m->has_histogram);
	cr_assert_str_eq(m->labels[0].name, "op");
	cr_assert_eq(m->count, 23);
	cr_assert_eq(m->sum, 1234);
	cr_assert(m->has_schema && m->has_zero_threshold && m->has_zero_count);
	cr_assert_eq(m->schema, 0);
	cr_assert_eq(m->zero_threshold, ldexp(1, -128), "a threshold of 0 is 2^-128");
	cr_assert_eq(m->zero_count, 5);
	/* keys 0: 2, 2: 7, 4: 1, 8: 8; the gaps of one bridged, the gap of 3 not */
	cr_assert_eq(m->nr_spans, 2);
	cr_assert_eq(m->spans[0].offset, 0);
	cr_assert_eq(m->spans[0].length, 5);
	cr_assert_eq(m->spans[1].offset, 3);
	cr_assert_eq(m->spans[1].length, 1);
	cr_assert_eq(m->nr_deltas, 6);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(m->deltas[i], deltas[i], "delta %d: %lld", i, (long long)m->deltas[i]);
	/* classic: <= 3: 5 + 2 + 0 + 3; <= 64: 10 + 4 + 0 + 1 + 0 + 0 */
	cr_assert_eq(m->nr_buckets, 2);
	assert_bucket(m, 0, 10, 3);
	assert_bucket(m, 1, 15, 64);
}

/* Expands spans and deltas into (key, count) and checks them against @want. */
static void assert_native_buckets(const struct d_metric *m, const int32_t *keys,
				  const uint64_t *counts, int n)
{
	int32_t key = 0;
	int64_t count = 0;
	int d = 0, got = 0;

	for (int s = 0; s < m->nr_spans; s++) {
		key += m->spans[s].offset;
		for (uint32_t j = 0; j < m->spans[s].length; j++, key++) {
			cr_assert_lt(d, m->nr_deltas);
			count += m->deltas[d++];
			cr_assert_geq(count, 0);
			if (count == 0)
				continue;
			cr_assert_lt(got, n);
			cr_assert_eq(key, keys[got], "bucket %d: key %d", got, key);
			cr_assert_eq((uint64_t)count, counts[got], "key %d", key);
			got++;
		}
	}
	cr_assert_eq(d, m->nr_deltas, "a delta for each bucket of the spans");
	cr_assert_eq(got, n);
}

Test(protobuf, a_scaled_native_histogram_has_negative_keys_and_bridges_gaps_of_two)
{
	/*
	 * Schema 1 (key k holds (2^((k-1)/2), 2^(k/2)]), scale 1000, zero
	 * threshold 0.5: bounds 0.707 (key -1), 1, 1.414, 2, 2.828 (key 3),
	 * 4, 5.656, 8 (key 6); above 8 counts in key 6 too.
	 */
	static const int64_t bounds[] = { 500, 707, 1000, 1414, 2000, 2828, 4000, 5656, 8000 };
	static const uint64_t buckets[] = { 1, 3, 0, 0, 0, 4, 0, 0, 1, 2 };
	static const int32_t keys[] = { -1, 3, 6 };
	static const uint64_t counts[] = { 3, 4, 3 };
	static const int64_t deltas[] = { 3, 1, -4, 0, 3 };
	const struct pcpu_metric_sample s[] = {
		{ .name = "wait_seconds", .help = "", .unit = "", .kind = PCPU_METRIC_HISTOGRAM,
		  .labels = no_labels, .nr_bounds = 9, .bounds = bounds, .buckets = buckets,
		  .count = 11, .sum = 23456, .scale = 1000, .flags = PCPU_METRIC_SAMPLE_F_NATIVE,
		  .schema = 1 },
		{ .name = "wait_seconds", .help = "", .unit = "", .kind = PCPU_METRIC_HISTOGRAM,
		  .labels = no_labels, .nr_bounds = 9, .bounds = bounds,
		  .buckets = (const uint64_t[10]){ 0 }, .scale = 1000,
		  .flags = PCPU_METRIC_SAMPLE_F_NATIVE, .schema = 1 },
	};
	const struct d_metric *m = &families[0].metrics[0], *empty = &families[0].metrics[1];

	for (int i = 1; i < 9; i++)
		cr_assert_eq(pcpu_metrics_native_key(bounds[i] / 1000.0, 1),
			     i - 2, "bound %d", i);
	cr_assert_eq(decode(s, 2), 1);
	assert_family(&families[0], "wait_seconds", NULL, HISTOGRAM, 2);
	cr_assert_eq(m->count, 11);
	cr_assert_eq(m->sum, (double)23.456);
	cr_assert_eq(m->schema, 1);
	cr_assert_eq(m->zero_threshold, 0.5);
	cr_assert_eq(m->zero_count, 1);
	cr_assert_eq(m->nr_buckets, 0, "no classic bounds: no classic buckets");
	/* key -1, then a gap of 3 (keys 0-2): a new span; then 4, 5 bridged */
	cr_assert_eq(m->nr_spans, 2);
	cr_assert_eq(m->spans[0].offset, -1);
	cr_assert_eq(m->spans[0].length, 1);
	cr_assert_eq(m->spans[1].offset, 3);
	cr_assert_eq(m->spans[1].length, 4);
	cr_assert_eq(m->nr_deltas, 5);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(m->deltas[i], deltas[i], "delta %d: %lld", i, (long long)m->deltas[i]);
	assert_native_buckets(m, keys, counts, 3);

	/* no observation: still native (schema, threshold > 0), no spans */
	cr_assert(empty->has_histogram && empty->has_schema && empty->has_zero_threshold);
	cr_assert_eq(empty->count, 0);
	cr_assert_eq(empty->zero_count, 0);
	cr_assert_eq(empty->zero_threshold, 0.5);
	cr_assert_eq(empty->nr_spans + empty->nr_deltas + empty->nr_buckets, 0);
}

static int stop_at_second(int (*cb)(const struct pcpu_metric_sample *, void *), void *arg,
			  void *ctx)
{
	int err = walk(cb, arg, ctx);

	return err ? err : -ECANCELED;
}

Test(protobuf, a_failed_walk_writes_nothing_and_returns_its_error)
{
	const struct pcpu_metric_sample s[] = {
		{ .name = "x", .help = "", .unit = "", .kind = PCPU_METRIC_GAUGE, .labels = NULL },
	};
	char *body = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&body, &len);

	walk_samples = s;
	walk_nr = 1;
	cr_assert_eq(pcpu_exposition_write(out, PCPU_METRICS_PROTOBUF, stop_at_second, NULL),
		     -ECANCELED);
	fclose(out);
	cr_assert_eq(len, 0);
	free(body);
	cr_assert_eq(pcpu_exposition_write(NULL, PCPU_METRICS_PROTOBUF, walk, NULL), -EINVAL);
}

Test(protobuf, a_family_longer_than_127_bytes_has_a_two_byte_length)
{
	char help[300];
	size_t len;
	char *body;
	struct pcpu_metric_sample s = { .name = "long", .help = help, .unit = "",
					.kind = PCPU_METRIC_GAUGE, .labels = NULL, .value = 1 };

	memset(help, 'h', sizeof(help) - 1);
	help[sizeof(help) - 1] = '\0';
	body = body_of(&s, 1, &len);
	cr_assert_gt(len, 300);
	cr_assert((unsigned char)body[0] & 0x80, "a varint of two bytes");
	cr_assert_eq(decode_body(body, len, families, 8), 1);
	assert_family(&families[0], "long", help, GAUGE, 1);
	assert_value(&families[0].metrics[0], false, 1);
	free(body);
}

static void assert_exemplar(const struct d_exemplar *e, const char *trace, double value,
			    int64_t seconds, int64_t nanos)
{
	cr_assert_eq(e->nr_labels, 1);
	cr_assert_str_eq(e->labels[0].name, "trace_id");
	cr_assert_str_eq(e->labels[0].value, trace);
	cr_assert(e->has_value && e->has_timestamp);
	cr_assert_eq(e->value, value, "%.17g", e->value);
	cr_assert_eq(e->seconds, seconds);
	cr_assert_eq(e->nanos, nanos);
}

Test(protobuf, exemplars_go_on_counters_buckets_and_a_native_list)
{
	static const char *const ta[] = { "trace_id", "a1", NULL };
	static const char *const tb[] = { "trace_id", "b2", NULL };
	static const int64_t bounds[] = { 10, 100 };
	static const uint64_t buckets[] = { 1, 2, 3 };
	/* bucket 1 and +Inf have one; a native histogram's zero bucket and bucket 2 */
	const struct pcpu_exemplar ex[] = { { NULL, 0, 0 },
					    { ta, 0.05, 1796294936.5 },
					    { tb, 0.5, 1796294937.0 } };
	static const int64_t nbounds[] = { 0, 1000, 2000 };
	static const uint64_t nbuckets[] = { 1, 1, 1, 0 };
	const struct pcpu_exemplar nex[] = { { ta, 0, 1796294936.25 },
					     { NULL, 0, 0 },
					     { tb, 0.002, 1796294938.0 },
					     { NULL, 0, 0 } };
	const struct pcpu_metric_sample s[] = {
		{ .name = "requests", .help = "", .unit = "", .kind = PCPU_METRIC_COUNTER,
		  .labels = NULL, .value = 5, .exemplars = &ex[1] },
		{ .name = "depth", .help = "", .unit = "", .kind = PCPU_METRIC_GAUGE,
		  .labels = NULL, .value = 5, .exemplars = &ex[1] }, /* a gauge has none */
		{ .name = "lat", .help = "", .unit = "", .kind = PCPU_METRIC_HISTOGRAM,
		  .labels = NULL, .nr_bounds = 2, .bounds = bounds, .buckets = buckets, .count = 6,
		  .sum = 123, .scale = 1000, .exemplars = ex },
		{ .name = "nat", .help = "", .unit = "", .kind = PCPU_METRIC_HISTOGRAM,
		  .labels = NULL, .nr_bounds = 3, .bounds = nbounds, .buckets = nbuckets,
		  .count = 3, .sum = 1500, .scale = 1000, .flags = PCPU_METRIC_SAMPLE_F_NATIVE,
		  .schema = 0, .exemplars = nex },
	};
	const struct d_metric *m;

	cr_assert_eq(decode(s, 4), 4);
	m = &families[0].metrics[0];
	cr_assert(m->has_exemplar);
	assert_exemplar(&m->exemplar, "a1", 0.05, 1796294936, 500000000);
	cr_assert_not(families[1].metrics[0].has_exemplar, "a gauge's exemplar is dropped");
	m = &families[2].metrics[0];
	cr_assert_eq(m->nr_buckets, 3, "10, 100 and a +Inf written for its exemplar");
	cr_assert_not(m->buckets[0].has_exemplar);
	cr_assert(m->buckets[1].has_exemplar);
	assert_exemplar(&m->buckets[1].exemplar, "a1", 0.05, 1796294936, 500000000);
	cr_assert(m->buckets[2].has_exemplar);
	cr_assert(isinf(m->buckets[2].upper) && m->buckets[2].upper > 0);
	cr_assert_eq(m->buckets[2].cumulative, 6);
	assert_exemplar(&m->buckets[2].exemplar, "b2", 0.5, 1796294937, 0);
	m = &families[3].metrics[0];
	/* no classic bounds: a +Inf bucket carries the latest, as client_golang's */
	cr_assert_eq(m->nr_buckets, 1, "a +Inf written for the latest exemplar");
	cr_assert(isinf(m->buckets[0].upper) && m->buckets[0].upper > 0);
	cr_assert_eq(m->buckets[0].cumulative, 3);
	cr_assert(m->buckets[0].has_exemplar);
	assert_exemplar(&m->buckets[0].exemplar, "b2", 0.002, 1796294938, 0);
	cr_assert_eq(m->nr_exemplars, 2);
	assert_exemplar(&m->exemplars[0], "a1", 0, 1796294936, 250000000);
	assert_exemplar(&m->exemplars[1], "b2", 0.002, 1796294938, 0);
}

/*
 * Prometheus up to 2.4x reads a native histogram's exemplars from its
 * classic buckets only (2.42 stored none from the native list): each
 * classic bucket carries the latest exemplar of the fine buckets it spans,
 * +Inf the latest above the last classic bound, as client_golang's.
 */
Test(protobuf, a_native_histograms_classic_buckets_carry_the_latest_exemplar_they_span)
{
	static const char *const ta[] = { "trace_id", "a1", NULL };
	static const char *const tb[] = { "trace_id", "b2", NULL };
	static const char *const tc[] = { "trace_id", "c3", NULL };
	/* fine bounds 0..256 (nat_bounds), classic 3 and 64 */
	struct pcpu_exemplar ex[12] = { { NULL, 0, 0 } };
	const struct pcpu_metric_sample s[] = {
		{ .name = "size_bytes", .help = "", .unit = "bytes", .kind = PCPU_METRIC_HISTOGRAM,
		  .labels = NULL, .nr_bounds = 11, .bounds = nat_bounds, .buckets = nat_buckets,
		  .count = 23, .sum = 1234, .flags = PCPU_METRIC_SAMPLE_F_NATIVE, .schema = 0,
		  .nr_classic = 2, .classic = nat_classic, .exemplars = ex },
	};
	const struct d_metric *m = &families[0].metrics[0];

	/* (0, 1] and (2, 3]: both in le=3, the later wins; (8, 16]: le=64; above 256: +Inf */
	ex[1] = (struct pcpu_exemplar){ ta, 1, 1796294936.0 };
	ex[3] = (struct pcpu_exemplar){ tb, 3, 1796294937.0 };
	ex[6] = (struct pcpu_exemplar){ tc, 9, 1796294938.0 };
	ex[11] = (struct pcpu_exemplar){ ta, 300, 1796294939.0 };
	cr_assert_eq(decode(s, 1), 1);
	cr_assert_eq(m->nr_buckets, 3, "le=3, le=64 and a +Inf for its exemplar");
	assert_bucket(m, 0, 10, 3);
	assert_exemplar(&m->buckets[0].exemplar, "b2", 3, 1796294937, 0);
	assert_bucket(m, 1, 15, 64);
	assert_exemplar(&m->buckets[1].exemplar, "c3", 9, 1796294938, 0);
	cr_assert(isinf(m->buckets[2].upper));
	cr_assert_eq(m->buckets[2].cumulative, 23);
	assert_exemplar(&m->buckets[2].exemplar, "a1", 300, 1796294939, 0);
	cr_assert_eq(m->nr_exemplars, 4, "the native list keeps every one");
	/* none above the last classic bound: +Inf stays implicit */
	ex[11] = (struct pcpu_exemplar){ NULL, 0, 0 };
	cr_assert_eq(decode(s, 1), 1);
	cr_assert_eq(m->nr_buckets, 2);
	cr_assert(m->buckets[1].has_exemplar);
}

/* A label family's sparse children: each its own buckets, with its labels. */
Test(protobuf, a_sparse_familys_children_are_sparse_histograms_with_their_labels)
{
	static const char *const names[] = { "route", NULL };
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_family *f = pcpu_family_create_sparse(
		&(struct pcpu_family_desc){ .name = "fam_sparse_seconds", .help = "h",
					    .kind = PCPU_METRIC_HISTOGRAM, .label_names = names,
					    .registry = r },
		&(struct pcpu_histogram_sparse){ .schema = 0, .zero_threshold = 0.5 });
	struct pcpu_histogram *a = pcpu_family_get_histogram(f, (const char *const[]){ "a", NULL });
	struct pcpu_histogram *b = pcpu_family_get_histogram(f, (const char *const[]){ "b", NULL });
	/* schema 0: key k holds (2^(k-1), 2^k] */
	static const int32_t akeys[] = { 0, 2 }, bkeys[] = { 7 }, bnkeys[] = { 3 };
	static const uint64_t acounts[] = { 1, 2 }, bcounts[] = { 1 }, bncounts[] = { 1 };
	char *body = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&body, &len);

	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_eq(pcpu_histogram_observe_double(a, 1), 0);
	cr_assert_eq(pcpu_histogram_observe_double(a, 3), 0);
	cr_assert_eq(pcpu_histogram_observe_double(a, 4), 0);
	cr_assert_eq(pcpu_histogram_observe_double(a, 0.25), 0); /* zero bucket */
	cr_assert_eq(pcpu_histogram_observe_double(b, 100), 0);
	cr_assert_eq(pcpu_histogram_observe_double(b, -7), 0);
	cr_assert_eq(pcpu_metrics_registry_write(r, out, PCPU_METRICS_PROTOBUF), 0);
	cr_assert_eq(fclose(out), 0);
	cr_assert_eq(decode_body(body, len, families, 8), 1);
	free(body);
	cr_assert_str_eq(families[0].name, "fam_sparse_seconds");
	cr_assert_eq(families[0].type, 4, "MetricType HISTOGRAM");
	cr_assert_eq(families[0].nr_metrics, 2);
	for (int i = 0; i < 2; i++) {
		const struct d_metric *m = &families[0].metrics[i];
		bool is_a;

		cr_assert_eq(m->nr_labels, 1);
		cr_assert_str_eq(m->labels[0].name, "route");
		is_a = strcmp(m->labels[0].value, "a") == 0;
		cr_assert(is_a || strcmp(m->labels[0].value, "b") == 0, "%s", m->labels[0].value);
		cr_assert(m->has_schema);
		cr_assert_eq(m->schema, 0);
		cr_assert_eq(m->zero_threshold, 0.5);
		cr_assert_eq(m->count, is_a ? 4 : 2);
		cr_assert_eq(m->sum, is_a ? 8.25 : 93.0);
		cr_assert_eq(m->zero_count, is_a ? 1 : 0);
		if (is_a) {
			assert_native_buckets(m, akeys, acounts, 2);
			cr_assert_eq(m->nr_nspans, 0);
		} else {
			struct d_metric neg = *m;

			assert_native_buckets(m, bkeys, bcounts, 1);
			neg.nr_spans = m->nr_nspans;
			memcpy(neg.spans, m->nspans, sizeof(neg.spans));
			neg.nr_deltas = m->nr_ndeltas;
			memcpy(neg.deltas, m->ndeltas, sizeof(neg.deltas));
			assert_native_buckets(&neg, bnkeys, bncounts, 1);
		}
	}
	pcpu_family_destroy(f);
	pcpu_metrics_registry_destroy(r);
}

/* Finds family @name among the @n decoded ones. */
static const struct d_family *family_named(int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(families[i].name, name))
			return &families[i];
	cr_assert_fail("no family %s", name);
	return NULL;
}

/* The adopter's reproduction (issue 33), through the library's own histograms. */
Test(protobuf, a_native_histograms_exemplar_reaches_a_classic_bucket_through_the_library)
{
	static const int64_t b[] = { 1000000 };
	static const struct pcpu_histogram_native native = { .schema = 3 };
	const struct pcpu_histogram_desc d = { .name = "x_seconds", .unit = "seconds",
					       .bounds = b, .nr_bounds = 1, .scale = 1000000000,
					       .native = &native };
	const struct pcpu_histogram_desc only = { .name = "y_seconds", .unit = "seconds",
						  .scale = 1000000000, .native = &native };
	struct pcpu_histogram *h = pcpu_histogram_create(&d), *o = pcpu_histogram_create(&only);
	const struct d_family *f;
	char *body = NULL;
	size_t len;
	FILE *out = open_memstream(&body, &len);
	int n;

	cr_assert(h && o && out);
	cr_assert_eq(pcpu_histogram_observe_exemplar(h, 500000,
						     (const char *const[]){ "trace_id", "1", NULL }),
		     0);
	cr_assert_eq(pcpu_histogram_observe_exemplar(o, 2000000,
						     (const char *const[]){ "trace_id", "2", NULL }),
		     0);
	cr_assert_eq(pcpu_metrics_write(out, PCPU_METRICS_PROTOBUF), 0);
	cr_assert_eq(fclose(out), 0);
	n = decode_body(body, len, families, 8);
	f = family_named(n, "x_seconds");
	cr_assert_eq(f->metrics[0].nr_buckets, 1, "le=0.001 only: its exemplar is in it");
	cr_assert_eq(f->metrics[0].buckets[0].upper, (double)0.001); /* not i386's long double */
	cr_assert(f->metrics[0].has_created, "a registered histogram carries created_timestamp");
	cr_assert(f->metrics[0].buckets[0].has_exemplar, "bucket le=0.001: no exemplar");
	cr_assert_str_eq(f->metrics[0].buckets[0].exemplar.labels[0].value, "1");
	cr_assert_eq(f->metrics[0].buckets[0].exemplar.value, (double)0.0005);
	cr_assert_eq(f->metrics[0].nr_exemplars, 1);
	f = family_named(n, "y_seconds");
	cr_assert_eq(f->metrics[0].nr_buckets, 1, "a +Inf bucket for the exemplar");
	cr_assert(isinf(f->metrics[0].buckets[0].upper));
	cr_assert(f->metrics[0].buckets[0].has_exemplar);
	cr_assert_str_eq(f->metrics[0].buckets[0].exemplar.labels[0].value, "2");
	cr_assert_eq(f->metrics[0].buckets[0].exemplar.value, (double)0.002);
	free(body);
	pcpu_histogram_destroy(h);
	pcpu_histogram_destroy(o);
}

Test(protobuf, a_sparse_histogram_has_negative_spans_zero_bucket_and_a_double_sum)
{
	/* negative keys -3, -2 and 4 (of |v|); positive keys -1, 0, 3 (gap of 2 bridged), 9 */
	static const int32_t keys[] = { -3, -2, 4, -1, 0, 3, 9 };
	static const uint64_t counts[] = { 2, 1, 5, 1, 4, 2, 7 };
	static const int32_t nkeys[] = { -3, -2, 4 }, pkeys[] = { -1, 0, 3, 9 };
	static const uint64_t ncounts[] = { 2, 1, 5 }, pcounts[] = { 1, 4, 2, 7 };
	const struct pcpu_metric_sample s[] = {
		{ .name = "sp_seconds", .help = "", .unit = "", .kind = PCPU_METRIC_HISTOGRAM,
		  .labels = no_labels, .buckets = (const uint64_t[1]){ 25 }, .count = 25,
		  .flags = PCPU_METRIC_SAMPLE_F_SPARSE, .schema = 2, .nr_negative = 3,
		  .nr_keys = 7, .keys = keys, .key_counts = counts, .zero_count = 3,
		  .zero_threshold = 0.001, .dsum = -2.75 },
	};
	const struct d_metric *m = &families[0].metrics[0];

	cr_assert_eq(decode(s, 1), 1);
	assert_family(&families[0], "sp_seconds", NULL, HISTOGRAM, 1);
	cr_assert_eq(m->count, 25);
	cr_assert_eq(m->sum, -2.75);
	cr_assert_eq(m->schema, 2);
	cr_assert_eq(m->zero_threshold, (double)0.001); /* not i386's long double */
	cr_assert_eq(m->zero_count, 3);
	cr_assert_eq(m->nr_buckets, 0, "no classic buckets");
	assert_native_buckets(m, pkeys, pcounts, 4);
	/* the negative side, through the same check on a copy */
	{
		struct d_metric neg = *m;

		neg.nr_spans = m->nr_nspans;
		memcpy(neg.spans, m->nspans, sizeof(neg.spans));
		neg.nr_deltas = m->nr_ndeltas;
		memcpy(neg.deltas, m->ndeltas, sizeof(neg.deltas));
		assert_native_buckets(&neg, nkeys, ncounts, 3);
		cr_assert_eq(m->nr_nspans, 2, "-3, -2 then 4: a gap of 5");
		cr_assert_eq(m->nspans[0].offset, -3);
		cr_assert_eq(m->nspans[1].offset, 5);
	}
}

Test(protobuf, a_sparse_histogram_end_to_end_keys_every_observation)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_histogram *h = pcpu_histogram_create_sparse(
		&(struct pcpu_histogram_desc){ .name = "e2e_seconds", .registry = r },
		&(struct pcpu_histogram_sparse){ .schema = 0, .zero_threshold = 0.5 });
	/* schema 0: key k holds (2^(k-1), 2^k]; 0.25 and -0.5 in the zero bucket */
	static const double v[] = { 1, 3, 4, 100, -3, -0.75, 0.25, -0.5, -7 };
	static const int32_t pkeys[] = { 0, 2, 7 }, nkeys[] = { 0, 2, 3 };
	static const uint64_t pcounts[] = { 1, 2, 1 }, ncounts[] = { 1, 1, 1 };
	const struct d_metric *m = &families[0].metrics[0];
	char *body = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&body, &len);
	double sum = 0;

	cr_assert_not_null(h);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		cr_assert_eq(pcpu_histogram_observe_double(h, v[i]), 0);
		sum += v[i];
	}
	cr_assert_eq(pcpu_metrics_registry_write(r, out, PCPU_METRICS_PROTOBUF), 0);
	cr_assert_eq(fclose(out), 0);
	cr_assert_eq(decode_body(body, len, families, 8), 1);
	free(body);
	cr_assert_eq(m->count, 9);
	cr_assert_eq(m->sum, sum);
	cr_assert_eq(m->schema, 0);
	cr_assert_eq(m->zero_threshold, 0.5);
	cr_assert_eq(m->zero_count, 2);
	assert_native_buckets(m, pkeys, pcounts, 3);
	{
		struct d_metric neg = *m;

		neg.nr_spans = m->nr_nspans;
		memcpy(neg.spans, m->nspans, sizeof(neg.spans));
		neg.nr_deltas = m->nr_ndeltas;
		memcpy(neg.deltas, m->ndeltas, sizeof(neg.deltas));
		assert_native_buckets(&neg, nkeys, ncounts, 3);
	}
	pcpu_histogram_destroy(h);
	pcpu_metrics_registry_destroy(r);
}
