/* SPDX-License-Identifier: MIT */
/* What the metrics tests share: the exposition as a string, and reading one sample. */
#ifndef PCPU_TEST_METRICS_HELPERS_H
#define PCPU_TEST_METRICS_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/metrics.h>
#include <percpu/metrics_registry.h>

/*
 * The whole exposition of registry @r (NULL: the process's) in format @f
 * (malloc'ed), or NULL if the write failed.
 */
static inline char *metrics_registry_text(struct pcpu_metrics_registry *r,
					  enum pcpu_metrics_format f)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	int err;

	if (!out)
		return NULL;
	err = pcpu_metrics_registry_write(r, out, f);
	fclose(out);
	if (err) {
		free(text);
		return NULL;
	}
	return text;
}

/* The whole exposition in format @f (malloc'ed), or NULL if the write failed. */
static inline char *metrics_text(enum pcpu_metrics_format f)
{
	return metrics_registry_text(NULL, f);
}

/*
 * The value of the sample line that starts with @series (name and labels,
 * as written) followed by a space; returns 0 and stores it, or -1 if absent.
 */
static inline int metrics_value(const char *text, const char *series, long long *value)
{
	size_t n = strlen(series);

	for (const char *line = text; line && *line;) {
		if (strncmp(line, series, n) == 0 && line[n] == ' ') {
			*value = strtoll(line + n + 1, NULL, 10);
			return 0;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return -1;
}

/* Does @text contain a line equal to @line? */
static inline int metrics_has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; p && *p;) {
		if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
			return 1;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return 0;
}

#endif /* PCPU_TEST_METRICS_HELPERS_H */
