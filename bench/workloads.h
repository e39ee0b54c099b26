/* SPDX-License-Identifier: MIT */
/*
 * The workloads of DESIGN.md. Each thread runs one loop against one
 * implementation until told to stop, and reports how many operations it
 * did and the net amount it added (so that the run can be checked exactly).
 *
 *   inc          every thread adds +1; counter starts at 0.
 *                One operation = one add.
 *   work         inc with a few hundred ns of local arithmetic before each
 *                add (WORK_STEPS dependent multiply-adds), as a daemon does
 *                between the events it counts. One operation = work + add.
 *   allocfree    +4096 then -4096 on a counter holding 1 GiB (a 4 KiB
 *                kmalloc/kfree charge). One operation = one add.
 *   commit-far   add 16, compare with a limit at twice the value (2 GiB),
 *                subtract 16 (__vm_enough_memory on vm_committed_as): the
 *                approximate answer suffices. One operation = the three.
 *                Every answer is used: counted by sign into the thread's
 *                results (so the compiler must compute it), and an answer
 *                "above the limit" is a wrong answer the run reports.
 *   commit-near  the same with the limit at the value itself (1 GiB): every
 *                compare needs a precise answer. (An answer here may be
 *                anything: a sum concurrent with adds is not atomic.)
 *   readers      the writers add +1 to a counter holding 1 GiB while one
 *                extra thread calls read, sum and sync_if_delta_above(1 MiB)
 *                in turn. Writer operation = one add; reader operation =
 *                one of the three calls.
 */
#ifndef PERCPU_BENCH_WORKLOADS_H
#define PERCPU_BENCH_WORKLOADS_H

#include <stdint.h>

#include "impls.h"

enum bench_workload {
	WL_INC,
	WL_WORK,
	WL_ALLOCFREE,
	WL_COMMIT_FAR,
	WL_COMMIT_NEAR,
	WL_READERS,
	NR_WORKLOADS,
};

/* "inc", "work", "allocfree", "commit-far", "commit-near", "readers" */
extern const char *const workload_names[NR_WORKLOADS];

/* The value the counter holds when a run starts. */
int64_t workload_seed(enum bench_workload w);

/* The local work of WL_WORK before each add: dependent multiply-adds. */
#define WORK_STEPS 256

/*
 * ns of this thread's CPU time that one WL_WORK operation's work takes
 * alone (no add), measured for about @duration_ms.
 */
double workload_work_ns(unsigned int duration_ms);

/* The delta the readers pass to sync_if_delta_above. */
#define WORKLOAD_READER_DELTA (INT64_C(1) << 20)

struct workload_thread {
	/* in */
	enum bench_impl impl;
	enum bench_workload workload;
	struct bench_target target;
	const int *stop; /* non-zero: return */
	/* out */
	uint64_t ops;
	int64_t net;        /* sum of all amounts added */
	uint64_t keep_live; /* folded results of compares, reads and work */
	uint64_t answers[3]; /* commit-*: compares that said -1, 0, 1 */
};

/* The writer loop of @t->workload; returns when *t->stop. */
void workload_write(struct workload_thread *t);

/* The reader loop of the readers workload; returns when *t->stop. */
void workload_read(struct workload_thread *t);

#endif /* PERCPU_BENCH_WORKLOADS_H */
