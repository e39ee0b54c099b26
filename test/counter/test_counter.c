/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of every call of <percpu/counter.h>, single-threaded unless a
 * test needs a second CPU. Tests that look at "this CPU's pending delta"
 * pin the thread first, so that every add lands in the same slot.
 */
#include "helpers.h"

#include <errno.h>
#include <pthread.h>

#include <percpu/counter.h>
#include <percpu/registry.h>

static struct pcpu_counter c;

static void teardown(void)
{
	pcpu_counter_destroy(&c);
}

TestSuite(counter, .fini = teardown, .timeout = 30);

#define GiB (INT64_C(1) << 30)

/* ---- init, init_opts ---------------------------------------------------- */

PCPU_TEST(counter, init_returns_zero_and_reads_the_initial_value)
{
	static const int64_t values[] = { 0, 1, -1, 12345, -GiB, GiB, INT64_MAX, INT64_MIN };

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		cr_assert_eq(pcpu_counter_init(&c, values[i]), 0);
		cr_assert_eq(pcpu_counter_read(&c), values[i]);
		cr_assert_eq(pcpu_counter_sum(&c), values[i]);
		pcpu_counter_destroy(&c);
	}
}

PCPU_TEST(counter, init_makes_the_counter_initialized)
{
	cr_assert_not(pcpu_counter_initialized(&c));
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert(pcpu_counter_initialized(&c));
}

PCPU_TEST(counter, init_overwrites_garbage)
{
	memset(&c, 0xa5, sizeof(c));
	cr_assert_eq(pcpu_counter_init(&c, 7), 0);
	cr_assert_eq(pcpu_counter_sum(&c), 7);
	pcpu_counter_add(&c, 5);
	pcpu_test_assert_exact(&c, 12);
}

/*
 * Pins this thread to one CPU and arms that CPU's slot with an add of 0
 * (nothing moves): error_bound() then counts one CPU.
 */
static void arm_one_cpu(struct pcpu_counter *k)
{
	uint64_t before = pcpu_counter_error_bound(k);

	pcpu_test_pin_first();
	pcpu_counter_add(k, 0);
	cr_assert_eq(k->armed, 1, "%u CPUs armed", k->armed);
	cr_assert_eq(before, 0, "a bound of %" PRIu64 " before any CPU added", before);
	cr_assert_eq(pcpu_counter_read(k), pcpu_counter_sum(k), "arming moved something");
}

/* 0 before any add, then the default floor per CPU that added, not per possible CPU. */
PCPU_TEST(counter, default_error_bound_is_armed_cpus_times_default_floor)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	arm_one_cpu(&c);
	cr_assert_eq(pcpu_counter_error_bound(&c), (uint64_t)pcpu_test_default_floor());
}

PCPU_TEST(counter, init_opts_with_null_options_equals_init)
{
	struct pcpu_counter d;

	cr_assert_eq(pcpu_counter_init(&c, GiB), 0);
	cr_assert_eq(pcpu_counter_init_opts(&d, GiB, NULL), 0);
	cr_assert_eq(pcpu_counter_error_bound(&d), pcpu_counter_error_bound(&c));
	cr_assert_eq(pcpu_counter_sum(&d), GiB);
	pcpu_counter_destroy(&d);
}

PCPU_TEST(counter, init_opts_zero_options_mean_the_defaults)
{
	struct pcpu_counter_options o = { 0 };
	struct pcpu_counter d;

	for (int64_t v = 0; v <= GiB; v += GiB / 2) {
		cr_assert_eq(pcpu_counter_init(&c, v), 0);
		cr_assert_eq(pcpu_counter_init_opts(&d, v, &o), 0);
		cr_assert_eq(pcpu_counter_error_bound(&d), pcpu_counter_error_bound(&c));
		pcpu_counter_destroy(&d);
		pcpu_counter_destroy(&c);
	}
}

PCPU_TEST(counter, elastic_bound_of_a_big_value_is_about_value_over_64)
{
	static const int64_t values[] = { GiB, -GiB, 64 * GiB, -1024 * GiB, INT64_C(1) << 46 };
	uint64_t possible = pcpu_cpu_possible();

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		uint64_t want = pcpu_test_distance(values[i], 0) / 64, bound;

		cr_assert_eq(pcpu_counter_init(&c, values[i]), 0);
		arm_one_cpu(&c);
		/* were every possible CPU armed: possible * floor(|v| / (64 * possible)) */
		bound = pcpu_counter_error_bound(&c) * possible;
		cr_assert_leq(bound, want, "bound %" PRIu64 " > |v|/64 = %" PRIu64, bound, want);
		cr_assert_geq(bound + possible, want, "bound %" PRIu64 " << |v|/64 = %" PRIu64,
			      bound, want);
		pcpu_counter_destroy(&c);
	}
}

PCPU_TEST(counter, elastic_threshold_is_capped_at_the_largest_batch)
{
	cr_assert_eq(pcpu_counter_init(&c, INT64_MAX), 0);
	arm_one_cpu(&c);
	cr_assert_eq(pcpu_counter_error_bound(&c), (uint64_t)PCPU_COUNTER_MAX_BATCH);
	pcpu_counter_set(&c, INT64_MIN);
	cr_assert_eq(pcpu_counter_error_bound(&c), (uint64_t)PCPU_COUNTER_MAX_BATCH);
}

PCPU_TEST(counter, counter_near_zero_keeps_the_floor_bound)
{
	uint64_t floor_bound = (uint64_t)pcpu_cpu_possible() * (uint64_t)pcpu_test_default_floor();

	/* below 64 * possible * floor the elastic threshold is the floor */
	cr_assert_eq(pcpu_counter_init(&c, 64 * (int64_t)floor_bound - 1), 0);
	arm_one_cpu(&c);
	cr_assert_eq(pcpu_counter_error_bound(&c), (uint64_t)pcpu_test_default_floor());
	pcpu_counter_destroy(&c);
	cr_assert_eq(pcpu_counter_init(&c, -1000), 0);
	arm_one_cpu(&c);
	cr_assert_eq(pcpu_counter_error_bound(&c), (uint64_t)pcpu_test_default_floor());
}

PCPU_TEST(counter, allocfree_pairs_on_a_gib_counter_never_fold)
{
	long n = pcpu_test_iterations(100000);

	cr_assert_eq(pcpu_counter_init(&c, GiB), 0);
	for (long i = 0; i < n; i++) {
		pcpu_counter_add(&c, 4096);
		pcpu_counter_add(&c, -4096);
	}
	/* no fold: the central value was never touched */
	cr_assert_eq(pcpu_counter_read(&c), GiB);
	cr_assert_eq(pcpu_counter_sum(&c), GiB);
}

PCPU_TEST(counter, allocfree_pairs_on_a_negative_gib_counter_never_fold)
{
	long n = pcpu_test_iterations(100000);

	cr_assert_eq(pcpu_counter_init(&c, -GiB), 0);
	for (long i = 0; i < n; i++) {
		pcpu_counter_add(&c, -4096);
		pcpu_counter_add(&c, 4096);
	}
	cr_assert_eq(pcpu_counter_read(&c), -GiB);
	cr_assert_eq(pcpu_counter_sum(&c), -GiB);
}

PCPU_TEST(counter, allocfree_pairs_near_zero_do_fold)
{
	/* the contrast: at 0 the threshold is the floor, far below 4096 */
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_test_pin_first();
	pcpu_counter_add(&c, 4096);
	cr_assert_neq(pcpu_counter_read(&c), 0, "+4096 at 0 should fold");
	pcpu_counter_add(&c, -4096);
	pcpu_test_assert_exact(&c, 0);
}

PCPU_TEST(counter, init_opts_accuracy_sets_the_relative_bound)
{
	static const int32_t accuracies[] = { 1, 2, 16, 64, 1000, PCPU_COUNTER_MAX_ACCURACY };
	uint64_t possible = pcpu_cpu_possible();
	int64_t v = 1024 * GiB;

	for (size_t i = 0; i < sizeof(accuracies) / sizeof(accuracies[0]); i++) {
		struct pcpu_counter_options o = { .accuracy = accuracies[i] };
		uint64_t want = (uint64_t)v / (uint64_t)accuracies[i], bound;

		cr_assert_eq(pcpu_counter_init_opts(&c, v, &o), 0);
		arm_one_cpu(&c);
		/* all CPUs together, were they all armed */
		bound = pcpu_counter_error_bound(&c) * possible;
		cr_assert_leq(bound, want, "accuracy %d: bound %" PRIu64 " > %" PRIu64,
			      accuracies[i], bound, want);
		cr_assert_geq(bound + possible * (uint64_t)pcpu_test_default_floor(), want,
			      "accuracy %d: bound %" PRIu64 " << %" PRIu64, accuracies[i], bound,
			      want);
		pcpu_counter_destroy(&c);
	}
}

PCPU_TEST(counter, init_opts_floor_sets_the_absolute_bound)
{
	static const int64_t floors[] = { 1, 7, 1000, PCPU_COUNTER_MAX_BATCH };

	for (size_t i = 0; i < sizeof(floors) / sizeof(floors[0]); i++) {
		struct pcpu_counter_options o = { .floor = floors[i] };

		cr_assert_eq(pcpu_counter_init_opts(&c, 0, &o), 0);
		arm_one_cpu(&c);
		cr_assert_eq(pcpu_counter_error_bound(&c), (uint64_t)floors[i]);
		pcpu_counter_destroy(&c);
	}
}

PCPU_TEST(counter, floor_one_at_accuracy_one_tracks_the_value)
{
	struct pcpu_counter_options o = { .accuracy = 1, .floor = 1 };

	cr_assert_eq(pcpu_counter_init_opts(&c, 1000000, &o), 0);
	arm_one_cpu(&c);
	cr_assert_leq(pcpu_counter_error_bound(&c) * pcpu_cpu_possible(), 1000000);
	cr_assert_geq(pcpu_counter_error_bound(&c) * pcpu_cpu_possible(),
		      1000000 - pcpu_cpu_possible());
}

PCPU_TEST(counter, fixed_batch_bound_is_armed_cpus_times_batch_minus_one)
{
	static const int64_t batches[] = { 1, 2, 32, 100, 4096, PCPU_COUNTER_MAX_BATCH };
	static const int64_t values[] = { 0, -5, GiB, 1024 * GiB };

	for (size_t i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
		for (size_t j = 0; j < sizeof(values) / sizeof(values[0]); j++) {
			struct pcpu_counter_options o = { .batch = batches[i] };

			cr_assert_eq(pcpu_counter_init_opts(&c, values[j], &o), 0);
			arm_one_cpu(&c);
			cr_assert_eq(pcpu_counter_error_bound(&c), (uint64_t)(batches[i] - 1),
				     "batch %" PRId64 " value %" PRId64, batches[i], values[j]);
			pcpu_counter_destroy(&c);
		}
	}
}

PCPU_TEST(counter, fixed_batch_does_not_grow_with_the_value)
{
	struct pcpu_counter_options o = { .batch = 100 };

	cr_assert_eq(pcpu_counter_init_opts(&c, 0, &o), 0);
	arm_one_cpu(&c);
	pcpu_counter_add(&c, 1024 * GiB);
	cr_assert_eq(pcpu_counter_error_bound(&c), 99);
	pcpu_test_assert_exact(&c, 1024 * GiB);
}

PCPU_TEST(counter, fixed_batch_folds_when_pending_reaches_the_batch)
{
	struct pcpu_counter_options o = { .batch = 10 };

	cr_assert_eq(pcpu_counter_init_opts(&c, 0, &o), 0);
	pcpu_test_pin_first();
	for (int i = 1; i < 10; i++) {
		pcpu_counter_add(&c, 1);
		cr_assert_eq(pcpu_counter_read(&c), 0, "folded after %d < batch adds", i);
	}
	pcpu_counter_add(&c, 1);
	/* fixed batch: the whole pending delta goes in, as in the kernel */
	cr_assert_eq(pcpu_counter_read(&c), 10);
	cr_assert_eq(pcpu_counter_sum(&c), 10);
}

PCPU_TEST(counter, batch_one_folds_every_add)
{
	struct pcpu_counter_options o = { .batch = 1 };
	int64_t exact = 0;
	uint64_t seed = 1;

	cr_assert_eq(pcpu_counter_init_opts(&c, 0, &o), 0);
	cr_assert_eq(pcpu_counter_error_bound(&c), 0);
	for (int i = 0; i < 1000; i++) {
		int64_t a = (int64_t)(pcpu_test_rand(&seed) % 201) - 100;

		pcpu_counter_add(&c, a);
		exact += a;
		cr_assert_eq(pcpu_counter_read(&c), exact);
	}
}

struct bad_option {
	int32_t accuracy;
	int64_t floor;
	int64_t batch;
};

ParameterizedTestParameters(counter, init_opts_rejects_every_out_of_range_option)
{
	static struct bad_option bad[] = {
		{ .accuracy = -1 },
		{ .accuracy = INT32_MIN },
		{ .accuracy = PCPU_COUNTER_MAX_ACCURACY + 1 },
		{ .accuracy = INT32_MAX },
		{ .floor = -1 },
		{ .floor = INT64_MIN },
		{ .floor = PCPU_COUNTER_MAX_BATCH + 1 },
		{ .floor = INT64_MAX },
		{ .batch = -1 },
		{ .batch = INT64_MIN },
		{ .batch = PCPU_COUNTER_MAX_BATCH + 1 },
		{ .batch = INT64_MAX },
		/* one bad option among good ones is enough */
		{ .accuracy = 64, .floor = 32, .batch = -1 },
		{ .accuracy = -64, .floor = 32, .batch = 0 },
		{ .accuracy = 64, .floor = -32, .batch = 0 },
	};

	return cr_make_param_array(struct bad_option, bad, sizeof(bad) / sizeof(bad[0]));
}

ParameterizedTest(struct bad_option *bad, counter, init_opts_rejects_every_out_of_range_option)
{
	struct pcpu_counter_options o = { .accuracy = bad->accuracy, .floor = bad->floor,
					  .batch = bad->batch };
	size_t live = pcpu_registry_count();

	memset(&c, 0, sizeof(c));
	cr_assert_eq(pcpu_counter_init_opts(&c, 0, &o), -EINVAL,
		     "accuracy %d floor %" PRId64 " batch %" PRId64 " accepted", o.accuracy,
		     o.floor, o.batch);
	cr_assert_not(pcpu_counter_initialized(&c));
	cr_assert_eq(pcpu_registry_count(), live);
	pcpu_test_assert_no_leaks();
}

PCPU_TEST(counter, init_opts_accepts_the_largest_options)
{
	struct pcpu_counter_options o = { .accuracy = PCPU_COUNTER_MAX_ACCURACY,
					  .floor = PCPU_COUNTER_MAX_BATCH };

	cr_assert_eq(pcpu_counter_init_opts(&c, 3, &o), 0);
	pcpu_counter_add(&c, 4);
	pcpu_test_assert_exact(&c, 7);
	pcpu_counter_destroy(&c);
	o = (struct pcpu_counter_options){ .batch = PCPU_COUNTER_MAX_BATCH };
	cr_assert_eq(pcpu_counter_init_opts(&c, 3, &o), 0);
	pcpu_counter_add(&c, PCPU_COUNTER_MAX_BATCH);
	pcpu_test_assert_exact(&c, PCPU_COUNTER_MAX_BATCH + 3);
}

/* ---- init_many, destroy, destroy_many ---------------------------------- */

PCPU_TEST(counter, init_many_initialises_every_counter_to_the_value)
{
	struct pcpu_counter many[5];
	size_t live = pcpu_registry_count();

	cr_assert_eq(pcpu_counter_init_many(many, -42, 5), 0);
	cr_assert_eq(pcpu_registry_count(), live + 5);
	for (int i = 0; i < 5; i++) {
		cr_assert(pcpu_counter_initialized(&many[i]));
		cr_assert_eq(pcpu_counter_sum(&many[i]), -42);
		cr_assert_eq(pcpu_counter_read(&many[i]), -42);
	}
	/* independent storage: adding to one leaves the others alone */
	pcpu_counter_add(&many[2], 1000);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(pcpu_counter_sum(&many[i]), i == 2 ? 958 : -42);
	pcpu_counter_destroy_many(many, 5);
	cr_assert_eq(pcpu_registry_count(), live);
	for (int i = 0; i < 5; i++)
		cr_assert_not(pcpu_counter_initialized(&many[i]));
}

PCPU_TEST(counter, init_many_of_one_counter_works)
{
	cr_assert_eq(pcpu_counter_init_many(&c, 9, 1), 0);
	cr_assert_eq(pcpu_counter_sum(&c), 9);
}

PCPU_TEST(counter, init_many_of_more_counters_than_one_arena_chunk_holds)
{
	/* a chunk holds PCPU_STRIDE / 16 counters: cross into a second one */
	unsigned int n = (unsigned int)(PCPU_STRIDE / 16) + 3;
	struct pcpu_counter *many = calloc(n, sizeof(*many));

	cr_assert_not_null(many);
	cr_assert_eq(pcpu_counter_init_many(many, 1, n), 0);
	for (unsigned int i = 0; i < n; i++)
		pcpu_counter_add(&many[i], (int64_t)i);
	for (unsigned int i = 0; i < n; i++)
		cr_assert_eq(pcpu_counter_sum(&many[i]), 1 + (int64_t)i);
	pcpu_counter_destroy_many(many, n);
	free(many);
}

PCPU_TEST(counter, destroy_makes_the_counter_uninitialized_and_zero_filled)
{
	static const struct pcpu_counter zero;

	cr_assert_eq(pcpu_counter_init(&c, 5), 0);
	pcpu_counter_destroy(&c);
	cr_assert_not(pcpu_counter_initialized(&c));
	cr_assert_eq(memcmp(&c, &zero, sizeof(c)), 0);
}

PCPU_TEST(counter, destroy_is_idempotent)
{
	size_t live = pcpu_registry_count();

	cr_assert_eq(pcpu_counter_init(&c, 5), 0);
	pcpu_counter_destroy(&c);
	pcpu_counter_destroy(&c);
	pcpu_counter_destroy(&c);
	cr_assert_not(pcpu_counter_initialized(&c));
	cr_assert_eq(pcpu_registry_count(), live);
}

PCPU_TEST(counter, destroy_of_a_zero_filled_counter_does_nothing)
{
	size_t live = pcpu_registry_count();

	memset(&c, 0, sizeof(c));
	pcpu_counter_destroy(&c);
	cr_assert_not(pcpu_counter_initialized(&c));
	cr_assert_eq(pcpu_registry_count(), live);
}

PCPU_TEST(counter, destroy_many_is_idempotent_per_counter)
{
	struct pcpu_counter many[4];
	size_t live = pcpu_registry_count();

	cr_assert_eq(pcpu_counter_init_many(many, 0, 4), 0);
	pcpu_counter_destroy(&many[1]);
	pcpu_counter_destroy_many(many, 4);
	cr_assert_eq(pcpu_registry_count(), live);
	pcpu_counter_destroy_many(many, 4);
	cr_assert_eq(pcpu_registry_count(), live);
	for (int i = 0; i < 4; i++)
		cr_assert_not(pcpu_counter_initialized(&many[i]));
}

PCPU_TEST(counter, destroy_many_of_a_prefix_leaves_the_rest_live)
{
	struct pcpu_counter many[4];

	cr_assert_eq(pcpu_counter_init_many(many, 3, 4), 0);
	pcpu_counter_destroy_many(many, 2);
	cr_assert_not(pcpu_counter_initialized(&many[0]));
	cr_assert_not(pcpu_counter_initialized(&many[1]));
	cr_assert(pcpu_counter_initialized(&many[2]));
	pcpu_counter_add(&many[3], 1);
	cr_assert_eq(pcpu_counter_sum(&many[3]), 4);
	pcpu_counter_destroy_many(many, 4);
}

PCPU_TEST(counter, a_destroyed_counter_can_be_initialised_again)
{
	cr_assert_eq(pcpu_counter_init(&c, 5), 0);
	pcpu_counter_add(&c, 100);
	pcpu_counter_destroy(&c);
	cr_assert_eq(pcpu_counter_init(&c, -5), 0);
	/* fresh slots: nothing of the old pending delta shows */
	pcpu_test_assert_exact(&c, -5);
	pcpu_counter_add(&c, 1);
	pcpu_test_assert_exact(&c, -4);
}

PCPU_TEST(counter, reused_slots_start_from_zero)
{
	struct pcpu_counter d;

	pcpu_test_pin_first();
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_counter_add(&c, 7); /* pending in this CPU's slot */
	pcpu_counter_destroy(&c);
	cr_assert_eq(pcpu_counter_init(&d, 0), 0); /* likely the same slot */
	cr_assert_eq(pcpu_counter_sum(&d), 0);
	cr_assert_eq(pcpu_counter_read(&d), 0);
	pcpu_counter_destroy(&d);
}

/* ---- add, read, sum, error_bound ---------------------------------------- */

PCPU_TEST(counter, add_of_any_sign_is_exact_in_sum)
{
	int64_t exact = 0;
	uint64_t seed = 42;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	for (int i = 0; i < 10000; i++) {
		int64_t a = (int64_t)(pcpu_test_rand(&seed) % 2001) - 1000;

		if (i % 97 == 0)
			a *= 100000; /* now and then a big one */
		pcpu_counter_add(&c, a);
		exact += a;
		pcpu_test_assert_exact(&c, exact);
	}
}

PCPU_TEST(counter, add_below_the_threshold_stays_pending)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_test_pin_first();
	pcpu_counter_add(&c, pcpu_test_default_floor());
	cr_assert_eq(pcpu_counter_read(&c), 0);
	cr_assert_eq(pcpu_counter_sum(&c), pcpu_test_default_floor());
	pcpu_counter_add(&c, -pcpu_test_default_floor());
	pcpu_counter_add(&c, -pcpu_test_default_floor());
	cr_assert_eq(pcpu_counter_read(&c), 0);
	cr_assert_eq(pcpu_counter_sum(&c), -pcpu_test_default_floor());
}

/*
 * The fast path takes at most one threshold at a time, even where the
 * pending delta would stay within it: a larger amount against the pending
 * delta, with a fold racing it, would leave more than a threshold pending.
 */
PCPU_TEST(counter, an_amount_above_the_threshold_goes_central)
{
	int64_t floor = pcpu_test_default_floor();

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_test_pin_first();
	pcpu_counter_add(&c, floor);
	cr_assert_eq(pcpu_counter_read(&c), 0);
	pcpu_counter_add(&c, -2 * floor);
	cr_assert_eq(pcpu_counter_read(&c), -floor, "the amount and the pending delta folded");
	pcpu_test_assert_exact(&c, -floor);
}

PCPU_TEST(counter, add_past_the_threshold_folds)
{
	int64_t floor = pcpu_test_default_floor();

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_test_pin_first();
	pcpu_counter_add(&c, floor + 1);
	cr_assert_geq(pcpu_counter_read(&c), floor + 1, "read %" PRId64, pcpu_counter_read(&c));
	pcpu_test_assert_exact(&c, floor + 1);
	pcpu_counter_add(&c, -3 * floor);
	cr_assert_leq(pcpu_counter_read(&c), -floor + 1, "read %" PRId64, pcpu_counter_read(&c));
	pcpu_test_assert_exact(&c, -2 * floor + 1);
}

PCPU_TEST(counter, steady_increments_fold_once_per_threshold)
{
	int64_t floor = pcpu_test_default_floor(), last;
	long changes = 0, n = 100 * floor;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_test_pin_first();
	last = pcpu_counter_read(&c);
	for (long i = 0; i < n; i++) {
		pcpu_counter_add(&c, 1);
		if (pcpu_counter_read(&c) != last)
			changes++;
		last = pcpu_counter_read(&c);
	}
	/*
	 * The value stays below 64 * possible * floor, so the threshold is the
	 * floor. A fold moves the whole pending delta, so a stream of +1
	 * folds once every floor + 1 adds.
	 */
	cr_assert_leq(changes, n / (floor + 1) + 1, "%ld folds for %ld increments", changes, n);
	cr_assert_geq(changes, n / (floor + 1) - 1, "%ld folds for %ld increments", changes, n);
	pcpu_test_assert_exact(&c, n);
}

PCPU_TEST(counter, threshold_grows_as_the_value_grows)
{
	uint64_t small, big;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	arm_one_cpu(&c);
	small = pcpu_counter_error_bound(&c);
	pcpu_counter_add(&c, 64 * GiB);
	/* were every possible CPU armed */
	big = pcpu_counter_error_bound(&c) * pcpu_cpu_possible();
	cr_assert_gt(big, small);
	cr_assert_geq(big, (uint64_t)GiB - pcpu_cpu_possible(), "bound %" PRIu64, big);
	cr_assert_leq(big, (uint64_t)GiB + (uint64_t)GiB / 2 + pcpu_cpu_possible(),
		      "bound %" PRIu64, big);
	pcpu_test_assert_exact(&c, 64 * GiB);
}

PCPU_TEST(counter, error_bound_stays_true_when_the_value_shrinks)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_test_pin_first();
	pcpu_counter_add(&c, 64 * GiB);
	pcpu_counter_add(&c, GiB / 8);  /* stays pending: below the big threshold */
	pcpu_counter_add(&c, -64 * GiB);
	/* the threshold now is the floor, but a slot may still hold more */
	pcpu_test_assert_exact(&c, GiB / 8);
}

PCPU_TEST(counter, extreme_amounts_are_exact_in_sum)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_counter_add(&c, INT64_MAX);
	cr_assert_eq(pcpu_counter_sum(&c), INT64_MAX);
	pcpu_counter_add(&c, INT64_MIN);
	cr_assert_eq(pcpu_counter_sum(&c), -1);
	pcpu_counter_add(&c, INT64_MIN + 1);
	cr_assert_eq(pcpu_counter_sum(&c), INT64_MIN);
	pcpu_counter_add(&c, 0);
	pcpu_test_assert_exact(&c, INT64_MIN);
}

/*
 * A fold leaves half a threshold pending against the direction of travel,
 * so the central value overshoots the exact one by that much; next to
 * INT64_MAX (or INT64_MIN) the overshoot must not wrap around.
 */
PCPU_TEST(counter, read_next_to_int64_max_stays_within_the_bound)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_counter_add(&c, INT64_MAX);
	pcpu_test_assert_exact(&c, INT64_MAX);
}

PCPU_TEST(counter, read_next_to_int64_min_stays_within_the_bound)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_counter_add(&c, INT64_MIN);
	pcpu_test_assert_exact(&c, INT64_MIN);
}

PCPU_TEST(counter, read_is_the_central_value)
{
	cr_assert_eq(pcpu_counter_init(&c, 77), 0);
	cr_assert_eq(pcpu_counter_read(&c), 77);
	pcpu_test_pin_first();
	pcpu_counter_add(&c, 1);
	cr_assert_eq(pcpu_counter_read(&c), 77, "a pending delta must not show in read");
}

PCPU_TEST(counter, sum_counts_pending_deltas_of_every_cpu)
{
	int cpus[2];
	struct pcpu_counter_options o = { .batch = 1000 };

	if (pcpu_test_allowed_cpus(cpus, 2) < 2)
		cr_skip_test("needs two CPUs");
	cr_assert_eq(pcpu_counter_init_opts(&c, 0, &o), 0);
	cr_assert(pcpu_test_pin(cpus[0]));
	pcpu_counter_add(&c, 300);
	cr_assert(pcpu_test_pin(cpus[1]));
	pcpu_counter_add(&c, 400);
	cr_assert_eq(pcpu_counter_read(&c), 0);
	cr_assert_eq(pcpu_counter_sum(&c), 700);
	cr_assert_eq(pcpu_counter_read(&c), 0, "sum must be read-only");
}

/* ---- add_batch ---------------------------------------------------------- */

PCPU_TEST(counter, add_batch_does_not_fold_below_the_batch)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_test_pin_first();
	for (int i = 0; i < 99; i++)
		pcpu_counter_add_batch(&c, 1, 100);
	cr_assert_eq(pcpu_counter_read(&c), 0);
	pcpu_test_assert_exact(&c, 99);
}

PCPU_TEST(counter, add_batch_folds_when_pending_reaches_the_batch)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_test_pin_first();
	for (int i = 0; i < 100; i++)
		pcpu_counter_add_batch(&c, 1, 100);
	cr_assert_geq(pcpu_counter_read(&c), 100);
	pcpu_test_assert_exact(&c, 100);
}

PCPU_TEST(counter, add_batch_with_nonpositive_batch_folds_every_add)
{
	static const int64_t batches[] = { 0, -1, INT64_MIN };

	for (size_t i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
		int64_t exact = 0;

		cr_assert_eq(pcpu_counter_init(&c, 0), 0);
		for (int j = 1; j <= 50; j++) {
			pcpu_counter_add_batch(&c, j % 2 ? j : -2 * j, batches[i]);
			exact += j % 2 ? j : -2 * j;
			cr_assert_eq(pcpu_counter_read(&c), exact, "batch %" PRId64, batches[i]);
		}
		pcpu_counter_destroy(&c);
	}
}

PCPU_TEST(counter, add_batch_raises_the_error_bound_to_cover_the_batch)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	arm_one_cpu(&c);
	pcpu_counter_add_batch(&c, 1, 100000);
	cr_assert_geq(pcpu_counter_error_bound(&c), 99999);
	pcpu_test_assert_exact(&c, 1);
	/* a huge batch is clamped, not overflowed */
	pcpu_counter_add_batch(&c, 1, INT64_MAX);
	cr_assert_geq(pcpu_counter_error_bound(&c), (uint64_t)PCPU_COUNTER_MAX_BATCH);
	pcpu_test_assert_exact(&c, 2);
}

PCPU_TEST(counter, add_batch_and_add_mixed_keep_read_within_the_bound)
{
	int64_t exact = 0;
	uint64_t seed = 7;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	for (int i = 0; i < 5000; i++) {
		int64_t a = (int64_t)(pcpu_test_rand(&seed) % 2001) - 1000;

		if (i % 3)
			pcpu_counter_add(&c, a);
		else
			pcpu_counter_add_batch(&c, a, (int64_t)(pcpu_test_rand(&seed) % 5000));
		exact += a;
		pcpu_test_assert_exact(&c, exact);
	}
}

/* ---- sync_if_delta_above ------------------------------------------------ */

PCPU_TEST(counter, sync_with_a_delta_above_the_bound_returns_read_without_folding)
{
	cr_assert_eq(pcpu_counter_init(&c, 1000), 0);
	pcpu_test_pin_first();
	pcpu_counter_add(&c, 5); /* pending */
	cr_assert_eq(pcpu_counter_sync_if_delta_above(&c, pcpu_counter_error_bound(&c)), 1000);
	cr_assert_eq(pcpu_counter_read(&c), 1000, "folded although the bound was within delta");
	cr_assert_eq(pcpu_counter_sync_if_delta_above(&c, UINT64_MAX), 1000);
	cr_assert_eq(pcpu_counter_sum(&c), 1005);
}

PCPU_TEST(counter, sync_with_delta_zero_returns_the_exact_value_and_read_follows)
{
	cr_assert_eq(pcpu_counter_init(&c, 1000), 0);
	pcpu_test_pin_first();
	pcpu_counter_add(&c, 5);
	pcpu_counter_add(&c, -17);
	cr_assert_eq(pcpu_counter_sync_if_delta_above(&c, 0), 988);
	cr_assert_eq(pcpu_counter_read(&c), 988);
	cr_assert_eq(pcpu_counter_sum(&c), 988);
}

PCPU_TEST(counter, sync_folds_the_pending_deltas_of_every_cpu)
{
	int cpus[2];
	struct pcpu_counter_options o = { .batch = 1000 };

	if (pcpu_test_allowed_cpus(cpus, 2) < 2)
		cr_skip_test("needs two CPUs");
	cr_assert_eq(pcpu_counter_init_opts(&c, 0, &o), 0);
	cr_assert(pcpu_test_pin(cpus[0]));
	pcpu_counter_add(&c, 300);
	cr_assert(pcpu_test_pin(cpus[1]));
	pcpu_counter_add(&c, -400);
	cr_assert(pcpu_test_pin(cpus[0]));
	cr_assert_eq(pcpu_counter_sync_if_delta_above(&c, 0), -100);
	cr_assert_eq(pcpu_counter_read(&c), -100);
}

PCPU_TEST(counter, sync_result_and_later_read_are_within_delta_of_exact)
{
	int64_t exact = 0;
	uint64_t seed = 99;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	for (int i = 0; i < 2000; i++) {
		int64_t a = (int64_t)(pcpu_test_rand(&seed) % 20001) - 10000;
		uint64_t delta = pcpu_test_rand(&seed) % 300;
		int64_t got;

		pcpu_counter_add(&c, a);
		exact += a;
		got = pcpu_counter_sync_if_delta_above(&c, delta);
		cr_assert_leq(pcpu_test_distance(got, exact), delta);
		cr_assert_leq(pcpu_test_distance(pcpu_counter_read(&c), exact), delta);
	}
}

/* ---- monotone reads ----------------------------------------------------- */

enum fold_kind { FOLD_REGISTRY, FOLD_SYNC };

/*
 * The header's promise: while every update is >= 0 (<= 0 for @sign -1),
 * read() and sum() never go back. 2M adds of @sign, a fold of every CPU
 * every 997 adds (the registry's walk, or sync_if_delta_above(c, 0)), and a
 * watch on every read, sum and sync result. A fold that moved count past
 * exact (a slow path leaving an overstep pending against the direction of
 * travel) would let the next fold pull read() back.
 */
static void assert_reads_monotone_under_one_sign(int sign, enum fold_kind kind)
{
	struct pcpu_test_monotone r = pcpu_test_monotone(sign), m = pcpu_test_monotone(sign);
	long n = pcpu_test_iterations(2000000);

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_test_pin_first();
	for (long i = 1; i <= n; i++) {
		pcpu_counter_add(&c, sign);
		pcpu_test_monotone_see(&r, pcpu_counter_read(&c));
		pcpu_test_monotone_see(&m, pcpu_counter_sum(&c));
		if (i % 997 == 0) {
			if (kind == FOLD_REGISTRY)
				pcpu_registry_fold_all();
			else
				pcpu_test_monotone_see(&r, pcpu_counter_sync_if_delta_above(&c, 0));
			pcpu_test_monotone_see(&r, pcpu_counter_read(&c));
		}
	}
	cr_assert_eq(r.backs, 0,
		     "read() went back %ld times in %ld adds of %d; worst %" PRIu64
		     " (%" PRId64 " -> %" PRId64 ")",
		     r.backs, n, sign, r.worst, r.worst_from, r.worst_to);
	cr_assert_eq(m.backs, 0, "sum() went back %ld times; worst %" PRIu64, m.backs, m.worst);
	pcpu_test_assert_exact(&c, sign * (int64_t)n);
}

PCPU_TEST(counter, read_and_sum_never_drop_under_positive_adds_and_fold_all)
{
	assert_reads_monotone_under_one_sign(1, FOLD_REGISTRY);
}

PCPU_TEST(counter, read_and_sum_never_drop_under_positive_adds_and_sync_to_zero)
{
	assert_reads_monotone_under_one_sign(1, FOLD_SYNC);
}

PCPU_TEST(counter, read_and_sum_never_rise_under_negative_adds_and_fold_all)
{
	assert_reads_monotone_under_one_sign(-1, FOLD_REGISTRY);
}

PCPU_TEST(counter, read_and_sum_never_rise_under_negative_adds_and_sync_to_zero)
{
	assert_reads_monotone_under_one_sign(-1, FOLD_SYNC);
}

/* ---- compare ------------------------------------------------------------ */

static int sign(int64_t a, int64_t b)
{
	return a > b ? 1 : a < b ? -1 : 0;
}

PCPU_TEST(counter, compare_far_from_the_value_uses_the_sign)
{
	cr_assert_eq(pcpu_counter_init(&c, 1000000), 0);
	cr_assert_eq(pcpu_counter_compare(&c, 0), 1);
	cr_assert_eq(pcpu_counter_compare(&c, 2000000), -1);
	cr_assert_eq(pcpu_counter_compare(&c, INT64_MIN), 1);
	cr_assert_eq(pcpu_counter_compare(&c, INT64_MAX), -1);
}

PCPU_TEST(counter, compare_within_the_bound_goes_precise)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_test_pin_first();
	pcpu_counter_add(&c, 10); /* pending: read says 0 */
	cr_assert_eq(pcpu_counter_read(&c), 0);
	cr_assert_eq(pcpu_counter_compare(&c, 5), 1);
	cr_assert_eq(pcpu_counter_compare(&c, 10), 0);
	cr_assert_eq(pcpu_counter_compare(&c, 11), -1);
	cr_assert_eq(pcpu_counter_compare(&c, 0), 1);
	pcpu_counter_add(&c, -20);
	cr_assert_eq(pcpu_counter_compare(&c, 0), -1);
	cr_assert_eq(pcpu_counter_compare(&c, -10), 0);
}

PCPU_TEST(counter, compare_agrees_with_the_exact_sign_for_every_rhs_near_the_value)
{
	uint64_t seed = 5;
	int64_t exact = 0;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	for (int i = 0; i < 300; i++) {
		int64_t a = (int64_t)(pcpu_test_rand(&seed) % 20001) - 10000;
		int64_t span = (int64_t)pcpu_counter_error_bound(&c) * 2 + 2;

		pcpu_counter_add(&c, a);
		exact += a;
		for (int64_t rhs = exact - span; rhs <= exact + span; rhs += span / 40 + 1)
			cr_assert_eq(pcpu_counter_compare(&c, rhs), sign(exact, rhs),
				     "exact %" PRId64 " rhs %" PRId64, exact, rhs);
	}
}

PCPU_TEST(counter, compare_at_the_extremes_does_not_overflow)
{
	cr_assert_eq(pcpu_counter_init(&c, INT64_MAX), 0);
	cr_assert_eq(pcpu_counter_compare(&c, INT64_MIN), 1);
	cr_assert_eq(pcpu_counter_compare(&c, INT64_MAX), 0);
	pcpu_counter_destroy(&c);
	cr_assert_eq(pcpu_counter_init(&c, INT64_MIN), 0);
	cr_assert_eq(pcpu_counter_compare(&c, INT64_MAX), -1);
	cr_assert_eq(pcpu_counter_compare(&c, INT64_MIN), 0);
}

/* ---- limited_add -------------------------------------------------------- */

PCPU_TEST(counter, limited_add_positive_adds_up_to_the_limit_and_not_past_it)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert(pcpu_counter_limited_add(&c, 10, 5));
	cr_assert(pcpu_counter_limited_add(&c, 10, 5), "reaching the limit exactly is allowed");
	cr_assert_not(pcpu_counter_limited_add(&c, 10, 1));
	pcpu_test_assert_exact(&c, 10);
	cr_assert_not(pcpu_counter_limited_add(&c, 5, 1), "already above the limit");
	pcpu_test_assert_exact(&c, 10);
}

PCPU_TEST(counter, limited_add_negative_subtracts_down_to_the_limit_and_not_past_it)
{
	cr_assert_eq(pcpu_counter_init(&c, 10), 0);
	cr_assert(pcpu_counter_limited_add(&c, 0, -4));
	cr_assert(pcpu_counter_limited_add(&c, 0, -6), "reaching the limit exactly is allowed");
	cr_assert_not(pcpu_counter_limited_add(&c, 0, -1));
	pcpu_test_assert_exact(&c, 0);
	cr_assert_not(pcpu_counter_limited_add(&c, 5, -1), "already below the limit");
	cr_assert(pcpu_counter_limited_add(&c, -100, -100));
	pcpu_test_assert_exact(&c, -100);
}

PCPU_TEST(counter, limited_add_of_zero_returns_true_and_changes_nothing)
{
	cr_assert_eq(pcpu_counter_init(&c, 50), 0);
	cr_assert(pcpu_counter_limited_add(&c, 0, 0));
	cr_assert(pcpu_counter_limited_add(&c, 100, 0));
	pcpu_test_assert_exact(&c, 50);
}

PCPU_TEST(counter, limited_add_counts_pending_deltas_near_the_limit)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_test_pin_first();
	pcpu_counter_add(&c, 20); /* pending: read is 0, exact 20 */
	cr_assert_eq(pcpu_counter_read(&c), 0);
	cr_assert_not(pcpu_counter_limited_add(&c, 25, 10), "20 + 10 > 25");
	cr_assert(pcpu_counter_limited_add(&c, 30, 10), "20 + 10 <= 30");
	pcpu_test_assert_exact(&c, 30);
	pcpu_counter_add(&c, -40); /* exact -10 */
	cr_assert_not(pcpu_counter_limited_add(&c, -5, -1), "-10 is already below -5");
	cr_assert(pcpu_counter_limited_add(&c, -15, -5));
	pcpu_test_assert_exact(&c, -15);
}

PCPU_TEST(counter, limited_add_far_below_the_limit_succeeds_on_a_big_counter)
{
	cr_assert_eq(pcpu_counter_init(&c, GiB), 0);
	for (int i = 0; i < 1000; i++)
		cr_assert(pcpu_counter_limited_add(&c, 2 * GiB, 4096));
	pcpu_test_assert_exact(&c, GiB + 4096000);
	cr_assert_not(pcpu_counter_limited_add(&c, 2 * GiB, GiB));
	cr_assert(pcpu_counter_limited_add(&c, 2 * GiB, GiB - 4096000));
	pcpu_test_assert_exact(&c, 2 * GiB);
}

PCPU_TEST(counter, limited_add_that_would_overflow_fails)
{
	cr_assert_eq(pcpu_counter_init(&c, INT64_MAX - 5), 0);
	cr_assert_not(pcpu_counter_limited_add(&c, INT64_MAX, 10));
	cr_assert(pcpu_counter_limited_add(&c, INT64_MAX, 5));
	pcpu_test_assert_exact(&c, INT64_MAX);
	pcpu_counter_destroy(&c);
	cr_assert_eq(pcpu_counter_init(&c, INT64_MIN + 5), 0);
	cr_assert_not(pcpu_counter_limited_add(&c, INT64_MIN, -10));
	cr_assert(pcpu_counter_limited_add(&c, INT64_MIN, -5));
	pcpu_test_assert_exact(&c, INT64_MIN);
}

PCPU_TEST(counter, limited_add_matches_an_exact_oracle)
{
	uint64_t seed = 11;
	int64_t exact = 0;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	for (int i = 0; i < 5000; i++) {
		int64_t a = (int64_t)(pcpu_test_rand(&seed) % 201) - 100;
		int64_t limit = exact + (int64_t)(pcpu_test_rand(&seed) % 401) - 200;
		bool want = a == 0 || (a > 0 ? exact + a <= limit : exact + a >= limit);

		if (i % 4 == 0) {
			pcpu_counter_add(&c, a); /* keep some deltas pending */
			exact += a;
			continue;
		}
		cr_assert_eq(pcpu_counter_limited_add(&c, limit, a), want,
			     "exact %" PRId64 " limit %" PRId64 " amount %" PRId64, exact, limit, a);
		if (want)
			exact += a;
		pcpu_test_assert_exact(&c, exact);
	}
}

/* ---- set ---------------------------------------------------------------- */

PCPU_TEST(counter, set_drops_every_pending_delta)
{
	int cpus[2];
	int n = pcpu_test_allowed_cpus(cpus, 2);

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	for (int i = 0; i < n; i++) {
		cr_assert(pcpu_test_pin(cpus[i]));
		pcpu_counter_add(&c, 10 + i);
	}
	pcpu_counter_set(&c, 100);
	cr_assert_eq(pcpu_counter_read(&c), 100);
	cr_assert_eq(pcpu_counter_sum(&c), 100);
	pcpu_counter_add(&c, 1);
	pcpu_test_assert_exact(&c, 101);
}

PCPU_TEST(counter, set_recomputes_the_bound_for_the_new_value)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	arm_one_cpu(&c);
	pcpu_counter_set(&c, GiB);
	cr_assert_geq(pcpu_counter_error_bound(&c) * pcpu_cpu_possible(),
		      (uint64_t)GiB / 64 - pcpu_cpu_possible());
	pcpu_counter_set(&c, 0);
	cr_assert_eq(pcpu_counter_error_bound(&c), (uint64_t)pcpu_test_default_floor());
}

PCPU_TEST(counter, set_to_the_extremes_is_exact)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_counter_add(&c, 12345);
	pcpu_counter_set(&c, INT64_MAX);
	pcpu_test_assert_exact(&c, INT64_MAX);
	pcpu_counter_set(&c, INT64_MIN);
	pcpu_test_assert_exact(&c, INT64_MIN);
	pcpu_counter_add(&c, 5);
	pcpu_test_assert_exact(&c, INT64_MIN + 5);
}

PCPU_TEST(counter, set_keeps_the_fixed_batch)
{
	struct pcpu_counter_options o = { .batch = 50 };

	cr_assert_eq(pcpu_counter_init_opts(&c, 0, &o), 0);
	arm_one_cpu(&c);
	pcpu_counter_set(&c, 1024 * GiB);
	cr_assert_eq(pcpu_counter_error_bound(&c), 49);
}

/* ---- fold_this_cpu ------------------------------------------------------ */

PCPU_TEST(counter, fold_this_cpu_folds_the_calling_cpu)
{
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_test_pin_first();
	pcpu_counter_add(&c, 10);
	cr_assert_eq(pcpu_counter_read(&c), 0);
	pcpu_counter_fold_this_cpu(&c);
	cr_assert_eq(pcpu_counter_read(&c), 10);
	pcpu_counter_add(&c, -3);
	pcpu_counter_fold_this_cpu(&c);
	cr_assert_eq(pcpu_counter_read(&c), 7);
	pcpu_counter_fold_this_cpu(&c); /* nothing pending: no change */
	cr_assert_eq(pcpu_counter_read(&c), 7);
	cr_assert_eq(pcpu_counter_sum(&c), 7);
}

static void add_four(void *arg)
{
	(void)arg;
	pcpu_test_first_add(&c);
	pcpu_counter_add(&c, 4);
}

PCPU_TEST(counter, fold_this_cpu_leaves_other_cpus_pending)
{
	int cpus[2];

	if (pcpu_test_allowed_cpus(cpus, 2) < 2)
		cr_skip_test("needs two CPUs");
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	/* another thread: on the atomic path a thread's adds all go to its own slot */
	cr_assert(pcpu_test_on_cpu(cpus[1], add_four, NULL));
	cr_assert(pcpu_test_pin(cpus[0]));
	pcpu_counter_add(&c, 10);
	pcpu_counter_fold_this_cpu(&c);
	cr_assert_eq(pcpu_counter_read(&c), 10);
	cr_assert_eq(pcpu_counter_sum(&c), 14);
}

/* ---- initialized -------------------------------------------------------- */

PCPU_TEST(counter, initialized_follows_the_lifecycle)
{
	static struct pcpu_counter zero;

	cr_assert_not(pcpu_counter_initialized(NULL));
	cr_assert_not(pcpu_counter_initialized(&zero));
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert(pcpu_counter_initialized(&c));
	pcpu_counter_set(&c, 5);
	cr_assert(pcpu_counter_initialized(&c));
	pcpu_counter_destroy(&c);
	cr_assert_not(pcpu_counter_initialized(&c));
}
