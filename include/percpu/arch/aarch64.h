/* SPDX-License-Identifier: MIT */
/*
 * aarch64: no restartable sequence yet; counters use the portable
 * sched_getcpu() + atomic add path from arch/generic.h.
 */
#ifndef PERCPU_ARCH_AARCH64_H
#define PERCPU_ARCH_AARCH64_H

#endif /* PERCPU_ARCH_AARCH64_H */
