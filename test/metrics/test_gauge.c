/* SPDX-License-Identifier: MIT */
/*
 * Set-style gauges (<percpu/gauge.h>): no add lost between threads (int64
 * and double), no torn value under concurrent sets and scrapes, the
 * exposition of both kinds (doubles, NaN, infinities) in both formats,
 * and registration errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>

#include <percpu/family.h>
#include <percpu/gauge.h>
#include <percpu/metrics.h>

#include "helpers.h"
#include "pcpu_test.h"

#define THREADS 8

struct adder {
	struct pcpu_gauge *g;
	struct pcpu_gauge_double *d;
	pthread_barrier_t *start;
	long n;
	int id;
};

static void *add_int(void *p)
{
	struct adder *a = p;

	pthread_barrier_wait(a->start);
	/* odd threads go down by 1, even ones up by 3 */
	for (long i = 0; i < a->n; i++)
		pcpu_gauge_add(a->g, a->id & 1 ? -1 : 3);
	return NULL;
}

static void *add_double(void *p)
{
	struct adder *a = p;

	pthread_barrier_wait(a->start);
	for (long i = 0; i < a->n; i++)
		pcpu_gauge_double_add(a->d, 0.5);
	return NULL;
}

PCPU_TEST(gauge, concurrent_adds_lose_nothing_in_int64_and_double_gauges)
{
	struct pcpu_gauge g = PCPU_GAUGE_INIT(-7);
	struct pcpu_gauge_double d = PCPU_GAUGE_DOUBLE_INIT(1.0);
	long n = pcpu_test_iterations(200000);
	pthread_barrier_t start;
	pthread_t t[THREADS];
	struct adder a[THREADS];

	for (int kind = 0; kind < 2; kind++) {
		pthread_barrier_init(&start, NULL, THREADS);
		for (int i = 0; i < THREADS; i++) {
			a[i] = (struct adder){ &g, &d, &start, n, i };
			pthread_create(&t[i], NULL, kind ? add_double : add_int, &a[i]);
		}
		for (int i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&start);
	}
	/* four threads at +3, four at -1 */
	cr_assert_eq(pcpu_gauge_get(&g), -7 + n * (THREADS / 2) * 2);
	/* halves add exactly in a double up to 2^52 */
	cr_assert_eq(pcpu_gauge_double_get(&d), 1.0 + 0.5 * (double)(n * THREADS), "%.17g",
		     pcpu_gauge_double_get(&d));
	pcpu_gauge_set(&g, INT64_MIN);
	cr_assert_eq(pcpu_gauge_add(&g, -1), INT64_MAX, "an int64 add wraps around");
	pcpu_gauge_double_set(&d, -2.5);
	cr_assert_eq(pcpu_gauge_double_add(&d, 1.25), -1.25);
}

/* Two values that differ in both 32-bit halves: a torn read is neither. */
#define V1 INT64_C(0x00000001ffffffff)
#define V2 INT64_C(0x7fffffff00000000)
#define D1 0.1
#define D2 -12345678.875

struct setter {
	struct pcpu_gauge *g;
	struct pcpu_gauge_double *d;
	volatile int *stop;
	long sets;
};

static void *set_loop(void *p)
{
	struct setter *s = p;

	while (!__atomic_load_n(s->stop, __ATOMIC_RELAXED)) {
		pcpu_gauge_set(s->g, s->sets & 1 ? V1 : V2);
		pcpu_gauge_double_set(s->d, s->sets & 1 ? D1 : D2);
		__atomic_store_n(&s->sets, s->sets + 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

PCPU_TEST(gauge, scrapes_during_sets_see_only_values_that_were_set)
{
	static struct pcpu_gauge g = PCPU_GAUGE_INIT(V1);
	static struct pcpu_gauge_double d = PCPU_GAUGE_DOUBLE_INIT(D1);
	volatile int stop = 0;
	struct setter s = { &g, &d, &stop, 0 };
	long scrapes = pcpu_test_iterations(3000);
	pthread_t t;

	cr_assert_eq(pcpu_gauge_register(&g, &(struct pcpu_metric_desc){
		.name = "torn_int", .kind = PCPU_METRIC_GAUGE }), 0);
	cr_assert_eq(pcpu_gauge_double_register(&d, &(struct pcpu_metric_desc){
		.name = "torn_double", .kind = PCPU_METRIC_GAUGE }), 0);
	pthread_create(&t, NULL, set_loop, &s);
	while (__atomic_load_n(&s.sets, __ATOMIC_RELAXED) == 0)
		sched_yield();
	/* scrape on until the setter has changed the values many times meanwhile */
	for (long i = 0; i < scrapes || __atomic_load_n(&s.sets, __ATOMIC_RELAXED) < 1000; i++) {
		char *text = metrics_text(i & 1 ? PCPU_METRICS_OPENMETRICS : PCPU_METRICS_PROMETHEUS);
		const char *line;
		long long iv;
		double dv;

		cr_assert_not_null(text);
		cr_assert_eq(metrics_value(text, "torn_int", &iv), 0, "%s", text);
		cr_assert(iv == V1 || iv == V2, "scrape %ld read %#llx", i, iv);
		line = strstr(text, "\ntorn_double ");
		cr_assert_not_null(line, "%s", text);
		dv = strtod(line + strlen("\ntorn_double "), NULL);
		/* (double) casts: i386's x87 compares the constants at a wider precision */
		cr_assert(dv == (double)D1 || dv == (double)D2, "scrape %ld read %.17g", i, dv);
		free(text);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	pcpu_gauge_unregister(&g);
	pcpu_gauge_double_unregister(&d);
}

PCPU_TEST(gauge, values_are_written_as_gauges_in_both_formats)
{
	static const char *const labels[] = { "pool", "a\"b", NULL };
	struct pcpu_gauge g = PCPU_GAUGE_INIT(-42);
	struct pcpu_gauge_double d[6] = { PCPU_GAUGE_DOUBLE_INIT(0.1) };
	static const char *const names[] = { "d_tenth", "d_big", "d_nan", "d_inf", "d_ninf",
					     "d_int" };
	static const char *const want[] = { "d_tenth 0.1", "d_big 1e+300", "d_nan NaN",
					    "d_inf +Inf", "d_ninf -Inf", "d_int -3" };
	char *prom, *om;

	pcpu_gauge_double_set(&d[1], 1e300);
	pcpu_gauge_double_set(&d[2], NAN);
	pcpu_gauge_double_set(&d[3], INFINITY);
	pcpu_gauge_double_set(&d[4], -INFINITY);
	pcpu_gauge_double_set(&d[5], -3.0);
	cr_assert_eq(pcpu_gauge_register(&g, &(struct pcpu_metric_desc){
		.name = "workers", .help = "Idle workers.", .kind = PCPU_METRIC_GAUGE,
		.labels = labels }), 0);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(pcpu_gauge_double_register(&d[i], &(struct pcpu_metric_desc){
			.name = names[i], .kind = PCPU_METRIC_GAUGE }), 0, "%s", names[i]);
	prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert(prom && om);
	for (int f = 0; f < 2; f++) {
		const char *t = f ? om : prom;

		cr_expect(metrics_has_line(t, "# TYPE workers gauge"), "%s", t);
		cr_expect(metrics_has_line(t, "workers{pool=\"a\\\"b\"} -42"), "%s", t);
		for (int i = 0; i < 6; i++)
			cr_expect(metrics_has_line(t, want[i]), "%s missing:\n%s", want[i], t);
	}
	free(prom);
	free(om);
	/* foreach sees the double and its nearest int64 */
	pcpu_gauge_unregister(&g);
	for (int i = 0; i < 6; i++)
		pcpu_gauge_double_unregister(&d[i]);
	prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_expect_null(strstr(prom, "workers"), "%s", prom);
	cr_expect_null(strstr(prom, "d_"), "%s", prom);
	free(prom);
}

static int find_double(const struct pcpu_metric_sample *smp, void *arg)
{
	struct pcpu_metric_sample *out = arg;

	if (strcmp(smp->name, "sampled") == 0)
		*out = *smp;
	return 0;
}

PCPU_TEST(gauge, foreach_hands_a_double_gauge_with_its_flag_and_nearest_integer)
{
	struct pcpu_gauge_double d = PCPU_GAUGE_DOUBLE_INIT(-2.75);
	struct pcpu_metric_sample smp = { 0 };
	static const double in[] = { -2.75, 2.5, 1e30, -1e30, NAN };
	static const int64_t near[] = { -3, 3, INT64_MAX, INT64_MIN, 0 };

	cr_assert_eq(pcpu_gauge_double_register(&d, &(struct pcpu_metric_desc){
		.name = "sampled", .kind = PCPU_METRIC_GAUGE }), 0);
	for (int i = 0; i < 5; i++) {
		pcpu_gauge_double_set(&d, in[i]);
		memset(&smp, 0, sizeof(smp));
		cr_assert_eq(pcpu_metrics_foreach(find_double, &smp), 0);
		cr_expect_eq(smp.flags & PCPU_METRIC_SAMPLE_F_DOUBLE, PCPU_METRIC_SAMPLE_F_DOUBLE);
		cr_expect(smp.dvalue == in[i] || (isnan(in[i]) && isnan(smp.dvalue)), "%g", in[i]);
		cr_expect_eq(smp.value, near[i], "%g: %lld", in[i], (long long)smp.value);
	}
	pcpu_gauge_double_unregister(&d);
}

PCPU_TEST(gauge, registration_errors_are_reported_and_undone)
{
	struct pcpu_gauge g = { 0 }, other = { 0 };
	struct pcpu_gauge_double d = { 0 };
	struct pcpu_metric_desc desc = { .name = "reg_gauge", .kind = PCPU_METRIC_GAUGE };
	struct pcpu_counter c;

	cr_expect_eq(pcpu_gauge_register(NULL, &desc), -EINVAL);
	cr_expect_eq(pcpu_gauge_register(&g, NULL), -EINVAL);
	cr_expect_eq(pcpu_gauge_register(&g, &(struct pcpu_metric_desc){
		.name = "reg_gauge", .kind = PCPU_METRIC_COUNTER }), -EINVAL);
	cr_expect_eq(pcpu_gauge_register(&g, &(struct pcpu_metric_desc){
		.name = "reg gauge", .kind = PCPU_METRIC_GAUGE }), -EINVAL);
	cr_expect_eq(g.flags, 0u, "a failed registration leaves the gauge unregistered");
	cr_expect_eq(pcpu_gauge_register(&g, &desc), 0);
	cr_expect_eq(pcpu_gauge_register(&g, &desc), -EEXIST);
	cr_expect_eq(pcpu_gauge_register(&other, &desc), -EEXIST);
	cr_expect_eq(pcpu_gauge_double_register(&d, &desc), -EEXIST);
	/* a counter "reg_gauge" would write reg_gauge_total: no clash; "reg" would */
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_expect_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
		.name = "reg_gauge", .kind = PCPU_METRIC_GAUGE }), -EEXIST);
	pcpu_counter_destroy(&c);
	pcpu_gauge_unregister(&g);
	pcpu_gauge_unregister(&g);
	pcpu_gauge_unregister(NULL);
	pcpu_gauge_double_unregister(NULL);
	cr_expect_eq(pcpu_gauge_register(&other, &desc), 0, "unregister gave the name back");
	cr_expect_eq(pcpu_gauge_double_register(NULL, &desc), -EINVAL);
	pcpu_gauge_unregister(&other);
}

/*
 * An info metric: name_info with its labels and the value 1, whatever the
 * gauge that stands for it holds; typed info in OpenMetrics, gauge in text.
 */
PCPU_TEST(gauge, an_info_metric_is_its_labels_with_the_value_one_in_both_formats)
{
	struct pcpu_gauge build = PCPU_GAUGE_INIT(0);
	char *prom, *om;

	cr_assert_eq(pcpu_gauge_register(&build, &(struct pcpu_metric_desc){
		.name = "app_build", .help = "Build data.", .kind = PCPU_METRIC_INFO,
		.labels = (const char *const[]){ "version", "1.2.0", "commit", "ab\"c", NULL } }),
		0);
	pcpu_gauge_set(&build, 7);
	prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert(prom && om);
	cr_expect(metrics_has_line(prom, "# HELP app_build_info Build data."), "%s", prom);
	cr_expect(metrics_has_line(prom, "# TYPE app_build_info gauge"), "%s", prom);
	cr_expect(metrics_has_line(prom, "app_build_info{commit=\"ab\\\"c\",version=\"1.2.0\"} 1"),
		  "%s", prom);
	cr_expect(metrics_has_line(om, "# HELP app_build Build data."), "%s", om);
	cr_expect(metrics_has_line(om, "# TYPE app_build info"), "%s", om);
	cr_expect(metrics_has_line(om, "app_build_info{commit=\"ab\\\"c\",version=\"1.2.0\"} 1"),
		  "%s", om);
	free(prom);
	free(om);
	pcpu_gauge_unregister(&build);
}

PCPU_TEST(gauge, info_metrics_refuse_units_reserved_names_doubles_families_and_clashes)
{
	struct pcpu_gauge info = { 0 }, g = { 0 };
	struct pcpu_gauge_double d = { 0 };
	struct pcpu_metric_desc desc = { .name = "clash", .kind = PCPU_METRIC_INFO };

	cr_expect_eq(pcpu_gauge_register(&info, &(struct pcpu_metric_desc){
		.name = "x_bytes", .unit = "bytes", .kind = PCPU_METRIC_INFO }), -EINVAL);
	cr_expect_eq(pcpu_gauge_register(&info, &(struct pcpu_metric_desc){
		.name = "x_info", .kind = PCPU_METRIC_INFO }), -EINVAL, "the exposition adds _info");
	cr_expect_eq(pcpu_gauge_double_register(&d, &desc), -EINVAL);
	errno = 0;
	cr_expect_null(pcpu_family_create(&(struct pcpu_family_desc){
		.name = "fam", .kind = PCPU_METRIC_INFO,
		.label_names = (const char *const[]){ "a", NULL } }));
	cr_expect_eq(errno, EINVAL);
	cr_expect_eq(info.flags, 0u);
	cr_assert_eq(pcpu_gauge_register(&info, &desc), 0);
	/* a gauge "clash_info" would write the info's sample */
	cr_expect_eq(pcpu_gauge_register(&g, &(struct pcpu_metric_desc){
		.name = "clash_info", .kind = PCPU_METRIC_GAUGE }), -EEXIST);
	pcpu_gauge_unregister(&info);
	cr_expect_eq(pcpu_gauge_register(&g, &(struct pcpu_metric_desc){
		.name = "clash_info", .kind = PCPU_METRIC_GAUGE }), 0);
	pcpu_gauge_unregister(&g);
}

PCPU_TEST(gauge, a_scaled_int64_gauge_is_exposed_divided_in_both_formats)
{
	struct pcpu_gauge g = PCPU_GAUGE_INIT(1500);
	char *prom, *om;

	cr_assert_eq(pcpu_gauge_register(&g, &(struct pcpu_metric_desc){
		.name = "sg_temperature_celsius", .unit = "celsius", .kind = PCPU_METRIC_GAUGE,
		.scale = 1000 }), 0);
	prom = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(prom);
	cr_expect(metrics_has_line(prom, "sg_temperature_celsius 1.5"), "%s", prom);
	free(prom);
	pcpu_gauge_set(&g, -4000);
	om = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(om);
	cr_expect(metrics_has_line(om, "sg_temperature_celsius -4"), "%s", om);
	free(om);
	pcpu_gauge_unregister(&g);
}

PCPU_TEST(gauge, a_negative_scale_or_a_scale_on_a_double_or_info_is_einval_and_undone)
{
	struct pcpu_gauge g = { 0 }, info = { 0 };
	struct pcpu_gauge_double d = { 0 };

	cr_expect_eq(pcpu_gauge_register(&g, &(struct pcpu_metric_desc){
		.name = "neg", .kind = PCPU_METRIC_GAUGE, .scale = -1000 }), -EINVAL);
	cr_expect_eq(pcpu_gauge_double_register(&d, &(struct pcpu_metric_desc){
		.name = "dbl", .kind = PCPU_METRIC_GAUGE, .scale = 1000 }), -EINVAL);
	cr_expect_eq(pcpu_gauge_register(&info, &(struct pcpu_metric_desc){
		.name = "inf", .kind = PCPU_METRIC_INFO, .scale = 1000 }), -EINVAL);
	cr_expect_eq(g.flags | d.flags | info.flags, 0u, "no flag left claimed");
	/* 0 and 1 are none, for a double and an info too */
	cr_expect_eq(pcpu_gauge_double_register(&d, &(struct pcpu_metric_desc){
		.name = "dbl", .kind = PCPU_METRIC_GAUGE, .scale = 1 }), 0);
	cr_expect_eq(pcpu_gauge_register(&info, &(struct pcpu_metric_desc){
		.name = "inf", .kind = PCPU_METRIC_INFO, .scale = 1 }), 0);
	pcpu_gauge_double_unregister(&d);
	pcpu_gauge_unregister(&info);
}
