/* SPDX-License-Identifier: MIT */
/*
 * What every Criterion test of the library shares: the signal that misuse
 * raises, PCPU_TEST (Test() with a leak check under valgrind after the
 * body), and scaling work down under valgrind. test/meson.build puts this
 * directory on the include path of every test and defines
 * PCPU_TEST_HAVE_VALGRIND_H when <valgrind/valgrind.h> and
 * <valgrind/memcheck.h> are installed.
 */
#ifndef PCPU_TEST_COMMON_H
#define PCPU_TEST_COMMON_H

#include <criterion/criterion.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#ifdef PCPU_TEST_HAVE_VALGRIND_H
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#endif

/*
 * Misuse of a call that cannot report an error: the library aborts when
 * built without NDEBUG (test/meson.build defines PCPU_TEST_MISUSE_ABORTS
 * then), and does nothing in release builds.
 */
#ifdef PCPU_TEST_MISUSE_ABORTS
#define PCPU_TEST_MISUSE_SIGNAL SIGABRT
#else
#define PCPU_TEST_MISUSE_SIGNAL 0
#endif

/*
 * Under valgrind, fails the test if memory was definitely lost. Criterion
 * runs each test in a child process and ignores how that child exits after
 * the test body returned (valgrind's --error-exitcode included), and with
 * --tap it hides the child's stderr: a leak found at exit would go
 * unnoticed. So every test checks for leaks at the end of its body.
 */
static inline void pcpu_test_assert_no_leaks(void)
{
#ifdef PCPU_TEST_HAVE_VALGRIND_H
	unsigned long leaked = 0, dubious = 0, reachable = 0, suppressed = 0;

	if (!RUNNING_ON_VALGRIND)
		return;
	VALGRIND_DO_LEAK_CHECK;
	VALGRIND_COUNT_LEAKS(leaked, dubious, reachable, suppressed);
	(void)dubious;
	(void)reachable;
	(void)suppressed;
	cr_assert_eq(leaked, 0, "valgrind: %lu bytes definitely lost", leaked);
#endif
}

/* Test(), with a leak check under valgrind after the body. */
#define PCPU_TEST(suite, name, ...)                                             \
	static void pcpu_test_body_##suite##_##name(void);                      \
	Test(suite, name, ##__VA_ARGS__)                                        \
	{                                                                       \
		pcpu_test_body_##suite##_##name();                              \
		pcpu_test_assert_no_leaks();                                    \
	}                                                                       \
	static void pcpu_test_body_##suite##_##name(void)

/* True when the test runs under valgrind. */
static inline bool pcpu_test_on_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

#ifdef PCPU_TEST_HAVE_VALGRIND_H
	if (RUNNING_ON_VALGRIND)
		return true;
#endif
	return preload && strstr(preload, "vgpreload");
}

/* True when the test runs under valgrind (or PCPU_TEST_SMALL is set). */
static inline bool pcpu_test_small(void)
{
	const char *small = getenv("PCPU_TEST_SMALL");

	if (small && *small && strcmp(small, "0") != 0)
		return true;
	return pcpu_test_on_valgrind();
}

/* @normal iterations, or a fiftieth of them (at least 1) when small. */
static inline long pcpu_test_iterations(long normal)
{
	if (pcpu_test_small()) {
		long n = normal / 50;

		return n > 0 ? n : 1;
	}
	return normal;
}

#endif /* PCPU_TEST_COMMON_H */
