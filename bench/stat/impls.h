/* SPDX-License-Identifier: MIT */
/*
 * The vm_stat-like workload of percpu-stat-bench and the five ways of
 * counting it that the benchmark compares.
 */
#ifndef PCPU_BENCH_STAT_IMPLS_H
#define PCPU_BENCH_STAT_IMPLS_H

#include <stdbool.h>
#include <stdint.h>

#define NR_ITEMS 30
#define NR_OPS 8
#define MAX_OP_ITEMS 4

/* The workloads. */
enum workload {
	/* gauges start at realistic sizes (thresholds grow), events climb */
	WL_VMSTAT,
	/*
	 * every item is a gauge around zero that goes +1 for 64 runs of its
	 * operation, then -1 for 64: thresholds stay at the floor and folds
	 * are frequent
	 */
	WL_CHURN,
	NR_WORKLOADS
};

extern const char *const workload_names[NR_WORKLOADS];

/* One item of the set. */
struct item_def {
	const char *name;
	uint32_t group;     /* its operation's group: the items an operation bumps */
	bool gauge;         /* the sign alternates from one operation to the next */
	int64_t amount;     /* per operation */
	int64_t preload;    /* initial value in WL_VMSTAT */
};

extern const struct item_def item_defs[NR_ITEMS];

/* Operation g bumps op_items[g][0 .. op_len[g] - 1] (3 or 4 related items). */
extern unsigned int op_len[NR_OPS];
extern unsigned int op_items[NR_OPS][MAX_OP_ITEMS];

void workload_init(void);

/* Initial value of item @i in workload @wl. */
int64_t workload_preload(enum workload wl, unsigned int i);

/* What one run of its operation adds to item @i, before the gauge's sign. */
int64_t workload_amount(enum workload wl, unsigned int i);

/* Gauges go up for 2^swing runs of their operation, then down as many. */
unsigned int workload_swing(enum workload wl);

/* How much @n runs of its operation add to item @i. */
int64_t workload_net(enum workload wl, unsigned int i, uint64_t n);

/* The implementations. */
enum impl {
	IMPL_GROUPED,   /* pcpu_stat, items of an operation share a central line */
	IMPL_PER_LINE,  /* the same set with PCPU_STAT_ONE_PER_LINE */
	IMPL_COUNTERS,  /* 30 independent pcpu_counters */
	IMPL_PACKED,    /* int64_t[30] of shared atomics, 8 to a cacheline */
	IMPL_PADDED,    /* 30 shared atomics, one per cacheline */
	NR_IMPLS
};

extern const char *const impl_names[NR_IMPLS];

/* What one writer thread did in one run. */
struct writer_result {
	uint64_t ops;
	uint64_t group_ops[NR_OPS];
	double cpu_s;
};

struct bench_set; /* one instance of an implementation */

struct bench_set *set_create(enum impl impl, enum workload wl);
void set_destroy(struct bench_set *b);

/*
 * Runs operations until *@stop, starting at position @start of the shared
 * operation sequence; fills @r.
 */
void set_write(struct bench_set *b, const volatile bool *stop, unsigned int start,
	       struct writer_result *r);

/* Every item's value, as exact as the implementation can (at quiescence: exact). */
void set_snapshot(struct bench_set *b, int64_t *values);

/* Bytes each item costs per CPU, and centrally. */
void impl_bytes(enum impl impl, double *per_cpu, double *central);

#endif /* PCPU_BENCH_STAT_IMPLS_H */
