/* SPDX-License-Identifier: MIT */
/*
 * Macros shared by the public percpu headers (internal to them: include
 * the header of what you use). Everything here is prefixed PCPU_/pcpu_ so
 * that nothing leaks into the includer's namespace.
 *
 * Link: pkg-config percpu.
 */
#ifndef PERCPU_COMMON_H
#define PERCPU_COMMON_H

#include <stdint.h>

#if defined(PCPU_BUILDING_LIBRARY) && defined(__GNUC__)
#define PCPU_EXPORT __attribute__((visibility("default")))
#else
#define PCPU_EXPORT
#endif

#if defined(__GNUC__)
#define pcpu_likely(x) __builtin_expect(!!(x), 1)
#define pcpu_unlikely(x) __builtin_expect(!!(x), 0)
#define PCPU_PURE __attribute__((pure))
#define PCPU_ALWAYS_INLINE __attribute__((always_inline))
#else
#define pcpu_likely(x) (x)
#define pcpu_unlikely(x) (x)
#define PCPU_PURE
#define PCPU_ALWAYS_INLINE
#endif

/*
 * The inline fast paths (adds and tries, and what they call) are always
 * inlined, even where gcc's own inlining gives up (docs/rationale.md,
 * installed as /usr/share/doc/libpercpu-dev/rationale.md by Debian's
 * libpercpu-dev, PREFIX/share/doc/percpu/rationale.md by meson install);
 * their slow paths stay out of line.
 */
#define PCPU_INLINE static inline PCPU_ALWAYS_INLINE

/*
 * __extension__: C99 -pedantic calls _Static_assert C11's. glibc's
 * <sys/cdefs.h> hid that by defining it as a macro before C11; musl does not.
 */
#ifdef __cplusplus
#define PCPU_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#elif defined(__GNUC__)
#define PCPU_STATIC_ASSERT(cond, msg) __extension__ _Static_assert(cond, msg)
#else
#define PCPU_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/*
 * Per-CPU storage: every CPU owns one stride of each arena chunk, so the
 * copy of an object for CPU n lives n * PCPU_STRIDE bytes after the copy
 * for CPU 0. One page, so that each CPU's stride can be bound to its NUMA
 * node. Part of the ABI: the inline fast path computes addresses with it.
 */
#define PCPU_STRIDE_SHIFT 12
#define PCPU_STRIDE (1UL << PCPU_STRIDE_SHIFT)

/*
 * Internal to the headers: the fast paths' one range check, |@delta| <=
 * @threshold in one unsigned comparison (both signs: a negative delta wraps
 * past 2 * threshold). Every C path checks an amount or a pending delta
 * with it; the asm templates of <percpu/arch/> spell the same comparison.
 */
static inline int __pcpu_within(int64_t delta, uint64_t threshold)
{
	return (uint64_t)delta + threshold <= 2 * threshold;
}

/*
 * Internal to the headers: an armed slot (a counter's {value, mark} pair)
 * stores its mark plus PCPU_SLOT_ARMED, half the 64-bit range. A
 * zero-filled slot, one that no CPU has armed, then reads as a pending
 * delta of about 2^63, which fails every check: its CPU's first add takes
 * the slow path, which records the CPU among the counter's armed ones
 * before it arms the slot, so that walks and the error bound need visit
 * only those (docs/internals.md [armed], installed beside rationale.md
 * above). Unarmed layouts pass 0.
 */
#define PCPU_SLOT_ARMED (UINT64_C(1) << 63)

/* The same for a stat set's 32-bit word: the high half is the mark plus 2^31. */
#define PCPU_WORD_ARMED (UINT32_C(1) << 31)

#endif /* PERCPU_COMMON_H */
