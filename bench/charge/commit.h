/* SPDX-License-Identifier: MIT */
/*
 * percpu-bench's commit-near workload, unchanged, run from
 * percpu-charge-bench so that its report can show it beside the charge
 * workloads. A separate file because percpu-bench's headers name their
 * implementations and workloads in the same words as main.c does.
 */
#ifndef PERCPU_BENCH_CHARGE_COMMIT_H
#define PERCPU_BENCH_CHARGE_COMMIT_H

#include <stdbool.h>

/* percpu-bench's implementations: percpu, atomic, kernel, thread. */
#define COMMIT_IMPLS 4

extern const char *const commit_impl_names[COMMIT_IMPLS];

struct commit_sample {
	double mops;      /* operations (add, compare, subtract) per microsecond */
	double cpu_share; /* as percpu-bench's */
	bool exact;       /* the counter's value matched the oracle */
};

/*
 * One run of commit-near on implementation @impl (0 to COMMIT_IMPLS - 1)
 * with @threads writers for @duration_ms. 0 or a negative errno.
 */
int commit_near_measure(unsigned int impl, unsigned int threads, unsigned int duration_ms,
			struct commit_sample *out);

#endif /* PERCPU_BENCH_CHARGE_COMMIT_H */
