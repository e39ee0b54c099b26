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
 * families (<percpu/family.h>), two with room for FAM_CAP children of
 *   labels a and b, values from a tiny alphabet, a gauge with an overflow
 *   child and a counter without: a get of a live tuple gives its child; a
 *   new one below the cap a new child at 0; at the cap E2BIG, and a bad
 *   tuple EINVAL, each counted by refused() and answered with the overflow
 *   child or NULL; the overflow child never counts against the cap and
 *   remove() of it is -EBUSY, of an absent tuple -ENOENT; count() is the
 *   live children, the overflow one included; every live child's sum and
 *   every removed, unreclaimed one's (adds through a kept pointer count
 *   in it) is the model's; the exposition holds exactly the live
 *   children, once each, and percpu_family_refused_total exactly refused()
 *   once a family refused or has an overflow child.
 *
 * Amounts stay within +-2^40 and a program is short, so the model never
 * overflows.
 */
#define _GNU_SOURCE
#include <percpu/charge.h>
#include <percpu/counter.h>
#include <percpu/family.h>
#include <percpu/metrics.h>
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

/* Families: FAM_VALS values for each of 2 labels, room for FAM_CAP children. */
#define FAM_VALS 4
#define FAM_TUPLES (FAM_VALS * FAM_VALS)
#define FAM_CAP 3
#define FAM_REMOVED 32

static const char *const fam_alpha[FAM_VALS] = { "", "x", "y", "caf\xc3\xa9" };

struct fam_removed {
	struct pcpu_counter *c;
	int64_t v;
};

static struct fam {
	const char *name;
	struct pcpu_family *f;
	struct pcpu_counter *live[FAM_TUPLES]; /* NULL: no child */
	int64_t v[FAM_TUPLES];
	unsigned int nr_live;                  /* the overflow child not counted */
	struct fam_removed removed[FAM_REMOVED];
	unsigned int nr_removed;
	uint64_t refused;
	bool has_overflow;                     /* tuple 0 ({"", ""}) then */
} fams[2] = { { .name = "fuzz_family_depth" }, { .name = "fuzz_family_hits" } };

static void fam_create(void)
{
	static const char *const labels[] = { "a", "b", NULL };
	static const char *const tuple0[] = { "", "", NULL };

	for (int i = 0; i < 2; i++) {
		struct fam *m = &fams[i];
		struct pcpu_family_desc d = { .name = m->name, .label_names = labels,
					      .max_children = FAM_CAP,
					      .kind = i ? PCPU_METRIC_COUNTER : PCPU_METRIC_GAUGE };

		m->f = pcpu_family_create(&d);
		FUZZ_CHECK(m->f, "family_create %s: %s", m->name, strerror(errno));
	}
	FUZZ_CHECK(pcpu_family_set_overflow(fams[0].f, tuple0) == 0, "set_overflow");
	FUZZ_CHECK(pcpu_family_set_overflow(fams[0].f, tuple0) == -EEXIST, "set_overflow again");
	fams[0].has_overflow = true;
	fams[0].live[0] = pcpu_family_get(fams[0].f, tuple0);
	FUZZ_CHECK(fams[0].live[0], "the overflow tuple's get");
}

/*
 * A tuple from a byte: values of the alphabet (index t % FAM_TUPLES) three
 * times in four, else a bad one: a value not UTF-8, one too long
 * (FAM_BAD_VALUE), one value, three (FAM_BAD_COUNT). Returns the index of
 * a good tuple.
 */
#define FAM_BAD_VALUE (-1)
#define FAM_BAD_COUNT (-2)

static int fam_tuple(uint8_t t, const char **v)
{
	static char too_long[PCPU_FAMILY_MAX_VALUE_LEN + 2];

	v[0] = fam_alpha[t % FAM_VALS];
	v[1] = fam_alpha[t / FAM_VALS % FAM_VALS];
	v[2] = NULL;
	v[3] = NULL;
	switch (t >> 4) {
	case 12:
		v[t & 1] = "\xff";
		return FAM_BAD_VALUE;
	case 13:
		memset(too_long, 'v', sizeof(too_long) - 1);
		v[t & 1] = too_long;
		return FAM_BAD_VALUE;
	case 14:
		v[1] = NULL;
		return FAM_BAD_COUNT;
	case 15:
		v[2] = "z";
		return FAM_BAD_COUNT;
	default:
		return t % FAM_TUPLES;
	}
}

static bool fam_is_overflow(const struct fam *m, int t)
{
	return m->has_overflow && t == 0;
}

struct fam_seen {
	const struct fam *m;
	bool seen[FAM_TUPLES];
	bool refused_seen;
};

static int fam_sample(const struct pcpu_metric_sample *s, void *arg)
{
	struct fam_seen *w = arg;
	const struct fam *m = w->m;
	const char *const *l = s->labels;
	int t = -1;

	if (strcmp(s->name, "percpu_family_refused") == 0 && l && l[0] && l[2] == NULL &&
	    strcmp(l[0], "family") == 0 && strcmp(l[1], m->name) == 0) {
		FUZZ_CHECK(!w->refused_seen, "%s: refused exposed twice", m->name);
		FUZZ_CHECK((uint64_t)s->value == m->refused, "%s: refused_total %" PRId64
			   ", model %" PRIu64, m->name, s->value, m->refused);
		w->refused_seen = true;
		return 0;
	}
	if (strcmp(s->name, m->name) != 0)
		return 0;
	FUZZ_CHECK(l && l[0] && l[1] && l[2] && l[3] && !l[4] && strcmp(l[0], "a") == 0 &&
		   strcmp(l[2], "b") == 0, "%s: a sample's labels", m->name);
	for (int i = 0; i < FAM_TUPLES; i++)
		if (strcmp(l[1], fam_alpha[i % FAM_VALS]) == 0 &&
		    strcmp(l[3], fam_alpha[i / FAM_VALS]) == 0)
			t = i;
	FUZZ_CHECK(t >= 0 && m->live[t], "%s: a sample of no live child {%s, %s}", m->name, l[1],
		   l[3]);
	FUZZ_CHECK(!w->seen[t], "%s: child %d exposed twice", m->name, t);
	w->seen[t] = true;
	return 0;
}

static void fam_check(struct fam *m, bool expose)
{
	unsigned int n = pcpu_family_count(m->f);

	FUZZ_CHECK(n == m->nr_live + m->has_overflow, "%s: count %u, model %u", m->name, n,
		   m->nr_live + m->has_overflow);
	FUZZ_CHECK(pcpu_family_refused(m->f) == m->refused, "%s: refused %" PRIu64 ", model %"
		   PRIu64, m->name, pcpu_family_refused(m->f), m->refused);
	for (int t = 0; t < FAM_TUPLES; t++)
		if (m->live[t])
			FUZZ_CHECK(pcpu_counter_sum(m->live[t]) == m->v[t], "%s: child %d: sum %"
				   PRId64 ", model %" PRId64, m->name, t,
				   pcpu_counter_sum(m->live[t]), m->v[t]);
	for (unsigned int i = 0; i < m->nr_removed; i++)
		FUZZ_CHECK(pcpu_counter_sum(m->removed[i].c) == m->removed[i].v,
			   "%s: removed child %u: sum %" PRId64 ", model %" PRId64, m->name, i,
			   pcpu_counter_sum(m->removed[i].c), m->removed[i].v);
	if (expose) {
		struct fam_seen w = { .m = m };

		FUZZ_CHECK(pcpu_metrics_foreach(fam_sample, &w) == 0, "foreach");
		for (int t = 0; t < FAM_TUPLES; t++)
			FUZZ_CHECK(w.seen[t] == (m->live[t] != NULL), "%s: live child %d not exposed",
				   m->name, t);
		FUZZ_CHECK(w.refused_seen == (m->refused > 0 || m->has_overflow),
			   "%s: refused_total exposed: %d", m->name, w.refused_seen);
	}
}

static void fam_reclaim(struct fam *m)
{
	pcpu_family_reclaim(m->f);
	m->nr_removed = 0;
}

static void fam_remove(struct fam *m, int t, const char *const *v)
{
	int err;

	/* before the remove: a reclaim after it would free this child too */
	if (m->nr_removed == FAM_REMOVED)
		fam_reclaim(m);
	err = pcpu_family_remove(m->f, v);

	if (t < 0) {
		FUZZ_CHECK(err == -EINVAL, "%s: remove of a bad tuple: %d", m->name, err);
		return;
	}
	if (fam_is_overflow(m, t)) {
		FUZZ_CHECK(err == -EBUSY, "%s: remove of the overflow child: %d", m->name, err);
		return;
	}
	if (!m->live[t]) {
		FUZZ_CHECK(err == -ENOENT, "%s: remove of absent %d: %d", m->name, t, err);
		return;
	}
	FUZZ_CHECK(err == 0, "%s: remove %d: %d", m->name, t, err);
	/* its memory stays valid until reclaim: kept, to add to and check */
	m->removed[m->nr_removed++] = (struct fam_removed){ m->live[t], m->v[t] };
	m->live[t] = NULL;
	m->nr_live--;
}

static void fam_get(struct fam *m, int t, const char *const *v)
{
	struct pcpu_counter *got, *want = m->has_overflow ? m->live[0] : NULL;

	errno = 0;
	got = pcpu_family_get(m->f, v);
	if (t < 0) {
		/*
		 * A bad value at the cap is a new tuple at the cap too: the
		 * header does not say which errno wins (the library checks the
		 * count of values, then the cap, then the values)
		 */
		FUZZ_CHECK(got == want && (errno == EINVAL ||
					   (t == FAM_BAD_VALUE && m->nr_live == FAM_CAP &&
					    errno == E2BIG)),
			   "%s: get of a bad tuple: %p, errno %d", m->name, (void *)got, errno);
		m->refused++;
	} else if (m->live[t]) {
		FUZZ_CHECK(got == m->live[t], "%s: get of live %d: another child", m->name, t);
	} else if (m->nr_live == FAM_CAP) {
		FUZZ_CHECK(got == want && errno == E2BIG, "%s: get at the cap: %p, errno %d",
			   m->name, (void *)got, errno);
		m->refused++;
	} else {
		FUZZ_CHECK(got && pcpu_counter_sum(got) == 0, "%s: a new child: errno %d", m->name, errno);
		for (int i = 0; i < FAM_TUPLES; i++)
			FUZZ_CHECK(got != m->live[i], "%s: a new child is live %d's", m->name, i);
		for (unsigned int i = 0; i < m->nr_removed; i++)
			FUZZ_CHECK(got != m->removed[i].c, "%s: a new child is a removed one", m->name);
		m->live[t] = got;
		m->v[t] = 0;
		m->nr_live++;
	}
}

/* The family ops: @op's low bit the family, the next four the call. */
static void family_op(struct fuzz_in *in, uint8_t op)
{
	struct fam *m = &fams[op & 1];
	const char *v[4];
	int t = fam_tuple(fuzz_u8(in), v);
	/* gauges take any sign; a counter family's children only grow */
	int64_t a = (int16_t)fuzz_bytes(in, 2);
	bool expose = true;

	if (op & 1)
		a = a < 0 ? -a : a;
	switch (op >> 1 & 15) {
	case 0:
	case 1:
	case 2:
	case 3:
		fam_get(m, t, v);
		break;
	case 4:
	case 5:
		fam_remove(m, t, v);
		break;
	case 6:
		fam_reclaim(m);
		break;
	case 7:
		/* a kept pointer to a removed child still counts */
		if (m->nr_removed) {
			struct fam_removed *r = &m->removed[(uint8_t)a % m->nr_removed];

			pcpu_counter_add(r->c, a);
			r->v += a;
		}
		expose = false;
		break;
	case 8:
		if (op & 1) {
			uint64_t before = m->refused;

			errno = 0;
			FUZZ_CHECK(!pcpu_family_get_histogram(m->f, v) && errno == EINVAL,
				   "get_histogram of a counter family");
			FUZZ_CHECK(pcpu_family_refused(m->f) == before, "get_histogram refused");
			break;
		}
		/* fall through */
	default:
		/* adds, the most: to the tuple's child if live, through the pointer */
		if (t >= 0 && m->live[t]) {
			pcpu_counter_add(m->live[t], a);
			m->v[t] += a;
		}
		expose = false;
		break;
	}
	fam_check(m, expose);
}

/*
 * The families for the next program: every child but the overflow one
 * removed (kept until a reclaim, which waits for a grace period: only
 * when the list is full).
 */
static void fam_reset(void)
{
	if (!fams[0].f)
		fam_create();
	for (int i = 0; i < 2; i++) {
		struct fam *m = &fams[i];

		for (int t = 0; t < FAM_TUPLES; t++) {
			const char *v[4];

			if (m->live[t] && !fam_is_overflow(m, t)) {
				(void)fam_tuple((uint8_t)t, v);
				fam_remove(m, t, v);
			}
		}
		fam_check(m, true);
	}
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
	fam_reset();
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
			} else if (op & 32) {
				family_op(&in, op);
			} else {
				cpu_set_t set;

				CPU_ZERO(&set);
				CPU_SET((op & 31) % ncpus, &set);
				(void)sched_setaffinity(0, sizeof(set), &set);
			}
			break;
		}
	}
	return 0;
}
