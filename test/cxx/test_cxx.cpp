// SPDX-License-Identifier: MIT
//
// The C++ wrappers of <percpu/metrics.hpp>: each wrapper's exposition holds
// the exact values after adds from several threads (a summary's quantiles
// within its alpha of the exact ones), a push sends the registry's
// exposition to a gateway (a stand-in), label values pass
// through string_views that are not NUL-terminated and come out escaped,
// moves hand over ownership once (a double destroy or a leak fails under
// valgrind or ASan), and bad input throws std::system_error with the C
// call's errno.
#include <criterion/criterion.h>

#include <percpu/metrics.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#ifdef PCPU_TEST_HAVE_VALGRIND_H
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#endif

namespace {

// pcpu_test.h's leak check (that header is C only): Criterion ignores how
// a test's child exits, valgrind's --error-exitcode included.
void assert_no_leaks()
{
#ifdef PCPU_TEST_HAVE_VALGRIND_H
	unsigned long leaked = 0, dubious = 0, reachable = 0, suppressed = 0;

	if (!RUNNING_ON_VALGRIND)
		return;
	VALGRIND_DO_LEAK_CHECK;
	VALGRIND_COUNT_LEAKS(leaked, dubious, reachable, suppressed);
	(void)dubious;
	(void)reachable;
	(void)suppressed;
	cr_assert_eq(leaked, 0, "valgrind: %lu bytes definitely lost", leaked);
#endif
}

bool contains(const std::string &text, const std::string &line)
{
	return text.find(line) != std::string::npos;
}

// The errno that @fn throws as std::system_error (0: none thrown).
template <class Fn>
int thrown_errno(Fn fn, std::string *what = nullptr)
{
	try {
		fn();
	} catch (const std::system_error &e) {
		cr_assert(e.code().category() == std::generic_category());
		if (what)
			*what = e.what();
		return e.code().value();
	}
	return 0;
}

const int n_threads = 4;

int iterations()
{
#ifdef PCPU_TEST_HAVE_VALGRIND_H
	if (RUNNING_ON_VALGRIND)
		return 2000;
#endif
	return 200000;
}

template <class Fn>
void on_threads(Fn fn)
{
	std::vector<std::thread> threads;

	for (int t = 0; t < n_threads; t++)
		threads.emplace_back(fn, t);
	for (std::thread &th : threads)
		th.join();
}

} // namespace

Test(cxx, counter_exposition_is_exact_after_adds_from_several_threads)
{
	{
		percpu::registry r;
		percpu::counter requests{percpu::desc("cxx_requests").help("Requests.").in(r)};
		percpu::counter bytes{percpu::desc("cxx_bytes").unit("bytes").in(r)};
		const int n = iterations();

		on_threads([&](int t) {
			for (int i = 0; i < n; i++) {
				requests.inc();
				bytes.add(t + 1);
			}
		});
		const int64_t want_requests = int64_t(n_threads) * n;
		const int64_t want_bytes = int64_t(n) * (n_threads * (n_threads + 1) / 2);
		const std::string text = r.exposition();
		cr_assert(contains(text, "cxx_requests_total " + std::to_string(want_requests) + "\n"),
			  "%s", text.c_str());
		cr_assert(contains(text, "cxx_bytes_total " + std::to_string(want_bytes) + "\n"),
			  "%s", text.c_str());
		cr_assert(contains(text, "# HELP cxx_requests_total Requests.\n"), "%s", text.c_str());
		cr_assert_eq(requests.value(), want_requests);
		// the process's exposition does not hold a registry's metrics
		cr_assert(!contains(percpu::exposition(), "cxx_requests_total"));
	}
	assert_no_leaks();
}

Test(cxx, family_children_cached_per_thread_expose_exact_sums)
{
	{
		percpu::registry r;
		percpu::counter_family by_method{percpu::desc("cxx_http_requests").in(r),
						 {"method", "code"}};
		const int n = iterations();
		const std::string_view methods[] = { "GET", "PUT" };

		on_threads([&](int t) {
			// cached, as prometheus-cpp's Counter&: one lookup per thread
			percpu::counter_ref c = by_method.get({ methods[t % 2], "200" });

			for (int i = 0; i < n; i++)
				c.inc();
			// and looked up at every add, from string_views
			for (int i = 0; i < n / 100; i++)
				by_method.get({ methods[t % 2], "500" }).add(2);
		});
		const int64_t per_method = int64_t(n) * (n_threads / 2);
		const int64_t per_method_500 = int64_t(n / 100) * 2 * (n_threads / 2);
		const std::string text = r.exposition();
		for (std::string_view m : methods) {
			std::string series = "cxx_http_requests_total{code=\"200\",method=\"" +
					     std::string(m) + "\"} ";
			cr_assert(contains(text, series + std::to_string(per_method) + "\n"), "%s",
				  text.c_str());
			series = "cxx_http_requests_total{code=\"500\",method=\"" + std::string(m) +
				 "\"} ";
			cr_assert(contains(text, series + std::to_string(per_method_500) + "\n"),
				  "%s", text.c_str());
		}
		cr_assert_eq(by_method.size(), 4u);
		cr_assert(by_method.remove({ "GET", "500" }));
		cr_assert(!by_method.remove({ "GET", "500" }));
		cr_assert_eq(by_method.size(), 3u);
		cr_assert(!contains(r.exposition(), "code=\"500\",method=\"GET\""));
	}
	assert_no_leaks();
}

Test(cxx, histogram_and_its_family_expose_exact_counts_and_sums)
{
	{
		percpu::registry r;
		const std::vector<int64_t> bounds = { 1000, 10000, 100000 };
		percpu::histogram latency{percpu::desc("cxx_latency_seconds").unit("seconds")
						  .scale(1000000).in(r), bounds};
		percpu::histogram_family sizes{percpu::desc("cxx_size_bytes").in(r), {"route"},
					       bounds};
		const int n = iterations();

		on_threads([&](int t) {
			percpu::histogram_ref child = sizes.get({ t % 2 ? "/a" : "/b" });

			for (int i = 0; i < n; i++) {
				latency.observe(i % 200000);
				child.observe(7);
			}
		});
		// the oracle: the same observations tallied here
		int64_t want_sum = 0;
		uint64_t want_le_1000 = 0;
		for (int i = 0; i < n; i++) {
			want_sum += i % 200000;
			want_le_1000 += i % 200000 <= 1000;
		}
		want_sum *= n_threads;
		want_le_1000 *= n_threads;
		percpu::histogram_snapshot s = latency.snapshot();
		cr_assert_eq(s.count(), uint64_t(n) * n_threads);
		cr_assert_eq(s.sum, want_sum);
		cr_assert_eq(s.counts[0], want_le_1000);
		cr_assert(s.bounds == bounds);
		const std::string text = r.exposition();
		cr_assert(contains(text, "cxx_latency_seconds_count " +
					 std::to_string(uint64_t(n) * n_threads) + "\n"),
			  "%s", text.c_str());
		cr_assert(contains(text, "cxx_latency_seconds_bucket{le=\"0.001\"} " +
					 std::to_string(want_le_1000) + "\n"),
			  "%s", text.c_str());
		cr_assert(contains(text, "cxx_size_bytes_sum{route=\"/a\"} " +
					 std::to_string(7 * int64_t(n) * (n_threads / 2)) + "\n"),
			  "%s", text.c_str());
	}
	assert_no_leaks();
}

Test(cxx, gauges_set_add_and_expose)
{
	{
		percpu::registry r;
		percpu::gauge depth{percpu::desc("cxx_queue_depth").in(r)};
		percpu::gauge_double temp{percpu::desc("cxx_temperature_celsius").unit("celsius")
						  .in(r)};
		percpu::gauge_family pools{percpu::desc("cxx_pool_size").in(r), {"pool"}};
		percpu::gauge build{percpu::desc("cxx_build").kind(PCPU_METRIC_INFO)
					    .labels({ { "version", "1.2.3" } }).in(r)};
		const int n = iterations();

		on_threads([&](int) {
			for (int i = 0; i < n; i++) {
				depth.inc();
				temp.add(0.5);
				pools.get({ "db" }).add(2);
			}
			for (int i = 0; i < n / 2; i++)
				depth.dec();
		});
		cr_assert_eq(depth.value(), int64_t(n_threads) * (n - n / 2));
		pools.get({ "cache" }).set(-5);
		const std::string text = r.exposition();
		cr_assert(contains(text, "cxx_queue_depth " + std::to_string(depth.value()) + "\n"),
			  "%s", text.c_str());
		cr_assert_eq(temp.value(), 0.5 * n * n_threads);
		cr_assert(contains(text, "cxx_pool_size{pool=\"db\"} " +
					 std::to_string(2 * int64_t(n) * n_threads) + "\n"),
			  "%s", text.c_str());
		cr_assert(contains(text, "cxx_pool_size{pool=\"cache\"} -5\n"), "%s", text.c_str());
		cr_assert(contains(text, "cxx_build_info{version=\"1.2.3\"} 1\n"), "%s",
			  text.c_str());
	}
	assert_no_leaks();
}

Test(cxx, label_values_from_views_that_are_not_nul_terminated_are_escaped)
{
	{
		percpu::registry r({ { "tenant", std::string_view("a\"b|tail", 3) } });
		percpu::counter_family f{percpu::desc("cxx_escaped").in(r), {"path"}};
		// a view of 7 bytes into a longer buffer: quote, backslash, newline
		const std::string buffer = "x\"y\\z\nw|NOT-PART-OF-IT";
		const std::string_view value(buffer.data(), 7);

		f.get({ value }).add(3);
		// a view of a view: the same tuple, the same child
		f.get({ std::string_view(buffer).substr(0, 7) }).add(4);
		const std::string text = r.exposition();
		cr_assert(contains(text, "cxx_escaped_total{path=\"x\\\"y\\\\z\\nw\",tenant=\"a\\\"b\"} 7\n"),
			  "%s", text.c_str());
		cr_assert(!contains(text, "|"), "%s", text.c_str());
		cr_assert(!contains(text, "tail"), "%s", text.c_str());
		// long values go through the heap copy: 300 bytes of one view
		const std::string long_value(300, 'v');
		f.get({ std::string_view(long_value) }).inc();
		cr_assert(contains(r.exposition(), "path=\"" + long_value + "\""));
	}
	assert_no_leaks();
}

Test(cxx, a_nul_byte_in_a_label_value_is_a_refused_tuple)
{
	{
		percpu::registry r;
		percpu::counter_family f{percpu::desc("cxx_nul").in(r), {"k"}};
		const std::string_view with_nul("a\0b", 3);

		// not "a": the C string would stop there
		cr_assert_eq(thrown_errno([&] { (void)f.get({ with_nul }); }), EINVAL);
		cr_assert_eq(f.size(), 0u);
		cr_assert_eq(f.refused(), 1u);
		// with an overflow child, the refused tuple counts there, as in C
		f.set_overflow({ "other" });
		f.get({ with_nul }).add(5);
		cr_assert_eq(f.refused(), 2u);
		const std::string text = r.exposition();
		cr_assert(contains(text, "cxx_nul_total{k=\"other\"} 5\n"), "%s", text.c_str());
		cr_assert_eq(thrown_errno([&] {
				     percpu::counter c{percpu::desc(std::string_view("cxx_n\0ul", 8))
							       .in(r)};
			     }),
			     EINVAL);
		cr_assert_eq(thrown_errno([&] {
				     percpu::counter c{percpu::desc("cxx_nul2")
							       .labels({ { "k", std::string_view("\0", 1) } })
							       .in(r)};
			     }),
			     EINVAL);
	}
	assert_no_leaks();
}

Test(cxx, moves_hand_over_ownership_once)
{
	{
		percpu::registry r;
		std::vector<percpu::counter> counters;

		// reallocations move every element: each is destroyed once
		for (int i = 0; i < 20; i++) {
			counters.emplace_back(percpu::desc("cxx_moved_" + std::to_string(i)).in(r));
			counters.back().add(i);
		}
		std::string text = r.exposition();
		for (int i = 0; i < 20; i++)
			cr_assert(contains(text, "cxx_moved_" + std::to_string(i) + "_total " +
						 std::to_string(i) + "\n"),
				  "%s", text.c_str());

		// move assignment destroys the target's metric, keeps the source's
		percpu::counter a{percpu::desc("cxx_a").in(r)};
		percpu::counter b{percpu::desc("cxx_b").in(r)};
		b.add(9);
		a = std::move(b);
		cr_assert(!b);
		cr_assert_eq(a.value(), 9);
		text = r.exposition();
		cr_assert(!contains(text, "cxx_a_total"), "%s", text.c_str());
		cr_assert(contains(text, "cxx_b_total 9\n"), "%s", text.c_str());
		// the name is free again once its owner is gone
		percpu::counter again{percpu::desc("cxx_a").in(r)};

		percpu::gauge g1{percpu::desc("cxx_g").in(r)};
		percpu::gauge g2 = std::move(g1);
		g2.set(4);
		percpu::histogram h1{percpu::desc("cxx_h").in(r), { 1 }};
		percpu::histogram h2{std::move(h1)};
		h2.observe(1);
		percpu::counter_family f1{percpu::desc("cxx_f").in(r), {"k"}};
		percpu::counter_family f2{std::move(f1)};
		f2.get({ "v" }).inc();
		percpu::gauge_double d1{percpu::desc("cxx_d").in(r)};
		percpu::gauge_double d2{std::move(d1)};
		d2.set(1.5);
		text = r.exposition();
		cr_assert(contains(text, "cxx_g 4\n") && contains(text, "cxx_h_count 1\n") &&
				  contains(text, "cxx_f_total{k=\"v\"} 1\n") && contains(text, "cxx_d 1.5\n"),
			  "%s", text.c_str());
		counters.clear();
		cr_assert(!contains(r.exposition(), "cxx_moved_"));

		// a registry moves too; its metrics follow it
		percpu::registry r2({ { "tenant", "t" } });
		percpu::counter in_r2{percpu::desc("cxx_in_r2").in(r2)};
		percpu::registry r3{std::move(r2)};
		cr_assert(contains(r3.exposition(), "cxx_in_r2_total{tenant=\"t\"} 0\n"));
		cr_assert_null(r2.get());
	}
	assert_no_leaks();
}

Test(cxx, bad_input_throws_the_c_calls_errno)
{
	{
		percpu::registry r;
		std::string what;

		cr_assert_eq(thrown_errno([&] { percpu::counter c{percpu::desc("1bad").in(r)}; },
					  &what),
			     EINVAL);
		cr_assert(contains(what, "pcpu_counter_register"), "%s", what.c_str());
		cr_assert_eq(thrown_errno([&] {
				     percpu::counter c{percpu::desc("cxx_x").unit("bytes").in(r)};
			     }),
			     EINVAL);
		percpu::counter dup{percpu::desc("cxx_dup").in(r)};
		cr_assert_eq(thrown_errno([&] { percpu::counter c{percpu::desc("cxx_dup").in(r)}; }),
			     EEXIST);
		cr_assert_eq(thrown_errno([&] { percpu::gauge g{percpu::desc("cxx_dup").in(r)}; }),
			     EEXIST);
		struct pcpu_counter_options bad_opts = {};
		bad_opts.accuracy = -1;
		cr_assert_eq(thrown_errno([&] { percpu::counter c{percpu::desc("cxx_o").in(r),
								   &bad_opts}; },
					  &what),
			     EINVAL);
		cr_assert(contains(what, "pcpu_counter_init_opts"), "%s", what.c_str());
		cr_assert_eq(thrown_errno([&] {
				     percpu::histogram h{percpu::desc("cxx_h").in(r), { 5, 5 }};
			     }),
			     EINVAL);
		cr_assert_eq(thrown_errno([&] {
				     percpu::counter_family f{percpu::desc("cxx_f").in(r), {}};
			     }),
			     EINVAL);
		cr_assert_eq(thrown_errno([&] {
				     percpu::registry bad({ { "le", "1" } });
			     }),
			     EINVAL);

		percpu::counter_family f{percpu::desc("cxx_cap").in(r), {"a", "b"}, 2};
		cr_assert_eq(thrown_errno([&] { (void)f.get({ "only-one" }); }), EINVAL);
		cr_assert_eq(thrown_errno([&] { (void)f.get({ "x", "\xff" }); }), EINVAL);
		(void)f.get({ "1", "1" });
		(void)f.get({ "2", "2" });
		cr_assert_eq(thrown_errno([&] { (void)f.get({ "3", "3" }); }), E2BIG);
		cr_assert_eq(f.size(), 2u);
		cr_assert_eq(thrown_errno([&] { f.set_overflow({ "o" }); }), EINVAL);
		// exemplars with a bad label name
		percpu::counter c{percpu::desc("cxx_ex").in(r)};
		cr_assert_eq(thrown_errno([&] { c.add_exemplar(1, { { "0bad", "v" } }); }), EINVAL);
		cr_assert_eq(c.value(), 1); // the add counts whatever the exemplar
		c.add_exemplar(2, { { "trace_id", "abc" } });
		const std::string om = r.exposition(PCPU_METRICS_OPENMETRICS);
		cr_assert(contains(om, "cxx_ex_total 3 # {trace_id=\"abc\"} 2"), "%s", om.c_str());
	}
	assert_no_leaks();
}

Test(cxx, exposition_is_the_c_calls_bytes_in_every_format)
{
	{
		percpu::registry r({ { "r", "1" } });
		percpu::counter c{percpu::desc("cxx_fmt").help("Help.").in(r)};
		percpu::histogram h{percpu::desc("cxx_fmt_hist").in(r), { 10, 20 }};

		c.add(42);
		h.observe(15);
		for (enum pcpu_metrics_format f : { PCPU_METRICS_PROMETHEUS, PCPU_METRICS_OPENMETRICS,
						    PCPU_METRICS_PROTOBUF }) {
			char *buf = nullptr;
			size_t len = 0;
			FILE *out = open_memstream(&buf, &len);

			cr_assert_not_null(out);
			cr_assert_eq(pcpu_metrics_registry_write(r.get(), out, f), 0);
			fclose(out);
			const std::string want(buf, len);
			free(buf);
			cr_assert(r.exposition(f) == want, "format %d differs", int(f));
		}
	}
	assert_no_leaks();
}

namespace {

// The body of GET /metrics from 127.0.0.1:@port (the whole response).
std::string http_get(unsigned int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {};
	std::string response;
	char buf[4096];
	ssize_t n;

	cr_assert_geq(fd, 0);
	a.sin_family = AF_INET;
	a.sin_port = htons(uint16_t(port));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, reinterpret_cast<struct sockaddr *>(&a), sizeof(a)), 0);
	const std::string request = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
	cr_assert_eq(write(fd, request.data(), request.size()), ssize_t(request.size()));
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		response.append(buf, size_t(n));
	close(fd);
	return response;
}

} // namespace

Test(cxx, server_serves_its_registry_until_destroyed)
{
	{
		percpu::registry r;
		percpu::counter c{percpu::desc("cxx_served").in(r)};

		c.add(11);
#ifdef PCPU_TEST_HAVE_MICROHTTPD
		unsigned int port;
		{
			percpu::server s{"127.0.0.1", 0, &r};
			port = s.port();
			cr_assert_gt(port, 0u);
			const std::string response = http_get(port);
			cr_assert(contains(response, "200 OK"), "%s", response.c_str());
			cr_assert(contains(response, "\ncxx_served_total 11\n"), "%s", response.c_str());
			percpu::server moved{std::move(s)};
			cr_assert_eq(moved.port(), port);
		}
		// stopped: the port is free again
		percpu::server again{"127.0.0.1", port, &r};
		cr_assert_eq(again.port(), port);
		cr_assert_eq(thrown_errno([&] { percpu::server s{"not-an-address", 0}; }), EINVAL);
#else
		cr_assert_eq(thrown_errno([&] { percpu::server s{"127.0.0.1", 0, &r}; }), ENOTSUP);
#endif
	}
	assert_no_leaks();
}

Test(cxx, counters_and_gauges_of_doubles_are_exact_after_adds_from_several_threads)
{
	{
		percpu::registry r;
		percpu::counter_double paid{percpu::desc("cxx_paid_dollars").unit("dollars").in(r)};
		percpu::counter_double level{percpu::desc("cxx_level").kind(PCPU_METRIC_GAUGE).in(r)};
		const int n = iterations();

		on_threads([&](int) {
			for (int i = 0; i < n; i++) {
				cr_assert(paid.add(0.25));
				level.add(0.5);
				level.add(-0.25);
			}
		});
		// 0.25 is a whole number of units: the sums are exact, n is a multiple of 4
		const int64_t want = int64_t(n) * n_threads / 4;
		cr_assert_eq(paid.value(), double(want));
		cr_assert_eq(level.value(), double(want));
		const std::string text = r.exposition();
		cr_assert(contains(text, "cxx_paid_dollars_total " + std::to_string(want) + "\n"), "%s",
			  text.c_str());
		cr_assert(contains(text, "cxx_level " + std::to_string(want) + "\n"), "%s",
			  text.c_str());
		// a counter never goes down: refused, counted, nothing added
		cr_assert(!paid.add(-1));
		cr_assert(!paid.add(std::nan("")));
		cr_assert_eq(paid.refused(), 2u);
		cr_assert(level.add(-1.5));
		cr_assert_eq(level.refused(), 0u);
		paid.inc();
		cr_assert_eq(paid.value(), double(want + 1));
		// moves hand it over once
		percpu::counter_double moved{std::move(paid)};
		cr_assert(!paid);
		cr_assert(contains(r.exposition(), "cxx_paid_dollars_total " + std::to_string(want + 1)));
		cr_assert_eq(thrown_errno([&] {
				     percpu::counter_double c{percpu::desc("cxx_cd").scale(-1).in(r)};
			     }),
			     EINVAL);
		cr_assert_eq(thrown_errno([&] {
				     percpu::counter_double c{percpu::desc("cxx_level").in(r)};
			     }),
			     EEXIST);
	}
	assert_no_leaks();
}

Test(cxx, summaries_and_their_family_keep_the_guarantee_and_exact_counts)
{
	{
		percpu::registry r;
		percpu::summary latency{percpu::desc("cxx_rpc_seconds").unit("seconds")
						.scale(1000000).in(r),
					percpu::summary_options({ 0.5, 0.9, 0.99 }).forever()};
		percpu::summary_family sizes{percpu::desc("cxx_op_bytes").in(r), {"op"},
					     percpu::summary_options({ 0.5 }).forever()};
		const int n = iterations(); // a multiple of 1000

		on_threads([&](int t) {
			percpu::summary_ref child = sizes.get({ t % 2 ? "get" : "put" });

			for (int i = 0; i < n; i++) {
				cr_assert(latency.observe(i % 1000 + 1)); // 1 to 1000 us, evenly
				child.observe(7 + t % 2);
			}
		});
		// the oracle: N observations, N / 1000 of each of 1 .. 1000
		const uint64_t total = uint64_t(n) * n_threads, each = total / 1000;
		for (double q : { 0.0, 0.01, 0.5, 0.9, 0.99, 1.0 }) {
			uint64_t rank = std::max<uint64_t>(1, uint64_t(std::ceil(q * double(total))));
			double x = double((rank + each - 1) / each) / 1e6, v = latency.quantile(q);

			cr_assert(std::fabs(v - x) <= latency.alpha() * x * (1 + 1e-12),
				  "q %g: %.17g is not within %g of %.17g", q, v, latency.alpha(), x);
		}
		cr_assert_eq(latency.count(), total);
		cr_assert_eq(latency.sum(), int64_t(n_threads) * (n / 1000) * 500500);
		const percpu::summary_ref put = sizes.get({ "put" });
		cr_assert_eq(put.count(), total / 2);
		cr_assert(std::fabs(put.quantile(0.5) - 7) <= put.alpha() * 7);
		cr_assert(std::fabs(sizes.get({ "get" }).quantile(0.5) - 8) <= put.alpha() * 8);
		const std::string text = r.exposition();
		cr_assert(contains(text, "# TYPE cxx_rpc_seconds summary\n"), "%s", text.c_str());
		cr_assert(contains(text, "cxx_rpc_seconds_count " + std::to_string(total) + "\n"), "%s",
			  text.c_str());
		cr_assert(contains(text, "cxx_rpc_seconds{quantile=\"0.99\"} "), "%s", text.c_str());
		cr_assert(contains(text, "cxx_op_bytes_count{op=\"get\"} " + std::to_string(total / 2) +
						 "\n"),
			  "%s", text.c_str());
		cr_assert(contains(text, "cxx_op_bytes{op=\"put\",quantile=\"0.5\"} "), "%s",
			  text.c_str());
		// seconds in, microseconds counted
		cr_assert(latency.observe_double(0.5));
		cr_assert_eq(latency.sum(), int64_t(n_threads) * (n / 1000) * 500500 + 500000);
		cr_assert_eq(sizes.size(), 2u);
		cr_assert(sizes.remove({ "get" }));
		cr_assert_eq(sizes.size(), 1u);
		sizes.reclaim();
		cr_assert(!contains(r.exposition(), "op=\"get\""));
		// moves hand them over once
		percpu::summary moved{std::move(latency)};
		cr_assert(!latency);
		percpu::summary_family moved_family{std::move(sizes)};
		cr_assert(contains(r.exposition(), "cxx_op_bytes_count{op=\"put\"}"));
		cr_assert_eq(moved.count(), total + 1);

		// bad input
		cr_assert(!moved.observe(-1));
		cr_assert(!moved.observe_double(-0.5));
		cr_assert_eq(thrown_errno([&] { (void)moved.quantile(1.5); }), EINVAL);
		std::string what;
		cr_assert_eq(thrown_errno([&] {
				     percpu::summary s{percpu::desc("cxx_s").in(r),
						       percpu::summary_options({ 0.9, 0.5 })};
			     },
					  &what),
			     EINVAL);
		cr_assert(contains(what, "pcpu_summary_create"), "%s", what.c_str());
		cr_assert_eq(thrown_errno([&] {
				     percpu::summary s{percpu::desc("cxx_s").in(r),
						       percpu::summary_options().alpha(0.01)};
			     }),
			     ERANGE);
		cr_assert_eq(thrown_errno([&] {
				     percpu::summary s{percpu::desc("cxx_s").in(r),
						       percpu::summary_options().max_age(
							       std::chrono::nanoseconds(-1))};
			     }),
			     EINVAL);
		cr_assert_eq(thrown_errno([&] {
				     percpu::summary_family f{percpu::desc("cxx_sf").in(r),
							      {"quantile"}};
			     },
					  &what),
			     EINVAL);
		cr_assert(contains(what, "pcpu_family_create_summary"), "%s", what.c_str());
		cr_assert_eq(thrown_errno([&] { (void)moved_family.get({ "a", "b" }); }), EINVAL);
	}
	assert_no_leaks();
}

#ifdef PCPU_TEST_HAVE_CURL
namespace {

// A Pushgateway stand-in on 127.0.0.1: answers one request with @status
// and @body, and keeps the request (head and body) for the test.
class fake_gateway {
public:
	fake_gateway(int status, std::string body) : status_(status), body_(std::move(body))
	{
		struct sockaddr_in a = {};
		socklen_t len = sizeof(a);

		fd_ = socket(AF_INET, SOCK_STREAM, 0);
		cr_assert_geq(fd_, 0);
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		cr_assert_eq(bind(fd_, reinterpret_cast<struct sockaddr *>(&a), sizeof(a)), 0);
		cr_assert_eq(listen(fd_, 1), 0);
		cr_assert_eq(getsockname(fd_, reinterpret_cast<struct sockaddr *>(&a), &len), 0);
		port_ = ntohs(a.sin_port);
		thread_ = std::thread([this] { serve(); });
	}
	~fake_gateway()
	{
		if (thread_.joinable())
			thread_.join();
		close(fd_);
	}
	std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
	// The request, once answered.
	const std::string &request()
	{
		thread_.join();
		return request_;
	}

private:
	void serve()
	{
		struct pollfd p = { fd_, POLLIN, 0 };

		if (poll(&p, 1, 10000) != 1)
			return; // nobody came: request() is empty
		int c = accept(fd_, nullptr, nullptr);
		struct timeval tv = { 10, 0 };
		char buf[4096];
		ssize_t n;

		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		// the head, then Content-Length bytes of body
		while (request_.find("\r\n\r\n") == std::string::npos &&
		       (n = read(c, buf, sizeof(buf))) > 0)
			request_.append(buf, size_t(n));
		std::size_t head = request_.find("\r\n\r\n"), at = request_.find("Content-Length: ");
		std::size_t want = at == std::string::npos ? 0 : std::stoul(request_.substr(at + 16));
		while (head != std::string::npos && request_.size() < head + 4 + want &&
		       (n = read(c, buf, sizeof(buf))) > 0)
			request_.append(buf, size_t(n));
		const std::string reply = "HTTP/1.1 " + std::to_string(status_) +
					  " X\r\nContent-Length: " + std::to_string(body_.size()) +
					  "\r\nConnection: close\r\n\r\n" + body_;
		(void)!write(c, reply.data(), reply.size());
		close(c);
	}

	int fd_;
	unsigned int port_;
	int status_;
	std::string body_, request_;
	std::thread thread_;
};

bool starts_with(const std::string &s, const std::string &prefix)
{
	return s.compare(0, prefix.size(), prefix) == 0;
}

} // namespace
#endif

Test(cxx, gateway_pushes_the_registrys_exposition_or_throws_the_c_calls_errno)
{
	{
		percpu::registry r;
		percpu::counter pushed{percpu::desc("cxx_pushed").in(r)};

		pushed.add(5);
		// checked before anything is sent, with or without libcurl
		cr_assert_eq(thrown_errno([&] { percpu::gateway("http://127.0.0.1:1", "", {}, &r).push(); }),
			     EINVAL);
		cr_assert_eq(thrown_errno([&] {
				     percpu::gateway g{std::string_view("http://x\0", 9), "job"};
			     }),
			     EINVAL);
#ifdef PCPU_TEST_HAVE_CURL
		{
			fake_gateway gw(200, "");
			percpu::gateway g{gw.url(), "cxx_job", { { "instance", "i1" } }, &r};

			g.push();
			const std::string &req = gw.request();
			cr_assert(starts_with(req, "PUT /metrics/job/cxx_job/instance/i1 HTTP/1.1\r\n"),
				  "%s", req.c_str());
			cr_assert(contains(req, "\r\n\r\n") && contains(req, "\ncxx_pushed_total 5\n"),
				  "%s", req.c_str());
		}
		{
			fake_gateway gw(202, "");
			percpu::gateway g{gw.url(), "cxx_job", {}, &r};

			g.basic_auth("u", "p").timeout(std::chrono::seconds(5)).remove();
			const std::string &req = gw.request();
			cr_assert(starts_with(req, "DELETE /metrics/job/cxx_job HTTP/1.1\r\n"), "%s",
				  req.c_str());
			cr_assert(contains(req, "Authorization: Basic dTpw\r\n"), "%s", req.c_str());
		}
		{
			fake_gateway gw(400, "pushed metrics are invalid or inconsistent");
			percpu::gateway g{gw.url(), "cxx_job", {}, &r};
			std::string what;

			cr_assert_eq(thrown_errno([&] { g.push_add(); }, &what), EBADMSG);
			cr_assert(starts_with(gw.request(), "POST /metrics/job/cxx_job HTTP/1.1\r\n"));
			cr_assert(contains(what, "HTTP 400") && contains(what, "inconsistent"), "%s",
				  what.c_str());
		}
		{
			// a port that nothing listens on any more
			unsigned int port;
			{
				fake_gateway gw(200, "");
				port = unsigned(std::stoul(gw.url().substr(17)));
				percpu::gateway(gw.url(), "cxx_job", {}, &r).push(); // its one request
			}
			percpu::gateway g{"http://127.0.0.1:" + std::to_string(port), "cxx_job", {}, &r};
			cr_assert_eq(thrown_errno([&] { g.push(); }), ECONNREFUSED);
		}
#else
		cr_assert_eq(thrown_errno([&] { percpu::gateway("http://127.0.0.1:1", "j", {}, &r).push(); }),
			     ENOTSUP);
#endif
	}
	assert_no_leaks();
}

namespace {

// How many times @p what occurs in @p text.
std::size_t occurrences(const std::string &text, const std::string &what)
{
	std::size_t n = 0;

	for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
		n++;
	return n;
}

} // namespace

Test(cxx, a_curried_views_get_is_the_familys_get_of_the_whole_tuple)
{
	{
		percpu::registry r;
		percpu::counter_family f{percpu::desc("cxx_cur").in(r), {"method", "code", "region"}};
		// a child that a get ignoring the fixed values could hit instead
		f.get({ "POST", "500", "eu" }).add(100);
		// fixed out of the family's order: the view puts them in place
		percpu::curried<percpu::counter_ref> get200 = f.curry({ { "code", "200" },
									{ "method", "GET" } });
		auto in_eu = f.curry({ { "region", "eu" } });
		auto all = f.curry({ { "region", "eu" }, { "method", "GET" }, { "code", "200" } });
		auto none = f.curry({});

		percpu::counter_ref c = get200.get({ "eu" });
		cr_assert_eq(c.get(), f.get({ "GET", "200", "eu" }).get());
		cr_assert_eq(in_eu.get({ "GET", "200" }).get(), c.get());
		cr_assert_eq(all.get({}).get(), c.get());
		cr_assert_eq(none.get({ "GET", "200", "eu" }).get(), c.get());
		cr_assert_neq(in_eu.get({ "POST", "500" }).get(), c.get());
		cr_assert_eq(in_eu.get({ "POST", "500" }).value(), 100);
		c.add(3);
		get200.get({ "eu" }).inc();
		cr_assert_eq(f.get({ "GET", "200", "eu" }).value(), 4);
		cr_assert_eq(f.size(), 2u);
		const std::string text = r.exposition();
		cr_assert_eq(occurrences(text, "{code=\"200\",method=\"GET\",region=\"eu\"}"), 1u,
			     "%s", text.c_str());
		cr_assert(contains(text, "cxx_cur_total{code=\"200\",method=\"GET\",region=\"eu\"} 4\n"),
			  "%s", text.c_str());

		// each kind of family's view returns its family's child
		percpu::gauge_family gf{percpu::desc("cxx_cur_g").in(r), {"a", "b"}};
		percpu::histogram_family hf{percpu::desc("cxx_cur_h").in(r), {"a", "b"}, { 10 }};
		percpu::summary_family sf{percpu::desc("cxx_cur_s").in(r), {"a", "b"}};
		auto gv = gf.curry({ { "b", "2" } });
		auto hv = hf.curry({ { "a", "1" } });
		auto sv = sf.curry({ { "b", "2" } });
		gv.get({ "1" }).set(7);
		cr_assert_eq(gf.get({ "1", "2" }).value(), 7);
		cr_assert_eq(hv.get({ "2" }).get(), hf.get({ "1", "2" }).get());
		cr_assert_eq(sv.get({ "1" }).get(), sf.get({ "1", "2" }).get());
		cr_assert_eq(hf.size(), 1u);

		// a moved view owns the C view once; the moved-from one owns nothing
		percpu::curried<percpu::counter_ref> moved{std::move(get200)};
		cr_assert_null(get200.get());
		cr_assert_eq(moved.get({ "eu" }).get(), c.get());
		get200 = std::move(in_eu);
		cr_assert_eq(get200.get({ "GET", "200" }).get(), c.get());

		// refusals as the family's get: the cap, the overflow child
		percpu::counter_family capped{percpu::desc("cxx_cur_cap").in(r), {"a", "b"}, 1};
		auto capped_a = capped.curry({ { "a", "x" } });
		(void)capped_a.get({ "1" });
		cr_assert_eq(thrown_errno([&] { (void)capped_a.get({ "2" }); }), E2BIG);
		capped.set_overflow({ "o", "o" });
		cr_assert_eq(capped_a.get({ "3" }).get(), capped.get({ "o", "o" }).get());
		cr_assert_eq(capped_a.get({ std::string_view("\0", 1) }).get(),
			     capped.get({ "o", "o" }).get());
	}
	assert_no_leaks();
}

Test(cxx, curry_and_a_views_get_throw_the_c_calls_errno)
{
	{
		percpu::registry r;
		percpu::counter_family f{percpu::desc("cxx_cur_bad").labels({ { "env", "prod" } }).in(r),
					 {"a", "b"}};
		std::string what;

		cr_assert_eq(thrown_errno([&] { (void)f.curry({ { "nope", "1" } }); }, &what), EINVAL);
		cr_assert(contains(what, "pcpu_family_curry"), "%s", what.c_str());
		cr_assert_eq(thrown_errno([&] { (void)f.curry({ { "env", "prod" } }); }), EINVAL);
		cr_assert_eq(thrown_errno([&] { (void)f.curry({ { "a", "1" }, { "a", "2" } }); }),
			     EINVAL);
		cr_assert_eq(thrown_errno([&] { (void)f.curry({ { "a", "\xff" } }); }), EINVAL);
		cr_assert_eq(thrown_errno([&] { (void)f.curry({ { "a", std::string_view("\0", 1) } }); }),
			     EINVAL);
		auto v = f.curry({ { "a", "1" } });
		cr_assert_eq(thrown_errno([&] { (void)v.get({}); }, &what), EINVAL);
		cr_assert(contains(what, "pcpu_family_curried_get"), "%s", what.c_str());
		cr_assert_eq(thrown_errno([&] { (void)v.get({ "2", "3" }); }), EINVAL);
		cr_assert_eq(thrown_errno([&] { (void)v.get({ "\xff" }); }), EINVAL);
		cr_assert_eq(f.size(), 0u);
		cr_assert_eq(f.refused(), 3u);
	}
	assert_no_leaks();
}

Test(cxx, remove_matching_removes_exactly_the_matching_children)
{
	{
		percpu::registry r;
		percpu::counter_family f{percpu::desc("cxx_rm").in(r), {"method", "code"}};
		auto get = f.curry({ { "method", "GET" } });

		f.get({ "GET", "200" }).add(1);
		f.get({ "GET", "500" }).add(2);
		f.get({ "POST", "200" }).add(3);
		f.get({ "POST", "500" }).add(4);
		f.set_overflow({ "other", "other" });
		cr_assert_eq(f.size(), 5u);

		cr_assert_eq(f.remove_matching({ { "code", "200" } }), 2u);
		cr_assert_eq(f.size(), 3u);
		std::string text = r.exposition();
		cr_assert(!contains(text, "code=\"200\""), "%s", text.c_str());
		cr_assert(contains(text, "cxx_rm_total{code=\"500\",method=\"GET\"} 2\n"), "%s",
			  text.c_str());
		cr_assert(contains(text, "cxx_rm_total{code=\"500\",method=\"POST\"} 4\n"), "%s",
			  text.c_str());
		cr_assert_eq(f.remove_matching({ { "code", "500" }, { "method", "GET" } }), 1u);
		cr_assert_eq(f.remove_matching({ { "method", "PUT" } }), 0u);
		text = r.exposition();
		cr_assert(!contains(text, "method=\"GET\""), "%s", text.c_str());
		cr_assert(contains(text, "cxx_rm_total{code=\"500\",method=\"POST\"} 4\n"), "%s",
			  text.c_str());

		std::string what;
		cr_assert_eq(thrown_errno([&] { (void)f.remove_matching({ { "nope", "1" } }); }, &what),
			     EINVAL);
		cr_assert(contains(what, "pcpu_family_remove_matching"), "%s", what.c_str());
		cr_assert_eq(thrown_errno([&] {
				     (void)f.remove_matching({ { "code", std::string_view("5\0", 2) } });
			     }),
			     EINVAL);
		cr_assert_eq(f.size(), 2u);
		f.reclaim();

		// the view outlives the removal of its children: a new child at 0
		cr_assert_eq(get.get({ "200" }).value(), 0);
		get.get({ "200" }).inc();
		cr_assert(contains(r.exposition(), "cxx_rm_total{code=\"200\",method=\"GET\"} 1\n"));
		// {}: every child but the overflow one
		cr_assert_eq(f.remove_matching({}), 2u);
		cr_assert_eq(f.size(), 1u);
		f.reclaim();
	}
	assert_no_leaks();
}
