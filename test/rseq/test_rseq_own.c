/* SPDX-License-Identifier: MIT */
/*
 * The library's own rseq registration (lib/base/rseq_area.c), where libc
 * registered none: meson runs this with GLIBC_TUNABLES=glibc.pthread.rseq=0.
 * A thread's first add registers it and the adds after it stay on its CPU's
 * slot (so read() does not move); threads that come and go, a fork()ed
 * child and a thread that someone else registered first all count exactly.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/counter.h>

#include "pcpu_test.h"
#include "base/rseq_area.h"

/* glibc's, weak: absent before 2.35 and on other libcs */
extern const unsigned int __rseq_size __attribute__((weak));

static struct pcpu_counter c;

static void setup(void)
{
	const char *force = getenv("PCPU_FORCE_FALLBACK");

	if (force && *force && strcmp(force, "0") != 0)
		cr_skip_test("the atomic path is forced (PCPU_FORCE_FALLBACK)");
	if (!pcpu_test_kernel_has_rseq())
		cr_skip_test("no rseq(2) here (valgrind or qemu-user)");
	if (&__rseq_size != NULL && __rseq_size > 0)
		cr_skip_test("libc registered rseq: run with GLIBC_TUNABLES=glibc.pthread.rseq=0");
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
}

static void teardown(void)
{
	pcpu_counter_destroy(&c);
}

TestSuite(rseq_own, .init = setup, .fini = teardown, .timeout = 60);

#if PCPU_ARCH_HAVE_RSEQ_ADD

/* The CPU number in the calling thread's area (the library's): -1 unregistered. */
static int32_t own_cpu_id(void)
{
	return __atomic_load_n((int32_t *)(void *)((char *)__builtin_thread_pointer() +
						   __pcpu_rseq_offset + PCPU_RSEQ_CPU_ID_OFFSET),
			       __ATOMIC_RELAXED);
}

/*
 * Pinned, the thread's first add takes the slow path (and registers), the
 * next ones stay pending on its CPU: read() stays where the first left it.
 * Returns 0, or the number of the check that failed.
 */
static int adds_stay_local_after_the_first(void)
{
	int64_t before;

	if (pcpu_test_try_pin_first() < 0)
		return 1;
	pcpu_counter_add(&c, 1);
	if (own_cpu_id() < 0)
		return 2;
	before = pcpu_counter_read(&c);
	for (int i = 0; i < 10; i++)
		pcpu_counter_add(&c, 1);
	if (pcpu_counter_read(&c) != before)
		return 3;
	return 0;
}

PCPU_TEST(rseq_own, the_library_registers_its_own_area_and_takes_the_rseq_path)
{
	cr_assert_eq(pcpu_cpu_setup(), PCPU_CPU_RSEQ);
	cr_assert_eq(pcpu_rseq_area_owner(), PCPU_RSEQ_OWN);
	cr_assert_eq(adds_stay_local_after_the_first(), 0);
	cr_assert_eq(pcpu_counter_sum(&c), 11);
}

struct worker {
	long adds;
	int failed;
};

static void *count(void *arg)
{
	struct worker *w = arg;

	/* the first add registers (other threads' adds may fold meanwhile) */
	pcpu_counter_add(&c, 1);
	if (own_cpu_id() < 0)
		w->failed = 1;
	for (long i = 0; i < w->adds; i++)
		pcpu_counter_add(&c, 3);
	return NULL;
}

/*
 * Threads that come and go, in waves (each wave's threads reuse the TLS of
 * the last): each registers on its first add and unregisters as it exits.
 */
PCPU_TEST(rseq_own, threads_that_come_and_go_register_and_count_exactly)
{
	const int waves = 20, per_wave = 4;
	const long adds = pcpu_test_iterations(20000);

	for (int wave = 0; wave < waves; wave++) {
		pthread_t t[4];
		struct worker w[4];

		for (int i = 0; i < per_wave; i++) {
			w[i] = (struct worker){ .adds = adds };
			cr_assert_eq(pthread_create(&t[i], NULL, count, &w[i]), 0);
		}
		for (int i = 0; i < per_wave; i++) {
			cr_assert_eq(pthread_join(t[i], NULL), 0);
			cr_assert_eq(w[i].failed, 0, "wave %d thread %d: check %d failed", wave, i,
				     w[i].failed);
		}
	}
	cr_assert_eq(pcpu_counter_sum(&c), (int64_t)waves * per_wave * (1 + 3 * adds));
}

static int child_counts(void *arg)
{
	(void)arg;
	/* the forking thread's registration and TLS came along */
	if (own_cpu_id() < 0)
		return 1;
	for (int i = 0; i < 1000; i++)
		pcpu_counter_add(&c, 1);
	return pcpu_counter_sum(&c) == 11 + 1000 ? 0 : 2;
}

PCPU_TEST(rseq_own, a_forked_child_keeps_the_registration_and_counts_exactly)
{
	cr_assert_eq(adds_stay_local_after_the_first(), 0);
	pcpu_test_assert_child_passed(pcpu_test_in_child(child_counts, NULL, 30), "child");
	cr_assert_eq(pcpu_counter_sum(&c), 11);
}

/* Another library's area, registered before the thread's first add. */
struct other_area {
	uint32_t cpu_id_start;
	int32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
	uint32_t pad[3];
} __attribute__((aligned(32)));

static void *count_beside_another_registrant(void *arg)
{
	static __thread struct other_area other = { .cpu_id = -1 };
	struct worker *w = arg;

	if (syscall(SYS_rseq, &other, (unsigned int)sizeof(other), 0, 0x53053053) != 0) {
		w->failed = 1;
		return NULL;
	}
	for (long i = 0; i < w->adds; i++)
		pcpu_counter_add(&c, 1);
	/* ours was refused (EBUSY): the kernel writes only the other's */
	if (own_cpu_id() >= 0 || other.cpu_id < 0)
		w->failed = 2;
	syscall(SYS_rseq, &other, (unsigned int)sizeof(other), 1, 0x53053053);
	return NULL;
}

PCPU_TEST(rseq_own, a_thread_someone_else_registered_counts_exactly_on_the_slow_path)
{
	struct worker w = { .adds = pcpu_test_iterations(100000) };
	pthread_t t;

	cr_assert_eq(pcpu_cpu_setup(), PCPU_CPU_RSEQ);
	cr_assert_eq(pthread_create(&t, NULL, count_beside_another_registrant, &w), 0);
	for (int i = 0; i < 1000; i++)
		pcpu_counter_add(&c, 1);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(w.failed, 0, "check %d failed", w.failed);
	cr_assert_eq(pcpu_counter_sum(&c), 1000 + w.adds);
}

#else

PCPU_TEST(rseq_own, no_rseq_sequence_on_this_architecture)
{
	cr_assert_eq(pcpu_cpu_setup(), PCPU_CPU_ATOMIC);
}

#endif
