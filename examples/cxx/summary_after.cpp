// SPDX-License-Identifier: MIT
//
// summary_before.cpp's latency summary ported from prometheus-cpp to
// <percpu/metrics.hpp> (docs/cpp.md goes through it line by line): the same
// series, with per-CPU observations and no lock. THREADS workers serve
// REQUESTS calls each and observe each call's duration by method; then the
// exposition is printed.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <percpu/metrics.hpp>

static const char *const methods[] = { "get", "put" };

// call i's duration (microseconds)
static long duration_us(long i) { return 1 + i * 7919 % 200000; }

int main(int argc, char **argv)
{
	int threads = argc > 1 ? std::atoi(argv[1]) : 4;
	long each = argc > 2 ? std::atol(argv[2]) : 100000;

	percpu::registry registry;
	percpu::summary_family latency{percpu::desc("rpc_duration_seconds")
					       .help("Time to serve a call.")
					       .scale(1000000)
					       .in(registry),
				       { "method" },
				       percpu::summary_options({ 0.5, 0.9, 0.99 })
					       .max_age(std::chrono::seconds{ 60 })
					       .age_buckets(5)};

	std::vector<std::thread> workers;
	for (int t = 0; t < threads; t++)
		workers.emplace_back([&, t] {
			percpu::summary_ref mine = latency.get({ methods[t % 2] });
			for (long i = t * each; i < (t + 1) * each; i++)
				mine.observe(duration_us(i));
		});
	for (auto &w : workers)
		w.join();

	std::fputs(registry.exposition().c_str(), stdout);
	return 0;
}
