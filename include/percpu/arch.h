/* SPDX-License-Identifier: MIT */
/*
 * Architecture dispatch, after librseq's <rseq/arch.h>: the file of the
 * architecture, if it has one, then arch/generic.h, which fills in what it
 * left out (every architecture builds: the generic path is correct
 * everywhere). The named primitives:
 *   PCPU_ARCH_HAVE_RSEQ_ADD    restartable sequences on this architecture:
 *     pcpu_arch_rseq_add()          plain add to this CPU's copy
 *     pcpu_arch_rseq_add_checked()  checked add of a {value, mark} pair
 *     pcpu_arch_rseq_add32()        checked add of a 32-bit {value, mark} word
 *     PCPU_ARCH_RSEQ_GATED_ADD()    the limited add's far path (checked, gated)
 *   PCPU_ARCH_HAVE_CAS_PAIR    pcpu_arch_cas_pair(), a lock-free 16-byte CAS
 *   PCPU_ARCH_HAVE_THREAD_POINTER  __builtin_thread_pointer() is the TLS
 *                              base that initial-exec offsets are from
 *   pcpu_arch_local_add()      an add no signal handler can split (not
 *                              atomic against other CPUs on x86_64),
 *                              returning the value after it
 *   pcpu_arch_relax()          one spin of a busy wait
 */
#ifndef PERCPU_ARCH_H
#define PERCPU_ARCH_H

#if defined(__x86_64__)
#include <percpu/arch/x86_64.h>
#elif defined(__aarch64__)
#include <percpu/arch/aarch64.h>
#elif defined(__s390x__)
#include <percpu/arch/s390x.h>
#endif

#include <percpu/arch/generic.h>

#endif /* PERCPU_ARCH_H */
