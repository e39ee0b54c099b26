/* SPDX-License-Identifier: MIT */
/*
 * Call sequences against exact models, on one thread: a native counter
 * (<percpu/counter.h>), a kernel drop-in (<percpu/percpu_counter.h>) and a
 * charge (<percpu/charge.h>). The input is a program: one byte per op and
 * its operands; the thread may be moved to another CPU between ops, so
 * that pending deltas are left on several CPUs. After every op, every
 * promise a single thread can observe at quiescence is checked:
 *
 * counter: sum() == the model; |read() - model| <= error_bound();
 *   compare() has the model's sign; limited_add() adds iff the model's
 *   result stays within the limit (any sign; 0 always adds), and then
 *   exactly; sync_if_delta_above(d) and read() after it are within d;
 *   while every update since init or set has one sign, read() and sum()
 *   never move against it.
 * drop-in: the same, and read() within (percpu_counter_batch - 1) * CPUs
 *   while only the kernel's add/sub/inc/dec ran (a fixed-batch counter);
 *   the _positive reads clamp at 0.
 * charge: usage() == the model; try(a) succeeds iff usage + a <= limit
 *   (no false failure at quiescence), so usage never passes the limit;
 *   reserved() >= usage(), and <= limit unless a lowered limit left usage
 *   above it (then the stocks are closed: reserved() == usage()); after
 *   drain(), reserved() == usage(); set_limit() and init give -EINVAL
 *   exactly outside 0..PCPU_CHARGE_MAX.
 *
 * Amounts stay within +-2^40 and a program is short, so the model never
 * overflows.
 */
#define _GNU_SOURCE
#include <percpu/charge.h>
#include <percpu/counter.h>
#include <percpu/percpu_counter.h>
#include <sched.h>

#include "fuzz.h"

#define AMOUNT_MAX (INT64_C(1) << 40)

struct model {
	int64_t v;
	int dir;      /* the sign of every update since init or set; 2: both */
	int64_t last_read, last_sum;
};

static struct pcpu_counter c;
static struct percpu_counter k;
static struct pcpu_charge ch;
static struct model mc, mk;
static int64_t usage, limit;
static bool k_fixed; /* only the kernel's batch adds since init or set */
static int64_t k_batch;
static int ncpus;

static int64_t amount(struct fuzz_in *in)
{
	uint8_t how = fuzz_u8(in);

	switch (how & 3) {
	case 0:
		return (int8_t)fuzz_u8(in);
	case 1:
		return (int16_t)fuzz_bytes(in, 2) * (int64_t)(how >> 2);
	case 2:
		return (int32_t)fuzz_u32(in);
	default:
		return fuzz_i64(in) % AMOUNT_MAX;
	}
}

static void model_reset(struct model *m, int64_t v)
{
	*m = (struct model){ .v = v, .dir = 0, .last_read = v, .last_sum = v };
}

static void model_add(struct model *m, int64_t a)
{
	int d = a > 0 ? 1 : a < 0 ? -1 : 0;

	m->v += a;
	if (d && m->dir != d)
		m->dir = m->dir ? 2 : d;
}

static uint64_t dist(int64_t a, int64_t b)
{
	return a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

static int sign(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

static void check_counter(const char *what, struct pcpu_counter *x, struct model *m)
{
	int64_t sum = pcpu_counter_sum(x), read = pcpu_counter_read(x);
	uint64_t bound = pcpu_counter_error_bound(x);

	FUZZ_CHECK(sum == m->v, "%s: sum %" PRId64 ", model %" PRId64, what, sum, m->v);
	FUZZ_CHECK(dist(read, m->v) <= bound, "%s: read %" PRId64 ", model %" PRId64 ", bound %" PRIu64,
		   what, read, m->v, bound);
	if (m->dir == 1)
		FUZZ_CHECK(read >= m->last_read && sum >= m->last_sum, "%s: read %" PRId64
			   " after %" PRId64 " while only adding", what, read, m->last_read);
	if (m->dir == -1)
		FUZZ_CHECK(read <= m->last_read && sum <= m->last_sum, "%s: read %" PRId64
			   " after %" PRId64 " while only subtracting", what, read, m->last_read);
	m->last_read = read;
	m->last_sum = sum;
}

static bool within(int64_t v, int64_t lim, int64_t a)
{
	return a == 0 || (a > 0 ? v + a <= lim : v + a >= lim);
}

/* The counter ops: 0-11 on @x, modelled by @m. */
static void counter_op(struct fuzz_in *in, uint8_t op, struct pcpu_counter *x, struct model *m,
		       bool native)
{
	int64_t a = amount(in), r;

	switch (op % 12) {
	case 0:
		pcpu_counter_add(x, a);
		model_add(m, a);
		break;
	case 1: {
		int64_t batch = amount(in);

		pcpu_counter_add_batch(x, a, batch);
		model_add(m, a);
		k_fixed &= native;
		break;
	}
	case 2:
		pcpu_counter_set(x, a);
		model_reset(m, a);
		k_fixed = !native ? k_batch > 0 : k_fixed;
		break;
	case 3:
		FUZZ_CHECK(pcpu_counter_compare(x, a) == sign(m->v, a), "compare(%" PRId64
			   ") with %" PRId64, a, m->v);
		break;
	case 4: {
		int64_t lim = m->v + (int8_t)fuzz_u8(in) * (fuzz_u8(in) & 1 ? 1 : a / 64 + 1);
		bool want = within(m->v, lim, a), got = pcpu_counter_limited_add(x, lim, a);

		FUZZ_CHECK(got == want, "limited_add(%" PRId64 ", %" PRId64 ") at %" PRId64
			   ": %d", lim, a, m->v, got);
		if (got)
			model_add(m, a);
		break;
	}
	case 5: {
		uint64_t d = (uint64_t)(a < 0 ? -a : a);

		r = pcpu_counter_sync_if_delta_above(x, d);
		FUZZ_CHECK(dist(r, m->v) <= d, "sync_if_delta_above(%" PRIu64 ") = %" PRId64
			   ", model %" PRId64, d, r, m->v);
		FUZZ_CHECK(dist(pcpu_counter_read(x), m->v) <= d, "read after sync(%" PRIu64 ")", d);
		break;
	}
	case 6:
		pcpu_counter_fold_this_cpu(x);
		break;
	case 7:
		(void)pcpu_counter_read(x);
		break;
	default:
		/* more adds than anything else: small ones stay on the CPU */
		a = (int8_t)a;
		pcpu_counter_add(x, a);
		model_add(m, a);
		break;
	}
}

static void kernel_op(struct fuzz_in *in, uint8_t op)
{
	int64_t a = amount(in);
	bool want;

	switch (op % 10) {
	case 0:
		percpu_counter_add(&k, a);
		model_add(&mk, a);
		break;
	case 1:
		percpu_counter_sub(&k, a);
		model_add(&mk, -a);
		break;
	case 2:
		percpu_counter_inc(&k);
		model_add(&mk, 1);
		break;
	case 3:
		percpu_counter_dec(&k);
		model_add(&mk, -1);
		break;
	case 4:
		percpu_counter_add_local(&k, a);
		model_add(&mk, a);
		k_fixed = false;
		break;
	case 5:
		percpu_counter_sub_local(&k, a);
		model_add(&mk, -a);
		k_fixed = false;
		break;
	case 6:
		FUZZ_CHECK(percpu_counter_compare(&k, a) == sign(mk.v, a), "kernel compare");
		FUZZ_CHECK(__percpu_counter_compare(&k, a, (s32)a) == sign(mk.v, a), "__compare");
		break;
	case 7: {
		int64_t lim = mk.v + (int8_t)fuzz_u8(in);

		want = within(mk.v, lim, a);
		FUZZ_CHECK(percpu_counter_limited_add(&k, lim, a) == want, "kernel limited_add");
		if (want)
			model_add(&mk, a);
		break;
	}
	case 8:
		FUZZ_CHECK(percpu_counter_sum_positive(&k) == (mk.v > 0 ? mk.v : 0), "sum_positive");
		FUZZ_CHECK(percpu_counter_read_positive(&k) >= 0, "read_positive");
		FUZZ_CHECK(__percpu_counter_sum(&k) == mk.v, "__sum");
		break;
	default:
		percpu_counter_sync(&k);
		break;
	}
	if (k_fixed)
		FUZZ_CHECK(dist(percpu_counter_read(&k), mk.v) <=
				   (uint64_t)(k_batch - 1) * pcpu_cpu_possible(),
			   "kernel read %" PRId64 ", model %" PRId64 ", batch %" PRId64,
			   (int64_t)percpu_counter_read(&k), mk.v, k_batch);
}

static void check_charge(void)
{
	int64_t u = pcpu_charge_usage(&ch), r = pcpu_charge_reserved(&ch);

	FUZZ_CHECK(u == usage, "usage %" PRId64 ", model %" PRId64, u, usage);
	FUZZ_CHECK(pcpu_charge_limit(&ch) == limit, "limit");
	FUZZ_CHECK(r >= u, "reserved %" PRId64 " below usage %" PRId64, r, u);
	FUZZ_CHECK(r <= limit || r == u, "reserved %" PRId64 " above the limit %" PRId64
		   " (usage %" PRId64 ")", r, limit, u);
}

static int64_t charge_amount(struct fuzz_in *in)
{
	int64_t a = amount(in);

	return a < 0 ? -a : a;
}

static void charge_op(struct fuzz_in *in, uint8_t op)
{
	int64_t a = charge_amount(in);
	bool got;
	int err;

	switch (op % 6) {
	case 0:
	case 1:
		a = op % 2 ? a : (uint8_t)a;
		got = pcpu_charge_try(&ch, a);
		FUZZ_CHECK(got == (usage + a <= limit), "try(%" PRId64 ") at usage %" PRId64
			   ", limit %" PRId64 ": %d", a, usage, limit, got);
		usage += got ? a : 0;
		break;
	case 2:
	case 3:
		/* uncharge what is charged (more is the caller's bug: not modelled) */
		a = usage ? (op % 2 ? a % (usage + 1) : (uint8_t)a % (usage + 1)) : 0;
		pcpu_charge_uncharge(&ch, a);
		usage -= a;
		break;
	case 4: {
		int64_t l = fuzz_u8(in) & 1 ? usage + (int8_t)fuzz_u8(in) : a;

		err = pcpu_charge_set_limit(&ch, l);
		FUZZ_CHECK(err == (l >= 0 && l <= PCPU_CHARGE_MAX ? 0 : -EINVAL),
			   "set_limit(%" PRId64 "): %d", l, err);
		if (!err)
			limit = l;
		break;
	}
	default:
		pcpu_charge_drain(&ch);
		FUZZ_CHECK(pcpu_charge_reserved(&ch) == pcpu_charge_usage(&ch), "drain");
		break;
	}
	check_charge();
}

static bool live;
static struct pcpu_counter_options last_o;
static struct pcpu_charge_options last_co;
static bool last_elastic;

static void destroy_all(void);

/*
 * The objects for the next program: made anew when its options differ from
 * the last ones; else reset (set, and the charge emptied to the new limit),
 * since a destroy waits for an RCU grace period (most of a run's time).
 */
static void init_all(struct fuzz_in *in, bool fresh)
{
	struct pcpu_counter_options o = { (int32_t)(fuzz_u8(in) % 80), amount(in) % 4096,
					  fuzz_u8(in) & 1 ? amount(in) % 100000 : 0 };
	struct pcpu_charge_options co = { charge_amount(in), charge_amount(in) % 100000 };
	int64_t v = amount(in);
	bool elastic = fuzz_u8(in) & 1;
	int err;

	/* field by field: memcmp() would read the struct's padding, never set */
	if (live && !fresh && o.accuracy == last_o.accuracy && o.floor == last_o.floor &&
	    o.batch == last_o.batch &&
	    co.stock_cap == last_co.stock_cap && elastic == last_elastic) {
		pcpu_counter_set(&c, v);
		percpu_counter_set(&k, v);
		pcpu_charge_uncharge(&ch, usage);
		FUZZ_CHECK(pcpu_charge_set_limit(&ch, co.limit) == 0, "set_limit");
		goto models;
	}
	if (live)
		destroy_all();
	last_o = o;
	last_co = co;
	last_elastic = elastic;
	err = pcpu_counter_init_opts(&c, v, &o);
	FUZZ_CHECK(err == ((o.floor < 0 || o.batch < 0) ? -EINVAL : 0), "init_opts: %d", err);
	if (err)
		FUZZ_CHECK(pcpu_counter_init(&c, v) == 0, "init");
	if (elastic)
		FUZZ_CHECK(percpu_counter_init_elastic(&k, v, GFP_KERNEL) == 0, "init elastic");
	else
		FUZZ_CHECK(percpu_counter_init(&k, v, GFP_KERNEL) == 0, "init drop-in");
	FUZZ_CHECK(pcpu_charge_init(&ch, &co) == 0, "charge init");
	live = true;
models:
	model_reset(&mc, v);
	model_reset(&mk, v);
	k_batch = elastic ? 0 : percpu_counter_batch > 1 ? percpu_counter_batch : 1;
	k_fixed = k_batch > 0;
	usage = 0;
	limit = co.limit;
	check_counter("counter", &c, &mc);
	check_counter("drop-in", &k.pcpu, &mk);
	check_charge();
}

static void destroy_all(void)
{
	live = false;
	pcpu_counter_destroy(&c);
	percpu_counter_destroy(&k);
	pcpu_charge_destroy(&ch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };

	if (!ncpus)
		ncpus = (int)pcpu_cpu_possible();
	init_all(&in, false);
	while (in.left) {
		uint8_t op = fuzz_u8(&in);

		switch (op >> 6) {
		case 0:
			counter_op(&in, op, &c, &mc, true);
			check_counter("counter", &c, &mc);
			break;
		case 1:
			if (op & 32) {
				kernel_op(&in, op);
			} else {
				counter_op(&in, op, &k.pcpu, &mk, false);
			}
			check_counter("drop-in", &k.pcpu, &mk);
			break;
		case 2:
			charge_op(&in, op);
			break;
		default:
			if ((op & 63) == 63) {
				init_all(&in, true);
			} else {
				cpu_set_t set;

				CPU_ZERO(&set);
				CPU_SET((op & 63) % ncpus, &set);
				(void)sched_setaffinity(0, sizeof(set), &set);
			}
			break;
		}
	}
	return 0;
}
