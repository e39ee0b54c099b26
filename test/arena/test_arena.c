/* SPDX-License-Identifier: MIT */
/*
 * The per-CPU arena (lib/arena/arena.h, private: the static library exposes it).
 * Oracles: fill patterns per object and CPU, the arena's chunk count,
 * mincore(2) for what is mapped and /proc/self/pagemap for which pages were
 * ever written. Criterion runs every test in a fresh process, so each test
 * starts with an empty arena.
 */
#include "pcpu_test.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/cpu.h>

#include "arena/arena.h"
#include "registry/registry.h"

struct obj {
	unsigned char *p;
	size_t size;
	unsigned char tag;
};

static unsigned char pattern(unsigned char tag, unsigned int cpu)
{
	return (unsigned char)(tag * 31u + cpu * 7u + 1u) | 1u; /* never 0 */
}

static unsigned char *copy_of(unsigned char *cpu0, unsigned int cpu)
{
	return cpu0 + (size_t)cpu * PCPU_STRIDE;
}

static void fill(const struct obj *o)
{
	for (unsigned int cpu = 0; cpu < pcpu_cpu_possible(); cpu++)
		memset(copy_of(o->p, cpu), pattern(o->tag, cpu), o->size);
}

static void assert_filled(const struct obj *o)
{
	for (unsigned int cpu = 0; cpu < pcpu_cpu_possible(); cpu++) {
		const unsigned char *c = copy_of(o->p, cpu);

		for (size_t i = 0; i < o->size; i++)
			cr_assert_eq(c[i], pattern(o->tag, cpu),
				     "object %p (%zu bytes), CPU %u, byte %zu overwritten", (void *)o->p,
				     o->size, cpu, i);
	}
}

static void assert_zero(const struct obj *o)
{
	for (unsigned int cpu = 0; cpu < pcpu_cpu_possible(); cpu++) {
		const unsigned char *c = copy_of(o->p, cpu);

		for (size_t i = 0; i < o->size; i++)
			cr_assert_eq(c[i], 0, "new object of %zu bytes: CPU %u byte %zu is %#x",
				     o->size, cpu, i, c[i]);
	}
}

static void assert_in_one_stride(const struct obj *o)
{
	uintptr_t off = (uintptr_t)o->p & (PCPU_STRIDE - 1);

	cr_assert_eq((uintptr_t)o->p % PCPU_ARENA_UNIT, 0, "%p is not unit-aligned", (void *)o->p);
	cr_assert_leq(off + o->size, PCPU_STRIDE, "%zu bytes at stride offset %zu cross a stride",
		      o->size, (size_t)off);
}

static struct obj new_obj(size_t size, unsigned char tag)
{
	struct obj o = { pcpu_arena_alloc(size), size, tag };

	cr_assert_not_null(o.p, "alloc(%zu): %s", size, strerror(errno));
	assert_in_one_stride(&o);
	assert_zero(&o);
	return o;
}

/* Whether [p, p + PCPU_STRIDE) is mapped (mincore fails with ENOMEM if not). */
static bool mapped(const void *p)
{
	unsigned char vec;

	return mincore((void *)p, PCPU_STRIDE, &vec) == 0;
}

static const size_t sizes[] = { 1, 8, 15, 16, 17, 24, 48, 100, 128, 250, 512, 1000, 2048, 4095, 4096 };
#define NR_SIZES (sizeof(sizes) / sizeof(sizes[0]))

/* ---- zeroing ------------------------------------------------------------- */

PCPU_TEST(arena, freed_memory_comes_back_zeroed_on_every_cpu)
{
	enum { N = 300 };
	static struct obj objs[N];

	for (int round = 0; round < 3; round++) {
		/* new objects come back zero (new_obj checks), whatever was there */
		for (int i = 0; i < N; i++) {
			objs[i] = new_obj(sizes[(size_t)(i + round) % NR_SIZES], (unsigned char)i);
			fill(&objs[i]);
		}
		for (int i = 0; i < N; i++) {
			assert_filled(&objs[i]);
			pcpu_arena_free(objs[i].p, objs[i].size);
		}
	}
	cr_assert_eq(pcpu_arena_debug_chunks(), 0);
}

PCPU_TEST(arena, bytes_written_past_the_size_within_the_last_unit_are_zeroed_too)
{
	unsigned char *p = pcpu_arena_alloc(1), *q;

	cr_assert_not_null(p);
	memset(p, 0x5a, PCPU_ARENA_UNIT); /* the whole unit, not just the byte */
	pcpu_arena_free(p, 1);
	q = pcpu_arena_alloc(PCPU_ARENA_UNIT);
	cr_assert_not_null(q);
	for (int i = 0; i < PCPU_ARENA_UNIT; i++)
		cr_assert_eq(q[i], 0);
	pcpu_arena_free(q, PCPU_ARENA_UNIT);
}

/* ---- pages of CPUs that never run ----------------------------------------- */

#define PM_PRESENT (UINT64_C(1) << 63)
#define PM_EXCLUSIVE (UINT64_C(1) << 56) /* a private page of ours: written */

/*
 * Whether the page at @p was ever written, from /proc/self/pagemap: a
 * page that was only read maps the shared zero page (present, not
 * exclusive); one never touched is not present. -1: cannot tell.
 */
static int page_written(int pagemap, const void *p)
{
	uint64_t entry;
	off_t at = (off_t)((uintptr_t)p / (uintptr_t)sysconf(_SC_PAGESIZE) * sizeof(entry));

	if (pread(pagemap, &entry, sizeof(entry), at) != (ssize_t)sizeof(entry))
		return -1;
	return (entry & PM_PRESENT) && (entry & PM_EXCLUSIVE);
}

PCPU_TEST(arena, pages_of_strides_that_no_thread_wrote_stay_unwritten)
{
	enum { N = 200, ROUNDS = 5 };
	static struct obj objs[N];
	unsigned int cpus = pcpu_cpu_possible();
	int pagemap;
	struct obj holder;

	if (cpus < 2)
		cr_skip_test("one possible CPU: no stride that no thread writes");
	if (sysconf(_SC_PAGESIZE) != (long)PCPU_STRIDE)
		cr_skip_test("pages are not strides here");
	pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (pagemap < 0)
		cr_skip_test("no /proc/self/pagemap");
	/* keeps the first chunk mapped from start to end */
	holder = new_obj(16, 0);
	memset(holder.p, 1, holder.size);
	if (page_written(pagemap, holder.p) != 1) {
		close(pagemap);
		cr_skip_test("pagemap does not show written pages here");
	}
	for (int round = 0; round < ROUNDS; round++) {
		/* CPU 0's copies only: this thread plays a CPU 0 that runs */
		for (int i = 0; i < N; i++) {
			objs[i] = new_obj(sizes[(size_t)(i * 7 + round) % NR_SIZES], (unsigned char)i);
			memset(objs[i].p, 0xee, objs[i].size);
		}
		for (int i = 0; i < N; i++)
			for (unsigned int cpu = 1; cpu < cpus; cpu++)
				cr_assert_eq(page_written(pagemap, copy_of(objs[i].p, cpu)), 0,
					     "round %d: CPU %u's page of an object was written", round,
					     cpu);
		for (int i = 0; i < N; i++)
			pcpu_arena_free(objs[i].p, objs[i].size);
	}
	for (unsigned int cpu = 1; cpu < cpus; cpu++)
		cr_assert_eq(page_written(pagemap, copy_of(holder.p, cpu)), 0,
			     "CPU %u's page of the first chunk was written", cpu);
	close(pagemap);
	pcpu_arena_free(holder.p, holder.size);
}

/* ---- chunks back to the OS ----------------------------------------------- */

PCPU_TEST(arena, every_chunk_is_unmapped_when_all_objects_are_freed)
{
	long n = 4 * (PCPU_STRIDE / 16) + 3; /* five chunks of 16-byte objects */
	struct obj *objs = calloc((size_t)n, sizeof(*objs));

	cr_assert_not_null(objs);
	for (long i = 0; i < n; i++)
		objs[i] = new_obj(16, (unsigned char)i);
	cr_assert_eq(pcpu_arena_debug_chunks(), 5);
	for (long i = 0; i < n; i++)
		pcpu_arena_free(objs[i].p, objs[i].size);
	cr_assert_eq(pcpu_arena_debug_chunks(), 0);
	for (long i = 0; i < n; i++)
		cr_assert_not(mapped(objs[i].p), "the chunk of object %ld is still mapped", i);
	free(objs);
}

PCPU_TEST(arena, one_empty_chunk_stays_as_a_spare_only_while_others_hold_objects)
{
	struct obj a = new_obj(PCPU_STRIDE, 1), b = new_obj(PCPU_STRIDE, 2),
		   c = new_obj(PCPU_STRIDE, 3);

	cr_assert_eq(pcpu_arena_debug_chunks(), 3, "a whole stride is a chunk of its own");
	pcpu_arena_free(b.p, b.size);
	cr_assert_eq(pcpu_arena_debug_chunks(), 3, "the first empty chunk is the spare");
	cr_assert(mapped(b.p));
	pcpu_arena_free(c.p, c.size);
	cr_assert_eq(pcpu_arena_debug_chunks(), 2, "a second empty chunk is unmapped");
	cr_assert_not(mapped(c.p));
	c = new_obj(PCPU_STRIDE, 3); /* takes the spare */
	cr_assert_eq(pcpu_arena_debug_chunks(), 2);
	pcpu_arena_free(c.p, c.size);
	pcpu_arena_free(a.p, a.size);
	cr_assert_eq(pcpu_arena_debug_chunks(), 0, "the spare goes with the last object");
}

/* ---- allocation failure ------------------------------------------------------ */

PCPU_TEST(arena, a_failed_mmap_or_malloc_inside_alloc_leaves_the_arena_as_it_was)
{
	enum { N = 40 };
	static struct obj objs[N];
	int failures = 0, survived = 0;

	for (int i = 0; i < N; i++) {
		/* a whole stride needs a new chunk each time: table, record, mapping */
		for (long k = 0;; k++) {
			unsigned int before = pcpu_arena_debug_chunks();
			void *p;

			pcpu_arena_fail_resource_after(k);
			errno = 0;
			p = pcpu_arena_alloc(PCPU_STRIDE);
			pcpu_arena_fail_resource_after(-1);
			if (p) {
				objs[i] = (struct obj){ p, PCPU_STRIDE, (unsigned char)i };
				assert_zero(&objs[i]);
				fill(&objs[i]);
				cr_assert_eq(pcpu_arena_debug_chunks(), before + 1);
				survived += k == 0;
				break;
			}
			failures++;
			cr_assert_eq(errno, ENOMEM, "object %d, failure %ld: errno %d", i, k, errno);
			cr_assert_eq(pcpu_arena_debug_chunks(), before, "a failed alloc left a chunk");
			cr_assert_lt(k, 10, "alloc keeps failing after the failure point");
		}
		for (int j = 0; j <= i; j++)
			assert_filled(&objs[j]);
	}
	cr_assert_gt(failures, 0, "no failure injected");
	/* a chunk needs a record and a mapping: success at k = 0 survived a failure */
	cr_assert_gt(survived, 0, "no failure was survived (a table that never grows?)");
	for (int i = 0; i < N; i++)
		pcpu_arena_free(objs[i].p, objs[i].size);
	cr_assert_eq(pcpu_arena_debug_chunks(), 0);
}

PCPU_TEST(arena, fail_after_fails_with_enomem_and_the_arena_recovers)
{
	struct obj a, b;

	pcpu_arena_fail_after(1);
	a = new_obj(32, 1);
	errno = 0;
	cr_assert_null(pcpu_arena_alloc(32));
	cr_assert_eq(errno, ENOMEM);
	cr_assert_eq(pcpu_arena_debug_chunks(), 1);
	pcpu_arena_fail_after(-1);
	b = new_obj(32, 2);
	fill(&a);
	fill(&b);
	assert_filled(&a);
	pcpu_arena_free(a.p, a.size);
	pcpu_arena_free(b.p, b.size);
	cr_assert_eq(pcpu_arena_debug_chunks(), 0);
}

/* ---- layout ------------------------------------------------------------------ */

PCPU_TEST(arena, objects_of_different_sizes_never_overlap_on_any_cpu)
{
	enum { N = 600 };
	static struct obj objs[N];

	for (int i = 0; i < N; i++) {
		objs[i] = new_obj(sizes[(size_t)i * 5 % NR_SIZES], (unsigned char)i);
		fill(&objs[i]);
	}
	for (int i = 0; i < N; i++)
		assert_filled(&objs[i]);
	/* free every other one and refill the holes with other sizes */
	for (int i = 0; i < N; i += 2)
		pcpu_arena_free(objs[i].p, objs[i].size);
	for (int i = 0; i < N; i += 2) {
		objs[i] = new_obj(sizes[(size_t)i * 3 % NR_SIZES], (unsigned char)(i + 1));
		fill(&objs[i]);
	}
	for (int i = 0; i < N; i++) {
		assert_filled(&objs[i]);
		pcpu_arena_free(objs[i].p, objs[i].size);
	}
	cr_assert_eq(pcpu_arena_debug_chunks(), 0);
}

PCPU_TEST(arena, thousands_of_allocs_and_frees_in_random_order_keep_every_live_object_intact)
{
	enum { MAX_LIVE = 1500 };
	static struct obj live[MAX_LIVE];
	long ops = pcpu_test_iterations(40000);
	uint64_t rng = 12345;
	int nr_live = 0;

	for (long op = 0; op < ops; op++) {
		uint64_t r = pcpu_test_rand(&rng);

		if (nr_live < MAX_LIVE && (nr_live == 0 || r % 100 < 55)) {
			/* mostly small, sometimes up to a whole stride */
			size_t size = r % 16 ? 1 + (r >> 8) % 256 : 1 + (r >> 8) % PCPU_STRIDE;

			live[nr_live] = new_obj(size, (unsigned char)op);
			fill(&live[nr_live++]);
		} else {
			int victim = (int)((r >> 8) % (uint64_t)nr_live);

			assert_filled(&live[victim]);
			pcpu_arena_free(live[victim].p, live[victim].size);
			live[victim] = live[--nr_live];
		}
	}
	for (int i = 0; i < nr_live; i++) {
		assert_filled(&live[i]);
		pcpu_arena_free(live[i].p, live[i].size);
	}
	cr_assert_eq(pcpu_arena_debug_chunks(), 0);
}

/* ---- misuse ------------------------------------------------------------------ */

PCPU_TEST(arena, free_of_a_pointer_not_from_the_arena_is_misuse,
	  .signal = PCPU_TEST_MISUSE_SIGNAL)
{
	static _Alignas(PCPU_STRIDE) unsigned char not_ours[PCPU_STRIDE];
	struct obj a = new_obj(16, 1);

	pcpu_arena_free(not_ours, 16);
	/* release builds: ignored, and the arena is untouched */
	fill(&a);
	assert_filled(&a);
	pcpu_arena_free(a.p, a.size);
	cr_assert_eq(pcpu_arena_debug_chunks(), 0);
}

PCPU_TEST(arena, double_free_is_misuse, .signal = PCPU_TEST_MISUSE_SIGNAL)
{
	struct obj a = new_obj(16, 1), b = new_obj(16, 2);

	pcpu_arena_free(a.p, a.size);
	pcpu_arena_free(a.p, a.size);
	/* release builds: ignored */
	fill(&b);
	assert_filled(&b);
	pcpu_arena_free(b.p, b.size);
	cr_assert_eq(pcpu_arena_debug_chunks(), 0);
}

/* ---- fork -------------------------------------------------------------------- */

static volatile bool churn_stop;

static void *churn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
		void *p = pcpu_arena_alloc(64);

		if (p)
			pcpu_arena_free(p, 64);
	}
	return NULL;
}

PCPU_TEST(arena, a_child_forked_while_another_thread_allocates_can_allocate)
{
	long forks = pcpu_test_iterations(200);
	pthread_t t;
	struct obj keep;

	/* the arena's fork safety comes from the registry's fork handlers */
	cr_assert_eq(pcpu_registry_setup(), 0);
	keep = new_obj(64, 9);
	fill(&keep);
	cr_assert_eq(pthread_create(&t, NULL, churn, NULL), 0);
	for (long i = 0; i < forks; i++) {
		int status;
		pid_t pid = fork();

		cr_assert_geq(pid, 0);
		if (pid == 0) {
			void *p;

			alarm(20); /* a lock left held would hang here */
			p = pcpu_arena_alloc(64);
			if (!p)
				_exit(2);
			pcpu_arena_free(p, 64);
			pcpu_arena_free(keep.p, keep.size);
			_exit(0);
		}
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "child %ld: status %#x", i, status);
	}
	__atomic_store_n(&churn_stop, true, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	assert_filled(&keep);
	pcpu_arena_free(keep.p, keep.size);
}
