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
 */
#include <errno.h>
#include <stdlib.h>

#include <percpu/counter.h>

#include "arena.h"
#include "counter_internal.h"
#include "misuse.h"
#include "registry.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

static struct pcpu_slot *slot_of(const struct pcpu_counter *c, unsigned int cpu)
{
	return (struct pcpu_slot *)(void *)((char *)c->slots + ((size_t)cpu << PCPU_STRIDE_SHIFT));
}

static bool usable(const struct pcpu_counter *c, const char *call)
{
	if (pcpu_likely(c && LOAD(&c->slots)))
		return true;
	pcpu_misuse(call, c ? "counter not initialised (or destroyed)" : "NULL counter");
	return false;
}

static uint64_t magnitude(int64_t v)
{
	return v < 0 ? -(uint64_t)v : (uint64_t)v;
}

/* The per-CPU threshold for a central value of @count. */
static int64_t threshold_for(const struct pcpu_counter *c, int64_t count)
{
	uint64_t t;

	if (c->flags & PCPU_COUNTER_F_FIXED)
		return c->floor;
	t = magnitude(count) / ((uint64_t)c->accuracy * pcpu_cpu_possible());
	if (t < (uint64_t)c->floor)
		t = (uint64_t)c->floor;
	if (t > (uint64_t)PCPU_COUNTER_MAX_BATCH)
		t = (uint64_t)PCPU_COUNTER_MAX_BATCH;
	return (int64_t)t;
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
 * Makes @thresh the threshold. The bound is raised first, so that no adder
 * can check against a threshold that error_bound() does not cover.
 */
static void publish_threshold(struct pcpu_counter *c, int64_t thresh)
{
	pcpu_counter_raise_bound(c, thresh);
	if (LOAD(&c->thresh) != thresh)
		STORE(&c->thresh, thresh);
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

		if (pending >= -limit && pending <= limit)
			return false;
		keep = pending > 0 ? -overstep : overstep;
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

PCPU_EXPORT void pcpu_counter_fold_slot(struct pcpu_counter *c, struct pcpu_slot *slot,
					int64_t thresh)
{
	if (!usable(c, __func__))
		return;
	fold_slot(c, slot, thresh, (c->flags & PCPU_COUNTER_F_FIXED) ? 0 : thresh / 2);
}

void pcpu_counter_fold_all(struct pcpu_counter *c)
{
	unsigned int cpus = pcpu_cpu_possible();

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
	err = check_options(o);
	if (err)
		return err;
	pcpu_cpu_setup();
	*c = (struct pcpu_counter){ 0 };
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
	uint64_t max, cpus = pcpu_cpu_possible();

	if (!usable(c, __func__))
		return 0;
	max = __atomic_load_n(&c->thresh_max, __ATOMIC_RELAXED);
	return max > UINT64_MAX / cpus ? UINT64_MAX : max * cpus;
}

PCPU_EXPORT int64_t pcpu_counter_sum(const struct pcpu_counter *c)
{
	unsigned int cpus = pcpu_cpu_possible();
	uint64_t sum;

	if (!usable(c, __func__))
		return 0;
	sum = (uint64_t)__atomic_load_n(&c->base, __ATOMIC_ACQUIRE);
	for (unsigned int cpu = 0; cpu < cpus; cpu++)
		sum += (uint64_t)__atomic_load_n(&slot_of(c, cpu)->value, __ATOMIC_ACQUIRE);
	return (int64_t)sum;
}

/* Sum of every CPU's pending delta: exact - count at quiescence. */
static int64_t pending_sum(const struct pcpu_counter *c)
{
	unsigned int cpus = pcpu_cpu_possible();
	uint64_t sum = 0;

	for (unsigned int cpu = 0; cpu < cpus; cpu++) {
		const struct pcpu_slot *s = slot_of(c, cpu);

		sum += (uint64_t)__atomic_load_n(&s->value, __ATOMIC_ACQUIRE) -
		       (uint64_t)__atomic_load_n(&s->folded, __ATOMIC_ACQUIRE);
	}
	return (int64_t)sum;
}

PCPU_EXPORT int64_t pcpu_counter_sync_if_delta_above(struct pcpu_counter *c, uint64_t delta)
{
	if (!usable(c, __func__))
		return 0;
	if (pcpu_counter_error_bound(c) > delta)
		pcpu_counter_fold_all(c);
	return pcpu_counter_read(c);
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

PCPU_EXPORT bool pcpu_counter_limited_add(struct pcpu_counter *c, int64_t limit, int64_t amount)
{
	int64_t count, after;

	if (!usable(c, __func__))
		return false;
	if (amount == 0)
		return true;
	/*
	 * Limited adds go straight to the central value by compare-and-swap,
	 * so they serialise with each other: each one decides against the
	 * count that it then replaces.
	 */
	count = __atomic_load_n(&c->count, __ATOMIC_ACQUIRE);
	do {
		int verdict = passes_limit(count, pcpu_counter_error_bound(c), limit, amount);

		if (verdict == 0)
			verdict = passes_limit(count + pending_sum(c), 0, limit, amount);
		if (verdict > 0)
			return false;
		if (__builtin_add_overflow(count, amount, &after))
			return false;
	} while (!__atomic_compare_exchange_n(&c->count, &count, after, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_ACQUIRE));
	__atomic_add_fetch(&c->base, amount, __ATOMIC_SEQ_CST);
	publish_threshold(c, threshold_for(c, after));
	return true;
}

PCPU_EXPORT void pcpu_counter_set(struct pcpu_counter *c, int64_t value)
{
	unsigned int cpus = pcpu_cpu_possible();
	uint64_t slots_total = 0;

	if (!usable(c, __func__))
		return;
	for (unsigned int cpu = 0; cpu < cpus; cpu++) {
		struct pcpu_slot *s = slot_of(c, cpu);
		int64_t v = LOAD(&s->value);

		STORE(&s->folded, v);
		slots_total += (uint64_t)v;
	}
	STORE(&c->base, (int64_t)((uint64_t)value - slots_total));
	STORE(&c->count, value);
	STORE(&c->thresh, threshold_for(c, value));
	__atomic_store_n(&c->thresh_max, (uint64_t)LOAD(&c->thresh), __ATOMIC_SEQ_CST);
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
