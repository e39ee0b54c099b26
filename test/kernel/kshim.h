/* SPDX-License-Identifier: MIT */
/*
 * Just enough of the kernel's environment (other than percpu_counter) for
 * the kernel code in this directory to compile as it is in the kernel:
 * sysctls, RAM and swap sizes, a superblock, uid/gid helpers, a spinlock,
 * printk. Nothing about percpu_counter is here: that comes from
 * <percpu/percpu_counter.h>, which the kernel files include in place of
 * <linux/percpu_counter.h>.
 */
#ifndef PCPU_TEST_KSHIM_H
#define PCPU_TEST_KSHIM_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef uint64_t u64;
typedef uint64_t ext4_fsblk_t;
typedef unsigned int ext4_group_t;

#define __read_mostly
#define __init
#define ____cacheline_aligned_in_smp __attribute__((aligned(64)))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define EXPORT_SYMBOL_GPL(sym) extern int pcpu_kshim_export_##sym
#define EXPORT_SYMBOL(sym) extern int pcpu_kshim_export_##sym
#define KERN_WARNING ""
#define KERN_CRIT ""
#define pr_warn_ratelimited(...) ((void)0)
#define printk_once(...) ((void)0)
#define VM_BUG_ON(cond) ((void)(cond))
#define WARN_ON_ONCE(cond) ((void)(cond))

#define min_t(type, x, y) ((type)(x) < (type)(y) ? (type)(x) : (type)(y))
#define max_t(type, x, y) ((type)(x) > (type)(y) ? (type)(x) : (type)(y))

#define PAGE_SHIFT 12

/* include/linux/mman.h, mm/util.c */
#define OVERCOMMIT_GUESS 0
#define OVERCOMMIT_ALWAYS 1
#define OVERCOMMIT_NEVER 2

extern unsigned long kshim_totalram_pages;
extern long total_swap_pages;
extern unsigned int kshim_nr_cpus;

static inline unsigned long totalram_pages(void)
{
	return kshim_totalram_pages;
}

static inline unsigned long hugetlb_total_pages(void)
{
	return 0;
}

#define num_present_cpus() (kshim_nr_cpus)
#define num_online_cpus() (kshim_nr_cpus)
#define nr_cpu_ids (kshim_nr_cpus)

struct mm_struct {
	unsigned long total_vm;
};

/* a spinlock that is a mutex */
typedef pthread_mutex_t spinlock_t;
#define spin_lock(l) pthread_mutex_lock(l)
#define spin_unlock(l) pthread_mutex_unlock(l)

/* credentials: the tests run as a user without CAP_SYS_RESOURCE */
typedef struct {
	unsigned int val;
} kuid_t;
typedef struct {
	unsigned int val;
} kgid_t;
#define GLOBAL_ROOT_GID ((kgid_t){ 0 })
#define CAP_SYS_RESOURCE 24
extern kuid_t kshim_fsuid;
static inline kuid_t current_fsuid(void)
{
	return kshim_fsuid;
}
static inline bool uid_eq(kuid_t a, kuid_t b)
{
	return a.val == b.val;
}
static inline bool gid_eq(kgid_t a, kgid_t b)
{
	return a.val == b.val;
}
static inline bool in_group_p(kgid_t g)
{
	(void)g;
	return false;
}
static inline bool capable(int cap)
{
	(void)cap;
	return false;
}

#endif /* PCPU_TEST_KSHIM_H */
