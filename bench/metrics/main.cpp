// SPDX-License-Identifier: MIT
//
// percpu-bench-metrics: percpu's metrics beside prometheus-cpp 1.0 (Debian's
// prometheus-cpp-dev), the client a C/C++ daemon would otherwise pick, in
// one run:
//   counter inc          a registered counter / prometheus::Counter
//   child inc, cached    a label family's child looked up once per thread
//   child inc, lookup    the child looked up by label values at every add
//                        (8 status codes in turn), as
//                        Family::Add({...}).Increment() does
//   histogram observe    8 buckets, values spread over them
//   native observe       percpu: a native histogram (schema 3, 1 ns to
//                        60 s: 272 buckets) fed ns over 0-1 s; prometheus-cpp
//                        (which has no native histograms): the classic one
//                        above, fed the same values in seconds
//   summary observe      percpu: a summary (<percpu/summary.h>: DDSketch
//                        at alpha 2.2 %, 1 ns to 10 s, 5 age buckets over
//                        10 min) fed ns over 0-1 s; prometheus-cpp: its
//                        Summary (CKMS under a mutex, quantiles 0.5/0.05,
//                        0.9/0.01, 0.99/0.001, 60 s in 5 age buckets), fed
//                        the same values in seconds
//   gauge set, cached    a set-style gauge family's child, looked up once
//   gauge set, lookup    the child looked up by label values at every set
//   counter add double   percpu: pcpu_counter_double_add() (fixed point at
//                        10^-9, per-CPU) / Counter::Increment(double)
//                        (a compare-and-swap loop on one shared double);
//                        amounts 0 to 1.023 in steps of 0.001
//   gauge add double     the same on a gauge: a pcpu_counter_double of kind
//                        gauge / Gauge::Increment(double), amounts -0.512
//                        to 0.511
// at 1, 2 and 4 threads (Mops/s, all threads; the median of the runs, and
// the median of the per-run ratios), then the scrape of a family of 1k and
// 10k series: ms and bytes per scrape (percpu: pcpu_metrics_write() into
// memory; prometheus-cpp: Registry::Collect() then TextSerializer), and the
// time to register and unregister 1k and 10k counters of distinct names,
// and, where prometheus-cpp-pull is there, the time to answer one scrape
// over HTTP while 1,000 idle connections are open to the server (percpu:
// pcpu_metrics_serve(); prometheus-cpp: its Exposer, civetweb).
//
// Both sides are used as their documentation shows: the percpu calls are
// inline per-CPU adds; prometheus-cpp's are atomics on one shared value
// per series, and its Add() takes the family's mutex.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/summary.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#ifdef BENCH_HAVE_EXPOSER
#include <prometheus/exposer.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#endif

extern "C" {
#include <percpu/counter.h>
#include <percpu/counter_double.h>
#include <percpu/family.h>
#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/summary.h>
#include <percpu/metrics.h>
#include <percpu/metrics_http.h>
#include "host_cpu.h"
#include "timing.h"
}

namespace {

const char *const codes[] = { "200", "201", "204", "301", "304", "400", "404", "500" };
const int n_codes = 8;
const int64_t bounds_us[] = { 100, 250, 500, 1000, 2500, 5000, 10000 };

struct config {
	int runs = 5;
	int duration_ms = 200;
};

// One thread's loop: returns how many operations it did before @stop.
using loop_fn = std::function<long(int thread, const std::atomic<bool> &stop)>;

// Runs @fn on @threads threads for the run's duration: Mops/s, all threads.
double run_threads(const config &cfg, int threads, const loop_fn &fn)
{
	std::atomic<bool> stop{ false };
	std::vector<long> done(threads);
	std::vector<std::thread> pool;
	pthread_barrier_t start;
	uint64_t t0, t1;

	pthread_barrier_init(&start, nullptr, threads + 1);
	for (int i = 0; i < threads; i++)
		pool.emplace_back([&, i] {
			pthread_barrier_wait(&start);
			done[i] = fn(i, stop);
		});
	pthread_barrier_wait(&start);
	t0 = timing_now_ns();
	std::this_thread::sleep_for(std::chrono::milliseconds(cfg.duration_ms));
	stop.store(true, std::memory_order_relaxed);
	for (auto &t : pool)
		t.join();
	t1 = timing_now_ns();
	pthread_barrier_destroy(&start);
	long total = 0;
	for (long d : done)
		total += d;
	return (double)total / (double)(t1 - t0) * 1e3;
}

// A loop of @body, checking @stop every 1024 calls.
template <typename F> long loop(const std::atomic<bool> &stop, F body)
{
	long n = 0;

	while (!stop.load(std::memory_order_relaxed)) {
		for (int i = 0; i < 1024; i++)
			body(n + i);
		n += 1024;
	}
	return n;
}

struct workload {
	const char *name;
	loop_fn percpu, prom;
};

void compare(const config &cfg, const workload &w)
{
	for (int threads : { 1, 2, 4 }) {
		std::vector<double> a, b, ratio;

		for (int r = 0; r < cfg.runs; r++) {
			a.push_back(run_threads(cfg, threads, w.percpu));
			b.push_back(run_threads(cfg, threads, w.prom));
			ratio.push_back(a.back() / b.back());
		}
		std::printf("%-20s %7d %10.1f %12.1f %9.2fx\n", w.name, threads,
			    timing_median(a.data(), (unsigned)a.size()),
			    timing_median(b.data(), (unsigned)b.size()),
			    timing_median(ratio.data(), (unsigned)ratio.size()));
	}
}

// ms and bytes of one scrape of a family of @series counters, both sides.
void scrape(const config &cfg, unsigned series)
{
	static const char *const code_label[] = { "series", nullptr };
	auto registry = std::make_shared<prometheus::Registry>();
	auto &prom_family = prometheus::BuildCounter()
				    .Name("bench_scrape_series")
				    .Help("One of many series.")
				    .Register(*registry);
	std::string name = "bench_scrape" + std::to_string(series);
	pcpu_family_desc d = {};
	std::vector<double> ours, theirs;
	size_t our_bytes = 0, their_bytes = 0;

	d.name = name.c_str();
	d.help = "One of many series.";
	d.kind = PCPU_METRIC_COUNTER;
	d.label_names = code_label;
	d.max_children = series;
	pcpu_family *f = pcpu_family_create(&d);
	if (!f) {
		std::perror("pcpu_family_create");
		std::exit(1);
	}
	for (unsigned i = 0; i < series; i++) {
		std::string v = std::to_string(i);
		const char *values[] = { v.c_str(), nullptr };

		pcpu_counter_add(pcpu_family_get(f, values), i);
		prom_family.Add({ { "series", v } }).Increment(i);
	}
	for (int r = 0; r < cfg.runs; r++) {
		char *buf = nullptr;
		size_t len = 0;
		FILE *out = open_memstream(&buf, &len);
		uint64_t t0 = timing_now_ns();

		if (!out || pcpu_metrics_write(out, PCPU_METRICS_PROMETHEUS) != 0 || fclose(out)) {
			std::fprintf(stderr, "pcpu_metrics_write failed\n");
			std::exit(1);
		}
		ours.push_back((double)(timing_now_ns() - t0) / 1e6);
		our_bytes = len;
		free(buf);

		t0 = timing_now_ns();
		prometheus::TextSerializer serializer;
		std::string text = serializer.Serialize(registry->Collect());
		theirs.push_back((double)(timing_now_ns() - t0) / 1e6);
		their_bytes = text.size();
	}
	std::printf("scrape %-13u %10.2f %12.2f %9.2fx   bytes %zu / %zu\n", series,
		    timing_median(ours.data(), (unsigned)ours.size()),
		    timing_median(theirs.data(), (unsigned)theirs.size()),
		    timing_median(theirs.data(), (unsigned)theirs.size()) /
			    timing_median(ours.data(), (unsigned)ours.size()),
		    our_bytes, their_bytes);
	pcpu_family_destroy(f);
}

// ms to register, then to unregister, @n counters of distinct names, both sides.
void registration(unsigned n)
{
	std::vector<pcpu_counter> ours(n);
	std::vector<std::string> names(n);
	uint64_t t0, t1, t2;

	for (unsigned i = 0; i < n; i++)
		names[i] = "bench_registered_" + std::to_string(i);
	t0 = timing_now_ns();
	for (unsigned i = 0; i < n; i++) {
		pcpu_metric_desc d = {};

		d.name = names[i].c_str();
		d.kind = PCPU_METRIC_COUNTER;
		if (pcpu_counter_init(&ours[i], 0) || pcpu_counter_register(&ours[i], &d)) {
			std::fprintf(stderr, "registration %u failed\n", i);
			std::exit(1);
		}
	}
	t1 = timing_now_ns();
	for (unsigned i = 0; i < n; i++)
		pcpu_counter_destroy(&ours[i]);
	t2 = timing_now_ns();

	auto registry = std::make_shared<prometheus::Registry>();
	std::vector<prometheus::Family<prometheus::Counter> *> families(n);
	uint64_t p0 = timing_now_ns();
	for (unsigned i = 0; i < n; i++)
		families[i] = &prometheus::BuildCounter().Name(names[i]).Register(*registry);
	uint64_t p1 = timing_now_ns();
	for (unsigned i = 0; i < n; i++)
		registry->Remove(*families[i]);
	uint64_t p2 = timing_now_ns();
	std::printf("register %-11u %10.2f %12.2f   unregister %.2f / %.2f ms\n", n,
		    (double)(t1 - t0) / 1e6, (double)(p1 - p0) / 1e6, (double)(t2 - t1) / 1e6,
		    (double)(p2 - p1) / 1e6);
}

#ifdef BENCH_HAVE_EXPOSER
// A TCP connection to 127.0.0.1:@port within 1 s, or -1.
int dial(unsigned port)
{
	sockaddr_in sin = {};
	timeval limit = { 1, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	// a server that stopped accepting fills its backlog: connect() then waits
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (sockaddr *)&sin, sizeof(sin)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

// ms to GET /metrics from 127.0.0.1:@port to the end of the answer, or -1
// if none came within 5 s.
double timed_scrape(unsigned port)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
	timeval limit = { 5, 0 };
	uint64_t t0 = timing_now_ns();
	int fd = dial(port);
	char buf[65536];
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
	if (send(fd, req, sizeof(req) - 1, 0) != (ssize_t)sizeof(req) - 1) {
		close(fd);
		return -1;
	}
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		got += (size_t)n;
	close(fd);
	// HTTP/1.0: the server closes after the answer; a timeout ends with n < 0
	if (n < 0 || got == 0 || std::memcmp(buf, "HTTP/1.", 7) != 0)
		return -1;
	return (double)(timing_now_ns() - t0) / 1e6;
}

// One scrape with up to @idle connections open and silent, on the server
// at @port; *@opened: how many it could open (1 s each at most).
double scrape_beside_idle(unsigned port, unsigned idle, unsigned *opened)
{
	std::vector<int> fds;
	double ms;

	for (unsigned i = 0; i < idle; i++) {
		int fd = dial(port);

		if (fd < 0)
			break;
		fds.push_back(fd);
	}
	*opened = (unsigned)fds.size();
	std::this_thread::sleep_for(std::chrono::milliseconds(100)); // accepted
	ms = timed_scrape(port);
	for (int fd : fds)
		close(fd);
	return ms;
}

void print_ms(double ms, unsigned opened)
{
	char open[32];

	std::snprintf(open, sizeof(open), " (%u open)", opened);
	if (ms < 0)
		std::printf(" %12s%s", "none in 5 s", open);
	else
		std::printf(" %12.2f%s", ms, open);
}

// The scrape beside @idle idle connections, both servers, one registry each.
void idle_scrape(unsigned idle)
{
	rlimit rl;

	// the idle connections, and the server's ends of them, in this process
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);
	if (!srv) {
		std::perror("pcpu_metrics_serve");
		return;
	}
	unsigned our_open, their_open;
	double ours = scrape_beside_idle(pcpu_metrics_server_port(srv), idle, &our_open);
	pcpu_metrics_server_stop(srv);

	auto registry = std::make_shared<prometheus::Registry>();
	prometheus::BuildCounter().Name("bench_idle").Register(*registry).Add({}).Increment();
	double theirs;
	{
		prometheus::Exposer exposer{ "127.0.0.1:0" };

		exposer.RegisterCollectable(registry);
		theirs = scrape_beside_idle((unsigned)exposer.GetListeningPorts().at(0), idle,
					    &their_open);
	}
	std::printf("idle %-15u", idle);
	print_ms(ours, our_open);
	print_ms(theirs, their_open);
	std::printf("\n");
}
#endif

} // namespace

int main(int argc, char **argv)
{
	config cfg;
	// --only NAME: the workloads whose name contains NAME, and nothing else
	const char *only = nullptr;

	for (int i = 1; i < argc; i++) {
		if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else if (!std::strcmp(argv[i], "--quick")) {
			cfg.runs = 3;
			cfg.duration_ms = 50;
		} else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) {
			cfg.runs = std::atoi(argv[++i]);
		} else if (!std::strcmp(argv[i], "--duration-ms") && i + 1 < argc) {
			cfg.duration_ms = std::atoi(argv[++i]);
		} else {
			std::fprintf(stderr,
				     "usage: %s [--quick] [--runs N] [--duration-ms N] [--only NAME]\n",
				     argv[0]);
			return 2;
		}
	}
	if (cfg.runs < 1 || cfg.duration_ms < 1) {
		std::fprintf(stderr, "--runs and --duration-ms must be positive\n");
		return 2;
	}
	char cpu[256];
	host_cpu_describe(cpu, sizeof(cpu));
	std::printf("CPU: %s\n", cpu);

	// the series, registered as a daemon would register them
	static const char *const code_label[] = { "code", nullptr };
	pcpu_counter requests;
	pcpu_metric_desc rd = {};
	rd.name = "bench_requests";
	rd.kind = PCPU_METRIC_COUNTER;
	pcpu_family_desc fd = {};
	fd.name = "bench_responses";
	fd.kind = PCPU_METRIC_COUNTER;
	fd.label_names = code_label;
	pcpu_histogram_desc hd = {};
	hd.name = "bench_latency_seconds";
	hd.unit = "seconds";
	hd.bounds = bounds_us;
	hd.nr_bounds = 7;
	hd.scale = 1000000;
	static const char *const queue_label[] = { "queue", nullptr };
	pcpu_family_desc gd = {};
	gd.name = "bench_queue_depth";
	gd.kind = PCPU_METRIC_GAUGE;
	gd.label_names = queue_label;
	gd.flags = PCPU_FAMILY_F_SET_GAUGE;
	pcpu_family *responses = pcpu_family_create(&fd);
	pcpu_family *depths = pcpu_family_create(&gd);
	pcpu_histogram *latency = pcpu_histogram_create(&hd);
	pcpu_histogram_native native = {};
	native.schema = 3;
	native.max = INT64_C(60000000000);
	pcpu_histogram_desc nd = {};
	nd.name = "bench_native_seconds";
	nd.unit = "seconds";
	nd.scale = 1000000000;
	nd.native = &native;
	pcpu_histogram *native_latency = pcpu_histogram_create(&nd);
	static const double objectives[] = { 0.5, 0.9, 0.99 };
	pcpu_summary_desc sd = {};
	sd.name = "bench_summary_seconds";
	sd.unit = "seconds";
	sd.scale = 1000000000;
	sd.quantiles = objectives;
	sd.nr_quantiles = 3;
	sd.alpha = 0.022;
	sd.max = INT64_C(10000000000);
	pcpu_summary *summary = pcpu_summary_create(&sd);
	if (pcpu_counter_init(&requests, 0) || pcpu_counter_register(&requests, &rd) ||
	    !responses || !depths || !latency || !native_latency || !summary) {
		std::fprintf(stderr, "percpu setup failed\n");
		return 1;
	}

	pcpu_counter_double amount, level;
	pcpu_metric_desc ad = {};
	ad.name = "bench_paid";
	ad.kind = PCPU_METRIC_COUNTER;
	pcpu_metric_desc ld = {};
	ld.name = "bench_level";
	ld.kind = PCPU_METRIC_GAUGE;
	if (pcpu_counter_double_init(&amount, PCPU_METRIC_COUNTER, 0) ||
	    pcpu_counter_double_register(&amount, &ad) ||
	    pcpu_counter_double_init(&level, PCPU_METRIC_GAUGE, 0) ||
	    pcpu_counter_double_register(&level, &ld)) {
		std::fprintf(stderr, "percpu setup failed\n");
		return 1;
	}

	auto registry = std::make_shared<prometheus::Registry>();
	auto &p_requests = prometheus::BuildCounter().Name("bench_requests").Register(*registry).Add({});
	auto &p_amount = prometheus::BuildCounter().Name("bench_paid").Register(*registry).Add({});
	auto &p_level = prometheus::BuildGauge().Name("bench_level").Register(*registry).Add({});
	auto &p_responses = prometheus::BuildCounter().Name("bench_responses").Register(*registry);
	auto &p_depths = prometheus::BuildGauge().Name("bench_queue_depth").Register(*registry);
	auto &p_latency = prometheus::BuildHistogram()
				  .Name("bench_latency_seconds")
				  .Register(*registry)
				  .Add({}, prometheus::Histogram::BucketBoundaries{ 0.0001, 0.00025, 0.0005,
										   0.001, 0.0025, 0.005,
										   0.01 });

	auto &p_summary = prometheus::BuildSummary()
				  .Name("bench_summary_seconds")
				  .Register(*registry)
				  .Add({}, prometheus::Summary::Quantiles{ { 0.5, 0.05 },
									   { 0.9, 0.01 },
									   { 0.99, 0.001 } });

	std::printf("percpu metrics beside prometheus-cpp %s, %d runs of %d ms, medians; "
		    "ratio > 1: percpu ahead\n\n",
		    "1.0", cfg.runs, cfg.duration_ms);
	std::printf("%-20s %7s %10s %12s %10s\n", "Mops/s", "threads", "percpu", "prometheus",
		    "ratio");

	const workload workloads[] = {
		{ "counter inc",
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long) { pcpu_counter_add(&requests, 1); });
		  },
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long) { p_requests.Increment(); });
		  } },
		{ "child inc, cached",
		  [&](int t, const std::atomic<bool> &stop) {
			  const char *values[] = { codes[t % n_codes], nullptr };
			  pcpu_counter *child = pcpu_family_get(responses, values);
			  return loop(stop, [&](long) { pcpu_counter_add(child, 1); });
		  },
		  [&](int t, const std::atomic<bool> &stop) {
			  auto &child = p_responses.Add({ { "code", codes[t % n_codes] } });
			  return loop(stop, [&](long) { child.Increment(); });
		  } },
		{ "child inc, lookup",
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long i) {
				  const char *values[] = { codes[i % n_codes], nullptr };
				  pcpu_counter_add(pcpu_family_get(responses, values), 1);
			  });
		  },
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long i) {
				  p_responses.Add({ { "code", codes[i % n_codes] } }).Increment();
			  });
		  } },
		{ "histogram observe",
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long i) {
				  pcpu_histogram_observe(latency, (i * 37) % 12000);
			  });
		  },
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long i) {
				  p_latency.Observe((double)((i * 37) % 12000) / 1e6);
			  });
		  } },
		{ "native observe",
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long i) {
				  pcpu_histogram_observe(native_latency, (i * 7919) % 1000000000);
			  });
		  },
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long i) {
				  p_latency.Observe((double)((i * 7919) % 1000000000) / 1e9);
			  });
		  } },
		{ "summary observe",
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long i) {
				  pcpu_summary_observe(summary, (i * 7919) % 1000000000);
			  });
		  },
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long i) {
				  p_summary.Observe((double)((i * 7919) % 1000000000) / 1e9);
			  });
		  } },
		{ "gauge set, cached",
		  [&](int t, const std::atomic<bool> &stop) {
			  const char *values[] = { codes[t % n_codes], nullptr };
			  pcpu_gauge *child = pcpu_family_get_gauge(depths, values);
			  return loop(stop, [&](long i) { pcpu_gauge_set(child, i); });
		  },
		  [&](int t, const std::atomic<bool> &stop) {
			  auto &child = p_depths.Add({ { "queue", codes[t % n_codes] } });
			  return loop(stop, [&](long i) { child.Set((double)i); });
		  } },
		{ "gauge set, lookup",
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long i) {
				  const char *values[] = { codes[i % n_codes], nullptr };
				  pcpu_gauge_set(pcpu_family_get_gauge(depths, values), i);
			  });
		  },
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long i) {
				  p_depths.Add({ { "queue", codes[i % n_codes] } }).Set((double)i);
			  });
		  } },
		{ "counter add double",
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long i) {
				  pcpu_counter_double_add(&amount, (double)(i & 1023) * 1e-3);
			  });
		  },
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long i) {
				  p_amount.Increment((double)(i & 1023) * 1e-3);
			  });
		  } },
		{ "gauge add double",
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long i) {
				  pcpu_counter_double_add(&level, (double)((i & 1023) - 512) * 1e-3);
			  });
		  },
		  [&](int, const std::atomic<bool> &stop) {
			  return loop(stop, [&](long i) {
				  p_level.Increment((double)((i & 1023) - 512) * 1e-3);
			  });
		  } },
	};
	for (const auto &w : workloads)
		if (!only || std::strstr(w.name, only))
			compare(cfg, w);
	if (only)
		goto out;

	std::printf("\n%-20s %10s %12s %10s\n", "scrape, ms", "percpu", "prometheus",
		    "ratio");
	scrape(cfg, 1000);
	scrape(cfg, 10000);
	std::printf("\n%-20s %10s %12s\n", "counters, ms", "percpu", "prometheus");
	registration(1000);
	registration(10000);
#ifdef BENCH_HAVE_EXPOSER
		std::printf("\n%-20s %12s %12s\n", "scrape beside, ms", "percpu", "prometheus");
		idle_scrape(1000);
#endif
out:

	pcpu_family_destroy(responses);
	pcpu_family_destroy(depths);
	pcpu_histogram_destroy(latency);
	pcpu_histogram_destroy(native_latency);
	pcpu_summary_destroy(summary);
	pcpu_counter_destroy(&requests);
	pcpu_counter_double_destroy(&amount);
	pcpu_counter_double_destroy(&level);
	return 0;
}
