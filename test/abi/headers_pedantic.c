/* SPDX-License-Identifier: MIT */
/*
 * Every public header compiles as strict ISO C with every warning an error
 * (after libevdev's test-compile-pedantic), and the inline fast paths link.
 * Built twice: -std=c11 -pedantic -Werror and -std=c99 -pedantic -Werror.
 */
#include <percpu/common.h>
#include <percpu/arch.h>
#include <percpu/cpu.h>
#include <percpu/counter.h>
#include <percpu/registry.h>
#include <percpu/percpu_counter.h>
#include <percpu/stat.h>
#include <percpu/metrics.h>
#include <percpu/histogram.h>
#include <percpu/charge.h>
#include <percpu/family.h>
#include <percpu/gauge.h>
#include <percpu/counter_double.h>
#include <percpu/metrics_registry.h>
#include <percpu/metrics_testutil.h>
#include <percpu/summary.h>
#include <percpu/metrics_http.h>

PCPU_COUNTER_DEFINE(pedantic_requests, "pedantic_requests", "Requests seen by the C test.");
PCPU_GAUGE_DEFINE(pedantic_depth, "pedantic_depth", "Queue depth.");

int main(void)
{
	struct pcpu_counter c;
	struct percpu_counter k;
	int ok;

	if (pcpu_counter_init(&c, 1) != 0 || percpu_counter_init(&k, 1, GFP_KERNEL) != 0)
		return 1;
	pcpu_counter_add(&c, 2);
	percpu_counter_add_local(&k, 2);
	pcpu_counter_add(&pedantic_requests, 4);
	pcpu_counter_add(&pedantic_depth, -1);
	ok = pcpu_counter_sum(&c) == 3 && percpu_counter_sum(&k) == 3 &&
	     pcpu_counter_sum(&pedantic_requests) == 4 && pcpu_counter_sum(&pedantic_depth) == -1 &&
	     pcpu_metrics_define_errors() == 0;
	{
		static const int64_t bounds[] = { 10, 100 };
		struct pcpu_histogram_desc hd = { "pedantic_latency", "Latency.", NULL, NULL,
						  bounds, 2, 0, NULL, NULL };
		struct pcpu_histogram *h = pcpu_histogram_create(&hd);
		uint64_t counts[3];

		if (!h)
			return 1;
		pcpu_histogram_observe(h, 50);
		ok = ok && pcpu_histogram_snapshot(h, counts, NULL) == 0 && counts[1] == 1 &&
		     pcpu_metrics_content_type(PCPU_METRICS_PROMETHEUS) != NULL;
		pcpu_histogram_destroy(h);
	}
	pcpu_counter_destroy(&c);
	percpu_counter_destroy(&k);
	return ok ? 0 : 1;
}
