/* SPDX-License-Identifier: MIT */
/*
 * Created times (see PCPU_METRIC_SAMPLE_F_CREATED in <percpu/metrics.h>):
 * the clock they are read from, and whether the OpenMetrics formats write
 * them as NAME_created samples. The list stamps its metrics and a family
 * its children; the formats write them.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime(), CLOCK_REALTIME under -std=c11 (musl) */
#include <time.h>

#include <percpu/metrics.h>

#include "list/list_internal.h"

/* Off: Prometheus 2.42 would take each _created line for a series of its own. */
static int openmetrics_created;

PCPU_EXPORT int pcpu_metrics_set_openmetrics_created(int on)
{
	return __atomic_exchange_n(&openmetrics_created, on != 0, __ATOMIC_RELAXED);
}

bool pcpu_metrics_openmetrics_created(void)
{
	return __atomic_load_n(&openmetrics_created, __ATOMIC_RELAXED);
}

double pcpu_metrics_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
