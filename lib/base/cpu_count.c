/* SPDX-License-Identifier: MIT */
/*
 * CPU counts (see <percpu/cpu.h>): possible and online CPUs, set up once,
 * whenever first needed (even by the kernel drop-in's percpu_counter_batch),
 * and the current CPU by sched_getcpu(). The floor of the CPU layer: it
 * calls nothing else of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <percpu/cpu.h>

#include "cpu_internal.h"

unsigned int pcpu_nr_possible;
static unsigned int nr_online;
static pthread_once_t counts_once = PTHREAD_ONCE_INIT;
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

PCPU_EXPORT unsigned int pcpu_cpu_possible(void)
{
	/* set once, never changed: after that one load, no pthread_once() */
	unsigned int n = __atomic_load_n(&pcpu_nr_possible, __ATOMIC_ACQUIRE);

	if (pcpu_likely(n))
		return n;
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

/* sched_getcpu(), or -1 for a CPU number the arena has no stride for */
int pcpu_sched_cpu(void)
{
	int cpu = sched_getcpu();

	if (cpu < 0 || (unsigned int)cpu >= pcpu_cpu_possible())
		return -1;
	return cpu;
}
