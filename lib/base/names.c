/* SPDX-License-Identifier: MIT */
/*
 * Metric names and their rules (see <percpu/metrics.h>): the grammar of
 * metric and label names, units, reserved suffixes, and which names would
 * write the same sample (a gauge "x_total" beside a counter "x").
 */
#define _GNU_SOURCE /* stpcpy */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/stat.h>

#include "names.h"

/* The label that a sample of @kind adds itself: "le", "quantile", or none. */
static bool reserved_label(const char *name, enum pcpu_metric_kind kind)
{
	return (kind == PCPU_METRIC_HISTOGRAM && strcmp(name, "le") == 0) ||
	       (kind == PCPU_METRIC_SUMMARY && strcmp(name, "quantile") == 0);
}

/* Constant label pairs of one metric, at most. */
#define MAX_LABELS 64

static bool is_alpha_(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* Samples a family of @kind writes, as suffixes of its name ("" first). */
static const char *const *suffixes_of(enum pcpu_metric_kind kind)
{
	static const char *const counter[] = { "", "_total", "_created", NULL };
	static const char *const gauge[] = { "", NULL };
	static const char *const histogram[] = { "", "_bucket", "_sum", "_count", "_created",
						 NULL };
	static const char *const info[] = { "_info", NULL };
	static const char *const summary[] = { "", "_sum", "_count", "_created", NULL };

	return kind == PCPU_METRIC_COUNTER ? counter :
	       kind == PCPU_METRIC_HISTOGRAM ? histogram :
	       kind == PCPU_METRIC_SUMMARY ? summary :
	       kind == PCPU_METRIC_INFO ? info : gauge;
}

int pcpu_metrics_check_name(const char *prefix, const char *name, const char *unit,
			    enum pcpu_metric_kind kind)
{
	static const char *const reserved[] = { "_total", "_created", "_count", "_sum",
						"_bucket", "_info", NULL };
	size_t plen = prefix ? strlen(prefix) : 0, len;
	char first;

	if (!name)
		return -EINVAL;
	if (kind != PCPU_METRIC_COUNTER && kind != PCPU_METRIC_GAUGE &&
	    kind != PCPU_METRIC_HISTOGRAM && kind != PCPU_METRIC_INFO &&
	    kind != PCPU_METRIC_SUMMARY)
		return -EINVAL;
	if (kind == PCPU_METRIC_INFO && unit && *unit)
		return -EINVAL;
	len = strlen(name);
	first = plen ? prefix[0] : name[0];
	if (plen + len == 0 || !(is_alpha_(first) || first == ':'))
		return -EINVAL;
	for (const char *p = prefix; p && *p; p++)
		if (!is_alpha_(*p) && !is_digit(*p) && *p != ':')
			return -EINVAL;
	for (const char *p = name; *p; p++)
		if (!is_alpha_(*p) && !is_digit(*p) && *p != ':')
			return -EINVAL;
	if (plen && len == 0)
		return -EINVAL;
	if (kind != PCPU_METRIC_GAUGE)
		for (unsigned int i = 0; reserved[i]; i++)
			if (ends_with(name, len, reserved[i]) ||
			    (len == 0 && ends_with(prefix, plen, reserved[i])))
				return -EINVAL;
	if (unit && *unit) {
		size_t ulen = strlen(unit);

		for (const char *p = unit; *p; p++)
			if (!is_alpha_(*p) && !is_digit(*p) && *p != ':')
				return -EINVAL;
		/* "_unit" at the end of the (prefixed) name; the unit is not the whole name */
		if (len < ulen + 1 || !ends_with(name, len, unit) || name[len - ulen - 1] != '_')
			return -EINVAL;
		if (plen == 0 && len == ulen + 1)
			return -EINVAL;
	}
	return 0;
}

static int check_label_name(const char *k)
{
	if (!k || !is_alpha_(k[0]) || (k[0] == '_' && k[1] == '_'))
		return -EINVAL;
	for (const char *p = k; *p; p++)
		if (!is_alpha_(*p) && !is_digit(*p))
			return -EINVAL;
	return 0;
}

int pcpu_metrics_check_labels(const char *const *labels, enum pcpu_metric_kind kind)
{
	int n = 0;

	if (!labels)
		return 0;
	for (; labels[2 * n]; n++) {
		if (n >= MAX_LABELS || !labels[2 * n + 1])
			return -EINVAL;
		if (check_label_name(labels[2 * n]) != 0)
			return -EINVAL;
		if (reserved_label(labels[2 * n], kind))
			return -EINVAL;
		for (int j = 0; j < n; j++)
			if (strcmp(labels[2 * j], labels[2 * n]) == 0)
				return -EINVAL;
	}
	return n;
}

/* Is @n1 followed by @s1 the same string as @n2 followed by @s2? */
static bool joined_equal(const char *n1, const char *s1, const char *n2, const char *s2)
{
	const char *p = n1, *q = n2;
	bool in_s1 = false, in_s2 = false;

	for (;;) {
		if (!*p && !in_s1) {
			p = s1;
			in_s1 = true;
			continue;
		}
		if (!*q && !in_s2) {
			q = s2;
			in_s2 = true;
			continue;
		}
		if (*p != *q)
			return false;
		if (!*p)
			return true;
		p++;
		q++;
	}
}

int pcpu_metrics_rivals(const char *name, enum pcpu_metric_kind kind,
			int (*visit)(const char *family, void *arg), void *arg)
{
	/* every suffix any kind's samples have */
	static const char *const any[] = { "", "_total", "_created", "_bucket", "_sum", "_count",
					   "_info", NULL };
	size_t len = strlen(name);
	char *sample = malloc(len + 16), *family = malloc(len + 16);
	int ret = sample && family ? 0 : -ENOMEM;

	for (const char *const *sa = suffixes_of(kind); !ret && *sa; sa++) {
		size_t slen;

		strcpy(stpcpy(sample, name), *sa);
		slen = strlen(sample);
		for (const char *const *sb = any; !ret && *sb; sb++) {
			size_t blen = strlen(*sb);

			if (blen >= slen || !ends_with(sample, slen, *sb))
				continue;
			memcpy(family, sample, slen - blen);
			family[slen - blen] = '\0';
			if (strcmp(family, name) != 0)
				ret = visit(family, arg);
		}
	}
	free(sample);
	free(family);
	return ret;
}

bool pcpu_metrics_names_meet(const char *a, enum pcpu_metric_kind kind_a, const char *b,
			     enum pcpu_metric_kind kind_b)
{
	for (const char *const *sa = suffixes_of(kind_a); *sa; sa++)
		for (const char *const *sb = suffixes_of(kind_b); *sb; sb++)
			if (joined_equal(a, *sa, b, *sb))
				return true;
	return false;
}

int pcpu_metrics_check_label_names(const char *const *names, unsigned int max,
				   enum pcpu_metric_kind kind)
{
	unsigned int n;

	if (!names || !names[0])
		return -EINVAL;
	for (n = 0; names[n]; n++) {
		if (n >= max || check_label_name(names[n]) != 0)
			return -EINVAL;
		if (reserved_label(names[n], kind))
			return -EINVAL;
		for (unsigned int j = 0; j < n; j++)
			if (strcmp(names[j], names[n]) == 0)
				return -EINVAL;
	}
	return 0;
}

/*
 * UTF-8 as RFC 3629 defines it: the shortest form only, no surrogate
 * (U+D800..U+DFFF), nothing above U+10FFFF. Both text formats require it,
 * and a parser that meets anything else rejects the whole exposition.
 */
int pcpu_metrics_check_label_value(const char *v, size_t max)
{
	const unsigned char *p = (const unsigned char *)v;
	size_t len = 0;

	if (!v)
		return -EINVAL;
	while (p[len]) {
		unsigned char c = p[len];
		unsigned int n, cp;
		uint32_t min;

		if (c < 0x80) {
			len++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f, min = 0x80;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f, min = 0x800;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07, min = 0x10000;
		else
			return -EINVAL;
		for (unsigned int i = 1; i <= n; i++) {
			if ((p[len + i] & 0xc0) != 0x80)
				return -EINVAL; /* also stops at the terminating NUL */
			cp = (cp << 6) | (p[len + i] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return -EINVAL;
		len += n + 1;
		if (len > max)
			return -EINVAL;
	}
	return len > max ? -EINVAL : 0;
}

int pcpu_stat_item_check(const struct pcpu_stat_item *it, int64_t max_floor)
{
	size_t len;

	if (!it->name)
		return -EINVAL;
	len = strnlen(it->name, PCPU_STAT_MAX_NAME + 1);
	if (len == 0 || len > PCPU_STAT_MAX_NAME)
		return -EINVAL;
	if (it->kind != 0 && it->kind != PCPU_METRIC_COUNTER && it->kind != PCPU_METRIC_GAUGE)
		return -EINVAL;
	if (it->accuracy < 0 || it->accuracy > PCPU_STAT_MAX_ACCURACY)
		return -EINVAL;
	if (it->floor < 0 || it->floor > max_floor || it->scale < 0)
		return -EINVAL;
	return 0;
}
