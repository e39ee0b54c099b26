// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel code, compiled unchanged but for its include lines: ext4's free
 * cluster accounting (fs/ext4/balloc.c, super.c, mballoc.c, inode.c,
 * ialloc.c, Linux 6.x) and XFS's free block counter (fs/xfs/xfs_mount.c,
 * xfs_mod_fdblocks(), Linux 5.4).
 *
 * <linux/percpu_counter.h> and the other kernel headers are replaced by
 * <percpu/percpu_counter.h> and "kshim.h". ext4_has_free_clusters(),
 * ext4_claim_free_clusters() and xfs_mod_fdblocks() are the kernel's
 * bodies, ext4_nonda_switch() is the kernel's less its writeback kick; the
 * other ext4 functions are the percpu counter
 * lines of the kernel functions named above each, without the bitmap and
 * journal work around them. ext4_percpu_param_init() sets the counters up
 * with percpu_counter_init_many(), as mm_init() does for rss_stat.
 *
 * ext4 trusts percpu_counter_read() to within EXT4_FREECLUSTERS_WATERMARK =
 * 4 * percpu_counter_batch * nr_cpu_ids, which the kernel's fixed batch
 * keeps: percpu_counter_init_many() gives it, with no flag.
 */
#include <percpu/percpu_counter.h>
#include "kshim.h"
#include "fs_counters.h"

static inline ext4_fsblk_t ext4_r_blocks_count(struct ext4_super_block *es)
{
	return es->s_r_blocks_count;
}

static inline int64_t atomic64_read(const int64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

/* fs/ext4/super.c */
int ext4_percpu_param_init(struct ext4_sb_info *sbi, ext4_fsblk_t free_clusters,
			   unsigned long free_inodes, unsigned long dirs)
{
	int err;

	err = percpu_counter_init_many(sbi->s_counters, 0, GFP_KERNEL,
				       EXT4_NR_COUNTERS);
	if (err)
		return err;
	percpu_counter_set(&sbi->s_freeclusters_counter, free_clusters);
	percpu_counter_set(&sbi->s_freeinodes_counter, free_inodes);
	percpu_counter_set(&sbi->s_dirs_counter, dirs);
	return 0;
}

void ext4_percpu_param_destroy(struct ext4_sb_info *sbi)
{
	percpu_counter_destroy_many(sbi->s_counters, EXT4_NR_COUNTERS);
}

/* fs/ext4/balloc.c */
/*
 * Check if filesystem has nclusters free & available for allocation.
 * On success return 1, return 0 on failure.
 */
static int ext4_has_free_clusters(struct ext4_sb_info *sbi,
				  s64 nclusters, unsigned int flags)
{
	s64 free_clusters, dirty_clusters, rsv, resv_clusters;
	struct percpu_counter *fcc = &sbi->s_freeclusters_counter;
	struct percpu_counter *dcc = &sbi->s_dirtyclusters_counter;

	free_clusters  = percpu_counter_read_positive(fcc);
	dirty_clusters = percpu_counter_read_positive(dcc);
	resv_clusters = atomic64_read(&sbi->s_resv_clusters);

	/*
	 * r_blocks_count should always be multiple of the cluster ratio so
	 * we are safe to do a plane bit shift only.
	 */
	rsv = (ext4_r_blocks_count(sbi->s_es) >> sbi->s_cluster_bits) +
	      resv_clusters;

	if (free_clusters - (nclusters + rsv + dirty_clusters) <
					EXT4_FREECLUSTERS_WATERMARK) {
		free_clusters  = percpu_counter_sum_positive(fcc);
		dirty_clusters = percpu_counter_sum_positive(dcc);
	}
	/* Check whether we have space after accounting for current
	 * dirty clusters & root reserved clusters.
	 */
	if (free_clusters >= (rsv + nclusters + dirty_clusters))
		return 1;

	/* Hm, nope.  Are (enough) root reserved clusters available? */
	if (uid_eq(sbi->s_resuid, current_fsuid()) ||
	    (!gid_eq(sbi->s_resgid, GLOBAL_ROOT_GID) && in_group_p(sbi->s_resgid)) ||
	    capable(CAP_SYS_RESOURCE) ||
	    (flags & EXT4_MB_USE_ROOT_BLOCKS)) {

		if (free_clusters >= (nclusters + dirty_clusters +
				      resv_clusters))
			return 1;
	}
	/* No free blocks. Let's see if we can dip into reserved pool */
	if (flags & EXT4_MB_USE_RESERVED) {
		if (free_clusters >= (nclusters + dirty_clusters))
			return 1;
	}

	return 0;
}

int ext4_claim_free_clusters(struct ext4_sb_info *sbi,
			     s64 nclusters, unsigned int flags)
{
	if (ext4_has_free_clusters(sbi, nclusters, flags)) {
		percpu_counter_add(&sbi->s_dirtyclusters_counter, nclusters);
		return 0;
	} else
		return -ENOSPC;
}

/* fs/ext4/mballoc.c, ext4_mb_mark_diskspace_used() */
void ext4_mb_mark_diskspace_used(struct ext4_sb_info *sbi, s64 len, bool delalloc_reserved)
{
	percpu_counter_sub(&sbi->s_freeclusters_counter, len);
	/*
	 * Now reduce the dirty block count also. Should not go negative
	 */
	if (!delalloc_reserved)
		/* release all the reserved blocks if non delalloc */
		percpu_counter_sub(&sbi->s_dirtyclusters_counter, len);
}

/* fs/ext4/inode.c, ext4_da_release_space() */
void ext4_da_release_space(struct ext4_sb_info *sbi, s64 to_free)
{
	percpu_counter_sub(&sbi->s_dirtyclusters_counter, to_free);
}

/* fs/ext4/mballoc.c, ext4_free_blocks() */
void ext4_free_clusters(struct ext4_sb_info *sbi, s64 count_clusters)
{
	percpu_counter_add(&sbi->s_freeclusters_counter, count_clusters);
}

/* fs/ext4/ialloc.c, __ext4_new_inode() and ext4_free_inode() */
void ext4_new_inode_accounting(struct ext4_sb_info *sbi, bool is_dir)
{
	percpu_counter_dec(&sbi->s_freeinodes_counter);
	if (is_dir)
		percpu_counter_inc(&sbi->s_dirs_counter);
}

void ext4_free_inode_accounting(struct ext4_sb_info *sbi, bool is_dir)
{
	percpu_counter_inc(&sbi->s_freeinodes_counter);
	if (is_dir)
		percpu_counter_dec(&sbi->s_dirs_counter);
}

/* fs/ext4/ialloc.c, find_group_orlov() */
unsigned long ext4_orlov_avefreei(struct ext4_sb_info *sbi)
{
	ext4_group_t ngroups = sbi->s_groups_count;
	unsigned int freei, avefreei;

	freei = percpu_counter_read_positive(&sbi->s_freeinodes_counter);
	avefreei = freei / ngroups;
	return avefreei;
}

/* fs/ext4/super.c, ext4_statfs() */
s64 ext4_statfs_bfree(struct ext4_sb_info *sbi)
{
	s64 bfree;

	/* prevent underflow in case that few free space is available */
	bfree = percpu_counter_sum_positive(&sbi->s_freeclusters_counter) -
		percpu_counter_sum_positive(&sbi->s_dirtyclusters_counter);
	return max_t(s64, bfree, 0);
}

/* fs/ext4/inode.c */
int ext4_nonda_switch(struct ext4_sb_info *sbi)
{
	s64 free_clusters, dirty_clusters;

	/*
	 * switch to non delalloc mode if we are running low
	 * on free block. The free block accounting via percpu
	 * counters can get slightly wrong with percpu_counter_batch getting
	 * accumulated on each CPU without updating global counters
	 * Delalloc need an accurate free block accounting. So switch
	 * to non delalloc when we are near to error range.
	 */
	free_clusters =
		percpu_counter_read_positive(&sbi->s_freeclusters_counter);
	dirty_clusters =
		percpu_counter_read_positive(&sbi->s_dirtyclusters_counter);

	if (2 * free_clusters < 3 * dirty_clusters ||
	    free_clusters < (dirty_clusters + EXT4_FREECLUSTERS_WATERMARK)) {
		/*
		 * free block count is less than 150% of dirty blocks
		 * or free blocks is less than watermark
		 */
		return 1;
	}
	return 0;
}

/* fs/xfs/xfs_mount.c */
int
xfs_mod_fdblocks(
	struct xfs_mount	*mp,
	int64_t			delta,
	bool			rsvd)
{
	int64_t			lcounter;
	long long		res_used;
	s32			batch;

	if (delta > 0) {
		/*
		 * If the reserve pool is depleted, put blocks back into it
		 * first. Most of the time the pool is full.
		 */
		if (likely(mp->m_resblks == mp->m_resblks_avail)) {
			percpu_counter_add(&mp->m_fdblocks, delta);
			return 0;
		}

		spin_lock(&mp->m_sb_lock);
		res_used = (long long)(mp->m_resblks - mp->m_resblks_avail);

		if (res_used > delta) {
			mp->m_resblks_avail += delta;
		} else {
			delta -= res_used;
			mp->m_resblks_avail = mp->m_resblks;
			percpu_counter_add(&mp->m_fdblocks, delta);
		}
		spin_unlock(&mp->m_sb_lock);
		return 0;
	}

	/*
	 * Taking blocks away, need to be more accurate the closer we
	 * are to zero.
	 *
	 * If the counter has a value of less than 2 * max batch size,
	 * then make everything serialise as we are real close to
	 * ENOSPC.
	 */
	if (__percpu_counter_compare(&mp->m_fdblocks, 2 * XFS_FDBLOCKS_BATCH,
				     XFS_FDBLOCKS_BATCH) < 0)
		batch = 1;
	else
		batch = XFS_FDBLOCKS_BATCH;

	percpu_counter_add_batch(&mp->m_fdblocks, delta, batch);
	if (__percpu_counter_compare(&mp->m_fdblocks, mp->m_alloc_set_aside,
				     XFS_FDBLOCKS_BATCH) >= 0) {
		/* we had space! */
		return 0;
	}

	/*
	 * lock up the sb for dipping into reserves before releasing the space
	 * that took us to ENOSPC.
	 */
	spin_lock(&mp->m_sb_lock);
	percpu_counter_add(&mp->m_fdblocks, -delta);
	if (!rsvd)
		goto fdblocks_enospc;

	lcounter = (long long)mp->m_resblks_avail + delta;
	if (lcounter >= 0) {
		mp->m_resblks_avail = lcounter;
		spin_unlock(&mp->m_sb_lock);
		return 0;
	}
	printk_once(KERN_WARNING
		"Filesystem \"%s\": reserve blocks depleted! "
		"Consider increasing reserve pool size.",
		mp->m_fsname);
fdblocks_enospc:
	spin_unlock(&mp->m_sb_lock);
	return -ENOSPC;
}
