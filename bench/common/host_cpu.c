/* SPDX-License-Identifier: MIT */
/* The CPU a benchmark ran on (see host_cpu.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_cpu.h"

/*
 * The hosts the project's figures came from, and a few common server and
 * desktop parts beside them (the vendors' family/model numbers, decimal).
 */
static const struct {
	const char *vendor;
	int family, model;
	const char *uarch;
} uarchs[] = {
	{ "AuthenticAMD", 23, 1, "Zen" },
	{ "AuthenticAMD", 23, 8, "Zen+" },
	{ "AuthenticAMD", 23, 49, "Zen 2" },
	{ "AuthenticAMD", 23, 113, "Zen 2" },
	{ "AuthenticAMD", 25, 1, "Zen 3" },
	{ "AuthenticAMD", 25, 33, "Zen 3" },
	{ "AuthenticAMD", 25, 17, "Zen 4" },
	{ "AuthenticAMD", 25, 97, "Zen 4" },
	{ "AuthenticAMD", 25, 160, "Zen 4c" },
	{ "AuthenticAMD", 26, 2, "Zen 5" },
	{ "AuthenticAMD", 26, 17, "Zen 5c" },
	{ "GenuineIntel", 6, 63, "Haswell" },
	{ "GenuineIntel", 6, 79, "Broadwell" },
	{ "GenuineIntel", 6, 85, "Skylake-SP / Cascade Lake" },
	{ "GenuineIntel", 6, 106, "Ice Lake-SP" },
	{ "GenuineIntel", 6, 143, "Sapphire Rapids" },
	{ "GenuineIntel", 6, 158, "Coffee Lake" },
	{ "GenuineIntel", 6, 151, "Alder Lake" },
	{ "GenuineIntel", 6, 167, "Rocket Lake" },
	{ "GenuineIntel", 6, 183, "Raptor Lake" },
	{ "GenuineIntel", 6, 207, "Emerald Rapids" },
};

const char *host_cpu_uarch(const char *vendor, int family, int model)
{
	for (size_t i = 0; i < sizeof(uarchs) / sizeof(uarchs[0]); i++)
		if (uarchs[i].family == family && uarchs[i].model == model &&
		    strcmp(uarchs[i].vendor, vendor) == 0)
			return uarchs[i].uarch;
	return "unknown";
}

/* The value of "key : value" in @line if its key is @key, else NULL. */
static const char *field(char *line, const char *key)
{
	size_t len = strlen(key);
	char *v;

	if (strncmp(line, key, len) != 0 || (line[len] != '\t' && line[len] != ' ' &&
					     line[len] != ':'))
		return NULL;
	v = strchr(line, ':');
	if (!v)
		return NULL;
	v += 1 + (v[1] == ' ');
	v[strcspn(v, "\n")] = '\0';
	return v;
}

void host_cpu_read(struct host_cpu *cpu)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[512];

	snprintf(cpu->vendor, sizeof(cpu->vendor), "unknown");
	snprintf(cpu->model_name, sizeof(cpu->model_name), "unknown");
	cpu->family = cpu->model = -1;
	if (f) {
		/* the first CPU's block: up to its blank line */
		while (fgets(line, sizeof(line), f) && line[0] != '\n') {
			const char *v;

			if ((v = field(line, "vendor_id")))
				snprintf(cpu->vendor, sizeof(cpu->vendor), "%s", v);
			else if ((v = field(line, "cpu family")))
				cpu->family = atoi(v);
			else if ((v = field(line, "model name")))
				snprintf(cpu->model_name, sizeof(cpu->model_name), "%s", v);
			else if ((v = field(line, "model")))
				cpu->model = atoi(v);
		}
		fclose(f);
	}
	cpu->uarch = host_cpu_uarch(cpu->vendor, cpu->family, cpu->model);
}

void host_cpu_describe(char *buf, size_t size)
{
	struct host_cpu cpu;

	host_cpu_read(&cpu);
	snprintf(buf, size, "%s family %d model %d (%s), %s", cpu.vendor, cpu.family, cpu.model,
		 cpu.uarch, cpu.model_name);
}
