/* SPDX-License-Identifier: MIT */
/*
 * The scale model's measurements (model.c) and their columns, shared by the
 * child that measures one CPU count and the parent that tabulates them.
 */
#ifndef PERCPU_BENCH_SCALE_MODEL_H
#define PERCPU_BENCH_SCALE_MODEL_H

#include <stdbool.h>

/* X(name, unit, what): one column of a row, in the order printed. */
#define SCALE_COLUMNS(X)                                                                     \
	X(possible, "", "possible CPUs (the model's N)")                                     \
	X(online, "", "online CPUs")                                                         \
	X(sum_warm, "ns", "pcpu_counter_sum(), slots in cache")                              \
	X(sum_cold, "ns", "pcpu_counter_sum(), every slot's line flushed first")            \
	X(sum_pf_warm, "ns", "bench-only sum over all possible CPUs (0.3's walk), prefetching 8 strides ahead, in cache") \
	X(sum_pf_cold, "ns", "the same bench-only sum, flushed")                             \
	X(sum_remote, "ns", "pcpu_counter_sum(), slots just written by a thread on the other CPU") \
	X(sum_pf_remote, "ns", "the same bench-only sum, slots written on the other CPU")   \
	X(compare_precise, "ns", "pcpu_counter_compare() within the bound (calls sum)")      \
	X(sync_fold, "ns", "pcpu_counter_sync_if_delta_above(0), every running CPU pending") \
	X(fold_walk, "ns", "bench replica of a counter's fold of its armed CPUs, seq entered per CPU") \
	X(fold_walk_seq_once, "ns", "the same, seq entered once for the walk (proposal)")   \
	X(fold_all_1k, "us", "pcpu_registry_fold_all(), 1k counters, every running CPU pending") \
	X(fold_all_1k_idle, "us", "pcpu_registry_fold_all(), 1k counters, nothing pending") \
	X(stat_snapshot_64, "ns", "pcpu_stat_snapshot(), 64 items, every running CPU pending") \
	X(stat_sync_fold, "ns", "pcpu_stat_sync_if_delta_above(0): one line of 7 items folded, every running CPU pending on each") \
	X(shared_snapshot_64, "ns", "pcpu_shared_snapshot(), 64 items, every running CPU pending") \
	X(expo_1k, "us", "pcpu_metrics_write(), 1k counters")                                \
	X(expo_10k, "us", "pcpu_metrics_write(), 10k counters")                              \
	X(counter_bytes, "B", "memory per counter: slots + struct + armed set")              \
	X(arena_bytes_1k, "B", "arena bytes per counter, 1k counters (chunks mapped)")       \
	X(rss_1k, "KiB", "resident set growth (smaps_rollup Rss, measured) from initialising 1k counters (their array already allocated) and filling them on each running CPU: about M x 16 KiB of arena plus heap, not N x 16 KiB") \
	X(stat_item_bytes, "B", "per-CPU memory per stat item")                              \
	X(shared_item_bytes, "B", "per-CPU memory per shared-segment item")                  \
	X(bound_zero_0_2, "", "0.2's rule, computed here: possible x max(32, 2 x online), at 0") \
	X(bound_zero, "", "counter error_bound() at 0 once each running CPU added, default floor") \
	X(bound_1g, "", "counter error_bound() at 1 GiB once each running CPU added")       \
	X(stat_bound_zero, "", "stat item error_bound() at 0")                               \
	X(stat_bound_1g, "", "stat item error_bound() at 1 GiB")                             \
	X(shared_bound_zero, "", "shared segment item error_bound() at 0")                   \
	X(dropin_bound_zero, "", "kernel drop-in's fixed-batch counter: error_bound() at 0, each running CPU added") \
	X(elastic_from_0_2, "", "0.2's rule: |value| from which the threshold is elastic")   \
	X(elastic_from, "", "|value| from which the threshold is elastic, default floor")    \
	X(add1_0_2, "ns", "pcpu_counter_add(c, 1) from 0 to 64 Ki, 0.2's floor as explicit floor") \
	X(add1, "ns", "pcpu_counter_add(c, 1) from 0 to 64 Ki, the default floor")          \
	X(kp_sum, "ns", "kernel port: percpu_counter_sum()")                                 \
	X(kp_compare_precise, "ns", "kernel port: compare within batch x online")            \
	X(kp_sync_fold, "ns", "kernel port: fold every CPU (sync)")                          \
	X(kp_bytes, "B", "kernel: s32 per CPU + struct (40 B)")                              \
	X(kp_bound, "", "kernel: batch x online, at 0 and at 1 GiB")

enum scale_column {
#define SCALE_ENUM(name, unit, what) SCALE_##name,
	SCALE_COLUMNS(SCALE_ENUM)
#undef SCALE_ENUM
	SCALE_NR_COLUMNS
};

struct scale_column_info {
	const char *name;
	const char *unit;
	const char *what;
};

extern const struct scale_column_info scale_columns[SCALE_NR_COLUMNS];

/* How long to measure. */
enum scale_mode {
	SCALE_FULL,  /* 11 repetitions of each measurement */
	SCALE_QUICK, /* 5: what `meson test --benchmark` runs */
	SCALE_CHECK, /* 1, small batches, no 10k exposition: the model's self-checks, as a test */
};

/*
 * Measures every column for @possible possible and @online online CPUs and
 * stores them in @row (NaN where not measured). Sets the library's CPU
 * model, so a process calls it once, before making any counter. Checks on
 * the way that the model holds (the CPU counts, |sum - read| within the
 * bound with every running CPU pending, nothing pending after a fold of all).
 * 0 or a negative errno (-EPROTO: a check failed).
 */
int scale_model_run(unsigned int possible, unsigned int online, enum scale_mode mode,
		    double *row);

#endif /* PERCPU_BENCH_SCALE_MODEL_H */
