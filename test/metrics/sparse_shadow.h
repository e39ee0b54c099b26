/* SPDX-License-Identifier: MIT */
/*
 * The shadow of a sparse native histogram that the sparse tests compare
 * against: an exact tally by (sign, key) at the schema it was made at, with
 * the zero bucket, what lands in no bucket (NaN, infinities), the count and
 * the sum; client_golang's reduction of a key written independently of the
 * library's; a scraped sample read into one; two compared key by key.
 *
 * Shared by the Criterion tests and the plain race programs: define
 * SHADOW_ASSERT(cond, fmt, ...) before including it (cr_assert in a
 * Criterion test, so that every check counts as its assertion; CHECK in a
 * plain program).
 */
#ifndef PCPU_TEST_METRICS_SPARSE_SHADOW_H
#define PCPU_TEST_METRICS_SPARSE_SHADOW_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <percpu/metrics.h>

#ifndef SHADOW_ASSERT
#error "define SHADOW_ASSERT(cond, fmt, ...) before including sparse_shadow.h"
#endif

/* keys -SHADOW_SPAN/2 .. SHADOW_SPAN/2 - 1: 2^-32 .. 2^32 at schema 8 */
#define SHADOW_SPAN 16384

struct shadow {
	uint64_t pos[SHADOW_SPAN], neg[SHADOW_SPAN];
	uint64_t zero, none, count;
	double sum;
};

/* @v observed into @m, keyed at @schema with zero threshold @zt. */
static inline void shadow_add(struct shadow *m, double v, double zt, int32_t schema)
{
	int32_t k;

	m->count++;
	m->sum += v;
	if (isnan(v) || isinf(v)) {
		m->none++;
		return;
	}
	if (fabs(v) <= zt) {
		m->zero++;
		return;
	}
	k = pcpu_metrics_native_key(fabs(v), schema);
	SHADOW_ASSERT(k > -SHADOW_SPAN / 2 && k < SHADOW_SPAN / 2, "key %d out of the model", k);
	(v < 0 ? m->neg : m->pos)[k + SHADOW_SPAN / 2]++;
}

/* @from added into @to (the tallies of threads into their total). */
static inline void shadow_merge(struct shadow *to, const struct shadow *from)
{
	for (int k = 0; k < SHADOW_SPAN; k++) {
		to->pos[k] += from->pos[k];
		to->neg[k] += from->neg[k];
	}
	to->zero += from->zero;
	to->none += from->none;
	to->count += from->count;
	to->sum += from->sum;
}

/* client_golang's rule, written independently: k > 0 ? (k + 1) / 2 : k / 2 (truncated). */
static inline int32_t shadow_go_reduce(int32_t k)
{
	return (k > 0 ? k + 1 : k) / 2;
}

/* @m reduced from schema @from to @to, into @out. */
static inline void shadow_reduce(struct shadow *out, const struct shadow *m, int32_t from,
				 int32_t to)
{
	memset(out, 0, sizeof(*out));
	out->zero = m->zero;
	out->none = m->none;
	out->count = m->count;
	out->sum = m->sum;
	for (int i = 0; i < SHADOW_SPAN; i++) {
		int32_t k = i - SHADOW_SPAN / 2;

		for (int32_t s = from; s > to; s--)
			k = shadow_go_reduce(k);
		out->pos[k + SHADOW_SPAN / 2] += m->pos[i];
		out->neg[k + SHADOW_SPAN / 2] += m->neg[i];
	}
}

/* The observations in @m's keys (the zero bucket not included). */
static inline uint64_t shadow_in_keys(const struct shadow *m)
{
	uint64_t n = 0;

	for (int k = 0; k < SHADOW_SPAN; k++)
		n += m->pos[k] + m->neg[k];
	return n;
}

/* Sparse sample @s read into @m: count, zero bucket, sum and every key. */
static inline void shadow_from_sample(struct shadow *m, const struct pcpu_metric_sample *s)
{
	memset(m, 0, sizeof(*m));
	m->count = s->count;
	m->zero = s->zero_count;
	m->sum = s->dsum;
	for (uint32_t i = 0; i < s->nr_keys; i++) {
		SHADOW_ASSERT(s->keys[i] > -SHADOW_SPAN / 2 && s->keys[i] < SHADOW_SPAN / 2,
			      "key %d out of the model", s->keys[i]);
		(i < s->nr_negative ? m->neg : m->pos)[s->keys[i] + SHADOW_SPAN / 2] =
			s->key_counts[i];
	}
}

/* Every key of @got as in @want (@what names them in a failure). */
static inline void shadow_assert_same(const struct shadow *got, const struct shadow *want,
				      const char *what)
{
	for (int i = 0; i < SHADOW_SPAN; i++) {
		SHADOW_ASSERT(got->pos[i] == want->pos[i], "%s: positive key %d: %llu, want %llu",
			      what, i - SHADOW_SPAN / 2, (unsigned long long)got->pos[i],
			      (unsigned long long)want->pos[i]);
		SHADOW_ASSERT(got->neg[i] == want->neg[i], "%s: negative key %d: %llu, want %llu",
			      what, i - SHADOW_SPAN / 2, (unsigned long long)got->neg[i],
			      (unsigned long long)want->neg[i]);
	}
}

#endif /* PCPU_TEST_METRICS_SPARSE_SHADOW_H */
