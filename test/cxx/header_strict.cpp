// SPDX-License-Identifier: MIT
//
// <percpu/metrics.hpp> compiles warning-free at the strictest settings a
// daemon may build with (-std=c++17 -Wall -Wextra -Wpedantic -Werror, and
// -Wshadow; with and without exceptions),
// every class and member used once; and runs: exit 0 when each value read
// back is the one added. With an argument, it registers a bad name: built
// without exceptions, that must print the error and abort.
#include <percpu/metrics.hpp>

int main(int argc, char **)
{
	if (argc > 1)
		percpu::counter bad{percpu::desc("1bad")};
	percpu::registry r({ { "tenant", "strict" } });
	percpu::counter c{percpu::desc("strict_requests").help("Requests.").in(r)};
	percpu::counter up_down{percpu::desc("strict_inflight").kind(PCPU_METRIC_GAUGE).in(r)};
	percpu::gauge g{percpu::desc("strict_depth").in(r)};
	percpu::gauge_double d{percpu::desc("strict_ratio").in(r)};
	percpu::histogram h{percpu::desc("strict_latency_seconds").unit("seconds")
				    .scale(1000000000).in(r), { 1000000, 10000000 }};
	percpu::counter_family cf{percpu::desc("strict_codes").in(r), {"code"}};
	percpu::gauge_family gf{percpu::desc("strict_pool").in(r), {"pool"}};
	percpu::histogram_family hf{percpu::desc("strict_size_bytes").in(r), {"route"}, { 10 }};
	percpu::counter_double paid{percpu::desc("strict_paid").in(r)};
	percpu::summary rpc{percpu::desc("strict_rpc_seconds").scale(1000000000).in(r),
			    percpu::summary_options({ 0.5, 0.99 })
				    .max_age(std::chrono::seconds(60))
				    .age_buckets(5)
				    .alpha(0.05)
				    .min(0)
				    .max(INT64_C(1) << 40)};
	percpu::summary_family sf{percpu::desc("strict_op_bytes").in(r), {"op"},
				  percpu::summary_options({ 0.9 }).forever()};
	percpu::gateway push{"http://127.0.0.1:9091", "strict", { { "instance", "a" } }, &r};

	c.inc();
	c.add(2);
	up_down.add(-1);
	g.set(5);
	g.inc();
	g.dec();
	d.set(0.25);
	d.add(0.5);
	h.observe(2000000);
	percpu::counter_ref child = cf.get({ "200" });
	child.inc();
	percpu::curried<percpu::gauge_ref> pools = gf.curry({ { "pool", "db" } });
	pools.get({}).set(3);
	auto routes = hf.curry({});
	gf.get({ "db" }).set(3);
	percpu::histogram_ref sizes = hf.get({ "/" });
	sizes.observe(4);
	cf.set_overflow({ "other" });
	paid.add(0.25);
	paid.inc();
	rpc.observe(1000);
	rpc.observe_double(0.5);
	percpu::summary_ref op = sf.curry({ { "op", "get" } }).get({});
	op.observe(3);
	push.basic_auth("u", "p").format(PCPU_METRICS_PROTOBUF).timeout(std::chrono::seconds(1));
	bool ok = c.value() == 3 && c.read() <= 3 && up_down.value() == -1 && g.value() == 5 &&
		  d.value() > 0.7 && h.snapshot().count() == 1 && child.value() == 1 &&
		  gf.get({ "db" }).value() == 3 && sizes.snapshot().sum == 4 && cf.size() == 2 &&
		  cf.refused() == 0 && cf.remove({ "200" }) &&
		  routes.get({ "/" }).get() == sizes.get() &&
		  hf.remove_matching({ { "route", "/" } }) == 1 && !r.exposition().empty() &&
		  !percpu::exposition(PCPU_METRICS_OPENMETRICS).empty() && paid.value() == 1.25 &&
		  paid.refused() == 0 && rpc.count() == 2 && rpc.sum() == 500001000 &&
		  rpc.quantile(1) > 0.45 && rpc.alpha() <= 0.05 && op.count() == 1 && sf.size() == 1;
	cf.reclaim();
	return ok && c && child && sizes && gf.get() && r.get() && paid.get() && rpc && op &&
			       sf.get() && pools.get() ?
		       0 :
		       1;
}
