/* SPDX-License-Identifier: MIT */
/*
 * The workload and the five implementations of percpu-stat-bench (see
 * impls.h). Each implementation gets its own copy of the writer loop, with
 * its add inlined, so that they differ only in how they count.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <percpu/counter.h>
#include <percpu/stat.h>

#include "impls.h"

const char *const workload_names[NR_WORKLOADS] = { "vmstat", "churn" };
const char *const impl_names[NR_IMPLS] = { "grouped", "per-line", "counters", "packed",
					   "padded" };

/*
 * 30 items after the kernel's vm_stat, in 8 groups of 3 or 4 that one
 * operation updates together (a page fault, an LRU rotation, a file read,
 * ...). Gauges go up and down from one operation to the next around a
 * realistic size; events only climb.
 */
const struct item_def item_defs[NR_ITEMS] = {
	{ "nr_free_pages", 0, true, 1, 4000000 },
	{ "nr_anon_pages", 0, true, 1, 600000 },
	{ "pgalloc_normal", 0, false, 1, 0 },
	{ "pgfault", 0, false, 1, 0 },
	{ "nr_active_anon", 1, true, 1, 300000 },
	{ "nr_inactive_anon", 1, true, 1, 250000 },
	{ "pgactivate", 1, false, 1, 0 },
	{ "nr_file_pages", 2, true, 1, 1500000 },
	{ "nr_inactive_file", 2, true, 1, 700000 },
	{ "pgpgin", 2, false, 8, 0 },
	{ "workingset_refault_file", 2, false, 1, 0 },
	{ "nr_dirty", 3, true, 1, 20000 },
	{ "nr_writeback", 3, true, 1, 2000 },
	{ "nr_written", 3, false, 1, 0 },
	{ "nr_slab_reclaimable", 4, true, 1, 90000 },
	{ "nr_slab_unreclaimable", 4, true, 1, 60000 },
	{ "slabs_scanned", 4, false, 32, 0 },
	{ "nr_mapped", 4, true, 1, 200000 },
	{ "pgsteal_kswapd", 5, false, 1, 0 },
	{ "pgscan_kswapd", 5, false, 4, 0 },
	{ "nr_isolated_file", 5, true, 1, 100 },
	{ "nr_shmem", 6, true, 1, 50000 },
	{ "nr_kernel_stack", 6, true, 16, 30000 },
	{ "nr_page_table_pages", 6, true, 1, 15000 },
	{ "thp_fault_alloc", 6, false, 1, 0 },
	{ "numa_hit", 7, false, 1, 0 },
	{ "numa_local", 7, false, 1, 0 },
	{ "pgfree", 7, false, 1, 0 },
	{ "nr_unevictable", 7, true, 1, 1000 },
	{ "nr_bounce", 5, true, 1, 0 },
};

unsigned int op_len[NR_OPS];
unsigned int op_items[NR_OPS][MAX_OP_ITEMS];

/* The operation sequence every writer walks, each from its own start. */
#define SEQ_LEN 4096
static uint8_t op_seq[SEQ_LEN];

void workload_init(void)
{
	uint64_t state = 12345;

	memset(op_len, 0, sizeof(op_len));
	for (unsigned int i = 0; i < NR_ITEMS; i++) {
		uint32_t g = item_defs[i].group;

		if (op_len[g] < MAX_OP_ITEMS)
			op_items[g][op_len[g]++] = i;
	}
	for (unsigned int k = 0; k < SEQ_LEN; k++) {
		state = state * 6364136223846793005ULL + 1442695040888963407ULL;
		op_seq[k] = (uint8_t)((state >> 33) % NR_OPS);
	}
}

int64_t workload_preload(enum workload wl, unsigned int i)
{
	return wl == WL_VMSTAT ? item_defs[i].preload : 0;
}

int64_t workload_amount(enum workload wl, unsigned int i)
{
	return wl == WL_VMSTAT ? item_defs[i].amount : 1;
}

unsigned int workload_swing(enum workload wl)
{
	return wl == WL_VMSTAT ? 0 : 6;
}

int64_t workload_net(enum workload wl, unsigned int i, uint64_t n)
{
	uint64_t period = UINT64_C(2) << workload_swing(wl), r = n % period;

	if (!item_defs[i].gauge && wl == WL_VMSTAT)
		return workload_amount(wl, i) * (int64_t)n;
	/* whole periods cancel; then up to half a period up, the rest down */
	return workload_amount(wl, i) * (int64_t)(r <= period / 2 ? r : period - r);
}

struct padded_atomic {
	_Alignas(64) int64_t v;
};

struct bench_set {
	enum impl impl;
	/* gauges go up for 2^swing runs of their operation, then down as many */
	unsigned int swing;
	/* amount of entry e of operation g going up and going down */
	int64_t amount[2][NR_OPS][MAX_OP_ITEMS];
	struct pcpu_stat *stat;
	struct pcpu_counter *counters;
	int64_t *packed;
	struct padded_atomic *padded;
};

static void *xaligned(size_t bytes)
{
	void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);

	if (!p) {
		perror("percpu-stat-bench: aligned_alloc");
		exit(1);
	}
	memset(p, 0, (bytes + 63) / 64 * 64);
	return p;
}

struct bench_set *set_create(enum impl impl, enum workload wl)
{
	struct bench_set *b = xaligned(sizeof(*b));
	struct pcpu_stat_item items[NR_ITEMS];
	struct pcpu_stat_desc desc = { .items = items, .nr_items = NR_ITEMS };

	b->impl = impl;
	b->swing = workload_swing(wl);
	for (unsigned int g = 0; g < NR_OPS; g++)
		for (unsigned int e = 0; e < op_len[g]; e++) {
			unsigned int i = op_items[g][e];
			bool gauge = item_defs[i].gauge || wl == WL_CHURN;

			b->amount[0][g][e] = workload_amount(wl, i);
			b->amount[1][g][e] = gauge ? -workload_amount(wl, i) : workload_amount(wl, i);
		}
	switch (impl) {
	case IMPL_GROUPED:
	case IMPL_PER_LINE:
		for (unsigned int i = 0; i < NR_ITEMS; i++)
			items[i] = (struct pcpu_stat_item){ .name = item_defs[i].name,
							    .group = item_defs[i].group + 1 };
		desc.flags = impl == IMPL_PER_LINE ? PCPU_STAT_ONE_PER_LINE : 0;
		b->stat = pcpu_stat_create(&desc);
		if (!b->stat) {
			perror("percpu-stat-bench: pcpu_stat_create");
			exit(1);
		}
		for (unsigned int i = 0; i < NR_ITEMS; i++)
			pcpu_stat_add(b->stat, i, workload_preload(wl, i));
		pcpu_stat_fold_all(b->stat);
		break;
	case IMPL_COUNTERS:
		b->counters = xaligned(NR_ITEMS * sizeof(*b->counters));
		for (unsigned int i = 0; i < NR_ITEMS; i++)
			if (pcpu_counter_init(&b->counters[i], workload_preload(wl, i)) != 0) {
				fprintf(stderr, "percpu-stat-bench: pcpu_counter_init failed\n");
				exit(1);
			}
		break;
	case IMPL_PACKED:
		b->packed = xaligned(NR_ITEMS * sizeof(*b->packed));
		for (unsigned int i = 0; i < NR_ITEMS; i++)
			b->packed[i] = workload_preload(wl, i);
		break;
	case IMPL_PADDED:
		b->padded = xaligned(NR_ITEMS * sizeof(*b->padded));
		for (unsigned int i = 0; i < NR_ITEMS; i++)
			b->padded[i].v = workload_preload(wl, i);
		break;
	case NR_IMPLS:
		break;
	}
	return b;
}

void set_destroy(struct bench_set *b)
{
	pcpu_stat_destroy(b->stat);
	if (b->counters) {
		pcpu_counter_destroy_many(b->counters, NR_ITEMS);
		free(b->counters);
	}
	free(b->packed);
	free(b->padded);
	free(b);
}

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * The writer loop, instantiated per implementation with its add inlined:
 * operations from the shared sequence, 256 between looks at the stop flag.
 */
#define WRITE_LOOP(NAME, ADD)                                                                  \
	static void NAME(struct bench_set *b, const volatile bool *stop, unsigned int start,     \
			 struct writer_result *r)                                                \
	{                                                                                        \
		unsigned int pos = start;                                                        \
		double cpu0 = thread_cpu_s();                                                    \
                                                                                                 \
		while (!*stop) {                                                                 \
			for (unsigned int k = 0; k < 256; k++) {                                 \
				unsigned int g = op_seq[pos++ % SEQ_LEN];                        \
				const int64_t *amount =                                          \
					b->amount[(r->group_ops[g]++ >> b->swing) & 1][g];       \
                                                                                                 \
				for (unsigned int e = 0; e < op_len[g]; e++)                     \
					ADD(b, op_items[g][e], amount[e]);                       \
			}                                                                        \
			r->ops += 256;                                                           \
		}                                                                                \
		r->cpu_s = thread_cpu_s() - cpu0;                                                \
	}

#define ADD_STAT(b, i, a) pcpu_stat_add((b)->stat, (i), (a))
#define ADD_COUNTER(b, i, a) pcpu_counter_add(&(b)->counters[i], (a))
#define ADD_PACKED(b, i, a) __atomic_fetch_add(&(b)->packed[i], (a), __ATOMIC_RELAXED)
#define ADD_PADDED(b, i, a) __atomic_fetch_add(&(b)->padded[i].v, (a), __ATOMIC_RELAXED)

WRITE_LOOP(write_stat, ADD_STAT)
WRITE_LOOP(write_counters, ADD_COUNTER)
WRITE_LOOP(write_packed, ADD_PACKED)
WRITE_LOOP(write_padded, ADD_PADDED)

void set_write(struct bench_set *b, const volatile bool *stop, unsigned int start,
	       struct writer_result *r)
{
	memset(r, 0, sizeof(*r));
	switch (b->impl) {
	case IMPL_GROUPED:
	case IMPL_PER_LINE:
		write_stat(b, stop, start, r);
		break;
	case IMPL_COUNTERS:
		write_counters(b, stop, start, r);
		break;
	case IMPL_PACKED:
		write_packed(b, stop, start, r);
		break;
	case IMPL_PADDED:
		write_padded(b, stop, start, r);
		break;
	case NR_IMPLS:
		break;
	}
}

void set_snapshot(struct bench_set *b, int64_t *values)
{
	switch (b->impl) {
	case IMPL_GROUPED:
	case IMPL_PER_LINE:
		pcpu_stat_snapshot(b->stat, values, NULL);
		break;
	case IMPL_COUNTERS:
		for (unsigned int i = 0; i < NR_ITEMS; i++)
			values[i] = pcpu_counter_sum(&b->counters[i]);
		break;
	case IMPL_PACKED:
		for (unsigned int i = 0; i < NR_ITEMS; i++)
			values[i] = __atomic_load_n(&b->packed[i], __ATOMIC_RELAXED);
		break;
	case IMPL_PADDED:
		for (unsigned int i = 0; i < NR_ITEMS; i++)
			values[i] = __atomic_load_n(&b->padded[i].v, __ATOMIC_RELAXED);
		break;
	case NR_IMPLS:
		break;
	}
}

void impl_bytes(enum impl impl, double *per_cpu, double *central)
{
	unsigned int lines = 0;

	switch (impl) {
	case IMPL_GROUPED:
		/* ceil(group size / 7) lines per group, 8 B of threshold per item */
		for (unsigned int g = 0; g < NR_OPS; g++)
			lines += (op_len[g] + PCPU_STAT_LINE_ITEMS - 1) / PCPU_STAT_LINE_ITEMS;
		*per_cpu = 8;
		*central = (64.0 * lines + 8.0 * NR_ITEMS) / NR_ITEMS;
		break;
	case IMPL_PER_LINE:
		*per_cpu = 8;
		*central = 64 + 8;
		break;
	case IMPL_COUNTERS:
		*per_cpu = sizeof(struct pcpu_slot);
		*central = sizeof(struct pcpu_counter);
		break;
	case IMPL_PACKED:
		*per_cpu = 0;
		*central = 8;
		break;
	case IMPL_PADDED:
		*per_cpu = 0;
		*central = 64;
		break;
	case NR_IMPLS:
		break;
	}
}
