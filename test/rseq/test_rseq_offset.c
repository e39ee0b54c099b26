/* SPDX-License-Identifier: MIT */
/*
 * __pcpu_rseq_offset, which the headers declare const so that a caller's
 * loop of adds loads it once: it must hold its final value before any code
 * of the program runs (a compiler may hoist its load above the first
 * pcpu_counter_init()), never change, and point at the area the adds use,
 * glibc's or the library's own. meson runs this file twice: as is, and with
 * GLIBC_TUNABLES=glibc.pthread.rseq=0 (the library's own areas).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/counter.h>

#include "pcpu_test.h"
#include "base/rseq_area.h"

#if PCPU_ARCH_HAVE_RSEQ_ADD

/* glibc's, weak: absent before 2.35 and on other libcs */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

/* What the offset was before main(), as the program's first code saw it. */
static long offset_at_start;

/* The default priority: after the library's constructor, as any program's. */
__attribute__((constructor)) static void record_offset(void)
{
	offset_at_start = *(const volatile long *)&__pcpu_rseq_offset;
}

/* The offset now, loaded from memory whatever the compiler knows. */
static long offset_now(void)
{
	return *(const volatile long *)&__pcpu_rseq_offset;
}

static void setup(void)
{
	const char *force = getenv("PCPU_FORCE_FALLBACK");

	if (force && *force && strcmp(force, "0") != 0)
		cr_skip_test("the atomic path is forced (PCPU_FORCE_FALLBACK)");
	if (!pcpu_test_kernel_has_rseq())
		cr_skip_test("no rseq(2) here (valgrind or qemu-user)");
}

TestSuite(rseq_offset, .init = setup, .timeout = 60);

PCPU_TEST(rseq_offset, the_offset_is_set_before_main_and_never_changes)
{
	struct pcpu_counter c;

	cr_assert_neq(offset_at_start, 0, "the offset was not set before main()");
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	for (int i = 0; i < 1000; i++)
		pcpu_counter_add(&c, 1);
	cr_assert_eq(offset_now(), offset_at_start);
	cr_assert_eq(pcpu_counter_sum(&c), 1000);
	pcpu_counter_destroy(&c);
}

PCPU_TEST(rseq_offset, the_offset_points_at_the_area_the_adds_use)
{
	struct pcpu_counter c;
	const int32_t *cpu_id;
	int cpu = pcpu_test_pin_first();

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(pcpu_cpu_setup(), PCPU_CPU_RSEQ);
	if (pcpu_rseq_area_owner() == PCPU_RSEQ_LIBC)
		cr_assert_eq(offset_at_start, (long)__rseq_offset, "not glibc's area");
	else
		cr_assert(&__rseq_size == NULL || __rseq_size == 0,
			  "glibc registered, yet the library took its own areas");
	pcpu_counter_add(&c, 1); /* registers the library's own area, if it is that */
	cpu_id = (const int32_t *)(const void *)((const char *)__builtin_thread_pointer() +
						 offset_at_start + PCPU_RSEQ_CPU_ID_OFFSET);
	cr_assert_eq(__atomic_load_n(cpu_id, __ATOMIC_RELAXED), cpu,
		     "the area at the offset does not say the CPU this thread runs on");
	pcpu_counter_destroy(&c);
}

#else

Test(rseq_offset, no_rseq_sequences_on_this_architecture)
{
	cr_assert_eq(pcpu_rseq_area_setup(), PCPU_RSEQ_NONE);
}

#endif
