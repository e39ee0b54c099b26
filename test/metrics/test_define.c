/* SPDX-License-Identifier: MIT */
/*
 * File-scope definitions (PCPU_COUNTER_DEFINE, PCPU_GAUGE_DEFINE) in the
 * test executable: registered before main(), usable at once, and a
 * definition that cannot register (bad or duplicate name) stays usable,
 * unexposed, and is counted by pcpu_metrics_define_errors(). Linked
 * against the shared library, as a program would be.
 */
#define _GNU_SOURCE
#include <percpu/metrics.h>

#include "helpers.h"
#include "pcpu_test.h"

PCPU_COUNTER_DEFINE(defined_requests, "defined_requests", "Requests defined at file scope.");
PCPU_GAUGE_DEFINE(defined_depth, "defined_depth", "A gauge defined at file scope.");
PCPU_COUNTER_DEFINE(defined_bad, "defined bad", "Refused: a space in the name.");
PCPU_COUNTER_DEFINE(defined_dup, "defined_requests", "Refused: a duplicate.");

/* Ran before main(), after the definitions' constructors (priority 101). */
static int registered_before_main = -1;
__attribute__((constructor(65535))) static void look_before_main(void)
{
	char *text = metrics_text(PCPU_METRICS_PROMETHEUS);

	registered_before_main = text && metrics_has_line(text, "defined_requests_total 0");
	free(text);
}

Test(define, definitions_are_registered_before_main)
{
	cr_expect_eq(registered_before_main, 1);
	cr_expect(pcpu_counter_initialized(&defined_requests));
	cr_expect(pcpu_counter_initialized(&defined_depth));
}

Test(define, defined_counters_count_and_show_in_both_formats)
{
	char *text;

	pcpu_counter_add(&defined_requests, 5);
	pcpu_counter_add(&defined_depth, -2);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(text);
	cr_expect_str_eq(text, "# HELP defined_depth A gauge defined at file scope.\n"
			       "# TYPE defined_depth gauge\n"
			       "defined_depth -2\n"
			       "# HELP defined_requests_total Requests defined at file scope.\n"
			       "# TYPE defined_requests_total counter\n"
			       "defined_requests_total 5\n");
	free(text);
	text = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_expect(metrics_has_line(text, "# TYPE defined_requests counter"), "%s", text);
	cr_expect(metrics_has_line(text, "defined_requests_total 5"), "%s", text);
	free(text);
}

Test(define, failed_definitions_are_counted_unexposed_and_still_usable)
{
	cr_expect_eq(pcpu_metrics_define_errors(), 2, "the bad name and the duplicate");
	cr_assert(pcpu_counter_initialized(&defined_bad));
	cr_assert(pcpu_counter_initialized(&defined_dup));
	pcpu_counter_add(&defined_bad, 3);
	pcpu_counter_add(&defined_dup, 4);
	cr_expect_eq(pcpu_counter_sum(&defined_bad), 3);
	cr_expect_eq(pcpu_counter_sum(&defined_dup), 4);
	/* destroy of an unregistered definition is an ordinary destroy */
	pcpu_counter_destroy(&defined_dup);
	cr_expect_not(pcpu_counter_initialized(&defined_dup));
}
