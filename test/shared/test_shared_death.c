/* SPDX-License-Identifier: MIT */
/*
 * A writer SIGKILLed at every instruction of a slow-path add (every tenth
 * under valgrind's PCPU_TEST_SMALL: each kill steps the writer from its
 * start, so the run is quadratic; PCPU_SHARED_DEATH_STRIDE sets it): taking
 * the robust lock, the unchecked add, the fold's swap, the central update,
 * the threshold and its maximum, the unlock. After each kill, before
 * anything repairs the segment, one test checks one promise:
 * - the exact value has the add or not (it is one instruction), the next
 *   sync repairs read() to exact and does not hang on the lock the dead
 *   writer may hold, and the segment goes on working;
 * - error_bound() covers what fast-path adds made after the death hold
 *   (beyond what the death itself left stale): the dead writer never
 *   leaves a threshold above the bound's maximum;
 * - the next fold by any writer, a slow-path add of another item, repairs
 *   the dead writer's item to within error_bound(), as the header says;
 * - the add is the writer's first to the segment, so it arms its row
 *   (count, bit, slot): a reader's open accepts the set a death leaves,
 *   sum() never sees the add outside it, and the next locker recounts it.
 * The writer is shared-peer (exec'd, its own address space), single-stepped
 * by ptrace from its stop before the add.
 *
 * On the atomic path (this test forces it before making the segment): a
 * restartable sequence restarts at every single step (the kernel sees a
 * preemption), so the rseq add cannot be stepped through; test_fold_races.c
 * shows how to, and the atomic path runs the same lock and fold. Skipped
 * under valgrind and qemu-user (no ptrace there).
 */
#include "shared_helpers.h"

TestSuite(shared_death, .timeout = 240);

/* The kernel's mark on a robust futex whose owner died (linux/futex.h). */
#define OWNER_DIED 0x40000000

/* What the peer adds to item 0: never fast, and a threshold of the cap after it. */
static const int64_t big = 2 * PCPU_SHARED_MAX_THRESH;

/* The segment's name in the sweep under way, for checks that open it again. */
static const char *sweep_name;

/* What one sweep saw, over its kills. */
struct sweep {
	long kills, in_lock, stale, threshold_moved;
};

/* A fresh named segment of two items with small floors: every kill starts from 0. */
static struct pcpu_shared *death_segment(const char *name)
{
	static const struct pcpu_stat_item items[] = { { .name = "bytes", .floor = 16 },
						       { .name = "other", .floor = 16 } };
	struct pcpu_shared_desc d = { .items = items, .nr_items = 2 };
	struct pcpu_shared *s;

	pcpu_shared_unlink(name);
	s = pcpu_shared_create(name, &d);
	cr_assert_not_null(s, "errno %d", errno);
	return s;
}

/*
 * Kills the peer at every stride-th instruction of its slow add of @big to
 * item 0 of a fresh segment; after each kill calls @check(segment, step,
 * exact value of item 0), then repairs with a sync, which must make read()
 * exact, and checks that the segment goes on working. Returns what it saw.
 */
static struct sweep sweep(const char *tag,
			  void (*check)(struct pcpu_shared *s, long k, int64_t exact))
{
	const char *env = getenv("PCPU_SHARED_DEATH_STRIDE");
	long stride = env ? atol(env) : 1;
	struct sweep sw = { 0 };
	char name[64];

	if (pcpu_test_on_valgrind() || getenv("PCPU_TEST_UNDER_QEMU"))
		cr_skip_test("no ptrace single-stepping here");
	setenv("PCPU_FORCE_FALLBACK", "1", 1); /* before the first pcpu_cpu_setup() */
	cr_assert_eq(pcpu_cpu_setup(), PCPU_CPU_ATOMIC, "the update path was chosen earlier");
	shared_test_name(name, sizeof(name), tag);
	sweep_name = name;
	if (stride < 1)
		stride = 1;
	if (pcpu_test_small())
		stride *= 10;
	for (long k = 0;; k += stride) {
		struct pcpu_shared *s = death_segment(name);
		struct shared_handle *h = shared_handle(s);
		uint64_t threshold = __atomic_load_n(&h->threshold[0], __ATOMIC_RELAXED);
		pid_t pid = shared_test_start_stopped("die", name);
		bool killed = shared_test_step(pid, k);
		int status;
		int64_t exact;

		cr_assert_eq(kill(pid, SIGKILL), 0);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		exact = pcpu_shared_sum(s, 0);
		cr_assert(exact == 0 || exact == big, "step %ld: sum %" PRId64, k, exact);
		sw.kills++;
		sw.in_lock += (__atomic_load_n(&h->hdr->lock.__data.__lock, __ATOMIC_RELAXED) &
			       OWNER_DIED) != 0;
		sw.stale += pcpu_shared_read(s, 0) != exact;
		sw.threshold_moved += __atomic_load_n(&h->threshold[0], __ATOMIC_RELAXED) != threshold;
		if (check)
			check(s, k, exact);
		/* the next fold takes the dead writer's lock if it held it, and repairs */
		exact = pcpu_shared_sum(s, 0);
		cr_assert_eq(pcpu_shared_sync_if_delta_above(s, 0, 0), exact, "step %ld", k);
		cr_assert_eq(pcpu_shared_read(s, 0), exact, "step %ld: read not repaired", k);
		/* and the segment still works: a slow add, a fold_all */
		pcpu_shared_add(s, 0, big);
		pcpu_shared_fold_all(s);
		cr_assert_eq(pcpu_shared_read(s, 0), exact + big, "step %ld", k);
		pcpu_shared_close(s);
		if (!killed)
			break;
		cr_assert_lt(k, 1000000, "the add never returned");
	}
	pcpu_shared_unlink(name);
	return sw;
}

PCPU_TEST(shared_death, killed_at_every_instruction_of_a_slow_add)
{
	struct sweep sw = sweep("death", NULL);

	cr_assert_gt(sw.in_lock, 0, "no kill landed while the lock was held");
	cr_assert_gt(sw.stale, 0, "no kill left read() stale: the test proves nothing");
	cr_log_info("%ld kills: %ld with the lock held, %ld left read() stale", sw.kills,
		    sw.in_lock, sw.stale);
}
/*
 * After a kill: fast-path adds of item 0 as large as its threshold now
 * allows, on each of (up to) two CPUs. What they hold must be within
 * error_bound(), beyond the staleness the death left (sum - read before).
 */
static void fast_adds_stay_within_the_bound(struct pcpu_shared *s, long k, int64_t exact)
{
	const struct shared_handle *h = shared_handle(s);
	int64_t left = exact - pcpu_shared_read(s, 0), now;
	int cpus[2], n = pcpu_test_allowed_cpus(cpus, 2);
	cpu_set_t all;

	cr_assert_eq(sched_getaffinity(0, sizeof(all), &all), 0);
	for (int c = 0; c < n; c++) {
		if (!pcpu_test_pin(cpus[c]))
			continue;
		pcpu_shared_add(s, 0, (int64_t)__atomic_load_n(&h->threshold[0], __ATOMIC_RELAXED));
	}
	cr_assert_eq(sched_setaffinity(0, sizeof(all), &all), 0);
	now = pcpu_shared_sum(s, 0) - pcpu_shared_read(s, 0);
	cr_assert_leq(pcpu_test_distance(now, 0),
		      pcpu_test_distance(left, 0) + pcpu_shared_error_bound(s, 0),
		      "step %ld: read() %" PRId64 " off after the adds, %" PRId64
		      " before them, bound %" PRIu64,
		      k, now, left, pcpu_shared_error_bound(s, 0));
}

PCPU_TEST(shared_death, a_writer_killed_publishing_a_threshold_leaves_a_true_bound)
{
	struct sweep sw = sweep("bound", fast_adds_stay_within_the_bound);

	cr_assert_gt(sw.threshold_moved, 0, "no kill came after the new threshold: proves nothing");
	cr_assert_lt(sw.threshold_moved, sw.kills, "every kill came after it: proves nothing");
}

/* After a kill: another writer's slow-path add of another item repairs item 0. */
static void next_fold_of_another_item_repairs(struct pcpu_shared *s, long k, int64_t exact)
{
	pcpu_shared_add(s, 1, big);
	cr_assert_leq(pcpu_test_distance(pcpu_shared_read(s, 0), exact),
		      pcpu_shared_error_bound(s, 0),
		      "step %ld: read() %" PRId64 ", exact %" PRId64 ", bound %" PRIu64, k,
		      pcpu_shared_read(s, 0), exact, pcpu_shared_error_bound(s, 0));
}

PCPU_TEST(shared_death, the_next_fold_by_any_writer_repairs_a_dead_writers_item)
{
	struct sweep sw = sweep("stale", next_fold_of_another_item_repairs);

	cr_assert_gt(sw.stale, 0, "no kill left read() stale: the test proves nothing");
}

/* What the arming sweep saw: kills between the count and the bit, the bit and the slot. */
static long counted_not_set, set_not_armed;

/*
 * After a kill in the writer's first add (its row's arming): the set a
 * reader opens is valid (the count covers the bits, within the rows), a
 * read-only open accepts it, and the next locker recounts the set exactly
 * [armed-segment].
 */
static void arming_leaves_a_readable_set(struct pcpu_shared *s, long k, int64_t exact)
{
	struct shared_handle *h = shared_handle(s);
	uint64_t count = __atomic_load_n(&h->armed->nr, __ATOMIC_SEQ_CST), set = 0;
	unsigned int row;
	struct pcpu_shared *r;

	shared_for_each_armed(h, row) {
		set++;
		if (__atomic_load_n(&shared_pair(h, 0, row)[1], __ATOMIC_SEQ_CST) == 0)
			set_not_armed++;
	}
	counted_not_set += count > set;
	cr_assert(count >= set && count <= h->rows, "step %ld: count %" PRIu64 ", %" PRIu64 " set",
		  k, count, set);
	cr_assert(exact == 0 || set >= 1, "step %ld: sum() saw the add outside the set", k);
	cr_assert_leq(set, 1, "step %ld: one writer armed %" PRIu64 " rows", k, set);
	/* a reader's open checks the set: it must accept what a death leaves */
	r = pcpu_shared_open(sweep_name, PCPU_SHARED_RDONLY);
	cr_assert_not_null(r, "step %ld: a reader refused it: errno %d", k, errno);
	cr_assert_eq(pcpu_shared_sum(r, 0), exact, "step %ld", k);
	pcpu_shared_close(r);
	/* the next locker (any fold) recovers: the count is the set's size again */
	pcpu_shared_fold_all(s);
	set = 0;
	shared_for_each_armed(h, row)
		set++;
	cr_assert_eq(__atomic_load_n(&h->armed->nr, __ATOMIC_SEQ_CST), set, "step %ld", k);
	cr_assert_eq(pcpu_shared_read(s, 0), exact, "step %ld: not repaired", k);
}

PCPU_TEST(shared_death, a_writer_killed_arming_its_row_leaves_a_set_readers_trust)
{
	sweep("arm", arming_leaves_a_readable_set);
	cr_assert_gt(counted_not_set, 0, "no kill between the count and the bit: proves nothing");
	cr_assert_gt(set_not_armed, 0, "no kill between the bit and the slot: proves nothing");
}
