/* SPDX-License-Identifier: MIT */
/*
 * This thread's rseq area: glibc's where glibc registered one, else the
 * library's own (lib/base/rseq_area.c). Used by the CPU layer only.
 */
#ifndef PCPU_LIB_RSEQ_AREA_H
#define PCPU_LIB_RSEQ_AREA_H

#include <stdbool.h>

/* Who registered the areas that the rseq path uses. */
enum pcpu_rseq_owner {
	PCPU_RSEQ_NONE = 0, /* no area: the atomic path */
	PCPU_RSEQ_LIBC = 1, /* glibc >= 2.35 registered every thread's */
	PCPU_RSEQ_OWN = 2,  /* the library registers each thread's own */
};

/*
 * Chooses the owner once: glibc if it had registered an area when the
 * library was loaded (__pcpu_rseq_offset, fixed then, points at glibc's),
 * else the library's own if the kernel accepts it for the calling thread.
 * Returns the owner.
 */
enum pcpu_rseq_owner pcpu_rseq_area_setup(void);

/* The owner pcpu_rseq_area_setup() chose (PCPU_RSEQ_NONE before it). */
enum pcpu_rseq_owner pcpu_rseq_area_owner(void);

/*
 * With the library's own areas, registers the calling thread's unless it
 * tried before (once per thread: the slow paths call it, so a thread's
 * first add registers it and the adds after it take the rseq path).
 * Returns whether the thread has a usable area now.
 */
bool pcpu_rseq_area_register(void);

/* Clears this thread's rseq_cs (see pcpu_cpu_disarm_rseq()). */
void pcpu_rseq_area_disarm(void);

#endif /* PCPU_LIB_RSEQ_AREA_H */
