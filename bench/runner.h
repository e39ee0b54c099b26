/* SPDX-License-Identifier: MIT */
/*
 * One timed run: N threads run one workload against one implementation for
 * a fixed duration; the run is then checked against the exact value.
 */
#ifndef PERCPU_BENCH_RUNNER_H
#define PERCPU_BENCH_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "impls.h"
#include "workloads.h"

struct run_config {
	unsigned int duration_ms;
	bool pin; /* pin thread i to the i-th allowed CPU (modulo); else float */
};

struct run_result {
	double writer_mops; /* writer operations, all threads, per microsecond */
	double reader_mops; /* readers workload: reader calls per microsecond */
	/*
	 * CPU time the threads got, over what they could have had: the span
	 * times min(threads, online CPUs). Well below 1: other processes took
	 * the CPUs, and the run measured time slicing more than the counter.
	 */
	double cpu_share;
	/*
	 * Writer operations per microsecond of the writers' own CPU time, times
	 * min(writers, online CPUs): the throughput had every writer had a CPU
	 * to itself, which time slicing by other processes does not change.
	 * It is not a lower bound for everything: a shared atomic that is time
	 * sliced is contended less, so it looks better on this scale.
	 */
	double cpu_mops;
	/* commit-*: compares of all writers that answered -1, 0 and 1 */
	uint64_t answers[3];
	bool exact;         /* the counter's exact value matched the oracle */
	int64_t expected, got;
};

/*
 * What every run computed and nobody reads (compare answers, reads, the
 * work of WL_WORK), folded together: a volatile the compiler must write, so
 * none of it can be optimised away, even across files.
 */
extern volatile uint64_t runner_sink;

/*
 * Runs @w on @impl with @nr_writers writer threads (plus one reader for
 * WL_READERS). 0 or a negative errno (the run could not be set up).
 */
int runner_run(enum bench_workload w, enum bench_impl impl, unsigned int nr_writers,
	       const struct run_config *cfg, struct run_result *out);

#endif /* PERCPU_BENCH_RUNNER_H */
