/* SPDX-License-Identifier: MIT */
/**
 * @file metrics.h
 * Metrics: names, help, unit, kind and constant labels on counters and
 * stat-set items, file-scope definitions, and one call that writes every
 * registered metric as Prometheus text 0.0.4, OpenMetrics 1.0.0 or (since
 * 0.4) Prometheus's protobuf format.
 *
 * Names. A metric name matches [a-zA-Z_:][a-zA-Z0-9_:]*, a label name
 * [a-zA-Z_][a-zA-Z0-9_]* and does not start with "__". A counter is
 * registered without its "_total" (the exposition adds it), so a counter
 * or histogram name may not end in "_total", "_created", "_count", "_sum",
 * "_bucket" or "_info". A unit, when given, must be the end of the name
 * ("..._bytes" for "bytes"). Labels are constant: NULL or
 * {"key", "value", ..., NULL}; values are valid UTF-8 of at most 1024
 * bytes, as both formats require (escaped on output; since 0.4 a value
 * that is not is refused with -EINVAL).
 *
 * Families. Metrics with the same name and different constant labels form
 * one family (HELP, TYPE and UNIT written once, from the first registered;
 * kind and unit must agree). A name whose samples would collide with
 * another family's samples (a gauge "x_total" beside a counter "x") is
 * refused with -EEXIST, as is the same name with the same labels.
 *
 * Counters. Exposed from the exact sum, and never decreasing: a negative
 * add to a counter of kind PCPU_METRIC_COUNTER (a misuse the add path does
 * not check) leaves the exposition at its highest value until it passes it.
 *
 * Concurrency. Registration, destruction and exposition may run
 * concurrently from any thread; they serialise on one lock of the metrics
 * list, which no add ever takes. An exposition is O(metrics x CPUs).
 * Destroying a registered counter or stat set waits for an exposition in
 * progress.
 *
 * Link: pkg-config percpu-metrics.
 */
#ifndef PERCPU_METRICS_H
#define PERCPU_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include <percpu/client.h>
#include <percpu/common.h>
#include <percpu/counter.h>
#include <percpu/stat.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pcpu_stat;
struct pcpu_metrics_registry;

/** What a counter is registered as; every string is copied. @since 0.2 */
struct pcpu_metric_desc {
	const char *name;           /**< without "_total" for counters */
	const char *help;           /**< NULL or "": no HELP line */
	const char *unit;           /**< NULL or "": none; else a suffix "_unit" of the name */
	enum pcpu_metric_kind kind; /**< PCPU_METRIC_COUNTER or PCPU_METRIC_GAUGE */
	const char *const *labels;  /**< NULL or {"key", "value", ..., NULL} */
	/* appended in 0.4 */
	/**
	 * 0 or 1: none; else the value is exposed divided by it, as a
	 * decimal (nanoseconds counted, scale 1000000000: seconds exposed).
	 * Counters and int64 gauges only. @since 0.4
	 */
	int64_t scale;
	/**
	 * NULL: the process's registry; else the registry to register in
	 * (<percpu/metrics_registry.h>). @since 0.4
	 */
	struct pcpu_metrics_registry *registry;
};

/**
 * Registers the initialised counter @p c as the metric @p d, until
 * pcpu_counter_destroy(). A counter is registered at most once.
 * @return 0; -EINVAL for a NULL or uninitialised counter, a NULL desc, a
 *         bad name, unit, label name or kind, an odd label list, a
 *         negative scale (since 0.4); -EEXIST for
 *         a counter already registered, or a name and labels already
 *         registered (or colliding samples); -ENOMEM. @since 0.2
 */
PCPU_EXPORT int pcpu_counter_register(struct pcpu_counter *c, const struct pcpu_metric_desc *d);

/**
 * Adds @p delta to @p c as pcpu_counter_add() does, and records the
 * exemplar @p labels (e.g. {"trace_id", "4bf92f3577b34da6", NULL}; NULL:
 * none) with value @p delta (divided by the scale) and the time
 * (CLOCK_REALTIME), replacing the counter's previous one. OpenMetrics
 * shows it on the counter's _total line, as does the protobuf format.
 *
 * A slow path: it copies the labels (one malloc()), and looks the
 * counter up and swaps them in under the exemplar lock, one for all
 * exemplars of the process, which a scrape takes to pick them up. Adds
 * without exemplars take no lock and are not slowed. The add counts
 * whatever the return, except for a NULL or uninitialised @p c.
 * @return 0; -EINVAL for a NULL or uninitialised @p c, or labels against
 *         the rules of struct pcpu_exemplar; -ENOENT for a counter not
 *         registered as a metric (pcpu_counter_register(), the DEFINE
 *         macros) nor a label family's child (pcpu_family_get(), whose
 *         series shows it in a counter family); -ENOMEM: the
 *         exemplar is not recorded. @since 0.4
 */
PCPU_EXPORT int pcpu_counter_add_exemplar(struct pcpu_counter *c, int64_t delta,
					  const char *const *labels);

/**
 * Registers every item of @p s: item "x" as the metric "prefix_x" (just
 * "x" for a NULL or empty @p prefix), of the item's kind and help, until
 * pcpu_stat_destroy(). All items or none. A set may be registered again
 * under another prefix; destroy unregisters every name it has.
 * @return 0; -EINVAL (NULL set, bad prefix or resulting name, a kind
 *         other than counter or gauge); -EEXIST; -ENOMEM. @since 0.2
 */
PCPU_EXPORT int pcpu_stat_register(struct pcpu_stat *s, const char *prefix);

/** Output formats. @since 0.2 */
enum pcpu_metrics_format {
	PCPU_METRICS_PROMETHEUS,  /**< text format 0.0.4 */
	PCPU_METRICS_OPENMETRICS, /**< OpenMetrics 1.0.0, ends with "# EOF" */
	/**
	 * Prometheus's protobuf format (io.prometheus.client.MetricFamily
	 * messages, each preceded by its length as a varint): the one that
	 * carries native histograms. Families and names as in text 0.0.4
	 * (NAME_total for a counter, NAME_info a gauge of value 1), HELP
	 * unescaped, no UNIT; values as doubles (scaled); a histogram's
	 * buckets without +Inf, a native one's schema, zero bucket, positive
	 * spans and deltas, with its classic buckets where it has some.
	 * @since 0.4
	 */
	PCPU_METRICS_PROTOBUF,
	/**
	 * OpenMetrics for a scraper that accepts only its draft 0.0.1: the
	 * same text as PCPU_METRICS_OPENMETRICS (1.0.0 changed nothing that
	 * we write), under a Content-Type with version=0.0.1, as the Go
	 * client answers it. @since 0.4
	 */
	PCPU_METRICS_OPENMETRICS_0_0_1,
};

/**
 * Writes every registered metric to @p out in format @p f. The text is
 * made in memory under the metrics lock, then written and flushed.
 * @return 0; -EINVAL (NULL @p out, unknown format); -ENOMEM; the negative
 *         errno of a failed write (-EIO when the stream gives none); the
 *         errno of a failed file-scope definition (since 0.4, see
 *         PCPU_COUNTER_DEFINE()), writing nothing.
 * @since 0.2
 */
PCPU_EXPORT int pcpu_metrics_write(FILE *out, enum pcpu_metrics_format f);

/**
 * The HTTP Content-Type of format @p f; NULL for an unknown format.
 * @since 0.2
 */
PCPU_EXPORT const char *pcpu_metrics_content_type(enum pcpu_metrics_format f);

/**
 * An exemplar (OpenMetrics): labels naming an event (a trace id) with the
 * value it added or observed and when. @since 0.4
 */
struct pcpu_exemplar {
	/**
	 * {"key", "value", ..., NULL} ({NULL}: no labels); NULL: no
	 * exemplar. Names as label names, values UTF-8, the names and values
	 * together at most PCPU_EXEMPLAR_MAX_CHARS characters.
	 */
	const char *const *labels;
	double value;     /**< the observation or the add's delta, divided by the scale */
	double timestamp; /**< when it was recorded: seconds since the epoch (CLOCK_REALTIME) */
};

/** The most characters of an exemplar's label names and values together (OpenMetrics). @since 0.4 */
#define PCPU_EXEMPLAR_MAX_CHARS 128

/**
 * Most bounds of one histogram (the +Inf bucket and the sum's two parts are
 * items too). @since 0.2; 510 before 0.4, 509 since.
 */
#define PCPU_HISTOGRAM_MAX_BOUNDS (PCPU_STAT_MAX_ITEMS - 3)

/** The coarsest native schema: buckets 2^16 apart. @since 0.4 */
#define PCPU_HISTOGRAM_MIN_SCHEMA (-4)
/** The finest native schema: buckets 2^(1/256) apart. @since 0.4 */
#define PCPU_HISTOGRAM_MAX_SCHEMA 8

/** The most quantiles of a summary (<percpu/summary.h>) or a summary sample. @since 0.5 */
#define PCPU_SUMMARY_MAX_QUANTILES 16

/**
 * One metric as pcpu_metrics_foreach() sees it. Pointers are valid only
 * during the callback. @since 0.2
 */
struct pcpu_metric_sample {
	const char *name;           /**< family name (a counter's without "_total") */
	const char *help;           /**< empty if none */
	const char *unit;           /**< empty if none */
	enum pcpu_metric_kind kind; /**< counter, gauge, histogram, info or (0.5) summary */
	const char *const *labels;  /**< {"key", "value", ..., NULL}, sorted by key */
	int64_t value;              /**< counters (high-water kept) and gauges, unscaled */
	/* histograms only (else 0 and NULL) */
	uint32_t nr_bounds;         /**< upper bounds, without +Inf */
	const int64_t *bounds;      /**< nr_bounds ascending upper bounds, unscaled */
	const uint64_t *buckets;    /**< nr_bounds + 1 counts, non-cumulative, last +Inf */
	uint64_t count;             /**< sum of buckets */
	int64_t sum;                /**< sum of observations, unscaled */
	/**
	 * 0 or 1 (or negative): none; else the exposed figures are divided by
	 * it: a histogram's bounds and sum, and (since 0.4) a counter's or an
	 * int64 gauge's value (not a double's), written as the shortest
	 * decimal that reads back as the same double, an integer without a
	 * decimal point. value, bounds and sum stay unscaled here.
	 */
	int64_t scale;
	/* appended in 0.3: the library makes samples, callers only read them */
	uint32_t flags;             /**< PCPU_METRIC_SAMPLE_F_*  @since 0.3 */
	double dvalue;              /**< with PCPU_METRIC_SAMPLE_F_DOUBLE: the value @since 0.3 */
	/* appended in 0.4: a native histogram's, with PCPU_METRIC_SAMPLE_F_NATIVE */
	int32_t schema;             /**< -4 to 8: see PCPU_METRIC_SAMPLE_F_NATIVE @since 0.4 */
	uint32_t nr_classic;        /**< classic bounds to expose @since 0.4 */
	const int64_t *classic;     /**< nr_classic ascending, each one of @c bounds @since 0.4 */
	/**
	 * NULL: no exemplars. Else a histogram's, one per bucket of
	 * @c buckets (nr_bounds + 1), or a counter's, one; an entry whose
	 * labels are NULL has none. OpenMetrics shows them (on _bucket and
	 * _total lines), and the protobuf format (a counter's, a classic
	 * bucket's, a native histogram's all in its list); Prometheus text
	 * 0.0.4 has none. Collectors may set them on counters and
	 * classic histograms (emit() checks them as pcpu_counter_add_exemplar()
	 * checks its labels, and a finite value and timestamp). @since 0.4
	 */
	const struct pcpu_exemplar *exemplars;
	/* appended in 0.5 */
	/**
	 * With PCPU_METRIC_SAMPLE_F_CREATED: when the series was created,
	 * in seconds since the epoch (CLOCK_REALTIME): a registered counter's
	 * or histogram's registration, a label family's child's creation
	 * (its first pcpu_family_get() or pcpu_family_get_histogram()). No
	 * call resets an exposed counter (the exposition keeps its highest
	 * value), so this is the time its count started from 0. A collector
	 * may set it on counters, histograms and summaries (emit() refuses
	 * a value that is not finite or is negative). Written as
	 * OpenMetrics' NAME_created sample (only after
	 * pcpu_metrics_set_openmetrics_created()) and as the protobuf
	 * format's created_timestamp; text 0.0.4 has none. @since 0.5
	 */
	double created;
	/*
	 * appended in 0.5: a summary's (kind PCPU_METRIC_SUMMARY, whose
	 * @c count and @c sum are those of every observation, the sum
	 * divided by @c scale when exposed). Read for that kind only.
	 */
	uint32_t nr_quantiles;          /**< 0 to PCPU_SUMMARY_MAX_QUANTILES @since 0.5 */
	/** nr_quantiles ascending quantiles, each in [0, 1] @since 0.5 */
	const double *quantiles;
	/** their values, as exposed (scaled already; NaN: no observation) @since 0.5 */
	const double *quantile_values;
	/*
	 * appended in 0.5: a sparse native histogram's (flag
	 * PCPU_METRIC_SAMPLE_F_SPARSE). Read with that flag only.
	 */
	uint32_t nr_negative;       /**< the first nr_negative of @c keys are negative buckets @since 0.5 */
	uint32_t nr_keys;           /**< populated buckets, negative then positive @since 0.5 */
	/**
	 * nr_keys keys: the negative buckets' (of |v|), ascending, then the
	 * positive ones', ascending @since 0.5
	 */
	const int32_t *keys;
	const uint64_t *key_counts; /**< their counts, each > 0 @since 0.5 */
	uint64_t zero_count;        /**< observations in the zero bucket @since 0.5 */
	double zero_threshold;      /**< the zero bucket's, exposed (> 0) @since 0.5 */
	double dsum;                /**< the sum, exposed (not divided by @c scale again) @since 0.5 */
};

/**
 * Sample flag: a double gauge (<percpu/gauge.h>); @c dvalue holds the
 * value, @c value the nearest int64 (saturated; 0 for NaN). @since 0.3
 */
#define PCPU_METRIC_SAMPLE_F_DOUBLE 1u

/**
 * Sample flag: a native histogram (<percpu/histogram.h>). @c bounds and
 * @c buckets are its fine buckets: bucket 0 holds the observations <=
 * bounds[0] (the zero bucket: bounds[0] / scale is its threshold); bucket
 * i, 0 < i < nr_bounds, those in (bounds[i - 1], bounds[i]], all of which
 * fall in the native bucket of key pcpu_metrics_native_key(bounds[i] /
 * scale, schema); the last, those above bounds[nr_bounds - 1], counted in
 * the native bucket of that last bound. Native bucket k holds the exposed
 * values in (2^((k - 1) / 2^schema), 2^(k / 2^schema)]. The text formats
 * show the classic buckets of @c classic (+Inf only when there are none),
 * the protobuf format both. A collector may emit such a sample (a merged
 * registry's, <percpu/metrics_registry.h>): emit() refuses it (-EINVAL)
 * unless its kind is histogram, its schema -4 to 8, nr_bounds at least 1
 * with bounds[0] >= 0, and its classic bounds ascending.
 * @since 0.4
 */
#define PCPU_METRIC_SAMPLE_F_NATIVE 2u

/**
 * Sample flag: a sparse native histogram (pcpu_histogram_create_sparse()):
 * its native buckets are @c keys and @c key_counts (@c nr_negative
 * negative ones first), with @c schema, @c zero_threshold and
 * @c zero_count; @c count is every observation (NaN ones too), @c dsum the
 * sum; @c nr_bounds is 0 and @c buckets[0] the count (the +Inf bucket).
 * A collector may emit one: emit() refuses it (-EINVAL) unless its kind is
 * histogram, its schema -4 to 8, its zero threshold >= 0 and its keys
 * strictly ascending within each sign, with counts > 0. @since 0.5
 */
#define PCPU_METRIC_SAMPLE_F_SPARSE 8u

/**
 * Sample flag: @c created holds the series' created time (samples made
 * before 0.5 have no such field, hence the flag). @since 0.5
 */
#define PCPU_METRIC_SAMPLE_F_CREATED 4u

/**
 * Whether the OpenMetrics formats write NAME_created samples (@p on
 * non-zero) for the series whose samples carry a created time
 * (PCPU_METRIC_SAMPLE_F_CREATED): counters, histograms, summaries. Off
 * by default, as in the Go client (HandlerOpts'
 * EnableOpenMetricsTextCreatedSamples): Prometheus before 2.55 (2.42
 * included) reads a _created line as a series of its own, one more series
 * for every counter and histogram; later versions with
 * --enable-feature=created-timestamp-zero-ingestion read it as the
 * created time. The protobuf format always carries the created time
 * (created_timestamp), which Prometheus 2.42 skips as a field it does
 * not know. For every exposition of the process, from the next one on.
 * @return the setting before the call. @since 0.5
 */
PCPU_EXPORT int pcpu_metrics_set_openmetrics_created(int on);

/**
 * The key of the native bucket that holds @p v (> 0 and finite) at
 * @p schema (-4 to 8), as Prometheus computes it: the k with
 * 2^((k - 1) / 2^schema) < v <= 2^(k / 2^schema). @since 0.4
 */
PCPU_EXPORT int32_t pcpu_metrics_native_key(double v, int32_t schema);

/**
 * Calls @p cb for every registered metric, families contiguous (sorted by
 * name, then labels; the children of a label family of <percpu/family.h>
 * in no particular order), then for the collectors' samples (outside the
 * lock, since 0.4), under the metrics lock: @p cb must not call the
 * library's initialisers, creators, register or destroy calls (they would
 * deadlock, against this lock or against a fork). A non-zero return of @p cb
 * stops the walk.
 * @return 0, what @p cb returned, -EINVAL for NULL @p cb, or -ENOMEM.
 * @since 0.2
 */
PCPU_EXPORT int pcpu_metrics_foreach(int (*cb)(const struct pcpu_metric_sample *, void *),
				     void *arg);

/**
 * A collector: writes samples computed at scrape time (a queue's depth, a
 * pool's size, the process's own figures) into the same exposition, after
 * the registered metrics, by calling @p emit(sample, @p ctx) for each, the
 * samples of one family contiguous. A sample is a zero-initialised struct
 * pcpu_metric_sample with a name, help (may be ""), unit (may be ""),
 * kind, labels and value filled in (histograms: the histogram fields).
 * emit() writes nothing that would make the exposition invalid: it
 * returns -EINVAL for a bad name, unit, label, help (not UTF-8) or bounds
 * (not ascending), and for a sample whose kind or unit differs from the
 * one before it in its family; -EEXIST (since 0.4) for a family that this
 * exposition has written already (a registered metric's, another
 * collector's, or this one's before another family), a family whose
 * samples would meet a written one's (a gauge "x_total" beside a counter
 * "x"), or a series (name and labels) written already; -ENOMEM. A refused
 * sample is left out and counted (pcpu_metrics_collector_refused()); the
 * collector may go on. emit() also returns the non-zero value of the
 * exposition's output (pcpu_metrics_foreach()'s callback; -ENOMEM for the
 * body of pcpu_metrics_write()): the output has stopped, and every later
 * emit() returns the same. Returns 0, or a negative errno (what emit
 * returned, or its own): a failure, counted
 * (pcpu_metrics_collector_failed()). Added with flags 0 (as
 * pcpu_metrics_collector_add() adds it), a failing collector stops the
 * exposition, which returns its errno and writes nothing:
 * pcpu_metrics_respond() fails with it and pcpu_metrics_serve() answers
 * 500. With PCPU_METRICS_COLLECTOR_F_CONTINUE the exposition goes on
 * (pcpu_metrics_collector_add_flags()). Runs outside the metrics lock
 * (since 0.4; under it before): fork(), registration and other scrapes'
 * walks of the registered metrics do not wait for it, and it may register
 * or destroy metrics; it must not remove itself (removal waits for it to
 * return).
 * @since 0.3
 */
typedef int (*pcpu_metrics_collector_fn)(int (*emit)(const struct pcpu_metric_sample *s,
						     void *ctx),
					 void *ctx, void *arg);

/**
 * Adds collector @p fn with argument @p arg to every exposition
 * (pcpu_metrics_write(), pcpu_metrics_foreach(), pcpu_metrics_respond()),
 * after the ones added before it.
 * @return 0; -EINVAL for NULL @p fn; -EEXIST if @p fn with @p arg is
 *         already added; -ENOMEM. @since 0.3
 */
PCPU_EXPORT int pcpu_metrics_collector_add(pcpu_metrics_collector_fn fn, void *arg);

/**
 * Collector flag: a collector that fails costs the scrape its own samples
 * only, as the Go client's ContinueOnError. @since 0.4
 */
#define PCPU_METRICS_COLLECTOR_F_CONTINUE 1u

/**
 * Adds collector @p fn with argument @p arg with a failure policy. As
 * pcpu_metrics_collector_add(), which is this call with @p flags 0;
 * @p flags is 0 or PCPU_METRICS_COLLECTOR_F_CONTINUE. With
 * PCPU_METRICS_COLLECTOR_F_CONTINUE, when @p fn returns an error
 * the exposition goes on with the next collector and succeeds: the
 * scrape holds the registered metrics, the other collectors' samples, and
 * the samples that @p fn emitted before it returned and emit() accepted
 * (each a whole series, a histogram with all its buckets), none other of
 * @p fn; the family it was writing holds the series it emitted. The body
 * is valid (emit() checked every sample). The failure is counted
 * (pcpu_metrics_collector_failed()) and the scrape does not show it: add
 * pcpu_metrics_failures_collector() to expose the count. An output that
 * stopped (see pcpu_metrics_collector_fn) stops the exposition whatever
 * the flags.
 * @return 0; -EINVAL for NULL @p fn or an unknown flag; -EEXIST if @p fn
 *         with @p arg is already added (whatever its flags); -ENOMEM.
 * @since 0.4
 */
PCPU_EXPORT int pcpu_metrics_collector_add_flags(pcpu_metrics_collector_fn fn, void *arg,
						 unsigned int flags);

/**
 * Removes collector @p fn with argument @p arg, after every exposition
 * running it has returned from it. @return 0, or -ENOENT if it was not
 * added. @since 0.3
 */
PCPU_EXPORT int pcpu_metrics_collector_remove(pcpu_metrics_collector_fn fn, void *arg);

/**
 * Number of samples that collectors emitted and emit() refused (see
 * pcpu_metrics_collector_fn) since the process started.
 * @since 0.4
 */
PCPU_EXPORT uint64_t pcpu_metrics_collector_refused(void);

/**
 * Number of collector runs that returned an error (see
 * pcpu_metrics_collector_fn), whatever their flags, since the process
 * started; a run whose output had stopped is not counted (the error is the
 * output's).
 * @since 0.4
 */
PCPU_EXPORT uint64_t pcpu_metrics_collector_failed(void);

/**
 * A collector of the collectors' own failures, for the scraper to see
 * them: the counters percpu_collector_failed_total
 * (pcpu_metrics_collector_failed()) and percpu_collector_refused_total
 * (pcpu_metrics_collector_refused()), as the Go client's
 * promhttp_metric_handler_errors_total. Each is the count when it runs:
 * the failures of collectors added after it show at the next scrape. Add
 * it with pcpu_metrics_collector_add(pcpu_metrics_failures_collector,
 * NULL); no exposition has them otherwise.
 * @return 0, -EINVAL for NULL @p emit, or what @p emit returned.
 * @since 0.4
 */
PCPU_EXPORT int pcpu_metrics_failures_collector(int (*emit)(const struct pcpu_metric_sample *s,
							    void *ctx),
						void *ctx, void *arg);

/**
 * A collector of the standard process metrics, as the official Prometheus
 * clients name them: process_cpu_seconds_total, process_open_fds,
 * process_max_fds, process_virtual_memory_bytes,
 * process_resident_memory_bytes, process_start_time_seconds (from /proc;
 * the ones it cannot read are left out). Add it with
 * pcpu_metrics_collector_add(pcpu_metrics_process_collector, NULL).
 * @since 0.3
 */
PCPU_EXPORT int pcpu_metrics_process_collector(int (*emit)(const struct pcpu_metric_sample *s,
							   void *ctx),
					       void *ctx, void *arg);

/**
 * Number of PCPU_COUNTER_DEFINE()/PCPU_GAUGE_DEFINE() definitions whose
 * registration failed (a bad or duplicate name, no memory) since the
 * process started; while it is not 0, every exposition fails (since 0.4).
 * @since 0.2
 */
PCPU_EXPORT unsigned int pcpu_metrics_define_errors(void);

struct pcpu_shared;

/**
 * A collector of every item of the shared segment (<percpu/shared.h>) @p segment
 * (a struct pcpu_shared *), exact values from one snapshot: added with
 * pcpu_metrics_collector_add(pcpu_shared_collector, s), the segment's items
 * join the process's own metrics in one exposition (one "# EOF"). Remove it
 * before closing the segment. @return 0, -EINVAL for a NULL segment,
 * -ENOMEM, -ENXIO as snapshot(), or what @p emit returned. @since 0.3
 */
PCPU_EXPORT int pcpu_shared_collector(int (*emit)(const struct pcpu_metric_sample *s, void *ctx),
				      void *ctx, void *segment);

/**
 * Writes every item's exact value to @p out as Prometheus text 0.0.4,
 * OpenMetrics 1.0.0 or (since 0.4) the protobuf format (counters as
 * NAME_total), as pcpu_metrics_write():
 * items of one name as one family, a sample per label tuple; histograms
 * as cumulative NAME_bucket{le="..."} up to "+Inf", NAME_sum, NAME_count.
 * @return 0; -EINVAL for NULL arguments or an unknown format; -ENOMEM;
 *         -ENXIO as snapshot() (nothing written); or
 *         the negative errno of a failed write. @since 0.2
 */
PCPU_EXPORT int pcpu_shared_write(const struct pcpu_shared *s, FILE *out,
				  enum pcpu_metrics_format f);

#include <percpu/static/metrics.h>

/* Internal to the headers. */
#define __PCPU_METRIC_DEFINE(var, name, help, kind)                             \
	struct pcpu_counter var;                                                \
	__attribute__((constructor(101))) static void __pcpu_define_##var(void) \
	{                                                                       \
		__pcpu_metrics_define(&(var), (name), (help), (kind));          \
	}                                                                       \
	__attribute__((destructor(101))) static void __pcpu_undefine_##var(void) \
	{                                                                       \
		__pcpu_metrics_undefine(&(var));                                \
	}                                                                       \
	extern struct pcpu_counter var

/**
 * Defines, at file scope, the counter @p var (struct pcpu_counter), value
 * 0, registered as the counter metric @p name with @p help before main()
 * (or when the dlopen()ed object holding it loads) and destroyed at exit
 * (or unload). Usable as soon as constructors of priority 101 have run.
 *
 * A constructor cannot return an error. If registration fails (bad or
 * duplicate name, as the same name defined in two files, no memory for
 * the metric), the counter is still initialised and usable, only not
 * exposed. If even initialising it fails (no memory), it stays
 * zero-filled and updating it is a misuse (see <percpu/counter.h>).
 * Either way pcpu_metrics_define_errors() counts it, and (since 0.4) so
 * that it cannot go unnoticed: a line on stderr names it at once, and
 * every exposition from then on fails with the first failure's errno
 * (-EEXIST for a duplicate), so the built-in server answers 500 with that
 * line.
 *
 * Unloading. The inline adds leave a thread's rseq state pointing into the
 * object that ran them; the unload destructor clears it for the thread
 * that calls dlclose(). Other threads that ran this object's adds must
 * be preempted after its dlclose() before they run another rseq critical
 * section (a limitation of the rseq update path for any unloaded object
 * that inlines adds, not of definitions only).
 * @since 0.2
 */
#define PCPU_COUNTER_DEFINE(var, name, help) \
	__PCPU_METRIC_DEFINE(var, name, help, PCPU_METRIC_COUNTER)

/** As PCPU_COUNTER_DEFINE(), for a gauge. @since 0.2 */
#define PCPU_GAUGE_DEFINE(var, name, help) \
	__PCPU_METRIC_DEFINE(var, name, help, PCPU_METRIC_GAUGE)

/* Internal to the headers; the macro's kind wins over a .kind in the fields. */
#define __PCPU_METRIC_DEFINE_DESC(var, kind_, ...)                                   \
	struct pcpu_counter var;                                                      \
	__attribute__((constructor(101))) static void __pcpu_define_##var(void)       \
	{                                                                             \
		const struct pcpu_metric_desc fields = { __VA_ARGS__ };               \
		struct pcpu_metric_desc d = fields;                                   \
                                                                                      \
		d.kind = (kind_);                                                     \
		__pcpu_metrics_define_desc(&(var), &d);                               \
	}                                                                             \
	__attribute__((destructor(101))) static void __pcpu_undefine_##var(void)      \
	{                                                                             \
		__pcpu_metrics_undefine(&(var));                                      \
	}                                                                             \
	extern struct pcpu_counter var

/**
 * As PCPU_COUNTER_DEFINE(), with the metric's fields given as designated
 * initialisers of struct pcpu_metric_desc (a unit, constant labels):
 * @code
 * PCPU_COUNTER_DEFINE_DESC(rx_bytes, .name = "net_received_bytes", .unit = "bytes",
 *                          .help = "Bytes received.",
 *                          .labels = PCPU_LABELS("interface", "eth0"));
 * @endcode
 * Strings are copied at registration. @since 0.3
 */
#define PCPU_COUNTER_DEFINE_DESC(var, ...) \
	__PCPU_METRIC_DEFINE_DESC(var, PCPU_METRIC_COUNTER, __VA_ARGS__)

/** As PCPU_COUNTER_DEFINE_DESC(), for a gauge. @since 0.3 */
#define PCPU_GAUGE_DEFINE_DESC(var, ...) \
	__PCPU_METRIC_DEFINE_DESC(var, PCPU_METRIC_GAUGE, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_METRICS_H */
