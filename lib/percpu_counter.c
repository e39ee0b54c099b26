/* SPDX-License-Identifier: MIT */
/*
 * The one piece of the kernel drop-in that is not inline: the global
 * percpu_counter_batch, which the kernel computes at boot.
 */
#include <percpu/percpu_counter.h>

PCPU_EXPORT int percpu_counter_batch = 32;

__attribute__((constructor)) static void compute_percpu_counter_batch(void)
{
	unsigned int online = pcpu_cpu_online();

	percpu_counter_batch = 2 * online > 32 ? 2 * (int)online : 32;
}
