/* SPDX-License-Identifier: MIT */
/*
 * Bad input to <percpu/counter.h>: NULL, zero-filled (never initialised)
 * and destroyed counters, zero counts, and allocation failure (through the
 * arena's testing hook, which the static library exposes).
 *
 * Calls that return an errno must return -EINVAL. Calls that cannot report
 * an error abort in builds without NDEBUG (PCPU_TEST_MISUSE_ABORTS, set by
 * test/meson.build) and do nothing, returning 0 or false, in release builds:
 * each misuse test expects SIGABRT in the first case and checks that the
 * counter was left untouched in the second.
 */
#include "helpers.h"

#include <errno.h>

#include <percpu/counter.h>
#include <percpu/registry.h>

#include "arena/arena.h"

static struct pcpu_counter c;
static const struct pcpu_counter zero_counter;

TestSuite(counter_badinput, .timeout = 30);

/* ---- misuse of calls that cannot report an error ------------------------ */

static struct pcpu_counter *null_counter(void)
{
	return NULL;
}

static struct pcpu_counter *zero_filled_counter(void)
{
	memset(&c, 0, sizeof(c));
	return &c;
}

static struct pcpu_counter *destroyed_counter(void)
{
	cr_assert_eq(pcpu_counter_init(&c, 5), 0);
	pcpu_counter_add(&c, 3);
	pcpu_counter_destroy(&c);
	return &c;
}

/* Reached only in release builds: the call must have had no effect. */
static void assert_untouched(const struct pcpu_counter *p)
{
	if (!p)
		return;
	cr_assert_eq(memcmp(p, &zero_counter, sizeof(*p)), 0, "misuse wrote to the counter");
	cr_assert_not(pcpu_counter_initialized(p));
}

/*
 * MISUSE(call, statement): three tests, one per bad counter, each running
 * @statement with C bound to the bad counter.
 */
#define MISUSE_ONE(call, state, statement)                                        \
	Test(counter_badinput, call##_on_##state##_counter_is_reported,           \
	     .signal = PCPU_TEST_MISUSE_SIGNAL)                                   \
	{                                                                         \
		struct pcpu_counter *C = state##_counter();                       \
		size_t live = pcpu_registry_count();                              \
		statement;                                                        \
		assert_untouched(C);                                              \
		cr_assert_eq(pcpu_registry_count(), live);                        \
		pcpu_test_assert_no_leaks();                                      \
	}
#define MISUSE(call, statement)                                                   \
	MISUSE_ONE(call, null, statement)                                         \
	MISUSE_ONE(call, zero_filled, statement)                                  \
	MISUSE_ONE(call, destroyed, statement)

MISUSE(add, pcpu_counter_add(C, 1))
MISUSE(add_negative, pcpu_counter_add(C, -1000000))
MISUSE(add_batch, pcpu_counter_add_batch(C, 1, 10))
MISUSE(add_batch_huge_batch, pcpu_counter_add_batch(C, 1, INT64_MAX))
MISUSE(error_bound, cr_assert_eq(pcpu_counter_error_bound(C), 0))
MISUSE(sum, cr_assert_eq(pcpu_counter_sum(C), 0))
MISUSE(sync_if_delta_above, cr_assert_eq(pcpu_counter_sync_if_delta_above(C, 0), 0))
MISUSE(compare, cr_assert_eq(pcpu_counter_compare(C, 5), 0))
MISUSE(limited_add, cr_assert_not(pcpu_counter_limited_add(C, 10, 1)))
MISUSE(limited_add_negative, cr_assert_not(pcpu_counter_limited_add(C, -10, -1)))
MISUSE(set, pcpu_counter_set(C, 5))
MISUSE(fold_this_cpu, pcpu_counter_fold_this_cpu(C))

/* compare() on a bad counter, with stderr sent to the pipe @arg */
static int compare_on_null(void *arg)
{
	dup2(*(int *)arg, STDERR_FILENO);
	return pcpu_counter_compare(null_counter(), 5) == 0 ? 0 : 1;
}

/*
 * The message of an aborting build names the call that was misused, not
 * the sum() that compare() answers from; a release build returns 0.
 */
PCPU_TEST(counter_badinput, compare_misuse_names_compare)
{
	char msg[256] = "";
	int fds[2], status;
	ssize_t n;

	cr_assert_eq(pipe(fds), 0);
	status = pcpu_test_in_child(compare_on_null, &fds[1], 10);
	close(fds[1]);
	n = read(fds[0], msg, sizeof(msg) - 1);
	close(fds[0]);
	msg[n > 0 ? n : 0] = '\0';
	if (PCPU_TEST_MISUSE_SIGNAL) {
		cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
		cr_assert(strstr(msg, "pcpu_counter_compare:") != NULL, "the message: %s", msg);
	} else {
		pcpu_test_assert_child_passed(status, "compare(NULL) returned 0");
		cr_assert_eq(msg[0], '\0', "release builds print nothing: %s", msg);
	}
}

/* ---- bad input that is not misuse -------------------------------------- */

PCPU_TEST(counter_badinput, read_of_null_or_zero_filled_counter_returns_zero)
{
	cr_assert_eq(pcpu_counter_read(NULL), 0);
	cr_assert_eq(pcpu_counter_read(zero_filled_counter()), 0);
	cr_assert_eq(pcpu_counter_read(destroyed_counter()), 0);
}

PCPU_TEST(counter_badinput, initialized_is_false_for_null_zero_filled_and_destroyed)
{
	cr_assert_not(pcpu_counter_initialized(NULL));
	cr_assert_not(pcpu_counter_initialized(zero_filled_counter()));
	cr_assert_not(pcpu_counter_initialized(destroyed_counter()));
}

PCPU_TEST(counter_badinput, init_of_null_returns_einval)
{
	struct pcpu_counter_options o = { .batch = 10 };
	size_t live = pcpu_registry_count();

	cr_assert_eq(pcpu_counter_init(NULL, 0), -EINVAL);
	cr_assert_eq(pcpu_counter_init_opts(NULL, 0, NULL), -EINVAL);
	cr_assert_eq(pcpu_counter_init_opts(NULL, 0, &o), -EINVAL);
	cr_assert_eq(pcpu_counter_init_many(NULL, 0, 3), -EINVAL);
	cr_assert_eq(pcpu_registry_count(), live);
}

PCPU_TEST(counter_badinput, init_many_of_zero_counters_returns_einval_and_touches_nothing)
{
	struct pcpu_counter many[2];
	size_t live = pcpu_registry_count();

	memset(many, 0, sizeof(many));
	cr_assert_eq(pcpu_counter_init_many(many, 5, 0), -EINVAL);
	cr_assert_eq(memcmp(&many[0], &zero_counter, sizeof(zero_counter)), 0);
	cr_assert_eq(pcpu_registry_count(), live);
}

PCPU_TEST(counter_badinput, destroy_of_null_does_nothing)
{
	size_t live = pcpu_registry_count();

	pcpu_counter_destroy(NULL);
	pcpu_counter_destroy_many(NULL, 0);
	pcpu_counter_destroy_many(NULL, 5);
	pcpu_counter_destroy_many(NULL, UINT32_MAX);
	cr_assert_eq(pcpu_registry_count(), live);
}

PCPU_TEST(counter_badinput, destroy_many_of_zero_counters_does_nothing)
{
	cr_assert_eq(pcpu_counter_init(&c, 8), 0);
	pcpu_counter_destroy_many(&c, 0);
	cr_assert(pcpu_counter_initialized(&c));
	cr_assert_eq(pcpu_counter_sum(&c), 8);
	pcpu_counter_destroy(&c);
}

PCPU_TEST(counter_badinput, double_destroy_does_nothing)
{
	size_t live = pcpu_registry_count();

	cr_assert_eq(pcpu_counter_init(&c, 8), 0);
	pcpu_counter_destroy(&c);
	pcpu_counter_destroy(&c);
	pcpu_counter_destroy_many(&c, 1);
	cr_assert_eq(memcmp(&c, &zero_counter, sizeof(c)), 0);
	cr_assert_eq(pcpu_registry_count(), live);
}

/* ---- allocation failure ------------------------------------------------- */

PCPU_TEST(counter_badinput, init_returns_enomem_and_leaves_the_counter_uninitialised)
{
	size_t live = pcpu_registry_count();

	memset(&c, 0xa5, sizeof(c)); /* garbage: init must not trust it */
	pcpu_arena_fail_after(0);
	cr_assert_eq(pcpu_counter_init(&c, 5), -ENOMEM);
	cr_assert_not(pcpu_counter_initialized(&c));
	cr_assert_eq(pcpu_registry_count(), live);
	pcpu_counter_destroy(&c); /* a no-op, as documented */
	cr_assert_eq(pcpu_registry_count(), live);
	pcpu_arena_fail_after(-1);
}

PCPU_TEST(counter_badinput, init_opts_returns_enomem_and_leaves_the_counter_uninitialised)
{
	struct pcpu_counter_options o = { .batch = 10 };
	size_t live = pcpu_registry_count();

	pcpu_arena_fail_after(0);
	cr_assert_eq(pcpu_counter_init_opts(&c, 5, &o), -ENOMEM);
	cr_assert_eq(pcpu_counter_init_opts(&c, 5, NULL), -ENOMEM);
	cr_assert_not(pcpu_counter_initialized(&c));
	cr_assert_eq(pcpu_registry_count(), live);
	pcpu_arena_fail_after(-1);
}

PCPU_TEST(counter_badinput, option_errors_win_over_allocation_failure)
{
	struct pcpu_counter_options o = { .batch = -1 };

	pcpu_arena_fail_after(0);
	cr_assert_eq(pcpu_counter_init_opts(&c, 5, &o), -EINVAL);
	pcpu_arena_fail_after(-1);
}

PCPU_TEST(counter_badinput, init_succeeds_again_once_allocations_succeed)
{
	pcpu_arena_fail_after(0);
	cr_assert_eq(pcpu_counter_init(&c, 5), -ENOMEM);
	pcpu_arena_fail_after(-1);
	cr_assert_eq(pcpu_counter_init(&c, 5), 0);
	pcpu_counter_add(&c, 1);
	pcpu_test_assert_exact(&c, 6);
	pcpu_counter_destroy(&c);
}

PCPU_TEST(counter_badinput, fail_after_lets_that_many_allocations_succeed)
{
	struct pcpu_counter a, b, d;

	pcpu_arena_fail_after(2);
	cr_assert_eq(pcpu_counter_init(&a, 1), 0);
	cr_assert_eq(pcpu_counter_init(&b, 2), 0);
	cr_assert_eq(pcpu_counter_init(&d, 3), -ENOMEM);
	pcpu_arena_fail_after(-1);
	cr_assert_eq(pcpu_counter_sum(&a) + pcpu_counter_sum(&b), 3);
	pcpu_counter_destroy(&a);
	pcpu_counter_destroy(&b);
}

PCPU_TEST(counter_badinput, init_many_is_all_or_none_when_an_allocation_fails)
{
	enum { N = 6 };
	struct pcpu_counter many[N];
	size_t live = pcpu_registry_count();

	for (long ok = 0; ok < N; ok++) {
		memset(many, 0, sizeof(many));
		pcpu_arena_fail_after(ok);
		cr_assert_eq(pcpu_counter_init_many(many, 7, N), -ENOMEM,
			     "failure after %ld allocations not reported", ok);
		pcpu_arena_fail_after(-1);
		for (int i = 0; i < N; i++)
			cr_assert_not(pcpu_counter_initialized(&many[i]),
				      "counter %d of %d initialised after failure at %ld", i, N,
				      ok);
		cr_assert_eq(pcpu_registry_count(), live);
		pcpu_counter_destroy_many(many, N); /* no-op */
		cr_assert_eq(pcpu_registry_count(), live);
	}
	cr_assert_eq(pcpu_counter_init_many(many, 7, N), 0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(pcpu_counter_sum(&many[i]), 7);
	pcpu_counter_destroy_many(many, N);
}

PCPU_TEST(counter_badinput, init_many_failure_gives_back_the_slots_it_took)
{
	struct pcpu_counter many[4];
	size_t live = pcpu_arena_debug_live_units();

	pcpu_arena_fail_after(3);
	cr_assert_eq(pcpu_counter_init_many(many, 0, 4), -ENOMEM);
	pcpu_arena_fail_after(-1);
	cr_assert_eq(pcpu_arena_debug_live_units(), live,
		     "the slots taken before the failure were not freed");
}

PCPU_TEST(counter_badinput, live_counters_keep_working_while_allocations_fail)
{
	struct pcpu_counter d;

	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	pcpu_arena_fail_after(0);
	cr_assert_eq(pcpu_counter_init(&d, 0), -ENOMEM);
	for (int i = 0; i < 1000; i++)
		pcpu_counter_add(&c, i);
	cr_assert(pcpu_counter_limited_add(&c, INT64_MAX, 1));
	pcpu_counter_set(&c, pcpu_counter_sum(&c));
	pcpu_test_assert_exact(&c, 499501);
	pcpu_arena_fail_after(-1);
	pcpu_counter_destroy(&c);
}

/* ---- absurd sizes to the arena ------------------------------------------ */

PCPU_TEST(counter_badinput, arena_rejects_absurd_sizes_with_einval)
{
	static const size_t sizes[] = { 0, PCPU_STRIDE + 1, SIZE_MAX / 2, SIZE_MAX };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		errno = 0;
		cr_assert_null(pcpu_arena_alloc(sizes[i]), "size %zu accepted", sizes[i]);
		cr_assert_eq(errno, EINVAL, "size %zu: errno %d", sizes[i], errno);
	}
}

PCPU_TEST(counter_badinput, arena_reports_enomem_when_told_to_fail)
{
	pcpu_arena_fail_after(0);
	errno = 0;
	cr_assert_null(pcpu_arena_alloc(16));
	cr_assert_eq(errno, ENOMEM);
	pcpu_arena_fail_after(-1);
}

PCPU_TEST(counter_badinput, arena_gives_a_zeroed_whole_stride_and_takes_it_back)
{
	unsigned int cpus = pcpu_cpu_possible();
	unsigned char *p = pcpu_arena_alloc(PCPU_STRIDE);

	cr_assert_not_null(p);
	for (unsigned int cpu = 0; cpu < cpus; cpu++)
		for (size_t i = 0; i < PCPU_STRIDE; i += 511)
			cr_assert_eq(p[(size_t)cpu * PCPU_STRIDE + i], 0);
	memset(p, 0xff, PCPU_STRIDE);
	pcpu_arena_free(p, PCPU_STRIDE);
	pcpu_arena_free(NULL, 16); /* no-op */
	p = pcpu_arena_alloc(PCPU_STRIDE);
	cr_assert_not_null(p);
	cr_assert_eq(p[0], 0, "a reused stride must be zeroed again");
	pcpu_arena_free(p, PCPU_STRIDE);
}
