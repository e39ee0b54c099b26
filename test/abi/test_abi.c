/* SPDX-License-Identifier: MIT */
/*
 * The layout of every structure that callers embed or that the inline fast
 * paths read is ABI: freeze it (after wayland's egl/wayland-egl-abi-check.c).
 * A change here is a change of soname or of version node, never silent.
 *
 * The checks are static assertions (the build fails), repeated at run time
 * so that the suite shows them. The layout is frozen for LP64 targets;
 * 32-bit ones (i386, armhf) build and run the generic path, with a layout
 * of their own that is not frozen yet: their layout tests are skipped.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdint.h>

#include <percpu/counter.h>
#include <percpu/cpu.h>
#include <percpu/percpu_counter.h>
#include <percpu/registry.h>
#include <percpu/histogram.h>
#include <percpu/charge.h>
#include <percpu/metrics.h>
#include <percpu/gauge.h>
#include <percpu/counter_double.h>
#include <percpu/family.h>
#include <percpu/stat.h>

#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(void *) == 8 && sizeof(long) == 8, "the frozen layout is LP64");

/* Every row: the member, its offset, its size. */
#define LAYOUT(X)                                                              \
	X(pcpu_slot, value, 0, 8)                                              \
	X(pcpu_slot, mark, 8, 8)                                               \
	X(__pcpu_owner, slot, 0, 4)                                            \
	X(pcpu_counter, central, 0, 8)                                         \
	X(pcpu_counter, threshold, 8, 8)                                       \
	X(pcpu_counter, threshold_max, 16, 8)                                  \
	X(pcpu_counter, slots, 24, 8)                                          \
	X(pcpu_counter, mode, 32, 4)                                           \
	X(pcpu_counter, flags, 36, 4)                                          \
	X(pcpu_counter, armed, 40, 4)                                          \
	X(pcpu_counter, seq, 44, 4)                                            \
	X(pcpu_counter, base, 48, 8)                                           \
	X(pcpu_counter, floor, 56, 8)                                          \
	X(pcpu_counter, armset, 64, 8)                                         \
	X(pcpu_counter, entry, 72, 8)                                          \
	X(pcpu_counter, accuracy, 80, 4)                                       \
	X(pcpu_counter_options, accuracy, 0, 4)                                \
	X(pcpu_counter_options, floor, 8, 8)                                   \
	X(pcpu_counter_options, batch, 16, 8)                                  \
	X(percpu_counter, pcpu, 0, 88)                                         \
	X(pcpu_stat, words, 0, 8)                                              \
	X(pcpu_stat, hot, 8, 8)                                                \
	X(pcpu_stat, nr_items, 16, 4)                                          \
	X(pcpu_stat, flags, 20, 4)                                             \
	X(pcpu_stat, mode, 24, 4)                                              \
	X(pcpu_stat, reserved, 28, 4)                                          \
	X(pcpu_stat_hot, slot, 0, 4)                                           \
	X(pcpu_stat_hot, threshold, 4, 4)                                      \
	X(pcpu_stat_item, name, 0, 8)                                          \
	X(pcpu_stat_item, group, 8, 4)                                         \
	X(pcpu_stat_item, accuracy, 12, 4)                                     \
	X(pcpu_stat_item, floor, 16, 8)                                        \
	X(pcpu_stat_item, help, 24, 8)                                         \
	X(pcpu_stat_item, kind, 32, 4)                                         \
	X(pcpu_stat_item, scale, 40, 8)                                        \
	X(pcpu_metric_desc, name, 0, 8)                                        \
	X(pcpu_metric_desc, help, 8, 8)                                        \
	X(pcpu_metric_desc, unit, 16, 8)                                       \
	X(pcpu_metric_desc, kind, 24, 4)                                       \
	X(pcpu_metric_desc, labels, 32, 8)                                     \
	X(pcpu_metric_desc, scale, 40, 8)                                      \
	X(pcpu_metric_desc, registry, 48, 8)                                   \
	X(pcpu_family_desc, name, 0, 8)                                        \
	X(pcpu_family_desc, help, 8, 8)                                        \
	X(pcpu_family_desc, unit, 16, 8)                                       \
	X(pcpu_family_desc, kind, 24, 4)                                       \
	X(pcpu_family_desc, label_names, 32, 8)                                \
	X(pcpu_family_desc, max_children, 40, 4)                               \
	X(pcpu_family_desc, opts, 48, 8)                                       \
	X(pcpu_family_desc, bounds, 56, 8)                                     \
	X(pcpu_family_desc, nr_bounds, 64, 4)                                  \
	X(pcpu_family_desc, scale, 72, 8)                                      \
	X(pcpu_family_desc, const_labels, 80, 8)                               \
	X(pcpu_family_desc, flags, 88, 4)                                      \
	X(pcpu_family_desc, native, 96, 8)                                     \
	X(pcpu_family_desc, registry, 104, 8)                                  \
	X(pcpu_histogram_desc, name, 0, 8)                                     \
	X(pcpu_histogram_desc, help, 8, 8)                                     \
	X(pcpu_histogram_desc, unit, 16, 8)                                    \
	X(pcpu_histogram_desc, labels, 24, 8)                                  \
	X(pcpu_histogram_desc, bounds, 32, 8)                                  \
	X(pcpu_histogram_desc, nr_bounds, 40, 4)                               \
	X(pcpu_histogram_desc, scale, 48, 8)                                   \
	X(pcpu_histogram_desc, native, 56, 8)                                  \
	X(pcpu_histogram_desc, registry, 64, 8)                                \
	X(pcpu_histogram_native, schema, 0, 4)                                 \
	X(pcpu_histogram_native, reserved, 4, 4)                               \
	X(pcpu_histogram_native, zero_threshold, 8, 8)                         \
	X(pcpu_histogram_native, max, 16, 8)                                   \
	X(pcpu_histogram, set, 0, 8)                                           \
	X(pcpu_histogram, bounds, 8, 8)                                        \
	X(pcpu_histogram, nr_bounds, 16, 4)                                    \
	X(pcpu_histogram, reserved, 20, 4)                                     \
	X(pcpu_histogram, scale, 24, 8)                                        \
	X(pcpu_histogram, classic, 32, 8)                                      \
	X(pcpu_histogram, nr_classic, 40, 4)                                   \
	X(pcpu_histogram, schema, 44, 4)                                       \
	X(pcpu_histogram, flags, 48, 4)                                        \
	X(pcpu_histogram, index_bits, 52, 4)                                    \
	X(pcpu_histogram, exemplars, 56, 8)                                    \
	X(pcpu_histogram, index, 64, 8)                                        \
	X(pcpu_histogram, sum, 72, 8)                                          \
	X(pcpu_histogram, sparse, 80, 8)                                       \
	X(pcpu_histogram_sparse, schema, 0, 4)                                 \
	X(pcpu_histogram_sparse, max_buckets, 4, 4)                            \
	X(pcpu_histogram_sparse, zero_threshold, 8, 8)                         \
	X(pcpu_histogram_sparse, min_reset_ns, 16, 8)                          \
	X(pcpu_histogram_sparse, sum_scale, 24, 8)                             \
	X(pcpu_histogram_sparse, reserved, 32, 32)                             \
	X(pcpu_metric_sample, name, 0, 8)                                      \
	X(pcpu_metric_sample, help, 8, 8)                                      \
	X(pcpu_metric_sample, unit, 16, 8)                                     \
	X(pcpu_metric_sample, kind, 24, 4)                                     \
	X(pcpu_metric_sample, labels, 32, 8)                                   \
	X(pcpu_metric_sample, value, 40, 8)                                    \
	X(pcpu_metric_sample, nr_bounds, 48, 4)                                \
	X(pcpu_metric_sample, bounds, 56, 8)                                   \
	X(pcpu_metric_sample, buckets, 64, 8)                                  \
	X(pcpu_metric_sample, count, 72, 8)                                    \
	X(pcpu_metric_sample, sum, 80, 8)                                      \
	X(pcpu_metric_sample, scale, 88, 8)                                    \
	X(pcpu_metric_sample, flags, 96, 4)                                    \
	X(pcpu_metric_sample, dvalue, 104, 8)                                  \
	X(pcpu_metric_sample, schema, 112, 4)                                  \
	X(pcpu_metric_sample, nr_classic, 116, 4)                              \
	X(pcpu_metric_sample, classic, 120, 8)                                 \
	X(pcpu_metric_sample, exemplars, 128, 8)                               \
	X(pcpu_metric_sample, created, 136, 8)                                 \
	X(pcpu_counter_double, counter, 0, 88)                                 \
	X(pcpu_counter_double, scale, 88, 8)                                   \
	X(pcpu_counter_double, refused, 96, 8)                                 \
	X(pcpu_counter_double, iscale, 104, 8)                                 \
	X(pcpu_counter_double, kind, 112, 4)                                   \
	X(pcpu_counter_double, reserved, 116, 4)                               \
	X(pcpu_metric_sample, nr_quantiles, 144, 4)                            \
	X(pcpu_metric_sample, quantiles, 152, 8)                               \
	X(pcpu_metric_sample, quantile_values, 160, 8)                         \
	X(pcpu_metric_sample, nr_negative, 168, 4)                             \
	X(pcpu_metric_sample, nr_keys, 172, 4)                                 \
	X(pcpu_metric_sample, keys, 176, 8)                                    \
	X(pcpu_metric_sample, key_counts, 184, 8)                              \
	X(pcpu_metric_sample, zero_count, 192, 8)                              \
	X(pcpu_metric_sample, zero_threshold, 200, 8)                          \
	X(pcpu_metric_sample, dsum, 208, 8)                                    \
	X(pcpu_exemplar, labels, 0, 8)                                         \
	X(pcpu_exemplar, value, 8, 8)                                          \
	X(pcpu_exemplar, timestamp, 16, 8)                                     \
	X(pcpu_gauge, value, 0, 8)                                             \
	X(pcpu_gauge, flags, 8, 4)                                             \
	X(pcpu_gauge, reserved, 12, 4)                                         \
	X(pcpu_gauge_double, value, 0, 8)                                      \
	X(pcpu_gauge_double, flags, 8, 4)                                      \
	X(pcpu_gauge_double, reserved, 12, 4)                                  \
	X(pcpu_charge_slot, charged, 0, 8)                                     \
	X(pcpu_charge_slot, mark, 8, 8)                                        \
	X(pcpu_charge, slots, 0, 8)                                            \
	X(pcpu_charge, half, 8, 8)                                             \
	X(pcpu_charge, mode, 16, 4)                                            \
	X(pcpu_charge, flags, 20, 4)                                           \
	X(pcpu_charge, entry, 24, 8)                                           \
	X(pcpu_charge, pad0, 32, 32)                                           \
	X(pcpu_charge, limit, 64, 8)                                           \
	X(pcpu_charge, reserved, 72, 8)                                        \
	X(pcpu_charge, used, 80, 8)                                            \
	X(pcpu_charge, taking, 88, 4)                                          \
	X(pcpu_charge, reserved0, 92, 4)                                       \
	X(pcpu_charge, pad1, 96, 32)                                           \
	X(pcpu_charge_options, limit, 0, 8)                                    \
	X(pcpu_charge_options, stock_cap, 8, 8)

#define SIZES(X)                                                               \
	X(pcpu_slot, 16, 8)                                                    \
	X(pcpu_counter, 88, 8)                                                 \
	X(pcpu_counter_options, 24, 8)                                         \
	X(percpu_counter, 88, 8)                                               \
	X(pcpu_stat, 32, 8)                                                    \
	X(pcpu_stat_hot, 8, 4)                                                 \
	X(pcpu_stat_item, 48, 8)                                               \
	X(pcpu_metric_desc, 56, 8)                                             \
	X(pcpu_family_desc, 112, 8)                                             \
	X(pcpu_histogram_desc, 72, 8)                                          \
	X(pcpu_histogram, 88, 8)                                               \
	X(pcpu_histogram_sparse, 64, 8)                                        \
	X(pcpu_histogram_native, 24, 8)                                        \
	X(pcpu_exemplar, 24, 8)                                                \
	X(pcpu_metric_sample, 216, 8)                                          \
	X(pcpu_counter_double, 120, 8)                                         \
	X(pcpu_gauge, 16, 8)                                                   \
	X(pcpu_gauge_double, 16, 8)                                            \
	X(pcpu_charge_slot, 16, 8)                                             \
	X(pcpu_charge, 128, 8)                                                  \
	X(pcpu_charge_options, 16, 8)                                          \
	X(__pcpu_owner, 4, 4)

#define MEMBER_OF(s, m) (((struct s *)0)->m)
#define STATIC_MEMBER(s, m, off, size)                                         \
	_Static_assert(offsetof(struct s, m) == (off), #s "." #m " moved");    \
	_Static_assert(sizeof(MEMBER_OF(s, m)) == (size), #s "." #m " resized");
#define STATIC_SIZE(s, size, align)                                            \
	_Static_assert(sizeof(struct s) == (size), "struct " #s " resized");   \
	_Static_assert(_Alignof(struct s) == (align), "struct " #s " realigned");

LAYOUT(STATIC_MEMBER)
SIZES(STATIC_SIZE)
#endif

/* Constants that the inline code or callers' data depend on. */
_Static_assert(PCPU_STRIDE_SHIFT == 12 && PCPU_STRIDE == 4096, "stride changed");
_Static_assert(PCPU_COUNTER_MAX_ACCURACY == (1 << 20), "max accuracy changed");
_Static_assert(PCPU_COUNTER_MAX_BATCH == (INT64_C(1) << 40), "max batch changed");
_Static_assert(PCPU_COUNTER_F_FIXED == 1u && PCPU_COUNTER_F_DESCRIBED == 2u, "flag changed");
_Static_assert(PCPU_FAMILY_F_SET_GAUGE == 1u, "family flag changed");
_Static_assert(PCPU_METRIC_COUNTER == 1 && PCPU_METRIC_GAUGE == 2 && PCPU_METRIC_HISTOGRAM == 3,
	       "metric kinds changed");
_Static_assert(PCPU_METRICS_PROMETHEUS == 0 && PCPU_METRICS_OPENMETRICS == 1,
	       "formats changed");
_Static_assert(PCPU_CPU_UNSET == 0 && PCPU_CPU_RSEQ == 1 && PCPU_CPU_ATOMIC == 2,
	       "update path numbers changed");
_Static_assert(sizeof(s64) == 8 && sizeof(s32) == 4 && sizeof(u32) == 4 &&
		       sizeof(gfp_t) == 4,
	       "kernel types resized");

#if UINTPTR_MAX != UINT64_MAX
Test(abi, layouts_are_frozen_for_lp64_only)
{
	cr_skip_test("a %zu-bit target: its layout is not frozen", 8 * sizeof(void *));
}
#else
Test(abi, struct_members_keep_their_offsets_and_sizes)
{
#define CHECK_MEMBER(s, m, off, size)                                          \
	cr_expect_eq(offsetof(struct s, m), (size_t)(off), #s "." #m " at %zu", \
		     offsetof(struct s, m));                                   \
	cr_expect_eq(sizeof(MEMBER_OF(s, m)), (size_t)(size), #s "." #m " of %zu", \
		     sizeof(MEMBER_OF(s, m)));
	LAYOUT(CHECK_MEMBER)
}

Test(abi, structs_keep_their_sizes_and_alignment)
{
#define CHECK_SIZE(s, size, align)                                             \
	cr_expect_eq(sizeof(struct s), (size_t)(size), #s " of %zu", sizeof(struct s)); \
	cr_expect_eq(_Alignof(struct s), (size_t)(align), #s " aligned %zu",  \
		     _Alignof(struct s));
	SIZES(CHECK_SIZE)
}
#endif

Test(abi, a_zero_filled_counter_is_the_uninitialised_state)
{
	static const struct pcpu_counter zero;
	struct pcpu_counter c;

	cr_assert_not(pcpu_counter_initialized(&zero));
	cr_assert_eq(pcpu_counter_init(&c, 3), 0);
	cr_assert_not_null(c.slots, "slots is what initialized() and add() test");
	cr_assert_eq(c.central, 3, "read() loads count");
	pcpu_counter_destroy(&c);
	cr_assert_null(c.slots);
}

Test(abi, the_slot_of_cpu_n_is_n_strides_after_cpu_0)
{
	struct pcpu_counter c;
	int64_t total = 0;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	for (int i = 0; i < 1000; i++)
		pcpu_counter_add(&c, 1);
	for (unsigned int cpu = 0; cpu < pcpu_cpu_possible(); cpu++)
		total += ((struct pcpu_slot *)(void *)((char *)c.slots +
						       (size_t)cpu * PCPU_STRIDE))->value;
	cr_assert_eq(total + c.base, 1000, "the inline add and sum disagree on the layout");
	pcpu_counter_destroy(&c);
}
