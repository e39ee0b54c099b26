/* SPDX-License-Identifier: MIT */
/*
 * The CPU layer: CPU counts, the current CPU, and the choice between the
 * restartable-sequence and atomic update paths (see <percpu/cpu.h>).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <percpu/cpu.h>

#include "cpu_internal.h"
#include "misuse.h"

PCPU_EXPORT int pcpu_cpu_mode_current = PCPU_CPU_UNSET;

unsigned int pcpu_nr_possible;
static unsigned int nr_online;
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

/* Highest CPU number in a sysfs CPU list such as "0-3,8-11", plus one. */
static unsigned int parse_cpu_list_end(const char *list)
{
	unsigned int end = 0;
	const char *p = list;

	while (*p) {
		char *next;
		unsigned long lo = strtoul(p, &next, 10), hi = lo;

		if (next == p)
			break;
		if (*next == '-')
			hi = strtoul(next + 1, &next, 10);
		if (hi + 1 > end)
			end = (unsigned int)hi + 1;
		p = *next == ',' ? next + 1 : next;
		if (*p == '\n')
			break;
	}
	return end;
}

static unsigned int read_possible_cpus(void)
{
	char buf[4096] = "";
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	unsigned int n = 0;

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			n = parse_cpu_list_end(buf);
		fclose(f);
	}
	if (conf > 0 && (unsigned long)conf > n)
		n = (unsigned int)conf;
	return n ? n : 1;
}

static enum pcpu_cpu_mode choose_mode(void)
{
	const char *force = getenv("PCPU_FORCE_FALLBACK");

	if (force && *force && strcmp(force, "0") != 0)
		return PCPU_CPU_ATOMIC;
#if PCPU_ARCH_HAVE_RSEQ_ADD
	if (__rseq_size > 0 && pcpu_arch_rseq_cpu_id() >= 0)
		return PCPU_CPU_RSEQ;
#endif
	return PCPU_CPU_ATOMIC;
}

static void setup(void)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int possible = read_possible_cpus();

	nr_online = online > 0 ? (unsigned int)online : 1;
	if (nr_online > possible)
		nr_online = possible;
	__atomic_store_n(&pcpu_nr_possible, possible, __ATOMIC_RELEASE);
	__atomic_store_n(&pcpu_cpu_mode_current, choose_mode(), __ATOMIC_RELEASE);
}

PCPU_EXPORT enum pcpu_cpu_mode pcpu_cpu_setup(void)
{
	pthread_once(&setup_once, setup);
	return (enum pcpu_cpu_mode)pcpu_cpu_mode_current;
}

PCPU_EXPORT int pcpu_cpu_current(void)
{
	int cpu = sched_getcpu();

	/* a CPU number the arena has no stride for must never be used */
	if (cpu < 0 || (unsigned int)cpu >= cpu_possible())
		return -1;
	return cpu;
}

PCPU_EXPORT int64_t *pcpu_cpu_add_atomic(int64_t *cpu0, int64_t amount)
{
	int cpu = pcpu_cpu_current();
	int64_t *copy;

	if (pcpu_unlikely(cpu < 0))
		return NULL;
	copy = cpu_copy(cpu0, (unsigned int)cpu);
	/* seq_cst: the threshold check that follows must see this add */
	__atomic_fetch_add(copy, amount, __ATOMIC_SEQ_CST);
	return copy;
}

/*
 * The atomic path of pcpu_this_cpu_add32(): the word's low half is the
 * value, the high half a folded mark; the add lands only if the new pending
 * delta stays within +-@limit, in one compare-and-swap.
 */
PCPU_EXPORT uint64_t *pcpu_cpu_add32_atomic(uint64_t *cpu0, int32_t amount, uint32_t limit)
{
	int cpu = pcpu_cpu_current();
	uint64_t *copy, old, word;

	if (pcpu_unlikely(cpu < 0))
		return NULL;
	copy = cpu_copy(cpu0, (unsigned int)cpu);
	old = __atomic_load_n(copy, __ATOMIC_RELAXED);
	do {
		uint32_t value = (uint32_t)old + (uint32_t)amount;

		if ((uint32_t)(value - (uint32_t)(old >> 32)) + limit > 2 * limit)
			return NULL;
		word = (old & ~(uint64_t)UINT32_MAX) | value;
	} while (!__atomic_compare_exchange_n(copy, &old, word, true, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	return copy;
}

PCPU_EXPORT unsigned int pcpu_cpu_possible(void)
{
	pcpu_cpu_setup();
	return pcpu_nr_possible;
}

PCPU_EXPORT unsigned int pcpu_cpu_online(void)
{
	pcpu_cpu_setup();
	return nr_online;
}

void pcpu_misuse_abort(const char *call, const char *what)
{
	fprintf(stderr, "percpu: %s: %s\n", call, what);
	abort();
}
