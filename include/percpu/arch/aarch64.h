/* SPDX-License-Identifier: MIT */
/*
 * aarch64 restartable sequences, after librseq's include/rseq/arch/aarch64.h:
 * the same sequences as arch/x86_64.h (which says what each promises), in
 * load/check/store form. The store is the last instruction of each
 * sequence, and the only one that commits: if the thread is preempted,
 * migrated or signalled before it, the kernel restarts the sequence at the
 * abort handler, which tries again. A remote folder changes only the mark
 * of a pair (a compare-and-swap of the whole pair that writes the value
 * back unchanged), so a value read at the start of the sequence is still
 * this CPU's value when the store commits.
 *
 * The 16-byte compare-and-swap stays gcc's __sync builtin (arch/generic.h),
 * which inlines casp (LSE) or calls libgcc's lock-free outline atomics
 * (__aarch64_cas16_sync), never libatomic's locks. *
 * Why this file and arch/x86_64.h are not stamped from one template, as
 * librseq's arch headers are: they share the C around each asm (retry on
 * abort, -1 without an rseq area, -2 over the threshold) and the contract,
 * which x86_64.h states once and this file cites; they share no
 * instruction, and not the ordering either (x86 orders loads; here the
 * gated add needs ldar and dmb ishld, docs/internals.md [seq-read]). The
 * proofs ([pending-bound] path 1, the limited add's far path in
 * lib/counter/counter_limited.c) are read instruction by instruction
 * against one ISA's text, which a template would hide behind a second
 * layer of macros to save about ten lines of C. Within one file the
 * 64- and 32-bit adds can share a body, as x86_64.h's do through
 * PCPU_RSEQ_ASM_CHECKED_ADD(); here they still differ in register widths
 * only, and are written out twice.
 */
#ifndef PERCPU_ARCH_AARCH64_H
#define PERCPU_ARCH_AARCH64_H

#include <stddef.h>
#include <stdint.h>

#include <percpu/common.h>

#ifndef PERCPU_ARCH_H
#error "Never include <percpu/arch/aarch64.h> directly; include <percpu/arch.h>"
#endif

/* Internal to the library: one spin of a busy wait. */
#define PCPU_ARCH_HAVE_RELAX 1
static inline void pcpu_arch_relax(void)
{
	__asm__ __volatile__("yield" ::: "memory");
}

/*
 * asm goto with outputs (gcc >= 11, clang >= 11); little-endian only: the
 * 32-bit sequence takes the value as the low half of its word, and a
 * big-endian signature would be byte-swapped (librseq's RSEQ_SIG_DATA).
 * Elsewhere arch/generic.h gives the atomic path.
 */
#if !defined(__AARCH64EB__) &&                                            \
	((defined(__clang__) && __clang_major__ >= 11) ||                 \
	 (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))

#define PCPU_ARCH_HAVE_RSEQ_ADD 1
#define PCPU_ARCH_HAVE_THREAD_POINTER 1

/*
 * Offsets in struct rseq (linux/rseq.h, a kernel ABI), as the asm needs
 * them (test/rseq checks them against the kernel's header). The signature
 * before every abort handler, as glibc registers it: the encoding of
 * "brk #0x45e0", so that a stray jump into it traps.
 */
#define PCPU_RSEQ_CPU_ID_OFFSET 4
#define PCPU_RSEQ_CS_OFFSET 8
#define PCPU_RSEQ_SIG 0xd428bc00

/* Internal to the headers, const for callers and fixed before main(): see arch/x86_64.h. */
PCPU_EXPORT extern const long __pcpu_rseq_offset;
#define PCPU_ARCH_STR_(x) #x
#define PCPU_ARCH_STR(x) PCPU_ARCH_STR_(x)

/*
 * This thread's struct rseq: the thread pointer (mrs tpidr_el0) plus the
 * offset, the same in every thread. Outside the sequence: a thread's
 * thread pointer never changes.
 */
#define PCPU_ARCH_RSEQ_AREA() ((char *)__builtin_thread_pointer() + __pcpu_rseq_offset)

/*
 * The frame of a critical section (labels 1: start, 2: end, 3: descriptor,
 * 4: abort), as in arch/x86_64.h. BEGIN emits the struct rseq_cs
 * descriptor, arms it (rseq->rseq_cs = &descriptor, an adrp/add pair:
 * position independent), and leaves this CPU's stride offset,
 * cpu_id << PCPU_STRIDE_SHIFT, in %[offset], leaving by %l[unregistered]
 * if the thread has no rseq area (cpu_id < 0). The body must end with its
 * single committing store. END emits the abort handler out of line,
 * preceded by the signature (.inst: code, whatever the data's endianness),
 * which branches to %l[abort]. Conditional branches reach +-1 MiB: the C
 * labels are in the same function.
 */
#define PCPU_RSEQ_ASM_BEGIN                                                \
	".pushsection __rseq_cs, \"aw\"\n\t"                              \
	".balign 32\n\t"                                                   \
	"3:\n\t"                                                           \
	".long 0x0, 0x0\n\t"                                               \
	".quad 1f, 2f - 1f, 4f\n\t"                                        \
	".popsection\n\t"                                                  \
	".pushsection __rseq_cs_ptr_array, \"aw\"\n\t"                    \
	".quad 3b\n\t"                                                     \
	".popsection\n\t"                                                  \
	"adrp %[offset], 3b\n\t"                                           \
	"add %[offset], %[offset], :lo12:3b\n\t"                           \
	"str %[offset], [%[rseq], #" PCPU_ARCH_STR(PCPU_RSEQ_CS_OFFSET) "]\n\t" \
	"1:\n\t"                                                           \
	"ldrsw %[offset], [%[rseq], #" PCPU_ARCH_STR(PCPU_RSEQ_CPU_ID_OFFSET) "]\n\t" \
	"cmp %[offset], #0\n\t"                                            \
	"b.lt %l[unregistered]\n\t"                                        \
	"lsl %[offset], %[offset], #" PCPU_ARCH_STR(PCPU_STRIDE_SHIFT) "\n\t"

#define PCPU_RSEQ_ASM_END                                                  \
	"2:\n\t"                                                           \
	".pushsection __rseq_failure, \"ax\"\n\t"                         \
	".balign 4\n\t"                                                    \
	".inst " PCPU_ARCH_STR(PCPU_RSEQ_SIG) "\n\t"                       \
	"4:\n\t"                                                           \
	"b %l[abort]\n\t"                                                  \
	".popsection\n\t"

/* As in arch/x86_64.h: adds to this CPU's int64_t; cpu * PCPU_STRIDE or -1. */
PCPU_INLINE long pcpu_arch_rseq_add(int64_t *cpu0, int64_t amount)
{
	long offset;
	int64_t value;

retry:
	__asm__ __volatile__ goto(
		PCPU_RSEQ_ASM_BEGIN
		"ldr %[value], [%[cpu0], %[offset]]\n\t"
		"add %[value], %[value], %[amount]\n\t"
		"str %[value], [%[cpu0], %[offset]]\n\t"
		PCPU_RSEQ_ASM_END
		: [offset] "=&r"(offset), [value] "=&r"(value)
		: [rseq] "r"(PCPU_ARCH_RSEQ_AREA()), [cpu0] "r"(cpu0), [amount] "r"(amount)
		: "memory", "cc"
		: abort, unregistered);
	return offset;
abort:
	goto retry;
unregistered:
	return -1;
}

/*
 * As in arch/x86_64.h: adds @amount to this CPU's {value, mark} pair unless
 * value - mark + amount leaves [-threshold, threshold], the mark stored plus
 * @armed; 1 if it added, else 0.
 * %[offset] becomes the pair's address once the CPU is known.
 */
PCPU_INLINE int pcpu_arch_rseq_add_checked(int64_t *cpu0, int64_t amount, uint64_t threshold,
					   uint64_t armed)
{
	long offset;
	int64_t value;
	uint64_t distance;

retry:
	__asm__ __volatile__ goto(
		PCPU_RSEQ_ASM_BEGIN
		"add %[offset], %[cpu0], %[offset]\n\t"
		"ldp %[value], %[distance], [%[offset]]\n\t"
		/* value - mark + amount + threshold must not pass 2 * threshold */
		"sub %[distance], %[value], %[distance]\n\t"
		"add %[distance], %[distance], %[bias]\n\t"
		"cmp %[distance], %[width]\n\t"
		"b.hi %l[over]\n\t"
		"add %[value], %[value], %[amount]\n\t"
		"str %[value], [%[offset]]\n\t"
		PCPU_RSEQ_ASM_END
		: [offset] "=&r"(offset), [value] "=&r"(value), [distance] "=&r"(distance)
		: [rseq] "r"(PCPU_ARCH_RSEQ_AREA()), [cpu0] "r"(cpu0), [amount] "r"(amount),
		  [bias] "r"(((uint64_t)amount + threshold) ^ armed), [width] "r"(2 * threshold)
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
 * As in arch/x86_64.h: the 32-bit {value, mark} word (value in the low
 * half, the mark stored plus PCPU_WORD_ARMED), modulo 2^32; cpu * PCPU_STRIDE, -1 (no rseq area) or -2 (over).
 */
PCPU_INLINE long pcpu_arch_rseq_add32(uint64_t *cpu0, int32_t amount, uint32_t threshold)
{
	long offset;
	uint64_t *word;
	uint32_t value, distance;

retry:
	__asm__ __volatile__ goto(
		PCPU_RSEQ_ASM_BEGIN
		"add %[word], %[cpu0], %[offset]\n\t"
		"ldp %w[value], %w[distance], [%[word]]\n\t"
		/* value - mark + amount + threshold must not pass 2 * threshold */
		"sub %w[distance], %w[value], %w[distance]\n\t"
		"add %w[distance], %w[distance], %w[bias]\n\t"
		"cmp %w[distance], %w[width]\n\t"
		"b.hi %l[over]\n\t"
		"add %w[value], %w[value], %w[amount]\n\t"
		"str %w[value], [%[word]]\n\t"
		PCPU_RSEQ_ASM_END
		: [offset] "=&r"(offset), [word] "=&r"(word), [value] "=&r"(value),
		  [distance] "=&r"(distance)
		: [rseq] "r"(PCPU_ARCH_RSEQ_AREA()), [cpu0] "r"(cpu0), [amount] "r"(amount),
		  [bias] "r"(((uint32_t)amount + threshold) ^ PCPU_WORD_ARMED),
		  [width] "r"(2 * threshold)
		: "memory", "cc"
		: abort, unregistered, over);
	return offset;
abort:
	goto retry;
unregistered:
	return -1;
over:
	return -2;
}

/*
 * Internal to the library: the limited add's far path, with the arguments
 * and exits of arch/x86_64.h's. What x86's ordered loads gave for free is
 * explicit here: the first read of the seq word is a load-acquire (nothing
 * after it is read before it), and dmb ishld orders every read before the
 * second one, as a seqlock reader must (lib/counter/counter.c's folds bump the
 * word with full barriers). The committing store depends on the second
 * read through the branch: it is not made visible before it.
 */
#define PCPU_ARCH_GATED_ROOM_UP "negs %[room], %[room]\n\tb.vs %l[no_room]\n\t"
#define PCPU_ARCH_GATED_ROOM_DOWN ""
#define PCPU_ARCH_RSEQ_GATED_ADD(ROOM, c_, central_off_, armed_off_, max_off_, seq_off_, busy_,  \
				 cpu0_, limit_, amount_, threshold_, offset_, room_, seq_, bound_, \
				 abort_, unregistered_, busy_label_, no_room_, full_)             \
	do {                                                                              \
		int64_t pcpu_value_;                                                      \
                                                                                          \
		__asm__ __volatile__ goto(                                                \
			PCPU_RSEQ_ASM_BEGIN                                               \
			"ldar %w[seq], [%[seqp]]\n\t"                                     \
			"tst %w[seq], %[busy_bits]\n\t"                                   \
			"b.ne %l[" #busy_label_ "]\n\t"                                    \
			"ldr %[room], [%[c], #%c[central_off]]\n\t"                       \
			"subs %[room], %[room], %[limit]\n\t"                             \
			"b.vs %l[no_room]\n\t"                                            \
			ROOM                                                              \
			"b.mi %l[no_room]\n\t"                                            \
			"ldr %w[value], [%[c], #%c[armed_off]]\n\t"                       \
			"ldr %[bound], [%[c], #%c[max_off]]\n\t"                          \
			"mul %[bound], %[bound], %[value]\n\t"                            \
			"cmp %[room], %[bound]\n\t"                                       \
			"b.lo %l[no_room]\n\t"                                            \
			/* the plain add's check: value - mark + amount within threshold */ \
			"add %[offset], %[cpu0], %[offset]\n\t"                           \
			"ldp %[value], %[room], [%[offset]]\n\t"                          \
			"sub %[room], %[value], %[room]\n\t"                              \
			"add %[room], %[room], %[bias]\n\t"                               \
			"cmp %[room], %[width]\n\t"                                       \
			"b.hi %l[full]\n\t"                                               \
			/* last, after the pair: a fold of it since the first read shows */ \
			"dmb ishld\n\t"                                                   \
			"ldr %w[room], [%[seqp]]\n\t"                                     \
			"cmp %w[room], %w[seq]\n\t"                                       \
			"b.ne %l[" #busy_label_ "]\n\t"                                    \
			"add %[value], %[value], %[amount]\n\t"                           \
			"str %[value], [%[offset]]\n\t"                                   \
			PCPU_RSEQ_ASM_END                                                 \
			: [offset] "=&r"(offset_), [room] "=&r"(room_), [seq] "=&r"(seq_), \
			  [value] "=&r"(pcpu_value_), [bound] "=&r"(bound_)               \
			: [rseq] "r"(PCPU_ARCH_RSEQ_AREA()), [cpu0] "r"(cpu0_), [c] "r"(c_), \
			  [seqp] "r"((const char *)(c_) + (seq_off_)),                   \
			  [central_off] "i"(central_off_), [armed_off] "i"(armed_off_),   \
			  [max_off] "i"(max_off_),                                        \
			  [busy_bits] "K"(busy_), [limit] "r"(limit_),                    \
			  [amount] "r"(amount_),                                          \
			  [bias] "r"(((uint64_t)(amount_) + (threshold_)) ^ PCPU_SLOT_ARMED), \
			  [width] "r"(2 * (threshold_))                                   \
			: "memory", "cc"                                                  \
			: abort_, unregistered_, busy_label_, no_room_, full_);           \
	} while (0)

#endif /* asm goto with outputs, little-endian */

#endif /* PERCPU_ARCH_AARCH64_H */
