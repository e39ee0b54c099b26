/* SPDX-License-Identifier: MIT */
/*
 * The default floor at 1024 CPUs, through the library's CPU model (the
 * scale model's hook, lib/base/cpu_internal.h): this process's library believes
 * it has 1024 possible and 1024 online CPUs. The native default floor is
 * 32 whatever the CPU count, so a stat item and a shared-segment item at 0
 * report 1024 x 32, and a counter 32 per CPU that added to it (its armed
 * CPUs, not the possible ones), while the kernel drop-in keeps the
 * kernel's batch, max(32, 2 x online) = 2048. On a machine with at most 16
 * online CPUs the two rules agree, so only the model tells them apart.
 */
#include "pcpu_test.h" /* first: _GNU_SOURCE */

#include <percpu/counter.h>
#include <percpu/percpu_counter.h>
#include <percpu/shared.h>
#include <percpu/stat.h>

#include "base/cpu_internal.h"
#include "helpers.h"

#define MODEL_CPUS 1024u

static int model_err = 1;

/*
 * Priority 101 runs before every constructor without a priority in this
 * static link, so before the drop-in's sets percpu_counter_batch from the
 * online CPUs: the model is in force from the library's first look.
 */
__attribute__((constructor(101))) static void set_model(void)
{
	model_err = pcpu_cpu_model(MODEL_CPUS, MODEL_CPUS);
}

static void assert_model(void)
{
	cr_assert_eq(model_err, 0, "pcpu_cpu_model(1024, 1024): %d", model_err);
	cr_assert_eq(pcpu_cpu_possible(), MODEL_CPUS);
	cr_assert_eq(pcpu_cpu_online(), MODEL_CPUS);
}

/*
 * Adds 1 to @c from each of up to 4 CPUs this process may run on, pinned:
 * returns how many slots are now armed [armed]: one per CPU on the rseq
 * path; on the atomic path the thread's own slot, wherever it runs.
 */
static int adds; /* how many add_from_some_cpus() made */

static unsigned int add_from_some_cpus(struct pcpu_counter *c)
{
	int cpus[4];
	int n = pcpu_test_allowed_cpus(cpus, 4);

	cr_assert_eq(pcpu_counter_error_bound(c), 0, "a bound before any CPU added");
	for (int i = 0; i < n; i++) {
		cr_assert(pcpu_test_pin(cpus[i]));
		pcpu_counter_add(c, 1);
	}
	adds = n;
	if (c->mode == PCPU_CPU_RSEQ)
		cr_assert_eq(c->armed, (uint32_t)n, "%u CPUs armed after adds from %d", c->armed, n);
	cr_assert(c->armed >= 1 && c->armed <= (uint32_t)n, "%u slots armed by adds from %d CPUs",
		  c->armed, n);
	return c->armed;
}

PCPU_TEST(floor_at_scale, native_default_floor_is_32_at_1024_online_cpus)
{
	assert_model();
	cr_assert_eq(pcpu_counter_default_floor(), 32);
}

/* The container row: 1024 possible CPUs, a few that add; the kernel's own bound is batch x online. */
PCPU_TEST(floor_at_scale, native_counter_near_zero_is_bounded_by_the_cpus_that_added_times_32)
{
	struct pcpu_counter c;
	unsigned int n;

	assert_model();
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(c.threshold, 32);
	n = add_from_some_cpus(&c);
	cr_assert_eq(pcpu_counter_error_bound(&c), n * 32u);
	cr_assert_leq(pcpu_counter_error_bound(&c), 4u * 32u, "above the kernel's 32 x 4 online");
	pcpu_test_assert_exact(&c, adds);
	pcpu_counter_destroy(&c);
}

PCPU_TEST(floor_at_scale, explicit_floor_stays_as_given)
{
	unsigned int n;
	struct pcpu_counter c;
	struct pcpu_counter_options o = { .floor = 3000 };

	assert_model();
	cr_assert_eq(pcpu_counter_init_opts(&c, 0, &o), 0);
	n = add_from_some_cpus(&c);
	cr_assert_eq(pcpu_counter_error_bound(&c), n * 3000u);
	pcpu_counter_destroy(&c);
}

/* Above 64 x 1024 x 32 = 2 Mi the elastic threshold takes over, as before. */
PCPU_TEST(floor_at_scale, elastic_threshold_takes_over_above_2_mi)
{
	unsigned int n;
	struct pcpu_counter at, above;

	assert_model();
	cr_assert_eq(pcpu_counter_init(&at, 64 * 1024 * 32), 0);
	cr_assert_eq(pcpu_counter_init(&above, INT64_C(1) << 30), 0);
	cr_assert_eq(at.threshold, 32);
	cr_assert_eq(above.threshold, (INT64_C(1) << 30) / (64 * 1024));
	n = add_from_some_cpus(&above);
	cr_assert_eq(pcpu_counter_error_bound(&above), n * ((UINT64_C(1) << 30) / (64 * 1024)));
	pcpu_counter_destroy(&above);
	pcpu_counter_destroy(&at);
}

PCPU_TEST(floor_at_scale, stat_and_shared_items_near_zero_are_bounded_by_the_cpus_that_added_times_32)
{
	struct pcpu_stat_item items[] = { { .name = "dflt" }, { .name = "given", .floor = 100 } };
	struct pcpu_stat_desc d = { items, 2, 0 };
	struct pcpu_stat *s;
	struct pcpu_shared *sh;

	assert_model();
	s = pcpu_stat_create(&d);
	cr_assert_not_null(s);
	cr_assert_eq(pcpu_stat_error_bound(s, 0), 0, "a bound before any CPU added");
	pcpu_test_pin_first();
	pcpu_stat_add(s, 0, 1); /* one CPU: its words are armed */
	cr_assert_eq(pcpu_stat_error_bound(s, 0), 32u);
	cr_assert_eq(pcpu_stat_error_bound(s, 1), 100u);
	cr_assert_eq(pcpu_stat_sum(s, 0), 1);
	pcpu_stat_destroy(s);

	/* shared segments need a lock-free pair swap: refused on i386 and armhf */
	if (!PCPU_ARCH_HAVE_CAS_PAIR)
		return;
	sh = pcpu_shared_create(NULL, &(struct pcpu_shared_desc){ .items = items, .nr_items = 2 });
	cr_assert_not_null(sh, "pcpu_shared_create: %s", strerror(errno));
	/* the bound counts armed rows (none yet); the thresholds stay 32 and 100 at 1024 CPUs */
	cr_assert_eq(pcpu_shared_error_bound(sh, 0), 0);
	cr_assert_eq(sh->threshold[0], 32);
	cr_assert_eq(sh->threshold[1], 100);
	pcpu_shared_add(sh, 0, 1); /* arms this thread's row (pinned above: one) */
	cr_assert_eq(pcpu_shared_error_bound(sh, 0), 32u);
	cr_assert_eq(pcpu_shared_error_bound(sh, 1), 100u);
	pcpu_shared_close(sh);
}

/* The kernel's batch and bound: (batch - 1) x the CPUs that added, 2047 each. */
PCPU_TEST(floor_at_scale, kernel_drop_in_keeps_the_kernel_batch_of_2048)
{
	unsigned int n;
	struct percpu_counter fbc;

	assert_model();
	cr_assert_eq(percpu_counter_batch, 2 * (int)MODEL_CPUS);
	cr_assert_eq(percpu_counter_init(&fbc, 0, GFP_KERNEL), 0);
	n = add_from_some_cpus(&fbc.pcpu);
	cr_assert_eq(pcpu_counter_error_bound(&fbc.pcpu), n * 2047u);
	percpu_counter_destroy(&fbc);
}

/* An elastic drop-in counter has the native counter's threshold (its header says so). */
PCPU_TEST(floor_at_scale, elastic_drop_in_counter_has_the_native_floor)
{
	unsigned int n;
	struct percpu_counter fbc;

	assert_model();
	cr_assert_eq(percpu_counter_init_elastic(&fbc, 0, GFP_KERNEL), 0);
	n = add_from_some_cpus(&fbc.pcpu);
	cr_assert_eq(pcpu_counter_error_bound(&fbc.pcpu), n * 32u);
	percpu_counter_destroy(&fbc);
}
