/* SPDX-License-Identifier: MIT */
/**
 * @file counter_double.h
 * Counters and gauges that add doubles (prometheus-cpp's
 * Counter::Increment(0.25), client_golang's Add(0.25)), per-CPU: a
 * struct pcpu_counter in fixed point. An add converts its amount to an
 * integer number of units of 1/scale, rounded to the nearest (ties away
 * from zero), and adds that to the counter as pcpu_counter_add() does:
 * lock-free, on this CPU's slot, no shared cacheline written. The
 * exposition shows the exact integer sum divided by the scale (the
 * shortest decimal that reads back as that double), as any scaled counter.
 *
 * Resolution. 1/scale: with the default scale PCPU_COUNTER_DOUBLE_SCALE
 * (10^9), nano-units, so that decimal amounts as 0.1 or 0.25 are counted
 * exactly. The sum is an int64: it holds up to 2^63 - 1 units,
 * 9.22e9 at the default scale (292 years of seconds; pick a smaller scale
 * for larger totals, 1000 for bytes counted to the milli-byte: 9.2e15).
 *
 * Rounding. Each add is off by at most 1/(2 scale) + |amount| 2^-53 (the
 * rounding to a unit, and that of amount * scale as a double); the sum
 * itself is exact in units. After N adds, |exposed - true sum| <=
 * N (1/(2 scale) + max |amount| 2^-53), plus the one rounding of the sum
 * to a double (relative 2^-53). Amounts that are whole units (0.25 at any
 * scale that 4 divides, 0.1 at 10^9) lose nothing.
 *
 * Folding. The counter's per-CPU threshold floor is 32 amounts of 1
 * (32 scale units, at most PCPU_COUNTER_MAX_BATCH), as an integer
 * counter's is 32 adds of 1: adds of fractions and small amounts stay on
 * their CPU. The exposition and pcpu_counter_double_sum() read the exact
 * sum whatever the threshold.
 *
 * Refusals. An add of NaN, of an infinity, of an amount whose units do
 * not fit in +-2^62, or (kind PCPU_METRIC_COUNTER) of a negative amount,
 * adds nothing, returns -EINVAL and is counted
 * (pcpu_counter_double_refused()): a counter never goes down, and no
 * non-finite value can enter the exact sum.
 *
 * Link: pkg-config percpu-metrics.
 */
#ifndef PERCPU_COUNTER_DOUBLE_H
#define PERCPU_COUNTER_DOUBLE_H

#include <errno.h>
#include <stdint.h>

#include <percpu/client.h>
#include <percpu/common.h>
#include <percpu/counter.h>
#include <percpu/metrics.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The default scale: amounts counted in units of 10^-9. @since 0.5 */
#define PCPU_COUNTER_DOUBLE_SCALE INT64_C(1000000000)

/** A counter or gauge of doubles in fixed point. The layout is ABI. @since 0.5 */
struct pcpu_counter_double {
	struct pcpu_counter counter; /**< the sum in units of 1/scale; use the calls */
	double scale;                /**< units per 1 (as a double, for the add) */
	uint64_t refused;            /**< adds refused (atomic) */
	int64_t iscale;              /**< units per 1 */
	uint32_t kind;               /**< PCPU_METRIC_COUNTER or PCPU_METRIC_GAUGE */
	uint32_t reserved;           /**< zero */
};

/**
 * Initialises @p c, value 0, as a counter (@p kind PCPU_METRIC_COUNTER:
 * negative adds refused) or a gauge (PCPU_METRIC_GAUGE: any sign) in units
 * of 1/@p scale (0: PCPU_COUNTER_DOUBLE_SCALE).
 * @return 0; -EINVAL (NULL @p c, another kind, a negative scale, a scale
 *         above 2^53, whose units a double would not hold exactly);
 *         -ENOMEM. @since 0.5
 */
PCPU_EXPORT int pcpu_counter_double_init(struct pcpu_counter_double *c,
					 enum pcpu_metric_kind kind, int64_t scale);

/**
 * Destroys @p c (unregistering it); NULL or zero-filled: nothing.
 * @since 0.5
 */
PCPU_EXPORT void pcpu_counter_double_destroy(struct pcpu_counter_double *c);

/**
 * Registers @p c as the metric @p d, until pcpu_counter_double_destroy():
 * exposed as a counter (NAME_total) or gauge of value sum / scale. @p d's
 * kind must be @p c's, its scale 0 or @p c's.
 * @return 0; what pcpu_counter_register() returns; -EINVAL for another
 *         kind or scale. @since 0.5
 */
PCPU_EXPORT int pcpu_counter_double_register(struct pcpu_counter_double *c,
					     const struct pcpu_metric_desc *d);

/* Internal to the header: counts a refused add. */
PCPU_EXPORT int __pcpu_counter_double_refuse(struct pcpu_counter_double *c);

/**
 * Adds @p amount to @p c: its nearest whole number of units (see the
 * file's comment), on this CPU's slot, lock-free. @return 0, or -EINVAL
 * for an amount refused (NaN, infinite, too large, negative on a counter),
 * which adds nothing and is counted, or a NULL @p c. @since 0.5
 */
PCPU_INLINE int pcpu_counter_double_add(struct pcpu_counter_double *c, double amount)
{
	double units, frac;
	int64_t whole;

	if (pcpu_unlikely(!c))
		return -EINVAL;
	units = amount * c->scale;
	/* NaN fails both comparisons; 2^62 leaves the int64 conversion room */
	if (pcpu_unlikely(!(units < 4611686018427387904.0 && units > -4611686018427387904.0) ||
			  (amount < 0 && c->kind == PCPU_METRIC_COUNTER)))
		return __pcpu_counter_double_refuse(c);
	/* round to nearest, ties away from zero, without libm: frac is exact */
	whole = (int64_t)units;
	frac = units - (double)whole;
	whole += (frac >= 0.5) - (frac <= -0.5);
	pcpu_counter_add(&c->counter, whole);
	return 0;
}

/**
 * The value of @p c: its exact sum in units divided by the scale, as a double; as
 * pcpu_counter_sum(), O(CPUs). @since 0.5
 */
PCPU_EXPORT double pcpu_counter_double_sum(const struct pcpu_counter_double *c);

/** The adds refused on @p c since its init. @since 0.5 */
static inline uint64_t pcpu_counter_double_refused(const struct pcpu_counter_double *c)
{
	return __atomic_load_n(&c->refused, __ATOMIC_RELAXED);
}

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_COUNTER_DOUBLE_H */
