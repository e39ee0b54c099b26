/* SPDX-License-Identifier: MIT */
/*
 * Deterministic races: a fold moves a CPU's pending delta into the central
 * value in two steps, (1) advance the slot's folded mark by compare-and-swap,
 * (2) add the same amount to the central count. These tests stop a folding
 * thread exactly between the two steps and run another call in that gap.
 *
 * How: the test forks a child; the child's main thread asks to be traced
 * and stops; the parent single-steps it through a full fold
 * (pcpu_counter_sync_if_delta_above(c, 0) or pcpu_registry_fold_all()),
 * peeking at the slot's folded mark and the counter's count after every
 * instruction. When the mark has moved and the count has not, the parent
 * lets a second thread of the child (not traced) make its call, waits for
 * it, then lets the folder finish. The child reports what it saw through a
 * shared page.
 *
 * Skipped under valgrind (its translated code cannot be single-stepped
 * meaningfully) and where ptrace is not allowed.
 */
#include "helpers.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/registry.h>

TestSuite(counter_races, .timeout = 60);

enum race_call {
	RACE_SUM,         /* control: sum in the gap */
	RACE_SET,         /* set(c, 0) in the gap */
	RACE_LIMITED_ADD, /* limited_add(c, 150, 100) in the gap */
	RACE_COMPARE,     /* compare(c, rhs) in the gap */
	RACE_SYNC,        /* sync_if_delta_above(c, 0) in the gap */
};

enum race_folder {
	FOLD_BY_SYNC,     /* pcpu_counter_sync_if_delta_above(c, 0) */
	FOLD_BY_REGISTRY, /* pcpu_registry_fold_all(), as the refresher does */
};

struct race_page {
	/* set by the child before it stops */
	uintptr_t folded_addr, count_addr;
	int64_t folded_before, count_before;
	int ready;
	/* parent -> racer thread */
	volatile int go;
	/* racer -> parent */
	volatile int done;
	int64_t racer_value; /* what the racer's call returned */
	/* child's results after the fold */
	int64_t read_after, sum_after;
	uint64_t bound_after;
	int child_ok;
};

static struct race_page *page;
static struct pcpu_counter c;
static enum race_call call;

static void *racer(void *arg)
{
	(void)arg;
	while (!page->go)
		usleep(50);
	switch (call) {
	case RACE_SUM:
		page->racer_value = pcpu_counter_sum(&c);
		break;
	case RACE_SET:
		pcpu_counter_set(&c, 0);
		page->racer_value = 0;
		break;
	case RACE_LIMITED_ADD:
		page->racer_value = pcpu_counter_limited_add(&c, 150, 100);
		break;
	case RACE_COMPARE:
		page->racer_value = pcpu_counter_compare(&c, 50);
		break;
	case RACE_SYNC:
		page->racer_value = pcpu_counter_sync_if_delta_above(&c, 0);
		break;
	}
	__atomic_store_n(&page->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static struct pcpu_slot *slot_of(unsigned int cpu)
{
	return (struct pcpu_slot *)(void *)((char *)c.slots + (size_t)cpu * PCPU_STRIDE);
}

/* The child: one pending delta of 100, a racer waiting, a traced fold. */
static void child_main(enum race_folder folder)
{
	struct pcpu_counter_options o = { .batch = INT64_C(1) << 30 };
	struct pcpu_slot *slot = NULL;
	pthread_t t;

	/*
	 * One pending delta of 100 (the batch is 2^30). A CPU's first add arms
	 * its slot in the slow path, and a thread moved to another CPU there
	 * sends the amount to the central value: add 0 first, and start again
	 * on a new counter if the 100 still went central.
	 */
	for (int tries = 0; !slot || pcpu_counter_read(&c) != 0; tries++) {
		if (tries == 100)
			_exit(11);
		if (tries)
			pcpu_counter_destroy(&c);
		if (pcpu_counter_init_opts(&c, 0, &o) != 0)
			_exit(10);
		pcpu_test_first_add(&c);
		pcpu_counter_add(&c, 100);
		slot = NULL;
		for (unsigned int cpu = 0; cpu < pcpu_cpu_possible(); cpu++)
			if (pcpu_test_slot_pending(slot_of(cpu)->value, slot_of(cpu)->mark) != 0)
				slot = slot_of(cpu);
	}
	page->folded_addr = (uintptr_t)&slot->mark;
	page->count_addr = (uintptr_t)&c.central;
	page->folded_before = slot->mark;
	page->count_before = c.central;
	if (pthread_create(&t, NULL, racer, NULL) != 0)
		_exit(12);
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
		_exit(13);
	page->ready = 1;
	raise(SIGSTOP);

	if (folder == FOLD_BY_SYNC)
		(void)pcpu_counter_sync_if_delta_above(&c, 0);
	else
		pcpu_registry_fold_all();

	page->go = 1; /* in case the gap was never seen */
	pthread_join(t, NULL);
	page->read_after = pcpu_counter_read(&c);
	page->sum_after = pcpu_counter_sum(&c);
	page->bound_after = pcpu_counter_error_bound(&c);
	page->child_ok = 1;
	_exit(0);
}

static long peek(pid_t pid, uintptr_t addr)
{
	errno = 0;
	return ptrace(PTRACE_PEEKDATA, pid, (void *)addr, NULL);
}

/* Runs @what in the gap of a fold by @folder; returns whether the gap was hit. */
static bool race(enum race_call what, enum race_folder folder)
{
	pid_t pid;
	int status;
	long steps = 0;
	bool gap = false;

	if (pcpu_test_small())
		cr_skip_test("valgrind: single-stepping its translated code means nothing");
	page = mmap(NULL, sizeof(*page), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		    0);
	cr_assert_neq(page, MAP_FAILED);
	memset(page, 0, sizeof(*page));
	call = what;
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		child_main(folder);

	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 13)
		cr_skip_test("ptrace is not allowed here");
	cr_assert(WIFSTOPPED(status) && page->ready, "child did not stop (status %#x)", status);
	for (;;) {
		long folded, count;

		cr_assert_eq(ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL), 0);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		if (!WIFSTOPPED(status))
			break;
		cr_assert_lt(++steps, 10000000, "the fold never moved the folded mark");
		folded = peek(pid, page->folded_addr);
		count = peek(pid, page->count_addr);
		if (errno)
			break;
		if (folded != page->folded_before) {
			/* step 1 done; step 2 not yet? */
			if (count == page->count_before) {
				gap = true;
				__atomic_store_n(&page->go, 1, __ATOMIC_SEQ_CST);
				while (!__atomic_load_n(&page->done, __ATOMIC_SEQ_CST))
					usleep(100);
			}
			cr_assert_eq(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
			cr_assert_eq(waitpid(pid, &status, 0), pid);
			break;
		}
	}
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0 && page->child_ok,
		  "child failed (status %#x)", status);
	return gap;
}

static void unmap_page(void)
{
	munmap(page, sizeof(*page));
}

/* Control: sum() reads only the slots' values and the base, never the gap. */
PCPU_TEST(counter_races, sum_in_the_gap_of_a_fold_is_exact)
{
	cr_assert(race(RACE_SUM, FOLD_BY_SYNC), "the gap was never reached");
	cr_assert_eq(page->racer_value, 100);
	cr_assert_eq(page->sum_after, 100);
	cr_assert_eq(page->read_after, 100);
	unmap_page();
}

/* Control: compare() goes precise (the bound is huge) and sees 100 > 50. */
PCPU_TEST(counter_races, compare_in_the_gap_of_a_fold_is_right)
{
	cr_assert(race(RACE_COMPARE, FOLD_BY_SYNC), "the gap was never reached");
	cr_assert_eq(page->racer_value, 1);
	unmap_page();
}

/*
 * The value is 100 (all of it pending), so limited_add(c, 150, 100) must
 * fail. In the gap the count is still 0 and the pending sum already 0: a
 * limited add that adds count and pending sees 0 and passes the limit.
 */
static void assert_limited_add_in_the_gap_fails(enum race_folder folder)
{
	cr_assert(race(RACE_LIMITED_ADD, folder), "the gap was never reached");
	cr_assert_eq(page->racer_value, 0, "limited_add(150, 100) succeeded at value 100");
	cr_assert_leq(page->sum_after, 150, "the value passed the limit: %" PRId64,
		      page->sum_after);
	unmap_page();
}

PCPU_TEST(counter_races, limited_add_in_the_gap_of_a_sync_never_passes_the_limit)
{
	assert_limited_add_in_the_gap_fails(FOLD_BY_SYNC);
}

PCPU_TEST(counter_races, limited_add_in_the_gap_of_a_registry_fold_never_passes_the_limit)
{
	assert_limited_add_in_the_gap_fails(FOLD_BY_REGISTRY);
}

/*
 * sync_if_delta_above(c, 0) promises a result within 0 of exact. Nothing
 * changes the value (100) here; only the refresher is folding. In the gap
 * the slot shows nothing pending and the count still lacks the 100, so a
 * sync that folds (nothing left) and returns the count returns 0.
 */
PCPU_TEST(counter_races, sync_in_the_gap_of_a_registry_fold_returns_the_exact_value)
{
	cr_assert(race(RACE_SYNC, FOLD_BY_REGISTRY), "the gap was never reached");
	cr_assert_eq(page->racer_value, 100, "sync_if_delta_above(c, 0) returned %" PRId64
		     " with the value at 100", page->racer_value);
	unmap_page();
}

/*
 * The caller keeps set() apart from its own calls, but the refresher (or
 * any pcpu_registry_fold_all()) may be folding the counter: after set(c, 0)
 * in the gap, the fold's step 2 adds the old pending delta to the new
 * count, and read stays off by it for good.
 */
PCPU_TEST(counter_races, set_in_the_gap_of_a_registry_fold_leaves_read_exact)
{
	cr_assert(race(RACE_SET, FOLD_BY_REGISTRY), "the gap was never reached");
	cr_assert_eq(page->sum_after, 0);
	cr_assert_leq(pcpu_test_distance(page->read_after, 0), page->bound_after,
		      "read %" PRId64 ", exact 0, bound %" PRIu64, page->read_after,
		      page->bound_after);
	cr_assert_eq(page->read_after, 0, "read %" PRId64 " after set(0) and a fold",
		     page->read_after);
	unmap_page();
}
