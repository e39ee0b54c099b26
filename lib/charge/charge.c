/* SPDX-License-Identifier: MIT */
/*
 * Charges with per-CPU stocks (see <percpu/charge.h>).
 *
 * State: the central reservation R (reserved), the amount charged by the
 * slow paths U (used), and per CPU a pair {charged, mark}, where charged is
 * moved only by that CPU's inline try (+) and uncharge (-), and the stock
 * is s = mark + half - charged. Invariants, at quiescence:
 *   usage = U + sum of charged
 *   R     = U + sum of (mark + half) = usage + sum of stocks <= limit
 * R grows only by a compare-and-swap that checks the limit (reserve());
 * every other change of R gives back. Each slow path orders its steps so
 * that R covers usage plus stocks at every instant: reserve first, then
 * charge and stock; uncharge and stock first, then give back.
 *
 * Who may move a mark. The inline try checks s >= amount and then adds to
 * charged, in one restartable sequence; another thread's compare-and-swap
 * of the pair may land between the check and the add (the sequence only
 * restarts on preemption, migration or a signal). Raising a mark (a bigger
 * stock) under such a try is harmless; lowering it is not: the try would
 * take a stock that is gone. So the slow paths only ever raise marks, and
 * only a taker lowers one, in three steps under the taking lock: mark the
 * stock (subtract TAKEN from its mark: every later check fails), fence
 * (pcpu_cpu_fence(): the one try that may have passed its check before the
 * marking commits or aborts), then move what is left to R. On the atomic
 * path every update of a pair is a checked compare-and-swap, so the fence
 * is not needed there.
 *
 * Above the limit. set_limit() may leave R above the limit: the usage alone
 * above it, or a refill or an uncharge in flight whose amount R still
 * counts. An open stock there would let the inline uncharge refill it (R
 * unchanged) and the inline try spend it. So a take that leaves R above the
 * limit closes every stock: it marks the empty ones too (fencing again: an
 * inline uncharge may be past its check on an empty stock) and leaves each
 * marked and empty. A closed stock fails both inline checks and refuses
 * add_stock(), so the slow paths give back. Stocks are open only while
 * R <= limit, and R grows only by reserve(), within the limit: an open
 * stock never takes usage past the limit. They open again once R is within
 * the limit: at the end of a take or of set_limit(), or at the end of a
 * slow path that finds its CPU's stock closed and the lock free. One lock
 * (taking) serialises takes, openings and limit changes, so the limit an
 * opening checks is the one that any later set_limit() closes against.
 * reserve() reads the limit again after its compare-and-swap and gives back
 * a reservation that a lower limit overtook (set_limit() stores the limit,
 * then reads R: one of the two sees the other).
 */
#include <errno.h>
#include <string.h>

#include <percpu/charge.h>

#include "arena/arena.h"
#include "base/atomics.h"
#include "base/cpu_internal.h"
#include "base/misuse.h"
#include "base/pair.h"
#include "registry/registry.h"

/* Subtracted from a mark that a taker has marked: every check fails on it. */
#define TAKEN (INT64_C(1) << 62)

/* The default stock cap's bounds. */
#define DEFAULT_CAP_MIN 2
#define DEFAULT_CAP_MAX (INT64_C(1) << 32)

extern const struct pcpu_class pcpu_charge_class;

static bool usable(const struct pcpu_charge *ch, const char *call)
{
	if (pcpu_likely(ch && LOAD(&ch->slots)))
		return true;
	pcpu_misuse(call, ch ? "charge not initialised (or destroyed)" : "NULL charge");
	return false;
}

static int64_t *pair_of(const struct pcpu_charge *ch, unsigned int cpu)
{
	return cpu_copy(&ch->slots->charged, cpu);
}

static int64_t cap_of(const struct pcpu_charge *ch)
{
	return 2 * ch->half;
}

/* mark + half - charged: the stock, or TAKEN below it once a taker marked it. */
static int64_t marked_stock(const struct pcpu_charge *ch, const int64_t pair[2])
{
	return (int64_t)((uint64_t)pair[1] + (uint64_t)ch->half - (uint64_t)pair[0]);
}

static bool taken(const struct pcpu_charge *ch, const int64_t pair[2])
{
	return marked_stock(ch, pair) < -(TAKEN / 2);
}

/* The stock a pair holds, whether a taker marked it or not. */
static int64_t stock_of(const struct pcpu_charge *ch, const int64_t pair[2])
{
	return marked_stock(ch, pair) + (taken(ch, pair) ? TAKEN : 0);
}

static void give_back(struct pcpu_charge *ch, int64_t amount)
{
	if (amount)
		__atomic_sub_fetch(&ch->reserved, amount, __ATOMIC_SEQ_CST);
}

/*
 * Reserves between @min and @want (>= min) from the limit: returns what it
 * reserved, or -1 if not even @min fits.
 */
static int64_t reserve(struct pcpu_charge *ch, int64_t min, int64_t want)
{
	for (;;) {
		int64_t r = LOAD(&ch->reserved), got;

		do {
			int64_t room = LOAD(&ch->limit) - r;

			if (room < min)
				return -1;
			got = want < room ? want : room;
		} while (!__atomic_compare_exchange_n(&ch->reserved, &r, r + got, true,
						      __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
		/*
		 * The limit read above may be gone: set_limit() stores the new
		 * one, then reads R (both sequentially consistent), so either it
		 * saw this reservation or this load sees its limit.
		 */
		if (r + got <= __atomic_load_n(&ch->limit, __ATOMIC_SEQ_CST))
			return got;
		give_back(ch, got);
	}
}

/* R within the limit: the stocks may be open (see the file comment). */
static bool within_limit(const struct pcpu_charge *ch)
{
	return __atomic_load_n(&ch->reserved, __ATOMIC_SEQ_CST) <=
	       __atomic_load_n(&ch->limit, __ATOMIC_SEQ_CST);
}

/*
 * The stock a slow path leaves a CPU: a quarter of the room left under the
 * limit, shared by the CPUs, within the cap (so stocks shrink as the limit
 * nears).
 */
static int64_t stock_target(const struct pcpu_charge *ch)
{
	int64_t room = LOAD(&ch->limit) - LOAD(&ch->reserved);
	int64_t t = room > 0 ? room / (4 * (int64_t)cpu_possible()) : 0;

	return t < cap_of(ch) ? t : cap_of(ch);
}

/*
 * Raises CPU @cpu's stock by up to @amount, never past @target nor into a
 * stock being taken; returns what it added (0 for a negative @cpu).
 */
static int64_t add_stock(struct pcpu_charge *ch, int cpu, int64_t amount, int64_t target)
{
	int64_t *pair, old[2], add;

	if (cpu < 0 || amount <= 0)
		return 0;
	pair = pair_of(ch, (unsigned int)cpu);
	pcpu_pair_load(pair, old);
	do {
		int64_t room = target - stock_of(ch, old);

		if (taken(ch, old) || room <= 0)
			return 0;
		add = amount < room ? amount : room;
	} while (!pcpu_pair_cas(pair, old, old[0], (int64_t)((uint64_t)old[1] + (uint64_t)add)));
	return add;
}

/*
 * The charges whose stocks this thread is taking, or waiting to take (a
 * signal handler may take another charge's stocks inside a take, so a
 * few): a handler that interrupted the thread's own take of a charge must
 * not wait for it.
 */
#define TAKES_NESTED 4
static __thread const struct pcpu_charge *taking_here[TAKES_NESTED];

/* Notes @ch in the first free place of taking_here; -1 if it is there, or no place is free. */
static int note_taking(const struct pcpu_charge *ch)
{
	int free_at = -1;

	for (int i = 0; i < TAKES_NESTED; i++) {
		if (taking_here[i] == ch)
			return -1;
		if (!taking_here[i] && free_at < 0)
			free_at = i;
	}
	if (free_at >= 0) {
		taking_here[free_at] = ch;
		/* seen by a handler that interrupts what follows */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	}
	return free_at;
}

/*
 * Takes the lock that serialises takes, openings and limit changes, waiting
 * for another thread's hold if @wait. Returns this thread's place in
 * taking_here, or -1 without the lock: in a signal handler that interrupted
 * this thread's own hold of it (or wait for it), or, without @wait, while
 * another thread holds it.
 */
static int lock_stocks(struct pcpu_charge *ch, bool wait)
{
	unsigned int spins = 0;
	uint32_t idle = 0;
	int place = note_taking(ch);

	if (place < 0)
		return -1;
	while (!__atomic_compare_exchange_n(&ch->taking, &idle, 1, false, __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED)) {
		if (!wait) {
			taking_here[place] = NULL;
			return -1;
		}
		idle = 0;
		pcpu_relax(&spins);
	}
	return place;
}

static void unlock_stocks(struct pcpu_charge *ch, int place)
{
	__atomic_store_n(&ch->taking, 0, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	taking_here[place] = NULL;
}

/*
 * Marks the stocks that hold something, or with @all every stock, unless
 * marked already: every later check fails on them. Returns whether it
 * marked one.
 */
static bool mark_stocks(struct pcpu_charge *ch, bool all)
{
	unsigned int cpus = cpu_possible();
	bool marked = false;

	for (unsigned int cpu = 0; cpu < cpus; cpu++) {
		int64_t *pair = pair_of(ch, cpu), old[2];

		pcpu_pair_load(pair, old);
		while ((all || stock_of(ch, old) != 0) && !taken(ch, old)) {
			if (pcpu_pair_cas(pair, old, old[0],
					  (int64_t)((uint64_t)old[1] - (uint64_t)TAKEN))) {
				marked = true;
				break;
			}
		}
	}
	return marked;
}

/*
 * Moves what every marked stock holds to R, and leaves it open (empty:
 * mark + half == charged) while R is within the limit, closed (the empty
 * stock marked) otherwise. Lock held.
 */
static void take_marked(struct pcpu_charge *ch)
{
	unsigned int cpus = cpu_possible();

	for (unsigned int cpu = 0; cpu < cpus; cpu++) {
		int64_t *pair = pair_of(ch, cpu), old[2];

		pcpu_pair_load(pair, old);
		while (taken(ch, old)) {
			int64_t s = stock_of(ch, old);
			/* R still counts s: within the limit now, within it after */
			uint64_t closed = within_limit(ch) ? 0 : (uint64_t)TAKEN;

			if (s == 0 && closed)
				break;
			if (pcpu_pair_cas(pair, old, old[0],
					  (int64_t)((uint64_t)old[0] - (uint64_t)ch->half - closed))) {
				give_back(ch, s);
				break;
			}
		}
	}
}

/* Opens every closed stock, keeping what it holds. Lock held, R within the limit. */
static void open_stocks(struct pcpu_charge *ch)
{
	unsigned int cpus = cpu_possible();

	for (unsigned int cpu = 0; cpu < cpus; cpu++) {
		int64_t *pair = pair_of(ch, cpu), old[2];

		pcpu_pair_load(pair, old);
		while (taken(ch, old) &&
		       !pcpu_pair_cas(pair, old, old[0], (int64_t)((uint64_t)old[1] + (uint64_t)TAKEN)))
			;
	}
}

/*
 * Takes every CPU's stock back into R (see the file comment); lock held.
 * If R is still above the limit, closes every stock, the empty ones too,
 * and fences again: an inline uncharge that passed its check on an empty
 * stock before it was marked must not leave a stock behind. If R is back
 * within the limit at the end, opens them.
 */
static void take_stocks_locked(struct pcpu_charge *ch)
{
	/* the fence is a system call: only when a stock was marked */
	if (mark_stocks(ch, false) && ch->mode == PCPU_CPU_RSEQ)
		pcpu_cpu_fence();
	take_marked(ch);
	if (!within_limit(ch)) {
		if (mark_stocks(ch, true) && ch->mode == PCPU_CPU_RSEQ)
			pcpu_cpu_fence();
		take_marked(ch);
	}
	if (within_limit(ch))
		open_stocks(ch);
}

/*
 * Takes every CPU's stock back into R, waiting for another thread's take to
 * end first. Returns false, having done nothing, in a signal handler that
 * interrupted this thread's own take (or wait for one) of @ch.
 */
static bool take_stocks(struct pcpu_charge *ch)
{
	int place = lock_stocks(ch, true);

	if (place < 0)
		return false;
	take_stocks_locked(ch);
	unlock_stocks(ch, place);
	return true;
}

/*
 * A slow path's end on @cpu: if that CPU's stock is closed and R is back
 * within the limit, opens every stock, unless another thread holds the lock
 * (a later slow path opens them then): the inline paths work again.
 */
static void reopen_stocks(struct pcpu_charge *ch, int cpu)
{
	int64_t pair[2];
	int place;

	if (cpu < 0)
		return;
	pcpu_pair_load(pair_of(ch, (unsigned int)cpu), pair);
	if (!taken(ch, pair) || !within_limit(ch))
		return;
	place = lock_stocks(ch, false);
	if (place < 0)
		return;
	if (within_limit(ch))
		open_stocks(ch);
	unlock_stocks(ch, place);
}

/*
 * Is this CPU's stock above the cap? Only if a slow path's raise of the
 * stock landed between an inline uncharge's check and its add (a thread
 * that migrated in between): the inline try then fails for amounts below
 * the excess, and only a take lowers a stock.
 */
static bool over_full(const struct pcpu_charge *ch, int cpu)
{
	int64_t pair[2];

	if (cpu < 0)
		return false;
	pcpu_pair_load(pair_of(ch, (unsigned int)cpu), pair);
	return !taken(ch, pair) && stock_of(ch, pair) > cap_of(ch);
}

PCPU_EXPORT bool __pcpu_charge_try_slow(struct pcpu_charge *ch, int64_t amount)
{
	bool took = false;
	int cpu;

	if (!usable(ch, "pcpu_charge_try"))
		return false;
	if (amount < 0) {
		pcpu_misuse("pcpu_charge_try", "negative amount");
		return false;
	}
	cpu = pcpu_cpu_current(); /* any CPU's stock will do if the thread moves */
	if (over_full(ch, cpu))
		(void)take_stocks(ch);
	for (;;) {
		int64_t target = stock_target(ch);
		/* no refill for an amount that would overflow with it: it fails anyway */
		int64_t got = reserve(ch, amount, amount <= INT64_MAX - target ? amount + target : amount);

		if (got >= 0) {
			__atomic_add_fetch(&ch->used, amount, __ATOMIC_SEQ_CST);
			give_back(ch, got - amount - add_stock(ch, cpu, got - amount, target));
			reopen_stocks(ch, cpu);
			return true;
		}
		/* no false failure: the other CPUs' stocks may hold the room */
		if (took || !take_stocks(ch))
			return false;
		took = true;
	}
}

PCPU_EXPORT void __pcpu_charge_uncharge_slow(struct pcpu_charge *ch, int64_t amount)
{
	int cpu;

	if (!usable(ch, "pcpu_charge_uncharge"))
		return;
	if (amount < 0) {
		pcpu_misuse("pcpu_charge_uncharge", "negative amount");
		return;
	}
	/* fill this CPU's stock (to the cap, far from the limit), give back only the excess */
	cpu = pcpu_cpu_current();
	__atomic_sub_fetch(&ch->used, amount, __ATOMIC_SEQ_CST);
	give_back(ch, amount - add_stock(ch, cpu, amount, stock_target(ch)));
	reopen_stocks(ch, cpu);
}

static int check_options(const struct pcpu_charge_options *o)
{
	if (o->limit < 0 || o->limit > PCPU_CHARGE_MAX)
		return -EINVAL;
	if (o->stock_cap < 0 || o->stock_cap > PCPU_CHARGE_MAX)
		return -EINVAL;
	return 0;
}

static int64_t default_cap(int64_t limit)
{
	int64_t cap = limit / (int64_t)cpu_possible();

	return cap < DEFAULT_CAP_MIN ? DEFAULT_CAP_MIN : cap > DEFAULT_CAP_MAX ? DEFAULT_CAP_MAX : cap;
}

PCPU_EXPORT int pcpu_charge_init(struct pcpu_charge *ch, const struct pcpu_charge_options *o)
{
	unsigned int cpus;
	struct pcpu_charge_slot *slots;
	int err;

	if (!ch)
		return -EINVAL;
	*ch = (struct pcpu_charge){ 0 };
	if (!o)
		return -EINVAL;
	err = check_options(o);
	if (err)
		return err;
	if (pcpu_registry_setup() != 0)
		return -ENOMEM;
	ch->mode = pcpu_cpu_setup();
	/* taking a stock on the rseq path needs the fence */
	if (ch->mode == PCPU_CPU_RSEQ && pcpu_cpu_fence_setup() != 0)
		ch->mode = PCPU_CPU_ATOMIC;
	ch->half = (o->stock_cap ? o->stock_cap : default_cap(o->limit)) / 2;
	ch->limit = o->limit;
	slots = pcpu_arena_alloc(sizeof(struct pcpu_charge_slot));
	if (!slots) {
		*ch = (struct pcpu_charge){ 0 };
		return -ENOMEM;
	}
	/* every stock starts empty: mark + half == charged == 0 */
	cpus = cpu_possible();
	for (unsigned int cpu = 0; cpu < cpus; cpu++)
		((struct pcpu_charge_slot *)cpu_copy(slots, cpu))->mark = -ch->half;
	__atomic_store_n(&ch->slots, slots, __ATOMIC_RELEASE);
	ch->entry = pcpu_registry_add(&pcpu_charge_class, ch);
	if (!ch->entry) {
		pcpu_arena_free(slots, sizeof(struct pcpu_charge_slot));
		*ch = (struct pcpu_charge){ 0 };
		return -ENOMEM;
	}
	return 0;
}

PCPU_EXPORT void pcpu_charge_destroy(struct pcpu_charge *ch)
{
	if (!ch || !LOAD(&ch->slots))
		return;
	pcpu_registry_remove(ch->entry);
	pcpu_arena_free(ch->slots, sizeof(struct pcpu_charge_slot));
	*ch = (struct pcpu_charge){ 0 };
}

PCPU_EXPORT int64_t pcpu_charge_usage(const struct pcpu_charge *ch)
{
	unsigned int cpus = cpu_possible();
	uint64_t usage;

	if (!usable(ch, __func__))
		return 0;
	usage = (uint64_t)__atomic_load_n(&ch->used, __ATOMIC_ACQUIRE);
	for (unsigned int cpu = 0; cpu < cpus; cpu++)
		usage += (uint64_t)__atomic_load_n(pair_of(ch, cpu), __ATOMIC_ACQUIRE);
	return (int64_t)usage;
}

PCPU_EXPORT int64_t pcpu_charge_reserved(const struct pcpu_charge *ch)
{
	if (!usable(ch, __func__))
		return 0;
	return __atomic_load_n(&ch->reserved, __ATOMIC_ACQUIRE);
}

PCPU_EXPORT int64_t pcpu_charge_limit(const struct pcpu_charge *ch)
{
	if (!usable(ch, __func__))
		return 0;
	return LOAD(&ch->limit);
}

PCPU_EXPORT void pcpu_charge_drain(struct pcpu_charge *ch)
{
	if (usable(ch, __func__))
		(void)take_stocks(ch);
}

PCPU_EXPORT int pcpu_charge_set_limit(struct pcpu_charge *ch, int64_t limit)
{
	int place;

	if (!ch || !LOAD(&ch->slots) || limit < 0 || limit > PCPU_CHARGE_MAX)
		return -EINVAL;
	place = lock_stocks(ch, true);
	if (place < 0)
		return -EDEADLK;
	/* then R, sequentially consistent: see reserve() */
	__atomic_store_n(&ch->limit, limit, __ATOMIC_SEQ_CST);
	if (within_limit(ch))
		open_stocks(ch);
	else
		take_stocks_locked(ch);
	unlock_stocks(ch, place);
	return 0;
}

/*
 * Only this thread survives a fork: another thread's take may have stopped
 * with stocks marked, and its slow path between its steps. Finish the take,
 * then rebuild R from the invariant: a slow path cut short in the child
 * never returns to its caller there, and whatever of it landed in U or a
 * mark (a charge in U is a charge nobody in the child holds, as one that
 * completed just before the fork would be) is counted as it stands. (A
 * fork from a signal handler that interrupted this thread's own slow path
 * is not supported: that path would go on in the child against the
 * rebuilt R.)
 */
static void charge_fork_child(void *obj)
{
	struct pcpu_charge *ch = obj;
	unsigned int cpus = cpu_possible();
	uint64_t r = (uint64_t)LOAD(&ch->used);

	for (unsigned int cpu = 0; cpu < cpus; cpu++) {
		int64_t *pair = pair_of(ch, cpu);

		if (taken(ch, pair))
			pair[1] = (int64_t)((uint64_t)pair[1] + (uint64_t)TAKEN);
		r += (uint64_t)pair[1] + (uint64_t)ch->half;
	}
	/* above the limit the stocks are closed, empty, as a take leaves them */
	if ((int64_t)r > ch->limit) {
		r = (uint64_t)LOAD(&ch->used);
		for (unsigned int cpu = 0; cpu < cpus; cpu++) {
			int64_t *pair = pair_of(ch, cpu);

			pair[1] = (int64_t)((uint64_t)pair[0] - (uint64_t)ch->half - (uint64_t)TAKEN);
			r += (uint64_t)pair[0];
		}
	}
	__atomic_store_n(&ch->reserved, (int64_t)r, __ATOMIC_RELAXED);
	__atomic_store_n(&ch->taking, 0, __ATOMIC_RELAXED);
}

const struct pcpu_class pcpu_charge_class = {
	.fork_child = charge_fork_child,
};
