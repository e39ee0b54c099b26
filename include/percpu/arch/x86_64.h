/* SPDX-License-Identifier: MIT */
/*
 * x86_64 restartable-sequence add, after librseq's
 * include/rseq/arch/x86/bits.h.
 *
 * The critical section reads the current CPU number from the thread's rseq
 * area (glibc's, where glibc >= 2.35 registered one, or else the library's
 * own: lib/base/rseq_area.c), turns it into that CPU's stride and
 * adds to the slot there. The add is the committing instruction: if the
 * thread is preempted, migrated or signalled before it, the kernel restarts
 * the sequence at the abort handler, which simply tries again. No atomic
 * read-modify-write and no shared cacheline is written.
 *
 * arch/aarch64.h has the same functions and macros with the same
 * contracts, which this file states and that one cites. Why the two are
 * not stamped from one template, as librseq's arch headers are: they share
 * the C around each asm (retry on abort, -1 without an rseq area, -2 over
 * the threshold), and no instruction nor ordering (x86 orders loads;
 * aarch64's gated add needs ldar and dmb ishld, docs/internals.md
 * [seq-read]). The proofs ([pending-bound] path 1, the limited add's far
 * path in lib/counter/counter_limited.c) are read instruction by
 * instruction against one ISA's text, which a template would hide behind
 * a second layer of macros to save about ten lines of C. Within this file
 * the 64- and 32-bit adds share one body, PCPU_RSEQ_ASM_CHECKED_ADD().
 */
#ifndef PERCPU_ARCH_X86_64_H
#define PERCPU_ARCH_X86_64_H

#include <stddef.h>
#include <stdint.h>

#include <percpu/common.h>

#ifndef PERCPU_ARCH_H
#error "Never include <percpu/arch/x86_64.h> directly; include <percpu/arch.h>"
#endif

/*
 * Internal to the library: a 16-byte compare-and-swap of the 16-byte
 * aligned pair {int64_t, int64_t} at @pair: if it holds {expected[0],
 * expected[1]}, stores {@lo, @hi} and returns 1; otherwise stores what it
 * holds in @expected and returns 0. A full barrier either way. cmpxchg16b
 * in asm: the builtins would need -mcx16 or libatomic, and
 * ThreadSanitizer's emulation of 16-byte atomics takes a lock that a plain
 * rseq add does not respect.
 */
#define PCPU_ARCH_HAVE_CAS_PAIR 1
PCPU_INLINE int pcpu_arch_cas_pair(int64_t *pair, int64_t expected[2], int64_t lo, int64_t hi)
{
	unsigned char ok;

	__asm__ __volatile__("lock cmpxchg16b %[mem]"
			     : [mem] "+m"(*(int64_t(*)[2])pair), "=@ccz"(ok),
			       "+a"(expected[0]), "+d"(expected[1])
			     : "b"(lo), "c"(hi)
			     : "memory");
	return ok;
}

/*
 * Internal to the headers: adds @amount to *@p in one instruction, an
 * unlocked add (the kernel's local_add()): no signal handler of this thread
 * can run between its load and its store, though another CPU's write can.
 * Returns *@p after it. The atomic path's owned slots (lib/base/slot_owner.c)
 * need no more. (An unlocked xadd, which would return it, is microcoded:
 * slower than the add and a load that the store forwards to.)
 */
#define PCPU_ARCH_HAVE_LOCAL_ADD 1
PCPU_INLINE int64_t pcpu_arch_local_add(int64_t *p, int64_t amount)
{
	__asm__ __volatile__("addq %[amount], %[mem]" : [mem] "+m"(*p) : [amount] "er"(amount));
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Internal to the library: one spin of a busy wait. */
#define PCPU_ARCH_HAVE_RELAX 1
static inline void pcpu_arch_relax(void)
{
	__builtin_ia32_pause();
}

#if (defined(__clang__) && __clang_major__ >= 11) || \
	(!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11)

#define PCPU_ARCH_HAVE_RSEQ_ADD 1
#define PCPU_ARCH_HAVE_THREAD_POINTER 1

/*
 * Offsets in struct rseq (linux/rseq.h, a kernel ABI), as the asm needs
 * them: cpu_id and rseq_cs (test/rseq checks them against the kernel's
 * header). The signature before every abort handler, as glibc registers it.
 */
#define PCPU_RSEQ_CPU_ID_OFFSET 4
#define PCPU_RSEQ_CS_OFFSET 8
#define PCPU_RSEQ_SIG 0x53053053

/*
 * Internal to the headers: where this thread's rseq area lies from the
 * thread pointer (the same in every thread): glibc's __rseq_offset, or the
 * library's own area where libc registered none. Fixed by the library's
 * constructor before any code of the program runs, and const here, as
 * glibc's __rseq_offset, so that a caller's loop of adds loads it once and
 * not after every sequence's memory clobber (lib/base/rseq_area.c).
 */
PCPU_EXPORT extern const long __pcpu_rseq_offset;
#define PCPU_ARCH_STR_(x) #x
#define PCPU_ARCH_STR(x) PCPU_ARCH_STR_(x)

/*
 * The frame of a critical section (labels 1: start, 2: end, 3: descriptor,
 * 4: abort). BEGIN emits the struct rseq_cs descriptor (version, flags,
 * start, length, abort), arms it (rseq->rseq_cs = &descriptor), and leaves
 * this CPU's stride offset, cpu_id << 12, in %[offset], jumping to
 * %l[unregistered] if the thread has no rseq area (cpu_id < 0). SLOT then
 * turns %[offset] into the address of this CPU's copy, cpu0 + offset, so
 * that the body addresses it through one register: a read-modify-write at
 * a base register alone forwards its store to the next add's load with no
 * latency on CPUs that rename memory operands (Intel since Sunny Cove: on
 * Rocket Lake, family 6 model 167, a loop of indexed adds to one slot ran
 * at a third of the speed; bench/RESULTS.md), and costs one ALU operation
 * off the loop's chain elsewhere. The body
 * between BEGIN and END must end with its single committing store. END
 * emits the abort handler, preceded by the signature glibc registered,
 * which jumps to %l[abort].
 *
 * Every sequence is __asm__ __volatile__ goto: gcc 12 deletes an asm goto
 * whose outputs are unused (here: the checked add, whose caller needs only
 * which label it left by), although asm goto is documented as volatile.
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
	"leaq 3b(%%rip), %[offset]\n\t"                                    \
	"movq %[offset], %%fs:" PCPU_ARCH_STR(PCPU_RSEQ_CS_OFFSET) "(%[rseq])\n\t" \
	"1:\n\t"                                                           \
	"movslq %%fs:" PCPU_ARCH_STR(PCPU_RSEQ_CPU_ID_OFFSET) "(%[rseq]), %[offset]\n\t" \
	"testq %[offset], %[offset]\n\t"                                   \
	"js %l[unregistered]\n\t"                                          \
	"shlq $" PCPU_ARCH_STR(PCPU_STRIDE_SHIFT) ", %[offset]\n\t"

#define PCPU_RSEQ_ASM_SLOT "addq %[cpu0], %[offset]\n\t"

#define PCPU_RSEQ_ASM_END                                                  \
	"2:\n\t"                                                           \
	".pushsection __rseq_failure, \"ax\"\n\t"                         \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                       \
	".long " PCPU_ARCH_STR(PCPU_RSEQ_SIG) "\n\t"                        \
	"4:\n\t"                                                           \
	"jmp %l[abort]\n\t"                                                \
	".popsection\n\t"

/*
 * Adds @amount to the int64_t at cpu0 + cpu * PCPU_STRIDE, cpu being the CPU
 * this thread runs on, and returns cpu * PCPU_STRIDE; or returns -1 without
 * adding if the thread has no registered rseq area.
 */
PCPU_INLINE long pcpu_arch_rseq_add(int64_t *cpu0, int64_t amount)
{
	long offset;

retry:
	__asm__ __volatile__ goto(
		PCPU_RSEQ_ASM_BEGIN
		PCPU_RSEQ_ASM_SLOT
		"addq %[amount], (%[offset])\n\t"
		PCPU_RSEQ_ASM_END
		: [offset] "=&r"(offset)
		: [rseq] "r"(__pcpu_rseq_offset), [cpu0] "r"(cpu0), [amount] "er"(amount)
		: "memory", "cc"
		: abort, unregistered);
	return offset - (long)cpu0; /* SLOT left the address */
abort:
	goto retry;
unregistered:
	return -1;
}

/*
 * The sequence of pcpu_arch_rseq_add_checked() and pcpu_arch_rseq_add32(),
 * one template for both widths: @sfx is the operand size ("q", "l"), @mark
 * the offset of the mark after the value ("8", "4"). The new value must
 * stay within threshold of the mark: value - mark + amount + threshold must not
 * pass 2 * threshold (%[bias] is amount + threshold, %[width] 2 * threshold); then the
 * committing add.
 */
#define PCPU_RSEQ_ASM_CHECKED_ADD(sfx, mark)                               \
	PCPU_RSEQ_ASM_BEGIN                                                \
	PCPU_RSEQ_ASM_SLOT                                                 \
	"mov" sfx " (%[offset]), %[distance]\n\t"                           \
	"sub" sfx " " mark "(%[offset]), %[distance]\n\t"                   \
	"add" sfx " %[bias], %[distance]\n\t"                              \
	"cmp" sfx " %[width], %[distance]\n\t"                             \
	"ja %l[over]\n\t"                                                  \
	"add" sfx " %[amount], (%[offset])\n\t"                             \
	PCPU_RSEQ_ASM_END

/*
 * Adds @amount to the value of the pair {int64_t value; int64_t mark} at
 * cpu0 + cpu * PCPU_STRIDE, cpu being the CPU this thread runs on, unless
 * the new value would be more than @threshold (< 2^62) away from the mark
 * (value - mark + amount outside [-threshold, threshold], modulo 2^64). The pair
 * stores its mark plus @armed (a constant: 0, or PCPU_SLOT_ARMED for armed
 * slots), which the bias takes back out before the sequence: adding 2^63
 * is flipping the top bit, one btc. The check
 * and the committing addq are one restartable sequence: no other thread of
 * this CPU can add between them, and a remote folder that swaps value and
 * mark together cannot succeed on a value it read before the add. Returns
 * 1 if it added; 0 without adding if the threshold would be passed or the
 * thread has no registered rseq area.
 */
PCPU_INLINE int pcpu_arch_rseq_add_checked(int64_t *cpu0, int64_t amount, uint64_t threshold,
					   uint64_t armed)
{
	long offset;
	uint64_t distance;

retry:
	__asm__ __volatile__ goto(
		PCPU_RSEQ_ASM_CHECKED_ADD("q", "8")
		: [offset] "=&r"(offset), [distance] "=&r"(distance)
		: [rseq] "r"(__pcpu_rseq_offset), [cpu0] "r"(cpu0), [amount] "er"(amount),
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
 * The 32-bit sibling, for words whose low half is a value and whose high half
 * a mark plus PCPU_WORD_ARMED (little-endian: the value at +0, the mark at
 * +4; a high half of 0, not armed, fails every check): adds @amount to
 * the value of the word at cpu0 + cpu * PCPU_STRIDE unless the new value
 * would be more than @threshold (< 2^31) away from the mark, modulo 2^32. The
 * check and the committing addl are one restartable sequence, so the value
 * never strays further, however many threads share the CPU. Returns
 * cpu * PCPU_STRIDE; -1 without adding if the thread has no registered rseq
 * area; -2 without adding if the threshold would be passed.
 */
PCPU_INLINE long pcpu_arch_rseq_add32(uint64_t *cpu0, int32_t amount, uint32_t threshold)
{
	long offset;
	uint32_t distance;

retry:
	__asm__ __volatile__ goto(
		PCPU_RSEQ_ASM_CHECKED_ADD("l", "4")
		: [offset] "=&r"(offset), [distance] "=&r"(distance)
		: [rseq] "r"(__pcpu_rseq_offset), [cpu0] "r"(cpu0), [amount] "ir"(amount),
		  [bias] "ir"(((uint32_t)amount + threshold) ^ PCPU_WORD_ARMED),
		  [width] "ir"(2 * threshold)
		: "memory", "cc"
		: abort, unregistered, over);
	return offset - (long)(void *)cpu0; /* SLOT left the address */
abort:
	goto retry;
unregistered:
	return -1;
over:
	return -2;
}

/*
 * Internal to the library: the limited add's far path (lib/counter/counter_limited.c
 * says why it never overshoots), as one restartable sequence on this CPU:
 * reads the 32-bit seq word at @seq_off(@c) (busy if any of the bits
 * @busy is set), the int64_t central value at @central_off(@c) and the bound, the
 * uint32_t at @armed_off(@c) times the uint64_t at @max_off(@c) (a product
 * below 2^63: the caller keeps the second below 2^40, and Linux's CPUs are
 * fewer than 2^23); checks that the room between central and @limit in the
 * amount's direction (@ROOM: PCPU_ARCH_GATED_ROOM_UP for amounts above 0,
 * PCPU_ARCH_GATED_ROOM_DOWN below) is at least the bound; checks this CPU's
 * armed pair at @cpu0 as pcpu_arch_rseq_add_checked() does with @threshold; reads
 * the seq word again, last (unchanged: nothing it read was half folded),
 * and commits the add. Leaves by @abort (restart), @unregistered, @busy,
 * @no_room (overflow anywhere counts as no room) or @full (the pair's
 * check failed), or falls through having added. The offsets and @busy are
 * constant expressions; @offset, @room, @seq and @bound are the caller's
 * scratch variables (long, int64_t, uint32_t, uint64_t).
 */
#define PCPU_ARCH_GATED_ROOM_UP "negq %[room]\n\tjo %l[no_room]\n\t"
#define PCPU_ARCH_GATED_ROOM_DOWN ""
#define PCPU_ARCH_RSEQ_GATED_ADD(ROOM, c_, central_off_, armed_off_, max_off_, seq_off_, busy_,  \
				 cpu0_, limit_, amount_, threshold_, offset_, room_, seq_, bound_, \
				 abort_, unregistered_, busy_label_, no_room_, full_)             \
	__asm__ __volatile__ goto(                                                        \
		PCPU_RSEQ_ASM_BEGIN                                                       \
		"movl %c[seq_off](%[c]), %k[seq]\n\t"                                     \
		"testl %[busy_bits], %k[seq]\n\t"                                              \
		"jnz %l[" #busy_label_ "]\n\t"                                             \
		"movq %c[central_off](%[c]), %[room]\n\t"                                 \
		"subq %[limit], %[room]\n\t"                                              \
		"jo %l[no_room]\n\t"                                                      \
		ROOM                                                                      \
		"js %l[no_room]\n\t"                                                      \
		"movl %c[armed_off](%[c]), %k[bound]\n\t"                               \
		"imulq %c[max_off](%[c]), %[bound]\n\t"                                  \
		"cmpq %[bound], %[room]\n\t"                                             \
		"jb %l[no_room]\n\t"                                                      \
		/* the plain add's check: value - mark + amount within threshold */        \
		"movq (%[cpu0], %[offset]), %[room]\n\t"                                  \
		"subq 8(%[cpu0], %[offset]), %[room]\n\t"                                 \
		"addq %[bias], %[room]\n\t"                                               \
		"cmpq %[width], %[room]\n\t"                                              \
		"ja %l[full]\n\t"                                                         \
		/* last, after the pair: a fold of it since the first read shows */        \
		"cmpl %c[seq_off](%[c]), %k[seq]\n\t"                                     \
		"jne %l[" #busy_label_ "]\n\t"                                             \
		"addq %[amount], (%[cpu0], %[offset])\n\t"                                \
		PCPU_RSEQ_ASM_END                                                         \
		: [offset] "=&r"(offset_), [room] "=&r"(room_), [seq] "=&r"(seq_),       \
		  [bound] "=&r"(bound_)                                                   \
		: [rseq] "r"(__pcpu_rseq_offset), [cpu0] "r"(cpu0_), [c] "r"(c_),         \
		  [central_off] "i"(central_off_), [armed_off] "i"(armed_off_),           \
		  [max_off] "i"(max_off_),                                                \
		  [seq_off] "i"(seq_off_), [busy_bits] "i"(busy_), [limit] "r"(limit_),        \
		  [amount] "r"(amount_),                                                  \
		  [bias] "r"(((uint64_t)(amount_) + (threshold_)) ^ PCPU_SLOT_ARMED),     \
		  [width] "r"(2 * (threshold_))                                           \
		: "memory", "cc"                                                          \
		: abort_, unregistered_, busy_label_, no_room_, full_)

#endif /* asm goto with outputs */

#endif /* PERCPU_ARCH_X86_64_H */
