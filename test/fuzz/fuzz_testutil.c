/* SPDX-License-Identifier: MIT */
/*
 * The testing helpers' reading of the text format (0.5,
 * <percpu/metrics_testutil.h>): a test's expected text can be anything,
 * and a label value anything a daemon was given. The input: a label value,
 * a NUL, then an expected text (the rest). Checks: the registry's own
 * exposition, with a child of that value, compares equal to itself and
 * gives the child's value back by its labels (so the reading of escapes
 * agrees with the writing); any text compares to a count of differences
 * or -EINVAL, never anything else, and the same count with or without a
 * diff stream.
 */
#define _GNU_SOURCE
#include <percpu/family.h>
#include <percpu/metrics.h>
#include <percpu/metrics_registry.h>
#include <percpu/metrics_testutil.h>

#include "fuzz.h"

static char *exposition(struct pcpu_metrics_registry *reg)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	FUZZ_CHECK(out, "open_memstream");
	FUZZ_CHECK(pcpu_metrics_registry_write(reg, out, PCPU_METRICS_PROMETHEUS) == 0, "write");
	fclose(out);
	return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 2), *value, *expected, *text;
	struct pcpu_metrics_registry *reg;
	struct pcpu_family *fam;
	struct pcpu_counter *child;
	FILE *null;
	double v = 0;
	int n, quiet;

	FUZZ_CHECK(buf, "malloc");
	memcpy(buf, data, size);
	buf[size] = buf[size + 1] = '\0';
	value = buf;
	expected = buf + strlen(buf) + 1;
	if (expected > buf + size)
		expected = buf + size;

	reg = pcpu_metrics_registry_create(NULL);
	FUZZ_CHECK(reg, "registry");
	fam = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "fuzz_tu", .help = "h", .kind = PCPU_METRIC_COUNTER,
		.label_names = (const char *const[]){ "v", NULL }, .registry = reg });
	FUZZ_CHECK(fam, "family");
	child = pcpu_family_get(fam, (const char *const[]){ value, NULL });
	if (child) {
		pcpu_counter_add(child, 3);
		text = exposition(reg);
		n = pcpu_metrics_compare(reg, NULL, text, NULL);
		FUZZ_CHECK(n == 0, "own exposition: %d\n%s", n, text);
		n = pcpu_metrics_value(reg, "fuzz_tu_total", (const char *const[]){ "v", value, NULL },
				       &v);
		FUZZ_CHECK(n == 0 && v == 3, "value: %d, %g", n, v);
		free(text);
	}
	null = fopen("/dev/null", "w");
	FUZZ_CHECK(null, "/dev/null");
	n = pcpu_metrics_compare(reg, NULL, expected, null);
	quiet = pcpu_metrics_compare(reg, NULL, expected, NULL);
	fclose(null);
	FUZZ_CHECK(n >= 0 || n == -EINVAL || n == -ENOMEM, "compare: %d", n);
	FUZZ_CHECK(n == quiet, "compare: %d with a diff stream, %d without", n, quiet);
	pcpu_family_destroy(fam);
	FUZZ_CHECK(pcpu_metrics_registry_destroy(reg) == 0, "registry destroy");
	free(buf);
	return 0;
}
