/* SPDX-License-Identifier: MIT */
/* A second module that defines a name test_define_dup.c defines too. */
#include <percpu/metrics.h>

PCPU_COUNTER_DEFINE(dup_requests_other, "dup_requests", "Defined in the other file too.");

struct pcpu_counter *dup_other(void);

struct pcpu_counter *dup_other(void)
{
	return &dup_requests_other;
}
