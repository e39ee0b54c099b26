/* SPDX-License-Identifier: MIT */
/*
 * The last release's add, vendored as a baseline: percpu 0.3's inline
 * pcpu_counter_add() (commit 4abacb6: include/percpu/counter.h,
 * static/counter.h, static/cpu.h and arch/x86_64.h), instruction for
 * instruction, over a counter of its own, so that percpu-bench compares
 * today's add with 0.3's in one binary and one run, whatever the library's
 * layout becomes. What 0.3 read from a writable global, v03_rseq_offset is
 * here too (0.3's __pcpu_rseq_offset, loaded again after every sequence's
 * memory clobber). Its slow path (v03_add.c) only folds the CPU's slot, as
 * 0.3's did on this path; the comparison runs on the rseq path only.
 * x86_64 only: elsewhere V03_HAVE_ADD is 0 and the baseline is skipped.
 */
#ifndef PERCPU_BENCH_V03_ADD_H
#define PERCPU_BENCH_V03_ADD_H

#include <stdint.h>

#include <percpu/cpu.h>

#if defined(__x86_64__) && PCPU_ARCH_HAVE_RSEQ_ADD
#define V03_HAVE_ADD 1

/* 0.3's struct pcpu_counter, up to what its add read */
struct v03_slot {
	int64_t value;
	int64_t mark;
};

struct v03_counter {
	int64_t count;
	int64_t thresh;
	uint64_t thresh_max;
	uint64_t bound;
	struct v03_slot *slots;
	uint32_t mode;
	uint32_t flags;
	int64_t base; /* exact value = base + sum of slot values */
	unsigned int nr_slots;
};

/* As 0.3's __pcpu_rseq_offset: writable, set before the first add. */
extern long v03_rseq_offset;

/* 0; -ENOMEM. */
int v03_counter_init(struct v03_counter *c);
void v03_counter_destroy(struct v03_counter *c);
int64_t v03_counter_sum(const struct v03_counter *c);
void v03_counter_add_slow(struct v03_counter *c, int64_t amount);

#define V03_STR_(x) #x
#define V03_STR(x) V03_STR_(x)

/* 0.3's PCPU_RSEQ_ASM_BEGIN, _END and _CHECKED_ADD("q", "8") */
#define V03_RSEQ_ASM_CHECKED_ADD                                           \
	".pushsection __rseq_cs, \"aw\"\n\t"                              \
	".balign 32\n\t"                                                   \
	"3:\n\t"                                                           \
	".long 0x0, 0x0\n\t"                                               \
	".quad 1f, 2f - 1f, 4f\n\t"                                        \
	".popsection\n\t"                                                  \
	".pushsection __rseq_cs_ptr_array, \"aw\"\n\t"                    \
	".quad 3b\n\t"                                                     \
	".popsection\n\t"                                                  \
	"leaq 3b(%%rip), %[offset]\n\t"                                    \
	"movq %[offset], %%fs:8(%[rseq])\n\t"                              \
	"1:\n\t"                                                           \
	"movslq %%fs:4(%[rseq]), %[offset]\n\t"                            \
	"testq %[offset], %[offset]\n\t"                                   \
	"js %l[unregistered]\n\t"                                          \
	"shlq $12, %[offset]\n\t"                                          \
	"movq (%[cpu0], %[offset]), %[distance]\n\t"                       \
	"subq 8(%[cpu0], %[offset]), %[distance]\n\t"                      \
	"addq %[bias], %[distance]\n\t"                                    \
	"cmpq %[span], %[distance]\n\t"                                    \
	"ja %l[over]\n\t"                                                  \
	"addq %[amount], (%[cpu0], %[offset])\n\t"                         \
	"2:\n\t"                                                           \
	".pushsection __rseq_failure, \"ax\"\n\t"                         \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                       \
	".long " V03_STR(PCPU_RSEQ_SIG) "\n\t"                              \
	"4:\n\t"                                                           \
	"jmp %l[abort]\n\t"                                                \
	".popsection\n\t"

/* 0.3's pcpu_arch_rseq_add_checked() */
static inline __attribute__((always_inline)) int v03_rseq_add_checked(int64_t *cpu0,
									int64_t amount,
									uint64_t limit)
{
	long offset;
	uint64_t distance;

retry:
	__asm__ __volatile__ goto(
		V03_RSEQ_ASM_CHECKED_ADD
		: [offset] "=&r"(offset), [distance] "=&r"(distance)
		: [rseq] "r"(v03_rseq_offset), [cpu0] "r"(cpu0), [amount] "er"(amount),
		  [bias] "r"((uint64_t)amount + limit), [span] "r"(2 * limit)
		: "memory", "cc"
		: abort, unregistered, over);
	return 1;
abort:
	goto retry;
unregistered:
over:
	return 0;
}

/*
 * 0.3's pcpu_counter_add() -> __pcpu_counter_add_limit() ->
 * pcpu_this_cpu_add_owned() on the rseq path (its owned-slot branch, for
 * the atomic path, goes to the slow path here).
 */
static inline __attribute__((always_inline)) void v03_counter_add(struct v03_counter *c,
								   int64_t amount)
{
	int64_t limit = c ? __atomic_load_n(&c->thresh, __ATOMIC_RELAXED) : 0;

	if (__builtin_expect(c != NULL && c->slots != NULL &&
			     (uint64_t)amount + (uint64_t)limit <= 2 * (uint64_t)limit, 1)) {
		int added = __builtin_expect(c->mode == PCPU_CPU_RSEQ, 1) ?
			v03_rseq_add_checked(&c->slots->value, amount, (uint64_t)limit) : 0;

		if (__builtin_expect(added > 0, 1))
			return;
	}
	v03_counter_add_slow(c, amount);
}

#else
#define V03_HAVE_ADD 0
#endif

#endif /* PERCPU_BENCH_V03_ADD_H */
