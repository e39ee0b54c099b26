/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of <percpu/cpu.h>: CPU counts, the current CPU, the choice of
 * update path, and pcpu_this_cpu_add() on a private per-CPU buffer.
 *
 * This executable must not link the kernel drop-in (its constructor would
 * choose the update path before a test can set PCPU_FORCE_FALLBACK).
 */
#include "pcpu_test.h"

#include <stdio.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/cpu.h>

TestSuite(cpu, .timeout = 30);

/* Highest CPU in /sys/devices/system/cpu/possible, plus one; 0 if unknown. */
static unsigned int sysfs_possible(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	char buf[4096];
	unsigned int end = 0;
	char *p;

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return 0;
	}
	fclose(f);
	p = buf;
	while (*p && *p != '\n') {
		unsigned long lo = strtoul(p, &p, 10), hi = lo;

		if (*p == '-')
			hi = strtoul(p + 1, &p, 10);
		if (hi + 1 > end)
			end = (unsigned int)hi + 1;
		if (*p == ',')
			p++;
		else
			break;
	}
	return end;
}

PCPU_TEST(cpu, possible_covers_sysfs_and_configured_cpus)
{
	unsigned int possible = pcpu_cpu_possible();
	long conf = sysconf(_SC_NPROCESSORS_CONF);

	cr_assert_geq(possible, 1);
	cr_assert_geq(possible, sysfs_possible());
	if (conf > 0)
		cr_assert_geq(possible, (unsigned int)conf);
	cr_assert_eq(pcpu_cpu_possible(), possible, "possible must not change");
}

PCPU_TEST(cpu, online_is_between_one_and_possible)
{
	unsigned int online = pcpu_cpu_online();
	long onln = sysconf(_SC_NPROCESSORS_ONLN);

	cr_assert_geq(online, 1);
	cr_assert_leq(online, pcpu_cpu_possible());
	if (onln > 0 && (unsigned long)onln <= pcpu_cpu_possible())
		cr_assert_eq(online, (unsigned int)onln);
}

/*
 * The first call a program makes may well be pcpu_cpu_current(): it must
 * not depend on a counter having been initialised before.
 */
PCPU_TEST(cpu, current_works_before_any_other_call)
{
	int cpu = pcpu_test_pin_first();

	cr_assert_eq(pcpu_cpu_current(), cpu);
}

PCPU_TEST(cpu, current_is_the_cpu_the_thread_is_pinned_to)
{
	int cpus[64];
	int n = pcpu_test_allowed_cpus(cpus, 64);

	pcpu_cpu_setup();

	cr_assert_geq(n, 1);
	for (int i = 0; i < n; i++) {
		if (!pcpu_test_pin(cpus[i]))
			continue;
		cr_assert_eq(pcpu_cpu_current(), cpus[i]);
	}
}

PCPU_TEST(cpu, current_is_below_possible)
{
	pcpu_cpu_setup();
	for (int i = 0; i < 1000; i++) {
		int cpu = pcpu_cpu_current();

		cr_assert_geq(cpu, 0);
		cr_assert_lt((unsigned int)cpu, pcpu_cpu_possible());
	}
}

PCPU_TEST(cpu, setup_chooses_a_mode_once)
{
	enum pcpu_cpu_mode mode = pcpu_cpu_setup();

	cr_assert(mode == PCPU_CPU_RSEQ || mode == PCPU_CPU_ATOMIC, "mode %d", (int)mode);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(pcpu_cpu_setup(), mode);
	/* the environment is read only once */
	setenv("PCPU_FORCE_FALLBACK", mode == PCPU_CPU_RSEQ ? "1" : "0", 1);
	cr_assert_eq(pcpu_cpu_setup(), mode);
}

PCPU_TEST(cpu, force_fallback_selects_the_atomic_path)
{
	setenv("PCPU_FORCE_FALLBACK", "1", 1);
	cr_assert_eq(pcpu_cpu_setup(), PCPU_CPU_ATOMIC);
}

/*
 * The path is chosen by the first initialiser, not when the library loads
 * nor by the calls that only need CPU counts (the kernel drop-in's batch
 * among them): a program may set PCPU_FORCE_FALLBACK after those.
 */
PCPU_TEST(cpu, the_path_is_chosen_at_the_first_init_not_at_load)
{
	struct pcpu_counter c;

	cr_assert_geq(pcpu_counter_default_floor(), 32);
	cr_assert_gt(pcpu_cpu_possible(), 0);
	cr_assert_gt(pcpu_cpu_online(), 0);
	setenv("PCPU_FORCE_FALLBACK", "1", 1);
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(c.mode, PCPU_CPU_ATOMIC, "the counter took the path chosen before setenv()");
	cr_assert_eq(pcpu_cpu_setup(), PCPU_CPU_ATOMIC);
	pcpu_counter_destroy(&c);
}

PCPU_TEST(cpu, force_fallback_zero_or_empty_does_not_force)
{
	setenv("PCPU_FORCE_FALLBACK", "0", 1);
#if PCPU_ARCH_HAVE_RSEQ_ADD
	if (!pcpu_test_small()) /* valgrind has no rseq */
		cr_assert_eq(pcpu_cpu_setup(),
			     pcpu_test_kernel_has_rseq() ? PCPU_CPU_RSEQ : PCPU_CPU_ATOMIC);
#endif
	cr_assert_neq(pcpu_cpu_setup(), PCPU_CPU_UNSET);
}

/* A private per-CPU buffer laid out like the arena's: one stride per CPU. */
static int64_t *stride_buffer(void)
{
	void *p = NULL;

	cr_assert_eq(posix_memalign(&p, PCPU_STRIDE, (size_t)pcpu_cpu_possible() * PCPU_STRIDE),
		     0);
	memset(p, 0, (size_t)pcpu_cpu_possible() * PCPU_STRIDE);
	return p;
}

/* A limit the tests never reach: the mark (word 1 of each pair) stays 0. */
#define NO_LIMIT (UINT64_C(1) << 40)

static int64_t *copy_on(int64_t *cpu0, unsigned int cpu)
{
	return (int64_t *)(void *)((char *)cpu0 + (size_t)cpu * PCPU_STRIDE);
}

PCPU_TEST(cpu, this_cpu_add_adds_to_the_copy_of_the_current_cpu)
{
	int cpus[64];
	int n = pcpu_test_allowed_cpus(cpus, 64);
	int64_t *buf;

	pcpu_cpu_setup();
	buf = stride_buffer();
	for (int i = 0; i < n; i++) {
		int64_t *copy;

		if (!pcpu_test_pin(cpus[i]))
			continue;
		copy = copy_on(buf, (unsigned int)cpus[i]);
		cr_assert(pcpu_this_cpu_add_checked(buf, 10 + i, NO_LIMIT, pcpu_cpu_setup()));
		cr_assert_eq(*copy, 10 + i, "the add did not land on the copy of CPU %d", cpus[i]);
		cr_assert(pcpu_this_cpu_add_checked(buf, -3, NO_LIMIT, pcpu_cpu_setup()));
		cr_assert_eq(*copy, 7 + i);
	}
	/* nothing anywhere else */
	for (unsigned int cpu = 0; cpu < pcpu_cpu_possible(); cpu++) {
		bool touched = false;

		for (int i = 0; i < n; i++)
			touched |= cpus[i] == (int)cpu;
		if (!touched)
			cr_assert_eq(*copy_on(buf, cpu), 0);
	}
	free(buf);
}

PCPU_TEST(cpu, this_cpu_add_loses_nothing_across_cpus)
{
	int64_t *buf, total = 0;
	long n = pcpu_test_iterations(200000);

	pcpu_cpu_setup();
	buf = stride_buffer();
	for (long i = 0; i < n; i++) {
		cr_assert(pcpu_this_cpu_add_checked(buf, i % 7 - 3, NO_LIMIT, pcpu_cpu_setup()));
		if (i % 1000 == 0)
			sched_yield();
	}
	for (unsigned int cpu = 0; cpu < pcpu_cpu_possible(); cpu++)
		total += *copy_on(buf, cpu);
	for (long i = 0; i < n; i++)
		total -= i % 7 - 3;
	cr_assert_eq(total, 0);
	free(buf);
}
