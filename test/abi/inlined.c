/* SPDX-License-Identifier: MIT */
/*
 * A large function full of the inline fast paths, for check-inlined.sh:
 * each must be inlined into it (PCPU_INLINE, <percpu/common.h>) at any
 * optimisation level, leaving no local copy in the object. In a function
 * this large gcc had stopped inlining pcpu_counter_add() at -O2.
 */
#include <percpu/charge.h>
#include <percpu/counter.h>
#include <percpu/counter_double.h>
#include <percpu/percpu_counter.h>
#include <percpu/shared.h>
#include <percpu/stat.h>

#define TIMES8(x) x x x x x x x x

void pcpu_abi_inlined(struct pcpu_counter *c, struct percpu_counter *k, struct pcpu_stat *s,
		      struct pcpu_charge *ch, struct pcpu_shared *sh, int64_t v,
		      struct pcpu_counter_double *d);

void pcpu_abi_inlined(struct pcpu_counter *c, struct percpu_counter *k, struct pcpu_stat *s,
		      struct pcpu_charge *ch, struct pcpu_shared *sh, int64_t v,
		      struct pcpu_counter_double *d)
{
	TIMES8(TIMES8({
		pcpu_counter_add(c, v);
		pcpu_counter_add_batch(c, v, 64);
		percpu_counter_add(k, v);
		percpu_counter_inc(k);
		percpu_counter_dec(k);
		percpu_counter_sub(k, v);
		percpu_counter_add_local(k, v);
		percpu_counter_sub_local(k, v);
		percpu_counter_add_batch(k, v, 64);
		pcpu_stat_add(s, 1, v);
		if (pcpu_charge_try(ch, v))
			pcpu_charge_uncharge(ch, v);
		pcpu_shared_add(sh, 2, v);
		pcpu_counter_double_add(d, (double)v * 1e-3);
	}))
}
