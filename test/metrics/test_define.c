/* SPDX-License-Identifier: MIT */
/*
 * File-scope definitions (PCPU_COUNTER_DEFINE, PCPU_GAUGE_DEFINE, and the
 * _DESC forms with a unit and constant labels) in the
 * test executable: registered before main() and usable at once. Linked
 * against the shared library, as a program would be. Definitions that
 * fail are in test_define_dup.c (since 0.4 they fail every exposition).
 */
#define _GNU_SOURCE
#include <percpu/metrics.h>

#include "helpers.h"
#include "pcpu_test.h"

PCPU_COUNTER_DEFINE(defined_requests, "defined_requests", "Requests defined at file scope.");
PCPU_GAUGE_DEFINE(defined_depth, "defined_depth", "A gauge defined at file scope.");
PCPU_COUNTER_DEFINE_DESC(defined_rx, .name = "defined_received_bytes", .unit = "bytes",
			 .help = "Bytes received.", .labels = PCPU_LABELS("interface", "eth0"));
PCPU_GAUGE_DEFINE_DESC(defined_temp, .name = "defined_temperature_celsius", .unit = "celsius",
		       .labels = PCPU_LABELS("sensor", "a", "zone", "b"));
/* the macro's kind wins: a gauge, though the fields say counter */
PCPU_GAUGE_DEFINE_DESC(defined_kind, .name = "defined_level", .kind = PCPU_METRIC_COUNTER);

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
	pcpu_counter_add(&defined_rx, 1500);
	pcpu_counter_add(&defined_temp, -4);
	pcpu_counter_add(&defined_kind, -1);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(text);
	cr_expect_str_eq(text, "# HELP defined_depth A gauge defined at file scope.\n"
			       "# TYPE defined_depth gauge\n"
			       "defined_depth -2\n"
			       "# TYPE defined_level gauge\n"
			       "defined_level -1\n"
			       "# HELP defined_received_bytes_total Bytes received.\n"
			       "# TYPE defined_received_bytes_total counter\n"
			       "defined_received_bytes_total{interface=\"eth0\"} 1500\n"
			       "# HELP defined_requests_total Requests defined at file scope.\n"
			       "# TYPE defined_requests_total counter\n"
			       "defined_requests_total 5\n"
			       "# TYPE defined_temperature_celsius gauge\n"
			       "defined_temperature_celsius{sensor=\"a\",zone=\"b\"} -4\n");
	free(text);
	text = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_expect(metrics_has_line(text, "# TYPE defined_requests counter"), "%s", text);
	cr_expect(metrics_has_line(text, "defined_requests_total 5"), "%s", text);
	cr_expect(metrics_has_line(text, "# UNIT defined_received_bytes bytes"), "%s", text);
	cr_expect(metrics_has_line(text, "# UNIT defined_temperature_celsius celsius"), "%s", text);
	free(text);
}
