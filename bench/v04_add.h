/* SPDX-License-Identifier: MIT */
/*
 * The last release's add, vendored as a baseline: percpu 0.4's inline
 * pcpu_counter_add() (unchanged since commit 4ab4a60:
 * include/percpu/counter.h, static/counter.h, static/cpu.h and
 * arch/x86_64.h's pcpu_arch_rseq_add_checked() on an armed pair), instruction
 * for instruction on the rseq path, over a counter of its own, so that
 * percpu-bench compares today's add with 0.4's in one binary and one run
 * whatever the library's add becomes, and `meson test --benchmark` fails
 * (add-vs-0.4) when it falls below 0.9x of it. Its atomic path's owned-slot
 * branch goes to the slow path here (v04_add.c), which only adds and folds
 * the CPU's slot; the comparison runs on the rseq path only. x86_64 only:
 * elsewhere V04_HAVE_ADD is 0 and the baseline is skipped.
 */
#ifndef PERCPU_BENCH_V04_ADD_H
#define PERCPU_BENCH_V04_ADD_H

#include <stdint.h>

#include <percpu/cpu.h>

#if defined(__x86_64__) && PCPU_ARCH_HAVE_RSEQ_ADD
#define V04_HAVE_ADD 1

/* 0.4's armed pair: the mark plus 2^63 (PCPU_SLOT_ARMED); 0: not armed */
struct v04_slot {
	int64_t value;
	int64_t mark;
};

/* 0.4's struct pcpu_counter, up to what its add reads, at the same offsets */
struct v04_counter {
	int64_t central;
	int64_t threshold;
	uint64_t threshold_max;
	struct v04_slot *slots;
	uint32_t mode;
	uint32_t flags;
	uint32_t armed;
	uint32_t seq;
	int64_t base; /* exact value = base + sum of slot values */
	unsigned int nr_slots;
};

#define V04_SLOT_ARMED (UINT64_C(1) << 63)

/* 0; -ENOMEM. */
int v04_counter_init(struct v04_counter *c);
void v04_counter_destroy(struct v04_counter *c);
int64_t v04_counter_sum(const struct v04_counter *c);
void v04_counter_add_slow(struct v04_counter *c, int64_t amount);

#define V04_STR_(x) #x
#define V04_STR(x) V04_STR_(x)

/* 0.4's PCPU_RSEQ_ASM_BEGIN, _END and PCPU_RSEQ_ASM_CHECKED_ADD("q", "8") */
#define V04_RSEQ_ASM_CHECKED_ADD                                           \
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
	"cmpq %[width], %[distance]\n\t"                                   \
	"ja %l[over]\n\t"                                                  \
	"addq %[amount], (%[cpu0], %[offset])\n\t"                         \
	"2:\n\t"                                                           \
	".pushsection __rseq_failure, \"ax\"\n\t"                         \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                       \
	".long " V04_STR(PCPU_RSEQ_SIG) "\n\t"                              \
	"4:\n\t"                                                           \
	"jmp %l[abort]\n\t"                                                \
	".popsection\n\t"

/* 0.4's pcpu_arch_rseq_add_checked(), armed: its rseq offset is const (glibc's way) */
static inline __attribute__((always_inline)) int v04_rseq_add_checked(int64_t *cpu0,
									int64_t amount,
									uint64_t threshold)
{
	long offset;
	uint64_t distance;

retry:
	__asm__ __volatile__ goto(
		V04_RSEQ_ASM_CHECKED_ADD
		: [offset] "=&r"(offset), [distance] "=&r"(distance)
		: [rseq] "r"(__pcpu_rseq_offset), [cpu0] "r"(cpu0), [amount] "er"(amount),
		  [bias] "r"(((uint64_t)amount + threshold) ^ V04_SLOT_ARMED),
		  [width] "r"(2 * threshold)
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
 * 0.4's pcpu_counter_add() -> __pcpu_counter_add_within() ->
 * pcpu_this_cpu_add_owned() on the rseq path.
 */
static inline __attribute__((always_inline)) void v04_counter_add(struct v04_counter *c,
								   int64_t amount)
{
	int64_t threshold = c ? __atomic_load_n(&c->threshold, __ATOMIC_RELAXED) : 0;

	if (__builtin_expect(c != NULL && c->slots != NULL &&
			     (uint64_t)amount + (uint64_t)threshold <= 2 * (uint64_t)threshold,
			     1)) {
		int added = __builtin_expect(c->mode == PCPU_CPU_RSEQ, 1) ?
			v04_rseq_add_checked(&c->slots->value, amount, (uint64_t)threshold) : 0;

		if (__builtin_expect(added > 0, 1))
			return;
	}
	v04_counter_add_slow(c, amount);
}

#else
#define V04_HAVE_ADD 0
#endif

#endif /* PERCPU_BENCH_V04_ADD_H */
