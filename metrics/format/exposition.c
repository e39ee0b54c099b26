/* SPDX-License-Identifier: MIT */
/*
 * The text formats (see <percpu/metrics.h>): Prometheus text 0.0.4 and
 * OpenMetrics 1.0.0, written from pcpu_metrics_foreach() into memory under
 * the metrics lock, then to the caller's stream outside it (a slow reader
 * on the other end of a socket never holds up destroy()).
 *
 * Differences between the two that matter here: in Prometheus text a
 * counter family is named with its "_total" (an info family with its
 * "_info", typed gauge) and HELP escapes only backslash and newline;
 * OpenMetrics names the family without them, types info as info, escapes
 * double quotes in HELP too, has UNIT, forbids _sum (and so _count) on a
 * histogram with negative buckets, has exemplars (on _bucket and _total
 * lines), and ends with "# EOF".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/metrics.h>
#include <percpu/metrics_registry.h>

#include "format/format_internal.h"
#include "kinds/kinds_internal.h"
#include "list/list_internal.h"

struct writer {
	FILE *out;
	bool om;
	char *family; /* the family whose header was written last */
	bool created; /* OpenMetrics with NAME_created (pcpu_metrics_set_openmetrics_created()) */
};

/* @s escaped: runs of plain characters in one write each, not one call a character. */
static void put_escaped(FILE *out, const char *s, bool quotes)
{
	const char *special = quotes ? "\\\n\"" : "\\\n";

	for (;;) {
		size_t plain = strcspn(s, special);

		fwrite(s, 1, plain, out);
		s += plain;
		if (!*s)
			return;
		fputs(*s == '\\' ? "\\\\" : *s == '\n' ? "\\n" : "\\\"", out);
		s++;
	}
}

/* {k="v",...,extra="value"}, or nothing without any label. */
static void put_labels(FILE *out, const char *const *labels, const char *extra_key,
		       const char *extra_value)
{
	bool any = false;

	for (const char *const *l = labels; l && *l; l += 2) {
		fputs(any ? "," : "{", out);
		fputs(l[0], out);
		fputs("=\"", out);
		put_escaped(out, l[1], true);
		fputc('"', out);
		any = true;
	}
	if (extra_key) {
		fputs(any ? "," : "{", out);
		fprintf(out, "%s=\"%s\"", extra_key, extra_value);
		any = true;
	}
	if (any)
		fputc('}', out);
}

/*
 * @v / @scale as text: an integer without a decimal point when it is one,
 * else the shortest decimal that reads back as the same double. The one
 * rule for every scaled figure: histogram bounds and sums, counter and
 * gauge values (1500000000 at scale 1000000000 is "1.5", 3000000000 "3").
 */
/*
 * @v in decimal into @buf (at least 21 bytes): by hand, as most values a
 * scrape writes are integers, where snprintf()'s format parsing cost a
 * 10k-series scrape more than its other formatting (issue 33).
 */
static void format_int(char *buf, int64_t v)
{
	char digits[20];
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	int n = 0;

	do {
		digits[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*buf++ = '-';
	while (n)
		*buf++ = digits[--n];
	*buf = '\0';
}

static void format_scaled(char *buf, size_t size, int64_t v, int64_t scale)
{
	double d;

	if (scale <= 1 || v % scale == 0) {
		format_int(buf, scale > 1 ? v / scale : v);
		return;
	}
	d = (double)v / (double)scale;
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			return;
	}
}

/* A double as both formats read it: NaN, +Inf, -Inf, or the shortest round trip. */
static void format_double(char *buf, size_t size, double d)
{
	if (d != d) {
		snprintf(buf, size, "NaN");
		return;
	}
	if (d > 1.7976931348623157e308 || d < -1.7976931348623157e308) {
		snprintf(buf, size, "%sInf", d > 0 ? "+" : "-");
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			return;
	}
}

/* What a sample of @kind appends to the family's name. */
static const char *sample_suffix(enum pcpu_metric_kind kind)
{
	return kind == PCPU_METRIC_COUNTER ? "_total" : kind == PCPU_METRIC_INFO ? "_info" : "";
}

static void put_header(struct writer *w, const struct pcpu_metric_sample *m)
{
	static const char *const types[] = { [PCPU_METRIC_COUNTER] = "counter",
					     [PCPU_METRIC_GAUGE] = "gauge",
					     [PCPU_METRIC_HISTOGRAM] = "histogram",
					     [PCPU_METRIC_INFO] = "info",
					     [PCPU_METRIC_SUMMARY] = "summary" };
	const char *suffix = w->om ? "" : sample_suffix(m->kind);
	const char *type = !w->om && m->kind == PCPU_METRIC_INFO ? "gauge" : types[m->kind];

	if (m->help[0]) {
		fprintf(w->out, "# HELP %s%s ", m->name, suffix);
		put_escaped(w->out, m->help, w->om);
		fputc('\n', w->out);
	}
	fprintf(w->out, "# TYPE %s%s %s\n", m->name, suffix, type);
	if (w->om && m->unit[0])
		fprintf(w->out, "# UNIT %s %s\n", m->name, m->unit);
}

/*
 * The end of a sample line: "\n", or in OpenMetrics with exemplar @e (NULL
 * or NULL labels: none) " # {labels} value timestamp\n", the timestamp to
 * the millisecond (Prometheus's resolution).
 */
static void put_end(const struct writer *w, const struct pcpu_exemplar *e)
{
	char v[64];

	if (w->om && e && e->labels) {
		format_double(v, sizeof(v), e->value);
		fputs(" # {", w->out);
		for (const char *const *l = e->labels; *l; l += 2) {
			fprintf(w->out, "%s%s=\"", l == e->labels ? "" : ",", l[0]);
			put_escaped(w->out, l[1], true);
			fputc('"', w->out);
		}
		fprintf(w->out, "} %s %.3f", v, e->timestamp);
	}
	fputc('\n', w->out);
}

/*
 * name_bucket{labels,le="@bound / scale"} @cumulative, and exemplar @e; a
 * bound past the last is +Inf.
 */
static void put_bucket(const struct writer *w, const struct pcpu_metric_sample *m,
		       const int64_t *bound, uint64_t cumulative, const struct pcpu_exemplar *e)
{
	char le[64];

	if (bound)
		format_scaled(le, sizeof(le), *bound, m->scale);
	else
		strcpy(le, "+Inf");
	fprintf(w->out, "%s_bucket", m->name);
	put_labels(w->out, m->labels, "le", le);
	fprintf(w->out, " %llu", (unsigned long long)cumulative);
	put_end(w, e);
}

struct classic_bucket {
	const struct writer *w;
	const struct pcpu_metric_sample *m;
	uint32_t next; /* the first fine bucket above the classic bucket before */
};

static void put_classic_bucket(void *arg, int64_t bound, uint64_t cumulative)
{
	struct classic_bucket *b = arg;
	uint32_t to = b->next;

	/* every classic bound is a fine one */
	while (to < b->m->nr_bounds && b->m->bounds[to] < bound)
		to++;
	put_bucket(b->w, b->m, &bound, cumulative, pcpu_latest_exemplar(b->m, b->next, to));
	b->next = to + 1;
}

/*
 * The classic buckets: a native histogram's classic bounds only (the text
 * formats have no native buckets), then +Inf, _sum and _count.
 */
static void put_histogram(struct writer *w, const struct pcpu_metric_sample *m)
{
	char sum[64];
	uint64_t cumulative = 0;
	const struct pcpu_exemplar *inf = m->exemplars ? &m->exemplars[m->nr_bounds] : NULL;

	if (m->flags & PCPU_METRIC_SAMPLE_F_NATIVE) {
		struct classic_bucket b = { .w = w, .m = m };

		pcpu_native_each_classic(m, put_classic_bucket, &b);
		/* +Inf: every fine bucket, the zero bucket and the top's overflow too */
		for (uint32_t i = 0; i <= m->nr_bounds; i++)
			cumulative += m->buckets[i];
		inf = pcpu_latest_exemplar(m, b.next, m->nr_bounds);
	} else {
		for (uint32_t i = 0; i < m->nr_bounds; i++) {
			cumulative += m->buckets[i];
			put_bucket(w, m, &m->bounds[i], cumulative,
				   m->exemplars ? &m->exemplars[i] : NULL);
		}
		cumulative += m->buckets[m->nr_bounds];
	}
	put_bucket(w, m, NULL, cumulative, inf);
	if (w->om && !(m->flags & PCPU_METRIC_SAMPLE_F_NATIVE) && m->nr_bounds && m->bounds[0] < 0)
		return;
	/* a sparse histogram: its +Inf bucket, and _sum (a double) unless negative buckets */
	if (m->flags & PCPU_METRIC_SAMPLE_F_SPARSE) {
		if (w->om && m->nr_negative)
			return;
		format_double(sum, sizeof(sum), m->dsum);
	} else {
		format_scaled(sum, sizeof(sum), m->sum, m->scale);
	}
	fprintf(w->out, "%s_sum", m->name);
	put_labels(w->out, m->labels, NULL, NULL);
	fprintf(w->out, " %s\n%s_count", sum, m->name);
	put_labels(w->out, m->labels, NULL, NULL);
	fprintf(w->out, " %llu\n", (unsigned long long)cumulative);
}

/*
 * OpenMetrics' name_created{labels} line after a series' other samples,
 * where the sample has a created time and the process asked for them
 * (counters, histograms; a summary's writer calls it too).
 */
static void put_created(const struct writer *w, const struct pcpu_metric_sample *m)
{
	char v[64];

	if (!w->created || !(m->flags & PCPU_METRIC_SAMPLE_F_CREATED))
		return;
	format_double(v, sizeof(v), m->created);
	fprintf(w->out, "%s_created", m->name);
	put_labels(w->out, m->labels, NULL, NULL);
	fprintf(w->out, " %s\n", v);
}

/* name{labels,quantile="q"} value for each quantile, then _sum and _count. */
static void put_summary(struct writer *w, const struct pcpu_metric_sample *m)
{
	char q[64], v[64];

	for (uint32_t i = 0; i < m->nr_quantiles; i++) {
		format_double(q, sizeof(q), m->quantiles[i]);
		format_double(v, sizeof(v), m->quantile_values[i]);
		fputs(m->name, w->out);
		put_labels(w->out, m->labels, "quantile", q);
		fprintf(w->out, " %s\n", v);
	}
	format_scaled(v, sizeof(v), m->sum, m->scale);
	fprintf(w->out, "%s_sum", m->name);
	put_labels(w->out, m->labels, NULL, NULL);
	fprintf(w->out, " %s\n%s_count", v, m->name);
	put_labels(w->out, m->labels, NULL, NULL);
	fprintf(w->out, " %llu\n", (unsigned long long)m->count);
	put_created(w, m);
}

static int put_metric(const struct pcpu_metric_sample *m, void *arg)
{
	struct writer *w = arg;
	char v[64];

	if (!w->family || strcmp(w->family, m->name) != 0) {
		free(w->family);
		w->family = strdup(m->name);
		if (!w->family)
			return -ENOMEM;
		put_header(w, m);
	}
	if (m->kind == PCPU_METRIC_HISTOGRAM) {
		put_histogram(w, m);
		put_created(w, m);
		return 0;
	}
	if (m->kind == PCPU_METRIC_SUMMARY) {
		put_summary(w, m);
		return 0;
	}
	fputs(m->name, w->out);
	fputs(sample_suffix(m->kind), w->out);
	put_labels(w->out, m->labels, NULL, NULL);
	if (m->kind == PCPU_METRIC_INFO) {
		fputs(" 1\n", w->out); /* an info sample is 1, whatever its source holds */
		return 0;
	}
	if (m->flags & PCPU_METRIC_SAMPLE_F_DOUBLE)
		format_double(v, sizeof(v), m->dvalue);
	else
		format_scaled(v, sizeof(v), m->value, m->scale);
	fputc(' ', w->out);
	fputs(v, w->out);
	/* exemplars are a counter's only (OpenMetrics) */
	put_end(w, m->kind == PCPU_METRIC_COUNTER ? m->exemplars : NULL);
	if (m->kind == PCPU_METRIC_COUNTER)
		put_created(w, m);
	return 0;
}

static int walk_registry(int (*cb)(const struct pcpu_metric_sample *, void *), void *arg,
			 void *registry)
{
	return pcpu_metrics_registry_foreach(registry, cb, arg);
}

PCPU_EXPORT int pcpu_metrics_write(FILE *out, enum pcpu_metrics_format f)
{
	return pcpu_exposition_write(out, f, walk_registry, NULL);
}

PCPU_EXPORT int pcpu_metrics_registry_write(struct pcpu_metrics_registry *r, FILE *out,
					    enum pcpu_metrics_format f)
{
	return pcpu_exposition_write(out, f, walk_registry, r);
}

int pcpu_exposition_write(FILE *out, enum pcpu_metrics_format f, pcpu_sample_walk walk,
			  void *ctx)
{
	struct writer w = { .om = f == PCPU_METRICS_OPENMETRICS ||
				  f == PCPU_METRICS_OPENMETRICS_0_0_1 };
	char *text = NULL;
	size_t len = 0;
	int err;

	if (!out || (f != PCPU_METRICS_PROMETHEUS && f != PCPU_METRICS_OPENMETRICS &&
		     f != PCPU_METRICS_PROTOBUF && f != PCPU_METRICS_OPENMETRICS_0_0_1))
		return -EINVAL;
	w.created = w.om && pcpu_metrics_openmetrics_created();
	w.out = open_memstream(&text, &len);
	if (!w.out)
		return -ENOMEM;
	/* the stream is this call's alone: no lock around each of its many writes */
	__fsetlocking(w.out, FSETLOCKING_BYCALLER);
	if (f == PCPU_METRICS_PROTOBUF)
		err = pcpu_exposition_write_proto(w.out, walk, ctx);
	else
		err = walk(put_metric, &w, ctx);
	if (w.om)
		fputs("# EOF\n", w.out);
	free(w.family);
	/* a memory stream fails only for want of memory */
	if (ferror(w.out) | fclose(w.out))
		err = err ? err : -ENOMEM;
	if (!err) {
		errno = 0;
		if (fwrite(text, 1, len, out) != len || fflush(out) != 0)
			err = errno ? -errno : -EIO;
	}
	free(text);
	return err;
}

PCPU_EXPORT const char *pcpu_metrics_content_type(enum pcpu_metrics_format f)
{
	switch (f) {
	case PCPU_METRICS_PROMETHEUS:
		return "text/plain; version=0.0.4; charset=utf-8";
	case PCPU_METRICS_OPENMETRICS:
		return "application/openmetrics-text; version=1.0.0; charset=utf-8";
	case PCPU_METRICS_OPENMETRICS_0_0_1:
		return "application/openmetrics-text; version=0.0.1; charset=utf-8";
	case PCPU_METRICS_PROTOBUF:
		return "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
		       "encoding=delimited";
	}
	return NULL;
}
