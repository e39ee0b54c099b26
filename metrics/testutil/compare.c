/* SPDX-License-Identifier: MIT */
/*
 * pcpu_metrics_compare() and pcpu_metrics_value() (<percpu/metrics_testutil.h>):
 * the exposition's series against a test's. Both sides are sorted by key
 * (name and sorted labels) and merged, so the differences come out in
 * order whatever the order of either text.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/metrics_testutil.h>

#include "testutil/testutil_internal.h"

static int compare_keys(const void *a, const void *b)
{
	const struct tu_series *x = *(const struct tu_series *const *)a;
	const struct tu_series *y = *(const struct tu_series *const *)b;

	return strcmp(x->key, y->key);
}

/* The series of @e that @names selects (all with NULL), sorted; NULL with -ENOMEM. */
static const struct tu_series **sorted(const struct tu_exposition *e, const char *const *names,
				       size_t *nr)
{
	const struct tu_series **out = malloc((e->nr_series + 1) * sizeof(*out));

	*nr = 0;
	if (!out)
		return NULL;
	for (size_t i = 0; i < e->nr_series; i++)
		if (tu_selected(e, &e->series[i], names))
			out[(*nr)++] = &e->series[i];
	qsort(out, *nr, sizeof(*out), compare_keys);
	return out;
}

static bool same_value(double a, double b)
{
	return a == b || (isnan(a) && isnan(b));
}

/* "# TYPE" lines of @want that disagree with @got's: one difference each. */
static int compare_types(const struct tu_exposition *want, const struct tu_exposition *got,
			 FILE *diff)
{
	int n = 0;

	for (size_t i = 0; i < want->nr_families; i++) {
		const struct tu_family *w = &want->families[i];

		if (!w->type)
			continue;
		for (size_t j = 0; j < got->nr_families; j++) {
			const struct tu_family *g = &got->families[j];

			if (strcmp(w->name, g->name) != 0 || !g->type || strcmp(w->type, g->type) == 0)
				continue;
			n++;
			if (diff)
				fprintf(diff, "type: %s: expected %s, got %s\n", w->name, w->type,
					g->type);
		}
	}
	return n;
}

static int merge(const struct tu_series **want, size_t nr_want, const struct tu_series **got,
		 size_t nr_got, FILE *diff)
{
	size_t i = 0, j = 0;
	int n = 0;

	while (i < nr_want || j < nr_got) {
		int order = i == nr_want ? 1 : j == nr_got ? -1 : strcmp(want[i]->key, got[j]->key);

		if (order < 0) {
			if (diff)
				fprintf(diff, "missing: %s %.17g\n", want[i]->key, want[i]->value);
			i++;
			n++;
		} else if (order > 0) {
			if (diff)
				fprintf(diff, "unexpected: %s %.17g\n", got[j]->key, got[j]->value);
			j++;
			n++;
		} else {
			if (!same_value(want[i]->value, got[j]->value)) {
				if (diff)
					fprintf(diff, "different: %s: expected %.17g, got %.17g\n",
						want[i]->key, want[i]->value, got[j]->value);
				n++;
			}
			i++;
			j++;
		}
	}
	return n;
}

PCPU_EXPORT int pcpu_metrics_compare(struct pcpu_metrics_registry *r, const char *const *names,
				     const char *expected, FILE *diff)
{
	struct tu_exposition want, got = { 0 };
	const struct tu_series **w = NULL, **g = NULL;
	size_t nr_w, nr_g;
	unsigned int bad = 0;
	int err;

	if (!expected)
		return -EINVAL;
	err = tu_parse(expected, &want, &bad);
	if (err == -EINVAL && diff)
		fprintf(diff, "expected:%u: cannot parse\n", bad);
	if (!err)
		err = tu_capture(r, &got);
	if (!err) {
		w = sorted(&want, NULL, &nr_w);
		g = sorted(&got, names, &nr_g);
		err = w && g ? 0 : -ENOMEM;
	}
	if (!err)
		err = compare_types(&want, &got, diff) + merge(w, nr_w, g, nr_g, diff);
	if (diff)
		fflush(diff);
	free(w);
	free(g);
	tu_free(&want);
	tu_free(&got);
	return err;
}

/* Does @s hold every pair of @labels (NULL: none)? */
static bool has_labels(const struct tu_series *s, const char *const *labels)
{
	for (unsigned int i = 0; labels && labels[2 * i]; i++) {
		unsigned int j = 0;

		while (j < s->nr_labels && (strcmp(s->labels[2 * j], labels[2 * i]) != 0 ||
					    strcmp(s->labels[2 * j + 1], labels[2 * i + 1]) != 0))
			j++;
		if (j == s->nr_labels)
			return false;
	}
	return true;
}

PCPU_EXPORT int pcpu_metrics_value(struct pcpu_metrics_registry *r, const char *name,
				   const char *const *labels, double *value)
{
	struct tu_exposition e;
	const struct tu_series *found = NULL;
	int err;

	if (!name || !value)
		return -EINVAL;
	for (unsigned int i = 0; labels && labels[2 * i]; i++)
		if (!labels[2 * i + 1])
			return -EINVAL;
	err = tu_capture(r, &e);
	for (size_t i = 0; !err && i < e.nr_series; i++) {
		const struct tu_series *s = &e.series[i];

		if (strcmp(s->name, name) != 0 || !has_labels(s, labels))
			continue;
		if (found)
			err = -EEXIST;
		found = s;
	}
	if (!err && !found)
		err = -ENOENT;
	if (!err)
		*value = found->value;
	tu_free(&e);
	return err;
}
