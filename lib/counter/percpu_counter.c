/* SPDX-License-Identifier: MIT */
/*
 * The kernel drop-in's one piece of state (<percpu/percpu_counter.h>):
 * percpu_counter_batch, a variable as in the kernel, where kernel code
 * takes its address or derives its slack from it. Everything else of the
 * drop-in is inline over the native counter.
 */
#include <percpu/percpu_counter.h>

#include "base/policy.h"

/* before a constructor runs, the kernel's minimum */
PCPU_EXPORT int percpu_counter_batch = 32;

/*
 * The kernel computes it when CPUs come and go; here once, when the library
 * loads, before any constructor of a program linked against it. It is the
 * kernel's rule, max(32, 2 * online CPUs), not the native default floor
 * (32 whatever the CPUs): kernel code derives its slack from it.
 */
__attribute__((constructor)) static void percpu_counter_batch_setup(void)
{
	percpu_counter_batch = (int)pcpu_policy_kernel_batch(pcpu_cpu_online());
}
