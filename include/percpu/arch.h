/* SPDX-License-Identifier: MIT */
/*
 * Architecture dispatch. Each per-architecture file may define
 * PCPU_ARCH_HAVE_RSEQ_ADD and pcpu_arch_rseq_add(); whatever it leaves out,
 * arch/generic.h fills in with the portable atomic path.
 */
#ifndef PERCPU_ARCH_H
#define PERCPU_ARCH_H

#if defined(__x86_64__)
#include <percpu/arch/x86_64.h>
#elif defined(__aarch64__)
#include <percpu/arch/aarch64.h>
#else
#error "unsupported architecture"
#endif

#include <percpu/arch/generic.h>

#endif /* PERCPU_ARCH_H */
