/* SPDX-License-Identifier: MIT */
/**
 * @file metrics_testutil.h
 * Testing a program's instrumentation, as client_golang's testutil
 * (CollectAndCompare, ToFloat64, CollectAndLint) does (since 0.5): compare
 * what a registry exposes with the text a test expects, read one series'
 * value, and lint the names against Prometheus's naming conventions.
 *
 * Each call writes the exposition of a registry (NULL: the process's) in
 * the Prometheus text format 0.0.4, parses it and works on its series. A
 * series is a sample line: its name, its labels (a set: their order does
 * not matter) and its value; a metric family is the name of a "# TYPE"
 * line, and a series belongs to the family whose name it starts with
 * (NAME, NAME_bucket, NAME_sum, ...). @p names, where a call takes it,
 * selects the families to look at ({"name", ..., NULL}; a family's name or
 * one series' name; NULL: all): a label family (<percpu/family.h>) is
 * selected by its name as exposed (NAME_total for a counter family).
 *
 * They are for tests: each writes and parses the whole exposition.
 *
 * Link: pkg-config percpu-metrics.
 */
#ifndef PERCPU_METRICS_TESTUTIL_H
#define PERCPU_METRICS_TESTUTIL_H

#include <stdio.h>

#include <percpu/common.h>
#include <percpu/metrics_registry.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Compares the series of the families @p names of registry @p r (NULL:
 * the process's) with @p expected, text in the Prometheus format 0.0.4:
 * the same series, each with the same value (NaN equals NaN), in any
 * order. Help text, comments, blank lines and timestamps are ignored; a
 * "# TYPE" line of @p expected must agree with the family's type where the
 * family is exposed. Every series of @p expected counts, selected or not.
 * Each difference is written to @p diff (NULL: nowhere; an fmemopen()
 * stream writes into a caller's buffer) as one line, by series:
 * "missing: SERIES VALUE" (expected, not exposed), "unexpected: SERIES
 * VALUE" (exposed, not expected), "different: SERIES: expected VALUE, got
 * VALUE", "type: FAMILY: expected TYPE, got TYPE"; SERIES is written
 * NAME{label="value",...} with the labels sorted by name.
 * @return 0 when they agree; the number of differences; -EINVAL (NULL
 *         @p expected, or a line of it that is not one of the format,
 *         written to @p diff as "expected:LINE: cannot parse"), -ENOMEM, or
 *         the error of pcpu_metrics_registry_write().
 * @since 0.5
 */
PCPU_EXPORT int pcpu_metrics_compare(struct pcpu_metrics_registry *r, const char *const *names,
				     const char *expected, FILE *diff);

/**
 * The value of the one series of registry @p r (NULL: the process's) named
 * @p name whose labels include @p labels ({"name", "value", ..., NULL};
 * NULL or {NULL}: any), as exposed (scaled), into @p value.
 * @return 0; -ENOENT if no series matches, -EEXIST if more than one does
 *         (give more labels), -EINVAL (NULL @p name or @p value, an odd
 *         @p labels), -ENOMEM, or the error of
 *         pcpu_metrics_registry_write().
 * @since 0.5
 */
PCPU_EXPORT int pcpu_metrics_value(struct pcpu_metrics_registry *r, const char *name,
				   const char *const *labels, double *value);

/**
 * Lints the families @p names of registry @p r (NULL: the process's)
 * against Prometheus's naming conventions, as promlint does, for what
 * registration does not already refuse: no help text; camelCase in a
 * metric or a label name; ':' in a metric name (recording rules' own);
 * a counter without "_total", "_total" on another type; "_bucket",
 * "_count" or "_sum" on a gauge; a label "le" outside a histogram or
 * "quantile" outside a summary; the type in the name ("_counter",
 * "_gauge", ...); an abbreviated unit ("_ms", "_sec", "_kb", ...); a unit
 * that is not a base unit ("_milliseconds", "_kilobytes", "_minutes":
 * seconds, bytes, meters, ... with no prefix). Each problem is written to
 * @p report (NULL: nowhere) as one line "FAMILY: PROBLEM".
 * @return the number of problems (0: none); -ENOMEM, or the error of
 *         pcpu_metrics_registry_write().
 * @since 0.5
 */
PCPU_EXPORT int pcpu_metrics_lint(struct pcpu_metrics_registry *r, const char *const *names,
				  FILE *report);

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_METRICS_TESTUTIL_H */
