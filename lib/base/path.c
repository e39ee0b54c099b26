/* SPDX-License-Identifier: MIT */
/*
 * The update path (see <percpu/cpu.h>): the choice between the
 * restartable-sequence and atomic paths, made once by the first
 * initialiser, so that the environment it reads is the one the program set
 * before making counters; the current CPU. The top of the CPU layer, which
 * is a line: path.c -> slot_owner.c -> cpu_atomic.c -> cpu_count.c (counts),
 * rseq_area.c (the rseq area), fence.c (the rseq fence), misuse.c.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/cpu.h>

#include "cpu_internal.h"
#include "misuse.h"
#include "rseq_area.h"
#include "slot_owner.h"

static enum pcpu_cpu_mode mode;
static pthread_once_t mode_once = PTHREAD_ONCE_INIT;

static enum pcpu_cpu_mode choose_mode(void)
{
	const char *force = getenv("PCPU_FORCE_FALLBACK");

	if (force && *force && strcmp(force, "0") != 0)
		return PCPU_CPU_ATOMIC;
	return pcpu_rseq_area_setup() != PCPU_RSEQ_NONE ? PCPU_CPU_RSEQ : PCPU_CPU_ATOMIC;
}

static void setup_mode(void)
{
	mode = choose_mode();
	if (mode == PCPU_CPU_ATOMIC)
		pcpu_slot_owner_setup();
}

PCPU_EXPORT enum pcpu_cpu_mode pcpu_cpu_setup(void)
{
	(void)pcpu_cpu_possible(); /* the counts first, as before any add */
	pthread_once(&mode_once, setup_mode);
	return mode;
}

PCPU_EXPORT int pcpu_cpu_current(void)
{
	/* every slow path asks: a thread's first one registers its rseq area */
	pcpu_rseq_area_register();
	return pcpu_sched_cpu();
}

/*
 * The inline adds leave the thread's rseq_cs pointing at their descriptor,
 * which lives in the object that inlined them. Once that object is
 * unloaded, the kernel would fault on the dangling pointer at the thread's
 * next preemption and kill it: an object's unload path disarms it first.
 */
PCPU_EXPORT void pcpu_cpu_disarm_rseq(void)
{
	pcpu_rseq_area_disarm();
}
