/* SPDX-License-Identifier: MIT */
/*
 * Registries (<percpu/metrics_registry.h>): names apart from the process's
 * and from each other's; constant labels merged into every series, sorted,
 * on counters, gauges, stat items, histograms, a family's children and its
 * refusals; label clashes refused at registration; destroy refused while
 * metrics remain, and a destroyed object gone from every registry; a
 * registry merged into the process's exposition, a clash there refused and
 * counted, its native histogram kept native; a registry's own collectors;
 * registries that merge each other; the bodies parsed by prometheus_client;
 * and scrapes of a registry beside registration.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include <percpu/family.h>
#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/metrics_http.h>
#include <percpu/metrics_registry.h>
#include <percpu/stat.h>

#include "check_body.h"
#include "helpers.h"
#include "pcpu_test.h"

/* The exposition of @r in format @f (malloc'ed); the write must succeed. */
static char *registry_text(struct pcpu_metrics_registry *r, enum pcpu_metrics_format f)
{
	char *text = metrics_registry_text(r, f);

	cr_assert_not_null(text, "pcpu_metrics_registry_write failed");
	return text;
}

/* A registry of @labels; it must be made. */
static struct pcpu_metrics_registry *registry(const char *const *labels)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(labels);

	cr_assert_not_null(r, "pcpu_metrics_registry_create: %s", strerror(errno));
	return r;
}

/* Counter @c made and registered as @name with @labels in @r; 0 or the errno. */
static int counter_in(struct pcpu_counter *c, const char *name, const char *const *labels,
		      struct pcpu_metrics_registry *r)
{
	int err;

	cr_assert_eq(pcpu_counter_init(c, 0), 0);
	err = pcpu_counter_register(c, &(struct pcpu_metric_desc){ .name = name, .help = "Help.",
								  .kind = PCPU_METRIC_COUNTER,
								  .labels = labels, .registry = r });
	if (err)
		pcpu_counter_destroy(c);
	return err;
}

PCPU_TEST(metrics_registry, the_same_name_lives_apart_in_each_registry)
{
	static const char *const la[] = { "tenant", "a", NULL }, *const lb[] = { "tenant", "b", NULL };
	struct pcpu_metrics_registry *a = registry(la), *b = registry(lb);
	struct pcpu_counter in_a, in_b, in_process;
	char *ta, *tb, *tp;

	cr_assert_eq(counter_in(&in_a, "reg_requests", NULL, a), 0);
	cr_assert_eq(counter_in(&in_b, "reg_requests", NULL, b), 0);
	cr_assert_eq(counter_in(&in_process, "reg_requests", NULL, NULL), 0);
	/* names are unique within a registry */
	{
		struct pcpu_counter again;

		cr_assert_eq(counter_in(&again, "reg_requests", NULL, a), -EEXIST);
	}
	pcpu_counter_add(&in_a, 3);
	pcpu_counter_add(&in_b, 5);
	pcpu_counter_add(&in_process, 7);
	ta = registry_text(a, PCPU_METRICS_PROMETHEUS);
	tb = registry_text(b, PCPU_METRICS_OPENMETRICS);
	tp = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert(metrics_has_line(ta, "reg_requests_total{tenant=\"a\"} 3"), "%s", ta);
	cr_assert(metrics_has_line(tb, "reg_requests_total{tenant=\"b\"} 5"), "%s", tb);
	cr_assert(metrics_has_line(tp, "reg_requests_total 7"), "%s", tp);
	cr_assert_null(strstr(ta, "tenant=\"b\""), "%s", ta);
	cr_assert_null(strstr(tp, "tenant="), "%s", tp);
	/* one family: its TYPE once */
	cr_assert_not_null(strstr(ta, "# TYPE reg_requests_total counter\n"), "%s", ta);
	cr_assert_null(strstr(strstr(ta, "# TYPE") + 1, "# TYPE"), "%s", ta);
	/* NULL is the process's registry */
	free(ta);
	ta = registry_text(NULL, PCPU_METRICS_PROMETHEUS);
	cr_assert(metrics_has_line(ta, "reg_requests_total 7"), "%s", ta);
	free(ta);
	free(tb);
	free(tp);
	pcpu_counter_destroy(&in_a);
	pcpu_counter_destroy(&in_b);
	pcpu_counter_destroy(&in_process);
	cr_assert_eq(pcpu_metrics_registry_destroy(a), 0);
	cr_assert_eq(pcpu_metrics_registry_destroy(b), 0);
}

/* Every kind of metric in a registry carries its labels, merged in key order. */
PCPU_TEST(metrics_registry, constant_labels_join_every_series_in_key_order)
{
	static const char *const consts[] = { "zone", "eu", "app", "shop", NULL };
	static const char *const get[] = { "method", "get", NULL };
	static const char *const code_names[] = { "code", NULL };
	static const char *const ok[] = { "200", NULL }, *const missing[] = { "404", NULL };
	static const int64_t bounds[] = { 10 };
	static const struct pcpu_stat_item items[] = { { .name = "hits", .kind = PCPU_METRIC_COUNTER } };
	struct pcpu_metrics_registry *r = registry(consts);
	struct pcpu_counter c;
	struct pcpu_gauge g = PCPU_GAUGE_INIT(0);
	struct pcpu_stat *s;
	struct pcpu_histogram *h;
	struct pcpu_family *f;
	char *text, *om;

	cr_assert_eq(counter_in(&c, "reg_calls", get, r), 0);
	pcpu_counter_add(&c, 2);
	cr_assert_eq(pcpu_gauge_register(&g, &(struct pcpu_metric_desc){
						     .name = "reg_depth", .kind = PCPU_METRIC_GAUGE,
						     .registry = r }),
		     0);
	pcpu_gauge_set(&g, 4);
	s = pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items, .nr_items = 1 });
	cr_assert_not_null(s);
	cr_assert_eq(pcpu_stat_register_in(s, "reg", r), 0);
	pcpu_stat_add(s, 0, 6);
	h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "reg_latency", .bounds = bounds, .nr_bounds = 1, .registry = r });
	cr_assert_not_null(h);
	pcpu_histogram_observe(h, 3);
	/* one child, then a refusal: percpu_family_refused_total with the registry's labels */
	f = pcpu_family_create(&(struct pcpu_family_desc){
		.name = "reg_answers", .kind = PCPU_METRIC_COUNTER, .label_names = code_names,
		.max_children = 1, .registry = r });
	cr_assert_not_null(f);
	pcpu_counter_add(pcpu_family_get(f, ok), 9);
	cr_assert_null(pcpu_family_get(f, missing));

	text = registry_text(r, PCPU_METRICS_PROMETHEUS);
	cr_assert(metrics_has_line(text, "reg_calls_total{app=\"shop\",method=\"get\",zone=\"eu\"} 2"),
		  "%s", text);
	cr_assert(metrics_has_line(text, "reg_depth{app=\"shop\",zone=\"eu\"} 4"), "%s", text);
	cr_assert(metrics_has_line(text, "reg_hits_total{app=\"shop\",zone=\"eu\"} 6"), "%s", text);
	cr_assert(metrics_has_line(text, "reg_latency_bucket{app=\"shop\",zone=\"eu\",le=\"10\"} 1"),
		  "%s", text);
	cr_assert(metrics_has_line(text, "reg_latency_count{app=\"shop\",zone=\"eu\"} 1"), "%s",
		  text);
	cr_assert(metrics_has_line(text, "reg_answers_total{app=\"shop\",code=\"200\",zone=\"eu\"} 9"),
		  "%s", text);
	cr_assert(metrics_has_line(text, "percpu_family_refused_total{app=\"shop\",family=\"reg_answers\","
					 "zone=\"eu\"} 1"),
		  "%s", text);
	/* the process's exposition has none of them */
	om = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_null(strstr(om, "reg_calls"), "%s", om);
	free(om);
	om = registry_text(r, PCPU_METRICS_OPENMETRICS);
	assert_parsers_accept_exemplars(text, om, -1);
	free(text);
	free(om);
	pcpu_family_destroy(f);
	pcpu_histogram_destroy(h);
	pcpu_stat_destroy(s);
	pcpu_gauge_unregister(&g);
	pcpu_counter_destroy(&c);
	cr_assert_eq(pcpu_metrics_registry_destroy(r), 0);
}

PCPU_TEST(metrics_registry, a_registrys_label_is_not_a_metrics_to_set)
{
	static const char *const consts[] = { "zone", "eu", NULL };
	static const char *const zone[] = { "zone", "us", NULL };
	static const char *const zone_name[] = { "zone", NULL };
	static const char *const code_name[] = { "code", NULL };
	static const int64_t bounds[] = { 1 };
	struct pcpu_metrics_registry *r = registry(consts);
	struct pcpu_counter c;
	struct pcpu_gauge g = PCPU_GAUGE_INIT(0);

	cr_assert_eq(counter_in(&c, "reg_clash", zone, r), -EINVAL);
	cr_assert_eq(pcpu_gauge_register(&g, &(struct pcpu_metric_desc){
						     .name = "reg_clash", .kind = PCPU_METRIC_GAUGE,
						     .labels = zone, .registry = r }),
		     -EINVAL);
	errno = 0;
	cr_assert_null(pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "reg_clash", .labels = zone, .bounds = bounds, .nr_bounds = 1,
		.registry = r }));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(pcpu_family_create(&(struct pcpu_family_desc){
		.name = "reg_clash", .kind = PCPU_METRIC_COUNTER, .label_names = zone_name,
		.registry = r }));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(pcpu_family_create(&(struct pcpu_family_desc){
		.name = "reg_clash", .kind = PCPU_METRIC_COUNTER, .label_names = code_name,
		.const_labels = zone, .registry = r }));
	cr_assert_eq(errno, EINVAL);
	/* the same labels are the metric's own in the process's registry */
	cr_assert_eq(counter_in(&c, "reg_clash", zone, NULL), 0);
	pcpu_counter_destroy(&c);
	cr_assert_eq(pcpu_metrics_registry_destroy(r), 0);
}

PCPU_TEST(metrics_registry, create_checks_its_labels)
{
	static const char *const bad[][5] = {
		{ "le", "1", NULL },                /* a histogram's */
		{ "zone", NULL },                   /* odd */
		{ "9zone", "eu", NULL },            /* not a label name */
		{ "__zone", "eu", NULL },           /* reserved */
		{ "zone", "eu", "zone", "us", NULL }, /* repeated */
		{ "zone", "\xff", NULL },           /* not UTF-8 */
	};
	const char *many[2 * (PCPU_METRICS_REGISTRY_MAX_LABELS + 1) + 1];
	char names[PCPU_METRICS_REGISTRY_MAX_LABELS + 1][8];
	struct pcpu_metrics_registry *r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_assert_null(pcpu_metrics_registry_create(bad[i]), "case %zu", i);
		cr_assert_eq(errno, EINVAL, "case %zu", i);
	}
	for (int i = 0; i <= PCPU_METRICS_REGISTRY_MAX_LABELS; i++) {
		snprintf(names[i], sizeof(names[i]), "l%d", i);
		many[2 * i] = names[i];
		many[2 * i + 1] = "v";
	}
	many[2 * (PCPU_METRICS_REGISTRY_MAX_LABELS + 1)] = NULL;
	errno = 0;
	cr_assert_null(pcpu_metrics_registry_create(many));
	cr_assert_eq(errno, EINVAL);
	/* the most it may have, and none */
	many[2 * PCPU_METRICS_REGISTRY_MAX_LABELS] = NULL;
	r = registry(many);
	cr_assert_eq(pcpu_metrics_registry_destroy(r), 0);
	r = registry(NULL);
	cr_assert_eq(pcpu_metrics_registry_destroy(r), 0);
	cr_assert_eq(pcpu_metrics_registry_destroy(NULL), 0);
}

PCPU_TEST(metrics_registry, destroy_waits_for_its_metrics_and_objects_leave_every_registry)
{
	static const struct pcpu_stat_item items[] = { { .name = "hits", .kind = PCPU_METRIC_COUNTER } };
	static const char *const la[] = { "tenant", "a", NULL };
	struct pcpu_metrics_registry *a = registry(la), *b = registry(NULL);
	struct pcpu_counter c;
	struct pcpu_stat *s = pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items,
									 .nr_items = 1 });
	char *text;

	cr_assert_not_null(s);
	cr_assert_eq(counter_in(&c, "reg_kept", NULL, a), 0);
	/* one set in two registries and the process's */
	cr_assert_eq(pcpu_stat_register_in(s, "reg_a", a), 0);
	cr_assert_eq(pcpu_stat_register_in(s, "reg_b", b), 0);
	cr_assert_eq(pcpu_stat_register(s, "reg_p"), 0);
	cr_assert_eq(pcpu_metrics_registry_destroy(a), -EBUSY);
	cr_assert_eq(pcpu_metrics_registry_destroy(b), -EBUSY);
	/* refused: still served */
	text = registry_text(a, PCPU_METRICS_PROMETHEUS);
	cr_assert(metrics_has_line(text, "reg_kept_total{tenant=\"a\"} 0"), "%s", text);
	free(text);
	pcpu_stat_destroy(s);
	cr_assert_eq(pcpu_metrics_registry_destroy(b), 0);
	text = registry_text(a, PCPU_METRICS_PROMETHEUS);
	cr_assert_null(strstr(text, "reg_a_hits"), "%s", text);
	free(text);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_null(strstr(text, "reg_p_hits"), "%s", text);
	free(text);
	cr_assert_eq(pcpu_metrics_registry_destroy(a), -EBUSY);
	pcpu_counter_destroy(&c);
	cr_assert_eq(pcpu_metrics_registry_destroy(a), 0);
}

struct found {
	const char *name;
	uint32_t flags;
	int seen;
};

static int find(const struct pcpu_metric_sample *s, void *arg)
{
	struct found *f = arg;

	if (strcmp(s->name, f->name) == 0) {
		f->flags = s->flags;
		f->seen++;
	}
	return 0;
}

/*
 * Merged with pcpu_metrics_registry_collector(): its series join the
 * process's, with its labels; a family the process has is refused and
 * counted, the rest goes; a native histogram stays native.
 */
PCPU_TEST(metrics_registry, a_merged_registry_joins_the_processs_exposition)
{
	static const char *const consts[] = { "module", "cache", NULL };
	static const struct pcpu_histogram_native native = { .schema = 0, .max = 1024 };
	struct pcpu_metrics_registry *r = registry(consts);
	struct pcpu_counter hits, clash, own;
	struct pcpu_histogram *h;
	struct found nat = { .name = "reg_merged_seconds" };
	uint64_t refused;
	char *text, *om;

	cr_assert_eq(counter_in(&hits, "reg_merged_hits", NULL, r), 0);
	cr_assert_eq(counter_in(&clash, "reg_merged_clash", NULL, r), 0);
	cr_assert_eq(counter_in(&own, "reg_merged_clash", NULL, NULL), 0);
	h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "reg_merged_seconds", .native = &native, .registry = r });
	cr_assert_not_null(h);
	pcpu_histogram_observe(h, 100);
	pcpu_counter_add(&hits, 11);
	pcpu_counter_add(&clash, 1);
	pcpu_counter_add(&own, 2);
	cr_assert_eq(pcpu_metrics_collector_add(pcpu_metrics_registry_collector, r), 0);
	refused = pcpu_metrics_collector_refused();
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(text);
	cr_assert(metrics_has_line(text, "reg_merged_hits_total{module=\"cache\"} 11"), "%s", text);
	/* the process's own family wins; the registry's is refused and counted */
	cr_assert(metrics_has_line(text, "reg_merged_clash_total 2"), "%s", text);
	cr_assert_null(strstr(text, "reg_merged_clash_total{"), "%s", text);
	cr_assert_eq(pcpu_metrics_collector_refused() - refused, 1);
	cr_assert(metrics_has_line(text, "reg_merged_seconds_count{module=\"cache\"} 1"), "%s", text);
	cr_assert_eq(pcpu_metrics_foreach(find, &nat), 0);
	cr_assert_eq(nat.seen, 1);
	cr_assert(nat.flags & PCPU_METRIC_SAMPLE_F_NATIVE);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(om);
	assert_parsers_accept_exemplars(text, om, -1);
	free(text);
	free(om);
	/* a registry cannot merge the process's into itself, nor nothing */
	cr_assert_eq(pcpu_metrics_registry_collector(NULL, NULL, r), -EINVAL);
	cr_assert_eq(pcpu_metrics_registry_collector(find, &nat, NULL), -EINVAL);
	cr_assert_eq(pcpu_metrics_collector_remove(pcpu_metrics_registry_collector, r), 0);
	pcpu_histogram_destroy(h);
	pcpu_counter_destroy(&hits);
	pcpu_counter_destroy(&clash);
	pcpu_counter_destroy(&own);
	cr_assert_eq(pcpu_metrics_registry_destroy(r), 0);
}

PCPU_TEST(metrics_registry, respond_answers_with_the_registrys_metrics)
{
	static const char *const consts[] = { "tenant", "r", NULL };
	struct pcpu_metrics_registry *r = registry(consts);
	struct pcpu_metrics_response res;
	struct pcpu_counter c;

	cr_assert_eq(counter_in(&c, "reg_responded", NULL, r), 0);
	pcpu_counter_add(&c, 5);
	cr_assert_eq(pcpu_metrics_registry_respond(r, "application/openmetrics-text", NULL, &res), 0);
	cr_assert_str_eq(res.content_type, pcpu_metrics_content_type(PCPU_METRICS_OPENMETRICS));
	cr_assert_not_null(memmem(res.body, res.length, "reg_responded_total{tenant=\"r\"} 5\n",
				  strlen("reg_responded_total{tenant=\"r\"} 5\n")));
	pcpu_metrics_response_free(&res);
	pcpu_counter_destroy(&c);
	cr_assert_eq(pcpu_metrics_registry_destroy(r), 0);
}

static int depth_collector(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx,
			   void *arg)
{
	static const char *const labels[] = { "queue", "in", NULL };
	/* out of key order, and naming the registry's label: its own value wins */
	static const char *const unsorted[] = { "zz", "z", "tenant", "own", NULL };
	int err = emit(&(struct pcpu_metric_sample){ .name = "reg_queue_depth", .help = "",
						     .unit = "", .kind = PCPU_METRIC_GAUGE,
						     .labels = labels,
						     .value = (int64_t)(intptr_t)arg, .scale = 1 },
		       ctx);

	return err ? err : emit(&(struct pcpu_metric_sample){ .name = "reg_unsorted", .help = "",
							      .unit = "", .kind = PCPU_METRIC_GAUGE,
							      .labels = unsorted, .value = 1,
							      .scale = 1 },
				ctx);
}

/* A registry's collectors write into its exposition, with its labels, and only there. */
PCPU_TEST(metrics_registry, a_registrys_collectors_join_its_exposition_only)
{
	static const char *const consts[] = { "tenant", "c", NULL };
	struct pcpu_metrics_registry *r = registry(consts);
	char *text;

	cr_assert_eq(pcpu_metrics_registry_collector_add(r, depth_collector, (void *)7, 0), 0);
	cr_assert_eq(pcpu_metrics_registry_collector_add(r, depth_collector, (void *)7, 0), -EEXIST);
	text = registry_text(r, PCPU_METRICS_PROMETHEUS);
	cr_assert(metrics_has_line(text, "reg_queue_depth{queue=\"in\",tenant=\"c\"} 7"), "%s",
		  text);
	cr_assert(metrics_has_line(text, "reg_unsorted{zz=\"z\",tenant=\"own\"} 1"), "%s", text);
	free(text);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_null(strstr(text, "reg_queue_depth"), "%s", text);
	free(text);
	/* merged, its collectors come along */
	cr_assert_eq(pcpu_metrics_collector_add(pcpu_metrics_registry_collector, r), 0);
	text = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert(metrics_has_line(text, "reg_queue_depth{queue=\"in\",tenant=\"c\"} 7"), "%s",
		  text);
	free(text);
	cr_assert_eq(pcpu_metrics_collector_remove(pcpu_metrics_registry_collector, r), 0);
	/* a registry with a collector is busy; it is not the process's to remove */
	cr_assert_eq(pcpu_metrics_registry_destroy(r), -EBUSY);
	cr_assert_eq(pcpu_metrics_registry_collector_remove(NULL, depth_collector, (void *)7),
		     -ENOENT);
	cr_assert_eq(pcpu_metrics_registry_collector_remove(r, depth_collector, (void *)7), 0);
	cr_assert_eq(pcpu_metrics_registry_destroy(r), 0);
}

/* Two registries that merge each other: the exposition ends with ELOOP, not a stack overflow. */
PCPU_TEST(metrics_registry, registries_that_merge_each_other_end_with_eloop)
{
	struct pcpu_metrics_registry *a = registry(NULL), *b = registry(NULL);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	cr_assert_not_null(out);
	cr_assert_eq(pcpu_metrics_registry_collector_add(a, pcpu_metrics_registry_collector, b, 0), 0);
	cr_assert_eq(pcpu_metrics_registry_collector_add(b, pcpu_metrics_registry_collector, a, 0), 0);
	cr_assert_eq(pcpu_metrics_registry_write(a, out, PCPU_METRICS_PROMETHEUS), -ELOOP);
	fclose(out);
	free(text);
	cr_assert_eq(pcpu_metrics_registry_collector_remove(a, pcpu_metrics_registry_collector, b), 0);
	cr_assert_eq(pcpu_metrics_registry_collector_remove(b, pcpu_metrics_registry_collector, a), 0);
	cr_assert_eq(pcpu_metrics_registry_destroy(a), 0);
	cr_assert_eq(pcpu_metrics_registry_destroy(b), 0);
}

/* Scrapes of a registry, merged and alone, beside registration and destruction in it. */
#define CHURN 2000

static struct pcpu_metrics_registry *churned;

static void *churn(void *arg)
{
	char name[32];

	snprintf(name, sizeof(name), "reg_churn_%d", (int)(intptr_t)arg);
	for (int i = 0; i < CHURN; i++) {
		struct pcpu_counter c;

		if (counter_in(&c, name, NULL, churned) != 0)
			return (void *)1;
		pcpu_counter_add(&c, 1);
		pcpu_counter_destroy(&c);
	}
	return NULL;
}

PCPU_TEST(metrics_registry, scrapes_run_beside_registration_in_the_registry)
{
	static const char *const consts[] = { "tenant", "churn", NULL };
	struct pcpu_counter steady;
	pthread_t t[2];
	int scrapes = 0;

	churned = registry(consts);
	cr_assert_eq(counter_in(&steady, "reg_steady", NULL, churned), 0);
	pcpu_counter_add(&steady, 1);
	cr_assert_eq(pcpu_metrics_collector_add(pcpu_metrics_registry_collector, churned), 0);
	for (int k = 0; k < 2; k++)
		cr_assert_eq(pthread_create(&t[k], NULL, churn, (void *)(intptr_t)k), 0);
	for (; scrapes < 200; scrapes++) {
		char *a = registry_text(churned, PCPU_METRICS_OPENMETRICS);
		char *p = metrics_text(PCPU_METRICS_PROMETHEUS);

		cr_assert_not_null(p);
		cr_assert(metrics_has_line(a, "reg_steady_total{tenant=\"churn\"} 1"), "%s", a);
		cr_assert(metrics_has_line(p, "reg_steady_total{tenant=\"churn\"} 1"), "%s", p);
		free(a);
		free(p);
	}
	for (int k = 0; k < 2; k++) {
		void *ret;

		pthread_join(t[k], &ret);
		cr_assert_null(ret, "a registration failed");
	}
	cr_assert_eq(pcpu_metrics_collector_remove(pcpu_metrics_registry_collector, churned), 0);
	pcpu_counter_destroy(&steady);
	cr_assert_eq(pcpu_metrics_registry_destroy(churned), 0);
}
