/* SPDX-License-Identifier: MIT */
/*
 * Counters and gauges of doubles (<percpu/counter_double.h>): concurrent
 * adders against a shadow tally (whole units: exact; any amounts: within
 * the documented bound), the rounding of a non-whole amount, refusals
 * (NaN, infinities, too large, negative on a counter) counted and adding
 * nothing, the exposition of the exact sum, and init and register errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include <percpu/counter_double.h>
#include <percpu/metrics.h>
#include <percpu/metrics_registry.h>

#include "helpers.h"
#include "pcpu_test.h"

#define THREADS 4
#define ADDS 200000

struct adder {
	struct pcpu_counter_double *c;
	pthread_barrier_t *start;
	unsigned int seed;
	bool any_amount;       /* any double, else whole milli-units */
	long double true_sum;  /* the shadow tally of what was added */
	int64_t milli;         /* whole amounts: the tally in thousandths */
	double max_abs;        /* the largest |amount| added */
};

/* Adds ADDS amounts in [-0.5, 1) (a gauge) or [0, 1) (a counter). */
static void *add_amounts(void *p)
{
	struct adder *a = p;
	bool gauge = a->c->kind == PCPU_METRIC_GAUGE;

	pthread_barrier_wait(a->start);
	for (long i = 0; i < ADDS; i++) {
		int32_t r = (int32_t)(rand_r(&a->seed) % 1000) - (gauge ? 500 : 0);
		double amount;

		if (a->any_amount) {
			/* not a whole number of units: each add rounds */
			amount = (double)r / 1000.0 + (double)rand_r(&a->seed) / RAND_MAX * 1e-3 / 3;
		} else {
			amount = (double)r / 1000.0; /* 0.001 is 10^6 units at 10^9: whole */
			a->milli += r;
		}
		if (pcpu_counter_double_add(a->c, amount) != 0)
			return (void *)1;
		a->true_sum += amount;
		if (fabs(amount) > a->max_abs)
			a->max_abs = fabs(amount);
	}
	return NULL;
}

/* Runs THREADS adders on @c; the shadow tallies summed into @total. */
static void run_adders(struct pcpu_counter_double *c, bool any_amount, struct adder *total)
{
	pthread_t t[THREADS];
	struct adder a[THREADS];
	pthread_barrier_t start;

	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++) {
		a[i] = (struct adder){ .c = c, .start = &start, .seed = 7u + (unsigned int)i,
				       .any_amount = any_amount };
		cr_assert_eq(pthread_create(&t[i], NULL, add_amounts, &a[i]), 0);
	}
	*total = (struct adder){ 0 };
	for (int i = 0; i < THREADS; i++) {
		void *ret;

		pthread_join(t[i], &ret);
		cr_assert_null(ret, "an add was refused");
		total->true_sum += a[i].true_sum;
		total->milli += a[i].milli;
		total->max_abs = fmax(total->max_abs, a[i].max_abs);
	}
	pthread_barrier_destroy(&start);
}

/* The exposed value of @series in @r's OpenMetrics text, parsed as a double. */
/*
 * @got == @want as doubles: both pass through a double parameter, so that
 * x87's excess precision (i386: constants and quotients kept in 80 bits) is
 * gone before they are compared.
 */
static void expect_double(double got, double want)
{
	cr_expect_eq(got, want, "got %.17g, want %.17g", got, want);
}

static double exposed(struct pcpu_metrics_registry *r, const char *series)
{
	char *text = metrics_registry_text(r, PCPU_METRICS_OPENMETRICS);
	size_t n = strlen(series);
	double v = NAN;

	cr_assert_not_null(text);
	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, series, n) == 0 && line[n] == ' ')
			v = strtod(line + n + 1, NULL);
	free(text);
	cr_assert(!isnan(v), "no %s in the exposition", series);
	return v;
}

Test(counter_double, whole_amounts_exact_under_concurrent_adders)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_counter_double c;
	struct adder total;

	cr_assert_not_null(r);
	cr_assert_eq(pcpu_counter_double_init(&c, PCPU_METRIC_COUNTER, 0), 0);
	cr_assert_eq(pcpu_counter_double_register(&c, &(struct pcpu_metric_desc){
		.name = "work_seconds", .unit = "seconds", .kind = PCPU_METRIC_COUNTER,
		.registry = r }), 0);
	run_adders(&c, false, &total);
	/* every amount a whole number of nano-units: the sum is the tally's, exactly */
	expect_double(pcpu_counter_double_sum(&c),
		     (double)(total.milli * 1000000) / (double)PCPU_COUNTER_DOUBLE_SCALE);
	expect_double(exposed(r, "work_seconds_total"),
		     (double)(total.milli * 1000000) / (double)PCPU_COUNTER_DOUBLE_SCALE);
	cr_expect_eq(pcpu_counter_double_refused(&c), 0);
	pcpu_counter_double_destroy(&c);
	pcpu_metrics_registry_destroy(r);
}

Test(counter_double, any_amounts_within_bound_under_concurrent_adders)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	const int64_t scales[] = { 1000, 1000000, 0 };

	cr_assert_not_null(r);
	for (unsigned int s = 0; s < sizeof(scales) / sizeof(scales[0]); s++) {
		struct pcpu_counter_double c;
		struct adder total;
		double bound, got;
		char name[32];

		snprintf(name, sizeof(name), "level%u", s);
		cr_assert_eq(pcpu_counter_double_init(&c, PCPU_METRIC_GAUGE, scales[s]), 0);
		cr_assert_eq(pcpu_counter_double_register(&c, &(struct pcpu_metric_desc){
			.name = name, .kind = PCPU_METRIC_GAUGE, .registry = r }), 0);
		run_adders(&c, true, &total);
		/* the header's bound: N (1/(2 scale) + max |amount| 2^-53), then one rounding */
		bound = (double)THREADS * ADDS * (0.5 / c.scale + total.max_abs * DBL_EPSILON / 2) +
			fabsl(total.true_sum) * DBL_EPSILON;
		got = exposed(r, name);
		cr_expect_leq(fabsl((long double)got - total.true_sum), bound,
			      "scale %lld: %.17g vs %.17Lg, bound %g", (long long)c.iscale, got,
			      total.true_sum, bound);
		cr_expect_eq(got, pcpu_counter_double_sum(&c));
		pcpu_counter_double_destroy(&c);
	}
	pcpu_metrics_registry_destroy(r);
}

Test(counter_double, rounds_to_nearest_unit)
{
	struct pcpu_counter_double c;

	cr_assert_eq(pcpu_counter_double_init(&c, PCPU_METRIC_GAUGE, 1000), 0);
	/* 1/3 is 333.33 units: 333 each time, the error adds up as documented */
	for (int i = 0; i < 3000; i++)
		cr_assert_eq(pcpu_counter_double_add(&c, 1.0 / 3), 0);
	expect_double(pcpu_counter_double_sum(&c), 999.0);
	/* ties away from zero: 0.0005 is 0.5 units */
	cr_assert_eq(pcpu_counter_double_add(&c, 0.0005), 0);
	expect_double(pcpu_counter_double_sum(&c), 999.001);
	cr_assert_eq(pcpu_counter_double_add(&c, -0.0005), 0);
	expect_double(pcpu_counter_double_sum(&c), 999.0);
	/* below half a unit: nothing */
	cr_assert_eq(pcpu_counter_double_add(&c, 0.0004), 0);
	expect_double(pcpu_counter_double_sum(&c), 999.0);
	pcpu_counter_double_destroy(&c);
}

Test(counter_double, refusals_add_nothing_and_are_counted)
{
	struct pcpu_counter_double c, g;
	const double bad[] = { NAN, INFINITY, -INFINITY, 1e300, 5e9 };

	cr_assert_eq(pcpu_counter_double_init(&c, PCPU_METRIC_COUNTER, 0), 0);
	cr_assert_eq(pcpu_counter_double_init(&g, PCPU_METRIC_GAUGE, 0), 0);
	cr_assert_eq(pcpu_counter_double_add(&c, 0.25), 0);
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(pcpu_counter_double_add(&c, bad[i]), -EINVAL, "%g", bad[i]);
		cr_expect_eq(pcpu_counter_double_add(&g, bad[i]), -EINVAL, "%g", bad[i]);
	}
	/* a counter never goes down; a gauge does */
	cr_expect_eq(pcpu_counter_double_add(&c, -0.25), -EINVAL);
	cr_expect_eq(pcpu_counter_double_add(NULL, 1), -EINVAL);
	cr_expect_eq(pcpu_counter_double_add(&g, -0.25), 0);
	/* 4e9 at 10^9 fits under 2^62 units */
	cr_expect_eq(pcpu_counter_double_add(&g, 4e9), 0);
	expect_double(pcpu_counter_double_sum(&c), 0.25);
	expect_double(pcpu_counter_double_sum(&g), 4e9 - 0.25);
	cr_expect_eq(pcpu_counter_double_refused(&c), 6);
	cr_expect_eq(pcpu_counter_double_refused(&g), 5);
	pcpu_counter_double_destroy(&c);
	pcpu_counter_double_destroy(&g);
}

Test(counter_double, exposition)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL);
	struct pcpu_counter_double c, g;
	char *text;

	cr_assert_not_null(r);
	cr_assert_eq(pcpu_counter_double_init(&c, PCPU_METRIC_COUNTER, 0), 0);
	cr_assert_eq(pcpu_counter_double_init(&g, PCPU_METRIC_GAUGE, 100), 0);
	cr_assert_eq(pcpu_counter_double_register(&c, &(struct pcpu_metric_desc){
		.name = "paid_euros", .unit = "euros", .kind = PCPU_METRIC_COUNTER,
		.registry = r }), 0);
	cr_assert_eq(pcpu_counter_double_register(&g, &(struct pcpu_metric_desc){
		.name = "balance", .kind = PCPU_METRIC_GAUGE, .scale = 100, .registry = r }), 0);
	pcpu_counter_double_add(&c, 0.1);
	pcpu_counter_double_add(&c, 0.25);
	pcpu_counter_double_add(&g, 2.5);
	pcpu_counter_double_add(&g, -3.75);
	text = metrics_registry_text(r, PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(text);
	cr_expect(metrics_has_line(text, "# TYPE paid_euros_total counter"), "%s", text);
	cr_expect(metrics_has_line(text, "paid_euros_total 0.35"), "%s", text);
	cr_expect(metrics_has_line(text, "# TYPE balance gauge"), "%s", text);
	cr_expect(metrics_has_line(text, "balance -1.25"), "%s", text);
	free(text);
	pcpu_counter_double_destroy(&c);
	pcpu_counter_double_destroy(&g);
	text = metrics_registry_text(r, PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(text);
	cr_expect_null(strstr(text, "paid_euros"), "destroy unregisters: %s", text);
	free(text);
	pcpu_metrics_registry_destroy(r);
}

Test(counter_double, init_and_register_errors)
{
	struct pcpu_counter_double c;

	cr_expect_eq(pcpu_counter_double_init(NULL, PCPU_METRIC_COUNTER, 0), -EINVAL);
	cr_expect_eq(pcpu_counter_double_init(&c, PCPU_METRIC_HISTOGRAM, 0), -EINVAL);
	cr_expect_eq(pcpu_counter_double_init(&c, PCPU_METRIC_COUNTER, -1), -EINVAL);
	cr_expect_eq(pcpu_counter_double_init(&c, PCPU_METRIC_COUNTER, (INT64_C(1) << 53) + 1),
		     -EINVAL);
	cr_assert_eq(pcpu_counter_double_init(&c, PCPU_METRIC_COUNTER, 1000), 0);
	cr_expect_eq(pcpu_counter_double_register(&c, NULL), -EINVAL);
	cr_expect_eq(pcpu_counter_double_register(&c, &(struct pcpu_metric_desc){
		.name = "cd_kind", .kind = PCPU_METRIC_GAUGE }), -EINVAL);
	cr_expect_eq(pcpu_counter_double_register(&c, &(struct pcpu_metric_desc){
		.name = "cd_scale", .kind = PCPU_METRIC_COUNTER, .scale = 10 }), -EINVAL);
	cr_expect_eq(pcpu_counter_double_register(&c, &(struct pcpu_metric_desc){
		.name = "cd_ok", .kind = PCPU_METRIC_COUNTER, .scale = 1000 }), 0);
	cr_expect_eq(pcpu_counter_double_register(&c, &(struct pcpu_metric_desc){
		.name = "cd_again", .kind = PCPU_METRIC_COUNTER }), -EEXIST);
	pcpu_counter_double_destroy(&c);
	pcpu_counter_double_destroy(NULL);
}
