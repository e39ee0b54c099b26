/* SPDX-License-Identifier: MIT */
/*
 * Summaries (see <percpu/summary.h>): DDSketch on the native histogram's
 * buckets, one histogram per age bucket, merged at read.
 *
 * The sketch. A native histogram of schema s has buckets of integers
 * [lo, hi] inside one key's range (2^((k - 1) / 2^s), 2^(k / 2^s)] (times
 * the scale), so hi / lo < gamma = 2^(2^-s) (native.c). Reporting such a
 * bucket as 2 lo hi / (lo + hi) puts it within (hi - lo) / (hi + lo) <
 * (gamma - 1) / (gamma + 1) of every value in the bucket: DDSketch's
 * bound, alpha = (gamma - 1) / (gamma + 1). So the schema is the coarsest
 * whose alpha is at most the one asked, and the rank's bucket gives the
 * quantile. The observe is pcpu_histogram_observe(), the one rule.
 *
 * The age buckets. Histograms only ever grow (stat-set slots are
 * monotone), so none is ever reset: ring slot j receives the observations
 * of the periods j, j + R, j + 2R, ... (R = age buckets + 1), chosen by the
 * clock alone, and the reader subtracts what a slot held before its
 * current period (its base). A read at period E merges the slots of
 * periods E - R + 2 .. E, leaving out the one of E - R + 1, which is idle
 * (nothing was written to it since period E - R + 1 ended, but a late
 * observer that read the clock before). A slot's base is what the
 * previous read saw of it: exact when that read ran after the slot's
 * previous period ended and before its current one began, which holds
 * when reads come at least once per max_age (R - 1 periods). Observers
 * read the clock and write one shared word once a period (the period's
 * slot, cached); the rest is the per-CPU observe.
 *
 * Label families of summaries (family.c). The family holds a prototype,
 * the sketch without storage (pcpu_summary_proto(): layout, quantiles,
 * window), and makes each child like it (pcpu_summary_new_like()): the
 * child shares the prototype's bounds and quantiles and owns its ring and
 * the readers' state; its window starts at its creation. A child is not
 * registered: the family's walk fills its samples (pcpu_summary_fill()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <percpu/histogram.h>
#include <percpu/summary.h>

#include "kinds/kinds_internal.h"
#include "kinds/summary_internal.h"
#include "list/list_internal.h"

/* The shortest max_age: below it the coarse clock's ticks (1-10 ms) are the periods. */
#define MIN_MAX_AGE_NS INT64_C(1000000)

struct pcpu_summary {
	/* the layout every ring slot shares: bounds, search index, scale, schema */
	struct pcpu_histogram layout;
	struct pcpu_histogram *ring; /* nr_ring histograms, each with a stat set of its own */
	uint32_t nr_ring;            /* age buckets + 1; 1 without a window */
	uint32_t nr_buckets;         /* layout.nr_bounds + 1 */
	uint64_t (*clock)(void);     /* ns; NULL without a window */
	uint64_t t0;                 /* the clock at creation: period 0 begins */
	uint64_t period;             /* max_age / age buckets, ns */
	/*
	 * The latest period an observer has seen, << 8, | its ring slot:
	 * read-mostly (written once a period), so that an observe multiplies
	 * to check it rather than divides.
	 */
	uint64_t current;
	/*
	 * The layout and the quantiles are a label family's prototype's
	 * (pcpu_summary_new_like()): not freed with this summary.
	 */
	bool shared;
	double alpha;                /* the schema's */
	int64_t min, max;            /* as described (max: INT64_MAX for 0) */
	uint32_t nr_quantiles;
	double *quantiles;
	/*
	 * The readers' state, under the metrics lock (observers never take
	 * it): a scrape holds it already, and its fork handlers cover every
	 * reader ([metrics-fork]).
	 */
	int64_t read_period;         /* the period of the last read */
	int64_t *base_period;        /* per slot: the period its base is the start of */
	uint64_t *base;              /* nr_ring x nr_buckets: each slot's counts at that start */
	uint64_t *seen;              /* nr_ring x nr_buckets: each slot's counts at the last read */
	uint64_t *now;               /* nr_buckets: one slot's counts, read now */
	uint64_t *window;            /* nr_buckets: the window's counts */
	/* the exposition's values of @quantiles, under the metrics lock */
	double *exposed;
};

static uint64_t coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t (*clock_of_new)(void) = coarse_ns;

#ifdef PCPU_TEST_HOOKS
void pcpu_summary_debug_clock(uint64_t (*fn)(void))
{
	clock_of_new = fn ? fn : coarse_ns;
}
#endif

/* The relative accuracy of native schema @schema: (gamma - 1) / (gamma + 1). */
static double alpha_of(int32_t schema)
{
	double gamma = exp2(exp2(-schema));

	return (gamma - 1) / (gamma + 1);
}

/* The coarsest schema whose alpha is at most @alpha; above the finest: MAX + 1. */
static int32_t schema_for(double alpha)
{
	int32_t s = PCPU_HISTOGRAM_MIN_SCHEMA;

	while (s <= PCPU_HISTOGRAM_MAX_SCHEMA && alpha_of(s) > alpha)
		s++;
	return s;
}

/* What pcpu_summary_create() checks but the name, help, unit, labels and registry. */
int pcpu_summary_check_sketch(const struct pcpu_summary_desc *d)
{
	if (!d || d->nr_quantiles > PCPU_SUMMARY_MAX_QUANTILES ||
	    (d->nr_quantiles && !d->quantiles) || d->age_buckets > PCPU_SUMMARY_MAX_AGE_BUCKETS ||
	    !(d->alpha == 0 || (d->alpha >= PCPU_SUMMARY_MIN_ALPHA && d->alpha < 1)) ||
	    d->min < 0 || d->scale < 0 || (d->max && d->max <= d->min) ||
	    (d->max_age_ns != 0 && d->max_age_ns != PCPU_SUMMARY_FOREVER &&
	     d->max_age_ns < MIN_MAX_AGE_NS))
		return -EINVAL;
	for (uint32_t i = 0; i < d->nr_quantiles; i++)
		if (!(d->quantiles[i] > 0 && d->quantiles[i] < 1) ||
		    (i && !(d->quantiles[i] > d->quantiles[i - 1])))
			return -EINVAL;
	if (d->alpha && schema_for(d->alpha) > PCPU_HISTOGRAM_MAX_SCHEMA)
		return -EINVAL;
	return 0;
}

static int check_desc(const struct pcpu_summary_desc *d)
{
	int err = pcpu_summary_check_sketch(d);

	return err ? err : pcpu_metrics_check_name(NULL, d->name, d->unit, PCPU_METRIC_SUMMARY);
}

/*
 * The native layout of @d into @s: the schema for its alpha, or the
 * finest that fits. 0, -ERANGE or -ENOMEM.
 */
static int make_layout(struct pcpu_summary *s, const struct pcpu_summary_desc *d)
{
	struct pcpu_histogram_native nat = { .zero_threshold = d->min, .max = d->max };
	int32_t schema = d->alpha ? schema_for(d->alpha) : PCPU_HISTOGRAM_MAX_SCHEMA;
	int err;

	for (;; schema--) {
		nat.schema = schema;
		err = pcpu_histogram_layout(&s->layout, NULL, 0, d->scale, &nat);
		/* with no alpha asked, the next coarser schema until one fits */
		if (err != -ERANGE || d->alpha || schema == PCPU_HISTOGRAM_MIN_SCHEMA)
			break;
	}
	if (!err)
		s->alpha = alpha_of(s->layout.schema);
	return err;
}

static int64_t period_at(const struct pcpu_summary *s, uint64_t now)
{
	return now > s->t0 ? (int64_t)((now - s->t0) / s->period) : 0;
}

/* The period that ring slot @j holds at period @e: the latest <= @e of its own. */
static int64_t slot_period(const struct pcpu_summary *s, uint32_t j, int64_t e)
{
	return e - ((e - (int64_t)j) % (int64_t)s->nr_ring + (int64_t)s->nr_ring) %
			   (int64_t)s->nr_ring;
}

/*
 * Merges the window's counts into s->window (when @window) and returns the
 * count of every observation, their sum in *@sum. Under the metrics lock.
 */
static int read_ring(struct pcpu_summary *s, bool window, uint64_t *count, int64_t *sum)
{
	int64_t e = s->clock ? period_at(s, s->clock()) : 0;
	uint32_t nb = s->nr_buckets, idle = (uint32_t)((e + 1) % s->nr_ring);
	uint64_t total = 0, sum_all = 0;

	if (e < s->read_period) /* a test clock set back: keep periods monotone */
		e = s->read_period;
	if (window)
		memset(s->window, 0, nb * sizeof(*s->window));
	for (uint32_t j = 0; j < s->nr_ring; j++) {
		uint64_t *base = &s->base[(size_t)j * nb], *seen = &s->seen[(size_t)j * nb];
		int64_t slot_sum, pj = slot_period(s, j, e);
		int err = pcpu_histogram_snapshot(&s->ring[j], s->now, &slot_sum);

		if (err)
			return err;
		if (s->base_period[j] != pj) {
			/* reused since its base: it starts where the last read saw it */
			memcpy(base, seen, nb * sizeof(*base));
			s->base_period[j] = pj;
		}
		memcpy(seen, s->now, nb * sizeof(*seen));
		sum_all += (uint64_t)slot_sum;
		for (uint32_t b = 0; b < nb; b++) {
			total += s->now[b];
			if (window && (s->nr_ring == 1 || j != idle))
				s->window[b] += s->now[b] > base[b] ? s->now[b] - base[b] : 0;
		}
	}
	s->read_period = e;
	if (count)
		*count = total;
	if (sum)
		*sum = (int64_t)sum_all;
	return 0;
}

/*
 * The value reported for the observation of rank max(1, ceil(@q n)) of the
 * @n in s->window, exposed units: its bucket's, as the head of this file
 * says; NaN for @n = 0.
 */
static double window_quantile(const struct pcpu_summary *s, double q, uint64_t n)
{
	const int64_t *bounds = s->layout.bounds;
	uint32_t last = s->nr_buckets - 1, b = 0;
	double rank = ceil(q * (double)n), scale = (double)s->layout.scale, lo, hi;
	uint64_t r = rank < 1 ? 1 : rank > (double)n ? n : (uint64_t)rank, cumulative = 0;

	if (n == 0)
		return NAN;
	for (; b < last; b++) {
		cumulative += s->window[b];
		if (cumulative >= r)
			break;
	}
	if (b == 0) /* the zero bucket: values <= min */
		return (double)s->min / scale;
	if (b == last) /* above the top bucket: values > max */
		return (double)s->max / scale;
	lo = (double)bounds[b - 1] + 1;
	hi = (double)bounds[b];
	return 2 * lo * hi / (lo + hi) / scale;
}

static uint64_t window_total(const struct pcpu_summary *s)
{
	uint64_t n = 0;

	for (uint32_t b = 0; b < s->nr_buckets; b++)
		n += s->window[b];
	return n;
}

/* Under the metrics lock: a scrape's (the summary's or its family's walk). */
int pcpu_summary_fill(struct pcpu_summary *s, struct pcpu_metric_sample *smp)
{
	int err = read_ring(s, true, &smp->count, &smp->sum);

	if (!err) {
		uint64_t n = window_total(s);

		for (uint32_t i = 0; i < s->nr_quantiles; i++)
			s->exposed[i] = window_quantile(s, s->quantiles[i], n);
	}
	smp->scale = s->layout.scale;
	smp->nr_quantiles = s->nr_quantiles;
	smp->quantiles = s->quantiles;
	smp->quantile_values = s->exposed;
	return err;
}

static int summary_sample(void *obj, unsigned int item, struct pcpu_metric_sample *smp,
			  uint64_t *buckets)
{
	(void)item;
	(void)buckets;
	return pcpu_summary_fill(obj, smp);
}

static const struct metric_source summary_source = { .sample = summary_sample };

static void free_summary(struct pcpu_summary *s)
{
	for (uint32_t j = 0; s->ring && j < s->nr_ring; j++) {
		pcpu_histogram_sum_free(&s->ring[j]);
		pcpu_stat_destroy(s->ring[j].set);
	}
	if (!s->shared) {
		pcpu_histogram_layout_free(&s->layout);
		free(s->quantiles);
	}
	free(s->ring);
	free(s->base_period);
	free(s->base);
	free(s->seen);
	free(s->now);
	free(s->window);
	free(s->exposed);
	free(s);
}

/*
 * The sketch of @d: layout, quantiles, window; no observation storage
 * (build_ring()). 0 or a negative errno.
 */
static int build_shape(struct pcpu_summary *s, const struct pcpu_summary_desc *d)
{
	int64_t max_age = d->max_age_ns ? d->max_age_ns : PCPU_SUMMARY_DEFAULT_MAX_AGE_NS;
	uint32_t ages = d->age_buckets ? d->age_buckets : PCPU_SUMMARY_DEFAULT_AGE_BUCKETS;
	int err;

	s->min = d->min;
	s->max = d->max ? d->max : INT64_MAX;
	s->nr_quantiles = d->nr_quantiles;
	s->nr_ring = max_age == PCPU_SUMMARY_FOREVER ? 1 : ages + 1;
	if (s->nr_ring > 1) {
		s->clock = clock_of_new;
		s->period = (uint64_t)max_age / ages;
	}
	err = make_layout(s, d);
	if (err)
		return err;
	s->nr_buckets = s->layout.nr_bounds + 1;
	s->quantiles = malloc((d->nr_quantiles + 1) * sizeof(*s->quantiles));
	if (!s->quantiles)
		return -ENOMEM;
	if (d->nr_quantiles)
		memcpy(s->quantiles, d->quantiles, d->nr_quantiles * sizeof(*s->quantiles));
	return 0;
}

/* The age buckets' histograms and the readers' state of @s's shape; 0 or -ENOMEM. */
static int build_ring(struct pcpu_summary *s)
{
	size_t nb = s->nr_buckets;
	int err;

	if (s->clock)
		s->t0 = s->clock();
	s->ring = calloc(s->nr_ring, sizeof(*s->ring));
	s->exposed = calloc(s->nr_quantiles + 1, sizeof(*s->exposed));
	s->base_period = calloc(s->nr_ring, sizeof(*s->base_period));
	s->base = calloc(s->nr_ring * nb, sizeof(*s->base));
	s->seen = calloc(s->nr_ring * nb, sizeof(*s->seen));
	s->now = calloc(nb, sizeof(*s->now));
	s->window = calloc(nb, sizeof(*s->window));
	if (!s->ring || !s->exposed || !s->base_period || !s->base || !s->seen || !s->now ||
	    !s->window)
		return -ENOMEM;
	for (uint32_t j = 0; j < s->nr_ring; j++) {
		s->ring[j] = s->layout; /* the shared bounds; the set is each one's */
		s->ring[j].set = pcpu_histogram_make_set(s->layout.nr_bounds);
		if (!s->ring[j].set)
			return -errno;
		err = pcpu_histogram_sum_init(&s->ring[j]);
		if (err)
			return err;
		s->base_period[j] = slot_period(s, j, 0);
	}
	return 0;
}

/* Everything but the registration; 0 or a negative errno. */
static int build(struct pcpu_summary *s, const struct pcpu_summary_desc *d)
{
	int err = build_shape(s, d);

	return err ? err : build_ring(s);
}

/*
 * A summary of @d, made by @make after the check @err (0, or a negative
 * errno that it returns as NULL with errno), or NULL with errno.
 */
static struct pcpu_summary *made(const struct pcpu_summary_desc *d, int err,
				 int (*make)(struct pcpu_summary *s, const struct pcpu_summary_desc *d))
{
	struct pcpu_summary *s = err ? NULL : calloc(1, sizeof(*s));

	if (!err && !s)
		err = -ENOMEM;
	if (!err)
		err = make(s, d);
	if (err) {
		if (s)
			free_summary(s);
		errno = -err;
		return NULL;
	}
	return s;
}

struct pcpu_summary *pcpu_summary_proto(const struct pcpu_summary_desc *d)
{
	return made(d, pcpu_summary_check_sketch(d), build_shape);
}

struct pcpu_summary *pcpu_summary_new_like(const struct pcpu_summary *proto)
{
	struct pcpu_summary *s = calloc(1, sizeof(*s));
	int err;

	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->shared = true;
	s->layout = proto->layout;
	s->quantiles = proto->quantiles;
	s->nr_quantiles = proto->nr_quantiles;
	s->nr_ring = proto->nr_ring;
	s->nr_buckets = proto->nr_buckets;
	s->clock = proto->clock;
	s->period = proto->period;
	s->alpha = proto->alpha;
	s->min = proto->min;
	s->max = proto->max;
	err = build_ring(s);
	if (err) {
		free_summary(s);
		errno = -err;
		return NULL;
	}
	return s;
}

void pcpu_summary_free(struct pcpu_summary *s)
{
	if (s)
		free_summary(s);
}

PCPU_EXPORT struct pcpu_summary *pcpu_summary_create(const struct pcpu_summary_desc *d)
{
	struct pcpu_summary *s = made(d, check_desc(d), build);
	int err;

	if (!s)
		return NULL;
	err = pcpu_metrics_add(d->registry,
			       &(struct metric_spec){ .name = d->name, .help = d->help,
						      .unit = d->unit, .kind = PCPU_METRIC_SUMMARY,
						      .labels = d->labels, .source = &summary_source,
						      .obj = s },
			       1);
	if (err) {
		free_summary(s);
		errno = -err;
		return NULL;
	}
	return s;
}

PCPU_EXPORT void pcpu_summary_destroy(struct pcpu_summary *s)
{
	if (!s)
		return;
	pcpu_metrics_forget(s);
	free_summary(s);
}

/*
 * The ring slot of the period now: s->current's while the clock is inside
 * that period (or behind it: an observer late from the one before counts
 * in the newer one), else the clock's, published for the next observers.
 */
static uint32_t current_slot(struct pcpu_summary *s)
{
	uint64_t now = s->clock(), cur = __atomic_load_n(&s->current, __ATOMIC_RELAXED), next;

	if (now - s->t0 < ((cur >> 8) + 1) * s->period || now < s->t0)
		return (uint32_t)(cur & 0xff);
	next = (uint64_t)period_at(s, now);
	next = next << 8 | next % s->nr_ring;
	/* the latest period wins: a slow observer never moves it back */
	while (cur < next &&
	       !__atomic_compare_exchange_n(&s->current, &cur, next, true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
	return (uint32_t)(next & 0xff);
}

PCPU_EXPORT int pcpu_summary_observe(struct pcpu_summary *s, int64_t value)
{
	uint32_t j = 0;

	if (!s || value < 0)
		return -EINVAL;
	if (s->nr_ring > 1)
		j = current_slot(s);
	pcpu_histogram_observe(&s->ring[j], value);
	return 0;
}

PCPU_EXPORT int pcpu_summary_observe_double(struct pcpu_summary *s, double value)
{
	double raw;

	if (!s || !(value >= 0))
		return -EINVAL;
	raw = nearbyint(value * (double)s->layout.scale);
	/* 2^63: the first double past INT64_MAX (infinity too) */
	if (!(raw < 9223372036854775808.0))
		return -EINVAL;
	return pcpu_summary_observe(s, (int64_t)raw);
}

PCPU_EXPORT int pcpu_summary_quantile(struct pcpu_summary *s, double q, double *value)
{
	int err;

	if (!s || !value || !(q >= 0 && q <= 1))
		return -EINVAL;
	pcpu_metrics_lock();
	err = read_ring(s, true, NULL, NULL);
	if (!err)
		*value = window_quantile(s, q, window_total(s));
	pcpu_metrics_unlock();
	return err;
}

PCPU_EXPORT int pcpu_summary_count(struct pcpu_summary *s, uint64_t *count, int64_t *sum)
{
	int err;

	if (!s)
		return -EINVAL;
	pcpu_metrics_lock();
	err = read_ring(s, false, count, sum);
	pcpu_metrics_unlock();
	return err;
}

PCPU_EXPORT double pcpu_summary_alpha(const struct pcpu_summary *s)
{
	return s ? s->alpha : 0;
}
