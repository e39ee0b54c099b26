// SPDX-License-Identifier: MIT
//
// Every public header compiles as C++ (extern "C", no C-only constructs in
// the inline functions), and the inline fast paths link against the shared
// library from C++ (after wayland's tests/cpp-compile-test.cpp).
#include <percpu/common.h>
#include <percpu/arch.h>
#include <percpu/cpu.h>
#include <percpu/counter.h>
#include <percpu/registry.h>
#include <percpu/percpu_counter.h>
#if defined(__has_include)
#if __has_include(<percpu/stat.h>)
#include <percpu/stat.h>
#endif
#endif

#include <percpu/metrics.h>
#include <percpu/histogram.h>
#include <percpu/charge.h>
#include <percpu/family.h>
#include <percpu/gauge.h>
#include <percpu/counter_double.h>
#include <percpu/metrics_registry.h>
#include <percpu/metrics_testutil.h>
#include <percpu/summary.h>

#include <cstdio>

PCPU_COUNTER_DEFINE(cpp_requests, "cpp_requests", "Requests seen by the C++ test.");
PCPU_GAUGE_DEFINE(cpp_depth, "cpp_depth", "Queue depth.");

int main()
{
	struct pcpu_counter c;
	struct percpu_counter k;
	struct pcpu_counter_options o = {};

	o.batch = 10;
	if (pcpu_counter_init_opts(&c, 5, &o) != 0 || percpu_counter_init(&k, 5, GFP_KERNEL) != 0)
		return 1;
	pcpu_counter_add(&c, 7);
	pcpu_counter_add_batch(&c, -2, 100);
	percpu_counter_add(&k, 7);
	percpu_counter_add_batch(&k, -2, 100);
	percpu_counter_inc(&k);
	percpu_counter_sub_local(&k, 1);
	bool ok = pcpu_counter_sum(&c) == 10 && percpu_counter_sum(&k) == 10 &&
		  pcpu_counter_initialized(&c) && percpu_counter_initialized(&k) &&
		  percpu_counter_read_positive(&k) >= 0 && pcpu_registry_count() >= 2 &&
		  pcpu_cpu_possible() >= 1 && pcpu_counter_read(&c) <= 10 + 20;
	pcpu_counter_add(&cpp_requests, 3);
	pcpu_counter_add(&cpp_depth, -2);
	static const int64_t bounds[] = { 10, 100 };
	struct pcpu_histogram_desc hd = { "cpp_latency", "Latency.", nullptr, nullptr, bounds, 2, 0,
					  nullptr, nullptr };
	struct pcpu_histogram *h = pcpu_histogram_create(&hd);
	uint64_t counts[3] = {};
	int64_t sum = 0;
	if (!h)
		return 1;
	pcpu_histogram_observe(h, 5);
	pcpu_histogram_observe(h, 500);
	ok = ok && pcpu_counter_sum(&cpp_requests) == 3 && pcpu_counter_sum(&cpp_depth) == -2 &&
	     pcpu_metrics_define_errors() == 0 && pcpu_histogram_snapshot(h, counts, &sum) == 0 &&
	     counts[0] == 1 && counts[2] == 1 && sum == 505;
	pcpu_histogram_destroy(h);
	pcpu_counter_destroy(&c);
	percpu_counter_destroy(&k);
	if (!ok)
		std::fprintf(stderr, "C++: wrong values through the inline functions\n");
	return ok ? 0 : 1;
}
