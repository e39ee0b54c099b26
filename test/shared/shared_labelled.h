/* SPDX-License-Identifier: MIT */
/*
 * A segment with labels and histograms, for the tests and shared-peer:
 * three items of one counter family (labels given out of order, a value
 * with a quote, a backslash, a newline and UTF-8), two histograms of one
 * family, a gauge without labels. 6 items, 14 counters.
 */
#ifndef PCPU_TEST_SHARED_LABELLED_H
#define PCPU_TEST_SHARED_LABELLED_H

#include <percpu/shared.h>

enum { LAB_GET_200, LAB_GET_500, LAB_ODD_200, LAB_LAT_ROOT, LAB_LAT_API, LAB_DEPTH, LAB_ITEMS };

#define LAB_ODD_METHOD "p\"o\\s\nt \xc3\xa9"

static const int64_t shared_lab_bounds[] = { 10, 100, 1000 };

static const struct pcpu_stat_item shared_lab_items[LAB_ITEMS] = {
	{ .name = "http_requests", .help = "Requests by code and method." },
	{ .name = "http_requests", .help = "Requests by code and method." },
	{ .name = "http_requests", .help = "Requests by code and method." },
	{ .name = "request_size_bytes", .help = "Request sizes.", .kind = PCPU_METRIC_HISTOGRAM },
	{ .name = "request_size_bytes", .help = "Request sizes.", .kind = PCPU_METRIC_HISTOGRAM },
	{ .name = "queue_depth", .help = "Requests waiting.", .kind = PCPU_METRIC_GAUGE },
};

static const struct pcpu_shared_more shared_lab_more[LAB_ITEMS] = {
	{ .labels = PCPU_LABELS("method", "get", "code", "200") },
	{ .labels = PCPU_LABELS("code", "500", "method", "get") },
	{ .labels = PCPU_LABELS("code", "200", "method", LAB_ODD_METHOD) },
	{ .labels = PCPU_LABELS("path", "/"), .bounds = shared_lab_bounds, .nr_bounds = 3 },
	{ .labels = PCPU_LABELS("path", "/api"), .bounds = shared_lab_bounds, .nr_bounds = 3 },
	{ .labels = NULL },
};

static inline struct pcpu_shared_desc shared_lab_desc(void)
{
	return (struct pcpu_shared_desc){ .items = shared_lab_items, .nr_items = LAB_ITEMS,
					  .flags = PCPU_SHARED_MORE, .more = shared_lab_more };
}

#endif /* PCPU_TEST_SHARED_LABELLED_H */
