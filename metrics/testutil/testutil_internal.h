/* SPDX-License-Identifier: MIT */
/*
 * The testing helpers' view of an exposition (<percpu/metrics_testutil.h>):
 * the Prometheus text format 0.0.4 parsed into families and series.
 */
#ifndef PCPU_METRICS_TESTUTIL_INTERNAL_H
#define PCPU_METRICS_TESTUTIL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

struct pcpu_metrics_registry;

/* A "# TYPE" or "# HELP" line's family. */
struct tu_family {
	char *name;
	char *type;     /* NULL: no TYPE line */
	bool has_help;  /* a HELP line with some text */
};

/* A sample line. */
struct tu_series {
	char *name;
	char **labels;           /* {"name", "value", ...}, decoded, sorted by name */
	unsigned int nr_labels;
	double value;
	char *key;               /* name{a="x",b="y"}: labels sorted, escaped */
	int family;              /* index in the families, or -1 */
	unsigned int line;
};

struct tu_exposition {
	struct tu_family *families;
	size_t nr_families;
	struct tu_series *series;
	size_t nr_series;
};

/*
 * Parses @text into @e (zeroed first). 0; -EINVAL with the number of the
 * first bad line in *@bad_line; -ENOMEM. tu_free() frees @e either way.
 */
int tu_parse(const char *text, struct tu_exposition *e, unsigned int *bad_line);

/* The text exposition of registry @r (NULL: the process's), parsed. */
int tu_capture(struct pcpu_metrics_registry *r, struct tu_exposition *e);

void tu_free(struct tu_exposition *e);

/* Is series @s among the families or series @names (NULL: all)? */
bool tu_selected(const struct tu_exposition *e, const struct tu_series *s,
		 const char *const *names);

#endif /* PCPU_METRICS_TESTUTIL_INTERNAL_H */
