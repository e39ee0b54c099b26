/* SPDX-License-Identifier: MIT */
/*
 * File-scope definitions in a dlopen()ed plugin: registered when it loads,
 * counting through its code, gone from the exposition (and the registry)
 * after dlclose(), and again on a second load.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

#include <percpu/metrics.h>
#include <percpu/registry.h>

#include "helpers.h"
#include "pcpu_test.h"

static void *load(void (**bump)(int64_t))
{
	const char *path = getenv("PCPU_TEST_PLUGIN");
	void *dl;

	cr_assert_not_null(path, "PCPU_TEST_PLUGIN names the plugin (meson sets it)");
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(dl, "dlopen: %s", dlerror());
	*(void **)bump = dlsym(dl, "plugin_bump");
	cr_assert_not_null(*bump);
	return dl;
}

PCPU_TEST(plugin, metrics_appear_on_load_and_vanish_on_dlclose)
{
	size_t before = pcpu_registry_count();
	void (*bump)(int64_t);
	long long v = -1;
	char *text;
	void *dl;

	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_expect_str_eq(text, "", "nothing before the load");
	free(text);
	for (int round = 0; round < 2; round++) {
		dl = load(&bump);
		cr_expect_eq(pcpu_registry_count(), before + 2, "two counters live");
		text = metrics_text(PCPU_METRICS_PROMETHEUS);
		cr_expect(metrics_has_line(text, "plugin_events_total 0"), "%s", text);
		cr_expect(metrics_has_line(text, "plugin_level 0"), "%s", text);
		free(text);
		bump(7);
		text = metrics_text(PCPU_METRICS_OPENMETRICS);
		cr_expect_eq(metrics_value(text, "plugin_events_total", &v), 0, "%s", text);
		cr_expect_eq(v, 7);
		cr_expect_eq(metrics_value(text, "plugin_level", &v), 0, "%s", text);
		cr_expect_eq(v, -7);
		free(text);
		cr_expect_eq(pcpu_metrics_define_errors(), 0, "the reload registered again");
		cr_assert_eq(dlclose(dl), 0);
		text = metrics_text(PCPU_METRICS_PROMETHEUS);
		cr_expect_str_eq(text, "", "round %d: gone after dlclose", round);
		free(text);
		cr_expect_eq(pcpu_registry_count(), before, "destroyed on unload");
	}
}
