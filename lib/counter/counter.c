/* SPDX-License-Identifier: MIT */
/*
 * The elastic per-CPU counter (see <percpu/counter.h>).
 *
 * The counter is the fold engine's armed layout (lib/base/fold.h has the
 * glossary): one slot per CPU, a struct pcpu_slot {value, mark} (the mark
 * stored armed), and the field central. Only a CPU's fast path writes its
 * slot.value; everything else (the slow path, limited adds, set) changes
 * base and central together.
 * Walks visit the armed CPUs only (armset). The invariants are
 * docs/internals.md's: [armed], [exact-sum] (sum() = base + values),
 * [central-marks] (central = base + marks), [pending-bound] (error_bound() =
 * armed CPUs * threshold_max), [monotone-read].
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/counter.h>
#include <percpu/registry.h>

#include "arena/arena.h"
#include "base/armset.h"
#include "base/atomics.h"
#include "counter_internal.h"
#include "base/cpu_internal.h"
#include "base/fold.h"
#include "base/misuse.h"
#include "base/policy.h"
#include "registry/registry.h"
#include "base/slot_owner.h"

static struct pcpu_slot *slot_of(const struct pcpu_counter *c, unsigned int cpu)
{
	return cpu_copy(c->slots, cpu);
}

/* The largest threshold: the floor for a fixed batch (never republished). */
static uint64_t cap_of(const struct pcpu_counter *c)
{
	/* register() sets another bit of flags */
	return LOAD(&c->flags) & PCPU_COUNTER_F_FIXED ? (uint64_t)c->floor : PCPU_COUNTER_MAX_BATCH;
}

/* The per-CPU threshold for a central value of @central. */
static int64_t threshold_for(const struct pcpu_counter *c, int64_t central)
{
	return (int64_t)pcpu_policy_threshold(central, (uint64_t)c->accuracy * cpu_possible(),
					      (uint64_t)c->floor, cap_of(c));
}

/*
 * Makes @threshold the threshold [publish-order]; one above threshold_max inside
 * the fold sequence, so that a limited add that decides from count and the
 * bound never reads them while the bound moves under it [seq-read]. The
 * bound is armed * threshold_max, computed where it is read: no field of its
 * own to publish.
 */
static void publish_threshold(struct pcpu_counter *c, int64_t threshold)
{
	bool raise = (uint64_t)threshold > LOAD(&c->threshold_max);

	if (raise)
		pcpu_fold_seq_enter(&c->seq, COUNTER_SEQ_FOLD);
	pcpu_fold_publish(&c->threshold, sizeof(c->threshold), &c->threshold_max, (uint64_t)threshold);
	if (raise)
		pcpu_fold_seq_leave(&c->seq, COUNTER_SEQ_FOLD, COUNTER_SEQ_GEN);
}

/* After central changed to @central: the threshold for it, by the engine's rule [republish]. */
static void retune(struct pcpu_counter *c, int64_t central)
{
	uint64_t want;

	if (pcpu_fold_retune((uint64_t)LOAD(&c->threshold), central,
			     (uint64_t)c->accuracy * cpu_possible(), (uint64_t)c->floor, cap_of(c),
			     &want))
		publish_threshold(c, (int64_t)want);
}

/* Moves the central value by @amount and republishes its threshold. */
static void add_count(struct pcpu_counter *c, int64_t amount)
{
	retune(c, pcpu_fold_credit(&c->central, amount));
}

/* An update that bypasses the slots: exact first, so sum() never lags read(). */
void pcpu_counter_add_central(struct pcpu_counter *c, int64_t amount)
{
	__atomic_add_fetch(&c->base, amount, __ATOMIC_SEQ_CST);
	add_count(c, amount);
}

/*
 * Arms CPU @cpu's slot (@snap: its snapshot), after the CPU joins the armed
 * count and set, in that order, so that the bound counts the CPU before a
 * walk can see its value (an owner's add lands before its slot is armed)
 * and before the slot may hold anything the fast path put there [armed].
 */
static void arm(struct pcpu_counter *c, unsigned int cpu, int64_t *snap)
{
	pcpu_armset_join(c->armset, &c->armed, cpu);
	pcpu_armed_arm(&slot_of(c, cpu)->value, snap);
}

/*
 * Folds CPU @cpu's slot (the engine's step), inside the counter's fold
 * sequence, so that a limited add's far path never decides from a count
 * that a fold has half changed [seq-read]; arms it first if it is not
 * armed; an armed slot with nothing pending is left without entering it.
 */
static void fold_cpu(struct pcpu_counter *c, unsigned int cpu)
{
	struct pcpu_slot *slot = slot_of(c, cpu);
	int64_t snap[2];

	pcpu_armed_snap(&slot->value, snap);
	if (!pcpu_armed_armed(snap))
		arm(c, cpu, snap);
	if (pcpu_armed_pending(snap) == 0)
		return;
	pcpu_fold_seq_enter(&c->seq, COUNTER_SEQ_FOLD);
	if (pcpu_fold_step_armed(&slot->value, snap, &c->central, 0, NULL))
		retune(c, LOAD(&c->central));
	pcpu_fold_seq_leave(&c->seq, COUNTER_SEQ_FOLD, COUNTER_SEQ_GEN);
}

#ifdef PCPU_TEST_HOOKS
void (*pcpu_counter_debug_walk_hook)(struct pcpu_counter *c, unsigned int cpu);
#define WALK_HOOK(c, cpu) (pcpu_counter_debug_walk_hook ? pcpu_counter_debug_walk_hook(c, cpu) : (void)0)
#else
#define WALK_HOOK(c, cpu) ((void)0)
#endif

/*
 * Folds every armed CPU's slot, as fold_cpu() does, but inside one fold
 * section for the whole walk, and credits central only when what the walk
 * moved and has not credited would pass the walk's budget
 * (pcpu_fold_walk_budget(): the maximum threshold, or an eighth of the
 * bound) with the next CPU's pending delta: so read() lags by at most the
 * budget more than at quiescence [central-marks], and a folded CPU costs
 * one locked instruction (the swap), as the kernel's fold costs its
 * exchange, plus a credit every budget's worth. Returns base plus the
 * values the walk saw, which is what sum() would return [exact-sum]: a
 * folding sync is one walk [sync].
 */
static int64_t fold_all(struct pcpu_counter *c)
{
	uint64_t sum = (uint64_t)__atomic_load_n(&c->base, __ATOMIC_ACQUIRE);
	uint64_t budget = pcpu_fold_walk_budget(LOAD(&c->threshold_max), __pcpu_counter_bound(c));
	int64_t owed = 0, central = 0; /* moved, not yet credited; central after a credit */
	bool entered = false, moved = false;
	unsigned int cpu;

	pcpu_armset_for_each(c->armset, cpu_possible(), cpu) {
		struct pcpu_slot *slot = slot_of(c, cpu);
		int64_t snap[2], pending;

		pcpu_armed_snap(&slot->value, snap);
		if (!pcpu_armed_armed(snap))
			arm(c, cpu, snap);
		pending = pcpu_armed_pending(snap);
		if (pending != 0) {
			if (!entered)
				pcpu_fold_seq_enter(&c->seq, COUNTER_SEQ_FOLD);
			entered = true;
			if (pcpu_fold_walk_due(owed, pending, budget)) {
				central = pcpu_fold_credit(&c->central, owed);
				moved = true;
				owed = 0;
			}
			owed = (int64_t)((uint64_t)owed +
					 (uint64_t)pcpu_fold_take_armed(&slot->value, snap));
			WALK_HOOK(c, cpu);
		}
		sum += (uint64_t)snap[0];
	}
	if (owed) {
		central = pcpu_fold_credit(&c->central, owed);
		moved = true;
	}
	if (entered)
		pcpu_fold_seq_leave(&c->seq, COUNTER_SEQ_FOLD, COUNTER_SEQ_GEN);
	if (moved)
		retune(c, central);
	return (int64_t)sum;
}

/*
 * The slot this thread's adds go to: its CPU's on the rseq path, the one it
 * owns on the atomic path (lib/base/slot_owner.c); -1 for none.
 */
static int own_slot(const struct pcpu_counter *c)
{
	if (c->mode == PCPU_CPU_RSEQ || !PCPU_SLOT_OWNERS)
		return pcpu_cpu_current();
	return pcpu_slot_owned();
}

/*
 * The fast path refused: the amount is over the threshold, this CPU's
 * pending delta would pass it, the caller's fixed batch is not covered by
 * the bound yet (@threshold >= 0), or the thread has no CPU number; or an
 * add on the atomic path left its slot past the threshold (@amount is then
 * 0: it is in the slot). As the kernel does, the amount and this CPU's
 * whole pending delta go to the central value.
 */
PCPU_EXPORT void __pcpu_counter_add_slow(struct pcpu_counter *c, int64_t amount, int64_t threshold)
{
	int cpu;

	if (!pcpu_counter_usable(c, "pcpu_counter_add")) {
		if (!pcpu_counter_is_static(c))
			return;
		if (pcpu_counter_setup_static(c) != 0) {
			/* no memory for slots: an exact atomic add, as the slow path's */
			__atomic_add_fetch(&c->base, amount, __ATOMIC_SEQ_CST);
			__atomic_add_fetch(&c->central, amount, __ATOMIC_SEQ_CST);
			return;
		}
		/* set up: no CPU is armed yet, this one arms below */
	}
	if (threshold >= 0 && (uint64_t)threshold > LOAD(&c->threshold_max)) {
		/* the batch is covered now: the fast path's add, once more */
		int added;

		/* threshold_max first: by then error_bound() must cover it [publish-order] */
		pcpu_policy_raise(&c->threshold_max, (uint64_t)threshold);
		added = pcpu_this_cpu_add_within(&c->slots->value, amount, (uint64_t)threshold,
						 c->mode);
		if (added > 0)
			return;
		if (added < 0)
			amount = 0; /* in the slot, past the batch: only its fold is left */
	}
	cpu = own_slot(c);
	if (cpu >= 0 && !pcpu_armset_has(c->armset, (unsigned int)cpu)) {
		/*
		 * This CPU's first add: arm its slot (nothing moves), then the
		 * fast path's add once more. An owner's amount is in the slot
		 * already, all of its pending delta, checked within the threshold.
		 */
		int64_t snap[2];
		int added = 1;

		pcpu_armed_snap(&slot_of(c, (unsigned int)cpu)->value, snap);
		arm(c, (unsigned int)cpu, snap);
		if (amount)
			added = pcpu_this_cpu_add_within(
				&c->slots->value, amount,
				(uint64_t)(threshold >= 0 ? threshold : LOAD(&c->threshold)), c->mode);
		if (added > 0)
			return;
		if (added < 0)
			amount = 0;
	}
	if (amount)
		pcpu_counter_add_central(c, amount);
	if (cpu >= 0)
		fold_cpu(c, (unsigned int)cpu);
}

PCPU_EXPORT size_t pcpu_registry_count(void)
{
	return pcpu_registry_count_of(&pcpu_counter_class);
}

PCPU_EXPORT int64_t pcpu_counter_default_floor(void)
{
	return PCPU_POLICY_FLOOR;
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

/*
 * Sets up @c, zero-filled but for its value (central and base, left as
 * they are) and flags, with checked options @o. On failure it frees what it
 * took and leaves slots NULL; the caller clears the rest or keeps it.
 */
static int setup(struct pcpu_counter *c, const struct pcpu_counter_options *o)
{
	struct pcpu_slot *slots;

	if (pcpu_registry_setup() != 0)
		return -ENOMEM;
	c->mode = pcpu_cpu_setup();
	if (o->batch) {
		/* the kernel folds when |pending| reaches batch */
		c->flags |= PCPU_COUNTER_F_FIXED;
		c->floor = o->batch - 1;
	} else {
		c->floor = o->floor ? o->floor : pcpu_counter_default_floor();
	}
	c->accuracy = o->accuracy ? (uint32_t)o->accuracy : PCPU_POLICY_ACCURACY;
	c->threshold = threshold_for(c, LOAD(&c->central));
	c->threshold_max = (uint64_t)c->threshold;
	c->armset = pcpu_armset_new(cpu_possible());
	slots = c->armset ? pcpu_arena_alloc(sizeof(struct pcpu_slot)) : NULL;
	if (!slots)
		goto fail;
	/* walkers fold only a counter whose slots they see; the entry is theirs */
	c->entry = pcpu_registry_add(&pcpu_counter_class, c);
	if (!c->entry) {
		pcpu_arena_free(slots, sizeof(struct pcpu_slot));
		goto fail;
	}
	__atomic_store_n(&c->slots, slots, __ATOMIC_RELEASE);
	return 0;
fail:
	free(c->armset);
	c->armset = NULL;
	return -ENOMEM;
}

PCPU_EXPORT int pcpu_counter_init_opts(struct pcpu_counter *c, int64_t value,
				       const struct pcpu_counter_options *opts)
{
	static const struct pcpu_counter_options defaults;
	const struct pcpu_counter_options *o = opts ? opts : &defaults;
	int err;

	if (!c)
		return -EINVAL;
	*c = (struct pcpu_counter){ 0 };
	err = check_options(o);
	if (err)
		return err;
	c->central = value;
	c->base = value;
	err = setup(c, o);
	if (err)
		*c = (struct pcpu_counter){ 0 };
	return err;
}

/* Serialises the set-ups of statically initialised counters (any number of them). */
static pthread_mutex_t static_setup_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t static_setup_once = PTHREAD_ONCE_INIT;

/* In a forked child: the set-up lock, which another thread may have held. */
static void static_setup_fork_child(void)
{
	pthread_mutex_init(&static_setup_lock, NULL);
}

/* Before the first set-up: whatever forks later, counters or not, gets its lock back. */
static void static_setup_at_fork(void)
{
	pthread_atfork(NULL, NULL, static_setup_fork_child);
}

int pcpu_counter_setup_static(struct pcpu_counter *c)
{
	static const struct pcpu_counter_options defaults;
	int err = 0;

	pthread_once(&static_setup_once, static_setup_at_fork);
	pthread_mutex_lock(&static_setup_lock);
	if (!LOAD(&c->slots))
		err = setup(c, &defaults);
	pthread_mutex_unlock(&static_setup_lock);
	return err;
}

PCPU_EXPORT int pcpu_counter_init(struct pcpu_counter *c, int64_t value)
{
	return pcpu_counter_init_opts(c, value, NULL);
}

PCPU_EXPORT int pcpu_counter_init_many_opts(struct pcpu_counter *c, int64_t value, unsigned int n,
					    const struct pcpu_counter_options *opts)
{
	if (!c || n == 0)
		return -EINVAL;
	/* all or none: a failure leaves every element destroyable */
	memset(c, 0, (size_t)n * sizeof(*c));
	for (unsigned int i = 0; i < n; i++) {
		int err = pcpu_counter_init_opts(&c[i], value, opts);

		if (err) {
			pcpu_counter_destroy_many(c, i);
			return err;
		}
	}
	return 0;
}

PCPU_EXPORT int pcpu_counter_init_many(struct pcpu_counter *c, int64_t value, unsigned int n)
{
	return pcpu_counter_init_many_opts(c, value, n, NULL);
}

PCPU_EXPORT void pcpu_counter_destroy(struct pcpu_counter *c)
{
	if (!c || !LOAD(&c->slots))
		return;
	/* first: an exposition in progress finishes reading the counter */
	if (c->flags & PCPU_COUNTER_F_DESCRIBED)
		pcpu_registry_forget(c);
	pcpu_registry_remove(c->entry);
	pcpu_arena_free(c->slots, sizeof(struct pcpu_slot));
	free(c->armset);
	*c = (struct pcpu_counter){ 0 };
}

PCPU_EXPORT void pcpu_counter_destroy_many(struct pcpu_counter *c, unsigned int n)
{
	if (!c)
		return;
	for (unsigned int i = 0; i < n; i++)
		pcpu_counter_destroy(&c[i]);
}

PCPU_EXPORT uint64_t pcpu_counter_error_bound(const struct pcpu_counter *c)
{
	if (!pcpu_counter_usable(c, __func__))
		return 0; /* a static counter not set up is exact */
	return __pcpu_counter_bound(c);
}

/*
 * base plus the values of the armed CPUs' slots [exact-sum]: a slot not in
 * the set holds 0, or an owner's add still in flight [armed].
 */
PCPU_EXPORT int64_t pcpu_counter_sum(const struct pcpu_counter *c)
{
	uint64_t sum;
	unsigned int cpu;

	if (!pcpu_counter_usable(c, __func__))
		return pcpu_counter_is_static(c) ? LOAD_ACQ(&c->base) : 0;
	sum = (uint64_t)__atomic_load_n(&c->base, __ATOMIC_ACQUIRE);
	pcpu_armset_for_each(c->armset, cpu_possible(), cpu)
		sum += (uint64_t)LOAD_ACQ(&slot_of(c, cpu)->value);
	return (int64_t)sum;
}

PCPU_EXPORT int __pcpu_counter_compare_precise(struct pcpu_counter *c, int64_t rhs)
{
	int64_t v;

	if (!pcpu_counter_usable(c, "pcpu_counter_compare") && !pcpu_counter_is_static(c))
		return 0;
	v = pcpu_counter_sum(c);
	return (v > rhs) - (v < rhs);
}

/*
 * [sync]'s read-only walk: is @read within @delta, by the sum of the
 * magnitudes of the armed CPUs' pending deltas and by |sum - read|? Both:
 * pending deltas alone miss a fold between its two steps (nothing pending,
 * count not yet added to); read against sum alone misses pending deltas
 * that a fold in flight happens to offset. It stops at the first CPU that
 * takes the magnitudes past @delta, so that a sync that must fold walks
 * the CPUs about once.
 */
static bool sync_near(void *counter, unsigned int item, int64_t read, uint64_t delta)
{
	const struct pcpu_counter *c = counter;
	uint64_t magnitudes = 0, sum = (uint64_t)__atomic_load_n(&c->base, __ATOMIC_ACQUIRE);
	unsigned int cpu;

	(void)item;
	pcpu_armset_for_each(c->armset, cpu_possible(), cpu) {
		int64_t snap[2];

		pcpu_armed_snap(&slot_of(c, cpu)->value, snap);
		sum += (uint64_t)snap[0];
		magnitudes += pcpu_magnitude(pcpu_armed_pending(snap));
		if (magnitudes > delta)
			return false;
	}
	return pcpu_magnitude((int64_t)(sum - (uint64_t)read)) <= delta;
}

static int64_t sync_fold_sum(void *c, unsigned int item)
{
	(void)item;
	return fold_all(c);
}

PCPU_EXPORT int64_t pcpu_counter_sync_if_delta_above(struct pcpu_counter *c, uint64_t delta)
{
	static const struct pcpu_fold_sync ops = { .near = sync_near, .fold_sum = sync_fold_sum };
	int64_t read;

	if (!pcpu_counter_usable(c, __func__))
		return pcpu_counter_is_static(c) ? LOAD_ACQ(&c->base) : 0;
	read = LOAD(&c->central);
	return pcpu_fold_sync(&ops, c, 0, delta, read, __pcpu_counter_bound(c));
}

PCPU_EXPORT void pcpu_counter_set(struct pcpu_counter *c, int64_t value)
{
	int64_t adjust, threshold;

	if (!pcpu_counter_usable(c, __func__)) {
		if (pcpu_counter_is_static(c)) {
			STORE(&c->base, value);
			STORE(&c->central, value);
		}
		return;
	}
	/*
	 * By atomic adds only, so that a fold in flight (the refresher's)
	 * still lands its amount on the new value correctly.
	 */
	fold_all(c);
	adjust = (int64_t)((uint64_t)value - (uint64_t)pcpu_counter_sum(c));
	__atomic_add_fetch(&c->base, adjust, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&c->central, adjust, __ATOMIC_SEQ_CST);
	/*
	 * Lower threshold_max, then publish the new value's threshold
	 * [publish-order]: a fold raising it in between leaves it low
	 * (add_batch() then takes its slow path once more), never below the
	 * threshold in force.
	 */
	threshold = threshold_for(c, value);
	__atomic_store_n(&c->threshold_max, (uint64_t)threshold, __ATOMIC_SEQ_CST);
	publish_threshold(c, threshold);
}

void pcpu_counter_fold_cpu(struct pcpu_counter *c, int cpu)
{
	if (cpu >= 0)
		fold_cpu(c, (unsigned int)cpu);
}

PCPU_EXPORT void pcpu_counter_fold_this_cpu(struct pcpu_counter *c)
{
	if (pcpu_counter_usable(c, __func__))
		pcpu_counter_fold_cpu(c, own_slot(c));
}

/* The registry's operations. */

static void counter_fold(void *obj)
{
	struct pcpu_counter *c = obj;

	/* init stored slots with release: fold only what is ready */
	if (__atomic_load_n(&c->slots, __ATOMIC_ACQUIRE))
		(void)fold_all(c);
}

/*
 * Only this thread survives a fork: a fold may have stopped between its
 * steps [central-marks], and an add on the atomic path between its add and
 * its check, leaving its slot past threshold_max [pending-bound], path 3, or
 * in a slot not armed yet [armed]: such adds land, as in the parent.
 */
static void counter_fork_child(void *obj)
{
	struct pcpu_counter *c = obj;
	uint64_t central = (uint64_t)LOAD(&c->base);
	unsigned int cpus = cpu_possible(), cpu;

	if (!LOAD(&c->slots))
		return; /* a static counter forked in the middle of its set-up: nothing in slots */
	pcpu_armset_for_each(c->armset, cpus, cpu)
		central += (uint64_t)pcpu_armed_mark(LOAD(&slot_of(c, cpu)->mark));
	STORE(&c->central, (int64_t)central);
	/* an arming thread may have counted its CPU and not yet found it in the set */
	STORE(&c->armed, pcpu_armset_count(c->armset, cpus));
	/* no fold is in flight any more, nor a limited add holding the gate */
	pcpu_fold_seq_fork_child(&c->seq, COUNTER_SEQ_GEN);
	pcpu_armset_for_each(c->armset, cpus, cpu) {
		int64_t snap[2];

		pcpu_armed_snap(&slot_of(c, cpu)->value, snap);
		if (pcpu_magnitude(pcpu_armed_pending(snap)) > LOAD(&c->threshold_max))
			fold_cpu(c, cpu);
	}
	/* only an owner adds to a slot that is not armed: the atomic path's */
	if (c->mode != PCPU_CPU_RSEQ)
		for (cpu = 0; cpu < cpus; cpu++)
			if (!pcpu_armset_has(c->armset, cpu) && LOAD(&slot_of(c, cpu)->value))
				fold_cpu(c, cpu);
}

const struct pcpu_class pcpu_counter_class = {
	.fold = counter_fold,
	.fork_child = counter_fork_child,
	.fork_child_class = pcpu_counter_limited_fork_child,
};
