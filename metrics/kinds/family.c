/* SPDX-License-Identifier: MIT */
/*
 * Label families (see <percpu/family.h>): one child (a per-CPU counter, a
 * histogram, dense or sparse, a set-style gauge or a summary) per tuple of label values, in
 * liburcu's RCU lock-free hash table.
 *
 * Invariants:
 * - A child is in the table from its creation until its removal, and the
 *   table never holds two children of one tuple: cds_lfht_add_unique()
 *   decides between two creators of the same tuple.
 * - nr_children counts the children in the table; it changes only under
 *   the family's lock, so the cap is exact.
 * - A child's memory is freed only after it left the table and a grace
 *   period passed (reclaim, destroy): a lookup or an exposition that
 *   found it under the RCU read lock is done with it by then. Adds through
 *   the caller's pointers are the caller's part (see the header).
 * - The table is never resized: its size is fixed from the cap at
 *   creation. A resize waits for a grace period while it holds the table's
 *   own mutex, which a fork() (urcu's preparation holds the grace-period
 *   lock) could leave locked in the child; a fixed table has no such lock.
 *
 * Lock order. Nothing that takes the registry's lock, the arena's or
 * urcu's (counter init and destroy, a grace period, a thread's first RCU
 * read lock, which registers it) runs under the family's lock or the
 * metrics lock: the fork handlers take those before the family's and the
 * metrics lock (registry.c, before_fork()). So a thread registers with
 * urcu before it takes either (rcu_register_early()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <urcu-bp.h>
#include <urcu/rculfhash.h>

#include <percpu/client.h>
#include <percpu/family.h>
#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/stat.h>
#include <percpu/summary.h>

#include "kinds/kinds_internal.h"
#include "kinds/summary_internal.h"
#include "list/list_internal.h"

/* Hash buckets: max_children / 2, rounded up to a power of two, within these. */
#define MIN_BUCKETS 16
#define MAX_BUCKETS 4096

/* What a family's children are: new_child(), free_child(), child_sample() switch on it. */
enum child_type {
	CHILD_COUNTER,   /* counter and gauge families: per-CPU, registered with the core */
	CHILD_HISTOGRAM, /* dense, or sparse (pcpu_family_create_sparse()): @c sparse */
	CHILD_GAUGE,     /* PCPU_FAMILY_F_SET_GAUGE: one atomic word */
	CHILD_SUMMARY,   /* pcpu_family_create_summary(): a summary of the family's sketch */
};

struct child {
	union {                      /* the caller's pointer: first */
		struct pcpu_counter counter;   /* CHILD_COUNTER */
		struct pcpu_histogram hist;    /* CHILD_HISTOGRAM */
		struct pcpu_gauge gauge;       /* CHILD_GAUGE */
		struct pcpu_summary *summary;  /* CHILD_SUMMARY: opaque, so by pointer */
	};
	struct cds_lfht_node node;
	struct child *next_removed;
	unsigned long hash;          /* stored with release before the child is published */
	int64_t high_water;          /* counter families: the largest value exposed */
	double created;              /* when made (PCPU_METRIC_SAMPLE_F_CREATED) */
	/*
	 * {name, value, ..., NULL}, the label names and the constant labels'
	 * keys sorted together; the tuple's values follow, the constant ones
	 * are the family's.
	 */
	const char *labels[];
};

struct pcpu_family {
	struct cds_lfht *table;
	pthread_mutex_t lock;        /* creation and removal: nr_children, removed */
	unsigned int nr_children;
	unsigned int max_children;
	unsigned int nr_labels;      /* label names: the tuple's values */
	unsigned int nr_all;         /* label names and constant labels */
	enum pcpu_metric_kind kind;
	enum child_type child;
	bool has_opts;
	struct pcpu_counter_options opts;
	struct pcpu_histogram layout; /* histogram families: bounds shared by the children */
	struct pcpu_stat *proto;      /* histogram families: the set the children's are made like */
	/* summary families: the sketch (layout, quantiles, window) the children share */
	struct pcpu_summary *summary_proto;
	/* sparse histogram families: every child's buckets are of this */
	bool sparse;
	struct pcpu_histogram_sparse sparse_desc;
	int64_t scale;
	uint64_t seed;               /* of the hash: label values may come from outside */
	struct child *removed;       /* removed children, not yet freed */
	struct child *overflow;      /* NULL, or the child a refused get returns */
	struct pcpu_counter refused; /* gets refused (cap, bad tuple, no memory) */
	struct pcpu_registry_entry *entry; /* for the fork handlers */
	const char **sorted_names;   /* nr_all names sorted */
	/*
	 * sorted position -> position in the caller's tuple, or nr_labels + i
	 * for the constant label i
	 */
	unsigned int *order;
	char **names;                /* the copies: label names, then constant keys */
	char **const_values;         /* the constant labels' values, copied */
};

/* What a lookup compares against: the caller's tuple. */
struct key {
	const struct pcpu_family *f;
	const char *const *values;
};

/* Fork: the lock must not be left held by a thread the child does not have. */

static void family_fork_prepare(void *obj)
{
	pthread_mutex_lock(&((struct pcpu_family *)obj)->lock);
}

static void family_fork_parent(void *obj)
{
	pthread_mutex_unlock(&((struct pcpu_family *)obj)->lock);
}

static void family_fork_child(void *obj)
{
	pthread_mutex_init(&((struct pcpu_family *)obj)->lock, NULL);
}

static const struct pcpu_class family_class = {
	.fork_prepare = family_fork_prepare,
	.fork_parent = family_fork_parent,
	.fork_child = family_fork_child,
};

/*
 * The table publishes a child with liburcu's rcu_assign_pointer(), which
 * ThreadSanitizer does not see (liburcu is not built for it). A release
 * store of the hash before insertion (publish()) and an acquire load of it
 * wherever the table hands out a child (seen()) state the same order where
 * it can see it; the load is a plain one on x86_64.
 */
static void publish(struct child *c)
{
	__atomic_store_n(&c->hash, c->hash, __ATOMIC_RELEASE);
}

static struct child *seen(struct child *c)
{
	(void)__atomic_load_n(&c->hash, __ATOMIC_ACQUIRE);
	return c;
}

/*
 * Iterates the children in the table (under the RCU read lock).
 * cds_lfht_for_each_entry() would compute container_of(NULL) at the end,
 * which UBSan rightly reports.
 */
static struct child *child_at(struct cds_lfht_iter *iter)
{
	struct cds_lfht_node *node = cds_lfht_iter_get_node(iter);

	return node ? seen(caa_container_of(node, struct child, node)) : NULL;
}

#define for_each_child(f, iter, c)                                      \
	for (cds_lfht_first((f)->table, (iter)); ((c) = child_at(iter)); \
	     cds_lfht_next((f)->table, (iter)))

/* Tuples. */

/* 0 if @values holds one value per label name (valid or not). */
static int check_count(const struct pcpu_family *f, const char *const *values)
{
	unsigned int n;

	if (!f || !values)
		return -EINVAL;
	for (n = 0; n < f->nr_labels; n++)
		if (!values[n])
			return -EINVAL;
	return values[n] ? -EINVAL : 0;
}

/* 0 if @values holds one valid value per label name. */
static int check_values(const struct pcpu_family *f, const char *const *values)
{
	unsigned int n;

	if (!f || !values)
		return -EINVAL;
	for (n = 0; values[n]; n++)
		if (n >= f->nr_labels ||
		    pcpu_metrics_check_label_value(values[n], PCPU_FAMILY_MAX_VALUE_LEN) != 0)
			return -EINVAL;
	return n == f->nr_labels ? 0 : -EINVAL;
}

/*
 * FNV-1a, seeded, each value followed by 0xff (a byte valid UTF-8 never
 * holds), so that ("ab", "c") and ("a", "bc") differ.
 */
static unsigned long hash_values(const struct pcpu_family *f, const char *const *values)
{
	uint64_t h = 0xcbf29ce484222325ull ^ f->seed;

	for (unsigned int i = 0; i < f->nr_labels; i++) {
		for (const unsigned char *p = (const unsigned char *)values[i]; *p; p++)
			h = (h ^ *p) * 0x100000001b3ull;
		h = (h ^ 0xff) * 0x100000001b3ull;
	}
	return (unsigned long)(h ^ (h >> 29));
}

static int match(struct cds_lfht_node *node, const void *arg)
{
	const struct child *c = seen(caa_container_of(node, struct child, node));
	const struct key *k = arg;

	for (unsigned int i = 0; i < k->f->nr_all; i++)
		if (k->f->order[i] < k->f->nr_labels &&
		    strcmp(c->labels[2 * i + 1], k->values[k->f->order[i]]) != 0)
			return 0;
	return 1;
}

/* The child of @values in the table, or NULL. Under the RCU read lock. */
static struct child *lookup(struct pcpu_family *f, const char *const *values,
			    unsigned long hash)
{
	struct key k = { f, values };
	struct cds_lfht_iter iter;

	cds_lfht_lookup(f->table, hash, match, &k, &iter);
	return child_at(&iter);
}

/* Children. */

static size_t values_len(const struct pcpu_family *f, const char *const *values)
{
	size_t len = 0;

	for (unsigned int i = 0; i < f->nr_labels; i++)
		len += strlen(values[i]) + 1;
	return len;
}

static size_t child_alloc_size(const struct pcpu_family *f, size_t len)
{
	return sizeof(struct child) + (2 * f->nr_all + 1) * sizeof(char *) + len;
}

/* A histogram child @h of @f at 0: 0 or a negative errno, nothing left to free. */
static int init_histogram(const struct pcpu_family *f, struct pcpu_histogram *h)
{
	int err;

	*h = f->layout;
	/* the items' descriptions are the prototype's, not copies */
	h->set = pcpu_stat_create_like(f->proto);
	if (!h->set)
		return -errno;
	/* sparse: no sum counter, which routes the inline observe (histogram.h) */
	err = f->sparse ? pcpu_histogram_sparse_init(h, &f->sparse_desc) :
			  pcpu_histogram_sum_init(h);
	if (err)
		pcpu_stat_destroy(h->set);
	return err;
}

/* A new child of @values at 0, not in the table; NULL with errno. */
static struct child *new_child(struct pcpu_family *f, const char *const *values,
			       unsigned long hash)
{
	struct child *c = calloc(1, child_alloc_size(f, values_len(f, values)));
	char *s;
	int err = 0;

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	switch (f->child) {
	case CHILD_HISTOGRAM:
		err = init_histogram(f, &c->hist);
		break;
	case CHILD_COUNTER:
		err = pcpu_counter_init_opts(&c->counter, 0, f->has_opts ? &f->opts : NULL);
		/*
		 * Described: a series of the family's metric, so that it takes
		 * exemplars (pcpu_counter_add_exemplar()) and cannot be
		 * registered alone. Folders read the fixed-batch flag: this bit only.
		 */
		if (!err)
			__atomic_fetch_or(&c->counter.flags, PCPU_COUNTER_F_DESCRIBED,
					  __ATOMIC_ACQ_REL);
		break;
	case CHILD_GAUGE:
		break; /* zero-filled: a gauge at 0 */
	case CHILD_SUMMARY:
		c->summary = pcpu_summary_new_like(f->summary_proto);
		err = c->summary ? 0 : -errno;
		break;
	}
	if (err) {
		free(c);
		errno = -err;
		return NULL;
	}
	cds_lfht_node_init(&c->node);
	c->hash = hash;
	c->created = pcpu_metrics_now();
	s = (char *)&c->labels[2 * f->nr_all + 1];
	for (unsigned int i = 0; i < f->nr_all; i++) {
		unsigned int at = f->order[i];

		c->labels[2 * i] = f->sorted_names[i];
		if (at >= f->nr_labels) {
			c->labels[2 * i + 1] = f->const_values[at - f->nr_labels];
			continue;
		}
		c->labels[2 * i + 1] = s;
		s = stpcpy(s, values[at]) + 1;
	}
	return c;
}

static void free_child(const struct pcpu_family *f, struct child *c)
{
	if (f->child == CHILD_HISTOGRAM) {
		pcpu_exemplars_free(c->hist.exemplars);
		pcpu_sparse_free(c->hist.sparse);
		pcpu_stat_destroy(c->hist.set);
		pcpu_histogram_sum_free(&c->hist);
	} else if (f->child == CHILD_SUMMARY) {
		pcpu_summary_free(c->summary);
	} else if (f->child == CHILD_COUNTER) {
		/*
		 * Its exemplar goes here, not through the client's forget: that
		 * takes the metrics lock, which a reclaim must not wait for
		 * child by child behind scrapes. No scrape sees @c any more.
		 */
		__atomic_fetch_and(&c->counter.flags, ~PCPU_COUNTER_F_DESCRIBED, __ATOMIC_ACQ_REL);
		pcpu_exemplars_forget(&c->counter);
		pcpu_counter_destroy(&c->counter);
	}
	free(c);
}

static void free_children(const struct pcpu_family *f, struct child *c)
{
	while (c) {
		struct child *next = c->next_removed;

		free_child(f, c);
		c = next;
	}
}

/*
 * The first RCU read lock of a thread registers it with urcu, under urcu's
 * lock: take it before the family's lock (see the lock order above).
 */
/* Families created and not destroyed (family_before_scrape()). */
static unsigned int live_families;

static void family_before_scrape(void);
/* the list's view of a family: defined below, with its walk */
static const struct metric_source pcpu_family_source;

static void rcu_register_early(void)
{
	urcu_bp_read_lock();
	urcu_bp_read_unlock();
}

/* Public calls. */

/* What @f holds beside its lock and refusal counter (NULLs: not made). */
static void free_parts(struct pcpu_family *f)
{
	if (f->names)
		for (unsigned int i = 0; i < f->nr_all; i++)
			free(f->names[i]);
	if (f->const_values)
		for (unsigned int i = 0; i < f->nr_all - f->nr_labels; i++)
			free(f->const_values[i]);
	free(f->names);
	free(f->const_values);
	free(f->sorted_names);
	free(f->order);
	pcpu_histogram_layout_free(&f->layout);
	pcpu_stat_destroy(f->proto);
	pcpu_summary_free(f->summary_proto);
	if (f->table)
		cds_lfht_destroy(f->table, NULL);
}

static void free_family(struct pcpu_family *f)
{
	free_parts(f);
	pcpu_counter_destroy(&f->refused);
	free(f);
}

static unsigned long buckets_for(unsigned int max_children)
{
	unsigned long n = MIN_BUCKETS;

	while (n < MAX_BUCKETS && n < max_children / 2)
		n *= 2;
	return n;
}

static uint64_t new_seed(void)
{
	uint64_t seed;
	struct timespec ts;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed))
		return seed;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec;
}

/* The label names, then the constant labels' keys, sorted together. */
static int copy_names(struct pcpu_family *f, const char *const *names,
		      const char *const *consts)
{
	unsigned int nr_consts = f->nr_all - f->nr_labels;

	f->names = calloc(f->nr_all, sizeof(*f->names));
	f->const_values = calloc(nr_consts ? nr_consts : 1, sizeof(*f->const_values));
	f->sorted_names = calloc(f->nr_all, sizeof(*f->sorted_names));
	f->order = calloc(f->nr_all, sizeof(*f->order));
	if (!f->names || !f->const_values || !f->sorted_names || !f->order)
		return -ENOMEM;
	for (unsigned int i = 0; i < nr_consts; i++) {
		f->const_values[i] = strdup(consts[2 * i + 1]);
		if (!f->const_values[i])
			return -ENOMEM;
	}
	for (unsigned int i = 0; i < f->nr_all; i++) {
		unsigned int j = i;

		f->names[i] = strdup(i < f->nr_labels ? names[i]
						      : consts[2 * (i - f->nr_labels)]);
		if (!f->names[i])
			return -ENOMEM;
		/* insertion sort: a few names */
		while (j > 0 && strcmp(f->sorted_names[j - 1], f->names[i]) > 0) {
			f->sorted_names[j] = f->sorted_names[j - 1];
			f->order[j] = f->order[j - 1];
			j--;
		}
		f->sorted_names[j] = f->names[i];
		f->order[j] = i;
	}
	return 0;
}

/*
 * The kind, flags and scale, and the bounds of a histogram family (as
 * pcpu_histogram_create()).
 */
static int check_bounds(const struct pcpu_family_desc *d)
{
	if (d->scale < 0 || (d->flags & ~PCPU_FAMILY_F_SET_GAUGE))
		return -EINVAL;
	if ((d->flags & PCPU_FAMILY_F_SET_GAUGE) && (d->kind != PCPU_METRIC_GAUGE || d->opts))
		return -EINVAL;
	if (d->kind == PCPU_METRIC_SUMMARY) /* the sketch is the summary desc's */
		return d->bounds || d->nr_bounds || d->native || d->opts || d->flags ? -EINVAL : 0;
	if (d->kind != PCPU_METRIC_HISTOGRAM)
		return (d->kind == PCPU_METRIC_COUNTER || d->kind == PCPU_METRIC_GAUGE) &&
				       !d->native ?
			       0 :
			       -EINVAL;
	if (d->nr_bounds > PCPU_HISTOGRAM_MAX_BOUNDS || (d->nr_bounds && !d->bounds))
		return -EINVAL;
	for (uint32_t i = 1; i < d->nr_bounds; i++)
		if (d->bounds[i] <= d->bounds[i - 1])
			return -EINVAL;
	return 0;
}

/*
 * Number of constant labels in @d, valid as a struct pcpu_metric_desc's
 * and none named as a label (whose names are valid); else -EINVAL.
 */
static int check_const_labels(const struct pcpu_family_desc *d)
{
	int n = pcpu_metrics_check_labels(d->const_labels, d->kind);

	for (int i = 0; i < n; i++) {
		if (pcpu_metrics_check_label_value(d->const_labels[2 * i + 1],
						   PCPU_FAMILY_MAX_VALUE_LEN) != 0)
			return -EINVAL;
		for (const char *const *l = d->label_names; *l; l++)
			if (strcmp(*l, d->const_labels[2 * i]) == 0)
				return -EINVAL;
	}
	return n;
}

/*
 * @sd (a summary family's sketch, else NULL) as pcpu_family_create_summary()
 * takes it, its scale that of @d: 0 or -EINVAL.
 */
static int check_sketch(const struct pcpu_family_desc *d, const struct pcpu_summary_desc *sd)
{
	if ((d->kind == PCPU_METRIC_SUMMARY) != (sd != NULL))
		return -EINVAL;
	if (!sd)
		return 0;
	if (sd->name || sd->help || sd->unit || sd->labels || sd->registry ||
	    (sd->scale && sd->scale != d->scale))
		return -EINVAL;
	return pcpu_summary_check_sketch(sd);
}

/*
 * @hs (a sparse histogram family's buckets, else NULL) as
 * pcpu_family_create_sparse() takes it with @d: 0 or -EINVAL.
 */
static int check_sparse(const struct pcpu_family_desc *d, const struct pcpu_histogram_sparse *hs)
{
	if (!hs)
		return 0;
	if (d->kind != PCPU_METRIC_HISTOGRAM || d->bounds || d->nr_bounds || d->native)
		return -EINVAL;
	return pcpu_histogram_sparse_check(hs);
}

/*
 * @d (and a summary family's @sd, a sparse one's @hs) checked before anything is made, its
 * options (the children's) by a probe counter, once here and not at the
 * first child: the number of its constant labels, or -EINVAL or the
 * options' negative errno.
 */
static int check_desc(const struct pcpu_family_desc *d, const struct pcpu_summary_desc *sd,
		      const struct pcpu_histogram_sparse *hs)
{
	struct pcpu_counter probe;
	int nr_consts, err;

	if (!d || d->kind == PCPU_METRIC_INFO || check_sketch(d, sd) != 0 ||
	    check_sparse(d, hs) != 0 ||
	    d->max_children > PCPU_FAMILY_MAX_CHILDREN ||
	    check_bounds(d) != 0 ||
	    pcpu_metrics_check_name(NULL, d->name, d->unit, d->kind) != 0 ||
	    pcpu_metrics_check_label_names(d->label_names, PCPU_FAMILY_MAX_LABELS, d->kind) != 0 ||
	    (nr_consts = check_const_labels(d)) < 0)
		return -EINVAL;
	err = pcpu_counter_init_opts(&probe, 0, d->opts);
	if (err)
		return err;
	pcpu_counter_destroy(&probe);
	return nr_consts;
}

/* @f's own figures from @d (with @nr_consts constant labels): nothing to free. */
static void describe_family(struct pcpu_family *f, const struct pcpu_family_desc *d,
			    int nr_consts)
{
	f->kind = d->kind;
	f->child = d->kind == PCPU_METRIC_HISTOGRAM	      ? CHILD_HISTOGRAM
		   : d->kind == PCPU_METRIC_SUMMARY	      ? CHILD_SUMMARY
		   : d->flags & PCPU_FAMILY_F_SET_GAUGE ? CHILD_GAUGE
							: CHILD_COUNTER;
	f->scale = d->scale > 1 ? d->scale : 1;
	f->max_children = d->max_children ? d->max_children : PCPU_FAMILY_DEFAULT_MAX_CHILDREN;
	if (d->opts) {
		f->has_opts = true;
		f->opts = *d->opts;
	}
	f->seed = new_seed();
	while (d->label_names[f->nr_labels])
		f->nr_labels++;
	f->nr_all = f->nr_labels + (unsigned int)nr_consts;
}

/*
 * What @f holds: a histogram family's layout and prototype set, a summary
 * family's prototype (the sketch of @sd at @d's scale), the names, the
 * table and the registry entry. 0 or a negative errno; free_parts() and
 * pcpu_registry_remove() take back what was made.
 */
static int make_parts(struct pcpu_family *f, const struct pcpu_family_desc *d,
		      const struct pcpu_summary_desc *sd)
{
	int err;

	if (sd) {
		struct pcpu_summary_desc sketch = *sd;

		sketch.scale = d->scale;
		f->summary_proto = pcpu_summary_proto(&sketch);
		if (!f->summary_proto)
			return -errno;
	}

	if (d->kind == PCPU_METRIC_HISTOGRAM) {
		err = pcpu_histogram_layout(&f->layout, d->bounds, d->nr_bounds, d->scale,
					    d->native);
		if (err)
			return err;
		f->proto = pcpu_histogram_make_set(f->layout.nr_bounds);
		if (!f->proto)
			return -errno;
	}
	err = copy_names(f, d->label_names, d->const_labels);
	if (err)
		return err;
	f->table = cds_lfht_new_flavor(buckets_for(f->max_children), MIN_BUCKETS,
				       buckets_for(f->max_children), 0, &urcu_bp_flavor, NULL);
	f->entry = pcpu_registry_add(&family_class, f);
	return f->table && f->entry ? 0 : -ENOMEM;
}

/* Registers @f's metric in @d's registry: 0 or pcpu_metrics_add()'s error. */
static int register_family(struct pcpu_family *f, const struct pcpu_family_desc *d)
{
	struct metric_spec sp = { .name = d->name, .help = d->help, .unit = d->unit,
				  .kind = d->kind,
				  .label_names = (const char *const *)f->names,
				  .nr_label_names = f->nr_all,
				  .source = &pcpu_family_source, .obj = f };
	int err;

	/* counted before it can be seen: a scrape that sees it registers first */
	pcpu_metrics_before_scrape(family_before_scrape);
	__atomic_add_fetch(&live_families, 1, __ATOMIC_SEQ_CST);
	err = pcpu_metrics_add(d->registry, &sp, 1);
	if (err)
		__atomic_sub_fetch(&live_families, 1, __ATOMIC_SEQ_CST);
	return err;
}

/*
 * pcpu_family_create(); with @sd, pcpu_family_create_summary(); with @hs,
 * pcpu_family_create_sparse().
 */
static struct pcpu_family *create(const struct pcpu_family_desc *d,
				  const struct pcpu_summary_desc *sd,
				  const struct pcpu_histogram_sparse *hs)
{
	struct pcpu_family *f;
	int nr_consts, err;

	nr_consts = err = check_desc(d, sd, hs);
	if (err < 0)
		goto err_out;
	err = -ENOMEM;
	f = calloc(1, sizeof(*f));
	if (!f)
		goto err_out;
	pthread_mutex_init(&f->lock, NULL);
	err = pcpu_counter_init(&f->refused, 0);
	if (err)
		goto err_free;
	describe_family(f, d, nr_consts);
	if (hs) {
		f->sparse = true;
		f->sparse_desc = *hs;
	}
	err = make_parts(f, d, sd);
	if (err)
		goto err_parts;
	err = register_family(f, d);
	if (err)
		goto err_parts;
	return f;

err_parts:
	pcpu_registry_remove(f->entry);
	free_parts(f);
	pcpu_counter_destroy(&f->refused);
err_free:
	free(f);
err_out:
	errno = -err;
	return NULL;
}

PCPU_EXPORT struct pcpu_family *pcpu_family_create(const struct pcpu_family_desc *d)
{
	return create(d, NULL, NULL);
}

PCPU_EXPORT struct pcpu_family *pcpu_family_create_summary(const struct pcpu_family_desc *d,
							   const struct pcpu_summary_desc *s)
{
	if (!d || !s) {
		errno = EINVAL;
		return NULL;
	}
	return create(d, s, NULL);
}

PCPU_EXPORT struct pcpu_family *pcpu_family_create_sparse(const struct pcpu_family_desc *d,
							  const struct pcpu_histogram_sparse *s)
{
	if (!d || !s) {
		errno = EINVAL;
		return NULL;
	}
	return create(d, NULL, s);
}

PCPU_EXPORT void pcpu_family_destroy(struct pcpu_family *f)
{
	struct cds_lfht_iter iter;
	struct child *c, *all;

	if (!f)
		return;
	/* out of the exposition first: this waits for one in progress */
	pcpu_metrics_forget(f);
	__atomic_sub_fetch(&live_families, 1, __ATOMIC_SEQ_CST);
	pcpu_registry_remove(f->entry);
	all = f->removed;
	/* nothing else runs on f now (the caller's promise) */
	urcu_bp_read_lock();
	for_each_child(f, &iter, c) {
		cds_lfht_del(f->table, &c->node);
		c->next_removed = all;
		all = c;
	}
	urcu_bp_read_unlock();
	urcu_bp_synchronize_rcu();
	free_children(f, all);
	free_family(f);
}

/*
 * A get that cannot have its own child: counted, and answered with the
 * overflow child (NULL without one), errno @err either way.
 */
static struct child *refuse(struct pcpu_family *f, int err)
{
	pcpu_counter_add(&f->refused, 1);
	errno = err;
	return __atomic_load_n(&f->overflow, __ATOMIC_ACQUIRE);
}

/*
 * A missed tuple while the family is full is refused without allocating,
 * and without the lock: true if it must be (@c left NULL), false if it may
 * be made, or was made meanwhile (then @c holds it). Exact: a creator adds
 * its child, then stores the count with release (get_child()); a count
 * read here at the cap is either older than the creation of our tuple (the
 * family was full without it: refusing is right at that instant) or
 * newer, and then the look-up after it sees the child. Under the RCU read
 * lock.
 */
static bool refused_at_cap(struct pcpu_family *f, const char *const *values,
			   unsigned long hash, struct child **c)
{
	if (__atomic_load_n(&f->nr_children, __ATOMIC_ACQUIRE) < f->max_children)
		return false;
	*c = lookup(f, values, hash);
	return *c == NULL;
}

/* The child of @values, made on first use; NULL with errno. */
static struct child *get_child(struct pcpu_family *f, const char *const *values)
{
	struct child *c, *made;
	unsigned long hash;
	int err = 0;

	/*
	 * Only the count before the look-up: no child holds an invalid or
	 * over-long value, so a tuple that matches one is valid.
	 */
	if (!f) {
		errno = EINVAL;
		return NULL;
	}
	if (check_count(f, values) != 0)
		return refuse(f, EINVAL);
	hash = hash_values(f, values);
	urcu_bp_read_lock();
	c = lookup(f, values, hash);
	if (!c && refused_at_cap(f, values, hash, &c)) {
		urcu_bp_read_unlock();
		return refuse(f, E2BIG);
	}
	urcu_bp_read_unlock();
	if (pcpu_likely(c != NULL))
		return c;
	if (check_values(f, values) != 0)
		return refuse(f, EINVAL);

	/* first use: make the child outside the lock (see the lock order) */
	made = new_child(f, values, hash);
	if (!made)
		return refuse(f, errno);
	pthread_mutex_lock(&f->lock);
	urcu_bp_read_lock();
	publish(made);
	if (f->nr_children < f->max_children) {
		struct cds_lfht_node *node = cds_lfht_add_unique(f->table, hash, match,
								 &(struct key){ f, values },
								 &made->node);

		c = caa_container_of(node, struct child, node);
		/* release: see refused_at_cap() */
		if (c == made)
			__atomic_store_n(&f->nr_children, f->nr_children + 1, __ATOMIC_RELEASE);
	} else {
		/* full: another thread may have made this very tuple meanwhile */
		c = lookup(f, values, hash);
		if (!c)
			err = E2BIG;
	}
	urcu_bp_read_unlock();
	pthread_mutex_unlock(&f->lock);
	if (c != made)
		free_child(f, made);
	if (err)
		return refuse(f, err);
	return c;
}

/* get_child() for a family whose children are @type; else NULL, EINVAL. */
static struct child *get_typed(struct pcpu_family *f, const char *const *values,
			       enum child_type type)
{
	if (f && f->child != type) {
		errno = EINVAL;
		return NULL;
	}
	return get_child(f, values);
}

PCPU_EXPORT struct pcpu_counter *pcpu_family_get(struct pcpu_family *f,
						 const char *const *values)
{
	struct child *c = get_typed(f, values, CHILD_COUNTER);

	return c ? &c->counter : NULL;
}

PCPU_EXPORT struct pcpu_histogram *pcpu_family_get_histogram(struct pcpu_family *f,
							     const char *const *values)
{
	struct child *c = get_typed(f, values, CHILD_HISTOGRAM);

	return c ? &c->hist : NULL;
}

PCPU_EXPORT struct pcpu_gauge *pcpu_family_get_gauge(struct pcpu_family *f,
						     const char *const *values)
{
	struct child *c = get_typed(f, values, CHILD_GAUGE);

	return c ? &c->gauge : NULL;
}

PCPU_EXPORT struct pcpu_summary *pcpu_family_get_summary(struct pcpu_family *f,
							 const char *const *values)
{
	struct child *c = get_typed(f, values, CHILD_SUMMARY);

	return c ? c->summary : NULL;
}

PCPU_EXPORT int pcpu_family_remove(struct pcpu_family *f, const char *const *values)
{
	unsigned long hash;
	struct child *c;

	if (check_values(f, values) != 0)
		return -EINVAL;
	hash = hash_values(f, values);
	rcu_register_early();
	pthread_mutex_lock(&f->lock);
	urcu_bp_read_lock();
	c = lookup(f, values, hash);
	if (c && c == f->overflow) {
		urcu_bp_read_unlock();
		pthread_mutex_unlock(&f->lock);
		return -EBUSY;
	}
	/* creation and removal both hold the lock: c cannot go meanwhile */
	if (c && cds_lfht_del(f->table, &c->node) == 0)
		__atomic_store_n(&f->nr_children, f->nr_children - 1, __ATOMIC_RELAXED);
	else
		c = NULL;
	urcu_bp_read_unlock();
	pthread_mutex_unlock(&f->lock);
	if (!c)
		return -ENOENT;
	/*
	 * Out of the core's registry now, not at reclaim: its fork handlers
	 * and the refresher visit every registered counter, and a removed
	 * child is never exposed again, so neither needs to see it. Its adds
	 * still land in its slots (sum = base + slots, folded or not); its
	 * destroy at reclaim finds no entry. Outside the family's lock (see
	 * the lock order), and before the child is on the removed list, where
	 * a reclaim could free it. Histogram children keep their stat set's
	 * entry until reclaim: the set is opaque here. A set-style gauge has
	 * none.
	 */
	if (f->child == CHILD_COUNTER) {
		pcpu_registry_remove(c->counter.entry);
		c->counter.entry = NULL;
	}
	pthread_mutex_lock(&f->lock);
	c->next_removed = f->removed;
	f->removed = c;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

PCPU_EXPORT void pcpu_family_reclaim(struct pcpu_family *f)
{
	struct child *dead;

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	dead = f->removed;
	f->removed = NULL;
	pthread_mutex_unlock(&f->lock);
	if (!dead)
		return;
	urcu_bp_synchronize_rcu();
	free_children(f, dead);
}

PCPU_EXPORT int pcpu_family_set_overflow(struct pcpu_family *f, const char *const *values)
{
	struct cds_lfht_node *node;
	struct child *made, *c = NULL;
	unsigned long hash;
	int err = 0;

	if (check_values(f, values) != 0)
		return -EINVAL;
	if (__atomic_load_n(&f->overflow, __ATOMIC_ACQUIRE))
		return -EEXIST;
	hash = hash_values(f, values);
	made = new_child(f, values, hash);
	if (!made)
		return -errno;
	rcu_register_early();
	pthread_mutex_lock(&f->lock);
	urcu_bp_read_lock();
	if (f->overflow) {
		err = -EEXIST;
	} else {
		publish(made);
		node = cds_lfht_add_unique(f->table, hash, match, &(struct key){ f, values },
					   &made->node);
		c = caa_container_of(node, struct child, node);
		/* the tuple's child already lives: it leaves the cap's count */
		if (c != made)
			__atomic_store_n(&f->nr_children, f->nr_children - 1, __ATOMIC_RELEASE);
		__atomic_store_n(&f->overflow, c, __ATOMIC_RELEASE);
	}
	urcu_bp_read_unlock();
	pthread_mutex_unlock(&f->lock);
	if (c != made)
		free_child(f, made);
	return err;
}

PCPU_EXPORT uint64_t pcpu_family_refused(const struct pcpu_family *f)
{
	return f ? (uint64_t)pcpu_counter_sum(&f->refused) : 0;
}

PCPU_EXPORT unsigned int pcpu_family_count(const struct pcpu_family *f)
{
	if (!f)
		return 0;
	return __atomic_load_n(&f->nr_children, __ATOMIC_RELAXED) +
	       (__atomic_load_n(&f->overflow, __ATOMIC_RELAXED) != NULL);
}

/*
 * What glibc's malloc takes for a block of @n bytes: the request and a
 * size word, rounded up to 16 bytes (MALLOC_ALIGNMENT on x86_64, aarch64
 * and i386), at least 4 words (MINSIZE). 0.4 counted the requests alone,
 * which fell short of the heap a child holds by a word and the rounding
 * of each of its three blocks (issue 33: 263 B said, 289 B measured).
 */
static size_t malloc_block(size_t n)
{
	size_t min = (4 * sizeof(size_t) + 15) & ~(size_t)15;
	size_t block = (n + sizeof(size_t) + 15) & ~(size_t)15;

	return block > min ? block : min;
}

PCPU_EXPORT size_t pcpu_family_child_size(const struct pcpu_family *f, size_t len)
{
	/* the counter's registry entry (registry.c): a list link and four words */
	size_t entry = 6 * sizeof(void *);
	/* its armed-CPU set (lib/base/armset.h): a summary word and a bit per CPU */
	size_t armset = (1 + (pcpu_cpu_possible() + 63) / 64) * sizeof(uint64_t);

	if (!f || f->child == CHILD_HISTOGRAM || f->child == CHILD_SUMMARY)
		return 0;
	if (f->child == CHILD_GAUGE)
		return malloc_block(child_alloc_size(f, len + f->nr_labels));
	/* the slots are the arena's (mmap()ed), 16 bytes per possible CPU */
	return malloc_block(child_alloc_size(f, len + f->nr_labels)) + malloc_block(entry) +
	       malloc_block(armset) + sizeof(struct pcpu_slot) * pcpu_cpu_possible();
}

/* The exposition's side (metrics_list.c). */

static void family_before_scrape(void)
{
	/*
	 * Only where a family exists: urcu's registration allocates, and
	 * aborts if it cannot, which an exposition without families must not
	 * risk. A scrape that reads 0 here while the first family is being
	 * created may then meet it under the metrics lock and register there:
	 * a fork() at that instant could deadlock (see the lock order above);
	 * a window of one scrape per thread, at the first family's creation.
	 */
	if (__atomic_load_n(&live_families, __ATOMIC_SEQ_CST))
		rcu_register_early();
}

static bool family_refusals(const void *family, int64_t *n)
{
	const struct pcpu_family *f = family;

	*n = pcpu_counter_sum(&f->refused);
	return *n > 0 || __atomic_load_n(&f->overflow, __ATOMIC_ACQUIRE);
}

/* Under the metrics lock. */

/* Fills @smp's figures from child @c (a histogram's buckets into @buckets). */
static int child_sample(struct pcpu_family *f, struct child *c, struct pcpu_metric_sample *smp,
			uint64_t *buckets)
{
	int64_t v;
	
	switch (f->child) {
	case CHILD_HISTOGRAM:
		return pcpu_histogram_fill(&c->hist, smp, buckets);
	case CHILD_GAUGE:
		smp->value = pcpu_gauge_get(&c->gauge);
		return 0;
	case CHILD_SUMMARY:
		return pcpu_summary_fill(c->summary, smp);
	case CHILD_COUNTER:
		break;
	}
	v = pcpu_counter_sum(&c->counter);
	/* the metrics lock serialises expositions: one writer of high_water */
	if (f->kind == PCPU_METRIC_COUNTER) {
		if (v < c->high_water)
			v = c->high_water;
		c->high_water = v;
		smp->exemplars = pcpu_counter_exemplars(&c->counter, f->scale);
	}
	smp->value = v;
	return 0;
}

static int family_walk(void *family, struct pcpu_metric_sample *smp,
		     int (*cb)(const struct pcpu_metric_sample *, void *), void *arg)
{
	uint64_t buckets[PCPU_HISTOGRAM_MAX_BOUNDS + 1];
	struct pcpu_family *f = family;
	struct cds_lfht_iter iter;
	struct child *c;
	int ret = 0;

	smp->scale = f->scale;
	urcu_bp_read_lock();
	for_each_child(f, &iter, c) {
		smp->labels = c->labels;
		smp->flags &= ~PCPU_METRIC_SAMPLE_F_CREATED;
		ret = child_sample(f, c, smp, buckets);
		/* a sparse child's reset (min_reset_ns) sets its own created time */
		if (!ret && !(smp->flags & PCPU_METRIC_SAMPLE_F_CREATED) &&
		    (f->kind == PCPU_METRIC_COUNTER || f->kind == PCPU_METRIC_HISTOGRAM ||
		     f->kind == PCPU_METRIC_SUMMARY)) {
			smp->created = c->created;
			smp->flags |= PCPU_METRIC_SAMPLE_F_CREATED;
		}
		if (!ret)
			ret = cb(smp, arg);
		if (ret)
			break;
	}
	urcu_bp_read_unlock();
	return ret;
}

static const struct metric_source pcpu_family_source = {
	.walk = family_walk,
	.refusals = family_refusals,
	.own_name = true,
};

/* Partial removal and currying (family_curry.c). */

unsigned int pcpu_family_nr_labels(const struct pcpu_family *f)
{
	return f->nr_labels;
}

int pcpu_family_label_index(const struct pcpu_family *f, const char *name)
{
	for (unsigned int i = 0; i < f->nr_labels; i++)
		if (strcmp(f->names[i], name) == 0)
			return (int)i;
	return -1;
}

/* Does child @c hold @want[i] for each label i where @want[i] is not NULL? */
static bool child_matches(const struct pcpu_family *f, const struct child *c,
			  const char *const *want)
{
	for (unsigned int i = 0; i < f->nr_all; i++) {
		unsigned int at = f->order[i];

		if (at < f->nr_labels && want[at] && strcmp(c->labels[2 * i + 1], want[at]) != 0)
			return false;
	}
	return true;
}

/*
 * pcpu_family_remove() for every child that matches @want, under one hold
 * of the lock: no child is created or removed meanwhile, so the count is
 * of the children this call took out. Each then goes as a removed one
 * does (registry first, then the removed list), so reclaim frees it after
 * a grace period and a pointer kept from before stays valid until then.
 */
int pcpu_family_remove_where(struct pcpu_family *f, const char *const *want)
{
	struct cds_lfht_iter iter;
	struct child *c, *gone = NULL, *last = NULL;
	int n = 0;

	rcu_register_early();
	pthread_mutex_lock(&f->lock);
	urcu_bp_read_lock();
	for_each_child(f, &iter, c) {
		if (c == f->overflow || !child_matches(f, c, want))
			continue;
		/* deleting the node the iteration stands on is allowed by liburcu */
		if (cds_lfht_del(f->table, &c->node) != 0)
			continue;
		__atomic_store_n(&f->nr_children, f->nr_children - 1, __ATOMIC_RELAXED);
		c->next_removed = gone;
		gone = c;
		n++;
	}
	urcu_bp_read_unlock();
	pthread_mutex_unlock(&f->lock);
	if (!gone)
		return 0;
	/* out of the core's registry outside the lock, as pcpu_family_remove() */
	for (c = gone; c; c = c->next_removed) {
		if (f->child == CHILD_COUNTER) {
			pcpu_registry_remove(c->counter.entry);
			c->counter.entry = NULL;
		}
		last = c;
	}
	pthread_mutex_lock(&f->lock);
	last->next_removed = f->removed;
	f->removed = gone;
	pthread_mutex_unlock(&f->lock);
	return n;
}
