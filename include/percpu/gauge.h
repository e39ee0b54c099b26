/* SPDX-License-Identifier: MIT */
/**
 * @file gauge.h
 * Set-style gauges: one atomic value, int64 or double, that any thread may
 * set, add to or read at any time, a scrape included (queue depth, pool
 * size, a temperature). For a gauge that many threads move up and down on
 * a hot path, a per-CPU counter registered as PCPU_METRIC_GAUGE scales
 * better; a set-style gauge is one shared cacheline.
 *
 * A gauge needs no initialisation beyond zero-filling or
 * PCPU_GAUGE_INIT()/PCPU_GAUGE_DOUBLE_INIT(), and no destruction unless it
 * is registered. Registered, it is exposed by pcpu_metrics_write() as a
 * gauge (doubles as the shortest decimal that reads back as the same
 * double; NaN and infinities as "NaN", "+Inf", "-Inf"), until unregistered.
 *
 * Concurrency. set, add and get are atomic (relaxed: a gauge orders
 * nothing else) and may overlap each other and everything else. An int64
 * add wraps around in two's complement. Register and unregister may run
 * concurrently with anything but themselves on the same gauge; unregister
 * waits for an exposition in progress, so the memory may be freed after it.
 *
 * Link: pkg-config percpu-metrics.
 */
#ifndef PERCPU_GAUGE_H
#define PERCPU_GAUGE_H

#include <stdint.h>

#include <percpu/common.h>
#include <percpu/metrics.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Internal to the header: 8-byte alignment for the atomic value, which
 * 32-bit x86 would otherwise align to 4 (and split across cachelines).
 */
#if defined(__GNUC__)
#define PCPU_GAUGE_ALIGNED __attribute__((aligned(8)))
#else
#define PCPU_GAUGE_ALIGNED
#endif

/** An int64 set-style gauge. The layout is ABI. @since 0.3 */
struct pcpu_gauge {
	int64_t value PCPU_GAUGE_ALIGNED; /**< the value; use the calls */
	uint32_t flags;  /**< PCPU_GAUGE_F_* */
	uint32_t reserved; /**< zero */
};

/** A double set-style gauge. The layout is ABI. @since 0.3 */
struct pcpu_gauge_double {
	double value PCPU_GAUGE_ALIGNED; /**< the value; use the calls */
	uint32_t flags;  /**< PCPU_GAUGE_F_* */
	uint32_t reserved; /**< zero */
};

/** Flag: registered as a metric. @since 0.3 */
#define PCPU_GAUGE_F_METRIC 1u

/** Static initialiser of an int64 gauge holding @p v. @since 0.3 */
#define PCPU_GAUGE_INIT(v) { (v), 0, 0 }
/** Static initialiser of a double gauge holding @p v. @since 0.3 */
#define PCPU_GAUGE_DOUBLE_INIT(v) { (v), 0, 0 }

/** Sets @p g to @p v. @since 0.3 */
static inline void pcpu_gauge_set(struct pcpu_gauge *g, int64_t v)
{
	__atomic_store_n(&g->value, v, __ATOMIC_RELAXED);
}

/** Adds @p delta (any sign) to @p g; returns the new value. @since 0.3 */
static inline int64_t pcpu_gauge_add(struct pcpu_gauge *g, int64_t delta)
{
	return __atomic_add_fetch(&g->value, delta, __ATOMIC_RELAXED);
}

/** The value of @p g. @since 0.3 */
static inline int64_t pcpu_gauge_get(const struct pcpu_gauge *g)
{
	return __atomic_load_n(&g->value, __ATOMIC_RELAXED);
}

/** Sets @p g to @p v. @since 0.3 */
static inline void pcpu_gauge_double_set(struct pcpu_gauge_double *g, double v)
{
	__atomic_store(&g->value, &v, __ATOMIC_RELAXED);
}

/** The value of @p g. @since 0.3 */
static inline double pcpu_gauge_double_get(const struct pcpu_gauge_double *g)
{
	double v;

	__atomic_load(&g->value, &v, __ATOMIC_RELAXED);
	return v;
}

/**
 * Adds @p delta to @p g in one atomic step (a compare-and-swap loop: no
 * add is lost to a concurrent one); returns the new value. @since 0.3
 */
static inline double pcpu_gauge_double_add(struct pcpu_gauge_double *g, double delta)
{
	double old = pcpu_gauge_double_get(g), sum;

	do
		sum = old + delta;
	while (!__atomic_compare_exchange(&g->value, &old, &sum, 1, __ATOMIC_RELAXED,
					  __ATOMIC_RELAXED));
	return sum;
}

/**
 * Registers @p g as the metric @p d, whose kind must be PCPU_METRIC_GAUGE,
 * until pcpu_gauge_unregister(). A gauge is registered at most once.
 *
 * Or PCPU_METRIC_INFO: an info metric, exposed as name_info with @p d's
 * labels and the value 1 whatever @p g holds (the gauge is only its
 * handle), e.g. { .name = "myapp_build", .kind = PCPU_METRIC_INFO,
 * .labels = (const char *const[]){ "version", "1.2.0", NULL } }.
 * @p d's scale (since 0.4) divides the exposed value as for a counter
 * (see struct pcpu_metric_desc).
 * @return 0; -EINVAL (NULL @p g or @p d, another kind, a bad name, unit or
 *         label, a negative scale, a scale above 1 on an info metric);
 *         -EEXIST (registered already, or the name and labels are);
 *         -ENOMEM. @since 0.3
 */
PCPU_EXPORT int pcpu_gauge_register(struct pcpu_gauge *g, const struct pcpu_metric_desc *d);

/** Unregisters @p g if it is registered; NULL: nothing. @since 0.3 */
PCPU_EXPORT void pcpu_gauge_unregister(struct pcpu_gauge *g);

/**
 * As pcpu_gauge_register(), for a double gauge (not an info metric); a
 * scale other than 0 or 1 is -EINVAL (a double needs none). @since 0.3
 */
PCPU_EXPORT int pcpu_gauge_double_register(struct pcpu_gauge_double *g,
					   const struct pcpu_metric_desc *d);

/** As pcpu_gauge_unregister(), for a double gauge. @since 0.3 */
PCPU_EXPORT void pcpu_gauge_double_unregister(struct pcpu_gauge_double *g);

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_GAUGE_H */
