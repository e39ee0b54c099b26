/* SPDX-License-Identifier: MIT */
#ifndef PCPU_LIB_COUNTER_INTERNAL_H
#define PCPU_LIB_COUNTER_INTERNAL_H

#include <percpu/counter.h>

/* Folds every CPU's whole pending delta into the central value. */
void pcpu_counter_fold_all(struct pcpu_counter *c);

#endif /* PCPU_LIB_COUNTER_INTERNAL_H */
