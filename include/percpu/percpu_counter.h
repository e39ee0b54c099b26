/* SPDX-License-Identifier: MIT */
/**
 * @file percpu_counter.h
 * Drop-in for the Linux kernel's <linux/percpu_counter.h>: the same names,
 * signatures and semantics, so kernel-style code compiles once its include
 * line points here.
 *
 * The promise: a counter behaves as the kernel's unless it was created
 * elastic, a choice made at init, never at a call site.
 * - percpu_counter_init() and percpu_counter_init_many() give the kernel's
 *   fixed batch, percpu_counter_batch as it was at init:
 *   percpu_counter_read() is within (percpu_counter_batch - 1) * CPUs of
 *   exact (the CPUs that added to it: the kernel's online ones, as it folds
 *   a CPU that goes offline), and compare() and limited_add() decide from
 *   that bound.
 * - percpu_counter_init_elastic() and percpu_counter_init_many_elastic()
 *   give the elastic threshold of <percpu/counter.h>, for code that asks
 *   compare(), limited_add() or sum() rather than trusting read().
 * percpu_counter_add_batch() honours the caller's batch on either kind.
 *
 * Differences from the kernel, all on the safe side: an amount larger than
 * the batch goes to the central value with this CPU's pending delta (the
 * read is exact, not further off); compare() and limited_add() decide from
 * a true error bound (the CPUs that added times the largest batch in force);
 * percpu_counter_sum() takes no lock and is exact at quiescence;
 * init_many() of 0 counters and init() of NULL return -EINVAL; the gfp
 * argument is ignored. Bad input otherwise as in <percpu/counter.h>.
 *
 * The kernel types s64, s32, u32 and gfp_t and GFP_KERNEL are defined here
 * unless PERCPU_COUNTER_HAVE_KERNEL_TYPES is defined before the include.
 *
 * Link: pkg-config percpu. Proofs: docs/internals.md [pending-bound],
 * [exact-sum]
 * (installed as /usr/share/doc/libpercpu-dev/internals.md by Debian's
 * libpercpu-dev, PREFIX/share/doc/percpu/internals.md by meson install).
 */
#ifndef PERCPU_PERCPU_COUNTER_H
#define PERCPU_PERCPU_COUNTER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <percpu/counter.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef PERCPU_COUNTER_HAVE_KERNEL_TYPES
typedef signed long long s64; /**< the kernel's s64. @since 0.1 */
typedef signed int s32;       /**< the kernel's s32. @since 0.1 */
typedef unsigned int u32;     /**< the kernel's u32. @since 0.1 */
typedef unsigned int gfp_t;   /**< allocation flags, accepted and ignored. @since 0.1 */
#endif
#ifndef GFP_KERNEL
/** The kernel's usual allocation flags: ignored here. @since 0.1 */
#define GFP_KERNEL 0u
#endif

/** The kernel's counter; wraps the native one. @since 0.1 */
struct percpu_counter {
	struct pcpu_counter pcpu; /**< the native counter (<percpu/counter.h>) */
};
/* init_many() hands an array of these to the native init_many_opts() */
PCPU_STATIC_ASSERT(sizeof(struct percpu_counter) == sizeof(struct pcpu_counter),
		   "struct percpu_counter is a struct pcpu_counter");

/**
 * The kernel's default batch, max(32, 2 * online CPUs), set when the
 * library loads. A variable, as in the kernel: kernel code may take its
 * address or derive slack from it. A counter created by percpu_counter_init()
 * takes its batch from it then (values below 1 count as 1), so a write
 * changes counters created afterwards only. @since 0.3 (an expression in 0.2)
 */
PCPU_EXPORT extern int percpu_counter_batch;

/** The batch of percpu_counter_add_local(): fold only past INT_MAX. @since 0.3 */
#define PERCPU_COUNTER_LOCAL_BATCH INT_MAX

/* Internal to the headers: @nr counters, fixed @batch or elastic (0). */
static inline int __percpu_counter_init_many(struct percpu_counter *fbc, s64 amount,
					     u32 nr_counters, int64_t batch)
{
	struct pcpu_counter_options opts = { 0, 0, batch };

	return pcpu_counter_init_many_opts(fbc ? &fbc->pcpu : (struct pcpu_counter *)0, amount,
					   nr_counters, &opts);
}

/* Internal to the headers: the fixed batch of a counter created now. */
static inline int64_t __percpu_counter_default_batch(void)
{
	return percpu_counter_batch > 1 ? percpu_counter_batch : 1;
}

/**
 * Initialises @p nr_counters counters of the array @p fbc with the kernel's
 * fixed batch, percpu_counter_batch. All or none.
 * @return 0, -EINVAL (NULL or 0 counters) or -ENOMEM (none initialised).
 * @since 0.1 (fixed batch since 0.3)
 */
static inline int percpu_counter_init_many(struct percpu_counter *fbc, s64 amount, gfp_t gfp,
					   u32 nr_counters)
{
	(void)gfp;
	return __percpu_counter_init_many(fbc, amount, nr_counters,
					  __percpu_counter_default_batch());
}

/**
 * Initialises @p fbc with the kernel's fixed batch, percpu_counter_batch.
 * @return 0, -EINVAL (NULL) or -ENOMEM. @since 0.1 (fixed batch since 0.3)
 */
static inline int percpu_counter_init(struct percpu_counter *fbc, s64 amount, gfp_t gfp)
{
	return percpu_counter_init_many(fbc, amount, gfp, 1);
}

/**
 * As percpu_counter_init_many(), but elastic: the threshold grows with the
 * value, and read() is only as close as pcpu_counter_error_bound() says.
 * @since 0.3
 */
static inline int percpu_counter_init_many_elastic(struct percpu_counter *fbc, s64 amount,
						   gfp_t gfp, u32 nr_counters)
{
	(void)gfp;
	return __percpu_counter_init_many(fbc, amount, nr_counters, 0);
}

/** As percpu_counter_init(), but elastic. @since 0.3 */
static inline int percpu_counter_init_elastic(struct percpu_counter *fbc, s64 amount,
					      gfp_t gfp)
{
	return percpu_counter_init_many_elastic(fbc, amount, gfp, 1);
}

/** Releases the per-CPU memory of @p fbc. Idempotent; NULL does nothing. @since 0.1 */
static inline void percpu_counter_destroy(struct percpu_counter *fbc)
{
	pcpu_counter_destroy(fbc ? &fbc->pcpu : (struct pcpu_counter *)0);
}

/** Destroys the @p nr_counters counters of the array @p fbc. Idempotent per counter. @since 0.1 */
static inline void percpu_counter_destroy_many(struct percpu_counter *fbc, u32 nr_counters)
{
	pcpu_counter_destroy_many(fbc ? &fbc->pcpu : (struct pcpu_counter *)0, nr_counters);
}

/**
 * Sets the value of @p fbc: every CPU's pending delta is dropped. Must not
 * run concurrently with other calls on @p fbc. @since 0.1
 */
static inline void percpu_counter_set(struct percpu_counter *fbc, s64 amount)
{
	pcpu_counter_set(fbc ? &fbc->pcpu : (struct pcpu_counter *)0, amount);
}

/** Adds folding at @p batch (batch <= 0 folds every add). @since 0.1 */
PCPU_INLINE void percpu_counter_add_batch(struct percpu_counter *fbc, s64 amount, s32 batch)
{
	pcpu_counter_add_batch(fbc ? &fbc->pcpu : (struct pcpu_counter *)0, amount, batch);
}

/**
 * Adds at the counter's own batch: percpu_counter_batch as it was at init,
 * or the elastic threshold of a counter created elastic. @since 0.1
 */
PCPU_INLINE void percpu_counter_add(struct percpu_counter *fbc, s64 amount)
{
	pcpu_counter_add(fbc ? &fbc->pcpu : (struct pcpu_counter *)0, amount);
}

/** Adds, folding only past PERCPU_COUNTER_LOCAL_BATCH, as the kernel. @since 0.1 */
PCPU_INLINE void percpu_counter_add_local(struct percpu_counter *fbc, s64 amount)
{
	percpu_counter_add_batch(fbc, amount, PERCPU_COUNTER_LOCAL_BATCH);
}

/** Subtracts @p amount, as percpu_counter_add() of -@p amount. @since 0.1 */
PCPU_INLINE void percpu_counter_sub(struct percpu_counter *fbc, s64 amount)
{
	percpu_counter_add(fbc, -amount);
}

/** Subtracts @p amount, as percpu_counter_add_local() of -@p amount. @since 0.1 */
PCPU_INLINE void percpu_counter_sub_local(struct percpu_counter *fbc, s64 amount)
{
	percpu_counter_add_local(fbc, -amount);
}

/** Adds 1, as percpu_counter_add(). @since 0.1 */
PCPU_INLINE void percpu_counter_inc(struct percpu_counter *fbc)
{
	percpu_counter_add(fbc, 1);
}

/** Subtracts 1, as percpu_counter_add(). @since 0.1 */
PCPU_INLINE void percpu_counter_dec(struct percpu_counter *fbc)
{
	percpu_counter_add(fbc, -1);
}

/** The approximate value, one load, as pcpu_counter_read(). @since 0.1 */
static inline s64 percpu_counter_read(struct percpu_counter *fbc)
{
	return pcpu_counter_read(fbc ? &fbc->pcpu : (const struct pcpu_counter *)0);
}

/** The approximate value, or 0 if it is negative. @since 0.1 */
static inline s64 percpu_counter_read_positive(struct percpu_counter *fbc)
{
	s64 ret = percpu_counter_read(fbc);

	return ret >= 0 ? ret : 0;
}

/** The exact value, as pcpu_counter_sum(). @since 0.1 */
static inline s64 __percpu_counter_sum(struct percpu_counter *fbc)
{
	return pcpu_counter_sum(fbc ? &fbc->pcpu : (const struct pcpu_counter *)0);
}

/** The exact value, as __percpu_counter_sum(). @since 0.1 */
static inline s64 percpu_counter_sum(struct percpu_counter *fbc)
{
	return __percpu_counter_sum(fbc);
}

/** The exact value, or 0 if it is negative. @since 0.1 */
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

/**
 * -1, 0 or 1 as the value of @p fbc compares with @p rhs, as
 * __percpu_counter_compare() with percpu_counter_batch. @since 0.1
 */
static inline int percpu_counter_compare(struct percpu_counter *fbc, s64 rhs)
{
	return __percpu_counter_compare(fbc, rhs, percpu_counter_batch);
}

/**
 * Adds @p amount if the result stays at most @p limit (amount > 0) or at
 * least @p limit (amount < 0), as pcpu_counter_limited_add(). @p batch is
 * accepted for compatibility. @return whether it added. @since 0.1
 */
static inline bool __percpu_counter_limited_add(struct percpu_counter *fbc, s64 limit,
						s64 amount, s32 batch)
{
	(void)batch;
	return pcpu_counter_limited_add(fbc ? &fbc->pcpu : (struct pcpu_counter *)0, limit,
					amount);
}

/**
 * Adds @p amount if the result stays within @p limit, as
 * __percpu_counter_limited_add() with percpu_counter_batch.
 * @return whether it added. @since 0.1
 */
static inline bool percpu_counter_limited_add(struct percpu_counter *fbc, s64 limit, s64 amount)
{
	return __percpu_counter_limited_add(fbc, limit, amount, percpu_counter_batch);
}

/** Folds the calling CPU's pending delta. @since 0.1 */
static inline void percpu_counter_sync(struct percpu_counter *fbc)
{
	pcpu_counter_fold_this_cpu(fbc ? &fbc->pcpu : (struct pcpu_counter *)0);
}

/** True if @p fbc is initialised and not destroyed. @since 0.1 */
static inline bool percpu_counter_initialized(struct percpu_counter *fbc)
{
	return pcpu_counter_initialized(fbc ? &fbc->pcpu : (const struct pcpu_counter *)0);
}

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_PERCPU_COUNTER_H */
