/* SPDX-License-Identifier: MIT */
/*
 * aarch64: no restartable sequence yet; counters use the portable
 * sched_getcpu() + atomic add path. The 16-byte compare-and-swap is
 * gcc's __sync builtin, which inlines casp (LSE) or calls libgcc's
 * lock-free outline atomics (__aarch64_cas16_sync), never libatomic's
 * locks.
 */
#ifndef PERCPU_ARCH_AARCH64_H
#define PERCPU_ARCH_AARCH64_H

#ifndef PERCPU_ARCH_H
#error "Never include <percpu/arch/aarch64.h> directly; include <percpu/arch.h>"
#endif

/* Internal to the library: one spin of a busy wait. */
#define PCPU_ARCH_HAVE_RELAX 1
static inline void pcpu_arch_relax(void)
{
	__asm__ __volatile__("yield" ::: "memory");
}

#endif /* PERCPU_ARCH_AARCH64_H */
