/* SPDX-License-Identifier: MIT */
/*
 * The strongest bare per-CPU add known, as a baseline: librseq's idiom
 * (include/rseq/arch/x86/bits.h, rseq_addv(), and its callers' loop in
 * tests/basic_percpu_ops_test.c). The CPU number is read in C before the
 * sequence (cpu_id_start, always a valid index), the slot's address is
 * computed from it in C, and the sequence only arms itself, compares
 * cpu_id with that number and commits one add. An abort or a changed CPU
 * leaves the sequence and the loop starts again with a fresh CPU number.
 * The library's own bare sequence (pcpu_arch_rseq_add()) instead loads
 * cpu_id inside the sequence and tests, shifts and indexes it there.
 *
 * One change from librseq, to make it stronger: the slot is addressed
 * through one register (an "r" operand, "addq %[count], (%[v])"), where
 * librseq's "m" operand lets the compiler pick base + index (gcc 12 does,
 * here). On Intel's Sunny Cove and its Cypress Cove backport (Rocket Lake)
 * a read-modify-write whose address is a base register alone forwards its
 * store to the next one with no latency, and an indexed one does not: the
 * loop of adds to one slot ran 3x faster on family 6 model 167.
 *
 * Per-CPU int64_t slots, CPU n's n * PCPU_STRIDE bytes after CPU 0's, as
 * the library's. x86_64 only (BENCH_HAVE_RSEQ_ADDV 0 elsewhere: the row is
 * skipped).
 */
#ifndef PERCPU_BENCH_RSEQ_ADDV_H
#define PERCPU_BENCH_RSEQ_ADDV_H

#include <stdbool.h>
#include <stdint.h>

#include <percpu/cpu.h>

#if defined(__x86_64__) && PCPU_ARCH_HAVE_RSEQ_ADD && PCPU_ARCH_HAVE_THREAD_POINTER
#define BENCH_HAVE_RSEQ_ADDV 1

/* struct rseq's cpu_id_start (linux/rseq.h): the last CPU, or 0 if none */
#define BENCH_RSEQ_CPU_ID_START_OFFSET 0

/* This thread's rseq area, as librseq's rseq_get_abi(). */
static inline __attribute__((always_inline)) char *bench_rseq_area(void)
{
	return (char *)__builtin_thread_pointer() + __pcpu_rseq_offset;
}

/*
 * Whether this thread has a registered rseq area (cpu_id >= 0). librseq's
 * loop assumes one: unregistered, cpu_id (-1) never equals cpu_id_start
 * (0) and it would restart for ever. A thread stays registered until it
 * exits, so the caller asks once and then runs the plain loop.
 */
static inline bool bench_rseq_registered(void)
{
	return __atomic_load_n((int32_t *)(void *)(bench_rseq_area() + PCPU_RSEQ_CPU_ID_OFFSET),
			       __ATOMIC_RELAXED) >= 0;
}

/*
 * rseq_addv(): adds @count to *@v if this thread still runs on @cpu; 0 if
 * it added, -1 if it did not (aborted, or on another CPU: the caller
 * reloads the CPU number and retries).
 */
static inline __attribute__((always_inline)) int bench_rseq_addv(int64_t *v, int64_t count,
								  int32_t cpu)
{
	__asm__ __volatile__ goto(
		".pushsection __rseq_cs, \"aw\"\n\t"
		".balign 32\n\t"
		"3:\n\t"
		".long 0x0, 0x0\n\t"
		".quad 1f, 2f - 1f, 4f\n\t"
		".popsection\n\t"
		".pushsection __rseq_cs_ptr_array, \"aw\"\n\t"
		".quad 3b\n\t"
		".popsection\n\t"
		"leaq 3b(%%rip), %%rax\n\t"
		"movq %%rax, %%fs:" PCPU_ARCH_STR(PCPU_RSEQ_CS_OFFSET) "(%[rseq_offset])\n\t"
		"1:\n\t"
		"cmpl %[cpu_id], %%fs:" PCPU_ARCH_STR(PCPU_RSEQ_CPU_ID_OFFSET) "(%[rseq_offset])\n\t"
		"jnz 4f\n\t"
		"addq %[count], (%[v])\n\t"
		"2:\n\t"
		".pushsection __rseq_failure, \"ax\"\n\t"
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long " PCPU_ARCH_STR(PCPU_RSEQ_SIG) "\n\t"
		"4:\n\t"
		"jmp %l[abort]\n\t"
		".popsection\n\t"
		: /* no outputs */
		: [cpu_id] "r"(cpu), [rseq_offset] "r"(__pcpu_rseq_offset), [v] "r"(v),
		  [count] "er"(count)
		: "memory", "cc", "rax"
		: abort);
	return 0;
abort:
	return -1;
}

/*
 * this_cpu_add() in librseq's shape: the CPU number and the slot's address
 * before the sequence, retried until it commits. @cpu0: CPU 0's slot. The
 * thread must be registered (bench_rseq_registered()).
 */
static inline __attribute__((always_inline)) void bench_rseq_this_cpu_add(int64_t *cpu0,
									   int64_t count)
{
	int32_t cpu;

	do {
		cpu = __atomic_load_n((int32_t *)(void *)(bench_rseq_area() +
							   BENCH_RSEQ_CPU_ID_START_OFFSET),
				      __ATOMIC_RELAXED);
	} while (__builtin_expect(bench_rseq_addv((int64_t *)(void *)((char *)cpu0 +
								      (long)cpu * PCPU_STRIDE),
						  count, cpu), 0));
}

#else
#define BENCH_HAVE_RSEQ_ADDV 0
#endif

#endif /* PERCPU_BENCH_RSEQ_ADDV_H */
