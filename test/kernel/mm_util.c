// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel code, compiled unchanged but for its include lines: the overcommit
 * accounting of mm/util.c and include/linux/mman.h (Linux 5.7, before
 * vm_acct_memory() switched to percpu_counter_add_batch()), and the block
 * accounting of mm/shmem.c in its two generations: compare-then-add
 * (Linux 6.5) and percpu_counter_limited_add() (Linux 6.7).
 *
 * The kernel's #include lines (<linux/mman.h>, <linux/percpu_counter.h>,
 * ...) are replaced by <percpu/percpu_counter.h> and "kshim.h"; "mm_util.h"
 * declares what the test calls. The overcommit code is the kernel's as it
 * is; the shmem functions take the shmem_sb_info instead of the inode and
 * leave out the quota and shmem_acct_block() parts, but their
 * percpu_counter calls are the kernel's.
 */
#include <percpu/percpu_counter.h>
#include "kshim.h"
#include "mm_util.h"

/* ---- include/linux/mman.h ---- */

extern struct percpu_counter vm_committed_as;

static inline void vm_acct_memory(long pages)
{
	percpu_counter_add(&vm_committed_as, pages);
}

static inline void vm_unacct_memory(long pages)
{
	vm_acct_memory(-pages);
}

/* ---- mm/util.c ---- */

int sysctl_overcommit_memory __read_mostly = OVERCOMMIT_GUESS;
int sysctl_overcommit_ratio __read_mostly = 50;
unsigned long sysctl_overcommit_kbytes __read_mostly;
unsigned long sysctl_user_reserve_kbytes __read_mostly = 1UL << 17; /* 128MB */
unsigned long sysctl_admin_reserve_kbytes __read_mostly = 1UL << 13; /* 8MB */

struct percpu_counter vm_committed_as ____cacheline_aligned_in_smp;

/*
 * Committed memory limit enforced when OVERCOMMIT_NEVER policy is used
 */
unsigned long vm_commit_limit(void)
{
	unsigned long allowed;

	if (sysctl_overcommit_kbytes)
		allowed = sysctl_overcommit_kbytes >> (PAGE_SHIFT - 10);
	else
		allowed = ((totalram_pages() - hugetlb_total_pages())
			   * sysctl_overcommit_ratio / 100);
	allowed += total_swap_pages;

	return allowed;
}

/*
 * The global memory commitment made in the system can be a metric
 * that can be used to drive ballooning decisions when Linux is hosted
 * as a guest. On Hyper-V, the host implements a policy engine for dynamically
 * balancing memory across competing virtual machines that are hosted.
 * Several metrics drive this policy engine including the guest reported
 * memory commitment.
 */
unsigned long vm_memory_committed(void)
{
	return percpu_counter_read_positive(&vm_committed_as);
}
EXPORT_SYMBOL_GPL(vm_memory_committed);

/*
 * Check that a process has enough memory to allocate a new virtual
 * mapping. 0 means there is enough memory for the allocation to
 * succeed and -ENOMEM implies there is not.
 *
 * We currently support three overcommit policies, which are set via the
 * vm.overcommit_memory sysctl.  See Documentation/vm/overcommit-accounting.rst
 *
 * Strict overcommit modes added 2002 Feb 26 by Alan Cox.
 * Additional code 2002 Jul 20 by Robert Love.
 *
 * cap_sys_admin is 1 if the process has admin privileges, 0 otherwise.
 *
 * Note this is a helper function intended to be used by LSMs which
 * wish to use this logic.
 */
int __vm_enough_memory(struct mm_struct *mm, long pages, int cap_sys_admin)
{
	long allowed;

	vm_acct_memory(pages);

	/*
	 * Sometimes we want to use more memory than we have
	 */
	if (sysctl_overcommit_memory == OVERCOMMIT_ALWAYS)
		return 0;

	if (sysctl_overcommit_memory == OVERCOMMIT_GUESS) {
		if (pages > totalram_pages() + total_swap_pages)
			goto error;
		return 0;
	}

	allowed = vm_commit_limit();
	/*
	 * Reserve some for root
	 */
	if (!cap_sys_admin)
		allowed -= sysctl_admin_reserve_kbytes >> (PAGE_SHIFT - 10);

	/*
	 * Don't let a single process grow so big a user can't recover
	 */
	if (mm) {
		long reserve = sysctl_user_reserve_kbytes >> (PAGE_SHIFT - 10);

		allowed -= min_t(long, mm->total_vm / 32, reserve);
	}

	if (percpu_counter_read_positive(&vm_committed_as) < allowed)
		return 0;
error:
	vm_unacct_memory(pages);

	return -ENOMEM;
}

/* mm/mmap.c */
/*
 * initialise the percpu counter for VM
 */
void __init mmap_init(void)
{
	int ret;

	ret = percpu_counter_init(&vm_committed_as, 0, GFP_KERNEL);
	VM_BUG_ON(ret);
}

/* ---- mm/shmem.c ---- */

/*
 * Linux 6.5: decide with percpu_counter_compare(), then add. Not atomic:
 * two callers may both pass the compare (the kernel serialises nothing
 * here either); the tests call it from one thread.
 */
bool shmem_inode_acct_block_65(struct shmem_sb_info *sbinfo, long pages)
{
	if (sbinfo->max_blocks) {
		if (percpu_counter_compare(&sbinfo->used_blocks,
					   sbinfo->max_blocks - pages) > 0)
			goto unacct;
		percpu_counter_add(&sbinfo->used_blocks, pages);
	}

	return true;

unacct:
	return false;
}

/* Linux 6.7: one limited add, safe from any number of callers at once. */
int shmem_inode_acct_blocks(struct shmem_sb_info *sbinfo, long pages)
{
	int err = -ENOSPC;

	if (sbinfo->max_blocks) {
		if (!percpu_counter_limited_add(&sbinfo->used_blocks,
						sbinfo->max_blocks, pages))
			goto unacct;
	}

	return 0;

unacct:
	return err;
}

void shmem_inode_unacct_blocks(struct shmem_sb_info *sbinfo, long pages)
{
	if (sbinfo->max_blocks)
		percpu_counter_sub(&sbinfo->used_blocks, pages);
}

/* shmem_fill_super() and shmem_put_super() */
int shmem_fill_super_blocks(struct shmem_sb_info *sbinfo, unsigned long max_blocks)
{
	sbinfo->max_blocks = max_blocks;
	if (percpu_counter_init(&sbinfo->used_blocks, 0, GFP_KERNEL))
		return -ENOMEM;
	return 0;
}

void shmem_put_super_blocks(struct shmem_sb_info *sbinfo)
{
	percpu_counter_destroy(&sbinfo->used_blocks);
}

/* shmem_statfs(): the free block count */
long shmem_statfs_bfree(struct shmem_sb_info *sbinfo)
{
	return sbinfo->max_blocks - percpu_counter_sum(&sbinfo->used_blocks);
}
