/* SPDX-License-Identifier: MIT */
#ifndef PCPU_LIB_COUNTER_INTERNAL_H
#define PCPU_LIB_COUNTER_INTERNAL_H

#include "registry.h"

/* The counters' operations for the registry. */
extern const struct pcpu_class pcpu_counter_class;

#endif /* PCPU_LIB_COUNTER_INTERNAL_H */
