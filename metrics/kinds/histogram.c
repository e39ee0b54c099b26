/* SPDX-License-Identifier: MIT */
/*
 * Histograms (see <percpu/histogram.h>): a stat set with one item per
 * bucket (the last one +Inf) and two that 0.4's inline observe put the sum
 * in (its low bits, and the rest), and a counter that 0.5's puts it in,
 * registered as a metric. Each bucket only ever gains +1, so every
 * snapshot has non-negative counts, cumulative buckets that never
 * decrease, and a count (their sum) that equals the +Inf cumulative bucket
 * by construction. While observations are >= 0 every part of the sum only
 * grows (a counter's exact value is its base and its slots' values, each
 * only added to), so the sum a snapshot rebuilds never decreases either.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/histogram.h>

#include "kinds/kinds_internal.h"
#include "list/list_internal.h"

/* struct pcpu_histogram's flags: it has native buckets. */
#define PCPU_HISTOGRAM_NATIVE 1u

static int check_desc(const struct pcpu_histogram_desc *d)
{
	if (!d || d->nr_bounds > PCPU_HISTOGRAM_MAX_BOUNDS || d->scale < 0)
		return -EINVAL;
	if (d->nr_bounds && !d->bounds)
		return -EINVAL;
	for (uint32_t i = 1; i < d->nr_bounds; i++)
		if (d->bounds[i] <= d->bounds[i - 1])
			return -EINVAL;
	return pcpu_metrics_check_name(NULL, d->name, d->unit, PCPU_METRIC_HISTOGRAM);
}

struct pcpu_stat *pcpu_histogram_make_set(uint32_t nr_bounds)
{
	uint32_t n = nr_bounds + 3;
	struct pcpu_stat_item *items = calloc(n, sizeof(*items));
	char (*names)[16] = calloc(n, sizeof(*names));
	struct pcpu_stat *set = NULL;

	if (items && names) {
		for (uint32_t i = 0; i < n; i++) {
			snprintf(names[i], sizeof(names[i]),
				 i <= nr_bounds ? "b%u" : i == nr_bounds + 1 ? "sum" : "sum_hi", i);
			/*
			 * Observations touch a bucket and the sum: keep them
			 * together. Nothing reads these items but exact
			 * snapshots, so read()'s accuracy is of no use here:
			 * the largest threshold from the start makes a CPU fold
			 * only when a word's pending delta would pass it.
			 */
			items[i] = (struct pcpu_stat_item){ .name = names[i], .group = 1,
							    .floor = PCPU_STAT_MAX_THRESH };
		}
		set = pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items, .nr_items = n });
	} else {
		errno = ENOMEM;
	}
	free(items);
	free(names);
	return set;
}

/*
 * The sum's own counter: one per-CPU add of 64 bits an observation (0.4's
 * two stat items took two of 32 bits for values of 2^16 and more), folded
 * at a fixed batch so large that folds are rare (see histogram.h).
 */
int pcpu_histogram_sum_init(struct pcpu_histogram *h)
{
	int err;

	/*
	 * A line of its own: on i386 an int64_t is 4-byte aligned, and a
	 * counter from malloc (16) could have a 64-bit field across two cache
	 * lines, whose locked add is a split lock (the kernel slows the thread
	 * down for it: i386's metrics-race timed out).
	 */
	h->sum = aligned_alloc(64, (sizeof(*h->sum) + 63) & ~(size_t)63);
	if (!h->sum)
		return -ENOMEM;
	err = pcpu_counter_init_opts(h->sum, 0, &(struct pcpu_counter_options){
						       .batch = PCPU_HISTOGRAM_SUM_BATCH });
	if (err) {
		free(h->sum);
		h->sum = NULL;
	}
	return err;
}

void pcpu_histogram_sum_free(struct pcpu_histogram *h)
{
	if (h->sum)
		pcpu_counter_destroy(h->sum);
	free(h->sum);
	h->sum = NULL;
}

/* @h's exemplars as a scrape shows them; NULL if it never had one. */
static const struct pcpu_exemplar *exemplars(struct pcpu_histogram *h)
{
	struct pcpu_exemplars *st = __atomic_load_n(&h->exemplars, __ATOMIC_ACQUIRE);

	return st ? pcpu_exemplars_show(st, h->scale) : NULL;
}

int pcpu_histogram_sparse_check(const struct pcpu_histogram_sparse *s)
{
	if (s->schema < PCPU_HISTOGRAM_MIN_SCHEMA || s->schema > PCPU_HISTOGRAM_MAX_SCHEMA ||
	    !(s->zero_threshold >= 0 && s->zero_threshold <= 1.7976931348623157e308) ||
	    s->max_buckets > PCPU_HISTOGRAM_SPARSE_MAX_BUCKETS || s->min_reset_ns < 0 ||
	    s->sum_scale < 0 || s->sum_scale > (INT64_C(1) << 53))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(s->reserved) / sizeof(s->reserved[0]); i++)
		if (s->reserved[i])
			return -EINVAL;
	return 0;
}

int pcpu_histogram_sparse_init(struct pcpu_histogram *h, const struct pcpu_histogram_sparse *s)
{
	return pcpu_sparse_new(&(struct pcpu_sparse_shape){ .schema = s->schema,
							    .max_buckets = s->max_buckets,
							    .zero_threshold = s->zero_threshold,
							    .min_reset_ns = s->min_reset_ns,
							    .sum_scale = s->sum_scale,
							    .scale = h->scale },
			       &h->sparse);
}

/*
 * The sample of sparse histogram @h (pcpu_sparse_fill()), with what 0.4's
 * inline observe put in @h's set: its +Inf bucket and the sum's two items.
 */
static int sparse_fill(struct pcpu_histogram *h, struct pcpu_metric_sample *smp,
		       uint64_t *inf, bool keys)
{
	int64_t legacy[3];
	int err = pcpu_stat_snapshot(h->set, legacy, NULL);
	int64_t sum = (int64_t)((uint64_t)legacy[1] +
				((uint64_t)legacy[2] << PCPU_HISTOGRAM_SUM_SHIFT));

	if (err)
		return err;
	return pcpu_sparse_fill(h->sparse, legacy[0] > 0 ? (uint64_t)legacy[0] : 0,
				(double)sum / (double)h->scale, smp, inf, keys);
}

PCPU_EXPORT void __pcpu_histogram_observe_sparse(struct pcpu_histogram *h, int64_t value)
{
	pcpu_sparse_observe(h->sparse,
			    h->scale > 1 ? (double)value / (double)h->scale : (double)value);
}

static int histogram_sample(void *obj, unsigned int item, struct pcpu_metric_sample *smp,
			    uint64_t *buckets)
{
	(void)item;
	return pcpu_histogram_fill(obj, smp, buckets);
}

int pcpu_histogram_fill(struct pcpu_histogram *h, struct pcpu_metric_sample *smp,
			uint64_t *buckets)
{
	int ret;

	if (h->sparse) {
		ret = sparse_fill(h, smp, buckets, true);
		if (!ret)
			smp->exemplars = exemplars(h);
		return ret;
	}
	ret = pcpu_histogram_snapshot(h, buckets, &smp->sum);
	if (ret)
		return ret;
	smp->nr_bounds = h->nr_bounds;
	smp->bounds = h->bounds;
	smp->buckets = buckets;
	smp->count = 0;
	for (uint32_t b = 0; b <= h->nr_bounds; b++)
		smp->count += buckets[b];
	smp->scale = h->scale;
	smp->exemplars = exemplars(h);
	if (h->flags & PCPU_HISTOGRAM_NATIVE) {
		smp->flags |= PCPU_METRIC_SAMPLE_F_NATIVE;
		smp->schema = h->schema;
		smp->classic = h->classic;
		smp->nr_classic = h->nr_classic;
	}
	return 0;
}

static const struct metric_source pcpu_histogram_source = { .sample = histogram_sample };

/*
 * The search index (struct pcpu_histogram's @c index): per cell of values
 * with the same most significant bit (msb) and @bits bits below it, the
 * first bucket whose bound is >= the least value of the cell. A value
 * >= 1 is at least its cell's least, so its bucket is at or after that
 * entry; the observe passes the bounds below it from there.
 */
static int make_index(struct pcpu_histogram *h, uint32_t bits)
{
	uint32_t cells = UINT32_C(63) << bits;
	uint16_t *index = malloc(cells * sizeof(*index));

	if (!index)
		return -ENOMEM;
	for (uint32_t c = 0, at = 0; c < cells; c++) {
		uint32_t msb = c >> bits;
		uint64_t top = (UINT64_C(1) << bits) | (c & ((UINT32_C(1) << bits) - 1));
		/* the least value whose msb and next bits are the cell's */
		int64_t least = (int64_t)(msb >= bits ? top << (msb - bits) : top >> (bits - msb));

		/* cells ascend with their least values: the bucket only moves up */
		while (at < h->nr_bounds && h->bounds[at] < least)
			at++;
		index[c] = (uint16_t)at;
	}
	h->index = index;
	h->index_bits = bits;
	return 0;
}

int pcpu_histogram_layout(struct pcpu_histogram *h, const int64_t *bounds, uint32_t nr_bounds,
			  int64_t scale, const struct pcpu_histogram_native *native)
{
	int64_t *classic = NULL, *merged;
	uint32_t nr_merged = nr_bounds;
	int err;

	memset(h, 0, sizeof(*h));
	h->scale = scale > 1 ? scale : 1;
	if (nr_bounds) {
		classic = malloc(nr_bounds * sizeof(*classic));
		if (!classic)
			return -ENOMEM;
		memcpy(classic, bounds, nr_bounds * sizeof(*classic));
	}
	merged = classic;
	if (native) {
		err = native->reserved ? -EINVAL :
		      pcpu_native_bounds(native->schema, native->zero_threshold,
					 native->max ? native->max : INT64_MAX, h->scale, classic,
					 nr_bounds, &merged, &nr_merged);
		if (err) {
			free(classic);
			return err;
		}
		h->flags = PCPU_HISTOGRAM_NATIVE;
		h->schema = native->schema;
	}
	h->classic = classic;
	h->nr_classic = nr_bounds;
	h->bounds = merged;
	h->nr_bounds = nr_merged;
	if (nr_merged >= PCPU_HISTOGRAM_INDEXED_BOUNDS) {
		/* a native schema's buckets per power of two, at most 128 cells of one */
		uint32_t bits = native && native->schema + 1 > 4 ?
					(uint32_t)(native->schema + 1 < 7 ? native->schema + 1 : 7) :
					4;

		err = make_index(h, bits);
		if (err) {
			pcpu_histogram_layout_free(h);
			return err;
		}
	}
	return 0;
}

void pcpu_histogram_layout_free(struct pcpu_histogram *h)
{
	if (h->bounds != h->classic)
		free((void *)h->bounds);
	free((void *)h->classic);
	free((void *)h->index);
	h->bounds = h->classic = NULL;
	h->index = NULL;
}

/* A histogram of @d, with sparse buckets per @s if not NULL. */
static struct pcpu_histogram *create(const struct pcpu_histogram_desc *d,
				     const struct pcpu_histogram_sparse *s)
{
	struct pcpu_histogram *h;
	int err = check_desc(d);

	if (!err && s && (d->nr_bounds || d->native || pcpu_histogram_sparse_check(s)))
		err = -EINVAL;
	if (err) {
		errno = -err;
		return NULL;
	}
	h = malloc(sizeof(*h));
	if (!h) {
		errno = ENOMEM;
		return NULL;
	}
	err = pcpu_histogram_layout(h, d->bounds, d->nr_bounds, d->scale, d->native);
	if (err) {
		free(h);
		errno = -err;
		return NULL;
	}
	h->set = pcpu_histogram_make_set(h->nr_bounds);
	/* a sparse histogram has no sum counter: that routes the inline observe */
	err = !h->set ? -errno : s ? pcpu_histogram_sparse_init(h, s) : pcpu_histogram_sum_init(h);
	err = !err ? pcpu_metrics_add(d->registry,
					&(struct metric_spec){ .name = d->name, .help = d->help,
							       .unit = d->unit,
							       .kind = PCPU_METRIC_HISTOGRAM,
							       .labels = d->labels,
							       .source = &pcpu_histogram_source,
							       .obj = h },
					1)
		   : err;
	if (err) {
		pcpu_sparse_free(h->sparse);
		pcpu_histogram_sum_free(h);
		pcpu_stat_destroy(h->set);
		pcpu_histogram_layout_free(h);
		free(h);
		errno = -err;
		return NULL;
	}
	return h;
}

PCPU_EXPORT struct pcpu_histogram *pcpu_histogram_create(const struct pcpu_histogram_desc *d)
{
	return create(d, NULL);
}

PCPU_EXPORT struct pcpu_histogram *pcpu_histogram_create_sparse(const struct pcpu_histogram_desc *d,
								 const struct pcpu_histogram_sparse *s)
{
	if (!s) {
		errno = EINVAL;
		return NULL;
	}
	return create(d, s);
}

PCPU_EXPORT int pcpu_histogram_observe_double(struct pcpu_histogram *h, double v)
{
	double units, whole;

	if (!h)
		return -EINVAL;
	if (h->sparse) {
		pcpu_sparse_observe(h->sparse, v);
		return 0;
	}
	if (v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308)
		return -EINVAL;
	/* nearest, ties away from zero: round() */
	units = v * (double)h->scale;
	whole = round(units);
	if (!(whole < 9223372036854775808.0 && whole >= -9223372036854775808.0))
		return -ERANGE;
	pcpu_histogram_observe(h, (int64_t)whole);
	return 0;
}

PCPU_EXPORT void pcpu_histogram_destroy(struct pcpu_histogram *h)
{
	if (!h)
		return;
	pcpu_metrics_forget(h);
	pcpu_exemplars_free(h->exemplars);
	pcpu_sparse_free(h->sparse);
	pcpu_stat_destroy(h->set);
	pcpu_histogram_sum_free(h);
	pcpu_histogram_layout_free(h);
	free(h);
}

PCPU_EXPORT int pcpu_histogram_snapshot(struct pcpu_histogram *h, uint64_t *counts, int64_t *sum)
{
	int64_t stack[64], *values = stack;
	uint32_t n;
	int err;

	if (!h || !counts)
		return -EINVAL;
	if (h->sparse) {
		struct pcpu_metric_sample smp = { 0 };

		/* one bucket, +Inf: the count */
		err = sparse_fill(h, &smp, counts, false);
		if (!err && sum)
			*sum = smp.sum;
		return err;
	}
	n = h->nr_bounds + 3;
	if (n > sizeof(stack) / sizeof(stack[0])) {
		values = malloc(n * sizeof(*values));
		if (!values)
			return -ENOMEM;
	}
	err = pcpu_stat_snapshot(h->set, values, NULL);
	if (!err) {
		for (uint32_t i = 0; i <= h->nr_bounds; i++)
			counts[i] = values[i] > 0 ? (uint64_t)values[i] : 0;
		/*
		 * the counter, and 0.4's inline observe's low + high * 2^shift,
		 * modulo 2^64 as the sum of int64 values is
		 */
		if (sum)
			*sum = (int64_t)((uint64_t)pcpu_counter_sum(h->sum) +
					 (uint64_t)values[h->nr_bounds + 1] +
					 ((uint64_t)values[h->nr_bounds + 2] << PCPU_HISTOGRAM_SUM_SHIFT));
	}
	if (values != stack)
		free(values);
	return err;
}

PCPU_EXPORT uint32_t pcpu_histogram_nr_buckets(const struct pcpu_histogram *h)
{
	return h ? h->nr_bounds + 1 : 0;
}

PCPU_EXPORT const int64_t *pcpu_histogram_bounds(const struct pcpu_histogram *h)
{
	return h ? h->bounds : NULL;
}

PCPU_EXPORT int pcpu_histogram_observe_exemplar(struct pcpu_histogram *h, int64_t value,
						const char *const *labels)
{
	struct pcpu_exemplars *st;

	if (!h)
		return -EINVAL;
	pcpu_histogram_observe(h, value);
	if (pcpu_exemplar_check_labels(labels))
		return -EINVAL;
	st = pcpu_exemplars_attach(&h->exemplars, h->nr_bounds + 1);
	if (!st)
		return -ENOMEM;
	/* the bucket the observe chose */
	return pcpu_exemplars_put(st, __pcpu_histogram_bucket(h, value), labels, (double)value);
}
