/* SPDX-License-Identifier: MIT */
/*
 * Native histograms' buckets (see <percpu/histogram.h>): the key of a
 * value, as Prometheus and its Go client compute it, and the fine bounds
 * that make a native histogram a classic one underneath. Observations are
 * integers, so native bucket k is, in raw units, the integers up to t_k,
 * the largest v whose key (of v / scale) is <= k. Merged with the classic
 * bounds, those thresholds are the bounds of an ordinary histogram, whose
 * observe is the classic one; each fine bucket lies inside one native
 * bucket and one classic bucket, so both are sums of fine buckets: exact.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <percpu/metrics.h>

#include "kinds/kinds_internal.h"

/* frac_bounds[s][i] = 0.5 * 2^(i / 2^s): where a frexp() fraction passes key i */
static double frac_bounds[PCPU_HISTOGRAM_MAX_SCHEMA + 1][1 << PCPU_HISTOGRAM_MAX_SCHEMA];
static pthread_once_t frac_once = PTHREAD_ONCE_INIT;

static void fill_frac_bounds(void)
{
	for (int s = 1; s <= PCPU_HISTOGRAM_MAX_SCHEMA; s++)
		for (int i = 0; i < 1 << s; i++)
			frac_bounds[s][i] = 0.5 * exp2((double)i / (1 << s));
}

PCPU_EXPORT int32_t pcpu_metrics_native_key(double v, int32_t schema)
{
	int exp;
	double frac = frexp(v, &exp); /* v = frac * 2^exp, 0.5 <= frac < 1 */

	if (schema > 0) {
		/* the first i with frac_bounds[i] >= frac, else n: the next power's first */
		int32_t n = INT32_C(1) << schema, lo = 0, hi = n;

		pthread_once(&frac_once, fill_frac_bounds);
		while (lo < hi) {
			int32_t mid = lo + (hi - lo) / 2;

			if (frac_bounds[schema][mid] >= frac)
				hi = mid;
			else
				lo = mid + 1;
		}
		return lo + (exp - 1) * n;
	}
	/* a power of two is the upper bound of its bucket, 2^(exp - 1)'s */
	int32_t key = exp - (frac == 0.5), div = INT32_C(1) << -schema;

	/* ceil(key / div), for a key of either sign */
	return key > 0 ? (key + div - 1) / div : -((-key) / div);
}

/* The key of raw observation @v, as the exposition computes it. */
static int32_t key_of(int64_t v, int64_t scale, int32_t schema)
{
	return pcpu_metrics_native_key((double)v / (double)scale, schema);
}

/* t_k: the largest v >= @lo with key(v) <= @k, where key(@lo) <= @k. */
static int64_t threshold(int32_t k, int64_t lo, int64_t scale, int32_t schema)
{
	int64_t hi = INT64_MAX;

	if (key_of(hi, scale, schema) <= k)
		return hi;
	while (hi - lo > 1) { /* key(lo) <= k < key(hi) */
		int64_t mid = lo + (hi - lo) / 2;

		if (key_of(mid, scale, schema) <= k)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

int pcpu_native_bounds(int32_t schema, int64_t zero_threshold, int64_t top, int64_t scale,
		       const int64_t *classic, uint32_t nr_classic, int64_t **bounds,
		       uint32_t *nr_bounds)
{
	int64_t *b;
	uint32_t n = 0, c = 0, cap = PCPU_HISTOGRAM_MAX_BOUNDS;

	if (schema < PCPU_HISTOGRAM_MIN_SCHEMA || schema > PCPU_HISTOGRAM_MAX_SCHEMA ||
	    zero_threshold < 0 || top <= zero_threshold)
		return -EINVAL;
	for (uint32_t i = 0; i < nr_classic; i++)
		if (classic[i] < zero_threshold || classic[i] > top)
			return -EINVAL;
	b = malloc(cap * sizeof(*b));
	if (!b)
		return -ENOMEM;
	/* the zero bucket's bound, then each native threshold up to the top's */
	b[n++] = zero_threshold;
	for (int64_t v = zero_threshold; v < top;) {
		int64_t t = threshold(key_of(v + 1, scale, schema), v + 1, scale, schema);

		/* merge the classic bounds below, then t */
		for (; c < nr_classic && classic[c] <= t; c++) {
			if (classic[c] == b[n - 1] || classic[c] == t)
				continue;
			if (n == cap)
				goto too_many;
			b[n++] = classic[c];
		}
		if (n == cap)
			goto too_many;
		b[n++] = t;
		v = t;
	}
	*bounds = b;
	*nr_bounds = n;
	return 0;
too_many:
	free(b);
	return -ERANGE;
}

void pcpu_native_each_key(const struct pcpu_metric_sample *m,
			  void (*fn)(void *arg, int32_t key, uint64_t count), void *arg)
{
	uint32_t last = m->nr_bounds - 1;
	int32_t key = 0;
	uint64_t n = 0;
	bool any = false;

	/* bucket i > 0 lies in bounds[i]'s key; the last (+Inf) in the top bound's */
	for (uint32_t i = 1; i <= m->nr_bounds; i++) {
		int32_t k = key_of(m->bounds[i < m->nr_bounds ? i : last], m->scale > 1 ? m->scale : 1,
				   m->schema);

		if (any && k != key) {
			if (n)
				fn(arg, key, n);
			n = 0;
		}
		key = k;
		any = true;
		n += m->buckets[i];
	}
	if (n)
		fn(arg, key, n);
}

void pcpu_native_each_classic(const struct pcpu_metric_sample *m,
			      void (*fn)(void *arg, int64_t bound, uint64_t cumulative), void *arg)
{
	uint64_t cumulative = 0;
	uint32_t i = 0;

	for (uint32_t c = 0; c < m->nr_classic; c++) {
		for (; i < m->nr_bounds && m->bounds[i] <= m->classic[c]; i++)
			cumulative += m->buckets[i];
		fn(arg, m->classic[c], cumulative);
	}
}
