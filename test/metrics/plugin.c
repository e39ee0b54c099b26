/* SPDX-License-Identifier: MIT */
/* A dlopen()ed plugin with file-scope metrics (see test_plugin.c). */
#include <percpu/metrics.h>

PCPU_COUNTER_DEFINE(plugin_events, "plugin_events", "Events counted in the plugin.");
PCPU_GAUGE_DEFINE(plugin_level, "plugin_level", "A gauge of the plugin.");

__attribute__((visibility("default"))) void plugin_bump(int64_t n);

__attribute__((visibility("default"))) void plugin_bump(int64_t n)
{
	pcpu_counter_add(&plugin_events, n);
	pcpu_counter_add(&plugin_level, -n);
}
