/* SPDX-License-Identifier: MIT */
/*
 * The per-CPU arena: chunks of possible-CPUs x PCPU_STRIDE bytes, CPU n
 * owning bytes [n * PCPU_STRIDE, (n + 1) * PCPU_STRIDE) of each chunk, so an
 * object's copy for CPU n is n * PCPU_STRIDE after its copy for CPU 0, CPUs
 * never share a cacheline, and an object costs its size per CPU, not a line.
 */
#ifndef PCPU_LIB_ARENA_H
#define PCPU_LIB_ARENA_H

#include <stddef.h>

/* Allocation granule: every object starts on a 16-byte boundary. */
#define PCPU_ARENA_UNIT 16

/*
 * Allocates @size bytes (1 to PCPU_STRIDE) on every possible CPU, zeroed,
 * and returns the CPU-0 copy; NULL with errno ENOMEM or EINVAL. On failure
 * the arena is as it was. O(1) amortised.
 */
void *pcpu_arena_alloc(size_t size);

/*
 * Frees what pcpu_arena_alloc(@size) returned; no CPU may still use any
 * copy. NULL does nothing; a pointer the arena did not hand out is misuse.
 */
void pcpu_arena_free(void *cpu0, size_t size);

/*
 * Fork: the registry's handlers call these. Prepare takes the arena's lock,
 * parent releases it, child reinitialises it (the child has one thread).
 */
void pcpu_arena_fork_prepare(void);
void pcpu_arena_fork_parent(void);
void pcpu_arena_fork_child(void);

/*
 * Testing hook: after @successes more successful allocations, every
 * allocation fails with ENOMEM; a negative value turns failures off.
 */
void pcpu_arena_fail_after(long successes);

/*
 * Testing hook: after @successes more successful malloc() or mmap() calls
 * inside the arena, the next one fails, once; a negative value: none fails.
 */
void pcpu_arena_fail_resource_after(long successes);

/* Testing hook: the number of PCPU_ARENA_UNIT units handed out and not freed. */
size_t pcpu_arena_debug_live_units(void);

/* Testing hook: the number of chunks mapped now. */
unsigned int pcpu_arena_debug_chunks(void);

#endif /* PCPU_LIB_ARENA_H */
