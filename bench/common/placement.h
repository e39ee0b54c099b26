/* SPDX-License-Identifier: MIT */
/*
 * Counters placed clear of the rseq area's rseq_cs field, so that a
 * benchmark measures the library and not the link layout.
 *
 * 4K aliasing: every rseq add first stores to its thread's rseq_cs (to arm
 * the sequence). A later load whose address has the same low 12 bits as a
 * store still in flight waits for it, because the core compares page
 * offsets before the whole addresses are known. A counter whose fields or
 * slots share their page offset with rseq_cs therefore runs slower by
 * layout alone (20 % in one harness of issue 27; on the 2-vCPU EPYC the
 * bare rseq add took 4.2 ns with its slot there, 2.2 ns elsewhere, even
 * 8 bytes away). Most placements are
 * clear of it and need nothing; a program that meets it can allocate its
 * counters at another page offset, as these helpers do.
 */
#ifndef PERCPU_BENCH_PLACEMENT_H
#define PERCPU_BENCH_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <percpu/counter.h>

/*
 * Whether the @size bytes at @p keep at least a cache line, modulo the page,
 * from rseq_cs of the main thread and of threads it creates. Always true
 * where adds do not take the rseq path.
 */
bool bench_clear_of_rseq(const void *p, size_t size);

/*
 * @size zeroed bytes whose first @hot are placed so (a per-CPU array's
 * slots repeat at the same page offset: @hot is one slot); NULL on
 * failure. Free with bench_free_clear().
 */
void *bench_alloc_clear_of_rseq(size_t size, size_t hot);
void bench_free_clear(void *p);

/*
 * A counter initialised to @value whose struct and slots are placed so (as
 * far as a few tries move its slots); NULL with errno on failure. Free with
 * bench_percpu_free().
 */
struct pcpu_counter *bench_percpu_new(int64_t value);
void bench_percpu_free(struct pcpu_counter *c);

/* The page offsets of rseq_cs (main thread, created threads); 0: none known. */
unsigned int bench_rseq_cs_offsets(unsigned int offsets[2]);

#endif /* PERCPU_BENCH_PLACEMENT_H */
