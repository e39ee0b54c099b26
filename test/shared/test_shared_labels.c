/* SPDX-License-Identifier: MIT */
/*
 * Labels and histograms in shared segments: what create refuses, items of
 * one name as one family, histograms' buckets, the exact tallies of
 * several processes adding and observing (a shadow per process), and the
 * exposition read back by prometheus_client's two parsers and promtool.
 */
#include "shared_helpers.h"
#include "shared_labelled.h"

#include <sys/wait.h>

TestSuite(shared_labels, .timeout = 240);

/* ---- what create refuses --------------------------------------------------- */

enum { BAD_LABEL_NAME, BAD_LABEL_DUNDER, BAD_LABEL_TWICE, BAD_LABEL_LE, BAD_LABEL_UTF8,
       BAD_LABEL_ODD, BAD_LABEL_MANY, BAD_LABEL_LONG, BAD_SAME_TUPLE, BAD_SAME_NAME_KIND,
       BAD_BOUNDS_DOWN, BAD_BOUNDS_EQUAL, BAD_BOUNDS_NULL, BAD_BOUNDS_ON_COUNTER,
       BAD_TOO_MANY_COUNTERS, BAD_MORE_RESERVED, BAD_HISTOGRAM_NAME, BAD_SCALE_NEGATIVE,
       BAD_SCALE_ON_COUNTER };

struct bad_more {
	const char *what;
	int kind;
};

ParameterizedTestParameters(shared_labels, create_refuses_bad_labels_and_bounds_with_einval)
{
	static struct bad_more cases[] = {
		{ "label name 1x", BAD_LABEL_NAME },
		{ "label name __x", BAD_LABEL_DUNDER },
		{ "a label twice", BAD_LABEL_TWICE },
		{ "le on a histogram", BAD_LABEL_LE },
		{ "a value not UTF-8", BAD_LABEL_UTF8 },
		{ "a name without a value", BAD_LABEL_ODD },
		{ "17 labels", BAD_LABEL_MANY },
		{ "label text over the cap", BAD_LABEL_LONG },
		{ "one name, one tuple twice", BAD_SAME_TUPLE },
		{ "one name, two kinds", BAD_SAME_NAME_KIND },
		{ "bounds going down", BAD_BOUNDS_DOWN },
		{ "two equal bounds", BAD_BOUNDS_EQUAL },
		{ "NULL bounds", BAD_BOUNDS_NULL },
		{ "bounds on a counter", BAD_BOUNDS_ON_COUNTER },
		{ "more counters than a stride holds", BAD_TOO_MANY_COUNTERS },
		{ "more.reserved", BAD_MORE_RESERVED },
		{ "a histogram named x_bucket", BAD_HISTOGRAM_NAME },
		{ "a negative scale", BAD_SCALE_NEGATIVE },
		{ "a scale on a counter", BAD_SCALE_ON_COUNTER },
	};

	return cr_make_param_array(struct bad_more, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct bad_more *bad, shared_labels,
		  create_refuses_bad_labels_and_bounds_with_einval)
{
	static const char *many[2 * (PCPU_SHARED_MAX_LABELS + 1) + 1];
	static char keys[PCPU_SHARED_MAX_LABELS + 1][8], longv[PCPU_SHARED_MAX_LABEL_TEXT];
	static const int64_t down[] = { 5, 3 }, equal[] = { 5, 5 };
	/* out here: a compound literal in a case would end with the switch's block */
	static const char *const l_1x[] = { "1x", "v", NULL }, *const l_dunder[] = { "__x", "v", NULL },
		*const l_twice[] = { "x", "v", "x", "w", NULL }, *const l_le[] = { "le", "1", NULL },
		*const l_utf8[] = { "x", "caf\xe9", NULL }, *const l_odd[] = { "x", NULL },
		*const l_long[] = { "x", longv, NULL }, *const l_xy[] = { "x", "1", "y", "2", NULL },
		*const l_yx[] = { "y", "2", "x", "1", NULL }, *const l_x1[] = { "x", "1", NULL },
		*const l_x2[] = { "x", "2", NULL };
	struct pcpu_stat_item items[2] = { { .name = "a" }, { .name = "b" } };
	struct pcpu_shared_more more[2] = { { 0 } };
	struct pcpu_shared_desc d = { .items = items, .nr_items = 2, .flags = PCPU_SHARED_MORE,
				      .more = more };
	struct pcpu_shared *s;

	for (int k = 0; k <= PCPU_SHARED_MAX_LABELS; k++) {
		snprintf(keys[k], sizeof(keys[k]), "k%d", k);
		many[2 * k] = keys[k];
		many[2 * k + 1] = "v";
	}
	memset(longv, 'v', sizeof(longv) - 1);
	/* each case from a descriptor that create takes: the one change is what it refuses */
	s = pcpu_shared_create(NULL, &d);
	cr_assert_not_null(s);
	pcpu_shared_close(s);
	switch (bad->kind) {
	case BAD_LABEL_NAME: more[1].labels = l_1x; break;
	case BAD_LABEL_DUNDER: more[1].labels = l_dunder; break;
	case BAD_LABEL_TWICE: more[1].labels = l_twice; break;
	case BAD_LABEL_LE:
		items[1].kind = PCPU_METRIC_HISTOGRAM;
		more[1].labels = l_le;
		break;
	case BAD_LABEL_UTF8: more[1].labels = l_utf8; break;
	case BAD_LABEL_ODD: more[1].labels = l_odd; break;
	case BAD_LABEL_MANY: more[1].labels = many; break;
	case BAD_LABEL_LONG: more[1].labels = l_long; break;
	case BAD_SAME_TUPLE:
		items[1].name = "a";
		more[0].labels = l_xy;
		more[1].labels = l_yx;
		break;
	case BAD_SAME_NAME_KIND:
		items[1].name = "a";
		items[1].kind = PCPU_METRIC_GAUGE;
		more[0].labels = l_x1;
		more[1].labels = l_x2;
		break;
	case BAD_BOUNDS_DOWN:
	case BAD_BOUNDS_EQUAL:
		items[1].kind = PCPU_METRIC_HISTOGRAM;
		more[1].bounds = bad->kind == BAD_BOUNDS_DOWN ? down : equal;
		more[1].nr_bounds = 2;
		break;
	case BAD_BOUNDS_NULL:
		items[1].kind = PCPU_METRIC_HISTOGRAM;
		more[1].nr_bounds = 2;
		break;
	case BAD_BOUNDS_ON_COUNTER:
		more[1].bounds = down + 1;
		more[1].nr_bounds = 1;
		break;
	case BAD_TOO_MANY_COUNTERS: {
		static int64_t b[PCPU_SHARED_MAX_ITEMS - 2];

		for (int k = 0; k < PCPU_SHARED_MAX_ITEMS - 2; k++)
			b[k] = k;
		/* 254 bounds: 256 counters alone, one too many beside item a */
		items[1].kind = PCPU_METRIC_HISTOGRAM;
		more[1].bounds = b;
		more[1].nr_bounds = PCPU_SHARED_MAX_ITEMS - 2;
		break;
	}
	case BAD_MORE_RESERVED: more[1].reserved = 1; break;
	case BAD_SCALE_NEGATIVE:
		items[1].kind = PCPU_METRIC_HISTOGRAM;
		more[1].scale = -1000;
		break;
	case BAD_SCALE_ON_COUNTER: more[1].scale = 1000; break;
	case BAD_HISTOGRAM_NAME:
		items[1].name = "b_bucket";
		items[1].kind = PCPU_METRIC_HISTOGRAM;
		break;
	}
	errno = 0;
	cr_assert_null(pcpu_shared_create(NULL, &d), "%s accepted", bad->what);
	cr_assert_eq(errno, EINVAL, "%s: errno %d", bad->what, errno);
}

/* The largest histogram fits alone: 254 bounds, 255 buckets and a sum. */
PCPU_TEST(shared_labels, a_histogram_of_254_bounds_fills_a_segment)
{
	static int64_t b[PCPU_SHARED_MAX_ITEMS - 2];
	struct pcpu_stat_item item = { .name = "big", .kind = PCPU_METRIC_HISTOGRAM };
	struct pcpu_shared_more more = { .bounds = b, .nr_bounds = PCPU_SHARED_MAX_ITEMS - 2 };
	struct pcpu_shared_desc d = { .items = &item, .nr_items = 1, .flags = PCPU_SHARED_MORE,
				      .more = &more };
	static uint64_t buckets[PCPU_SHARED_MAX_ITEMS - 1];
	struct pcpu_shared *s;
	int64_t sum;

	for (int k = 0; k < PCPU_SHARED_MAX_ITEMS - 2; k++)
		b[k] = 2 * k;
	s = pcpu_shared_create(NULL, &d);
	cr_assert_not_null(s, "errno %d", errno);
	for (int64_t v = -1; v <= 2 * (PCPU_SHARED_MAX_ITEMS - 2) - 1; v++)
		pcpu_shared_observe(s, 0, v);
	cr_assert_eq(pcpu_shared_histogram(s, 0, buckets, &sum), 0);
	/* -1, 0 in le=0; 2k-1, 2k in le=2k; 507 in +Inf */
	cr_assert_eq(buckets[0], 2);
	for (int k = 1; k < PCPU_SHARED_MAX_ITEMS - 2; k++)
		cr_assert_eq(buckets[k], 2, "bucket %d: %" PRIu64, k, buckets[k]);
	cr_assert_eq(buckets[PCPU_SHARED_MAX_ITEMS - 2], 1);
	cr_assert_eq(sum, 507 * 508 / 2 - 1);
	pcpu_shared_close(s);
}

/* ---- one name, several tuples ----------------------------------------------- */

PCPU_TEST(shared_labels, labels_are_sorted_copies_and_lookup_finds_each_tuple)
{
	struct pcpu_shared_desc d = shared_lab_desc();
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);
	const char *const *l;
	const int64_t *b;
	int64_t scale = 0;
	uint32_t nb;

	cr_assert_not_null(s, "errno %d", errno);
	cr_assert_eq(pcpu_shared_count(s), LAB_ITEMS);
	l = pcpu_shared_labels(s, LAB_GET_200);
	cr_assert_str_eq(l[0], "code");
	cr_assert_str_eq(l[1], "200");
	cr_assert_str_eq(l[2], "method");
	cr_assert_str_eq(l[3], "get");
	cr_assert_null(l[4]);
	cr_assert_null(pcpu_shared_labels(s, LAB_DEPTH)[0]);
	cr_assert_null(pcpu_shared_labels(s, LAB_ITEMS));
	cr_assert_eq(errno, ERANGE);
	cr_assert_eq(pcpu_shared_lookup(s, "http_requests"), LAB_GET_200);
	cr_assert_eq(pcpu_shared_lookup_labels(s, "http_requests",
					       PCPU_LABELS("method", "get", "code", "500")),
		     LAB_GET_500);
	cr_assert_eq(pcpu_shared_lookup_labels(s, "http_requests",
					       PCPU_LABELS("method", LAB_ODD_METHOD, "code", "200")),
		     LAB_ODD_200);
	cr_assert_eq(pcpu_shared_lookup_labels(s, "http_requests", PCPU_LABELS("code", "200")),
		     -ENOENT);
	cr_assert_eq(pcpu_shared_lookup_labels(s, "queue_depth", NULL), LAB_DEPTH);
	cr_assert_eq(pcpu_shared_kind(s, LAB_LAT_API), PCPU_METRIC_HISTOGRAM);
	b = pcpu_shared_bounds(s, LAB_LAT_API, &nb, &scale);
	cr_assert_not_null(b);
	cr_assert_eq(nb, 3);
	cr_assert(b[0] == 10 && b[1] == 100 && b[2] == 1000);
	cr_assert(b != shared_lab_bounds, "a copy");
	cr_assert_eq(scale, 1);
	cr_assert_null(pcpu_shared_bounds(s, LAB_GET_200, &nb, NULL));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(pcpu_shared_histogram(s, LAB_DEPTH, (uint64_t[4]){ 0 }, NULL), -EINVAL);
	pcpu_shared_close(s);
}

/* ---- several processes, exact tallies ---------------------------------------- */

#define PROCS 4

struct shadow {
	int64_t items[LAB_ITEMS];  /* adds; a histogram's: its sum */
	uint64_t buckets[2][4];    /* LAB_LAT_ROOT, LAB_LAT_API */
};

/* The bucket of @v for bounds 10, 100, 1000: written out, not searched. */
static unsigned int bucket_of(int64_t v)
{
	return v <= 10 ? 0 : v <= 100 ? 1 : v <= 1000 ? 2 : 3;
}

static void work(const char *name, unsigned int id, long n, struct shadow *sh)
{
	static const int64_t values[] = { 0, 1, 10, 11, 99, 100, 101, 1000, 1001, INT64_C(1) << 30 };
	struct pcpu_shared *s = pcpu_shared_open(name, 0);
	uint64_t rng = 1 + id;

	if (!s)
		_exit(10 + errno);
	for (long k = 0; k < n; k++) {
		uint64_t r = pcpu_test_rand(&rng);
		unsigned int item = (unsigned int)(r % LAB_ITEMS);
		/* now and then past every threshold: the locked path */
		int64_t amount = r % 97 == 0 ? INT64_C(1) << 22 : 1;

		if (item == LAB_LAT_ROOT || item == LAB_LAT_API) {
			int64_t v = values[(r >> 8) % (sizeof(values) / sizeof(values[0]))];

			pcpu_shared_observe(s, item, v);
			sh->items[item] += v;
			sh->buckets[item - LAB_LAT_ROOT][bucket_of(v)]++;
		} else {
			if (item == LAB_DEPTH && (r >> 8) % 2)
				amount = -amount;
			pcpu_shared_add(s, item, amount);
			sh->items[item] += amount;
		}
	}
	pcpu_shared_close(s);
	_exit(0);
}

/* Each sample's name, value and labels (values in hex), as check_labelled.py reads them. */
static void put_expected(FILE *f, const char *sample, double value, const char *const *labels,
			 const char *le)
{
	fprintf(f, "%s %.17g", sample, value);
	for (; labels && *labels; labels += 2) {
		fprintf(f, " %s ", labels[0]);
		for (const unsigned char *p = (const unsigned char *)labels[1]; *p; p++)
			fprintf(f, "%02x", *p);
	}
	if (le) {
		fprintf(f, " le ");
		for (const char *p = le; *p; p++)
			fprintf(f, "%02x", (unsigned char)*p);
	}
	fputc('\n', f);
}

static void write_expected(const char *path, struct pcpu_shared *s, const struct shadow *t)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	for (unsigned int i = 0; i < LAB_ITEMS; i++) {
		const char *name = pcpu_shared_name(s, i);
		const char *const *labels = pcpu_shared_labels(s, i);
		char sample[128];

		if (i == LAB_LAT_ROOT || i == LAB_LAT_API) {
			static const char *const le[] = { "10", "100", "1000", "+Inf" };
			uint64_t cum = 0;

			for (unsigned int b = 0; b < 4; b++) {
				cum += t->buckets[i - LAB_LAT_ROOT][b];
				snprintf(sample, sizeof(sample), "%s_bucket", name);
				put_expected(f, sample, (double)cum, labels, le[b]);
			}
			snprintf(sample, sizeof(sample), "%s_sum", name);
			put_expected(f, sample, (double)t->items[i], labels, NULL);
			snprintf(sample, sizeof(sample), "%s_count", name);
			put_expected(f, sample, (double)cum, labels, NULL);
			continue;
		}
		snprintf(sample, sizeof(sample), "%s%s", name,
			 pcpu_shared_kind(s, i) == PCPU_METRIC_COUNTER ? "_total" : "");
		put_expected(f, sample, (double)t->items[i], labels, NULL);
	}
	fclose(f);
}

/* Both formats of @s, parsed by prometheus_client and promtool when installed. */
static void check_parsers(struct pcpu_shared *s, const struct shadow *total)
{
	char dir[] = "/tmp/pcpu-labels-XXXXXX", prom[64], om[64], want[64], cmd[512];
	FILE *f;
	int status;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(prom, sizeof(prom), "%s/prom.txt", dir);
	snprintf(om, sizeof(om), "%s/om.txt", dir);
	snprintf(want, sizeof(want), "%s/want.txt", dir);
	for (int k = 0; k < 2; k++) {
		f = fopen(k ? om : prom, "w");
		cr_assert_not_null(f);
		cr_assert_eq(pcpu_shared_write(s, f, k ? PCPU_METRICS_OPENMETRICS :
						      PCPU_METRICS_PROMETHEUS), 0);
		fclose(f);
	}
	write_expected(want, s, total);
	if (system("/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null") == 0) {
		snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s %s %s", CHECK_LABELLED, prom, om,
			 want);
		status = system(cmd);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "prometheus_client: %s", cmd);
	} else {
		cr_log_info("no prometheus_client: its parsers were not run");
	}
	if (system("command -v promtool >/dev/null 2>&1") == 0) {
		snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", prom);
		status = system(cmd);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "promtool: %s", cmd);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)system(cmd);
}

/*
 * PROCS processes open the segment by name and add to labelled items,
 * observe into both histograms and move the gauge, some amounts past every
 * threshold; each keeps a shadow. Every item's sum, every bucket and the
 * exposition (parsed) equal the shadows' totals.
 */
PCPU_TEST(shared_labels, processes_adding_and_observing_match_their_shadows_exactly)
{
	char name[64];
	struct pcpu_shared_desc d = shared_lab_desc();
	struct pcpu_shared *s = pcpu_shared_create(shared_test_name(name, sizeof(name), "lab"), &d);
	struct shadow *sh = mmap(NULL, PROCS * sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0), total;
	struct pcpu_shared *ro;
	long n = pcpu_test_iterations(40000);

	cr_assert_not_null(s, "errno %d", errno);
	cr_assert_neq(sh, MAP_FAILED);
	memset(&total, 0, sizeof(total));
	fflush(NULL);
	for (unsigned int p = 0; p < PROCS; p++) {
		pid_t pid = fork();

		cr_assert_neq(pid, -1);
		if (pid == 0)
			work(name, p, n, &sh[p]);
	}
	for (unsigned int p = 0; p < PROCS; p++) {
		int status;

		cr_assert_neq(wait(&status), -1);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a worker: status %#x",
			  status);
	}
	for (unsigned int p = 0; p < PROCS; p++) {
		for (unsigned int i = 0; i < LAB_ITEMS; i++)
			total.items[i] += sh[p].items[i];
		for (unsigned int h = 0; h < 2; h++)
			for (unsigned int b = 0; b < 4; b++)
				total.buckets[h][b] += sh[p].buckets[h][b];
	}
	ro = pcpu_shared_open(name, PCPU_SHARED_RDONLY);
	cr_assert_not_null(ro);
	for (unsigned int i = 0; i < LAB_ITEMS; i++) {
		cr_assert_eq(pcpu_shared_sum(ro, i), total.items[i], "item %u: %" PRId64 " != %" PRId64,
			     i, pcpu_shared_sum(ro, i), total.items[i]);
		cr_assert_eq(pcpu_shared_sum(s, i), total.items[i]);
	}
	for (unsigned int h = 0; h < 2; h++) {
		uint64_t buckets[4];
		int64_t sum;

		cr_assert_eq(pcpu_shared_histogram(ro, LAB_LAT_ROOT + h, buckets, &sum), 0);
		for (unsigned int b = 0; b < 4; b++)
			cr_assert_eq(buckets[b], total.buckets[h][b], "histogram %u bucket %u", h, b);
		cr_assert_eq(sum, total.items[LAB_LAT_ROOT + h]);
		cr_assert_gt(total.buckets[h][3], 0, "no observation passed the last bound");
	}
	check_parsers(ro, &total);
	pcpu_shared_close(ro);
	pcpu_shared_close(s);
	pcpu_shared_unlink(name);
	munmap(sh, PROCS * sizeof(*sh));
}

/* ---- the text ------------------------------------------------------------------ */

static char *written(struct pcpu_shared *s, enum pcpu_metrics_format f)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	cr_assert_not_null(out);
	cr_assert_eq(pcpu_shared_write(s, out, f), 0);
	fclose(out);
	return text;
}

static unsigned int occurrences(const char *text, const char *what)
{
	unsigned int n = 0;

	for (const char *p = text; (p = strstr(p, what)) != NULL; p++)
		n++;
	return n;
}

/* One HELP and TYPE per name, a sample per tuple, labels sorted and escaped. */
PCPU_TEST(shared_labels, items_of_one_name_are_one_family_in_both_formats)
{
	struct pcpu_shared_desc d = shared_lab_desc();
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);
	char *prom, *om;

	cr_assert_not_null(s);
	pcpu_shared_add(s, LAB_GET_200, 7);
	pcpu_shared_add(s, LAB_ODD_200, 2);
	pcpu_shared_observe(s, LAB_LAT_API, 100);
	pcpu_shared_observe(s, LAB_LAT_API, 5000);
	prom = written(s, PCPU_METRICS_PROMETHEUS);
	om = written(s, PCPU_METRICS_OPENMETRICS);
	cr_assert_eq(occurrences(prom, "# TYPE http_requests_total counter\n"), 1, "%s", prom);
	cr_assert_eq(occurrences(prom, "# HELP http_requests_total "), 1, "%s", prom);
	cr_assert_eq(occurrences(prom, "# TYPE request_size_bytes histogram\n"), 1, "%s", prom);
	cr_assert_eq(occurrences(om, "# TYPE http_requests counter\n"), 1, "%s", om);
	cr_assert_eq(occurrences(om, "# TYPE request_size_bytes histogram\n"), 1, "%s", om);
	cr_assert_eq(occurrences(prom, "# TYPE"), 3, "%s", prom);
	cr_assert_not_null(strstr(prom, "http_requests_total{code=\"200\",method=\"get\"} 7\n"),
			   "%s", prom);
	cr_assert_not_null(strstr(prom, "http_requests_total{code=\"500\",method=\"get\"} 0\n"));
	cr_assert_not_null(strstr(prom, "method=\"p\\\"o\\\\s\\nt \xc3\xa9\"} 2\n"), "%s", prom);
	cr_assert_not_null(strstr(om, "request_size_bytes_bucket{path=\"/api\",le=\"100\"} 1\n"
				      "request_size_bytes_bucket{path=\"/api\",le=\"1000\"} 1\n"
				      "request_size_bytes_bucket{path=\"/api\",le=\"+Inf\"} 2\n"
				      "request_size_bytes_sum{path=\"/api\"} 5100\n"
				      "request_size_bytes_count{path=\"/api\"} 2\n"),
			   "%s", om);
	cr_assert_not_null(strstr(om, "request_size_bytes_count{path=\"/\"} 0\n"), "%s", om);
	cr_assert_not_null(strstr(om, "\n# EOF\n"));
	free(prom);
	free(om);
	pcpu_shared_close(s);
}

/* A scale exposes microseconds as seconds: bounds and sum divided, counts not. */
PCPU_TEST(shared_labels, a_scaled_histogram_goes_out_in_seconds)
{
	static const int64_t us[] = { 5000, 250000, 1000000 };
	struct pcpu_stat_item item = { .name = "request_duration_seconds", .help = "Time.",
				       .kind = PCPU_METRIC_HISTOGRAM };
	struct pcpu_shared_more more = { .labels = PCPU_LABELS("pool", "a"), .bounds = us,
					 .nr_bounds = 3, .scale = 1000000 };
	struct pcpu_shared_desc d = { .items = &item, .nr_items = 1, .flags = PCPU_SHARED_MORE,
				      .more = &more };
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);
	char *om;

	cr_assert_not_null(s, "errno %d", errno);
	pcpu_shared_observe(s, 0, 5000);
	pcpu_shared_observe(s, 0, 2500000);
	om = written(s, PCPU_METRICS_OPENMETRICS);
	cr_assert_not_null(strstr(om, "request_duration_seconds_bucket{pool=\"a\",le=\"0.005\"} 1\n"
				      "request_duration_seconds_bucket{pool=\"a\",le=\"0.25\"} 1\n"
				      "request_duration_seconds_bucket{pool=\"a\",le=\"1\"} 1\n"
				      "request_duration_seconds_bucket{pool=\"a\",le=\"+Inf\"} 2\n"
				      "request_duration_seconds_sum{pool=\"a\"} 2.505\n"
				      "request_duration_seconds_count{pool=\"a\"} 2\n"),
			   "%s", om);
	cr_assert_eq(pcpu_shared_sum(s, 0), 2505000, "the sum is kept unscaled");
	free(om);
	pcpu_shared_close(s);
}

/* Through the collector, a segment's histograms join the process's exposition. */
PCPU_TEST(shared_labels, the_collector_carries_labels_and_histograms)
{
	struct pcpu_shared_desc d = shared_lab_desc();
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	cr_assert_not_null(s);
	pcpu_shared_observe(s, LAB_LAT_ROOT, 10);
	pcpu_shared_add(s, LAB_GET_500, 3);
	cr_assert_eq(pcpu_metrics_collector_add(pcpu_shared_collector, s), 0);
	out = open_memstream(&text, &len);
	cr_assert_eq(pcpu_metrics_write(out, PCPU_METRICS_OPENMETRICS), 0);
	fclose(out);
	cr_assert_eq(pcpu_metrics_collector_remove(pcpu_shared_collector, s), 0);
	cr_assert_not_null(strstr(text, "request_size_bytes_bucket{path=\"/\",le=\"10\"} 1\n"), "%s", text);
	cr_assert_not_null(strstr(text, "http_requests_total{code=\"500\",method=\"get\"} 3\n"),
			   "%s", text);
	cr_assert_eq(occurrences(text, "# EOF"), 1);
	free(text);
	pcpu_shared_close(s);
}

/* ---- misuse ----------------------------------------------------------------------- */

PCPU_TEST(shared_labels, observe_on_a_counter_is_misuse, .signal = PCPU_TEST_MISUSE_SIGNAL)
{
	struct pcpu_shared_desc d = shared_lab_desc();
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);

	pcpu_shared_observe(s, LAB_GET_200, 1);
	cr_assert_eq(pcpu_shared_sum(s, LAB_GET_200), 0); /* release builds: nothing happened */
	pcpu_shared_close(s);
}

PCPU_TEST(shared_labels, observe_on_a_read_only_handle_is_misuse,
	  .signal = PCPU_TEST_MISUSE_SIGNAL)
{
	char name[64];
	struct pcpu_shared_desc d = shared_lab_desc();
	struct pcpu_shared *s = pcpu_shared_create(shared_test_name(name, sizeof(name), "labro"),
						   &d);
	struct pcpu_shared *ro = pcpu_shared_open(name, PCPU_SHARED_RDONLY);

	cr_assert_not_null(ro);
	pcpu_shared_unlink(name);
	pcpu_shared_observe(ro, LAB_LAT_ROOT, 1);
	cr_assert_eq(pcpu_shared_sum(s, LAB_LAT_ROOT), 0);
	pcpu_shared_close(ro);
	pcpu_shared_close(s);
}
