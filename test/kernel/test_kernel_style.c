/* SPDX-License-Identifier: MIT */
/*
 * The drop-in proof: kernel code compiled unchanged but for its include
 * lines (mm_util.c: overcommit accounting on vm_committed_as and shmem's
 * block accounting; fs_counters.c: ext4's free cluster counters and XFS's
 * free block counter), and code shaped after the kernel's (kernel_shapes.c:
 * the file table's nr_files, flexible proportions), driven from one and
 * from many threads hopping CPUs, with exact shadow accounting. Code that
 * trusts percpu_counter_read() must decide as the kernel would: within
 * (percpu_counter_batch - 1) per CPU.
 */
#include "../counter/helpers.h"

#include <errno.h>
#include <pthread.h>

#include <percpu/percpu_counter.h>

#include "arena/arena.h"
#include "kshim.h"
#include "fs_counters.h"
#include "kernel_shapes.h"
#include "mm_util.h"

#define NTHREADS 6

unsigned long kshim_totalram_pages = 1UL << 20; /* 4 GiB of 4 KiB pages */
long total_swap_pages;
unsigned int kshim_nr_cpus = 1;
kuid_t kshim_fsuid = { 1000 };

static void setup(void)
{
	kshim_nr_cpus = pcpu_cpu_online();
}

TestSuite(kernel_style, .init = setup, .timeout = 60);

static void run_threads(int n, void *(*fn)(void *), void *args, size_t size)
{
	pthread_t t[NTHREADS];

	cr_assert_leq(n, NTHREADS);
	for (int i = 0; i < n; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, fn, (char *)args + (size_t)i * size), 0);
	for (int i = 0; i < n; i++)
		cr_assert_eq(pthread_join(t[i], NULL), 0);
}

/*
 * The kernel's promise for percpu_counter_read() of a counter updated with
 * percpu_counter_add(): within percpu_counter_batch - 1 per CPU.
 */
static uint64_t kernel_read_slack(void)
{
	return (uint64_t)(percpu_counter_batch - 1) * pcpu_cpu_possible();
}

/* Moves the thread to the next CPU it may run on, every @every calls. */
struct hopper {
	int cpus[64];
	int n, next;
	long calls, every;
};

static struct hopper hopper(long every)
{
	struct hopper h = { .every = every };

	h.n = pcpu_test_allowed_cpus(h.cpus, 64);
	cr_assert_gt(h.n, 0);
	return h;
}

static void hop(struct hopper *h)
{
	if (h->calls++ % h->every != 0)
		return;
	cr_assert(pcpu_test_pin(h->cpus[h->next]), "cannot move to CPU %d", h->cpus[h->next]);
	h->next = (h->next + 1) % h->n;
}

/* ==== overcommit: __vm_enough_memory() on vm_committed_as =============== */

static uint64_t committed_bound(void)
{
	return pcpu_counter_error_bound(&vm_committed_as.pcpu);
}

PCPU_TEST(kernel_style, overcommit_guess_rejects_only_more_than_ram_and_swap)
{
	mmap_init();
	sysctl_overcommit_memory = OVERCOMMIT_GUESS;
	cr_assert_eq(__vm_enough_memory(NULL, (long)kshim_totalram_pages + 1, 1), -ENOMEM);
	cr_assert_eq(percpu_counter_sum(&vm_committed_as), 0, "a refused request stays counted");
	cr_assert_eq(__vm_enough_memory(NULL, 100, 1), 0);
	cr_assert_eq(__vm_enough_memory(NULL, (long)kshim_totalram_pages, 1), 0);
	cr_assert_eq(percpu_counter_sum(&vm_committed_as), (s64)kshim_totalram_pages + 100);
	percpu_counter_destroy(&vm_committed_as);
}

PCPU_TEST(kernel_style, overcommit_always_accepts_and_accounts_everything)
{
	mmap_init();
	sysctl_overcommit_memory = OVERCOMMIT_ALWAYS;
	for (int i = 0; i < 100; i++)
		cr_assert_eq(__vm_enough_memory(NULL, 1L << 20, 0), 0);
	cr_assert_eq(percpu_counter_sum(&vm_committed_as), 100LL << 20);
	cr_assert_leq(pcpu_test_distance((int64_t)vm_memory_committed(), 100LL << 20),
		      committed_bound());
	percpu_counter_destroy(&vm_committed_as);
}

PCPU_TEST(kernel_style, overcommit_never_stops_at_the_commit_limit)
{
	struct mm_struct mm = { .total_vm = 32 * 1000 };
	long allowed, granted = 0;

	mmap_init();
	sysctl_overcommit_memory = OVERCOMMIT_NEVER;
	/* 50% of RAM, less the admin reserve, less total_vm/32 for this mm */
	allowed = (long)vm_commit_limit() - (long)(sysctl_admin_reserve_kbytes >> 2) - 1000;
	cr_assert_eq(vm_commit_limit(), kshim_totalram_pages / 2);
	while (__vm_enough_memory(&mm, 1000, 0) == 0)
		granted += 1000;
	cr_assert_eq(percpu_counter_sum(&vm_committed_as), granted, "refusals were not undone");
	/* each grant saw read < allowed, each refusal read >= allowed */
	cr_assert_lt(granted, allowed + (long)committed_bound() + 1000);
	cr_assert_geq(granted + 1000, allowed - (long)committed_bound(), "stopped at %ld of %ld",
		      granted, allowed);
	/* give it all back */
	for (long g = granted; g > 0; g -= 1000)
		percpu_counter_add(&vm_committed_as, -1000);
	cr_assert_eq(percpu_counter_sum(&vm_committed_as), 0);
	percpu_counter_destroy(&vm_committed_as);
}

struct mapper {
	uint64_t seed;
	long rounds;
	long held;
	long max_held;
};

static void *map_and_unmap(void *arg)
{
	struct mapper *m = arg;
	struct mm_struct mm = { .total_vm = 0 };

	for (long i = 0; i < m->rounds; i++) {
		long pages = 1 + (long)(pcpu_test_rand(&m->seed) % 64);

		if (__vm_enough_memory(&mm, pages, 0) == 0) {
			m->held += pages;
			mm.total_vm += (unsigned long)pages;
		}
		if (m->held > 4096 || pcpu_test_rand(&m->seed) % 4 == 0) {
			/* munmap: vm_unacct_memory(), i.e. add -pages */
			percpu_counter_add(&vm_committed_as, -m->held);
			mm.total_vm = 0;
			m->held = 0;
		}
	}
	return NULL;
}

static void *map_until_refused(void *arg)
{
	struct mapper *m = arg;

	for (long i = 0; i < m->rounds; i++) {
		long pages = 1 + (long)(pcpu_test_rand(&m->seed) % 64);

		if (__vm_enough_memory(NULL, pages, 0) == 0)
			m->held += pages;
	}
	return NULL;
}

PCPU_TEST(kernel_style, overcommit_from_many_threads_accounts_exactly)
{
	struct mapper m[NTHREADS];
	long held = 0, allowed;
	int64_t sum;

	mmap_init();
	sysctl_overcommit_memory = OVERCOMMIT_NEVER;
	for (int i = 0; i < NTHREADS; i++)
		m[i] = (struct mapper){ .seed = (uint64_t)i + 1,
					.rounds = pcpu_test_iterations(30000) };
	run_threads(NTHREADS, map_and_unmap, m, sizeof(*m));
	for (int i = 0; i < NTHREADS; i++)
		held += m[i].held;
	cr_assert_eq(percpu_counter_sum(&vm_committed_as), held);

	/* now fill it up from every thread at once, never unmapping */
	allowed = (long)vm_commit_limit() - (long)(sysctl_admin_reserve_kbytes >> 2);
	for (int i = 0; i < NTHREADS; i++)
		m[i] = (struct mapper){ .seed = (uint64_t)i + 100, .held = 0,
					.rounds = pcpu_test_iterations(200000) };
	run_threads(NTHREADS, map_until_refused, m, sizeof(*m));
	for (int i = 0; i < NTHREADS; i++)
		held += m[i].held;
	sum = percpu_counter_sum(&vm_committed_as);
	cr_assert_eq(sum, held);
	if (!pcpu_test_small()) {
		/*
		 * The kernel's check is approximate: each grant saw read <
		 * allowed after its own add, read being within the bound plus
		 * the adds in flight on other threads.
		 */
		cr_assert_lt(sum, allowed + (int64_t)committed_bound() + NTHREADS * 64);
		cr_assert_geq(sum, allowed - (int64_t)committed_bound() - NTHREADS * 64,
			      "filled to %" PRId64 " of %ld", sum, allowed);
	}
	percpu_counter_destroy(&vm_committed_as);
}

/* ==== shmem: compare-then-add (6.5) and limited_add (6.7) ================ */

PCPU_TEST(kernel_style, shmem_compare_then_add_stops_exactly_at_max_blocks)
{
	struct shmem_sb_info sb;
	long blocks = 0;

	cr_assert_eq(shmem_fill_super_blocks(&sb, 100000), 0);
	pcpu_test_pin_first();
	while (shmem_inode_acct_block_65(&sb, 10))
		blocks += 10;
	cr_assert_eq(blocks, 100000);
	cr_assert_eq(shmem_statfs_bfree(&sb), 0);
	shmem_inode_unacct_blocks(&sb, 15);
	cr_assert(shmem_inode_acct_block_65(&sb, 15));
	cr_assert_not(shmem_inode_acct_block_65(&sb, 1));
	shmem_put_super_blocks(&sb);
}

struct shmem_user {
	struct shmem_sb_info *sb;
	uint64_t seed;
	long rounds;
	long held;
};

static void *use_shmem(void *arg)
{
	struct shmem_user *u = arg;

	for (long i = 0; i < u->rounds; i++) {
		long pages = 1 + (long)(pcpu_test_rand(&u->seed) % 32);

		if (shmem_inode_acct_blocks(u->sb, pages) == 0)
			u->held += pages;
		if (u->held > 0 && pcpu_test_rand(&u->seed) % 8 == 0) {
			long give = 1 + (long)(pcpu_test_rand(&u->seed) % (uint64_t)u->held);

			shmem_inode_unacct_blocks(u->sb, give);
			u->held -= give;
		}
	}
	return NULL;
}

PCPU_TEST(kernel_style, shmem_limited_add_never_passes_max_blocks_from_many_threads)
{
	struct shmem_sb_info sb;
	struct shmem_user u[NTHREADS];
	long held = 0;

	cr_assert_eq(shmem_fill_super_blocks(&sb, 20000), 0);
	for (int i = 0; i < NTHREADS; i++)
		u[i] = (struct shmem_user){ .sb = &sb, .seed = (uint64_t)i * 3 + 1,
					    .rounds = pcpu_test_iterations(20000) };
	run_threads(NTHREADS, use_shmem, u, sizeof(*u));
	for (int i = 0; i < NTHREADS; i++)
		held += u[i].held;
	cr_assert_eq(percpu_counter_sum(&sb.used_blocks), held);
	cr_assert_leq(held, 20000);
	cr_assert_geq(shmem_statfs_bfree(&sb), 0);
	shmem_put_super_blocks(&sb);
}

/* ==== ext4 ================================================================ */

static struct ext4_super_block es;
static struct ext4_sb_info sbi;

static void ext4_mount(ext4_fsblk_t clusters, uint64_t reserved)
{
	es = (struct ext4_super_block){ .s_r_blocks_count = reserved };
	memset(&sbi, 0, sizeof(sbi));
	sbi.s_es = &es;
	sbi.s_groups_count = 16;
	sbi.s_resuid = (kuid_t){ 0 };
	sbi.s_resgid = GLOBAL_ROOT_GID;
	cr_assert_eq(ext4_percpu_param_init(&sbi, clusters, 1 << 20, 2), 0);
}

PCPU_TEST(kernel_style, ext4_mount_sets_every_counter_up_with_init_many)
{
	ext4_mount(123456, 0);
	for (int i = 0; i < EXT4_NR_COUNTERS; i++)
		cr_assert(percpu_counter_initialized(&sbi.s_counters[i]));
	cr_assert_eq(percpu_counter_sum(&sbi.s_freeclusters_counter), 123456);
	cr_assert_eq(percpu_counter_sum(&sbi.s_freeinodes_counter), 1 << 20);
	cr_assert_eq(percpu_counter_sum(&sbi.s_dirs_counter), 2);
	cr_assert_eq(percpu_counter_sum(&sbi.s_dirtyclusters_counter), 0);
	cr_assert_eq(percpu_counter_read_positive(&sbi.s_freeclusters_counter), 123456);
	ext4_percpu_param_destroy(&sbi);
	for (int i = 0; i < EXT4_NR_COUNTERS; i++)
		cr_assert_not(percpu_counter_initialized(&sbi.s_counters[i]));
	ext4_percpu_param_destroy(&sbi); /* a second unmount path: harmless */
}

PCPU_TEST(kernel_style, ext4_mount_fails_cleanly_when_memory_runs_out)
{
	memset(&sbi, 0, sizeof(sbi));
	pcpu_arena_fail_after(EXT4_NR_COUNTERS - 1);
	cr_assert_eq(ext4_percpu_param_init(&sbi, 1000, 1000, 2), -ENOMEM);
	pcpu_arena_fail_after(-1);
	for (int i = 0; i < EXT4_NR_COUNTERS; i++)
		cr_assert_not(percpu_counter_initialized(&sbi.s_counters[i]));
	ext4_percpu_param_destroy(&sbi);
}

PCPU_TEST(kernel_style, ext4_claims_stop_at_the_root_reserve)
{
	long claimed = 0;

	ext4_mount(100000, 5000);
	while (ext4_claim_free_clusters(&sbi, 100, 0) == 0)
		claimed += 100;
	cr_assert_eq(claimed, 95000);
	cr_assert_eq(percpu_counter_sum(&sbi.s_dirtyclusters_counter), 95000);
	/* root may dip into the reserve, and EXT4_MB_USE_ROOT_BLOCKS too */
	kshim_fsuid = (kuid_t){ 0 };
	cr_assert_eq(ext4_claim_free_clusters(&sbi, 100, 0), 0);
	kshim_fsuid = (kuid_t){ 1000 };
	cr_assert_eq(ext4_claim_free_clusters(&sbi, 100, EXT4_MB_USE_ROOT_BLOCKS), 0);
	cr_assert_eq(ext4_claim_free_clusters(&sbi, 5000, EXT4_MB_USE_ROOT_BLOCKS), -ENOSPC);
	cr_assert_eq(ext4_statfs_bfree(&sbi), 100000 - 95200);
	ext4_percpu_param_destroy(&sbi);
}

/*
 * ext4 trusts percpu_counter_read_positive() unless it is within
 * EXT4_FREECLUSTERS_WATERMARK = 4 * percpu_counter_batch * nr_cpu_ids of
 * the answer: in the kernel a counter updated with percpu_counter_add() is
 * never further than percpu_counter_batch per CPU from exact. Here a CPU
 * frees and allocates clusters group by group (at most 32768 at a time, as
 * mballoc does) on a 4 TiB file system; the request is then checked
 * against the exact free count. The counters of percpu_counter_init_many()
 * keep the kernel's batch; elastic ones would read 4 Mi clusters off and
 * ext4 would say yes.
 */
PCPU_TEST(kernel_style, ext4_has_free_clusters_never_promises_clusters_that_are_not_free)
{
	const s64 total = 1LL << 30; /* clusters */
	const s64 want = total - (1LL << 20);

	ext4_mount((ext4_fsblk_t)total, 0);
	pcpu_test_pin_first();
	for (int i = 0; i < 128; i++)
		ext4_mb_mark_diskspace_used(&sbi, 32768, true); /* 4 Mi clusters in use */
	cr_assert_eq(percpu_counter_sum(&sbi.s_freeclusters_counter), total - (1LL << 22));
	cr_assert_eq(ext4_claim_free_clusters(&sbi, want, 0), -ENOSPC,
		     "claimed %lld clusters with %lld free (read says %lld, watermark %d)",
		     (long long)want, (long long)percpu_counter_sum(&sbi.s_freeclusters_counter),
		     (long long)percpu_counter_read(&sbi.s_freeclusters_counter),
		     EXT4_FREECLUSTERS_WATERMARK);
	ext4_percpu_param_destroy(&sbi);
}

struct ext4_writer {
	uint64_t seed;
	long allocated;
	long inodes, dirs;
	long rounds;
};

/* delalloc write: reserve a cluster, then write it back */
static void *delalloc_write(void *arg)
{
	struct ext4_writer *w = arg;

	for (long i = 0; i < w->rounds; i++) {
		if (ext4_claim_free_clusters(&sbi, 1, 0) != 0)
			break;
		ext4_mb_mark_diskspace_used(&sbi, 1, true);
		ext4_da_release_space(&sbi, 1);
		w->allocated++;
		if (pcpu_test_rand(&w->seed) % 16 == 0) {
			bool dir = pcpu_test_rand(&w->seed) % 2;

			ext4_new_inode_accounting(&sbi, dir);
			w->inodes++;
			w->dirs += dir;
		}
	}
	return NULL;
}

PCPU_TEST(kernel_style, ext4_delalloc_from_many_threads_stops_at_the_reserve_and_counts_exactly)
{
	struct ext4_writer w[NTHREADS];
	const long total = pcpu_test_small() ? 3000 : 60000, reserved = 1000;
	long allocated = 0, inodes = 0, dirs = 0;

	ext4_mount((ext4_fsblk_t)total, (uint64_t)reserved);
	for (int i = 0; i < NTHREADS; i++)
		w[i] = (struct ext4_writer){ .seed = (uint64_t)i + 9, .rounds = total };
	run_threads(NTHREADS, delalloc_write, w, sizeof(*w));
	for (int i = 0; i < NTHREADS; i++) {
		allocated += w[i].allocated;
		inodes += w[i].inodes;
		dirs += w[i].dirs;
	}
	cr_assert_eq(percpu_counter_sum(&sbi.s_freeclusters_counter), total - allocated);
	cr_assert_eq(percpu_counter_sum(&sbi.s_dirtyclusters_counter), 0);
	cr_assert_eq(percpu_counter_sum(&sbi.s_freeinodes_counter), (1 << 20) - inodes);
	cr_assert_eq(percpu_counter_sum(&sbi.s_dirs_counter), 2 + dirs);
	/*
	 * Check-then-claim is not atomic in ext4 either: each thread may
	 * overshoot by the one cluster it had checked for.
	 */
	cr_assert_leq(allocated, total - reserved + NTHREADS, "allocated %ld", allocated);
	cr_assert_geq(allocated, total - reserved - NTHREADS, "allocated %ld", allocated);
	cr_assert_eq(ext4_statfs_bfree(&sbi), total - allocated);
	ext4_percpu_param_destroy(&sbi);
}

PCPU_TEST(kernel_style, ext4_inode_accounting_is_exact_and_orlov_reads_are_close)
{
	ext4_mount(1000, 0);
	for (int i = 0; i < 5000; i++)
		ext4_new_inode_accounting(&sbi, i % 3 == 0);
	for (int i = 0; i < 1000; i++)
		ext4_free_inode_accounting(&sbi, i % 3 == 0);
	cr_assert_eq(percpu_counter_sum(&sbi.s_freeinodes_counter), (1 << 20) - 4000);
	cr_assert_eq(percpu_counter_sum(&sbi.s_dirs_counter), 2 + 1667 - 334);
	cr_assert_leq(pcpu_test_distance((int64_t)ext4_orlov_avefreei(&sbi),
					 ((1 << 20) - 4000) / 16),
		      pcpu_counter_error_bound(&sbi.s_freeinodes_counter.pcpu) / 16 + 1);
	ext4_percpu_param_destroy(&sbi);
}

PCPU_TEST(kernel_style, ext4_nonda_switch_triggers_near_exhaustion_only)
{
	ext4_mount(1000000, 0);
	cr_assert_eq(ext4_nonda_switch(&sbi), 0);
	cr_assert_eq(ext4_claim_free_clusters(&sbi, 700000, 0), 0);
	cr_assert_eq(ext4_nonda_switch(&sbi), 1, "dirty is 70%% of free");
	ext4_da_release_space(&sbi, 700000);
	ext4_mb_mark_diskspace_used(&sbi, 1000000 - 100, true);
	cr_assert_eq(ext4_nonda_switch(&sbi), 1, "below the watermark");
	ext4_percpu_param_destroy(&sbi);
}

/*
 * The case that ext4 with an elastic batch got wrong: one thread claiming one
 * cluster at a time while it moves between CPUs, each CPU keeping its own
 * dirty clusters unfolded. The kernel grants exactly what fits above the
 * root reserve: its watermark covers what read() may lag.
 */
PCPU_TEST(kernel_style, ext4_claims_one_at_a_time_across_cpus_stop_exactly_at_the_reserve)
{
	const long total = 100000, reserved = 4096;
	struct hopper h = hopper(pcpu_test_small() ? 64 : 3);
	long claimed = 0;

	ext4_mount((ext4_fsblk_t)total, (uint64_t)reserved);
	for (;;) {
		hop(&h);
		if (ext4_claim_free_clusters(&sbi, 1, 0) != 0)
			break;
		claimed++;
	}
	cr_assert_eq(claimed, total - reserved, "granted %ld claims where %ld fit (read %lld)",
		     claimed, total - reserved,
		     (long long)percpu_counter_read(&sbi.s_dirtyclusters_counter));
	cr_assert_eq(percpu_counter_sum(&sbi.s_dirtyclusters_counter), claimed);
	cr_assert_leq(pcpu_test_distance(percpu_counter_read(&sbi.s_dirtyclusters_counter),
					 claimed),
		      kernel_read_slack());
	ext4_percpu_param_destroy(&sbi);
}

/* ==== the file table: nr_files against file-max ========================== */

/*
 * alloc_empty_file() refuses once read() says max_files and the precise
 * sum agrees; read() lags by at most the batch per CPU, so an unprivileged
 * opener gets at most that many files past file-max.
 */
PCPU_TEST(kernel_style, file_table_opens_at_most_the_batch_per_cpu_past_file_max)
{
	const long max_files = pcpu_test_small() ? 100000 : 1000000;
	struct hopper h = hopper(4096);
	long opened = 0;

	cr_assert_eq(files_init(), 0);
	files_stat.max_files = (unsigned long)max_files;
	for (;;) {
		hop(&h);
		if (alloc_empty_file(false) != 0)
			break;
		opened++;
	}
	cr_assert_geq(opened, max_files, "refused at %ld files", opened);
	cr_assert_leq((uint64_t)(opened - max_files), kernel_read_slack(),
		      "%ld files open past a file-max of %ld (the kernel allows %llu)",
		      opened - max_files, max_files, (unsigned long long)kernel_read_slack());
	cr_assert_eq(alloc_empty_file(true), 0, "a privileged opener may go past file-max");
	opened++;
	for (long i = 0; i < opened; i++) {
		hop(&h);
		file_free();
	}
	cr_assert_eq(get_nr_files(), 0);
	cr_assert_eq(alloc_empty_file(false), 0);
	file_free();
	files_exit();
}

/* ==== flexible proportions ============================================== */

#define FPROP_LOCALS 4

struct fprop_writer {
	struct fprop_global *p;
	struct fprop_local_percpu *pl;
	long events[FPROP_LOCALS]; /* the shadow tally */
	long rounds;
};

/* local i gets i + 1 events in every 10 */
static void *fprop_write(void *arg)
{
	struct fprop_writer *w = arg;
	struct hopper h = hopper(1024);

	for (long r = 0; r < w->rounds; r++) {
		int i = r % 10 < 1 ? 0 : r % 10 < 3 ? 1 : r % 10 < 6 ? 2 : 3;

		hop(&h);
		__fprop_add_percpu(w->p, &w->pl[i], 1);
		w->events[i]++;
	}
	return NULL;
}

/*
 * Each local's fraction is its read() over the global read(): both within
 * the kernel's slack of the shadow tallies, so the fractions are as close
 * to exact as the kernel's, and after aging they still add up to at most 1
 * plus that slack.
 */
PCPU_TEST(kernel_style, flex_proportions_are_as_close_to_exact_as_the_kernels)
{
	static struct fprop_global p;
	static struct fprop_local_percpu pl[FPROP_LOCALS];
	struct fprop_writer w[2];
	long exact[FPROP_LOCALS] = { 0 }, global = 1;
	uint64_t local_slack = (uint64_t)(fprop_batch() - 1) * pcpu_cpu_possible();
	double total = 0, slack;

	cr_assert_eq(fprop_global_init(&p), 0);
	for (int i = 0; i < FPROP_LOCALS; i++)
		cr_assert_eq(fprop_local_init_percpu(&pl[i]), 0);
	for (int t = 0; t < 2; t++)
		w[t] = (struct fprop_writer){ .p = &p, .pl = pl,
					      .rounds = pcpu_test_iterations(400000) };
	run_threads(2, fprop_write, w, sizeof(w[0]));
	for (int i = 0; i < FPROP_LOCALS; i++) {
		exact[i] = w[0].events[i] + w[1].events[i];
		global += exact[i];
	}
	for (int i = 0; i < FPROP_LOCALS; i++) {
		unsigned long num, den;

		fprop_fraction_percpu(&p, &pl[i], &num, &den);
		cr_assert_leq(pcpu_test_distance((int64_t)num, exact[i]), local_slack,
			      "local %d reads %lu of %ld events", i, num, exact[i]);
		cr_assert_leq(pcpu_test_distance((int64_t)den, global), kernel_read_slack(),
			      "the global count reads %lu of %ld events", den, global);
	}
	cr_assert_leq(pcpu_test_distance(percpu_counter_read(&p.events), global),
		      kernel_read_slack(), "the global count reads %lld of %ld events",
		      (long long)percpu_counter_read(&p.events), global);

	/* one period on: the global count halves at once, the locals when read */
	cr_assert(fprop_new_period(&p, 1));
	cr_assert_eq(percpu_counter_sum(&p.events), global >> 1);
	cr_assert_leq(pcpu_test_distance(percpu_counter_read(&p.events), global >> 1),
		      kernel_read_slack());
	for (int i = 0; i < FPROP_LOCALS; i++) {
		unsigned long num, den;

		fprop_fraction_percpu(&p, &pl[i], &num, &den);
		total += (double)num / (double)den;
	}
	/* each aged local is within twice its slack, the global within its own */
	slack = (double)(FPROP_LOCALS * 2 * local_slack + kernel_read_slack()) /
		(double)((global >> 1) - (long)kernel_read_slack());
	cr_assert_leq(total, 1.0 + slack, "fractions add up to %f after aging", total);
	cr_assert_geq(total, 1.0 - slack, "fractions add up to %f after aging", total);
	for (int i = 0; i < FPROP_LOCALS; i++)
		fprop_local_destroy_percpu(&pl[i]);
	fprop_global_destroy(&p);
}

/* ==== XFS ================================================================= */

static struct xfs_mount mp;

static void xfs_mount(int64_t fdblocks, uint64_t set_aside, uint64_t resblks)
{
	memset(&mp, 0, sizeof(mp));
	pthread_mutex_init(&mp.m_sb_lock, NULL);
	mp.m_fsname = "test";
	mp.m_alloc_set_aside = set_aside;
	mp.m_resblks = resblks;
	mp.m_resblks_avail = resblks;
	cr_assert_eq(percpu_counter_init(&mp.m_fdblocks, fdblocks, GFP_KERNEL), 0);
}

static void xfs_unmount(void)
{
	percpu_counter_destroy(&mp.m_fdblocks);
	pthread_mutex_destroy(&mp.m_sb_lock);
}

PCPU_TEST(kernel_style, xfs_mod_fdblocks_stops_at_the_set_aside)
{
	long taken = 0;

	xfs_mount(100000, 4000, 0);
	while (xfs_mod_fdblocks(&mp, -7, false) == 0)
		taken += 7;
	cr_assert_eq(percpu_counter_sum(&mp.m_fdblocks), 100000 - taken);
	cr_assert_geq(percpu_counter_sum(&mp.m_fdblocks), 4000);
	cr_assert_lt(percpu_counter_sum(&mp.m_fdblocks), 4000 + 7);
	cr_assert_eq(xfs_mod_fdblocks(&mp, 7, false), 0);
	cr_assert_eq(percpu_counter_sum(&mp.m_fdblocks), 100000 - taken + 7);
	xfs_unmount();
}

PCPU_TEST(kernel_style, xfs_mod_fdblocks_dips_into_and_refills_the_reserve_pool)
{
	xfs_mount(1000, 1000, 100);
	cr_assert_eq(xfs_mod_fdblocks(&mp, -10, false), -ENOSPC);
	cr_assert_eq(xfs_mod_fdblocks(&mp, -10, true), 0);
	cr_assert_eq(mp.m_resblks_avail, 90);
	cr_assert_eq(percpu_counter_sum(&mp.m_fdblocks), 1000);
	cr_assert_eq(xfs_mod_fdblocks(&mp, 25, false), 0);
	cr_assert_eq(mp.m_resblks_avail, 100, "freed blocks refill the pool first");
	cr_assert_eq(percpu_counter_sum(&mp.m_fdblocks), 1015);
	xfs_unmount();
}

struct xfs_user {
	uint64_t seed;
	long rounds;
	long held;
};

static void *use_xfs(void *arg)
{
	struct xfs_user *u = arg;

	for (long i = 0; i < u->rounds; i++) {
		int64_t n = 1 + (int64_t)(pcpu_test_rand(&u->seed) % 16);

		if (xfs_mod_fdblocks(&mp, -n, false) == 0)
			u->held += n;
		if (u->held > 0 && pcpu_test_rand(&u->seed) % 8 == 0) {
			xfs_mod_fdblocks(&mp, u->held / 2, false);
			u->held -= u->held / 2;
		}
	}
	return NULL;
}

PCPU_TEST(kernel_style, xfs_mod_fdblocks_from_many_threads_never_hands_out_the_set_aside)
{
	struct xfs_user u[NTHREADS];
	long held = 0;
	const int64_t total = 200000, set_aside = 10000;

	xfs_mount(total, (uint64_t)set_aside, 0);
	for (int i = 0; i < NTHREADS; i++)
		u[i] = (struct xfs_user){ .seed = (uint64_t)i + 5,
					  .rounds = pcpu_test_iterations(40000) };
	run_threads(NTHREADS, use_xfs, u, sizeof(*u));
	for (int i = 0; i < NTHREADS; i++)
		held += u[i].held;
	cr_assert_eq(percpu_counter_sum(&mp.m_fdblocks), total - held);
	cr_assert_geq(percpu_counter_sum(&mp.m_fdblocks), set_aside, "held %ld of %" PRId64,
		      held, total - set_aside);
	xfs_unmount();
}
