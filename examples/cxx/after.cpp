// SPDX-License-Identifier: MIT
//
// before.cpp's daemon ported from prometheus-cpp to <percpu/metrics.hpp>
// (docs/cpp.md goes through it line by line): the same metrics, series and
// values, with per-CPU adds. THREADS workers handle REQUESTS requests each,
// counting them by method and code, the requests in flight, and each one's
// duration by method; then the exposition is printed. With a PORT, /metrics
// is served on 127.0.0.1 meanwhile.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>
#include <vector>

#include <percpu/metrics.hpp>

static const char *const methods[] = { "GET", "PUT", "POST", "HEAD" };

// request i's duration (microseconds) and status code
static long duration_us(long i) { return i * 7919 % 200000; }
static const char *code(long i) { return i % 10 == 9 ? "500" : "200"; }

int main(int argc, char **argv)
{
	int threads = argc > 1 ? std::atoi(argv[1]) : 4;
	long each = argc > 2 ? std::atol(argv[2]) : 100000;

	percpu::registry registry;
	percpu::counter_family requests{percpu::desc("app_requests")
						.help("Requests handled.")
						.in(registry),
					{ "method", "code" }};
	percpu::counter in_flight{percpu::desc("app_in_flight_requests")
					  .help("Requests being handled.")
					  .kind(PCPU_METRIC_GAUGE)
					  .in(registry)};
	percpu::histogram_family latency{percpu::desc("app_request_duration_seconds")
						 .help("Time to handle a request.")
						 .scale(1000000)
						 .in(registry),
					 { "method" }, { 1000, 10000, 100000, 1000000 }};

	std::optional<percpu::server> server;
	if (argc > 3)
		server.emplace("127.0.0.1", unsigned(std::atoi(argv[3])), &registry);

	std::vector<std::thread> workers;
	for (int t = 0; t < threads; t++)
		workers.emplace_back([&, t] {
			percpu::counter_ref get_ok = requests.get({ "GET", "200" });
			for (long i = t * each; i < (t + 1) * each; i++) {
				const char *method = methods[i % 4];
				in_flight.add(1);
				latency.get({ method }).observe(duration_us(i));
				if (i % 4 == 0 && code(i)[0] == '2')
					get_ok.inc();
				else
					requests.get({ method, code(i) }).inc();
				in_flight.add(-1);
			}
		});
	for (auto &w : workers)
		w.join();

	std::fputs(registry.exposition().c_str(), stdout);
	return 0;
}
