/* SPDX-License-Identifier: MIT */
/*
 * A unit built as 0.2 asked of code that trusts percpu_counter_read()
 * (ext4's balloc.c): with PERCPU_COUNTER_KERNEL_BATCH defined before the
 * include. The flag is gone since 0.3; a counter's batch is its own, so
 * this unit and one without the flag add to the same counter alike.
 */
#define PERCPU_COUNTER_KERNEL_BATCH 1
#include <percpu/percpu_counter.h>

void flagged_unit_add(struct percpu_counter *fbc, s64 amount);

void flagged_unit_add(struct percpu_counter *fbc, s64 amount)
{
	percpu_counter_add(fbc, amount);
}
