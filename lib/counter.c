/* SPDX-License-Identifier: MIT */
/*
 * The elastic per-CPU counter (see <percpu/counter.h>).
 *
 * Invariants, with pending(cpu) = slot.value - slot.folded:
 *   exact value = base + sum of slot.value          (what sum() reads)
 *   count       = base + sum of slot.folded         (what read() returns)
 * so exact - count = sum of pending(cpu). Slots only accumulate; a fold
 * advances slot.folded by compare-and-swap and adds the same amount to
 * count, so any thread may fold any CPU and sum() never depends on folds.
 * Every add is followed by a check of its CPU's pending delta against a
 * threshold no larger than thresh_max, so at quiescence
 * |read - exact| <= possible CPUs * thresh_max = error_bound().
 *
 * A fold is two steps (advance folded, then add to count), and another
 * thread may run between them, or the folder may be preempted there. So no
 * call that must be precise combines count with pending deltas: precise
 * answers come from sum(), and every change of count is an atomic add, so
 * changes commute with a fold still in flight. A fork can leave a fold
 * half done in the child; the registry's fork handler rebuilds count from
 * the invariant (pcpu_counter_after_fork()).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <percpu/counter.h>

#include "arena.h"
#include "cpu_internal.h"
#include "counter_internal.h"
#include "elastic.h"
#include "misuse.h"
#include "registry.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

static struct pcpu_slot *slot_of(const struct pcpu_counter *c, unsigned int cpu)
{
	return cpu_copy(c->slots, cpu);
}

static bool usable(const struct pcpu_counter *c, const char *call)
{
	if (pcpu_likely(c && LOAD(&c->slots)))
		return true;
	pcpu_misuse(call, c ? "counter not initialised (or destroyed)" : "NULL counter");
	return false;
}

/* The per-CPU threshold for a central value of @count. */
static int64_t threshold_for(const struct pcpu_counter *c, int64_t count)
{
	if (c->flags & PCPU_COUNTER_F_FIXED)
		return c->floor;
	return (int64_t)pcpu_elastic_threshold(count, (uint64_t)c->accuracy * cpu_possible(),
					       (uint64_t)c->floor, PCPU_COUNTER_MAX_BATCH);
}

PCPU_EXPORT void pcpu_counter_raise_bound(struct pcpu_counter *c, int64_t thresh)
{
	uint64_t max;

	if (!usable(c, __func__) || thresh < 0)
		return;
	max = __atomic_load_n(&c->thresh_max, __ATOMIC_RELAXED);
	while (max < (uint64_t)thresh &&
	       !__atomic_compare_exchange_n(&c->thresh_max, &max, (uint64_t)thresh, true,
					    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
}

/*
 * Makes @thresh the threshold, then raises the bound to cover it: once the
 * call returns, error_bound() covers every threshold an adder may have
 * checked against. (Raising after storing, not before, is what lets set()
 * lower the bound while a fold publishes: see there.)
 */
static void publish_threshold(struct pcpu_counter *c, int64_t thresh)
{
	if (LOAD(&c->thresh) != thresh)
		STORE(&c->thresh, thresh);
	pcpu_counter_raise_bound(c, thresh);
}

/*
 * If |pending| of @slot exceeds @limit, moves it into the central value,
 * leaving @overstep pending against the direction of travel (vmstat's
 * hysteresis: a steady stream of increments folds every 1.5 thresholds,
 * not on every add). Returns whether it folded.
 */
static bool fold_slot(struct pcpu_counter *c, struct pcpu_slot *slot, int64_t limit,
		      int64_t overstep)
{
	int64_t folded = __atomic_load_n(&slot->folded, __ATOMIC_ACQUIRE);
	int64_t target, moved;

	for (;;) {
		int64_t value = __atomic_load_n(&slot->value, __ATOMIC_ACQUIRE);
		int64_t pending = (int64_t)((uint64_t)value - (uint64_t)folded);
		int64_t keep;
		__int128 after;

		if (pending >= -limit && pending <= limit)
			return false;
		keep = pending > 0 ? -overstep : overstep;
		/* next to INT64_MIN/MAX the overshoot would wrap read() around */
		after = (__int128)LOAD(&c->count) + pending - keep;
		if (after > INT64_MAX || after < INT64_MIN)
			keep = 0;
		target = (int64_t)((uint64_t)value - (uint64_t)keep);
		if (__atomic_compare_exchange_n(&slot->folded, &folded, target, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
	}
	moved = (int64_t)((uint64_t)target - (uint64_t)folded);
	publish_threshold(c, threshold_for(c, __atomic_add_fetch(&c->count, moved,
								 __ATOMIC_SEQ_CST)));
	return true;
}

/* @hysteresis: the counter's own elastic threshold, not a caller's batch */
PCPU_EXPORT void pcpu_counter_fold_slot(struct pcpu_counter *c, struct pcpu_slot *slot,
					int64_t thresh, bool hysteresis)
{
	if (!usable(c, __func__))
		return;
	hysteresis = hysteresis && !(c->flags & PCPU_COUNTER_F_FIXED);
	fold_slot(c, slot, thresh, hysteresis ? thresh / 2 : 0);
}

void pcpu_counter_fold_all(struct pcpu_counter *c)
{
	unsigned int cpus = cpu_possible();

	for (unsigned int cpu = 0; cpu < cpus; cpu++)
		fold_slot(c, slot_of(c, cpu), 0, 0);
}

PCPU_EXPORT void pcpu_counter_add_central(struct pcpu_counter *c, int64_t amount)
{
	if (!usable(c, "pcpu_counter_add"))
		return;
	/* exact first, so that sum() never lags a change read() already shows */
	__atomic_add_fetch(&c->base, amount, __ATOMIC_SEQ_CST);
	publish_threshold(c, threshold_for(c, __atomic_add_fetch(&c->count, amount,
								 __ATOMIC_SEQ_CST)));
}

static int check_options(const struct pcpu_counter_options *o)
{
	if (o->accuracy < 0 || o->accuracy > PCPU_COUNTER_MAX_ACCURACY)
		return -EINVAL;
	if (o->floor < 0 || o->floor > PCPU_COUNTER_MAX_BATCH)
		return -EINVAL;
	if (o->batch < 0 || o->batch > PCPU_COUNTER_MAX_BATCH)
		return -EINVAL;
	return 0;
}

PCPU_EXPORT int pcpu_counter_init_opts(struct pcpu_counter *c, int64_t value,
				       const struct pcpu_counter_options *opts)
{
	static const struct pcpu_counter_options defaults;
	const struct pcpu_counter_options *o = opts ? opts : &defaults;
	struct pcpu_slot *slots;
	int err;

	if (!c)
		return -EINVAL;
	*c = (struct pcpu_counter){ 0 };
	err = check_options(o);
	if (err)
		return err;
	pcpu_cpu_setup();
	slots = pcpu_arena_alloc(sizeof(struct pcpu_slot));
	if (!slots)
		return -ENOMEM;

	if (o->batch) {
		/* the kernel folds when |pending| reaches batch */
		c->flags = PCPU_COUNTER_F_FIXED;
		c->floor = o->batch - 1;
	} else {
		unsigned int online = pcpu_cpu_online();

		c->floor = o->floor ? o->floor : (2 * online > 32 ? 2 * (int64_t)online : 32);
	}
	c->accuracy = o->accuracy ? (uint32_t)o->accuracy : 64;
	c->count = value;
	c->base = value;
	c->thresh = threshold_for(c, value);
	c->thresh_max = (uint64_t)c->thresh;
	__atomic_store_n(&c->slots, slots, __ATOMIC_RELEASE);
	pcpu_registry_add(c);
	return 0;
}

PCPU_EXPORT int pcpu_counter_init(struct pcpu_counter *c, int64_t value)
{
	return pcpu_counter_init_opts(c, value, NULL);
}

PCPU_EXPORT int pcpu_counter_init_many(struct pcpu_counter *c, int64_t value, unsigned int n)
{
	if (!c || n == 0)
		return -EINVAL;
	for (unsigned int i = 0; i < n; i++) {
		int err = pcpu_counter_init(&c[i], value);

		if (err) {
			pcpu_counter_destroy_many(c, i);
			return err;
		}
	}
	return 0;
}

PCPU_EXPORT void pcpu_counter_destroy_many(struct pcpu_counter *c, unsigned int n)
{
	struct pcpu_counter **live;
	size_t nlive = 0;

	if (!c || n == 0)
		return;
	live = malloc(n * sizeof(*live));
	if (!live) {
		/* no memory for the batch: one grace period per counter instead */
		for (unsigned int i = 0; i < n; i++)
			pcpu_counter_destroy(&c[i]);
		return;
	}
	for (unsigned int i = 0; i < n; i++)
		if (LOAD(&c[i].slots))
			live[nlive++] = &c[i];
	pcpu_registry_remove(live, nlive);
	for (size_t i = 0; i < nlive; i++) {
		pcpu_arena_free(live[i]->slots, sizeof(struct pcpu_slot));
		*live[i] = (struct pcpu_counter){ 0 };
	}
	free(live);
}

PCPU_EXPORT void pcpu_counter_destroy(struct pcpu_counter *c)
{
	if (!c || !LOAD(&c->slots))
		return;
	pcpu_registry_remove(&c, 1);
	pcpu_arena_free(c->slots, sizeof(struct pcpu_slot));
	*c = (struct pcpu_counter){ 0 };
}

PCPU_EXPORT uint64_t pcpu_counter_error_bound(const struct pcpu_counter *c)
{
	uint64_t max, cpus = cpu_possible();

	if (!usable(c, __func__))
		return 0;
	max = __atomic_load_n(&c->thresh_max, __ATOMIC_RELAXED);
	return max > UINT64_MAX / cpus ? UINT64_MAX : max * cpus;
}

PCPU_EXPORT int64_t pcpu_counter_sum(const struct pcpu_counter *c)
{
	unsigned int cpus = cpu_possible();
	uint64_t sum;

	if (!usable(c, __func__))
		return 0;
	sum = (uint64_t)__atomic_load_n(&c->base, __ATOMIC_ACQUIRE);
	for (unsigned int cpu = 0; cpu < cpus; cpu++)
		sum += (uint64_t)__atomic_load_n(&slot_of(c, cpu)->value, __ATOMIC_ACQUIRE);
	return (int64_t)sum;
}

/*
 * One walk over the CPUs for sync: returns the sum of the magnitudes of
 * every CPU's pending delta (|read - exact| <= it), and stores in @exact
 * what sum() would return.
 */
static uint64_t pending_magnitude(const struct pcpu_counter *c, int64_t *exact)
{
	unsigned int cpus = cpu_possible();
	uint64_t magnitudes = 0, sum = (uint64_t)__atomic_load_n(&c->base, __ATOMIC_ACQUIRE);

	for (unsigned int cpu = 0; cpu < cpus; cpu++) {
		const struct pcpu_slot *s = slot_of(c, cpu);
		uint64_t value = (uint64_t)__atomic_load_n(&s->value, __ATOMIC_ACQUIRE);

		sum += value;
		magnitudes += pcpu_magnitude((int64_t)(value - (uint64_t)__atomic_load_n(
							   &s->folded, __ATOMIC_ACQUIRE)));
	}
	*exact = (int64_t)sum;
	return magnitudes;
}

PCPU_EXPORT int64_t pcpu_counter_sync_if_delta_above(struct pcpu_counter *c, uint64_t delta)
{
	int64_t approx, exact;

	if (!usable(c, __func__))
		return 0;
	/* cheapest first: the O(1) bound, then reads of every CPU, then writes */
	approx = pcpu_counter_read(c);
	if (pcpu_counter_error_bound(c) <= delta)
		return approx;
	/*
	 * Both tests: pending deltas alone miss a fold between its two steps
	 * (nothing pending, count not yet added to); read against sum alone
	 * misses pending deltas that a fold in flight happens to offset.
	 */
	if (pending_magnitude(c, &exact) <= delta &&
	    pcpu_magnitude((int64_t)((uint64_t)exact - (uint64_t)approx)) <= delta)
		return approx;
	pcpu_counter_fold_all(c);
	/* exact, even if another thread's fold has yet to reach count */
	return pcpu_counter_sum(c);
}

static int sign_of_difference(int64_t a, int64_t b)
{
	return a > b ? 1 : a < b ? -1 : 0;
}

PCPU_EXPORT int pcpu_counter_compare(struct pcpu_counter *c, int64_t rhs)
{
	int64_t approx;
	uint64_t bound;

	if (!usable(c, __func__))
		return 0;
	approx = pcpu_counter_read(c);
	bound = pcpu_counter_error_bound(c);
	if (approx > rhs && (uint64_t)approx - (uint64_t)rhs > bound)
		return 1;
	if (approx < rhs && (uint64_t)rhs - (uint64_t)approx > bound)
		return -1;
	return sign_of_difference(pcpu_counter_sum(c), rhs);
}

/*
 * Would @value + @amount pass @limit? @slack is how far @value may be from
 * exact: returns 1 (certainly passes), -1 (certainly not) or 0 (unsure).
 */
static int passes_limit(int64_t value, uint64_t slack, int64_t limit, int64_t amount)
{
	__int128 lo = (__int128)value + amount - (__int128)slack;
	__int128 hi = (__int128)value + amount + (__int128)slack;

	if (amount > 0)
		return lo > limit ? 1 : hi <= limit ? -1 : 0;
	return hi < limit ? 1 : lo >= limit ? -1 : 0;
}

/*
 * Limited adds serialise on a lock, one of a small table hashed by counter
 * address, so that each decides against a value no other limited add can
 * change before it lands. Nothing else takes these locks: folds, adds and
 * reads never wait for a limited add. The fork handler resets them.
 */
#define LIMIT_LOCKS 64
static pthread_mutex_t limit_locks[LIMIT_LOCKS];
static pthread_once_t limit_locks_once = PTHREAD_ONCE_INIT;

static void init_limit_locks(void)
{
	for (int i = 0; i < LIMIT_LOCKS; i++)
		pthread_mutex_init(&limit_locks[i], NULL);
}

static pthread_mutex_t *limit_lock_of(const struct pcpu_counter *c)
{
	pthread_once(&limit_locks_once, init_limit_locks);
	return &limit_locks[((uintptr_t)c >> 6) % LIMIT_LOCKS];
}

PCPU_EXPORT bool pcpu_counter_limited_add(struct pcpu_counter *c, int64_t limit, int64_t amount)
{
	pthread_mutex_t *lock;
	int verdict;

	if (!usable(c, __func__))
		return false;
	if (amount == 0)
		return true;
	lock = limit_lock_of(c);
	pthread_mutex_lock(lock);
	/* the bound is true of count even mid-fold: count lags, pending leads */
	verdict = passes_limit(pcpu_counter_read(c), pcpu_counter_error_bound(c), limit, amount);
	if (verdict == 0)
		verdict = passes_limit(pcpu_counter_sum(c), 0, limit, amount);
	if (verdict < 0) {
		__atomic_add_fetch(&c->base, amount, __ATOMIC_SEQ_CST);
		publish_threshold(c, threshold_for(c, __atomic_add_fetch(&c->count, amount,
									 __ATOMIC_SEQ_CST)));
	}
	pthread_mutex_unlock(lock);
	return verdict < 0;
}

PCPU_EXPORT void pcpu_counter_set(struct pcpu_counter *c, int64_t value)
{
	int64_t adjust, thresh;

	if (!usable(c, __func__))
		return;
	/*
	 * By atomic adds only, so that a fold in flight (the refresher's)
	 * still lands its amount on the new value correctly.
	 */
	pcpu_counter_fold_all(c);
	adjust = (int64_t)((uint64_t)value - (uint64_t)pcpu_counter_sum(c));
	__atomic_add_fetch(&c->base, adjust, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&c->count, adjust, __ATOMIC_SEQ_CST);
	/*
	 * Lower the bound to the new value's threshold, then publish it: a
	 * fold publishing concurrently either stores its threshold before ours
	 * (overwritten) or raises the bound after storing it (covered).
	 */
	thresh = threshold_for(c, value);
	__atomic_store_n(&c->thresh_max, (uint64_t)thresh, __ATOMIC_SEQ_CST);
	publish_threshold(c, thresh);
}

void pcpu_counter_after_fork(struct pcpu_counter *c)
{
	unsigned int cpus = cpu_possible();
	uint64_t count = (uint64_t)LOAD(&c->base);

	/* only this thread survives: a fold may have stopped between its steps */
	for (unsigned int cpu = 0; cpu < cpus; cpu++)
		count += (uint64_t)LOAD(&slot_of(c, cpu)->folded);
	STORE(&c->count, (int64_t)count);
}

void pcpu_counter_after_fork_locks(void)
{
	init_limit_locks();
}

PCPU_EXPORT void pcpu_counter_fold_this_cpu(struct pcpu_counter *c)
{
	int cpu;

	if (!usable(c, __func__))
		return;
	cpu = pcpu_cpu_current();
	if (cpu >= 0)
		fold_slot(c, slot_of(c, (unsigned int)cpu), 0, 0);
}
