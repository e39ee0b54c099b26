// SPDX-License-Identifier: MIT
//
// An RPC server's latency summary with prometheus-cpp 1.0, before its port
// to <percpu/metrics.hpp> (summary_after.cpp; docs/cpp.md goes through it
// line by line). THREADS workers serve REQUESTS calls each and observe each
// call's duration by method; then the exposition is printed.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include <prometheus/registry.h>
#include <prometheus/summary.h>
#include <prometheus/text_serializer.h>

static const char *const methods[] = { "get", "put" };

// call i's duration (microseconds)
static long duration_us(long i) { return 1 + i * 7919 % 200000; }

int main(int argc, char **argv)
{
	int threads = argc > 1 ? std::atoi(argv[1]) : 4;
	long each = argc > 2 ? std::atol(argv[2]) : 100000;

	auto registry = std::make_shared<prometheus::Registry>();
	auto &latency = prometheus::BuildSummary()
				.Name("rpc_duration_seconds")
				.Help("Time to serve a call.")
				.Register(*registry);
	const prometheus::Summary::Quantiles objectives = { { 0.5, 0.05 }, { 0.9, 0.01 },
							    { 0.99, 0.001 } };

	std::vector<std::thread> workers;
	for (int t = 0; t < threads; t++)
		workers.emplace_back([&, t] {
			auto &mine = latency.Add({ { "method", methods[t % 2] } }, objectives,
						 std::chrono::seconds{ 60 }, 5);
			for (long i = t * each; i < (t + 1) * each; i++)
				mine.Observe(duration_us(i) / 1e6);
		});
	for (auto &w : workers)
		w.join();

	std::fputs(prometheus::TextSerializer().Serialize(registry->Collect()).c_str(), stdout);
	return 0;
}
