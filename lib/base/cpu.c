/* SPDX-License-Identifier: MIT */
/*
 * The CPU layer: CPU counts, the current CPU, the choice between the
 * restartable-sequence and atomic update paths, and the atomic path's adds
 * (see <percpu/cpu.h>). The rseq fence is in fence.c, the misuse abort in
 * misuse.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <percpu/cpu.h>

#include "cpu_internal.h"
#include "misuse.h"
#include "pair.h"
#include "rseq_area.h"
#include "slot_owner.h"

/*
 * Two things are set up once, separately: the CPU counts (whenever first
 * needed, even by the kernel drop-in's percpu_counter_batch) and the update
 * path (by the first initialiser only, so that the environment it reads is
 * the one the program set before making counters).
 */
unsigned int pcpu_nr_possible;
static unsigned int nr_online;
static pthread_once_t counts_once = PTHREAD_ONCE_INIT;
static enum pcpu_cpu_mode mode;
static pthread_once_t mode_once = PTHREAD_ONCE_INIT;
static unsigned int model_possible, model_online; /* pcpu_cpu_model(); 0: none */

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

/* Reads a small sysfs file into @buf without allocating; "" on failure. */
static void read_small_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

static unsigned int read_possible_cpus(void)
{
	char buf[4096];
	unsigned int n;
	long conf;

	read_small_file("/sys/devices/system/cpu/possible", buf, sizeof(buf));
	n = parse_cpu_list_end(buf);
	if (n)
		return n;
	conf = sysconf(_SC_NPROCESSORS_CONF); /* no sysfs: a container without it */
	return conf > 0 ? (unsigned int)conf : 1;
}

static enum pcpu_cpu_mode choose_mode(void)
{
	const char *force = getenv("PCPU_FORCE_FALLBACK");

	if (force && *force && strcmp(force, "0") != 0)
		return PCPU_CPU_ATOMIC;
	return pcpu_rseq_area_setup() != PCPU_RSEQ_NONE ? PCPU_CPU_RSEQ : PCPU_CPU_ATOMIC;
}

static void setup_counts(void)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int possible = read_possible_cpus();

	if (model_possible) {
		possible = model_possible;
		online = model_online;
	}
	nr_online = online > 0 ? (unsigned int)online : 1;
	if (nr_online > possible)
		nr_online = possible;
	__atomic_store_n(&pcpu_nr_possible, possible, __ATOMIC_RELEASE);
}

static void setup_mode(void)
{
	mode = choose_mode();
	if (mode == PCPU_CPU_ATOMIC)
		pcpu_slot_owner_setup();
}

PCPU_EXPORT enum pcpu_cpu_mode pcpu_cpu_setup(void)
{
	pthread_once(&counts_once, setup_counts);
	pthread_once(&mode_once, setup_mode);
	return mode;
}

/* sched_getcpu(), or -1 for a CPU number the arena has no stride for */
static int current_cpu(void)
{
	int cpu = sched_getcpu();

	if (cpu < 0 || (unsigned int)cpu >= cpu_possible())
		return -1;
	return cpu;
}

PCPU_EXPORT int pcpu_cpu_current(void)
{
	/* every slow path asks: a thread's first one registers its rseq area */
	pcpu_rseq_area_register();
	return current_cpu();
}

/*
 * The atomic path of pcpu_this_cpu_add_checked(): threads that believe they
 * run on one CPU may add at once, so the check and the add are one
 * compare-and-swap of the pair, as a remote fold's is.
 */
PCPU_EXPORT int __pcpu_cpu_add_pair_atomic(int64_t *cpu0, int64_t amount, uint64_t limit)
{
	int cpu = current_cpu(); /* no rseq area to register on this path */
	int64_t *pair, old[2];

	if (pcpu_unlikely(cpu < 0))
		return 0;
	pair = cpu_copy(cpu0, (unsigned int)cpu);
	pcpu_pair_load(pair, old);
	do {
		uint64_t value = (uint64_t)old[0] + (uint64_t)amount;

		if (value - (uint64_t)old[1] + limit > 2 * limit)
			return 0;
		if (pcpu_pair_cas(pair, old, (int64_t)value, old[1]))
			return 1;
	} while (1);
}

/*
 * What the inline adds of binaries built against 0.1's and 0.2's headers
 * call on the atomic path, for counters and charges alike. Where counters'
 * slots have owners (lib/slot_owner.c), a compare-and-swap of a CPU's pair
 * that changes its value could be overwritten by the slot's owner: it
 * declines, and their callers take their slow paths, which are whole.
 */
PCPU_EXPORT int __pcpu_cpu_add_checked_atomic(int64_t *cpu0, int64_t amount, uint64_t limit)
{
	return PCPU_SLOT_OWNERS ? 0 : __pcpu_cpu_add_pair_atomic(cpu0, amount, limit);
}

/*
 * The atomic path of pcpu_this_cpu_add32(): the word's low half is the
 * value, the high half a folded mark; the add lands only if the new pending
 * delta stays within +-@limit, in one compare-and-swap.
 */
PCPU_EXPORT uint64_t *__pcpu_cpu_add32_atomic(uint64_t *cpu0, int32_t amount, uint32_t limit)
{
	int cpu = current_cpu(); /* no rseq area to register on this path */
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
	pthread_once(&counts_once, setup_counts);
	return pcpu_nr_possible;
}

PCPU_EXPORT unsigned int pcpu_cpu_online(void)
{
	pthread_once(&counts_once, setup_counts);
	return nr_online;
}

#ifdef PCPU_TEST_HOOKS /* the suite's internal library only (lib/meson.build) */
int pcpu_cpu_model(unsigned int possible, unsigned int online)
{
	/* the inline adds index strides by the real CPU number, unchecked */
	if (online == 0 || online > possible || possible < read_possible_cpus())
		return -EINVAL;
	model_possible = possible;
	model_online = online;
	pthread_once(&counts_once, setup_counts);
	return pcpu_nr_possible == possible && nr_online == online ? 0 : -EBUSY;
}
#endif

/*
 * The inline adds leave the thread's rseq_cs pointing at their descriptor,
 * which lives in the object that inlined them. Once that object is
 * unloaded, the kernel would fault on the dangling pointer at the thread's
 * next preemption and kill it: an object's unload path disarms it first.
 */
PCPU_EXPORT void pcpu_cpu_disarm_rseq(void)
{
	pcpu_rseq_area_disarm();
}
