/* SPDX-License-Identifier: MIT */
/*
 * Sparse native histograms (see pcpu_histogram_create_sparse() in
 * <percpu/histogram.h>): native buckets allocated as they are first used,
 * a cap on populated buckets with resolution reduction, and a minimum time between
 * resets, as client_golang's, with a per-CPU, lock-free observe.
 *
 * Layout. A state holds one schema's buckets: chunks of CHUNK_KEYS
 * consecutive keys of one sign, each a per-CPU stat set, in an
 * open-addressed table of pointers (never resized: a bigger table is a new
 * state); a stat set of two items (the zero bucket, and observations with
 * no bucket: NaN, infinities); a per-CPU double counter for the sum. A
 * chunk's @touched bit i is set (atomic OR) by the first observation in
 * key first + i, and whoever sets it counts it in the state's @nr_touched:
 * the populated buckets.
 *
 * Invariants.
 * - Observers find the state under urcu-bp's read lock and add to it
 *   only; they never free (a stat set's destroy waits for a grace period:
 *   a chunk that lost an insertion race is kept in @spares), merge or
 *   take a lock, except to act on the cap (after their add, outside the
 *   read lock: the rebuild lock). A new chunk's stat set is made before
 *   the read lock (ADD_NEED_SET, then a try again): pcpu_stat_create()
 *   takes the core's registry lock, whose holder in fork()'s handlers
 *   waits for urcu's grace-period lock, which a rebuild's
 *   synchronize_rcu() holds while it waits for the readers: a reader
 *   waiting for the registry lock would close the circle.
 * - A rebuild (reduce, reset, grow: sparse_rebuild()) runs under the rebuild
 *   lock: it publishes a new state and parks the old one as @retiring
 *   under @lock; waits for a grace period (no lock but the rebuild lock
 *   held: see the lock order); then, the old state quiescent, adds its
 *   exact counts into the new one under @lock (a reset drops them) and
 *   clears @retiring. A scrape reads under @lock: the state and, where
 *   kept, the retiring one, so each observation counts once whichever
 *   side of a rebuild it lands on.
 * - @retiring is set only between a rebuild's publication and the end of
 *   its merge (finish_rebuild()), by the holder of the rebuild lock: a
 *   holder of the rebuild lock that finds it set found a rebuild that a
 *   fork() cut short (see Fork).
 *
 * Lock order. The rebuild lock is taken by observers past the cap and
 * never under another lock. @lock is taken under the metrics lock
 * (scrapes), under the rebuild lock, alone (pcpu_histogram_snapshot(),
 * stats), and at fork under the metrics lock and the fork leaves' mutex
 * (list/fork_leaves.c); nothing that allocates a stat set (which takes
 * the core's registry lock, which the fork handlers take first) or waits
 * for a grace period or for another lock runs under it.
 *
 * Fork. The metrics lock's fork handlers take every sparse histogram's
 * @lock (a leaf: pcpu_fork_leaf_add() at creation, family children
 * included), so no rebuild is inside a step under @lock at the fork. They
 * cannot take the rebuild lock, whose holder allocates stat sets and
 * waits for grace periods, which need the locks the handlers hold
 * already. The child makes both anew (sparse_fork_child()): @lock, which
 * the forking thread took, and the rebuild lock, whose holder, if any, is
 * not in the child. A rebuild whose thread the child lacks was then at
 * one of these points:
 * - building its new state, unpublished: leaked in the child (memory, and
 *   stat sets that stay in the core's registry), nothing changed;
 * - published, the old state parked as @retiring: a scrape counts both
 *   meanwhile, and the child's first holder of the rebuild lock (an
 *   observer past the cap: enforce_cap()) finishes the merge (or, for a
 *   reset, the drop) once, as the rebuild would have; free finishes none;
 * - freeing the old state, unreachable already: the rest of it leaked.
 * The one observation of a vanished thread in flight at the fork (added,
 * not yet returned) is in the child's counts, or, if it passed the cap and
 * its reset was under way, among the reset's discarded ones, not repeated;
 * a stat set it had made for a new chunk and not yet used is leaked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urcu-bp.h>

#include <percpu/counter_double.h>
#include <percpu/metrics.h>
#include <percpu/stat.h>

#include "kinds/kinds_internal.h"
#include "list/list_internal.h"

/* Keys per chunk: a power of two (2 powers of 2 at schema 3). */
#define CHUNK_BITS 4
#define CHUNK_KEYS (1u << CHUNK_BITS)
#define CHUNK_MASK (CHUNK_KEYS - 1)
/* A state's first table; a table grows when its chunks pass half of it. */
#define MIN_SLOTS 16u

/* Observations with no bucket that make the sum so (state's @odd). */
#define ODD_NAN 1u
#define ODD_POS_INF 2u
#define ODD_NEG_INF 4u

/* Items of a state's @misc set. */
#define MISC_ZERO 0
#define MISC_NONE 1 /* counted in no bucket: NaN, infinities, a failed allocation */

struct chunk {
	int32_t first;     /* key of item 0, a multiple of CHUNK_KEYS */
	uint32_t negative; /* 1: buckets of negative observations (keys of |v|) */
	uint32_t touched;  /* bit i: key first + i observed (atomic) */
	struct pcpu_stat *set;
	struct chunk *next_spare; /* in the state's @spares */
};

struct state {
	int32_t schema;
	uint32_t nr_slots;   /* a power of two */
	uint32_t nr_chunks;  /* in the table (atomic) */
	uint32_t nr_touched; /* populated buckets (atomic) */
	uint32_t odd;        /* ODD_* seen (atomic) */
	uint32_t full;       /* the table wants to grow (atomic) */
	struct pcpu_stat *misc;
	/* a cache line of its own, as a histogram's sum (histogram.c: i386's split locks) */
	struct pcpu_counter_double *sum;
	struct chunk **slots; /* atomic pointers */
	/*
	 * Chunks that lost an insertion race, freed with the state: a stat
	 * set's destroy waits for a grace period, which an observer inside
	 * the read lock must not (atomic push only).
	 */
	struct chunk *spares;
};

struct pcpu_sparse {
	struct pcpu_fork_leaf leaf; /* fork takes @lock (see Fork) */
	struct state *state;    /* published with release, read with acquire under RCU */
	/* written under @lock by the rebuild lock's holder: a state being replaced */
	struct state *retiring;
	bool retiring_kept;     /* as @retiring: its counts go to the new state */
	pthread_mutex_t lock;
	pthread_mutex_t rebuild;
	int32_t schema;         /* the initial one */
	uint32_t max_buckets;   /* 0: none */
	double zero_threshold;  /* |v| <= it: the zero bucket */
	int64_t min_reset_ns;
	int64_t sum_scale;
	int64_t scale;          /* pcpu_histogram_observe()'s values are divided by it */
	int64_t last_reset;     /* CLOCK_MONOTONIC ns: creation or the last reset */
	double created;         /* CLOCK_REALTIME of the last reset; 0: none yet */
	struct pcpu_sparse_stats stats; /* under @lock */
	/* what the last scrape filled (the metrics lock serializes scrapes) */
	int32_t *keys;
	uint64_t *counts;
	size_t cap;
};

static const char *const chunk_names[CHUNK_KEYS] = { "k0", "k1", "k2",  "k3",  "k4",  "k5",
						     "k6", "k7", "k8",  "k9",  "k10", "k11",
						     "k12", "k13", "k14", "k15" };

/* A set of @n items named @names; NULL with errno. */
static struct pcpu_stat *make_set(const char *const *names, uint32_t n)
{
	struct pcpu_stat_item items[CHUNK_KEYS];

	for (uint32_t i = 0; i < n; i++)
		/* as a histogram's buckets: only exact snapshots read them */
		items[i] = (struct pcpu_stat_item){ .name = names[i], .group = 1,
						    .floor = PCPU_STAT_MAX_THRESH };
	return pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items, .nr_items = n });
}

static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The chunk's first key and a key's item in it (floor division, either sign). */
static int32_t chunk_first(int32_t key)
{
	return key - (int32_t)((uint32_t)key & CHUNK_MASK);
}

static void state_free(struct state *st)
{
	if (!st)
		return;
	for (uint32_t i = 0; st->slots && i < st->nr_slots; i++)
		if (st->slots[i]) {
			pcpu_stat_destroy(st->slots[i]->set);
			free(st->slots[i]);
		}
	free(st->slots);
	while (st->spares) {
		struct chunk *c = st->spares;

		st->spares = c->next_spare;
		pcpu_stat_destroy(c->set);
		free(c);
	}
	pcpu_stat_destroy(st->misc);
	pcpu_counter_double_destroy(st->sum);
	free(st->sum);
	free(st);
}

static struct state *state_new(const struct pcpu_sparse *sp, int32_t schema, uint32_t nr_slots)
{
	static const char *const misc_names[] = { "zero", "none" };
	struct state *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->schema = schema;
	st->nr_slots = nr_slots;
	st->slots = calloc(nr_slots, sizeof(*st->slots));
	st->misc = make_set(misc_names, 2);
	st->sum = aligned_alloc(64, (sizeof(*st->sum) + 63) & ~(size_t)63);
	if (st->sum)
		memset(st->sum, 0, sizeof(*st->sum));
	if (!st->slots || !st->misc || !st->sum ||
	    pcpu_counter_double_init(st->sum, PCPU_METRIC_GAUGE, sp->sum_scale)) {
		state_free(st);
		return NULL;
	}
	return st;
}

/* Keeps @c, unused, until @st is freed (see @spares). */
static void spare(struct state *st, struct chunk *c)
{
	c->next_spare = __atomic_load_n(&st->spares, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&st->spares, &c->next_spare, c, true,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

/*
 * The chunk of @key and sign @negative in @st; if missing, NULL, or with
 * @set inserted (a lock-free compare-and-swap into the first free slot of
 * its probe) with the stat set *@set, taken (*@set NULL after), or if
 * *@set is NULL one made here, which only a caller outside the read lock
 * may ask (see the head). NULL also if the table is full (the state is
 * then marked to grow) or out of memory.
 */
static struct chunk *chunk_get(struct state *st, int32_t key, uint32_t negative,
			       struct pcpu_stat **set)
{
	int32_t first = chunk_first(key);
	uint32_t id = ((uint32_t)first >> CHUNK_BITS) * 2u + negative;
	uint32_t mask = st->nr_slots - 1, at = (id * UINT32_C(2654435761)) & mask;
	struct chunk *mine = NULL;

	for (uint32_t probe = 0; probe < st->nr_slots; probe++, at = (at + 1) & mask) {
		struct chunk *c = __atomic_load_n(&st->slots[at], __ATOMIC_ACQUIRE);

		if (!c) {
			if (!set)
				return NULL;
			if (!mine) {
				mine = calloc(1, sizeof(*mine));
				if (mine)
					mine->set = *set ? *set : make_set(chunk_names, CHUNK_KEYS);
				if (!mine || !mine->set) {
					/* out of memory, not of room: no growth */
					free(mine);
					return NULL;
				}
				*set = NULL;
				mine->first = first;
				mine->negative = negative;
			}
			if (__atomic_compare_exchange_n(&st->slots[at], &c, mine, false,
							__ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
				/* past half the table, probes grow long: ask for a bigger one */
				if (__atomic_add_fetch(&st->nr_chunks, 1, __ATOMIC_RELAXED) >
				    st->nr_slots / 2)
					__atomic_store_n(&st->full, 1, __ATOMIC_RELAXED);
				return mine;
			}
			/* another thread took the slot: @c is its chunk */
		}
		if (c->first == first && c->negative == negative) {
			if (mine)
				spare(st, mine);
			return c;
		}
	}
	if (mine)
		spare(st, mine);
	__atomic_store_n(&st->full, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Adds @n observations to key @key of sign @negative in chunk @c: the populated buckets. */
static uint32_t chunk_add(struct state *st, struct chunk *c, int32_t key, int64_t n)
{
	uint32_t i = (uint32_t)(key - c->first), bit = UINT32_C(1) << i;

	pcpu_stat_add(c->set, i, n);
	/* only the first observation of a bucket writes the shared word */
	if (!(__atomic_load_n(&c->touched, __ATOMIC_RELAXED) & bit) &&
	    !(__atomic_fetch_or(&c->touched, bit, __ATOMIC_RELAXED) & bit))
		return __atomic_add_fetch(&st->nr_touched, 1, __ATOMIC_RELAXED);
	return __atomic_load_n(&st->nr_touched, __ATOMIC_RELAXED);
}

/* What an add left to do. */
enum add_result { ADD_DONE, ADD_OVER, ADD_NO_ROOM, ADD_NEED_SET };

/*
 * Observes @v (exposed units) in @st, under the read lock; a new chunk
 * takes *@set, and without one the add asks for it (ADD_NEED_SET).
 */
static enum add_result add(struct pcpu_sparse *sp, struct state *st, double v,
			   struct pcpu_stat **set)
{
	double a = fabs(v);
	struct chunk *c;
	int32_t key;
	uint32_t n;

	if (!(a <= 1.7976931348623157e308)) { /* NaN, infinities */
		__atomic_fetch_or(&st->odd, v != v ? ODD_NAN : v > 0 ? ODD_POS_INF : ODD_NEG_INF,
				  __ATOMIC_RELAXED);
		pcpu_stat_add(st->misc, MISC_NONE, 1);
		return ADD_DONE;
	}
	if (a <= sp->zero_threshold) {
		pcpu_stat_add(st->misc, MISC_ZERO, 1);
		pcpu_counter_double_add(st->sum, v);
		return ADD_DONE;
	}
	key = pcpu_metrics_native_key(a, st->schema);
	c = chunk_get(st, key, v < 0, NULL);
	if (!c && !*set)
		return ADD_NEED_SET;
	if (!c)
		c = chunk_get(st, key, v < 0, set);
	if (!c)
		return ADD_NO_ROOM;
	n = chunk_add(st, c, key, 1);
	pcpu_counter_double_add(st->sum, v);
	if ((sp->max_buckets && n > sp->max_buckets) ||
	    __atomic_load_n(&st->full, __ATOMIC_RELAXED))
		return ADD_OVER;
	return ADD_DONE;
}

/* Key @key of schema @from in schema @to (<= @from): ceil(key / 2) per step, as Go. */
static int32_t reduce_key(int32_t key, int32_t from, int32_t to)
{
	for (; from > to; from--)
		key = key > 0 ? (int32_t)(((int64_t)key + 1) / 2) : key / 2;
	return key;
}

int32_t pcpu_sparse_reduce_key(int32_t key, int32_t from, int32_t to)
{
	return reduce_key(key, from, to);
}

/* Each chunk of @st with its exact counts, where @st is quiescent. */
static int chunk_counts(struct chunk *c, int64_t counts[CHUNK_KEYS])
{
	return pcpu_stat_snapshot(c->set, counts, NULL);
}

/*
 * Adds quiescent @old's counts into @new (under @lock): each bucket into
 * the bucket of its key at @new's schema (created beforehand by
 * prepare_merge(); one missing, its counts go to MISC_NONE: counted, in no
 * bucket), the zero bucket, the sum and the odd flags.
 */
static void merge(struct state *old, struct state *new)
{
	int64_t counts[CHUNK_KEYS], misc[2];

	for (uint32_t s = 0; s < old->nr_slots; s++) {
		struct chunk *c = old->slots[s];

		if (!c || chunk_counts(c, counts))
			continue;
		for (uint32_t i = 0; i < CHUNK_KEYS; i++) {
			int32_t key;
			struct chunk *to;

			if (counts[i] <= 0)
				continue;
			key = reduce_key(c->first + (int32_t)i, old->schema, new->schema);
			to = chunk_get(new, key, c->negative, NULL);
			if (to)
				chunk_add(new, to, key, counts[i]);
			else
				pcpu_stat_add(new->misc, MISC_NONE, counts[i]);
		}
	}
	if (!pcpu_stat_snapshot(old->misc, misc, NULL)) {
		pcpu_stat_add(new->misc, MISC_ZERO, misc[MISC_ZERO]);
		pcpu_stat_add(new->misc, MISC_NONE, misc[MISC_NONE]);
	}
	pcpu_counter_add(&new->sum->counter, pcpu_counter_sum(&old->sum->counter));
	__atomic_fetch_or(&new->odd, __atomic_load_n(&old->odd, __ATOMIC_RELAXED),
			  __ATOMIC_RELAXED);
}

/* Creates in @new the chunks that @old's buckets merge into (allocations: no lock held). */
static void prepare_merge(struct state *old, struct state *new)
{
	for (uint32_t s = 0; s < old->nr_slots; s++) {
		struct chunk *c = old->slots[s];
		uint32_t touched = c ? __atomic_load_n(&c->touched, __ATOMIC_RELAXED) : 0;

		for (uint32_t i = 0; i < CHUNK_KEYS; i++)
			if (touched & (UINT32_C(1) << i))
				chunk_get(new,
					  reduce_key(c->first + (int32_t)i, old->schema, new->schema),
					  c->negative, &(struct pcpu_stat *){ NULL });
	}
}

/* The observations @st counts (quiescent). */
static uint64_t state_count(struct state *st)
{
	int64_t counts[CHUNK_KEYS], misc[2];
	uint64_t n = 0;

	for (uint32_t s = 0; s < st->nr_slots; s++)
		if (st->slots[s] && !chunk_counts(st->slots[s], counts))
			for (uint32_t i = 0; i < CHUNK_KEYS; i++)
				n += (uint64_t)counts[i];
	if (!pcpu_stat_snapshot(st->misc, misc, NULL))
		n += (uint64_t)misc[MISC_ZERO] + (uint64_t)misc[MISC_NONE];
	return n;
}

#ifdef PCPU_TEST_HOOKS
void (*pcpu_sparse_debug_parked_hook)(void);
#endif

/*
 * A rebuild's second half, under the rebuild lock: @retiring, quiescent (a
 * grace period passed since the state replaced it), merged into the state
 * when kept, else dropped (a reset), then freed.
 */
static void finish_rebuild(struct pcpu_sparse *sp)
{
	struct state *old = sp->retiring, *new = __atomic_load_n(&sp->state, __ATOMIC_ACQUIRE);
	bool keep = sp->retiring_kept;

	if (keep)
		prepare_merge(old, new);
	pthread_mutex_lock(&sp->lock);
	if (keep) {
		merge(old, new);
		if (new->schema < old->schema)
			sp->stats.reductions++;
		else
			sp->stats.grows++;
	} else {
		sp->stats.resets++;
		sp->stats.discarded += state_count(old);
		sp->last_reset = now_ns(CLOCK_MONOTONIC);
		sp->created = (double)now_ns(CLOCK_REALTIME) / 1e9;
	}
	sp->retiring = NULL;
	sp->retiring_kept = false;
	pthread_mutex_unlock(&sp->lock);
	state_free(old);
}

/*
 * Replaces @old (the state, under the rebuild lock) by a new one of
 * @schema and @nr_slots slots: its counts merged in when @keep, else
 * dropped (a reset). 0 or -ENOMEM (nothing changed).
 */
static int sparse_rebuild(struct pcpu_sparse *sp, struct state *old, int32_t schema,
			  uint32_t nr_slots, bool keep)
{
	struct state *new = state_new(sp, schema, nr_slots);

	if (!new)
		return -ENOMEM;
	pthread_mutex_lock(&sp->lock);
	sp->retiring = old;
	sp->retiring_kept = keep;
	__atomic_store_n(&sp->state, new, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&sp->lock);
#ifdef PCPU_TEST_HOOKS
	/* parked: the suite forks here (sparse_fork.c) */
	if (pcpu_sparse_debug_parked_hook)
		pcpu_sparse_debug_parked_hook();
#endif
	/* every observer that loaded @old is done with it */
	urcu_bp_synchronize_rcu();
	finish_rebuild(sp);
	return 0;
}

/*
 * After an add past the cap, or into a table that wants to grow: as
 * client_golang, reset if min_reset_ns passed since the last reset, else
 * lower the schema, until the state is within the cap (or at the
 * coarsest schema); a table past half full grows. 1 if it reset, 0, or
 * -ENOMEM.
 */
static int enforce_cap(struct pcpu_sparse *sp)
{
	int err = 0, reset = 0;

	pthread_mutex_lock(&sp->rebuild);
	if (sp->retiring) {
		/*
		 * A rebuild that a fork() cut short, in the child: its thread
		 * is gone with its readers, and no other can know the old state.
		 */
		urcu_bp_synchronize_rcu();
		finish_rebuild(sp);
	}
	for (;;) {
		struct state *st = __atomic_load_n(&sp->state, __ATOMIC_ACQUIRE);
		uint32_t n = __atomic_load_n(&st->nr_touched, __ATOMIC_RELAXED);

		if (sp->max_buckets && n > sp->max_buckets) {
			if (sp->min_reset_ns &&
			    now_ns(CLOCK_MONOTONIC) - sp->last_reset >= sp->min_reset_ns)
				err = sparse_rebuild(sp, st, sp->schema, MIN_SLOTS, false), reset = 1;
			else if (st->schema > PCPU_HISTOGRAM_MIN_SCHEMA)
				err = sparse_rebuild(sp, st, st->schema - 1, st->nr_slots, true);
			else if (__atomic_load_n(&st->full, __ATOMIC_RELAXED))
				err = sparse_rebuild(sp, st, st->schema, st->nr_slots * 2, true);
			else
				break; /* the coarsest schema: the cap cannot hold, as Go's */
		} else if (__atomic_load_n(&st->full, __ATOMIC_RELAXED)) {
			err = st->nr_slots <= UINT32_MAX / 4 ?
				      sparse_rebuild(sp, st, st->schema, st->nr_slots * 2, true) :
				      -ENOMEM;
		} else {
			break;
		}
		if (err)
			break;
	}
	pthread_mutex_unlock(&sp->rebuild);
	return err ? err : reset;
}

/* Counts @v in no bucket (out of memory): in the count and the sum only. */
static void add_none(struct pcpu_sparse *sp, double v)
{
	struct state *st;

	urcu_bp_read_lock();
	st = __atomic_load_n(&sp->state, __ATOMIC_ACQUIRE);
	pcpu_stat_add(st->misc, MISC_NONE, 1);
	pcpu_counter_double_add(st->sum, v);
	urcu_bp_read_unlock();
}

/* One try at observing @v: true when done (see pcpu_sparse_observe() for @set). */
static bool observe_once(struct pcpu_sparse *sp, double v, struct pcpu_stat **set)
{
	struct state *st;
	enum add_result r;
	int err;

	urcu_bp_read_lock();
	st = __atomic_load_n(&sp->state, __ATOMIC_ACQUIRE);
	r = add(sp, st, v, set);
	urcu_bp_read_unlock();
	if (r == ADD_DONE)
		return true;
	if (r == ADD_NEED_SET) {
		*set = make_set(chunk_names, CHUNK_KEYS);
		if (*set)
			return false;
		add_none(sp, v);
		return true;
	}
	/* a rebuild waits for readers: act outside the read lock */
	err = enforce_cap(sp);
	if (r == ADD_OVER) {
		if (err <= 0)
			return true;
		/* as client_golang: the observation that reset stays, in the new state */
		pthread_mutex_lock(&sp->lock);
		sp->stats.repeated++;
		pthread_mutex_unlock(&sp->lock);
		return false;
	}
	if (err >= 0 && __atomic_load_n(&sp->state, __ATOMIC_ACQUIRE) != st)
		return false; /* a new state (a bigger table): try there */
	add_none(sp, v);
	return true;
}

void pcpu_sparse_observe(struct pcpu_sparse *sp, double v)
{
	/*
	 * A new chunk's stat set, made outside the read lock (see the head);
	 * left over if the chunk came meanwhile (another thread's, a new
	 * state's), destroyed (a grace period) outside it too.
	 */
	struct pcpu_stat *set = NULL;

	while (!observe_once(sp, v, &set))
		;
	if (set)
		pcpu_stat_destroy(set);
}

/* Fork (see the head): @lock taken at fork; both locks made anew in the child. */

static struct pcpu_sparse *of_leaf(struct pcpu_fork_leaf *l)
{
	return caa_container_of(l, struct pcpu_sparse, leaf);
}

static void sparse_fork_prepare(struct pcpu_fork_leaf *l)
{
	pthread_mutex_lock(&of_leaf(l)->lock);
}

static void sparse_fork_parent(struct pcpu_fork_leaf *l)
{
	pthread_mutex_unlock(&of_leaf(l)->lock);
}

static void sparse_fork_child(struct pcpu_fork_leaf *l)
{
	struct pcpu_sparse *sp = of_leaf(l);

	pthread_mutex_init(&sp->lock, NULL);
	/* its holder, if any, was another thread: what it left, enforce_cap() finishes */
	pthread_mutex_init(&sp->rebuild, NULL);
}

static const struct pcpu_fork_leaf_ops sparse_fork_ops = {
	.prepare = sparse_fork_prepare,
	.parent = sparse_fork_parent,
	.child = sparse_fork_child,
};

int pcpu_sparse_new(const struct pcpu_sparse_shape *s, struct pcpu_sparse **out)
{
	struct pcpu_sparse *sp = calloc(1, sizeof(*sp));

	if (!sp)
		return -ENOMEM;
	pthread_mutex_init(&sp->lock, NULL);
	pthread_mutex_init(&sp->rebuild, NULL);
	sp->schema = s->schema;
	sp->max_buckets = s->max_buckets;
	/* 2^-128 for 0, as the Go client: below any positive observation */
	sp->zero_threshold = s->zero_threshold > 0 ? s->zero_threshold : ldexp(1, -128);
	sp->min_reset_ns = s->min_reset_ns;
	sp->scale = s->scale;
	sp->sum_scale = s->sum_scale ? s->sum_scale :
			s->scale > 1 ? s->scale :
				       PCPU_COUNTER_DOUBLE_SCALE;
	sp->last_reset = now_ns(CLOCK_MONOTONIC);
	sp->state = state_new(sp, s->schema, MIN_SLOTS);
	if (!sp->state) {
		pthread_mutex_destroy(&sp->lock);
		pthread_mutex_destroy(&sp->rebuild);
		free(sp);
		return -ENOMEM;
	}
	sp->leaf.ops = &sparse_fork_ops;
	pcpu_fork_leaf_add(&sp->leaf);
	*out = sp;
	return 0;
}

void pcpu_sparse_free(struct pcpu_sparse *sp)
{
	if (!sp)
		return;
	pcpu_fork_leaf_remove(&sp->leaf);
	/* a rebuild that a fork() cut short and the child never finished */
	state_free(sp->retiring);
	state_free(sp->state);
	pthread_mutex_destroy(&sp->lock);
	pthread_mutex_destroy(&sp->rebuild);
	free(sp->keys);
	free(sp->counts);
	free(sp);
}

/* A populated bucket, for sorting a scrape's buckets. */
struct bucket {
	int32_t key;
	uint32_t negative;
	uint64_t n;
};

static int by_sign_and_key(const void *a, const void *b)
{
	const struct bucket *x = a, *y = b;

	/* negative buckets first */
	if (x->negative != y->negative)
		return x->negative ? -1 : 1;
	return (x->key > y->key) - (x->key < y->key);
}

/* Appends @st's buckets (at @schema) to @out; adds its zero bucket, no-bucket count, sum. */
static size_t collect(struct state *st, int32_t schema, struct bucket *out, uint64_t *zero,
		      uint64_t *none, double *sum, uint32_t *odd)
{
	int64_t counts[CHUNK_KEYS], misc[2];
	size_t n = 0;

	for (uint32_t s = 0; s < st->nr_slots; s++) {
		struct chunk *c = __atomic_load_n(&st->slots[s], __ATOMIC_ACQUIRE);

		if (!c || chunk_counts(c, counts))
			continue;
		for (uint32_t i = 0; i < CHUNK_KEYS; i++)
			if (counts[i] > 0)
				out[n++] = (struct bucket){
					.key = reduce_key(c->first + (int32_t)i, st->schema, schema),
					.negative = c->negative,
					.n = (uint64_t)counts[i]
				};
	}
	if (!pcpu_stat_snapshot(st->misc, misc, NULL)) {
		*zero += misc[MISC_ZERO] > 0 ? (uint64_t)misc[MISC_ZERO] : 0;
		*none += misc[MISC_NONE] > 0 ? (uint64_t)misc[MISC_NONE] : 0;
	}
	*sum += pcpu_counter_double_sum(st->sum);
	*odd |= __atomic_load_n(&st->odd, __ATOMIC_RELAXED);
	return n;
}

/* A scrape's reading of a histogram, before it becomes a sample. */
struct reading {
	struct bucket *b; /* every chunk's populated buckets, at the state's schema */
	size_t n;
	uint64_t zero, none, total;
	uint32_t odd;
	int32_t schema;
	double sum;
};

/*
 * Reads @sp's state, and the retiring one whose counts are still to be
 * merged (reduced to the state's schema), under @lock: each observation
 * once. 0 or -ENOMEM.
 */
static int read_states(struct pcpu_sparse *sp, struct reading *r, struct pcpu_metric_sample *smp)
{
	struct state *st, *old;
	size_t room;

	pthread_mutex_lock(&sp->lock);
	st = sp->state;
	old = sp->retiring_kept ? sp->retiring : NULL;
	room = (size_t)st->nr_slots * CHUNK_KEYS + (old ? (size_t)old->nr_slots * CHUNK_KEYS : 0);
	r->b = malloc(room * sizeof(*r->b));
	if (!r->b) {
		pthread_mutex_unlock(&sp->lock);
		return -ENOMEM;
	}
	r->schema = st->schema;
	r->n = collect(st, st->schema, r->b, &r->zero, &r->none, &r->sum, &r->odd);
	if (old)
		r->n += collect(old, st->schema, r->b + r->n, &r->zero, &r->none, &r->sum, &r->odd);
	if (sp->created > 0) {
		smp->created = sp->created;
		smp->flags |= PCPU_METRIC_SAMPLE_F_CREATED;
	}
	pthread_mutex_unlock(&sp->lock);
	r->total = r->zero + r->none;
	for (size_t i = 0; i < r->n; i++)
		r->total += r->b[i].n;
	return 0;
}

/*
 * @r's buckets as @smp's keys, sorted, one per (sign, key), in @sp's
 * buffers (the scrape's: see pcpu_sparse_fill()). 0 or -ENOMEM.
 */
static int put_keys(struct pcpu_sparse *sp, struct reading *r, struct pcpu_metric_sample *smp)
{
	size_t k = 0;

	qsort(r->b, r->n, sizeof(*r->b), by_sign_and_key);
	if (r->n > sp->cap) {
		int32_t *nk = realloc(sp->keys, r->n * sizeof(*nk));
		uint64_t *nc = nk ? realloc(sp->counts, r->n * sizeof(*nc)) : NULL;

		if (nk)
			sp->keys = nk;
		if (nc)
			sp->counts = nc;
		if (!nk || !nc)
			return -ENOMEM;
		sp->cap = r->n;
	}
	smp->nr_negative = 0;
	/* a key from two chunks (of the old state, reduced) is one bucket */
	for (size_t i = 0; i < r->n; i++) {
		if (k && sp->keys[k - 1] == r->b[i].key && r->b[i - 1].negative == r->b[i].negative) {
			sp->counts[k - 1] += r->b[i].n;
			continue;
		}
		smp->nr_negative += r->b[i].negative;
		sp->keys[k] = r->b[i].key;
		sp->counts[k++] = r->b[i].n;
	}
	smp->nr_keys = (uint32_t)k;
	smp->keys = sp->keys;
	smp->key_counts = sp->counts;
	return 0;
}

/*
 * Adds what 0.4's inline observe put in the histogram's set (its +Inf
 * bucket: @count; the sum, exposed: @sum) to @r, and makes the sum what the
 * odd observations make it.
 */
static void add_legacy(struct reading *r, uint64_t count, double sum)
{
	r->total += count;
	r->sum += sum;
	if (r->odd & ODD_NAN || (r->odd & ODD_POS_INF && r->odd & ODD_NEG_INF))
		r->sum = NAN;
	else if (r->odd & ODD_POS_INF)
		r->sum = INFINITY;
	else if (r->odd & ODD_NEG_INF)
		r->sum = -INFINITY;
}

int pcpu_sparse_fill(struct pcpu_sparse *sp, uint64_t legacy_count, double legacy_sum,
		     struct pcpu_metric_sample *smp, uint64_t *inf, bool keys)
{
	struct reading r = { 0 };
	double raw;
	int err = read_states(sp, &r, smp);

	if (err)
		return err;
	/* pcpu_histogram_snapshot() has no scrape's lock: not the scrape's buffers */
	err = keys ? put_keys(sp, &r, smp) : 0;
	free(r.b);
	if (err)
		return err;
	add_legacy(&r, legacy_count, legacy_sum);
	*inf = r.total;
	smp->flags |= PCPU_METRIC_SAMPLE_F_SPARSE;
	smp->schema = r.schema;
	smp->nr_bounds = 0;
	smp->bounds = NULL;
	smp->buckets = inf;
	smp->count = r.total;
	smp->scale = sp->scale;
	smp->zero_count = r.zero;
	smp->zero_threshold = sp->zero_threshold;
	smp->dsum = r.sum;
	/* the integer sum, unscaled, for readers of @c sum: saturated, 0 for NaN */
	raw = r.sum * (double)sp->scale;
	smp->sum = raw != raw			 ? 0 :
		   raw >= 9223372036854775807.0	 ? INT64_MAX :
		   raw <= -9223372036854775808.0 ? INT64_MIN :
						   (int64_t)llround(raw);
	return 0;
}

void pcpu_sparse_stats(struct pcpu_sparse *sp, struct pcpu_sparse_stats *out)
{
	pthread_mutex_lock(&sp->lock);
	*out = sp->stats;
	out->retiring = sp->retiring != NULL;
	out->schema = sp->state->schema;
	out->populated = __atomic_load_n(&sp->state->nr_touched, __ATOMIC_RELAXED);
	out->chunks = __atomic_load_n(&sp->state->nr_chunks, __ATOMIC_RELAXED);
	out->nr_slots = sp->state->nr_slots;
	pthread_mutex_unlock(&sp->lock);
}
