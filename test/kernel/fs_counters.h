/* SPDX-License-Identifier: MIT */
/*
 * The parts of ext4's and XFS's superblock info that hold percpu counters,
 * laid out as in the kernel (fs/ext4/ext4.h, fs/xfs/xfs_mount.h), except
 * that ext4's counters sit in one array so that they can be set up with
 * percpu_counter_init_many(), as mm_struct's rss_stat is.
 */
#ifndef PCPU_TEST_FS_COUNTERS_H
#define PCPU_TEST_FS_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

#include <percpu/percpu_counter.h>
#include "kshim.h"

/* ---- ext4 ---- */

enum {
	EXT4_FREECLUSTERS_COUNTER,
	EXT4_FREEINODES_COUNTER,
	EXT4_DIRS_COUNTER,
	EXT4_DIRTYCLUSTERS_COUNTER,
	EXT4_SRA_EXCEEDED_RETRY_LIMIT,
	EXT4_NR_COUNTERS
};

struct ext4_super_block {
	uint64_t s_r_blocks_count; /* Reserved blocks count */
};

struct ext4_sb_info {
	struct ext4_super_block *s_es;
	int s_cluster_bits;
	ext4_group_t s_groups_count;
	int64_t s_resv_clusters; /* atomic64_t in the kernel */
	kuid_t s_resuid;
	kgid_t s_resgid;
	union {
		struct percpu_counter s_counters[EXT4_NR_COUNTERS];
		struct {
			struct percpu_counter s_freeclusters_counter;
			struct percpu_counter s_freeinodes_counter;
			struct percpu_counter s_dirs_counter;
			struct percpu_counter s_dirtyclusters_counter;
			struct percpu_counter s_sra_exceeded_retry_limit;
		};
	};
};

#define EXT4_MB_USE_ROOT_BLOCKS 0x1000
#define EXT4_MB_USE_RESERVED 0x2000
#define EXT4_FREECLUSTERS_WATERMARK (4 * (percpu_counter_batch * nr_cpu_ids))

int ext4_percpu_param_init(struct ext4_sb_info *sbi, ext4_fsblk_t free_clusters,
			   unsigned long free_inodes, unsigned long dirs);
void ext4_percpu_param_destroy(struct ext4_sb_info *sbi);
int ext4_claim_free_clusters(struct ext4_sb_info *sbi, s64 nclusters, unsigned int flags);
void ext4_mb_mark_diskspace_used(struct ext4_sb_info *sbi, s64 len, bool delalloc_reserved);
void ext4_da_release_space(struct ext4_sb_info *sbi, s64 to_free);
void ext4_free_clusters(struct ext4_sb_info *sbi, s64 count_clusters);
void ext4_new_inode_accounting(struct ext4_sb_info *sbi, bool is_dir);
void ext4_free_inode_accounting(struct ext4_sb_info *sbi, bool is_dir);
s64 ext4_statfs_bfree(struct ext4_sb_info *sbi);
int ext4_nonda_switch(struct ext4_sb_info *sbi);
unsigned long ext4_orlov_avefreei(struct ext4_sb_info *sbi);

/* ---- XFS ---- */

#define XFS_FDBLOCKS_BATCH 1024

struct xfs_mount {
	spinlock_t m_sb_lock;
	const char *m_fsname;
	struct percpu_counter m_fdblocks;
	uint64_t m_resblks;       /* total reserved blocks */
	uint64_t m_resblks_avail; /* available reserved blocks */
	uint64_t m_alloc_set_aside;
};

int xfs_mod_fdblocks(struct xfs_mount *mp, int64_t delta, bool rsvd);

#endif /* PCPU_TEST_FS_COUNTERS_H */
