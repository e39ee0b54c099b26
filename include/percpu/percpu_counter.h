/* SPDX-License-Identifier: MIT */
/**
 * @file percpu_counter.h
 * Drop-in for the Linux kernel's <linux/percpu_counter.h>: the same names,
 * signatures and semantics, so kernel-style code compiles once its include
 * line points here. percpu_counter_add() uses the elastic batch of
 * <percpu/counter.h>; percpu_counter_add_batch() honours the caller's batch.
 *
 * Differences from the kernel, all on the safe side:
 * - compare and limited_add decide from a true error bound (possible CPUs
 *   times the largest threshold in force) rather than batch * online CPUs;
 * - percpu_counter_sum() reads the slots without a lock and is exact at
 *   quiescence;
 * - init_many() with 0 counters and init() with a NULL counter return
 *   -EINVAL; the gfp argument is ignored.
 * Bad input otherwise behaves as described in <percpu/counter.h>.
 *
 * Kernel code that derives its own slack from percpu_counter_batch (ext4's
 * EXT4_FREECLUSTERS_WATERMARK = 4 * percpu_counter_batch * nr_cpu_ids
 * trusts percpu_counter_read() that far) relies on the kernel's fixed
 * batch, which the elastic batch does not keep on large values. For such
 * code define PERCPU_COUNTER_KERNEL_BATCH (before the include, or with
 * -DPERCPU_COUNTER_KERNEL_BATCH): percpu_counter_add() then folds at
 * percpu_counter_batch exactly as the kernel does. Code that asks
 * percpu_counter_compare() instead is right either way.
 *
 * The kernel types s64, s32, u32 and gfp_t and GFP_KERNEL are defined here
 * unless PERCPU_COUNTER_HAVE_KERNEL_TYPES is defined before the include.
 */
#ifndef PERCPU_PERCPU_COUNTER_H
#define PERCPU_PERCPU_COUNTER_H

#include <stdbool.h>
#include <stdint.h>

#include <percpu/counter.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef PERCPU_COUNTER_HAVE_KERNEL_TYPES
typedef signed long long s64;
typedef signed int s32;
typedef unsigned int u32;
typedef unsigned int gfp_t;
#endif
#ifndef GFP_KERNEL
#define GFP_KERNEL 0u
#endif

/** The kernel's counter; wraps the native one. @since 0.1 */
struct percpu_counter {
	struct pcpu_counter pcpu;
};

/**
 * The default fixed batch, max(32, 2 * online CPUs): the counters' default
 * threshold floor, pcpu_counter_default_floor(). A read-only expression,
 * not a variable as in the kernel (which never lets callers write it
 * either). @since 0.1 (an expression since 0.2)
 */
#define percpu_counter_batch ((int)pcpu_counter_default_floor())

/** @return 0, -EINVAL (NULL) or -ENOMEM. @since 0.1 */
static inline int percpu_counter_init(struct percpu_counter *fbc, s64 amount, gfp_t gfp)
{
	(void)gfp;
	return pcpu_counter_init(fbc ? &fbc->pcpu : (struct pcpu_counter *)0, amount);
}

/** @return 0, -EINVAL (NULL or 0 counters) or -ENOMEM (none initialised). @since 0.1 */
static inline int percpu_counter_init_many(struct percpu_counter *fbc, s64 amount, gfp_t gfp,
					   u32 nr_counters)
{
	(void)gfp;
	return pcpu_counter_init_many(fbc ? &fbc->pcpu : (struct pcpu_counter *)0, amount,
				      nr_counters);
}

/** Idempotent; NULL does nothing. @since 0.1 */
static inline void percpu_counter_destroy(struct percpu_counter *fbc)
{
	pcpu_counter_destroy(fbc ? &fbc->pcpu : (struct pcpu_counter *)0);
}

/** Idempotent per counter. @since 0.1 */
static inline void percpu_counter_destroy_many(struct percpu_counter *fbc, u32 nr_counters)
{
	pcpu_counter_destroy_many(fbc ? &fbc->pcpu : (struct pcpu_counter *)0, nr_counters);
}

/** @since 0.1 */
static inline void percpu_counter_set(struct percpu_counter *fbc, s64 amount)
{
	pcpu_counter_set(fbc ? &fbc->pcpu : (struct pcpu_counter *)0, amount);
}

/** Adds folding at @p batch (batch <= 0 folds every add). @since 0.1 */
static inline void percpu_counter_add_batch(struct percpu_counter *fbc, s64 amount, s32 batch)
{
	pcpu_counter_add_batch(fbc ? &fbc->pcpu : (struct pcpu_counter *)0, amount, batch);
}

/**
 * Elastic add; with PERCPU_COUNTER_KERNEL_BATCH defined, folds at
 * percpu_counter_batch as the kernel does. @since 0.1
 */
static inline void percpu_counter_add(struct percpu_counter *fbc, s64 amount)
{
#ifdef PERCPU_COUNTER_KERNEL_BATCH
	percpu_counter_add_batch(fbc, amount, percpu_counter_batch);
#else
	pcpu_counter_add(fbc ? &fbc->pcpu : (struct pcpu_counter *)0, amount);
#endif
}

/** Adds, folding only past INT32_MAX, as the kernel. @since 0.1 */
static inline void percpu_counter_add_local(struct percpu_counter *fbc, s64 amount)
{
	percpu_counter_add_batch(fbc, amount, INT32_MAX);
}

/** @since 0.1 */
static inline void percpu_counter_sub(struct percpu_counter *fbc, s64 amount)
{
	percpu_counter_add(fbc, -amount);
}

/** @since 0.1 */
static inline void percpu_counter_sub_local(struct percpu_counter *fbc, s64 amount)
{
	percpu_counter_add_local(fbc, -amount);
}

/** @since 0.1 */
static inline void percpu_counter_inc(struct percpu_counter *fbc)
{
	percpu_counter_add(fbc, 1);
}

/** @since 0.1 */
static inline void percpu_counter_dec(struct percpu_counter *fbc)
{
	percpu_counter_add(fbc, -1);
}

/** Approximate value, one load. @since 0.1 */
static inline s64 percpu_counter_read(struct percpu_counter *fbc)
{
	return pcpu_counter_read(fbc ? &fbc->pcpu : (const struct pcpu_counter *)0);
}

/** Approximate value, or 0 if it is negative. @since 0.1 */
static inline s64 percpu_counter_read_positive(struct percpu_counter *fbc)
{
	s64 ret = percpu_counter_read(fbc);

	return ret >= 0 ? ret : 0;
}

/** Exact value. @since 0.1 */
static inline s64 __percpu_counter_sum(struct percpu_counter *fbc)
{
	return pcpu_counter_sum(fbc ? &fbc->pcpu : (const struct pcpu_counter *)0);
}

/** Exact value. @since 0.1 */
static inline s64 percpu_counter_sum(struct percpu_counter *fbc)
{
	return __percpu_counter_sum(fbc);
}

/** Exact value, or 0 if it is negative. @since 0.1 */
static inline s64 percpu_counter_sum_positive(struct percpu_counter *fbc)
{
	s64 ret = __percpu_counter_sum(fbc);

	return ret > 0 ? ret : 0;
}

/**
 * -1, 0 or 1 as the value compares with @p rhs; precise only when the
 * error bound straddles @p rhs. @p batch is accepted for compatibility:
 * the true bound is used instead. @since 0.1
 */
static inline int __percpu_counter_compare(struct percpu_counter *fbc, s64 rhs, s32 batch)
{
	(void)batch;
	return pcpu_counter_compare(fbc ? &fbc->pcpu : (struct pcpu_counter *)0, rhs);
}

/** @since 0.1 */
static inline int percpu_counter_compare(struct percpu_counter *fbc, s64 rhs)
{
	return __percpu_counter_compare(fbc, rhs, percpu_counter_batch);
}

/**
 * Adds @p amount if the result stays at most @p limit (amount > 0) or at
 * least @p limit (amount < 0). @p batch is accepted for compatibility.
 * @since 0.1
 */
static inline bool __percpu_counter_limited_add(struct percpu_counter *fbc, s64 limit,
						s64 amount, s32 batch)
{
	(void)batch;
	return pcpu_counter_limited_add(fbc ? &fbc->pcpu : (struct pcpu_counter *)0, limit,
					amount);
}

/** @since 0.1 */
static inline bool percpu_counter_limited_add(struct percpu_counter *fbc, s64 limit, s64 amount)
{
	return __percpu_counter_limited_add(fbc, limit, amount, percpu_counter_batch);
}

/** Folds the calling CPU's pending delta. @since 0.1 */
static inline void percpu_counter_sync(struct percpu_counter *fbc)
{
	pcpu_counter_fold_this_cpu(fbc ? &fbc->pcpu : (struct pcpu_counter *)0);
}

/** @since 0.1 */
static inline bool percpu_counter_initialized(struct percpu_counter *fbc)
{
	return pcpu_counter_initialized(fbc ? &fbc->pcpu : (const struct pcpu_counter *)0);
}

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_PERCPU_COUNTER_H */
