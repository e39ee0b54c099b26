/* SPDX-License-Identifier: MIT */
/*
 * Kernel code that trusts percpu_counter_read() to within
 * percpu_counter_batch per CPU defines PERCPU_COUNTER_KERNEL_BATCH before
 * the include: percpu_counter_add() then folds at percpu_counter_batch, as
 * in the kernel, whatever the value. (meson defines it for this file.)
 */
#ifndef PERCPU_COUNTER_KERNEL_BATCH
#error "build this file with -DPERCPU_COUNTER_KERNEL_BATCH"
#endif
#include <percpu/percpu_counter.h>

void kernel_batch_add(struct percpu_counter *fbc, s64 amount);
void kernel_batch_sub(struct percpu_counter *fbc, s64 amount);
void kernel_batch_inc(struct percpu_counter *fbc);

void kernel_batch_add(struct percpu_counter *fbc, s64 amount)
{
	percpu_counter_add(fbc, amount);
}

void kernel_batch_sub(struct percpu_counter *fbc, s64 amount)
{
	percpu_counter_sub(fbc, amount);
}

void kernel_batch_inc(struct percpu_counter *fbc)
{
	percpu_counter_inc(fbc);
}
