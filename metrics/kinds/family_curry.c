/* SPDX-License-Identifier: MIT */
/*
 * Curried views of label families and removal by a partial tuple (see
 * <percpu/family.h>, "Currying and partial removal"): the public side,
 * which turns {"name", "value", ...} lists into tuples by position. The
 * table's side, the removal itself, is family.c's
 * (pcpu_family_remove_where()).
 */
#define _GNU_SOURCE /* strdup */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/family.h>

#include "base/names.h"
#include "kinds/kinds_internal.h"

struct pcpu_family_curried {
	struct pcpu_family *f;
	unsigned int nr_labels;
	unsigned int nr_free;
	/* the positions the caller's values go to, ascending */
	unsigned int free_at[PCPU_FAMILY_MAX_LABELS];
	/*
	 * The tuple with the fixed values (copies) in place, NULL where a
	 * value is free, NULL terminated: a get copies it and fills the gaps.
	 */
	char *fixed[PCPU_FAMILY_MAX_LABELS + 1];
};

/*
 * Fills @by_pos (nr_labels entries, NULL first) from @labels, a {"name",
 * "value", ..., NULL} list naming each label at most once; 0 or -EINVAL.
 * The values are @labels' own.
 */
static int by_position(const struct pcpu_family *f, const char *const *labels,
		       const char **by_pos)
{
	unsigned int n = pcpu_family_nr_labels(f);

	memset(by_pos, 0, n * sizeof(*by_pos));
	for (unsigned int i = 0; labels[2 * i]; i++) {
		const char *value = labels[2 * i + 1];
		int at = pcpu_family_label_index(f, labels[2 * i]);

		if (at < 0 || !value || by_pos[at] ||
		    pcpu_metrics_check_label_value(value, PCPU_FAMILY_MAX_VALUE_LEN) != 0)
			return -EINVAL;
		by_pos[at] = value;
	}
	return 0;
}

PCPU_EXPORT struct pcpu_family_curried *pcpu_family_curry(struct pcpu_family *f,
							  const char *const *labels)
{
	const char *by_pos[PCPU_FAMILY_MAX_LABELS];
	struct pcpu_family_curried *cf;

	if (!f || !labels || by_position(f, labels, by_pos) != 0) {
		errno = EINVAL;
		return NULL;
	}
	cf = calloc(1, sizeof(*cf));
	if (!cf) {
		errno = ENOMEM;
		return NULL;
	}
	cf->f = f;
	cf->nr_labels = pcpu_family_nr_labels(f);
	for (unsigned int i = 0; i < cf->nr_labels; i++) {
		if (!by_pos[i]) {
			cf->free_at[cf->nr_free++] = i;
			continue;
		}
		cf->fixed[i] = strdup(by_pos[i]);
		if (!cf->fixed[i]) {
			pcpu_family_curried_free(cf);
			errno = ENOMEM;
			return NULL;
		}
	}
	return cf;
}

PCPU_EXPORT void pcpu_family_curried_free(struct pcpu_family_curried *cf)
{
	if (!cf)
		return;
	for (unsigned int i = 0; i < cf->nr_labels; i++)
		free(cf->fixed[i]);
	free(cf);
}

/*
 * The whole tuple into @tuple (room for nr_labels + 2): the view's values
 * and @values in the free places. A short @values leaves a NULL inside the
 * tuple and a long one a value after its end, so that the family's get
 * refuses it as it refuses a wrong tuple (counted, the overflow child).
 */
static void whole_tuple(const struct pcpu_family_curried *cf, const char *const *values,
			const char **tuple)
{
	unsigned int j;

	memcpy(tuple, cf->fixed, (cf->nr_labels + 1) * sizeof(*tuple));
	for (j = 0; j < cf->nr_free; j++) {
		tuple[cf->free_at[j]] = values[j];
		if (!values[j])
			return;
	}
	tuple[cf->nr_labels] = values[j];
	tuple[cf->nr_labels + 1] = NULL;
}

PCPU_EXPORT struct pcpu_counter *pcpu_family_curried_get(struct pcpu_family_curried *cf,
							 const char *const *values)
{
	const char *tuple[PCPU_FAMILY_MAX_LABELS + 2];

	if (!cf || !values) {
		errno = EINVAL;
		return cf ? pcpu_family_get(cf->f, NULL) : NULL;
	}
	whole_tuple(cf, values, tuple);
	return pcpu_family_get(cf->f, tuple);
}

PCPU_EXPORT struct pcpu_histogram *
pcpu_family_curried_get_histogram(struct pcpu_family_curried *cf, const char *const *values)
{
	const char *tuple[PCPU_FAMILY_MAX_LABELS + 2];

	if (!cf || !values) {
		errno = EINVAL;
		return cf ? pcpu_family_get_histogram(cf->f, NULL) : NULL;
	}
	whole_tuple(cf, values, tuple);
	return pcpu_family_get_histogram(cf->f, tuple);
}

PCPU_EXPORT struct pcpu_gauge *pcpu_family_curried_get_gauge(struct pcpu_family_curried *cf,
							     const char *const *values)
{
	const char *tuple[PCPU_FAMILY_MAX_LABELS + 2];

	if (!cf || !values) {
		errno = EINVAL;
		return cf ? pcpu_family_get_gauge(cf->f, NULL) : NULL;
	}
	whole_tuple(cf, values, tuple);
	return pcpu_family_get_gauge(cf->f, tuple);
}

PCPU_EXPORT struct pcpu_summary *
pcpu_family_curried_get_summary(struct pcpu_family_curried *cf, const char *const *values)
{
	const char *tuple[PCPU_FAMILY_MAX_LABELS + 2];

	if (!cf || !values) {
		errno = EINVAL;
		return cf ? pcpu_family_get_summary(cf->f, NULL) : NULL;
	}
	whole_tuple(cf, values, tuple);
	return pcpu_family_get_summary(cf->f, tuple);
}

PCPU_EXPORT int pcpu_family_remove_matching(struct pcpu_family *f, const char *const *labels)
{
	const char *by_pos[PCPU_FAMILY_MAX_LABELS];

	if (!f || !labels || by_position(f, labels, by_pos) != 0)
		return -EINVAL;
	return pcpu_family_remove_where(f, by_pos);
}
