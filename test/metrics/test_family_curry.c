/* SPDX-License-Identifier: MIT */
/*
 * Curried views of label families and removal by a partial tuple
 * (<percpu/family.h>, since 0.5): a view finds the very children of the
 * family's gets, refuses what they refuse, and a partial removal takes out
 * exactly the matching children, no other, and counts them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <percpu/family.h>
#include <percpu/metrics.h>

#include "helpers.h"
#include "pcpu_test.h"

static const char *const method_code_path[] = { "method", "code", "path", NULL };

static struct pcpu_family *make(const char *name, enum pcpu_metric_kind kind, uint32_t flags)
{
	static const int64_t bounds[] = { 10, 100 };
	struct pcpu_family *f = pcpu_family_create(&(struct pcpu_family_desc){
		.name = name, .help = "h", .kind = kind, .label_names = method_code_path,
		.flags = flags, .bounds = kind == PCPU_METRIC_HISTOGRAM ? bounds : NULL,
		.nr_bounds = kind == PCPU_METRIC_HISTOGRAM ? 2 : 0,
		.const_labels = (const char *const[]){ "svc", "api", NULL } });

	cr_assert_not_null(f, "create %s: %s", name, strerror(errno));
	return f;
}

static struct pcpu_counter *get3(struct pcpu_family *f, const char *m, const char *c,
				 const char *p)
{
	return pcpu_family_get(f, (const char *const[]){ m, c, p, NULL });
}

Test(family_curry, view_finds_the_family_children)
{
	struct pcpu_family *f = make("curry_view", PCPU_METRIC_COUNTER, 0);
	/* fixed out of order: code, then method; path stays free */
	struct pcpu_family_curried *cf = pcpu_family_curry(f, (const char *const[]){
		"code", "200", "method", "GET", NULL });
	struct pcpu_family_curried *by_path = pcpu_family_curry(f, (const char *const[]){
		"path", "/x", NULL });
	struct pcpu_counter *via, *direct;

	cr_assert_not_null(cf, "curry: %s", strerror(errno));
	cr_assert_not_null(by_path);
	via = pcpu_family_curried_get(cf, (const char *const[]){ "/a", NULL });
	cr_assert_not_null(via);
	direct = get3(f, "GET", "200", "/a");
	cr_assert_eq(via, direct, "the view's child is the family's child of the whole tuple");
	cr_assert_neq(pcpu_family_curried_get(cf, (const char *const[]){ "/b", NULL }), via);
	/* two free labels: taken in the family's order (method, code) */
	cr_assert_eq(pcpu_family_curried_get(by_path, (const char *const[]){ "PUT", "500", NULL }),
		     get3(f, "PUT", "500", "/x"));
	cr_assert_neq(pcpu_family_curried_get(by_path, (const char *const[]){ "500", "PUT", NULL }),
		      get3(f, "PUT", "500", "/x"));
	pcpu_counter_add(via, 7);
	cr_assert_eq(pcpu_counter_sum(direct), 7);
	cr_assert_eq(pcpu_family_count(f), 4);
	pcpu_family_curried_free(cf);
	pcpu_family_curried_free(by_path);
	/* the children outlive the views */
	cr_assert_eq(pcpu_counter_sum(get3(f, "GET", "200", "/a")), 7);
	pcpu_family_destroy(f);
}

Test(family_curry, every_label_fixed)
{
	struct pcpu_family *f = make("curry_all", PCPU_METRIC_COUNTER, 0);
	struct pcpu_family_curried *cf = pcpu_family_curry(f, (const char *const[]){
		"path", "/", "method", "GET", "code", "404", NULL });

	cr_assert_not_null(cf);
	cr_assert_eq(pcpu_family_curried_get(cf, (const char *const[]){ NULL }),
		     get3(f, "GET", "404", "/"));
	pcpu_family_curried_free(cf);
	pcpu_family_destroy(f);
}

Test(family_curry, bad_curries_are_refused)
{
	struct pcpu_family *f = make("curry_bad", PCPU_METRIC_COUNTER, 0);
	const char *const *bad[] = {
		(const char *const[]){ "nope", "1", NULL },            /* not a label */
		(const char *const[]){ "svc", "api", NULL },           /* a constant label */
		(const char *const[]){ "code", "1", "code", "2", NULL }, /* repeated */
		(const char *const[]){ "code", NULL },                 /* odd */
		(const char *const[]){ "code", "\xff", NULL },         /* not UTF-8 */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_assert_null(pcpu_family_curry(f, bad[i]), "curry %zu", i);
		cr_assert_eq(errno, EINVAL, "curry %zu", i);
		cr_assert_eq(pcpu_family_remove_matching(f, bad[i]), -EINVAL, "remove %zu", i);
	}
	errno = 0;
	cr_assert_null(pcpu_family_curry(NULL, (const char *const[]){ NULL }));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(pcpu_family_curry(f, NULL));
	cr_assert_eq(pcpu_family_remove_matching(NULL, (const char *const[]){ NULL }), -EINVAL);
	cr_assert_eq(pcpu_family_remove_matching(f, NULL), -EINVAL);
	pcpu_family_destroy(f);
}

Test(family_curry, wrong_count_is_refused_as_the_family_refuses)
{
	struct pcpu_family *f = make("curry_refusals", PCPU_METRIC_COUNTER, 0);
	struct pcpu_family_curried *cf = pcpu_family_curry(f, (const char *const[]){
		"method", "GET", NULL });
	struct pcpu_counter *over;

	cr_assert_not_null(cf);
	errno = 0;
	cr_assert_null(pcpu_family_curried_get(cf, (const char *const[]){ "200", NULL }));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(pcpu_family_curried_get(cf, (const char *const[]){ "200", "/", "x",
									  NULL }));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(pcpu_family_refused(f), 2, "refusals are counted as the family's");
	cr_assert_eq(pcpu_family_count(f), 0);
	/* with an overflow child, a refused get through the view returns it */
	cr_assert_eq(pcpu_family_set_overflow(f, (const char *const[]){ "", "", "", NULL }), 0);
	over = get3(f, "", "", "");
	cr_assert_eq(pcpu_family_curried_get(cf, (const char *const[]){ NULL }), over);
	cr_assert_eq(pcpu_family_refused(f), 3);
	pcpu_family_curried_free(cf);
	pcpu_family_destroy(f);
}

Test(family_curry, histogram_and_gauge_views)
{
	struct pcpu_family *h = make("curry_hist_seconds", PCPU_METRIC_HISTOGRAM, 0);
	struct pcpu_family *g = make("curry_gauge", PCPU_METRIC_GAUGE, PCPU_FAMILY_F_SET_GAUGE);
	const char *const fix[] = { "method", "GET", "code", "200", NULL };
	struct pcpu_family_curried *ch = pcpu_family_curry(h, fix);
	struct pcpu_family_curried *cg = pcpu_family_curry(g, fix);
	const char *const rest[] = { "/", NULL };

	cr_assert_eq(pcpu_family_curried_get_histogram(ch, rest),
		     pcpu_family_get_histogram(h, (const char *const[]){ "GET", "200", "/",
									 NULL }));
	cr_assert_eq(pcpu_family_curried_get_gauge(cg, rest),
		     pcpu_family_get_gauge(g, (const char *const[]){ "GET", "200", "/", NULL }));
	/* the wrong kind of get, as the family's */
	errno = 0;
	cr_assert_null(pcpu_family_curried_get(ch, rest));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(pcpu_family_curried_get_histogram(cg, rest));
	cr_assert_null(pcpu_family_curried_get_gauge(NULL, rest));
	/* partial removal of histogram and gauge children */
	cr_assert_eq(pcpu_family_remove_matching(h, (const char *const[]){ "code", "200", NULL }),
		     1);
	cr_assert_eq(pcpu_family_remove_matching(g, (const char *const[]){ "path", "/", NULL }), 1);
	cr_assert_eq(pcpu_family_count(h), 0);
	cr_assert_eq(pcpu_family_count(g), 0);
	pcpu_family_curried_free(ch);
	pcpu_family_curried_free(cg);
	pcpu_family_reclaim(h);
	pcpu_family_reclaim(g);
	pcpu_family_destroy(h);
	pcpu_family_destroy(g);
}

Test(family_curry, remove_matching_takes_exactly_the_matches)
{
	struct pcpu_family *f = make("curry_rm", PCPU_METRIC_COUNTER, 0);
	struct pcpu_counter *get_ok = get3(f, "GET", "200", "/a");
	struct pcpu_counter *get_err = get3(f, "GET", "500", "/a");
	struct pcpu_counter *post_ok = get3(f, "POST", "200", "/a");
	struct pcpu_counter *post_b = get3(f, "POST", "200", "/b");
	char *text;
	long long v;

	pcpu_counter_add(get_ok, 1);
	pcpu_counter_add(get_err, 2);
	pcpu_counter_add(post_ok, 3);
	pcpu_counter_add(post_b, 4);
	cr_assert_eq(pcpu_family_remove_matching(f, (const char *const[]){ "method", "PUT", NULL }),
		     0, "nothing matches");
	cr_assert_eq(pcpu_family_remove_matching(f, (const char *const[]){ "method", "GET", NULL }),
		     2);
	cr_assert_eq(pcpu_family_count(f), 2);
	/* kept pointers stay valid until reclaim; their adds are lost */
	pcpu_counter_add(get_ok, 10);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(text);
	cr_assert_null(strstr(text, "method=\"GET\""), "removed children are not exposed:\n%s",
		       text);
	cr_assert_eq(metrics_value(text, "curry_rm_total{code=\"200\",method=\"POST\",path=\"/a\","
				   "svc=\"api\"}", &v), 0, "%s", text);
	cr_assert_eq(v, 3);
	free(text);
	/* two labels: only POST/200//b */
	cr_assert_eq(pcpu_family_remove_matching(f, (const char *const[]){ "path", "/b", "method",
									   "POST", NULL }), 1);
	cr_assert_eq(pcpu_counter_sum(get3(f, "POST", "200", "/a")), 3, "the other one untouched");
	/* a removed tuple comes back from 0 */
	cr_assert_eq(pcpu_counter_sum(get3(f, "GET", "200", "/a")), 0);
	cr_assert_eq(pcpu_family_count(f), 2);
	pcpu_family_reclaim(f);
	/* {NULL}: every child but the overflow one */
	cr_assert_eq(pcpu_family_set_overflow(f, (const char *const[]){ "x", "x", "x", NULL }), 0);
	cr_assert_eq(pcpu_family_remove_matching(f, (const char *const[]){ NULL }), 2);
	cr_assert_eq(pcpu_family_count(f), 1, "the overflow child stays");
	cr_assert_eq(pcpu_family_remove_matching(f, (const char *const[]){ "code", "x", NULL }), 0);
	pcpu_family_reclaim(f);
	pcpu_family_destroy(f);
}
