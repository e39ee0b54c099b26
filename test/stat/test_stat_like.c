/* SPDX-License-Identifier: MIT */
/*
 * pcpu_stat_create_like(): a set made like another has its items and
 * layout, counts on its own, keeps its own thresholds, and outlives its
 * prototype (the descriptions they share go with the last set).
 */
#include "stat_helpers.h"

TestSuite(stat_like, .timeout = 60);

static const struct pcpu_stat_item like_items[] = {
	{ .name = "bytes", .help = "bytes seen", .kind = PCPU_METRIC_COUNTER, .group = 2 },
	{ .name = "depth", .kind = PCPU_METRIC_GAUGE, .scale = 1000, .floor = 7 },
	{ .name = "ops", .help = "operations", .group = 2, .accuracy = 1 << 20 },
	{ .name = "coarse", .accuracy = 1, .group = 5 },
};

#define NR_LIKE 4u

static struct pcpu_stat *like_proto(uint32_t flags)
{
	struct pcpu_stat *s = pcpu_stat_create(&(struct pcpu_stat_desc){
		.items = like_items, .nr_items = NR_LIKE, .flags = flags });

	cr_assert_not_null(s, "pcpu_stat_create: %s", strerror(errno));
	return s;
}

static struct pcpu_stat *like(const struct pcpu_stat *proto)
{
	struct pcpu_stat *s = pcpu_stat_create_like(proto);

	cr_assert_not_null(s, "pcpu_stat_create_like: %s", strerror(errno));
	cr_assert_neq(s, proto);
	return s;
}

/* @s has like_items, laid out as @proto is. */
static void assert_same_items(const struct pcpu_stat *s, const struct pcpu_stat *proto)
{
	cr_assert_eq(pcpu_stat_count(s), NR_LIKE);
	cr_assert_eq(s->flags, proto->flags);
	cr_assert_eq(pcpu_stat_debug_nr_lines(s), pcpu_stat_debug_nr_lines(proto));
	for (unsigned int i = 0; i < NR_LIKE; i++) {
		const struct pcpu_stat_item *d = &like_items[i];
		uint32_t group = 99;

		cr_assert_str_eq(pcpu_stat_name(s, i), d->name);
		cr_assert_str_eq(pcpu_stat_help(s, i), d->help ? d->help : "");
		cr_assert_eq(pcpu_stat_kind(s, i), d->kind ? d->kind : PCPU_METRIC_COUNTER);
		cr_assert_eq(pcpu_stat_scale(s, i), d->scale > 1 ? d->scale : 1);
		cr_assert_eq(pcpu_stat_group(s, i, &group), 0);
		cr_assert_eq(group, d->group);
		cr_assert_eq(pcpu_stat_lookup(s, d->name), (int)i);
		cr_assert_eq(s->hot[i].slot, proto->hot[i].slot, "item %u's slot", i);
		cr_assert_eq(s->hot[i].threshold, proto->hot[i].threshold, "item %u's threshold", i);
		cr_assert_eq(pcpu_stat_debug_line(s, i), pcpu_stat_debug_line(proto, i));
		cr_assert_eq(pcpu_stat_sum((struct pcpu_stat *)s, i), 0);
	}
	cr_assert_eq(pcpu_stat_lookup(s, "nope"), -ENOENT);
}

PCPU_TEST(stat_like, null_proto_is_einval)
{
	errno = 0;
	cr_assert_null(pcpu_stat_create_like(NULL));
	cr_assert_eq(errno, EINVAL);
}

PCPU_TEST(stat_like, same_items_and_lookups)
{
	struct pcpu_stat *proto = like_proto(0), *s = like(proto), *t = like(s);

	assert_same_items(s, proto);
	assert_same_items(t, proto); /* a set made like a set made like one */
	pcpu_stat_destroy(t);
	pcpu_stat_destroy(s);
	pcpu_stat_destroy(proto);
	proto = like_proto(PCPU_STAT_ONE_PER_LINE);
	s = like(proto);
	cr_assert_eq(pcpu_stat_debug_nr_lines(s), NR_LIKE, "one item per line");
	assert_same_items(s, proto);
	pcpu_stat_destroy(s);
	pcpu_stat_destroy(proto);
}

PCPU_TEST(stat_like, counts_independently)
{
	struct pcpu_stat *proto = like_proto(0), *a = like(proto), *b = like(proto);
	int64_t values[NR_LIKE];

	pcpu_stat_add(proto, 0, 5);
	for (unsigned int i = 0; i < NR_LIKE; i++)
		pcpu_stat_add(a, i, 100 + (int64_t)i);
	pcpu_stat_add(b, 2, -3);
	pcpu_stat_add(a, 3, INT64_C(1) << 40); /* past any threshold: central */
	stat_test_assert_exact(proto, (int64_t[]){ 5, 0, 0, 0 });
	stat_test_assert_exact(a, (int64_t[]){ 100, 101, 102, 103 + (INT64_C(1) << 40) });
	stat_test_assert_exact(b, (int64_t[]){ 0, 0, -3, 0 });
	cr_assert_eq(pcpu_stat_snapshot(b, values, NULL), 0);
	cr_assert_eq(values[0], 0);
	cr_assert_eq(values[2], -3);
	cr_assert_eq(values[3], 0);
	pcpu_stat_destroy(a);
	pcpu_stat_destroy(b);
	pcpu_stat_destroy(proto);
}

PCPU_TEST(stat_like, survives_its_prototype)
{
	struct pcpu_stat *proto = like_proto(0), *a = like(proto), *b;
	struct pcpu_stat_hot hot[NR_LIKE];

	memcpy(hot, proto->hot, sizeof(hot));
	pcpu_stat_add(proto, 1, 9);
	pcpu_stat_destroy(proto);
	b = like(a); /* made after the prototype is gone */
	for (unsigned int i = 0; i < NR_LIKE; i++) {
		cr_assert_str_eq(pcpu_stat_name(a, i), like_items[i].name);
		cr_assert_eq(pcpu_stat_lookup(b, like_items[i].name), (int)i);
		cr_assert_eq(b->hot[i].slot, hot[i].slot);
		cr_assert_eq(b->hot[i].threshold, hot[i].threshold);
		pcpu_stat_add(a, i, 1000 + (int64_t)i);
		pcpu_stat_add(b, i, -(int64_t)i);
	}
	cr_assert_str_eq(pcpu_stat_help(b, 2), "operations");
	stat_test_assert_exact(a, (int64_t[]){ 1000, 1001, 1002, 1003 });
	stat_test_assert_exact(b, (int64_t[]){ 0, -1, -2, -3 });
	pcpu_stat_destroy(a);
	cr_assert_str_eq(pcpu_stat_name(b, 3), "coarse", "the last set keeps the names");
	pcpu_stat_fold_all(b);
	stat_test_assert_exact(b, (int64_t[]){ 0, -1, -2, -3 });
	pcpu_stat_destroy(b);
}

PCPU_TEST(stat_like, thresholds_evolve_independently)
{
	struct pcpu_stat *proto = like_proto(0), *a = like(proto), *b = like(proto);
	uint64_t cpus = pcpu_cpu_possible();
	/* large enough that even accuracy 1 << 20 lifts the threshold off its floor */
	int64_t value = (INT64_C(1) << 29) * (int64_t)cpus;
	uint32_t before[NR_LIKE];
	uint64_t bound_b[NR_LIKE];

	stat_test_pin_or_skip(); /* one armed CPU in each set that adds */
	pcpu_stat_add(b, 0, 1); /* arms b's words: its bounds count one CPU */
	for (unsigned int i = 0; i < NR_LIKE; i++) {
		before[i] = b->hot[i].threshold;
		bound_b[i] = pcpu_stat_error_bound(b, i);
	}
	for (unsigned int i = 0; i < NR_LIKE; i++)
		pcpu_stat_add(a, i, value);
	for (unsigned int i = 0; i < NR_LIKE; i++) {
		cr_assert_gt(a->hot[i].threshold, before[i], "item %u: a's threshold rose", i);
		cr_assert_gt(pcpu_stat_error_bound(a, i), bound_b[i], "item %u: a's bound rose", i);
		cr_assert_eq(b->hot[i].threshold, before[i], "item %u: b's threshold moved", i);
		cr_assert_eq(pcpu_stat_error_bound(b, i), bound_b[i], "item %u: b's bound moved", i);
		cr_assert_eq(proto->hot[i].threshold, before[i], "item %u: proto's moved", i);
		cr_assert_eq(pcpu_stat_error_bound(proto, i), 0, "item %u: proto armed nothing", i);
	}
	cr_assert_eq(a->hot[0].threshold, (uint32_t)((uint64_t)value / (64 * cpus)));
	/* and the other way: b's rise leaves a's largest threshold where it was */
	pcpu_stat_add(b, 3, 4 * value);
	cr_assert_eq(pcpu_stat_error_bound(b, 3), (uint64_t)PCPU_STAT_MAX_THRESH);
	cr_assert_eq(pcpu_stat_error_bound(a, 0), (uint64_t)value / (64 * cpus));
	cr_assert_eq(pcpu_stat_error_bound(proto, 3), 0);
	pcpu_stat_destroy(a);
	pcpu_stat_destroy(b);
	pcpu_stat_destroy(proto);
}
