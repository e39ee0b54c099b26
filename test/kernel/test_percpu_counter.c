/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of every name of the kernel drop-in <percpu/percpu_counter.h>,
 * with the kernel's semantics (include/linux/percpu_counter.h and
 * lib/percpu_counter.c): add_batch folds this CPU's whole local count once
 * it reaches the batch, add_local only past INT_MAX, limited_add with both
 * signs, sync folds this CPU, read_positive and sum_positive clamp at 0.
 */
#include "../counter/helpers.h"

#include <errno.h>
#include <limits.h>

#include <percpu/percpu_counter.h>

#include "arena/arena.h"

static struct percpu_counter fbc;

static void teardown(void)
{
	percpu_counter_destroy(&fbc);
}

TestSuite(percpu_counter, .fini = teardown, .timeout = 30);

#define GiB (1LL << 30)

/* own_types.c: the header under PERCPU_COUNTER_HAVE_KERNEL_TYPES */
long long own_types_roundtrip(long long v);

/* flagged_unit.c: percpu_counter_add() in a unit that defines 0.2's flag */
void flagged_unit_add(struct percpu_counter *fbc, s64 amount);

PCPU_TEST(percpu_counter, kernel_types_have_the_kernel_sizes)
{
	s64 a = -1;
	s32 b = -1;
	u32 c = 1;
	gfp_t g = GFP_KERNEL;

	cr_assert_eq(sizeof(a), 8);
	cr_assert_eq(sizeof(b), 4);
	cr_assert_eq(sizeof(c), 4);
	cr_assert_lt(a, 0);
	cr_assert_lt(b, 0);
	cr_assert_gt((u32)-1, c);
	(void)g;
}

PCPU_TEST(percpu_counter, header_accepts_the_callers_own_kernel_types)
{
	cr_assert_eq(own_types_roundtrip(-123456789012LL), -123456789012LL);
}

PCPU_TEST(percpu_counter, batch_is_the_kernels_default)
{
	int online = (int)pcpu_cpu_online();

	cr_assert_eq(percpu_counter_batch, online * 2 > 32 ? online * 2 : 32);
}

/* Kernel code takes its address (a module parameter, a sysctl table). */
PCPU_TEST(percpu_counter, batch_is_an_int_variable_read_at_init)
{
	int *batch = &percpu_counter_batch;
	int saved = *batch;
	struct percpu_counter before;

	cr_assert_eq(percpu_counter_init(&before, 0, GFP_KERNEL), 0);
	*batch = 100;
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	*batch = saved;
	pcpu_test_pin_first();
	for (int i = 0; i < 99; i++) {
		percpu_counter_inc(&fbc);
		percpu_counter_inc(&before);
	}
	cr_assert_eq(percpu_counter_read(&fbc), 0, "a counter created at batch 100 folded early");
	cr_assert_eq(percpu_counter_read(&before) % saved, 0);
	cr_assert_gt(percpu_counter_read(&before), 0, "the counter created before kept its batch");
	percpu_counter_inc(&fbc);
	cr_assert_eq(percpu_counter_read(&fbc), 100, "did not fold at batch 100");
	percpu_counter_destroy(&before);
}

PCPU_TEST(percpu_counter, local_batch_is_int_max)
{
	cr_assert_eq(PERCPU_COUNTER_LOCAL_BATCH, INT_MAX);
}

PCPU_TEST(percpu_counter, init_sets_the_value_and_ignores_gfp)
{
	cr_assert_eq(percpu_counter_init(&fbc, -77, GFP_KERNEL), 0);
	cr_assert_eq(percpu_counter_read(&fbc), -77);
	cr_assert_eq(percpu_counter_sum(&fbc), -77);
	percpu_counter_destroy(&fbc);
	cr_assert_eq(percpu_counter_init(&fbc, 5, 0x12345u), 0);
	cr_assert_eq(percpu_counter_sum(&fbc), 5);
}

PCPU_TEST(percpu_counter, init_of_null_returns_einval)
{
	cr_assert_eq(percpu_counter_init(NULL, 0, GFP_KERNEL), -EINVAL);
	cr_assert_eq(percpu_counter_init_many(NULL, 0, GFP_KERNEL, 2), -EINVAL);
}

PCPU_TEST(percpu_counter, init_returns_enomem_when_allocation_fails)
{
	pcpu_arena_fail_after(0);
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), -ENOMEM);
	pcpu_arena_fail_after(-1);
	cr_assert_not(percpu_counter_initialized(&fbc));
	percpu_counter_destroy(&fbc); /* as the kernel: fine after a failed init */
}

PCPU_TEST(percpu_counter, init_many_initialises_every_counter)
{
	struct percpu_counter many[4];

	cr_assert_eq(percpu_counter_init_many(many, 3, GFP_KERNEL, 4), 0);
	for (int i = 0; i < 4; i++) {
		cr_assert(percpu_counter_initialized(&many[i]));
		cr_assert_eq(percpu_counter_sum(&many[i]), 3);
	}
	percpu_counter_add(&many[1], 100);
	cr_assert_eq(percpu_counter_sum(&many[0]), 3);
	cr_assert_eq(percpu_counter_sum(&many[1]), 103);
	percpu_counter_destroy_many(many, 4);
	for (int i = 0; i < 4; i++)
		cr_assert_not(percpu_counter_initialized(&many[i]));
	percpu_counter_destroy_many(many, 4); /* idempotent */
}

PCPU_TEST(percpu_counter, init_many_of_zero_counters_returns_einval)
{
	cr_assert_eq(percpu_counter_init_many(&fbc, 0, GFP_KERNEL, 0), -EINVAL);
	cr_assert_not(percpu_counter_initialized(&fbc));
}

PCPU_TEST(percpu_counter, init_many_fails_all_or_none)
{
	struct percpu_counter many[3];

	memset(many, 0, sizeof(many));
	pcpu_arena_fail_after(2);
	cr_assert_eq(percpu_counter_init_many(many, 0, GFP_KERNEL, 3), -ENOMEM);
	pcpu_arena_fail_after(-1);
	for (int i = 0; i < 3; i++)
		cr_assert_not(percpu_counter_initialized(&many[i]));
}

PCPU_TEST(percpu_counter, destroy_is_idempotent_and_accepts_null)
{
	cr_assert_eq(percpu_counter_init(&fbc, 1, GFP_KERNEL), 0);
	percpu_counter_destroy(&fbc);
	percpu_counter_destroy(&fbc);
	percpu_counter_destroy(NULL);
	percpu_counter_destroy_many(NULL, 3);
	cr_assert_not(percpu_counter_initialized(&fbc));
}

PCPU_TEST(percpu_counter, set_drops_pending_deltas)
{
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	pcpu_test_pin_first();
	percpu_counter_add(&fbc, 5);
	percpu_counter_set(&fbc, 1000);
	cr_assert_eq(percpu_counter_read(&fbc), 1000);
	cr_assert_eq(percpu_counter_sum(&fbc), 1000);
}

/*
 * The kernel's promise, whatever the value: a CPU folds once its local count
 * would reach percpu_counter_batch, all of it, so read is never further
 * than percpu_counter_batch - 1 per CPU from exact.
 */
PCPU_TEST(percpu_counter, add_folds_at_percpu_counter_batch_on_a_big_value)
{
	s64 batch = percpu_counter_batch;

	cr_assert_eq(percpu_counter_init(&fbc, GiB, GFP_KERNEL), 0);
	pcpu_test_pin_first();
	percpu_counter_sub(&fbc, batch - 1);
	cr_assert_eq(percpu_counter_read(&fbc), GiB, "folded below the batch");
	percpu_counter_sub(&fbc, 1);
	cr_assert_eq(percpu_counter_read(&fbc), GiB - batch, "did not fold at the batch");
	for (int i = 0; i < 1000; i++) {
		percpu_counter_add(&fbc, 4096);
		cr_assert_leq(pcpu_test_distance(percpu_counter_read(&fbc),
						 percpu_counter_sum(&fbc)),
			      (uint64_t)(batch - 1));
	}
	for (s64 i = 0; i < batch; i++)
		percpu_counter_inc(&fbc);
	cr_assert_eq(percpu_counter_sum(&fbc), GiB + 4096000);
}

/*
 * 0.2's PERCPU_COUNTER_KERNEL_BATCH belonged to a translation unit, so ext4's
 * balloc.c built with it and mballoc.c without left the same counters with
 * elastic adds. The batch is the counter's now: runs of adds from a unit
 * that defines the flag and from one that does not, on one counter of
 * 1 GiB, on each CPU in turn, keep read() within (batch - 1) per CPU of the
 * exact tally after every add.
 */
PCPU_TEST(percpu_counter, adds_from_units_with_and_without_0_2s_flag_fold_at_the_counters_batch)
{
	uint64_t slack = (uint64_t)(percpu_counter_batch - 1) * pcpu_cpu_possible();
	int cpus[8], n = pcpu_test_allowed_cpus(cpus, 8);
	s64 exact = GiB;

	cr_assert_gt(n, 0);
	cr_assert_eq(percpu_counter_init(&fbc, GiB, GFP_KERNEL), 0);
	for (int run = 0; run < 8 * n; run++) {
		bool flagged = run % 2 == 1;

		cr_assert(pcpu_test_pin(cpus[(run / 2) % n]));
		for (int i = 0; i < 3 * percpu_counter_batch; i++) {
			if (flagged)
				flagged_unit_add(&fbc, -1);
			else
				percpu_counter_sub(&fbc, 1);
			exact--;
			cr_assert_leq(pcpu_test_distance(percpu_counter_read(&fbc), exact), slack,
				      "read %lld, exact %lld after %d adds of the %s unit on CPU %d",
				      (long long)percpu_counter_read(&fbc), (long long)exact,
				      i + 1, flagged ? "flagged" : "unflagged", cpus[(run / 2) % n]);
		}
	}
	cr_assert_eq(percpu_counter_sum(&fbc), exact);
}

/* So are the counters of init_many(). */
PCPU_TEST(percpu_counter, init_many_gives_the_kernels_batch_too)
{
	struct percpu_counter many[2];
	s64 batch = percpu_counter_batch;

	cr_assert_eq(percpu_counter_init_many(many, GiB, GFP_KERNEL, 2), 0);
	pcpu_test_pin_first();
	for (int i = 0; i < 2; i++) {
		percpu_counter_sub(&many[i], batch);
		cr_assert_eq(percpu_counter_read(&many[i]), GiB - batch);
	}
	percpu_counter_destroy_many(many, 2);
}

/*
 * The tight kernel bound, (batch - 1) per CPU that added, not the elastic
 * one: compare and limited_add go precise only that near.
 */
PCPU_TEST(percpu_counter, error_bound_of_a_kernel_counter_is_the_batch_per_cpu)
{
	uint64_t tight = (uint64_t)(percpu_counter_batch - 1);

	cr_assert_eq(percpu_counter_init(&fbc, GiB, GFP_KERNEL), 0);
	cr_assert_eq(pcpu_counter_error_bound(&fbc.pcpu), 0, "a bound before any CPU added");
	pcpu_test_pin_first();
	percpu_counter_add(&fbc, 0);
	cr_assert_eq(pcpu_counter_error_bound(&fbc.pcpu), tight);
	percpu_counter_add(&fbc, GiB);
	percpu_counter_sub(&fbc, 12345);
	cr_assert_eq(pcpu_counter_error_bound(&fbc.pcpu), tight);
}

/*
 * The one-threshold rule (percpu_counter.h): an amount over the batch goes
 * to the central value with the local count, where the kernel would keep
 * -30 local. The read is exact, so no kernel check is misled.
 */
PCPU_TEST(percpu_counter, an_amount_over_the_batch_folds_the_local_count_with_it)
{
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	pcpu_test_pin_first();
	percpu_counter_add_batch(&fbc, 40, 64);
	cr_assert_eq(percpu_counter_read(&fbc), 0);
	percpu_counter_add_batch(&fbc, -70, 64);
	cr_assert_eq(percpu_counter_read(&fbc), -30);
	cr_assert_eq(percpu_counter_sum(&fbc), -30);
}

PCPU_TEST(percpu_counter, init_elastic_gives_the_elastic_batch)
{
	cr_assert_eq(percpu_counter_init_elastic(&fbc, GiB, GFP_KERNEL), 0);
	pcpu_test_pin_first();
	for (int i = 0; i < 1000; i++) {
		percpu_counter_add(&fbc, 4096);
		percpu_counter_add(&fbc, -4096);
	}
	cr_assert_eq(percpu_counter_read(&fbc), GiB, "4 KiB pairs on 1 GiB folded");
	percpu_counter_sub(&fbc, 100 * (s64)percpu_counter_batch);
	cr_assert_eq(percpu_counter_read(&fbc), GiB, "the elastic add folded at the batch");
	cr_assert_eq(percpu_counter_sum(&fbc), GiB - 100 * (s64)percpu_counter_batch);
	cr_assert_gt(pcpu_counter_error_bound(&fbc.pcpu),
		     (uint64_t)percpu_counter_batch * pcpu_cpu_possible());
}

PCPU_TEST(percpu_counter, init_many_elastic_initialises_every_counter_elastic)
{
	struct percpu_counter many[3];

	cr_assert_eq(percpu_counter_init_many_elastic(many, GiB, GFP_KERNEL, 3), 0);
	pcpu_test_pin_first();
	for (int i = 0; i < 3; i++) {
		percpu_counter_sub(&many[i], 10 * (s64)percpu_counter_batch);
		cr_assert_eq(percpu_counter_read(&many[i]), GiB);
		cr_assert_eq(percpu_counter_sum(&many[i]), GiB - 10 * (s64)percpu_counter_batch);
	}
	percpu_counter_destroy_many(many, 3);
	cr_assert_eq(percpu_counter_init_many_elastic(NULL, 0, GFP_KERNEL, 3), -EINVAL);
	cr_assert_eq(percpu_counter_init_many_elastic(many, 0, GFP_KERNEL, 0), -EINVAL);
	cr_assert_eq(percpu_counter_init_elastic(NULL, 0, GFP_KERNEL), -EINVAL);
}

PCPU_TEST(percpu_counter, add_batch_stays_local_below_the_batch)
{
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	pcpu_test_pin_first();
	for (int i = 0; i < 9; i++)
		percpu_counter_add_batch(&fbc, 1, 10);
	cr_assert_eq(percpu_counter_read(&fbc), 0);
	cr_assert_eq(percpu_counter_sum(&fbc), 9);
}

/*
 * The kernel: once |local + amount| >= batch, fbc->count += local + amount
 * and the local count goes back to 0, so with one CPU busy read is exact
 * right after the fold.
 */
PCPU_TEST(percpu_counter, add_batch_folds_the_whole_local_count_at_the_batch)
{
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	pcpu_test_pin_first();
	for (int i = 0; i < 10; i++)
		percpu_counter_add_batch(&fbc, 1, 10);
	cr_assert_eq(percpu_counter_sum(&fbc), 10);
	cr_assert_eq(percpu_counter_read(&fbc), 10, "read %lld after the fold at batch 10",
		     (long long)percpu_counter_read(&fbc));
	for (int i = 0; i < 10; i++)
		percpu_counter_add_batch(&fbc, -1, 10);
	cr_assert_eq(percpu_counter_read(&fbc), 0, "read %lld after the fold at batch 10",
		     (long long)percpu_counter_read(&fbc));
}

PCPU_TEST(percpu_counter, add_batch_of_zero_folds_every_add)
{
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	for (int i = 1; i <= 20; i++) {
		percpu_counter_add_batch(&fbc, i % 2 ? 3 : -1, 0);
		cr_assert_eq(percpu_counter_read(&fbc), percpu_counter_sum(&fbc));
	}
	cr_assert_eq(percpu_counter_sum(&fbc), 20);
}

PCPU_TEST(percpu_counter, add_local_stays_local_up_to_int_max)
{
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	pcpu_test_pin_first();
	percpu_counter_add_local(&fbc, 1000000000);
	percpu_counter_add_local(&fbc, 1000000000);
	cr_assert_eq(percpu_counter_read(&fbc), 0);
	cr_assert_eq(percpu_counter_sum(&fbc), 2000000000);
	/* the error bound covers what add_local keeps */
	cr_assert_geq(pcpu_counter_error_bound(&fbc.pcpu), 2000000000u);
	percpu_counter_add_local(&fbc, 1000000000); /* past INT_MAX: folds */
	cr_assert_geq(percpu_counter_read(&fbc), 3000000000LL);
	cr_assert_eq(percpu_counter_sum(&fbc), 3000000000LL);
}

PCPU_TEST(percpu_counter, sub_and_sub_local_subtract)
{
	cr_assert_eq(percpu_counter_init(&fbc, 100, GFP_KERNEL), 0);
	percpu_counter_sub(&fbc, 30);
	cr_assert_eq(percpu_counter_sum(&fbc), 70);
	percpu_counter_sub_local(&fbc, 50);
	cr_assert_eq(percpu_counter_sum(&fbc), 20);
	percpu_counter_sub(&fbc, -5);
	cr_assert_eq(percpu_counter_sum(&fbc), 25);
}

PCPU_TEST(percpu_counter, inc_and_dec_count_by_one)
{
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	for (int i = 0; i < 1000; i++)
		percpu_counter_inc(&fbc);
	for (int i = 0; i < 300; i++)
		percpu_counter_dec(&fbc);
	cr_assert_eq(percpu_counter_sum(&fbc), 700);
	cr_assert_leq(pcpu_test_distance(percpu_counter_read(&fbc), 700),
		      pcpu_counter_error_bound(&fbc.pcpu));
}

PCPU_TEST(percpu_counter, read_positive_clamps_negative_values_to_zero)
{
	cr_assert_eq(percpu_counter_init(&fbc, -5000, GFP_KERNEL), 0);
	cr_assert_eq(percpu_counter_read(&fbc), -5000);
	cr_assert_eq(percpu_counter_read_positive(&fbc), 0);
	percpu_counter_set(&fbc, 0);
	cr_assert_eq(percpu_counter_read_positive(&fbc), 0);
	percpu_counter_set(&fbc, 42);
	cr_assert_eq(percpu_counter_read_positive(&fbc), 42);
}

PCPU_TEST(percpu_counter, sum_and_sum_positive_are_exact)
{
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	pcpu_test_pin_first();
	percpu_counter_add(&fbc, -7); /* pending */
	cr_assert_eq(percpu_counter_read(&fbc), 0);
	cr_assert_eq(percpu_counter_sum(&fbc), -7);
	cr_assert_eq(__percpu_counter_sum(&fbc), -7);
	cr_assert_eq(percpu_counter_sum_positive(&fbc), 0);
	percpu_counter_add(&fbc, 10);
	cr_assert_eq(percpu_counter_sum_positive(&fbc), 3);
}

PCPU_TEST(percpu_counter, compare_returns_the_sign_and_goes_precise_near_rhs)
{
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	pcpu_test_pin_first();
	percpu_counter_add(&fbc, 10); /* pending: read 0 */
	cr_assert_eq(percpu_counter_compare(&fbc, 9), 1);
	cr_assert_eq(percpu_counter_compare(&fbc, 10), 0);
	cr_assert_eq(percpu_counter_compare(&fbc, 11), -1);
	cr_assert_eq(percpu_counter_compare(&fbc, -1000000), 1);
	cr_assert_eq(percpu_counter_compare(&fbc, 1000000), -1);
}

PCPU_TEST(percpu_counter, compare_with_a_callers_batch_stays_correct)
{
	static const s32 batches[] = { 0, 1, 32, 1000000, INT_MAX, -5 };

	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	pcpu_test_pin_first();
	percpu_counter_add_batch(&fbc, 500, 1000); /* pending, bound raised */
	for (size_t i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
		cr_assert_eq(__percpu_counter_compare(&fbc, 499, batches[i]), 1);
		cr_assert_eq(__percpu_counter_compare(&fbc, 500, batches[i]), 0);
		cr_assert_eq(__percpu_counter_compare(&fbc, 501, batches[i]), -1);
	}
}

PCPU_TEST(percpu_counter, limited_add_positive_respects_the_upper_limit)
{
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	cr_assert(percpu_counter_limited_add(&fbc, 100, 60));
	cr_assert_not(percpu_counter_limited_add(&fbc, 100, 41));
	cr_assert(percpu_counter_limited_add(&fbc, 100, 40));
	cr_assert_eq(percpu_counter_sum(&fbc), 100);
}

PCPU_TEST(percpu_counter, limited_add_negative_respects_the_lower_limit)
{
	cr_assert_eq(percpu_counter_init(&fbc, 100, GFP_KERNEL), 0);
	cr_assert(percpu_counter_limited_add(&fbc, 0, -60));
	cr_assert_not(percpu_counter_limited_add(&fbc, 0, -41));
	cr_assert(percpu_counter_limited_add(&fbc, 0, -40));
	cr_assert_eq(percpu_counter_sum(&fbc), 0);
	cr_assert(percpu_counter_limited_add(&fbc, 0, 0), "amount 0 is always added");
}

PCPU_TEST(percpu_counter, limited_add_with_a_callers_batch_stays_exact)
{
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	pcpu_test_pin_first();
	percpu_counter_add(&fbc, 20); /* pending */
	cr_assert_not(__percpu_counter_limited_add(&fbc, 25, 10, 1000));
	cr_assert(__percpu_counter_limited_add(&fbc, 30, 10, 0));
	cr_assert_not(__percpu_counter_limited_add(&fbc, 30, 1, INT_MAX));
	cr_assert_eq(percpu_counter_sum(&fbc), 30);
}

PCPU_TEST(percpu_counter, sync_folds_this_cpus_local_count)
{
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	pcpu_test_pin_first();
	percpu_counter_add(&fbc, 11);
	cr_assert_eq(percpu_counter_read(&fbc), 0);
	percpu_counter_sync(&fbc);
	cr_assert_eq(percpu_counter_read(&fbc), 11);
}

PCPU_TEST(percpu_counter, initialized_follows_init_and_destroy)
{
	static struct percpu_counter zero;

	cr_assert_not(percpu_counter_initialized(&zero));
	cr_assert_not(percpu_counter_initialized(NULL));
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	cr_assert(percpu_counter_initialized(&fbc));
	percpu_counter_destroy(&fbc);
	cr_assert_not(percpu_counter_initialized(&fbc));
}

PCPU_TEST(percpu_counter, add_on_a_zero_filled_counter_is_reported,
     .signal = PCPU_TEST_MISUSE_SIGNAL)
{
	static struct percpu_counter zero;

	percpu_counter_add(&zero, 1);
	percpu_counter_inc(&zero);
	cr_assert_not(percpu_counter_initialized(&zero));
	cr_assert_eq(percpu_counter_read(&zero), 0);
}

PCPU_TEST(percpu_counter, sum_of_null_is_reported, .signal = PCPU_TEST_MISUSE_SIGNAL)
{
	cr_assert_eq(percpu_counter_sum(NULL), 0);
}
