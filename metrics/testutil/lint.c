/* SPDX-License-Identifier: MIT */
/*
 * pcpu_metrics_lint() (<percpu/metrics_testutil.h>): Prometheus's naming
 * conventions, as client_golang's promlint checks them, for what the
 * library's registration lets through (lib/base/names.c refuses bad
 * characters, the reserved suffixes on counters and histograms, and a unit
 * that does not end the name). One family at a time, from its TYPE and
 * HELP lines and its series.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <percpu/metrics_testutil.h>

#include "testutil/testutil_internal.h"

struct lint {
	const char *family;
	FILE *report;
	int problems;
};

static void problem(struct lint *l, const char *what)
{
	l->problems++;
	if (l->report)
		fprintf(l->report, "%s: %s\n", l->family, what);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool camel_case(const char *s)
{
	for (; s[0] && s[1]; s++)
		if (s[0] >= 'a' && s[0] <= 'z' && s[1] >= 'A' && s[1] <= 'Z')
			return true;
	return false;
}

/* Is @word one of the '_'-separated words of @name? */
static bool has_word(const char *name, const char *word)
{
	size_t len = strlen(word);

	for (const char *p = name; (p = strstr(p, word)); p++)
		if ((p == name || p[-1] == '_') && (p[len] == 0 || p[len] == '_'))
			return true;
	return false;
}

/* Units: abbreviations, and ones that are not the base unit. */
static void lint_units(struct lint *l, const char *name)
{
	static const char *const abbreviations[] = { "s", "ms", "us", "ns", "sec", "secs", "min",
						     "mins", "hr", "hrs", "b", "kb", "mb", "gb",
						     "tb", "pb", "kib", "mib", "gib", NULL };
	static const char *const bases[] = { "seconds", "bytes", "meters", "metres", "grams",
					     "volts", "amperes", "joules", "kelvin", "celsius",
					     "hertz", NULL };
	static const char *const prefixes[] = { "pico", "nano", "micro", "milli", "centi",
						"deci", "deca", "hecto", "kilo", "kibi", "mega",
						"mebi", "giga", "gibi", "tera", "tebi", "peta",
						"pebi", NULL };
	static const char *const times[] = { "minutes", "hours", "days", "weeks", NULL };
	char msg[128];

	for (unsigned int i = 0; abbreviations[i]; i++)
		if (has_word(name, abbreviations[i])) {
			snprintf(msg, sizeof(msg), "abbreviated unit \"%s\": write it in full",
				 abbreviations[i]);
			problem(l, msg);
		}
	for (unsigned int i = 0; times[i]; i++)
		if (has_word(name, times[i])) {
			snprintf(msg, sizeof(msg), "use base unit \"seconds\" instead of \"%s\"",
				 times[i]);
			problem(l, msg);
		}
	for (unsigned int i = 0; prefixes[i]; i++)
		for (unsigned int j = 0; bases[j]; j++) {
			char word[32];

			snprintf(word, sizeof(word), "%s%s", prefixes[i], bases[j]);
			if (!has_word(name, word))
				continue;
			snprintf(msg, sizeof(msg), "use base unit \"%s\" instead of \"%s\"",
				 bases[j], word);
			problem(l, msg);
		}
}

static void lint_name(struct lint *l, const char *name, const char *type)
{
	static const char *const types[] = { "counter", "gauge", "histogram", "summary",
					     "untyped", NULL };
	static const char *const reserved[] = { "_bucket", "_count", "_sum", NULL };
	bool counter = strcmp(type, "counter") == 0;
	bool rollup = strcmp(type, "histogram") == 0 || strcmp(type, "summary") == 0;
	char msg[128];

	if (camel_case(name))
		problem(l, "metric names should be written in snake_case, not camelCase");
	if (strchr(name, ':'))
		problem(l, "metric names should not contain ':' (recording rules' own)");
	if (counter && !ends_with(name, "_total"))
		problem(l, "counter metrics should have a \"_total\" suffix");
	if (!counter && ends_with(name, "_total"))
		problem(l, "non-counter metrics should not have a \"_total\" suffix");
	for (unsigned int i = 0; !rollup && reserved[i]; i++)
		if (ends_with(name, reserved[i])) {
			snprintf(msg, sizeof(msg),
				 "non-histogram and non-summary metrics should not have a \"%s\" suffix",
				 reserved[i]);
			problem(l, msg);
		}
	for (unsigned int i = 0; types[i]; i++)
		if (has_word(name, types[i])) {
			snprintf(msg, sizeof(msg), "metric names should not contain the type (\"%s\")",
				 types[i]);
			problem(l, msg);
		}
	lint_units(l, name);
}

/* The labels of family @at's series: each problem once per family. */
static void lint_labels(struct lint *l, const struct tu_exposition *e, size_t at,
			const char *type)
{
	bool camel = false, le = false, quantile = false;

	for (size_t i = 0; i < e->nr_series; i++) {
		const struct tu_series *s = &e->series[i];

		if (s->family != (int)at)
			continue;
		for (unsigned int j = 0; j < s->nr_labels; j++) {
			const char *k = s->labels[2 * j];

			camel |= camel_case(k);
			le |= strcmp(k, "le") == 0 && strcmp(type, "histogram") != 0;
			quantile |= strcmp(k, "quantile") == 0 && strcmp(type, "summary") != 0;
		}
	}
	if (camel)
		problem(l, "label names should be written in snake_case, not camelCase");
	if (le)
		problem(l, "non-histogram metrics should not have an \"le\" label");
	if (quantile)
		problem(l, "non-summary metrics should not have a \"quantile\" label");
}

PCPU_EXPORT int pcpu_metrics_lint(struct pcpu_metrics_registry *r, const char *const *names,
				  FILE *report)
{
	struct tu_exposition e;
	struct lint l = { .report = report };
	int err = tu_capture(r, &e);

	for (size_t i = 0; !err && i < e.nr_families; i++) {
		const struct tu_family *fam = &e.families[i];
		const char *type = fam->type ? fam->type : "untyped";
		bool chosen = !names;

		for (const char *const *n = names; n && *n && !chosen; n++)
			chosen = strcmp(*n, fam->name) == 0;
		if (!chosen)
			continue;
		l.family = fam->name;
		if (!fam->has_help)
			problem(&l, "no help text");
		lint_name(&l, fam->name, type);
		lint_labels(&l, &e, i, type);
	}
	if (report)
		fflush(report);
	tu_free(&e);
	return err ? err : l.problems;
}
