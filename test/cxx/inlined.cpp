// SPDX-License-Identifier: MIT
//
// A large function full of the wrappers' hot calls, for check-inlined.sh:
// each must be inlined (PCPU_ALWAYS_INLINE), leaving no out-of-line copy
// for the caller's loop to call: without it g++ -O2 called
// counter_ref::inc() out of line.
#include <percpu/metrics.hpp>

#define TIMES8(x) x x x x x x x x

void percpu_cxx_inlined(percpu::counter_ref c, percpu::counter &owned, percpu::gauge_ref g,
			percpu::gauge_double &d, percpu::histogram_ref h,
			percpu::counter_double &cd, int64_t v);

void percpu_cxx_inlined(percpu::counter_ref c, percpu::counter &owned, percpu::gauge_ref g,
			percpu::gauge_double &d, percpu::histogram_ref h,
			percpu::counter_double &cd, int64_t v)
{
	TIMES8(TIMES8({
		c.add(v);
		c.inc();
		owned.add(v);
		owned.inc();
		g.set(v);
		(void)g.add(v);
		g.inc();
		g.dec();
		d.set(double(v));
		(void)d.add(0.5);
		d.inc();
		d.dec();
		h.observe(v);
		(void)cd.add(0.25);
		cd.inc();
	}))
}
