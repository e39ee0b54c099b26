/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of <percpu/stat.h>: creation and bad descriptors, the central
 * layout, the fast path, grouped-cacheline folding, hysteresis, elastic
 * thresholds, reads (read, sum, snapshot, sync_if_delta_above, fold_all),
 * names, out-of-range items, fork, and the ABI of the exposed structs.
 * Single-threaded, pinned where "this CPU" matters; the many-thread oracles
 * are in test_stat_stress.c.
 */
#include "stat_helpers.h"

#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(stat, .timeout = 60);

/* ---- creation and bad descriptors ---------------------------------------- */

static char long_name[PCPU_STAT_MAX_NAME + 2];

struct bad_desc {
	const char *what;
	int kind;
};

enum {
	BAD_NULL_DESC,
	BAD_NULL_ITEMS,
	BAD_ZERO_ITEMS,
	BAD_TOO_MANY_ITEMS,
	BAD_UINT32_MAX_ITEMS,
	BAD_NULL_NAME,
	BAD_EMPTY_NAME,
	BAD_LONG_NAME,
	BAD_DUPLICATE_NAME,
	BAD_DUPLICATE_FAR_APART,
	BAD_NEGATIVE_ACCURACY,
	BAD_HUGE_ACCURACY,
	BAD_NEGATIVE_FLOOR,
	BAD_HUGE_FLOOR,
	BAD_UNKNOWN_FLAGS,
	BAD_KINDS
};

ParameterizedTestParameters(stat, create_rejects_bad_descriptor_with_einval)
{
	static struct bad_desc cases[] = {
		{ "NULL descriptor", BAD_NULL_DESC },
		{ "NULL items", BAD_NULL_ITEMS },
		{ "empty descriptor", BAD_ZERO_ITEMS },
		{ "more items than fit a CPU's stride", BAD_TOO_MANY_ITEMS },
		{ "UINT32_MAX items", BAD_UINT32_MAX_ITEMS },
		{ "NULL name", BAD_NULL_NAME },
		{ "empty name", BAD_EMPTY_NAME },
		{ "over-long name", BAD_LONG_NAME },
		{ "duplicate names", BAD_DUPLICATE_NAME },
		{ "duplicate names far apart", BAD_DUPLICATE_FAR_APART },
		{ "negative accuracy", BAD_NEGATIVE_ACCURACY },
		{ "accuracy above the maximum", BAD_HUGE_ACCURACY },
		{ "negative floor", BAD_NEGATIVE_FLOOR },
		{ "floor above the threshold cap", BAD_HUGE_FLOOR },
		{ "unknown flags", BAD_UNKNOWN_FLAGS },
	};

	return cr_make_param_array(struct bad_desc, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct bad_desc *bad, stat, create_rejects_bad_descriptor_with_einval)
{
	static struct pcpu_stat_item items[PCPU_STAT_MAX_ITEMS + 1];
	struct pcpu_stat_desc desc = { .items = items, .nr_items = 4 };
	const struct pcpu_stat_desc *d = &desc;
	struct pcpu_stat *s;

	for (unsigned int i = 0; i <= PCPU_STAT_MAX_ITEMS; i++)
		items[i] = (struct pcpu_stat_item){ .name = stat_test_name(i) };
	memset(long_name, 'x', sizeof(long_name) - 1);
	switch (bad->kind) {
	case BAD_NULL_DESC: d = NULL; break;
	case BAD_NULL_ITEMS: desc.items = NULL; break;
	case BAD_ZERO_ITEMS: desc.nr_items = 0; break;
	case BAD_TOO_MANY_ITEMS: desc.nr_items = PCPU_STAT_MAX_ITEMS + 1; break;
	case BAD_UINT32_MAX_ITEMS: desc.nr_items = UINT32_MAX; break;
	case BAD_NULL_NAME: items[2].name = NULL; break;
	case BAD_EMPTY_NAME: items[1].name = ""; break;
	case BAD_LONG_NAME: items[3].name = long_name; break;
	case BAD_DUPLICATE_NAME: items[1].name = items[0].name; break;
	case BAD_DUPLICATE_FAR_APART:
		desc.nr_items = PCPU_STAT_MAX_ITEMS;
		items[PCPU_STAT_MAX_ITEMS - 1].name = stat_test_name(7);
		break;
	case BAD_NEGATIVE_ACCURACY: items[0].accuracy = -1; break;
	case BAD_HUGE_ACCURACY: items[0].accuracy = PCPU_STAT_MAX_ACCURACY + 1; break;
	case BAD_NEGATIVE_FLOOR: items[0].floor = -5; break;
	case BAD_HUGE_FLOOR: items[0].floor = (int64_t)PCPU_STAT_MAX_THRESH + 1; break;
	case BAD_UNKNOWN_FLAGS: desc.flags = 0x80; break;
	}
	errno = 0;
	s = pcpu_stat_create(d);
	cr_assert_null(s, "%s: created a set", bad->what);
	cr_assert_eq(errno, EINVAL, "%s: errno %d, not EINVAL", bad->what, errno);
}

PCPU_TEST(stat, create_accepts_the_limits)
{
	static struct pcpu_stat_item items[PCPU_STAT_MAX_ITEMS];
	struct pcpu_stat_desc desc = { .items = items, .nr_items = PCPU_STAT_MAX_ITEMS };
	struct pcpu_stat *s;

	memset(long_name, 'y', PCPU_STAT_MAX_NAME);
	long_name[PCPU_STAT_MAX_NAME] = '\0';
	for (unsigned int i = 0; i < PCPU_STAT_MAX_ITEMS; i++)
		items[i] = (struct pcpu_stat_item){ .name = stat_test_name(i), .group = i % 5 };
	items[0].name = long_name;
	items[1].floor = PCPU_STAT_MAX_THRESH;
	items[2].accuracy = PCPU_STAT_MAX_ACCURACY;
	s = pcpu_stat_create(&desc);
	cr_assert_not_null(s, "512 items, longest name, largest options: %s", strerror(errno));
	cr_assert_eq(pcpu_stat_count(s), PCPU_STAT_MAX_ITEMS);
	cr_assert_str_eq(pcpu_stat_name(s, 0), long_name);
	cr_assert_eq(s->hot[1].threshold, PCPU_STAT_MAX_THRESH);
	pcpu_stat_add(s, PCPU_STAT_MAX_ITEMS - 1, 7);
	cr_assert_eq(pcpu_stat_sum(s, PCPU_STAT_MAX_ITEMS - 1), 7);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, destroy_of_null_does_nothing)
{
	pcpu_stat_destroy(NULL);
}

PCPU_TEST(stat, create_copies_names_and_destroy_unregisters)
{
	char name[] = "transient";
	struct pcpu_stat_item item = { .name = name };
	struct pcpu_stat_desc desc = { .items = &item, .nr_items = 1 };
	size_t live = pcpu_registry_count_of(&pcpu_stat_class);
	struct pcpu_stat *s = pcpu_stat_create(&desc);

	cr_assert_not_null(s);
	cr_assert_eq(pcpu_registry_count_of(&pcpu_stat_class), live + 1);
	name[0] = 'X';
	cr_assert_str_eq(pcpu_stat_name(s, 0), "transient");
	pcpu_stat_destroy(s);
	cr_assert_eq(pcpu_registry_count_of(&pcpu_stat_class), live);
}

/* ---- names, groups, out-of-range items with an errno ----------------------- */

PCPU_TEST(stat, names_groups_and_lookup_round_trip)
{
	static const uint32_t groups[] = { 3, 0, 3, 9 };
	struct pcpu_stat *s = stat_test_create(4, groups, 0, 0);
	uint32_t group = 77;

	cr_assert_eq(pcpu_stat_count(s), 4);
	for (unsigned int i = 0; i < 4; i++) {
		cr_assert_str_eq(pcpu_stat_name(s, i), stat_test_name(i));
		cr_assert_eq(pcpu_stat_lookup(s, stat_test_name(i)), (int)i);
		cr_assert_eq(pcpu_stat_group(s, i, &group), 0);
		cr_assert_eq(group, groups[i]);
	}
	cr_assert_eq(pcpu_stat_lookup(s, "no such item"), -ENOENT);
	cr_assert_eq(pcpu_stat_lookup(s, NULL), -EINVAL);
	cr_assert_eq(pcpu_stat_lookup(NULL, "item0"), -EINVAL);
	cr_assert_eq(pcpu_stat_count(NULL), 0);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, out_of_range_item_gets_erange_from_calls_that_return_errors)
{
	struct pcpu_stat *s = stat_test_create(3, NULL, 0, 0);
	uint32_t group = 5;

	errno = 0;
	cr_assert_null(pcpu_stat_name(s, 3));
	cr_assert_eq(errno, ERANGE);
	errno = 0;
	cr_assert_null(pcpu_stat_name(s, UINT32_MAX));
	cr_assert_eq(errno, ERANGE);
	errno = 0;
	cr_assert_null(pcpu_stat_name(NULL, 0));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(pcpu_stat_group(s, 3, &group), -ERANGE);
	cr_assert_eq(group, 5, "a failed call wrote its output");
	cr_assert_eq(pcpu_stat_group(s, 0, NULL), -EINVAL);
	cr_assert_eq(pcpu_stat_group(NULL, 0, &group), -EINVAL);
	cr_assert_eq(pcpu_stat_snapshot(NULL, (int64_t[3]){ 0 }, NULL), -EINVAL);
	cr_assert_eq(pcpu_stat_snapshot(s, NULL, NULL), -EINVAL);
	pcpu_stat_destroy(s);
}

/* ---- misuse of calls that cannot report an error -------------------------- */

static struct pcpu_stat *misuse_set;

static void misuse_setup(void)
{
	misuse_set = stat_test_create(3, NULL, 0, 0);
	pcpu_stat_add(misuse_set, 0, 5);
}

/* Reached only in release builds: nothing may have changed. */
static void misuse_check(void)
{
	cr_assert_eq(pcpu_stat_sum(misuse_set, 0), 5);
	cr_assert_eq(pcpu_stat_sum(misuse_set, 1), 0);
	cr_assert_eq(pcpu_stat_sum(misuse_set, 2), 0);
	pcpu_stat_destroy(misuse_set);
}

#define MISUSE(name, statement)                                                            \
	PCPU_TEST(stat, name, .init = misuse_setup, .signal = PCPU_TEST_MISUSE_SIGNAL)     \
	{                                                                                  \
		struct pcpu_stat *S = misuse_set;                                          \
		(void)S;                                                                   \
		statement;                                                                 \
		misuse_check();                                                            \
	}

MISUSE(add_out_of_range_aborts_or_is_ignored, pcpu_stat_add(S, 3, 1))
MISUSE(add_huge_index_aborts_or_is_ignored, pcpu_stat_add(S, UINT32_MAX, -(INT64_C(1) << 40)))
MISUSE(add_to_null_aborts_or_is_ignored, pcpu_stat_add(NULL, 0, 1))
MISUSE(read_out_of_range_aborts_or_returns_0, cr_assert_eq(pcpu_stat_read(S, 3), 0))
MISUSE(read_null_aborts_or_returns_0, cr_assert_eq(pcpu_stat_read(NULL, 0), 0))
MISUSE(bound_out_of_range_aborts_or_returns_0, cr_assert_eq(pcpu_stat_error_bound(S, 9), 0))
MISUSE(sum_out_of_range_aborts_or_returns_0, cr_assert_eq(pcpu_stat_sum(S, 3), 0))
MISUSE(sync_out_of_range_aborts_or_returns_0,
       cr_assert_eq(pcpu_stat_sync_if_delta_above(S, 3, 0), 0))
MISUSE(fold_all_null_aborts_or_is_ignored, pcpu_stat_fold_all(NULL))

/* ---- layout ---------------------------------------------------------------- */

/* Which items does central line @line hold? As a bit mask over item indices. */
static uint64_t items_in_line(struct pcpu_stat *s, unsigned int line)
{
	uint64_t mask = 0;

	for (unsigned int i = 0; i < pcpu_stat_count(s); i++)
		if (pcpu_stat_debug_line(s, i) == line)
			mask |= UINT64_C(1) << i;
	return mask;
}

PCPU_TEST(stat, groups_start_on_fresh_lines_and_ungrouped_items_are_packed)
{
	/* group 5: items 0, 3, 6 | group 2: items 1, 4, 12-19 (10: spans 2 lines) | 7 others */
	static const uint32_t groups[20] = { 5, 2, 0, 5, 2, 0, 5, 0, 0, 0,
					     0, 0, 2, 2, 2, 2, 2, 2, 2, 2 };
	struct pcpu_stat *s = stat_test_create(20, groups, 0, 0);
	unsigned int lines;

	lines = pcpu_stat_debug_nr_lines(s);
	/* group 5: 1 line; group 2: 2 lines; the 7 ungrouped items fill 1 line */
	cr_assert_eq(lines, 4, "%u lines", lines);
	cr_assert_eq(items_in_line(s, 0), (1u << 0) | (1u << 3) | (1u << 6));
	cr_assert_eq(items_in_line(s, 1) | items_in_line(s, 2),
		     (1u << 1) | (1u << 4) | (0xffu << 12));
	cr_assert_eq(__builtin_popcountll(items_in_line(s, 1)), PCPU_STAT_LINE_ITEMS,
		     "a big group fills its first line");
	cr_assert_eq(items_in_line(s, 3), (1u << 2) | (1u << 5) | (0x1fu << 7));
	for (unsigned int l = 0; l < lines; l++)
		cr_assert_eq((uintptr_t)pcpu_stat_debug_line_words(s, l) % 64, 0,
			     "line %u is not cacheline-aligned", l);
	for (unsigned int l = 1; l < lines; l++)
		cr_assert_eq(pcpu_stat_debug_line_words(s, l) - pcpu_stat_debug_line_words(s, l - 1),
			     8, "lines are not whole, consecutive cachelines");
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, one_per_line_gives_every_item_its_own_line)
{
	static const uint32_t groups[] = { 1, 1, 1, 0, 0 };
	struct pcpu_stat *s = stat_test_create(5, groups, 0, PCPU_STAT_ONE_PER_LINE);

	cr_assert_eq(pcpu_stat_debug_nr_lines(s), 5);
	for (unsigned int i = 0; i < 5; i++)
		cr_assert_eq(__builtin_popcountll(items_in_line(s, pcpu_stat_debug_line(s, i))), 1);
	cr_assert_eq(s->flags, PCPU_STAT_ONE_PER_LINE);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, per_cpu_words_of_a_line_are_contiguous)
{
	static const uint32_t groups[] = { 0, 4, 0, 4, 4 };
	struct pcpu_stat *s = stat_test_create(5, groups, 0, 0);

	/* group 4 first (items 1, 3, 4), then the ungrouped items 0, 2 */
	cr_assert_eq(s->hot[1].slot, 0);
	cr_assert_eq(s->hot[3].slot, 1);
	cr_assert_eq(s->hot[4].slot, 2);
	cr_assert_eq(s->hot[0].slot, 3);
	cr_assert_eq(s->hot[2].slot, 4);
	pcpu_stat_destroy(s);
}

/* ---- the fast path and thresholds ------------------------------------------- */

PCPU_TEST(stat, default_threshold_is_the_counter_floor)
{
	struct pcpu_stat *s = stat_test_create(2, NULL, 0, 0);
	int64_t floor = 32; /* at any CPU count (test_floor_at_scale.c has 1024) */

	cr_assert_eq(s->hot[0].threshold, (uint32_t)floor);
	cr_assert_eq(pcpu_stat_error_bound(s, 0), 0, "a bound before any CPU added");
	pcpu_test_pin_first();
	pcpu_stat_add(s, 1, 0); /* arms this CPU's words: the bound counts one CPU */
	cr_assert_eq(pcpu_stat_error_bound(s, 0), (uint64_t)floor);
	cr_assert_eq(pcpu_stat_sum(s, 0), 0);
	cr_assert_eq(pcpu_stat_sum(s, 1), 0);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, small_adds_stay_on_this_cpu)
{
	int cpu = stat_test_pin_or_skip();
	struct pcpu_stat *s = stat_test_create(3, NULL, 1000, 0);

	for (int k = 0; k < 100; k++)
		pcpu_stat_add(s, 1, 5); /* 500 <= 1000 */
	pcpu_stat_add(s, 2, -300);
	cr_assert_eq(pcpu_stat_read(s, 1), 0, "an add below the threshold reached the line");
	cr_assert_eq(pcpu_stat_debug_pending(s, 1, (unsigned int)cpu), 500);
	cr_assert_eq(pcpu_stat_debug_pending(s, 2, (unsigned int)cpu), -300);
	cr_assert_eq(pcpu_stat_sum(s, 1), 500);
	cr_assert_eq(pcpu_stat_sum(s, 2), -300);
	cr_assert_eq(pcpu_stat_sum(s, 0), 0);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, passing_the_threshold_folds_everything_and_read_never_drops)
{
	int cpu = stat_test_pin_or_skip();
	struct pcpu_stat *s = stat_test_create(1, NULL, 100, 0);
	int folds = 0, adds = 0;
	int64_t last = 0;

	/* a steady stream of +1: a fold every 101 adds, nothing left pending */
	for (adds = 1; adds <= 101 * 4; adds++) {
		pcpu_stat_add(s, 0, 1);
		cr_assert_geq(pcpu_stat_read(s, 0), last, "read() went back after %d adds", adds);
		if (pcpu_stat_read(s, 0) != last) {
			last = pcpu_stat_read(s, 0);
			folds++;
			cr_assert_eq(pcpu_stat_debug_pending(s, 0, (unsigned int)cpu), 0,
				     "fold %d left %d pending", folds,
				     pcpu_stat_debug_pending(s, 0, (unsigned int)cpu));
			cr_assert_eq(adds, 101 * folds, "fold %d after %d adds", folds, adds);
		}
	}
	cr_assert_eq(folds, 4);
	cr_assert_eq(pcpu_stat_sum(s, 0), adds - 1);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, charge_uncharge_pairs_stay_local)
{
	int cpu = stat_test_pin_or_skip();
	struct pcpu_stat *s = stat_test_create(1, NULL, 8192, 0);

	for (int k = 0; k < 10000; k++) {
		pcpu_stat_add(s, 0, 4096);
		pcpu_stat_add(s, 0, -4096);
	}
	cr_assert_eq(pcpu_stat_read(s, 0), 0, "pairs folded");
	cr_assert_eq(pcpu_stat_debug_pending(s, 0, (unsigned int)cpu), 0);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, adds_above_the_threshold_go_central)
{
	int cpu = stat_test_pin_or_skip();
	struct pcpu_stat *s = stat_test_create(1, NULL, 100, 0);

	pcpu_stat_add(s, 0, -30);
	pcpu_stat_add(s, 0, 101); /* > 100: slow path, folds the -30 too */
	cr_assert_eq(pcpu_stat_read(s, 0), 71);
	cr_assert_eq(pcpu_stat_debug_pending(s, 0, (unsigned int)cpu), 0);
	cr_assert_eq(pcpu_stat_sum(s, 0), 71);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, amounts_of_any_size_are_exact)
{
	static const int64_t amounts[] = {
		(INT64_C(1) << 29), -(INT64_C(1) << 29), (INT64_C(1) << 31) + 3, -(INT64_C(1) << 32),
		INT64_C(1) << 40, -(INT64_C(1) << 40) + 1, INT32_MAX, INT32_MIN, 1, -1,
	};
	struct pcpu_stat *s = stat_test_create(2, NULL, 0, 0);
	int64_t exact = 0;

	for (size_t k = 0; k < sizeof(amounts) / sizeof(amounts[0]); k++) {
		pcpu_stat_add(s, 1, amounts[k]);
		exact += amounts[k];
		cr_assert_eq(pcpu_stat_sum(s, 1), exact, "after adding %" PRId64, amounts[k]);
	}
	stat_test_assert_exact(s, (int64_t[]){ 0, exact });
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, extreme_amounts_wrap_like_int64_without_undefined_behaviour)
{
	int cpu = stat_test_pin_or_skip();
	struct pcpu_stat *s = stat_test_create(1, NULL, 100, 0);

	pcpu_stat_add(s, 0, 40); /* pending 40 on this CPU */
	pcpu_stat_add(s, 0, INT64_MAX);
	cr_assert_eq(pcpu_stat_sum(s, 0), (int64_t)((uint64_t)INT64_MAX + 40));
	pcpu_stat_add(s, 0, INT64_MIN);
	pcpu_stat_add(s, 0, INT64_MIN);
	cr_assert_eq(pcpu_stat_sum(s, 0), (int64_t)((uint64_t)INT64_MAX + 40 + 2 * (uint64_t)INT64_MIN));
	cr_assert_leq(pcpu_test_distance(pcpu_stat_debug_pending(s, 0, (unsigned int)cpu), 0),
		      s->hot[0].threshold, "an extreme amount left the pending delta out of bounds");
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, threshold_is_elastic_and_capped)
{
	struct pcpu_stat_item items[] = {
		{ .name = "bytes" },
		{ .name = "coarse", .accuracy = 1 },
		{ .name = "precise", .accuracy = 1 << 20, .floor = 7 },
	};
	struct pcpu_stat_desc desc = { .items = items, .nr_items = 3 };
	struct pcpu_stat *s = pcpu_stat_create(&desc);
	uint64_t cpus = pcpu_cpu_possible();
	/* large enough that accuracy 1 passes the cap on any machine */
	int64_t value = (INT64_C(1) << 29) * (int64_t)cpus;

	cr_assert_not_null(s);
	pcpu_test_pin_first(); /* one armed CPU: the bound is the largest threshold */
	for (unsigned int i = 0; i < 3; i++)
		pcpu_stat_add(s, i, value);
	cr_assert_eq(s->hot[0].threshold, (uint32_t)((uint64_t)value / (64 * cpus)));
	cr_assert_eq(s->hot[1].threshold, PCPU_STAT_MAX_THRESH, "capped at 2^29 - 1");
	cr_assert_eq(s->hot[2].threshold, (uint32_t)((uint64_t)value / ((1u << 20) * cpus)));
	cr_assert_eq(pcpu_stat_error_bound(s, 1), (uint64_t)PCPU_STAT_MAX_THRESH);
	/* the threshold follows the value down; the bound never shrinks */
	pcpu_stat_add(s, 0, -value);
	cr_assert_lt(s->hot[0].threshold, (uint32_t)((uint64_t)value / (64 * cpus)) / 8);
	cr_assert_eq(pcpu_stat_error_bound(s, 0), (uint64_t)value / (64 * cpus));
	stat_test_assert_exact(s, (int64_t[]){ 0, value, value });
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, random_adds_from_one_thread_are_exact)
{
	struct pcpu_stat *s = stat_test_create(10, NULL, 0, 0);
	int64_t exact[10] = { 0 };
	uint64_t rng = 42;
	long n = pcpu_test_iterations(200000);

	for (long k = 0; k < n; k++) {
		unsigned int i = (unsigned int)(pcpu_test_rand(&rng) % 10);
		int64_t amount = (int64_t)(pcpu_test_rand(&rng) % 201) - 100;

		if (k % 1000 == 0)
			amount *= 1000000;
		pcpu_stat_add(s, i, amount);
		exact[i] += amount;
	}
	stat_test_assert_exact(s, exact);
	pcpu_stat_destroy(s);
}

/* ---- grouped-cacheline folding --------------------------------------------- */

PCPU_TEST(stat, group_fold_empties_its_line_and_touches_no_other)
{
	/* items 0-2: group 1; items 3-5: group 2; item 6 ungrouped */
	static const uint32_t groups[] = { 1, 1, 1, 2, 2, 2, 0 };
	int cpu = stat_test_pin_or_skip();
	struct pcpu_stat *s = stat_test_create(7, groups, 100, 0);
	unsigned int line_a = pcpu_stat_debug_line(s, 0);
	unsigned int lines = pcpu_stat_debug_nr_lines(s);
	int64_t before[8][8], pending_before[7];
	uint32_t folds_before;

	cr_assert_eq(lines, 3);
	for (unsigned int i = 0; i < 7; i++)
		pcpu_stat_add(s, i, 10 + (int64_t)i);
	for (unsigned int l = 0; l < lines; l++)
		memcpy(before[l], pcpu_stat_debug_line_words(s, l), 64);
	folds_before = pcpu_stat_debug_line_folds(s, line_a);
	for (unsigned int i = 0; i < 7; i++)
		pending_before[i] = pcpu_stat_debug_pending(s, i, (unsigned int)cpu);

	/* item 1 at 11; +45 twice takes it to 101 > 100 */
	pcpu_stat_add(s, 1, 45);
	cr_assert_eq(pcpu_stat_read(s, 1), 0, "folded too early");
	pcpu_stat_add(s, 1, 45);

	cr_assert_eq(pcpu_stat_read(s, 0), 10, "group mate 0 not folded with item 1");
	cr_assert_eq(pcpu_stat_read(s, 2), 12, "group mate 2 not folded with item 1");
	cr_assert_eq(pcpu_stat_read(s, 1), 101, "item 1 not folded whole");
	cr_assert_eq(pcpu_stat_debug_pending(s, 0, (unsigned int)cpu), 0);
	cr_assert_eq(pcpu_stat_debug_pending(s, 2, (unsigned int)cpu), 0);
	cr_assert_eq(pcpu_stat_debug_pending(s, 1, (unsigned int)cpu), 0,
		     "the trigger left something pending");
	cr_assert_eq(pcpu_stat_debug_line_folds(s, line_a), folds_before + 1,
		     "one fold visit, one generation");
	cr_assert(pcpu_stat_debug_line_idle(s, line_a), "writers or freezers left behind");
	for (unsigned int l = 0; l < lines; l++)
		if (l != line_a)
			cr_assert_eq(memcmp(before[l], pcpu_stat_debug_line_words(s, l), 64), 0,
				     "line %u changed", l);
	for (unsigned int i = 3; i < 7; i++)
		cr_assert_eq(pcpu_stat_debug_pending(s, i, (unsigned int)cpu), pending_before[i],
			     "item %u of another line was folded", i);
	stat_test_assert_exact(s, (int64_t[]){ 10, 101, 12, 13, 14, 15, 16 });
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, one_per_line_folds_only_the_item)
{
	static const uint32_t groups[] = { 1, 1 };
	int cpu = stat_test_pin_or_skip();
	struct pcpu_stat *s = stat_test_create(2, groups, 100, PCPU_STAT_ONE_PER_LINE);

	pcpu_stat_add(s, 0, 20);
	pcpu_stat_add(s, 1, 50);
	pcpu_stat_add(s, 1, 50);
	pcpu_stat_add(s, 1, 50);
	cr_assert_eq(pcpu_stat_debug_pending(s, 0, (unsigned int)cpu), 20);
	cr_assert_eq(pcpu_stat_read(s, 0), 0);
	cr_assert_neq(pcpu_stat_read(s, 1), 0);
	stat_test_assert_exact(s, (int64_t[]){ 20, 150 });
	pcpu_stat_destroy(s);
}

/* ---- reads ------------------------------------------------------------------- */

PCPU_TEST(stat, snapshot_equals_per_item_sums_at_quiescence)
{
	static const uint32_t groups[] = { 1, 2, 1, 2, 0, 0, 3, 3, 3, 3, 3, 3, 3, 3, 3 };
	struct pcpu_stat *s = stat_test_create(15, groups, 0, 0);
	int64_t values[15], exact[15] = { 0 };
	uint64_t bounds[15], rng = 7;

	for (int k = 0; k < 5000; k++) {
		unsigned int i = (unsigned int)(pcpu_test_rand(&rng) % 15);
		int64_t amount = (int64_t)(pcpu_test_rand(&rng) % 61) - 20;

		pcpu_stat_add(s, i, amount);
		exact[i] += amount;
	}
	cr_assert_eq(pcpu_stat_snapshot(s, values, bounds), 0);
	for (unsigned int i = 0; i < 15; i++) {
		cr_assert_eq(values[i], pcpu_stat_sum(s, i), "item %u", i);
		cr_assert_eq(values[i], exact[i], "item %u", i);
		cr_assert_eq(bounds[i], pcpu_stat_error_bound(s, i));
		cr_assert_leq(pcpu_test_distance(pcpu_stat_read(s, i), exact[i]), bounds[i]);
	}
	cr_assert_eq(pcpu_stat_snapshot(s, values, NULL), 0, "bounds are optional");
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, frozen_reads_are_exact_too)
{
	struct pcpu_stat *s = stat_test_create(9, NULL, 4, 0);
	int64_t values[9], exact[9] = { 0 };

	for (unsigned int i = 0; i < 9; i++) {
		pcpu_stat_add(s, i, (int64_t)i * 3 - 7);
		pcpu_stat_add(s, i, 1);
		exact[i] = (int64_t)i * 3 - 6;
	}
	pcpu_stat_debug_optimistic_tries(0);
	cr_assert_eq(pcpu_stat_snapshot(s, values, NULL), 0);
	for (unsigned int i = 0; i < 9; i++) {
		cr_assert_eq(values[i], exact[i]);
		cr_assert_eq(pcpu_stat_sum(s, i), exact[i]);
	}
	for (unsigned int l = 0; l < pcpu_stat_debug_nr_lines(s); l++)
		cr_assert(pcpu_stat_debug_line_idle(s, l),
			     "line %u left frozen", l);
	pcpu_stat_debug_optimistic_tries(4);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, sync_folds_only_when_the_bound_exceeds_delta)
{
	static const uint32_t groups[] = { 1, 1, 2 };
	int cpu = stat_test_pin_or_skip();
	struct pcpu_stat *s = stat_test_create(3, groups, 1000, 0);
	uint64_t bound;

	pcpu_stat_add(s, 0, 300);
	pcpu_stat_add(s, 1, -200);
	pcpu_stat_add(s, 2, 100);
	bound = pcpu_stat_error_bound(s, 0);
	cr_assert_eq(pcpu_stat_sync_if_delta_above(s, 0, bound), 0, "folded though bound <= delta");
	cr_assert_eq(pcpu_stat_debug_pending(s, 0, (unsigned int)cpu), 300);
	cr_assert_eq(pcpu_stat_sync_if_delta_above(s, 0, bound - 1), 300);
	cr_assert_eq(pcpu_stat_debug_pending(s, 0, (unsigned int)cpu), 0);
	cr_assert_eq(pcpu_stat_read(s, 1), -200, "the line mate was not folded with it");
	cr_assert_eq(pcpu_stat_read(s, 2), 0, "another line was folded");
	cr_assert_eq(pcpu_stat_debug_pending(s, 2, (unsigned int)cpu), 100);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, fold_all_makes_read_exact)
{
	struct pcpu_stat *s = stat_test_create(20, NULL, 10000, 0);
	unsigned int cpus = pcpu_cpu_possible();
	int64_t exact[20] = { 0 };

	for (unsigned int i = 0; i < 20; i++) {
		pcpu_stat_add(s, i, (int64_t)i * 101 - 999);
		exact[i] = (int64_t)i * 101 - 999;
	}
	pcpu_stat_fold_all(s);
	for (unsigned int i = 0; i < 20; i++) {
		cr_assert_eq(pcpu_stat_read(s, i), exact[i], "item %u", i);
		for (unsigned int cpu = 0; cpu < cpus; cpu++)
			cr_assert_eq(pcpu_stat_debug_pending(s, i, cpu), 0);
	}
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, refresher_hook_folds_every_live_set)
{
	struct pcpu_stat *a = stat_test_create(2, NULL, 1000, 0);
	struct pcpu_stat *b = stat_test_create(3, NULL, 1000, 0);

	pcpu_stat_add(a, 1, 17);
	pcpu_stat_add(b, 2, -9);
	pcpu_registry_fold_all();
	cr_assert_eq(pcpu_stat_read(a, 1), 17);
	cr_assert_eq(pcpu_stat_read(b, 2), -9);
	pcpu_stat_destroy(a);
	pcpu_stat_destroy(b);
}

/* ---- monotone reads ---------------------------------------------------------- */

/*
 * The header's promise: while every update of an item is >= 0 (<= 0 for
 * @sign -1), its read() and sum() never go back. 2M adds of @sign to item 0
 * (and every other one to item 1, which shares its central line, so the
 * line's folds move both), and every 997 adds a fold of every CPU, taking
 * turns: pcpu_stat_fold_all(), pcpu_registry_fold_all(),
 * pcpu_stat_sync_if_delta_above(s, 0, 0). A fold that left the central
 * value past exact would let the next one pull read() back.
 */
static void assert_stat_reads_monotone_under_one_sign(int sign)
{
	struct pcpu_test_monotone r[2] = { pcpu_test_monotone(sign), pcpu_test_monotone(sign) };
	struct pcpu_test_monotone m[2] = { pcpu_test_monotone(sign), pcpu_test_monotone(sign) };
	struct pcpu_stat *s = stat_test_create(3, NULL, 0, 0);
	long n = pcpu_test_iterations(2000000);
	int64_t exact[3] = { 0 };

	stat_test_pin_or_skip();
	for (long i = 1; i <= n; i++) {
		pcpu_stat_add(s, 0, sign);
		exact[0] += sign;
		if (i % 2 == 0) {
			pcpu_stat_add(s, 1, sign);
			exact[1] += sign;
		}
		if (i % 997 == 0) {
			switch ((i / 997) % 3) {
			case 0:
				pcpu_stat_fold_all(s);
				break;
			case 1:
				pcpu_registry_fold_all();
				break;
			default:
				pcpu_test_monotone_see(&r[0], pcpu_stat_sync_if_delta_above(s, 0, 0));
				break;
			}
		}
		for (unsigned int k = 0; k < 2; k++) {
			pcpu_test_monotone_see(&r[k], pcpu_stat_read(s, k));
			pcpu_test_monotone_see(&m[k], pcpu_stat_sum(s, k));
		}
	}
	for (unsigned int k = 0; k < 2; k++) {
		cr_assert_eq(r[k].backs, 0,
			     "item %u: read() went back %ld times in %ld adds of %d; worst %" PRIu64
			     " (%" PRId64 " -> %" PRId64 ")",
			     k, r[k].backs, n, sign, r[k].worst, r[k].worst_from, r[k].worst_to);
		cr_assert_eq(m[k].backs, 0, "item %u: sum() went back %ld times; worst %" PRIu64, k,
			     m[k].backs, m[k].worst);
	}
	stat_test_assert_exact(s, exact);
	pcpu_stat_destroy(s);
}

PCPU_TEST(stat, read_and_sum_never_drop_under_positive_adds_and_folds)
{
	assert_stat_reads_monotone_under_one_sign(1);
}

PCPU_TEST(stat, read_and_sum_never_rise_under_negative_adds_and_folds)
{
	assert_stat_reads_monotone_under_one_sign(-1);
}

/* ---- fork -------------------------------------------------------------------- */

PCPU_TEST(stat, a_forked_child_keeps_the_values_and_can_count)
{
	struct pcpu_stat *s = stat_test_create(4, NULL, 1000, 0);
	int status;
	pid_t pid;

	pcpu_stat_add(s, 0, 123);
	pcpu_stat_add(s, 3, -45);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		int ok = pcpu_stat_sum(s, 0) == 123 && pcpu_stat_sum(s, 3) == -45;

		pcpu_stat_add(s, 0, 1000000);
		pcpu_stat_fold_all(s);
		ok = ok && pcpu_stat_read(s, 0) == 1000123 && pcpu_stat_sum(s, 0) == 1000123;
		_exit(ok ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child saw wrong values");
	cr_assert_eq(pcpu_stat_sum(s, 0), 123, "the child's adds reached the parent");
	pcpu_stat_destroy(s);
}

/* ---- ABI ---------------------------------------------------------------------- */

PCPU_TEST(stat, exposed_structs_keep_their_layout)
{
	if (sizeof(void *) != 8)
		cr_skip_test("the layout is frozen for LP64 targets only (test/abi)");
	cr_assert_eq(sizeof(struct pcpu_stat_hot), 8);
	cr_assert_eq(offsetof(struct pcpu_stat_hot, slot), 0);
	cr_assert_eq(offsetof(struct pcpu_stat_hot, threshold), 4);
	cr_assert_eq(sizeof(struct pcpu_stat), 32);
	cr_assert_eq(offsetof(struct pcpu_stat, words), 0);
	cr_assert_eq(offsetof(struct pcpu_stat, hot), 8);
	cr_assert_eq(offsetof(struct pcpu_stat, nr_items), 16);
	cr_assert_eq(offsetof(struct pcpu_stat, flags), 20);
	cr_assert_eq(offsetof(struct pcpu_stat, mode), 24);
	cr_assert_eq(sizeof(struct pcpu_stat_item), 48);
	cr_assert_eq(offsetof(struct pcpu_stat_item, name), 0);
	cr_assert_eq(offsetof(struct pcpu_stat_item, group), 8);
	cr_assert_eq(offsetof(struct pcpu_stat_item, accuracy), 12);
	cr_assert_eq(offsetof(struct pcpu_stat_item, floor), 16);
	cr_assert_eq(offsetof(struct pcpu_stat_item, help), 24);
	cr_assert_eq(offsetof(struct pcpu_stat_item, kind), 32);
	cr_assert_eq(offsetof(struct pcpu_stat_item, scale), 40);
	cr_assert_eq(sizeof(struct pcpu_stat_desc), 16);
	cr_assert_eq(offsetof(struct pcpu_stat_desc, items), 0);
	cr_assert_eq(offsetof(struct pcpu_stat_desc, nr_items), 8);
	cr_assert_eq(offsetof(struct pcpu_stat_desc, flags), 12);
}
