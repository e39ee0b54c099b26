/* SPDX-License-Identifier: MIT */
/*
 * The text format 0.0.4 read back (testutil_internal.h): enough of it for
 * the testing helpers to compare and lint what the library writes and what
 * a test expects. Comments other than HELP and TYPE ("# UNIT", "# EOF" of
 * OpenMetrics) are skipped, and so are a timestamp and an OpenMetrics
 * exemplar after a value.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/metrics_registry.h>

#include "testutil/testutil_internal.h"

static bool is_name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool is_name_char(char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* A name at @p (metric names take ':', label names do not); its end, or NULL. */
static const char *name_end(const char *p, const char *end, bool colon)
{
	if (p >= end || !is_name_start(*p) || (!colon && *p == ':'))
		return NULL;
	while (p < end && is_name_char(*p) && (colon || *p != ':'))
		p++;
	return p;
}

static void *grow(void *array, size_t nr, size_t size)
{
	/* doubling: room for nr + 1 when nr is 0 or a power of two */
	if (nr & (nr - 1))
		return array;
	return realloc(array, (nr ? 2 * nr : 1) * size);
}

static int family_index(const struct tu_exposition *e, const char *name, size_t len)
{
	for (size_t i = e->nr_families; i-- > 0;)
		if (strlen(e->families[i].name) == len && memcmp(e->families[i].name, name, len) == 0)
			return (int)i;
	return -1;
}

/* "# HELP NAME text" and "# TYPE NAME type"; other comments: nothing. */
static int parse_comment(struct tu_exposition *e, const char *p, const char *end)
{
	bool help, type;
	const char *name, *ne;
	int at;

	p = skip_blanks(p + 1, end);
	help = end - p > 5 && memcmp(p, "HELP ", 5) == 0;
	type = end - p > 5 && memcmp(p, "TYPE ", 5) == 0;
	if (!help && !type)
		return 0;
	name = skip_blanks(p + 5, end);
	ne = name_end(name, end, true);
	if (!ne || (ne < end && *ne != ' ' && *ne != '\t'))
		return -EINVAL;
	p = skip_blanks(ne, end);
	at = family_index(e, name, (size_t)(ne - name));
	if (at < 0) {
		struct tu_family *fam = grow(e->families, e->nr_families, sizeof(*fam));

		if (!fam)
			return -ENOMEM;
		e->families = fam;
		fam += e->nr_families;
		*fam = (struct tu_family){ .name = strndup(name, (size_t)(ne - name)) };
		if (!fam->name)
			return -ENOMEM;
		at = (int)e->nr_families++;
	}
	if (help) {
		e->families[at].has_help = p < end;
		return 0;
	}
	if (p == end || e->families[at].type)
		return -EINVAL;
	e->families[at].type = strndup(p, (size_t)(end - p));
	return e->families[at].type ? 0 : -ENOMEM;
}

/* A label value at @p (after its opening quote), decoded into @out; its end. */
static const char *parse_value(const char *p, const char *end, char **out)
{
	char *v = malloc((size_t)(end - p) + 1), *o = v;

	if (!v)
		return NULL;
	for (; p < end && *p != '"'; p++) {
		if (*p != '\\') {
			*o++ = *p;
			continue;
		}
		if (++p == end)
			break;
		*o++ = *p == 'n' ? '\n' : *p;
	}
	*o = 0;
	if (p == end) {
		free(v);
		return NULL;
	}
	*out = v;
	return p + 1;
}

static int compare_labels(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The series' key: name{a="x",...}, labels sorted and escaped as written. */
static int make_key(struct tu_series *s)
{
	char *key = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&key, &len);

	if (!out)
		return -ENOMEM;
	fputs(s->name, out);
	if (s->nr_labels)
		fputc('{', out);
	for (unsigned int i = 0; i < s->nr_labels; i++) {
		fprintf(out, "%s%s=\"", i ? "," : "", s->labels[2 * i]);
		for (const char *v = s->labels[2 * i + 1]; *v; v++) {
			if (*v == '\\' || *v == '"')
				fputc('\\', out);
			if (*v == '\n')
				fputs("\\n", out);
			else
				fputc(*v, out);
		}
		fputc('"', out);
	}
	if (s->nr_labels)
		fputc('}', out);
	if (fclose(out) != 0) {
		free(key);
		return -ENOMEM;
	}
	s->key = key;
	return 0;
}

/*
 * The labels of @s from *@pp, just past its '{', to just past the '}' (*@pp
 * moved there), sorted by name (records of two pointers); a name twice is an
 * error. 0, -EINVAL or -ENOMEM.
 */
static int parse_labels(struct tu_series *s, const char **pp, const char *end)
{
	const char *p = skip_blanks(*pp, end);
	size_t room = 0;

	while (p < end && *p != '}') {
		const char *ke = name_end(p, end, false);

		if (!ke)
			return -EINVAL;
		if (2 * s->nr_labels + 2 >= room) {
			char **l = realloc(s->labels, (room = 2 * room + 4) * sizeof(*l));

			if (!l)
				return -ENOMEM;
			s->labels = l;
		}
		s->labels[2 * s->nr_labels] = strndup(p, (size_t)(ke - p));
		s->labels[2 * s->nr_labels + 1] = NULL;
		if (!s->labels[2 * s->nr_labels])
			return -ENOMEM;
		s->nr_labels++;
		p = skip_blanks(ke, end);
		if (p == end || *p != '=')
			return -EINVAL;
		p = skip_blanks(p + 1, end);
		if (p == end || *p != '"')
			return -EINVAL;
		p = parse_value(p + 1, end, &s->labels[2 * s->nr_labels - 1]);
		if (!p)
			return -EINVAL;
		p = skip_blanks(p, end);
		if (p < end && *p == ',')
			p = skip_blanks(p + 1, end);
		else if (p < end && *p != '}')
			return -EINVAL;
	}
	if (p == end)
		return -EINVAL;
	*pp = p + 1;
	qsort(s->labels, s->nr_labels, 2 * sizeof(*s->labels), compare_labels);
	for (unsigned int i = 1; i < s->nr_labels; i++)
		if (strcmp(s->labels[2 * i], s->labels[2 * i - 2]) == 0)
			return -EINVAL;
	return 0;
}

/* name{label="value",...} value [timestamp] [# exemplar] */
static int parse_series(struct tu_exposition *e, const char *p, const char *end,
			unsigned int line)
{
	struct tu_series *s = grow(e->series, e->nr_series, sizeof(*s));
	const char *ne = name_end(p, end, true);
	char *num, *stop;
	int err;

	if (!s)
		return -ENOMEM;
	e->series = s;
	s += e->nr_series++;
	*s = (struct tu_series){ .line = line, .family = -1 };
	if (!ne)
		return -EINVAL;
	s->name = strndup(p, (size_t)(ne - p));
	if (!s->name)
		return -ENOMEM;
	p = ne;
	if (skip_blanks(p, end) < end && *skip_blanks(p, end) == '{') {
		p = skip_blanks(p, end) + 1;
		err = parse_labels(s, &p, end);
		if (err)
			return err;
	}
	/* a blank, then the value */
	if (skip_blanks(p, end) == p)
		return -EINVAL;
	p = skip_blanks(p, end);
	num = strndup(p, (size_t)(end - p));
	if (!num)
		return -ENOMEM;
	s->value = strtod(num, &stop);
	/* after the value: nothing, a timestamp, or an exemplar */
	err = stop == num || (*stop && *stop != ' ' && *stop != '\t') ? -EINVAL : 0;
	free(num);
	if (err)
		return err;
	for (int i = (int)e->nr_families - 1; i >= 0 && s->family < 0; i--) {
		size_t len = strlen(e->families[i].name);

		if (strncmp(s->name, e->families[i].name, len) == 0 &&
		    (s->name[len] == 0 || s->name[len] == '_'))
			s->family = i;
	}
	return make_key(s);
}

int tu_parse(const char *text, struct tu_exposition *e, unsigned int *bad_line)
{
	unsigned int line = 0;

	*e = (struct tu_exposition){ 0 };
	for (const char *p = text; *p;) {
		const char *end = strchrnul(p, '\n'), *q = skip_blanks(p, end);
		const char *stop = end;
		int err = 0;

		line++;
		while (stop > q && (stop[-1] == ' ' || stop[-1] == '\t' || stop[-1] == '\r'))
			stop--;
		if (q < stop)
			err = *q == '#' ? parse_comment(e, q, stop) : parse_series(e, q, stop, line);
		if (err) {
			*bad_line = line;
			return err;
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

int tu_capture(struct pcpu_metrics_registry *r, struct tu_exposition *e)
{
	char *text = NULL;
	size_t len = 0;
	unsigned int bad;
	FILE *out = open_memstream(&text, &len);
	int err;

	*e = (struct tu_exposition){ 0 };
	if (!out)
		return -ENOMEM;
	err = pcpu_metrics_registry_write(r, out, PCPU_METRICS_PROMETHEUS);
	if (fclose(out) != 0 && !err)
		err = -ENOMEM;
	if (!err)
		err = tu_parse(text, e, &bad);
	free(text);
	return err;
}

void tu_free(struct tu_exposition *e)
{
	for (size_t i = 0; i < e->nr_families; i++) {
		free(e->families[i].name);
		free(e->families[i].type);
	}
	for (size_t i = 0; i < e->nr_series; i++) {
		struct tu_series *s = &e->series[i];

		if (s->labels)
			for (unsigned int j = 0; j < 2 * s->nr_labels; j++)
				free(s->labels[j]);
		free(s->labels);
		free(s->name);
		free(s->key);
	}
	free(e->families);
	free(e->series);
	*e = (struct tu_exposition){ 0 };
}

bool tu_selected(const struct tu_exposition *e, const struct tu_series *s,
		 const char *const *names)
{
	if (!names)
		return true;
	for (; *names; names++)
		if (strcmp(*names, s->name) == 0 ||
		    (s->family >= 0 && strcmp(*names, e->families[s->family].name) == 0))
			return true;
	return false;
}
