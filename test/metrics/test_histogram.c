/* SPDX-License-Identifier: MIT */
/*
 * Histograms (<percpu/histogram.h>): creation checks, exact buckets and
 * sum at quiescence against an oracle, and under concurrent observers
 * every snapshot and every exposition has cumulative buckets that never
 * decrease and a +Inf bucket equal to the count.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>

#include <percpu/histogram.h>

#include "helpers.h"
#include "pcpu_test.h"

static const int64_t bounds[] = { -10, 0, 5, 100, 1000, 1000000 };
#define NB (sizeof(bounds) / sizeof(bounds[0]))

static struct pcpu_histogram *make(const char *name)
{
	struct pcpu_histogram *h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = name, .help = "Test.", .bounds = bounds, .nr_bounds = NB });

	cr_assert_not_null(h, "create: %s", strerror(errno));
	return h;
}

/* The bucket the oracle puts @v in. */
static unsigned int oracle_bucket(int64_t v)
{
	for (unsigned int i = 0; i < NB; i++)
		if (v <= bounds[i])
			return i;
	return NB;
}

PCPU_TEST(histogram, bad_descriptors_are_rejected)
{
	static const int64_t unsorted[] = { 1, 3, 2 };
	static const int64_t equal[] = { 1, 1 };
	static const int64_t one[] = { 1 };
	static const char *const le[] = { "le", "x", NULL };
	static const char *const odd[] = { "k", NULL };
	struct pcpu_histogram_desc d = { .name = "h", .bounds = one, .nr_bounds = 1 };
	struct pcpu_histogram *h;

	errno = 0;
	cr_expect_null(pcpu_histogram_create(NULL));
	cr_expect_eq(errno, EINVAL);
	d.bounds = unsorted;
	d.nr_bounds = 3;
	cr_expect_null(pcpu_histogram_create(&d));
	cr_expect_eq(errno, EINVAL, "bounds not ascending");
	d.bounds = equal;
	d.nr_bounds = 2;
	cr_expect_null(pcpu_histogram_create(&d));
	cr_expect_eq(errno, EINVAL, "bounds not strictly ascending");
	d.bounds = NULL;
	d.nr_bounds = 1;
	cr_expect_null(pcpu_histogram_create(&d));
	cr_expect_eq(errno, EINVAL, "NULL bounds");
	d.bounds = one;
	d.nr_bounds = PCPU_HISTOGRAM_MAX_BOUNDS + 1;
	cr_expect_null(pcpu_histogram_create(&d));
	cr_expect_eq(errno, EINVAL, "too many bounds");
	d.nr_bounds = 1;
	d.scale = -1;
	cr_expect_null(pcpu_histogram_create(&d));
	cr_expect_eq(errno, EINVAL, "negative scale");
	d.scale = 0;
	d.name = "h_sum";
	cr_expect_null(pcpu_histogram_create(&d));
	cr_expect_eq(errno, EINVAL, "reserved suffix");
	d.name = "h-h";
	cr_expect_null(pcpu_histogram_create(&d));
	cr_expect_eq(errno, EINVAL, "bad name");
	d.name = "h";
	d.unit = "seconds";
	cr_expect_null(pcpu_histogram_create(&d));
	cr_expect_eq(errno, EINVAL, "unit not a suffix");
	d.unit = NULL;
	d.labels = le;
	cr_expect_null(pcpu_histogram_create(&d));
	cr_expect_eq(errno, EINVAL, "le is the histogram's own label");
	d.labels = odd;
	cr_expect_null(pcpu_histogram_create(&d));
	cr_expect_eq(errno, EINVAL, "odd labels");
	d.labels = NULL;
	h = pcpu_histogram_create(&d);
	cr_assert_not_null(h);
	cr_expect_null(pcpu_histogram_create(&d));
	cr_expect_eq(errno, EEXIST);
	pcpu_histogram_destroy(h);
	h = pcpu_histogram_create(&d);
	cr_expect_not_null(h, "destroy unregistered it");
	pcpu_histogram_destroy(h);
	cr_expect_eq(pcpu_histogram_snapshot(NULL, (uint64_t[1]){ 0 }, NULL), -EINVAL);
	pcpu_histogram_destroy(NULL);
}

PCPU_TEST(histogram, no_bounds_means_one_inf_bucket)
{
	struct pcpu_histogram *h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "only_inf" });
	uint64_t counts[1];
	int64_t sum;
	char *text;

	cr_assert_not_null(h);
	pcpu_histogram_observe(h, 7);
	pcpu_histogram_observe(h, -2);
	cr_assert_eq(pcpu_histogram_snapshot(h, counts, &sum), 0);
	cr_expect_eq(counts[0], 2);
	cr_expect_eq(sum, 5);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_expect_str_eq(text, "# TYPE only_inf histogram\nonly_inf_bucket{le=\"+Inf\"} 2\n"
			       "only_inf_sum 5\nonly_inf_count 2\n");
	free(text);
	pcpu_histogram_destroy(h);
}

PCPU_TEST(histogram, buckets_and_sum_are_exact_at_quiescence)
{
	struct pcpu_histogram *h = make("oracle");
	uint64_t want[NB + 1] = { 0 }, got[NB + 1];
	int64_t want_sum = 0, got_sum = 0, edges[] = { -11, -10, -9, 0, 1, 5, 6, 100, 101, 1000,
						      1000000, 1000001, INT64_C(1) << 40 };
	uint64_t rng = 42;
	long n = pcpu_test_iterations(200000);

	for (unsigned int i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		pcpu_histogram_observe(h, edges[i]);
		want[oracle_bucket(edges[i])]++;
		want_sum += edges[i];
	}
	for (long i = 0; i < n; i++) {
		int64_t v = (int64_t)(pcpu_test_rand(&rng) % 2000000) - 1000;

		pcpu_histogram_observe(h, v);
		want[oracle_bucket(v)]++;
		want_sum += v;
	}
	cr_assert_eq(pcpu_histogram_snapshot(h, got, &got_sum), 0);
	for (unsigned int i = 0; i <= NB; i++)
		cr_expect_eq(got[i], want[i], "bucket %u: %llu, oracle %llu", i,
			     (unsigned long long)got[i], (unsigned long long)want[i]);
	cr_expect_eq(got_sum, want_sum);
	pcpu_histogram_destroy(h);
}

PCPU_TEST(histogram, a_bound_is_inclusive)
{
	static const int64_t b[] = { 10 };
	struct pcpu_histogram *h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "incl", .bounds = b, .nr_bounds = 1 });
	uint64_t counts[2];

	cr_assert_not_null(h);
	pcpu_histogram_observe(h, 10);
	pcpu_histogram_observe(h, 11);
	cr_assert_eq(pcpu_histogram_snapshot(h, counts, NULL), 0);
	cr_expect_eq(counts[0], 1);
	cr_expect_eq(counts[1], 1);
	pcpu_histogram_destroy(h);
}

PCPU_TEST(histogram, a_negative_bound_drops_sum_and_count_in_openmetrics_only)
{
	struct pcpu_histogram *h = make("neg");
	char *text;

	pcpu_histogram_observe(h, -20);
	text = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_expect(metrics_has_line(text, "neg_bucket{le=\"-10\"} 1"), "%s", text);
	cr_expect_not(strstr(text, "neg_sum"));
	cr_expect_not(strstr(text, "neg_count"));
	free(text);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_expect(metrics_has_line(text, "neg_sum -20"), "%s", text);
	cr_expect(metrics_has_line(text, "neg_count 1"), "%s", text);
	free(text);
	pcpu_histogram_destroy(h);
}

PCPU_TEST(histogram, labels_come_before_le)
{
	static const char *const labels[] = { "route", "/x", NULL };
	static const int64_t b[] = { 1 };
	struct pcpu_histogram *h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "lab", .labels = labels, .bounds = b, .nr_bounds = 1, .scale = 1 });
	char *text;

	cr_assert_not_null(h);
	pcpu_histogram_observe(h, 1);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_expect_str_eq(text, "# TYPE lab histogram\nlab_bucket{route=\"/x\",le=\"1\"} 1\n"
			       "lab_bucket{route=\"/x\",le=\"+Inf\"} 1\nlab_sum{route=\"/x\"} 1\n"
			       "lab_count{route=\"/x\"} 1\n");
	free(text);
	pcpu_histogram_destroy(h);
}

PCPU_TEST(histogram, histograms_with_other_labels_are_one_family)
{
	static const char *const a[] = { "route", "a", NULL };
	static const char *const b[] = { "route", "b", NULL };
	struct pcpu_histogram *hb = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "fam_seconds", .help = "Latency.", .unit = "seconds", .labels = b,
		.scale = 1000 });
	struct pcpu_histogram *ha = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "fam_seconds", .help = "Latency.", .unit = "seconds", .labels = a,
		.scale = 1000 });
	char *text;

	cr_assert_not_null(ha);
	cr_assert_not_null(hb);
	cr_expect_null(pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "fam_seconds", .labels = a }));
	cr_expect_eq(errno, EEXIST, "one family, one unit");
	pcpu_histogram_observe(hb, 1500);
	text = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_expect_str_eq(text, "# HELP fam_seconds Latency.\n# TYPE fam_seconds histogram\n"
			       "# UNIT fam_seconds seconds\n"
			       "fam_seconds_bucket{route=\"a\",le=\"+Inf\"} 0\n"
			       "fam_seconds_sum{route=\"a\"} 0\nfam_seconds_count{route=\"a\"} 0\n"
			       "fam_seconds_bucket{route=\"b\",le=\"+Inf\"} 1\n"
			       "fam_seconds_sum{route=\"b\"} 1.5\nfam_seconds_count{route=\"b\"} 1\n"
			       "# EOF\n");
	free(text);
	pcpu_histogram_destroy(ha);
	pcpu_histogram_destroy(hb);
}

/* Concurrent observers. */
struct observer {
	struct pcpu_histogram *h;
	long n;
	uint64_t seed;
	uint64_t want[NB + 1];
	int64_t want_sum;
};

static int finished;

static void *observe(void *arg)
{
	struct observer *o = arg;

	for (long i = 0; i < o->n; i++) {
		int64_t v = (int64_t)(pcpu_test_rand(&o->seed) % 3000) - 20;

		pcpu_histogram_observe(o->h, v);
		o->want[oracle_bucket(v)]++;
		o->want_sum += v;
	}
	__atomic_fetch_add(&finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

PCPU_TEST(histogram, concurrent_snapshots_are_cumulatively_consistent_and_end_exact)
{
	enum { THREADS = 4 };
	struct observer o[THREADS];
	pthread_t t[THREADS];
	struct pcpu_histogram *h = make("conc");
	uint64_t got[NB + 1], prev[NB + 1] = { 0 }, total = 0;
	int64_t sum;
	int done = 0;

	finished = 0; /* before any observer can finish */
	for (int i = 0; i < THREADS; i++) {
		o[i] = (struct observer){ .h = h, .n = pcpu_test_iterations(500000), .seed = i + 1u };
		cr_assert_eq(pthread_create(&t[i], NULL, observe, &o[i]), 0);
	}
	for (;;) {
		uint64_t count = 0, cumulative = 0;
		char *text;
		long long inf = -1, cnt = -2;

		cr_assert_eq(pcpu_histogram_snapshot(h, got, &sum), 0);
		for (unsigned int i = 0; i <= NB; i++) {
			cr_assert_geq(got[i], prev[i], "bucket %u went down", i);
			count += got[i];
		}
		memcpy(prev, got, sizeof(prev));
		/* through the exposition: +Inf == count, cumulative never decreases */
		text = metrics_text(PCPU_METRICS_PROMETHEUS);
		cr_assert_not_null(text);
		for (const char *line = strstr(text, "conc_bucket"); line && strncmp(line, "conc_bucket", 11) == 0;) {
			long long v = strtoll(strchr(line, ' ') + 1, NULL, 10);

			cr_assert_geq((uint64_t)v, cumulative, "cumulative buckets decreased:\n%s", text);
			cumulative = (uint64_t)v;
			line = strchr(line, '\n') + 1;
		}
		cr_assert_eq(metrics_value(text, "conc_bucket{le=\"+Inf\"}", &inf), 0);
		cr_assert_eq(metrics_value(text, "conc_count", &cnt), 0);
		cr_assert_eq(inf, cnt, "+Inf bucket %lld, count %lld", inf, cnt);
		free(text);
		cr_assert_geq(cumulative, count, "the exposition came after the snapshot");
		if (done)
			break;
		done = __atomic_load_n(&finished, __ATOMIC_ACQUIRE) == THREADS;
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	/* joined above (tryjoin); now the exact check */
	{
		uint64_t want[NB + 1] = { 0 };
		int64_t want_sum = 0;

		for (int i = 0; i < THREADS; i++) {
			for (unsigned int b = 0; b <= NB; b++)
				want[b] += o[i].want[b];
			want_sum += o[i].want_sum;
		}
		cr_assert_eq(pcpu_histogram_snapshot(h, got, &sum), 0);
		for (unsigned int b = 0; b <= NB; b++) {
			cr_expect_eq(got[b], want[b], "bucket %u", b);
			total += got[b];
		}
		cr_expect_eq(sum, want_sum);
		cr_expect_eq(total, (uint64_t)THREADS * (uint64_t)o[0].n);
	}
	pcpu_histogram_destroy(h);
}

/*
 * Nanoseconds fold rarely (issue 24): 8,000 durations of 50 us to 5 ms in
 * ns from one thread stay within every item's per-CPU word, so no add
 * leaves the fast path and no central value moves. 0.3 put whole values in
 * one item whose threshold starts at 32: it folded at once, then every few
 * hundred observations, and two threads fought over the central line.
 */
PCPU_TEST(histogram, nanosecond_observations_do_not_fold)
{
	static const int64_t ns[] = { 100000, 1000000, 10000000, 100000000 };
	struct pcpu_histogram *h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "ns_seconds", .unit = "seconds", .bounds = ns, .nr_bounds = 4,
		.scale = 1000000000 });
	uint64_t rng = 7, counts[5];
	int64_t want = 0, sum;

	cr_assert_not_null(h);
	for (int i = 0; i < 8000; i++) {
		int64_t v = 50000 + (int64_t)(pcpu_test_rand(&rng) % 4950001);

		pcpu_histogram_observe(h, v);
		want += v;
	}
	for (unsigned int i = 0; i < pcpu_stat_count(h->set); i++)
		cr_expect_eq(pcpu_stat_read(h->set, i), 0, "item %s folded: central %lld",
			     pcpu_stat_name(h->set, i), (long long)pcpu_stat_read(h->set, i));
	cr_expect_eq(pcpu_counter_read(h->sum), 0, "the sum folded: central %lld",
		     (long long)pcpu_counter_read(h->sum));
	cr_assert_eq(pcpu_histogram_snapshot(h, counts, &sum), 0);
	cr_expect_eq(sum, want);
	pcpu_histogram_destroy(h);
}

/*
 * One observation is two per-CPU adds (issue 33): the bucket's stat item
 * and the sum's counter, whatever the value's size; 0.4 added a third (the
 * sum's high item) for values of 2^16 and more. Counted by the per-CPU
 * words that move: one stat word and one counter slot.
 */
PCPU_TEST(histogram, an_observation_is_two_per_cpu_adds)
{
	static const int64_t ns[] = { 100000, 1000000 };
	struct pcpu_histogram *h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "two_adds_seconds", .unit = "seconds", .bounds = ns, .nr_bounds = 2,
		.scale = 1000000000 });
	int64_t before[6], after[6];
	int64_t sum;
	uint64_t counts[3];

	cr_assert_not_null(h);
	cr_assert_eq(pcpu_stat_count(h->set), 5);
	pcpu_histogram_observe(h, 1); /* arms this CPU's words */
	for (unsigned int i = 0; i < 5; i++)
		before[i] = pcpu_stat_sum(h->set, i);
	before[5] = pcpu_counter_sum(h->sum);
	pcpu_histogram_observe(h, 5000000); /* 2^22 and more: 0.4's three adds */
	for (unsigned int i = 0; i < 5; i++)
		after[i] = pcpu_stat_sum(h->set, i);
	after[5] = pcpu_counter_sum(h->sum);
	cr_expect_eq(after[2] - before[2], 1, "the +Inf bucket");
	cr_expect_eq(after[3], before[3], "0.4's low sum item untouched");
	cr_expect_eq(after[4], before[4], "0.4's high sum item untouched");
	cr_expect_eq(after[5] - before[5], 5000000, "the sum counter");
	cr_assert_eq(pcpu_histogram_snapshot(h, counts, &sum), 0);
	cr_expect_eq(sum, 5000001);
	pcpu_histogram_destroy(h);
}

/*
 * A program built against 0.4 inlined 0.4's observe, which adds the sum to
 * the stat items nr_bounds + 1 (low 16 bits) and nr_bounds + 2 (the rest):
 * its observations still count in the sum of 0.5's snapshot.
 */
PCPU_TEST(histogram, the_sum_of_04s_inline_observe_still_counts)
{
	struct pcpu_histogram *h = make("inline04");
	int64_t value = (INT64_C(3) << 16) + 7, sum;
	uint64_t counts[NB + 1];

	/* 0.4's pcpu_histogram_observe(), as a program built then has it */
	pcpu_stat_add(h->set, __pcpu_histogram_bucket(h, value), 1);
	pcpu_stat_add(h->set, h->nr_bounds + 1, value & 0xffff);
	pcpu_stat_add(h->set, h->nr_bounds + 2, value >> PCPU_HISTOGRAM_SUM_SHIFT);
	pcpu_histogram_observe(h, 1000);
	cr_assert_eq(pcpu_histogram_snapshot(h, counts, &sum), 0);
	cr_expect_eq(sum, value + 1000, "sum %lld", (long long)sum);
	pcpu_histogram_destroy(h);
}

/* Observations of every magnitude, and the sum modulo 2^64 as int64 adds wrap. */
PCPU_TEST(histogram, sum_of_extreme_observations_is_exact)
{
	static const int64_t v[] = { INT64_MAX, INT64_MIN, -1, INT64_C(1) << 62, -(INT64_C(1) << 40),
				     65535, 65536, -65536, -65537, INT64_C(1) << 45, 1 };
	struct pcpu_histogram *h = make("extreme");
	uint64_t want = 0, counts[NB + 1], count = 0;
	int64_t sum;

	for (int round = 0; round < 1000; round++)
		for (unsigned int i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			pcpu_histogram_observe(h, v[i]);
			want += (uint64_t)v[i];
		}
	cr_assert_eq(pcpu_histogram_snapshot(h, counts, &sum), 0);
	for (unsigned int b = 0; b <= NB; b++)
		count += counts[b];
	cr_expect_eq(count, 1000 * sizeof(v) / sizeof(v[0]));
	cr_expect_eq((uint64_t)sum, want, "sum %lld, oracle %lld", (long long)sum, (long long)want);
	pcpu_histogram_destroy(h);
}

/* Large observations from several threads: _sum and _count exact at quiescence. */
struct big_observer {
	struct pcpu_histogram *h;
	long n;
	uint64_t seed;
	int64_t sum;
};

static void *observe_big(void *arg)
{
	struct big_observer *o = arg;

	for (long i = 0; i < o->n; i++) {
		/* a magnitude of 2^0 to 2^42, a tenth of them negative */
		uint64_t r = pcpu_test_rand(&o->seed);
		int64_t v = (int64_t)(r >> 22) & ((INT64_C(1) << (r % 43)) - 1);

		if (r % 10 == 0)
			v = -v;
		pcpu_histogram_observe(o->h, v);
		o->sum += v;
	}
	return NULL;
}

PCPU_TEST(histogram, sum_is_exact_after_large_observations_from_threads)
{
	enum { THREADS = 4 };
	struct big_observer o[THREADS];
	pthread_t t[THREADS];
	struct pcpu_histogram *h = make("big");
	uint64_t counts[NB + 1], count = 0;
	int64_t want = 0, sum;
	long long text_sum = 0, text_count = 0;
	char *text;

	for (int i = 0; i < THREADS; i++) {
		o[i] = (struct big_observer){ .h = h, .n = pcpu_test_iterations(200000),
					      .seed = 99u + (uint64_t)i };
		cr_assert_eq(pthread_create(&t[i], NULL, observe_big, &o[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		want += o[i].sum;
	}
	cr_assert_eq(pcpu_histogram_snapshot(h, counts, &sum), 0);
	for (unsigned int b = 0; b <= NB; b++)
		count += counts[b];
	cr_expect_eq(sum, want, "sum %lld, oracle %lld", (long long)sum, (long long)want);
	cr_expect_eq(count, (uint64_t)THREADS * (uint64_t)o[0].n);
	text = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_not_null(text);
	cr_assert_eq(metrics_value(text, "big_sum", &text_sum), 0, "%s", text);
	cr_assert_eq(metrics_value(text, "big_count", &text_count), 0, "%s", text);
	cr_expect_eq(text_sum, want, "exposed _sum %lld, oracle %lld", text_sum, (long long)want);
	cr_expect_eq((uint64_t)text_count, count);
	free(text);
	pcpu_histogram_destroy(h);
}

/* A NULL histogram is a reported misuse (abort without NDEBUG), never a crash. */
PCPU_TEST(histogram, observe_on_null_is_reported, .signal = PCPU_TEST_MISUSE_SIGNAL)
{
	pcpu_histogram_observe(NULL, 5);
	/* reached only in release builds, where the misuse is ignored */
	cr_assert(PCPU_TEST_MISUSE_SIGNAL == 0);
}
