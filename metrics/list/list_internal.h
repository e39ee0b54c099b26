/* SPDX-License-Identifier: MIT */
/*
 * The metrics list, inside (see <percpu/metrics.h>): the floor that every
 * other floor of the metrics library stands on. What the kinds of metric
 * (metrics/kinds/) register with, what a scrape walks, the metrics lock
 * and the library as the core's client, the collectors' record of a
 * scrape, file-scope definitions' failures and the exemplar store. It
 * knows no kind of metric by name: a kind hands it a struct metric_source.
 * Lock order and fork: docs/internals.md, [metrics-locks], [metrics-fork],
 * [collector-runs].
 */
#ifndef PCPU_METRICS_LIST_INTERNAL_H
#define PCPU_METRICS_LIST_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <urcu/list.h>

#include <percpu/metrics.h>
#include <percpu/metrics_registry.h>

#include "base/names.h"

/*
 * Where a metric's samples come from: a kind of object, as the registry's
 * struct pcpu_class is in the core. Each kind defines its table beside its
 * objects, static (metrics/kinds/: metrics_register.c for counters and
 * stat items, gauge.c, histogram.c, family.c) and registers metrics with
 * it; the list (metrics_list.c) calls only these, under the metrics lock.
 */
struct metric_source {
	/*
	 * Fills @smp's value from item @item of @obj (a histogram's buckets
	 * into @buckets, room for PCPU_HISTOGRAM_MAX_BOUNDS + 1): 0 or a
	 * negative errno. NULL where @walk writes the samples.
	 */
	int (*sample)(void *obj, unsigned int item, struct pcpu_metric_sample *smp,
		      uint64_t *buckets);
	/*
	 * Writes @obj's samples through @cb, each @smp with its own labels
	 * and value (a label family's children): 0 or what @cb returned.
	 */
	int (*walk)(void *obj, struct pcpu_metric_sample *smp,
		    int (*cb)(const struct pcpu_metric_sample *, void *), void *arg);
	/*
	 * Whether @obj exposes refusals (percpu_family_refused_total), and
	 * how many, in @n. NULL: it has none.
	 */
	bool (*refusals)(const void *obj, int64_t *n);
	/* The metric's name is its own: no other metric may share it. */
	bool own_name;
};

/* The list (metrics_list.c). */

/* One metric to register (strings are copied). */
struct metric_spec {
	const char *prefix; /* NULL or "": none; else the name is prefix_name */
	const char *name;
	const char *help;
	const char *unit;
	enum pcpu_metric_kind kind;
	const char *const *labels;
	int64_t scale;      /* 0 or 1: none; counters and gauges only (else -EINVAL) */
	/* more label names its samples carry (a label family's), none a registry's */
	const char *const *label_names;
	unsigned int nr_label_names;
	const struct metric_source *source;
	void *obj;
	unsigned int item;
};

/*
 * Registers the @n metrics of @specs in registry @r (NULL: the process's),
 * all or none. Returns 0, -EINVAL, -EEXIST or -ENOMEM.
 */
int pcpu_metrics_add(struct pcpu_metrics_registry *r, const struct metric_spec *specs,
		     unsigned int n);

/* Unregisters every metric of @obj; waits for an exposition in progress. */
void pcpu_metrics_forget(const void *obj);

/*
 * Has every scrape call @fn before it takes the metrics lock (a label
 * family's RCU registration, which takes urcu's locks: the fork handlers
 * take them before the metrics lock). One function; set once, by the
 * first family.
 */
void pcpu_metrics_before_scrape(void (*fn)(void));

/*
 * The metrics lock and the core's client (metrics_lock.c). The lock guards
 * the list, the collectors' list and the walk of registered metrics.
 * Registration and collector calls take it; a walk holds it until the
 * collectors run, which it does not hold.
 */

/*
 * The metrics library as the core's client (<percpu/client.h>), with the
 * fork handlers installed: 0 or -ENOMEM. Before anything of the metrics
 * holds a lock that a fork must not find held.
 */
int pcpu_metrics_client_setup(void);

void pcpu_metrics_lock(void);
void pcpu_metrics_unlock(void);

/* pthread_cond_wait() on @cv with the metrics lock, which the caller holds. */
void pcpu_metrics_wait(pthread_cond_t *cv);

/*
 * Has the core's forget (an object is going) call @fn: the list's
 * pcpu_metrics_forget(), set before its first metric is registered. The
 * lock sits below the list, so the list hands its function down rather
 * than the lock naming it. One function.
 */
void pcpu_metrics_on_forget(void (*fn)(const void *obj));

/*
 * Has the fork handler call @fn in the child of fork() (one thread), after
 * the lock is made anew: the collectors' (no walk runs there). One
 * function, set by the first collector.
 */
void pcpu_metrics_on_fork_child(void (*fn)(void));

/* Around fork(): the core's fork handlers call these through the client. */
void pcpu_metrics_fork_prepare(void);
void pcpu_metrics_fork_parent(void);
void pcpu_metrics_fork_child(void);

/*
 * Leaf locks at fork() (fork_leaves.c): an object whose lock a scrape
 * takes under the metrics lock joins the list for its life, and the metrics
 * lock's fork handlers call its @ops after taking the metrics lock and the
 * exemplar lock: prepare takes its locks (nothing taken under them
 * allocates, waits for a grace period or takes a lock of the library's),
 * parent releases them, child (one thread left) makes them anew.
 */
struct pcpu_fork_leaf;
struct pcpu_fork_leaf_ops {
	void (*prepare)(struct pcpu_fork_leaf *l);
	void (*parent)(struct pcpu_fork_leaf *l);
	void (*child)(struct pcpu_fork_leaf *l);
};
struct pcpu_fork_leaf {
	const struct pcpu_fork_leaf_ops *ops;
	struct cds_list_head link; /* under the list's mutex */
};
void pcpu_fork_leaf_add(struct pcpu_fork_leaf *l);
void pcpu_fork_leaf_remove(struct pcpu_fork_leaf *l);
void pcpu_fork_leaves_prepare(void);
void pcpu_fork_leaves_parent(void);
void pcpu_fork_leaves_child(void);

/*
 * One exposition's record of what it has written (collectors.c), so that
 * no collector can make the body invalid. pcpu_scrape_note() passes a
 * registered metric's sample on to the scrape's callback and records its
 * family; pcpu_scrape_emit() is the emit() that collectors get: it refuses
 * (and counts) a sample that is malformed (-EINVAL), whose family was
 * written before or meets one written (-EEXIST), or whose series was
 * written (-EEXIST), and passes the others on.
 */
struct pcpu_scrape;

/* A new record for samples going to @cb(sample, @arg); NULL for want of memory. */
struct pcpu_scrape *pcpu_scrape_new(int (*cb)(const struct pcpu_metric_sample *, void *),
				    void *arg);
void pcpu_scrape_free(struct pcpu_scrape *s);
int pcpu_scrape_note(const struct pcpu_metric_sample *m, void *scrape);
int pcpu_scrape_emit(const struct pcpu_metric_sample *m, void *scrape);

/*
 * Runs every collector of registry @r (NULL: the process's) in the order
 * they were added, with @emit(sample, @ctx), which ends in
 * pcpu_scrape_emit() on @s. Returns 0 or the first non-zero return.
 * Without the metrics lock: it takes it only to pin and unpin them
 * (collectors.c).
 */
int pcpu_collectors_run(const struct pcpu_metrics_registry *r, struct pcpu_scrape *s,
			int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx);

/*
 * What stopped this thread's last exposition in a collector (its errno,
 * and the last sample it had refused: name, labels, why), written into
 * @buf; NULL if none did. For a 500's body (collectors.c).
 */
char *pcpu_collectors_failure(char *buf, size_t size);

/* Whether registry @r has a collector; under the metrics lock. */
bool pcpu_collectors_of(const struct pcpu_metrics_registry *r);

/* File-scope definitions' failures (define_failure.c). */

/*
 * Records that the file-scope definition of @name failed with @err (a
 * negative errno): counted, and the first said on stderr and kept for
 * every exposition.
 */
void pcpu_metrics_define_failed(const char *name, int err);

/*
 * The negative errno of the first file-scope definition that failed, and
 * in *@what (when not NULL) a sentence saying which; 0 and NULL if none
 * failed.
 */
int pcpu_metrics_define_failure(const char **what);

/* Exemplars (exemplar.c). */

/*
 * 0 if @labels (NULL: none) are an exemplar's as struct pcpu_exemplar
 * says, else -EINVAL.
 */
int pcpu_exemplar_check_labels(const char *const *labels);

/*
 * A store of exemplars, one slot per bucket (a counter's: one). Writers put
 * under the exemplar lock; a scrape shows them under the metrics lock.
 */
struct pcpu_exemplars;

/* The store at *@slot, made with @n slots if none is there; NULL for want of memory. */
struct pcpu_exemplars *pcpu_exemplars_attach(struct pcpu_exemplars **slot, uint32_t n);

/* Puts a record of @labels (checked) and @value in slot @i of @st; 0 or -ENOMEM. */
int pcpu_exemplars_put(struct pcpu_exemplars *st, uint32_t i, const char *const *labels,
		       double value);

/*
 * The exemplars of @st to expose now, one per slot, values divided by
 * @scale, valid until the next scrape. Under the metrics lock (scrapes
 * write the array).
 */
const struct pcpu_exemplar *pcpu_exemplars_show(struct pcpu_exemplars *st, int64_t scale);

/* Frees @st (NULL: nothing); no scrape or writer uses it any more. */
void pcpu_exemplars_free(struct pcpu_exemplars *st);

/* The exemplar of counter @c exposed at @scale, as pcpu_exemplars_show(); NULL if none. */
const struct pcpu_exemplar *pcpu_counter_exemplars(const struct pcpu_counter *c, int64_t scale);

/* Frees the counter exemplar of @obj, if any (pcpu_metrics_forget()). */
void pcpu_exemplars_forget(const void *obj);

/* Fork (from the metrics lock's handlers, after it): the exemplar lock. */
void pcpu_exemplars_fork_prepare(void);
void pcpu_exemplars_fork_parent(void);
void pcpu_exemplars_fork_child(void);

/* Created times (created.c). */

/* Now, for a created time: seconds since the epoch (CLOCK_REALTIME). */
double pcpu_metrics_now(void);

/* Whether OpenMetrics writes NAME_created (pcpu_metrics_set_openmetrics_created()). */
bool pcpu_metrics_openmetrics_created(void);

#endif /* PCPU_METRICS_LIST_INTERNAL_H */
