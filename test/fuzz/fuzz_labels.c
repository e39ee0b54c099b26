/* SPDX-License-Identifier: MIT */
/*
 * Label names and values, as a daemon takes them from its clients (a user
 * agent, a path): one constant label on a registered counter, the same
 * as a family's label and child's value, and as a registry's constant
 * label (merged into the process's exposition). The input: the label name, a NUL,
 * the value (the rest). Registration gives 0 or a negative errno; what is
 * accepted has a name of the label grammar and a UTF-8 value, and in both
 * exposition formats the value parses back (by this file's own reading of
 * the text format's escapes) to exactly the bytes given.
 */
#define _GNU_SOURCE
#include <percpu/counter.h>
#include <percpu/family.h>
#include <percpu/metrics.h>
#include <percpu/metrics_registry.h>

#include "fuzz.h"
#include "shared/shared_internal.h" /* pcpu_shared_utf8(), as an oracle */

static bool label_name_ok(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' ||
		      (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

/*
 * In @text, the sample line that starts with @prefix ("metric{"): the value
 * of its label @name, unescaped into a malloc()ed string. Aborts on a
 * missing line or label, an unknown escape, a raw newline in the value.
 */
static char *label_value(const char *text, const char *prefix, const char *name)
{
	const char *p = text;
	size_t plen = strlen(prefix), nlen = strlen(name);
	char *out, *o;

	while (p && strncmp(p, prefix, plen) != 0) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	FUZZ_CHECK(p, "no sample line %s in:\n%s", prefix, text);
	p += plen;
	FUZZ_CHECK(strncmp(p, name, nlen) == 0 && p[nlen] == '=' && p[nlen + 1] == '"',
		   "label %s not first in %s", name, p);
	p += nlen + 2;
	o = out = malloc(strlen(p) + 1);
	FUZZ_CHECK(out, "malloc");
	for (; *p != '"'; p++) {
		FUZZ_CHECK(*p && *p != '\n', "a label value runs to the end of its line");
		if (*p != '\\') {
			*o++ = *p;
			continue;
		}
		p++;
		FUZZ_CHECK(*p == '\\' || *p == '"' || *p == 'n', "escape \\%c", *p);
		*o++ = *p == 'n' ? '\n' : *p;
	}
	*o = '\0';
	return out;
}

static char *exposition(enum pcpu_metrics_format f)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	FUZZ_CHECK(out, "open_memstream");
	FUZZ_CHECK(pcpu_metrics_write(out, f) == 0, "write %d", f);
	fclose(out);
	return text;
}

static void round_trip(const char *prefix, const char *name, const char *value)
{
	for (int f = 0; f < 2; f++) {
		char *text = exposition(f), *back = label_value(text, prefix, name);

		FUZZ_CHECK(strcmp(back, value) == 0, "format %d: \"%s\" came back as \"%s\"", f,
			   value, back);
		free(back);
		free(text);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 2), *name, *value;
	struct pcpu_counter c;
	struct pcpu_family *fam;
	struct pcpu_metrics_registry *reg;
	int err;

	FUZZ_CHECK(buf, "malloc");
	memcpy(buf, data, size);
	buf[size] = buf[size + 1] = '\0';
	name = buf;
	value = buf + strlen(buf) + 1;
	if (value > buf + size)
		value = buf + size; /* no NUL in the input: an empty value */

	FUZZ_CHECK(pcpu_counter_init(&c, 7) == 0, "init");
	err = pcpu_counter_register(&c, &(struct pcpu_metric_desc){
						.name = "fuzz_label",
						.kind = PCPU_METRIC_COUNTER,
						.labels = (const char *const[]){ name, value, NULL } });
	FUZZ_CHECK(err == 0 || err == -EINVAL || err == -ENOMEM, "register: %d", err);
	if (!err) {
		/*
		 * Not checked: that the value is UTF-8. pcpu_counter_register()
		 * does not promise it (metrics.h), and takes any bytes (found
		 * here: corpus/labels/bad-utf8), which the exposition then
		 * writes out although both formats are UTF-8.
		 */
		FUZZ_CHECK(label_name_ok(name), "label name \"%s\" accepted", name);
		round_trip("fuzz_label_total{", name, value);
	}
	pcpu_counter_destroy(&c);

	fam = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "fuzz_family", .kind = PCPU_METRIC_GAUGE,
		.label_names = (const char *const[]){ name, NULL } });
	FUZZ_CHECK(fam || errno == EINVAL || errno == ENOMEM, "family: errno %d", errno);
	if (fam) {
		struct pcpu_counter *child;

		FUZZ_CHECK(label_name_ok(name), "family label name \"%s\" accepted", name);
		child = pcpu_family_get(fam, (const char *const[]){ value, NULL });
		FUZZ_CHECK(child || errno == EINVAL || errno == ENOMEM, "get: errno %d", errno);
		if (child) {
			FUZZ_CHECK(pcpu_shared_utf8(value, strlen(value)),
				   "a child value not UTF-8 accepted");
			pcpu_counter_add(child, 3);
			round_trip("fuzz_family{", name, value);
			FUZZ_CHECK(pcpu_family_remove(fam, (const char *const[]){ value, NULL }) == 0,
				   "remove");
		}
		pcpu_family_destroy(fam);
	}
	/* the same as a registry's constant label, merged into the process's exposition */
	reg = pcpu_metrics_registry_create((const char *const[]){ name, value, NULL });
	FUZZ_CHECK(reg || errno == EINVAL || errno == ENOMEM, "registry: errno %d", errno);
	if (reg) {
		FUZZ_CHECK(label_name_ok(name) && strcmp(name, "le") != 0 &&
				   pcpu_shared_utf8(value, strlen(value)),
			   "registry label \"%s\" accepted", name);
		FUZZ_CHECK(pcpu_counter_init(&c, 5) == 0, "init");
		err = pcpu_counter_register(&c, &(struct pcpu_metric_desc){
							.name = "fuzz_registry",
							.kind = PCPU_METRIC_COUNTER,
							.registry = reg });
		FUZZ_CHECK(err == 0 || err == -ENOMEM, "register in a registry: %d", err);
		err = pcpu_metrics_collector_add(pcpu_metrics_registry_collector, reg);
		FUZZ_CHECK(err == 0 || err == -ENOMEM, "collector_add: %d", err);
		if (!err) {
			round_trip("fuzz_registry_total{", name, value);
			pcpu_metrics_collector_remove(pcpu_metrics_registry_collector, reg);
		}
		pcpu_counter_destroy(&c);
		FUZZ_CHECK(pcpu_metrics_registry_destroy(reg) == 0, "registry destroy");
	}
	free(buf);
	return 0;
}
