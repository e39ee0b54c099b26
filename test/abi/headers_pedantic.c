/* SPDX-License-Identifier: MIT */
/*
 * Every public header compiles as strict ISO C with every warning an error
 * (after libevdev's test-compile-pedantic), and the inline fast paths link.
 * Built twice: -std=c11 -pedantic -Werror and -std=c99 -pedantic -Werror.
 */
#include <percpu/common.h>
#include <percpu/arch.h>
#include <percpu/cpu.h>
#include <percpu/counter.h>
#include <percpu/registry.h>
#include <percpu/percpu_counter.h>
#include <percpu/stat.h>

int main(void)
{
	struct pcpu_counter c;
	struct percpu_counter k;
	int ok;

	if (pcpu_counter_init(&c, 1) != 0 || percpu_counter_init(&k, 1, GFP_KERNEL) != 0)
		return 1;
	pcpu_counter_add(&c, 2);
	percpu_counter_add_local(&k, 2);
	ok = pcpu_counter_sum(&c) == 3 && percpu_counter_sum(&k) == 3;
	pcpu_counter_destroy(&c);
	percpu_counter_destroy(&k);
	return ok ? 0 : 1;
}
