/* SPDX-License-Identifier: MIT */
#ifndef PCPU_LIB_COUNTER_INTERNAL_H
#define PCPU_LIB_COUNTER_INTERNAL_H

#include <percpu/counter.h>

/* Folds every CPU's whole pending delta into the central value. */
void pcpu_counter_fold_all(struct pcpu_counter *c);

/*
 * In the child of a fork, with only the forking thread left: rebuild the
 * central value of @c (a fold may have stopped half done) ...
 */
void pcpu_counter_after_fork(struct pcpu_counter *c);

/* ... and reset the locks of limited adds. */
void pcpu_counter_after_fork_locks(void);

#endif /* PCPU_LIB_COUNTER_INTERNAL_H */
