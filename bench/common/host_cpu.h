/* SPDX-License-Identifier: MIT */
/*
 * The CPU a benchmark ran on, named in every output: a speed figure is
 * only comparable with another from the same microarchitecture (the add's
 * ratio to the bare rseq add moved from 0.94x on one AMD host to 0.60x on
 * the next). Read from /proc/cpuinfo: vendor, family, model, model name,
 * and the microarchitecture's name from a small table of family/model
 * pairs (host_cpu.c), "unknown" for the others.
 */
#ifndef PERCPU_BENCH_HOST_CPU_H
#define PERCPU_BENCH_HOST_CPU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct host_cpu {
	char vendor[32];     /* vendor_id, e.g. "AuthenticAMD"; "unknown" */
	char model_name[96]; /* "model name"; "unknown" */
	int family, model;   /* "cpu family", "model"; -1: not given */
	const char *uarch;   /* "Zen 4", "Rocket Lake", ...; "unknown" */
};

/* Fills @cpu from /proc/cpuinfo's first CPU; unknown fields say so. */
void host_cpu_read(struct host_cpu *cpu);

/* The microarchitecture of @vendor's @family/@model, or "unknown". */
const char *host_cpu_uarch(const char *vendor, int family, int model);

/*
 * One line for a header or a report: "GenuineIntel family 6 model 167
 * (Rocket Lake), Intel(R) Xeon(R) Processor".
 */
void host_cpu_describe(char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_BENCH_HOST_CPU_H */
