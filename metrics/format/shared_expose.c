/* SPDX-License-Identifier: MIT */
/*
 * A shared segment as exposition text (see <percpu/shared.h>): one
 * snapshot, then each item as a sample for the writer that
 * pcpu_metrics_write() uses (metrics/format/exposition.c), so the two formats, their
 * escaping and histograms' cumulative buckets live in one place (a
 * histogram's buckets are read after the snapshot, each exact as sum()
 * is: public calls only, as a client of the unit). Items are
 * sorted by name, then labels, so that the items of one name make one
 * family (the writer starts a family where the name changes). Names and
 * labels were checked at open, so a segment cannot inject lines.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/shared.h>

#include "format/format_internal.h"

struct walk_ctx {
	const struct pcpu_shared *s;
	const int64_t *values;
};

/* Label pairs in order: by each name, then value. */
static int labels_cmp(const char *const *a, const char *const *b)
{
	for (; *a && *b; a++, b++) {
		int c = strcmp(*a, *b);

		if (c)
			return c;
	}
	return *a ? 1 : *b ? -1 : 0;
}

/* Families must come sorted by name, as the registry gives them; then labels. */
static int by_name(const void *a, const void *b, void *arg)
{
	const struct pcpu_shared *s = arg;
	unsigned int i = *(const unsigned int *)a, j = *(const unsigned int *)b;
	int c = strcmp(pcpu_shared_name(s, i), pcpu_shared_name(s, j));

	return c ? c : labels_cmp(pcpu_shared_labels(s, i), pcpu_shared_labels(s, j));
}

static int walk_items(int (*cb)(const struct pcpu_metric_sample *, void *), void *arg,
		      void *ctx)
{
	const struct walk_ctx *w = ctx;
	unsigned int n = pcpu_shared_count(w->s), order[PCPU_SHARED_MAX_ITEMS];
	int err = 0;

	for (unsigned int i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(order[0]), by_name, (void *)w->s);
	for (unsigned int k = 0; k < n && !err; k++) {
		unsigned int i = order[k];
		uint64_t buckets[PCPU_SHARED_MAX_ITEMS];
		struct pcpu_metric_sample m = {
			.name = pcpu_shared_name(w->s, i),
			.help = pcpu_shared_help(w->s, i),
			.unit = "",
			.kind = pcpu_shared_kind(w->s, i),
			.labels = pcpu_shared_labels(w->s, i),
			.value = w->values[i],
			.scale = 1,
		};

		if (m.kind == PCPU_METRIC_HISTOGRAM) {
			m.bounds = pcpu_shared_bounds(w->s, i, &m.nr_bounds, &m.scale);
			m.buckets = buckets;
			err = pcpu_shared_histogram(w->s, i, buckets, &m.sum);
			for (uint32_t b = 0; b <= m.nr_bounds; b++)
				m.count += buckets[b];
		}
		if (!err)
			err = cb(&m, arg);
	}
	return err;
}

PCPU_EXPORT int pcpu_shared_collector(int (*emit)(const struct pcpu_metric_sample *s, void *ctx),
				      void *ctx, void *segment)
{
	struct walk_ctx w = { .s = segment };
	int64_t *values;
	int err;

	if (!w.s || !emit)
		return -EINVAL;
	values = calloc(pcpu_shared_count(w.s), sizeof(*values));
	if (!values)
		return -ENOMEM;
	err = pcpu_shared_snapshot(w.s, values, NULL);
	w.values = values;
	if (!err)
		err = walk_items(emit, ctx, &w);
	free(values);
	return err;
}

PCPU_EXPORT int pcpu_shared_write(const struct pcpu_shared *s, FILE *out,
				  enum pcpu_metrics_format f)
{
	struct walk_ctx w = { .s = s };
	int64_t *values;
	int err;

	if (!s || !out)
		return -EINVAL;
	values = calloc(pcpu_shared_count(s), sizeof(*values));
	if (!values)
		return -ENOMEM;
	err = pcpu_shared_snapshot(s, values, NULL);
	w.values = values;
	if (!err)
		err = pcpu_exposition_write(out, f, walk_items, &w);
	free(values);
	return err;
}
