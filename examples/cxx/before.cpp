// SPDX-License-Identifier: MIT
//
// A daemon's metrics with prometheus-cpp 1.0, before its port to
// <percpu/metrics.hpp> (after.cpp; docs/cpp.md goes through it line by
// line). THREADS workers handle REQUESTS requests each, counting them by
// method and code, the requests in flight, and each one's duration by
// method; then the exposition is printed. With a PORT, /metrics is served
// on 127.0.0.1 meanwhile.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

static const char *const methods[] = { "GET", "PUT", "POST", "HEAD" };

// request i's duration (microseconds) and status code
static long duration_us(long i) { return i * 7919 % 200000; }
static const char *code(long i) { return i % 10 == 9 ? "500" : "200"; }

int main(int argc, char **argv)
{
	int threads = argc > 1 ? std::atoi(argv[1]) : 4;
	long each = argc > 2 ? std::atol(argv[2]) : 100000;

	auto registry = std::make_shared<prometheus::Registry>();
	auto &requests = prometheus::BuildCounter()
				 .Name("app_requests_total")
				 .Help("Requests handled.")
				 .Register(*registry);
	auto &in_flight = prometheus::BuildGauge()
				  .Name("app_in_flight_requests")
				  .Help("Requests being handled.")
				  .Register(*registry)
				  .Add({});
	auto &latency = prometheus::BuildHistogram()
				.Name("app_request_duration_seconds")
				.Help("Time to handle a request.")
				.Register(*registry);
	const prometheus::Histogram::BucketBoundaries bounds = { 0.001, 0.01, 0.1, 1 };

	std::optional<prometheus::Exposer> exposer;
	if (argc > 3) {
		exposer.emplace(std::string("127.0.0.1:") + argv[3]);
		exposer->RegisterCollectable(registry);
	}

	std::vector<std::thread> workers;
	for (int t = 0; t < threads; t++)
		workers.emplace_back([&, t] {
			auto &get_ok = requests.Add({ { "method", "GET" }, { "code", "200" } });
			for (long i = t * each; i < (t + 1) * each; i++) {
				const char *method = methods[i % 4];
				in_flight.Increment();
				latency.Add({ { "method", method } }, bounds).Observe(duration_us(i) / 1e6);
				if (i % 4 == 0 && code(i)[0] == '2')
					get_ok.Increment();
				else
					requests.Add({ { "method", method }, { "code", code(i) } }).Increment();
				in_flight.Decrement();
			}
		});
	for (auto &w : workers)
		w.join();

	std::fputs(prometheus::TextSerializer().Serialize(registry->Collect()).c_str(), stdout);
	return 0;
}
