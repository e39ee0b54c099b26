/* SPDX-License-Identifier: MIT */
/*
 * Kernel-style code that has its own s64/s32/u32/gfp_t (as a kernel port
 * usually does) tells the drop-in header so, and the header must not
 * define them again.
 */
typedef long long s64;
typedef int s32;
typedef unsigned int u32;
typedef unsigned int gfp_t;
#define GFP_KERNEL 0x400u
#define PERCPU_COUNTER_HAVE_KERNEL_TYPES 1

#include <percpu/percpu_counter.h>

long long own_types_roundtrip(long long v);

long long own_types_roundtrip(long long v)
{
	struct percpu_counter fbc;
	s64 got;

	if (percpu_counter_init(&fbc, v, GFP_KERNEL))
		return 0;
	percpu_counter_add(&fbc, 1);
	percpu_counter_dec(&fbc);
	got = percpu_counter_sum(&fbc);
	percpu_counter_destroy(&fbc);
	return got;
}
