/* SPDX-License-Identifier: MIT */
/**
 * @file cpu.h
 * The CPU layer: which CPU a thread runs on, and "add to this CPU's copy".
 *
 * The promise: a process uses one of two update paths, never mixed (a
 * plain rseq add could erase an atomic update of a thread that believes it
 * runs on that CPU): the restartable-sequence path (plain adds; x86_64 and
 * aarch64, on the rseq area glibc >= 2.35 registers or the library's own)
 * or the atomic path (sched_getcpu() and atomic read-modify-writes; a
 * counter's add goes to the slot its thread owns). The first call of
 * pcpu_cpu_setup(), which every initialiser makes, chooses it; nothing
 * earlier does (loading the library, pcpu_cpu_possible(), the kernel
 * drop-in's percpu_counter_batch), so PCPU_FORCE_FALLBACK=1 in the
 * environment before the first initialiser forces the atomic path. Each
 * object records the path it was made with; its inline fast path follows
 * that record.
 *
 * Link: pkg-config percpu. Proofs: docs/internals.md [pending-bound] (one
 * argument per path)
 * (installed as /usr/share/doc/libpercpu-dev/internals.md by Debian's
 * libpercpu-dev, PREFIX/share/doc/percpu/internals.md by meson install).
 */
#ifndef PERCPU_CPU_H
#define PERCPU_CPU_H

#include <stdint.h>
#include <stddef.h>

#include <percpu/common.h>
#include <percpu/arch.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The update paths. @since 0.1 */
enum pcpu_cpu_mode {
	PCPU_CPU_UNSET = 0, /**< not chosen yet */
	PCPU_CPU_RSEQ = 1, /**< restartable sequences, plain adds */
	PCPU_CPU_ATOMIC = 2, /**< sched_getcpu() and atomic read-modify-writes */
};

/**
 * Chooses the process's update path if not chosen yet and returns it:
 * PCPU_CPU_ATOMIC if PCPU_FORCE_FALLBACK is set to anything but "" or "0",
 * or if this thread has no rseq area; PCPU_CPU_RSEQ otherwise. Safe from any
 * thread. @since 0.1
 */
PCPU_EXPORT enum pcpu_cpu_mode pcpu_cpu_setup(void);

/** The CPU the caller runs on (sched_getcpu()), or -1. @since 0.1 */
PCPU_EXPORT int pcpu_cpu_current(void);

/**
 * Number of possible CPUs: every per-CPU object has this many copies, and
 * every CPU number a thread can see is below it. @since 0.1
 */
PCPU_EXPORT unsigned int pcpu_cpu_possible(void);

/** Number of online CPUs when the library first needed it. @since 0.1 */
PCPU_EXPORT unsigned int pcpu_cpu_online(void);

/**
 * Clears the calling thread's rseq critical section, which an inline add
 * leaves pointing at a descriptor in the object (program or plugin) that
 * inlined it: call it in a plugin's unload path after its last add, or the
 * kernel kills the thread at its next preemption. @since 0.4
 */
PCPU_EXPORT void pcpu_cpu_disarm_rseq(void);

#include <percpu/static/cpu.h>

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_CPU_H */
