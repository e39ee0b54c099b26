/* SPDX-License-Identifier: MIT */
/* What the tests call in mm_util.c (kernel code) and its tunables. */
#ifndef PCPU_TEST_MM_UTIL_H
#define PCPU_TEST_MM_UTIL_H

#include <stdbool.h>

#include <percpu/percpu_counter.h>

struct mm_struct;

extern int sysctl_overcommit_memory;
extern int sysctl_overcommit_ratio;
extern unsigned long sysctl_overcommit_kbytes;
extern unsigned long sysctl_user_reserve_kbytes;
extern unsigned long sysctl_admin_reserve_kbytes;
extern struct percpu_counter vm_committed_as;

void mmap_init(void);
unsigned long vm_commit_limit(void);
unsigned long vm_memory_committed(void);
int __vm_enough_memory(struct mm_struct *mm, long pages, int cap_sys_admin);

struct shmem_sb_info {
	unsigned long max_blocks;          /* How many blocks are allowed */
	struct percpu_counter used_blocks; /* How many are allocated */
};

int shmem_fill_super_blocks(struct shmem_sb_info *sbinfo, unsigned long max_blocks);
void shmem_put_super_blocks(struct shmem_sb_info *sbinfo);
bool shmem_inode_acct_block_65(struct shmem_sb_info *sbinfo, long pages);
int shmem_inode_acct_blocks(struct shmem_sb_info *sbinfo, long pages);
void shmem_inode_unacct_blocks(struct shmem_sb_info *sbinfo, long pages);
long shmem_statfs_bfree(struct shmem_sb_info *sbinfo);

#endif /* PCPU_TEST_MM_UTIL_H */
