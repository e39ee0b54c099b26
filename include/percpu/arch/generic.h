/* SPDX-License-Identifier: MIT */
/*
 * Defaults for whatever the architecture file did not provide.
 */
#ifndef PERCPU_ARCH_GENERIC_H
#define PERCPU_ARCH_GENERIC_H

#ifndef PCPU_ARCH_HAVE_RSEQ_ADD
#define PCPU_ARCH_HAVE_RSEQ_ADD 0
#endif

#endif /* PERCPU_ARCH_GENERIC_H */
