/* SPDX-License-Identifier: MIT */
/*
 * percpu-daemon: the shape of a daemon that adopts percpu's metrics, to
 * copy from. It has no HTTP input of its own: W worker threads simulate
 * N requests in all (each request's method, route, status and latency come
 * from a deterministic generator and a seed), then the daemon stays up,
 * serving its metrics with the library's built-in server
 * (pcpu_metrics_serve_opts(): a path, TLS, basic authentication), until
 * SIGTERM or SIGINT.
 *
 * What it exposes:
 *  - daemon_requests_total{code,method,route,service="percpu-daemon"}: a
 *    counter family with label values known only at run time, and a
 *    constant label on every series (const_labels).
 *  - daemon_request_duration_seconds{route}: a histogram family observed
 *    in nanoseconds and exposed in seconds (scale 1e9), with native
 *    buckets (schema 3: 9 % wide, any quantile) beside the classic ones:
 *    Prometheus gets the native ones where it negotiates the protobuf
 *    format (--enable-feature=native-histograms), the text formats show
 *    the classic ones. One request in EXEMPLAR_EVERY is observed with an
 *    exemplar (its trace_id), which every format shows on a classic bucket.
 *  - daemon_busy_seconds_total{worker}: a scaled counter family, nanoseconds
 *    counted and seconds exposed (as process_cpu_seconds_total is).
 *  - daemon_queue_depth{worker}: set-style gauges (PCPU_FAMILY_F_SET_GAUGE),
 *    set by label.
 *  - daemon_workers_done: a collector's gauge, computed at scrape time,
 *    added with PCPU_METRICS_COLLECTOR_F_CONTINUE (a failing collector
 *    costs the scrape its own samples only).
 *  - daemon_response_size_bytes: a summary (<percpu/summary.h>) of the
 *    responses' sizes, quantiles 0.5, 0.9 and 0.99 within a relative error
 *    alpha (2 % asked; pcpu_summary_alpha() says what it guarantees), over
 *    the default ten-minute window, with _sum and _count.
 *  - the standard process_* metrics (pcpu_metrics_process_collector()).
 *
 * With -g URL it is also a batch job's shape: once the workers are done it
 * pushes every metric above to the Pushgateway at URL (pcpu_metrics_push(),
 * PUT) as the group of job -J and the grouping labels -G NAME=VALUE, and
 * at shutdown deletes that group (DELETE).
 *
 * Output on stdout, one line each, for a script to read:
 *   listening on ADDRESS:PORT           (at start; the port picked for -p 0)
 *   tally SERIES VALUE SCALE            (once the workers are done: the
 *                                        exact value of each series it
 *                                        counted, exposed as VALUE / SCALE;
 *                                        labels in any order, le in seconds)
 *   quantile ROUTE Q NS                 (the exact Q-quantile of a route's
 *                                        latencies: the observation at rank
 *                                        ceil(Q x count), in ns)
 *   exemplar TRACE_ID NS                (each observation recorded with
 *                                        an exemplar, trace_id=TRACE_ID)
 *   size-quantile Q BYTES               (the exact Q-quantile of the
 *                                        response sizes, rank as above)
 *   size-alpha ALPHA                    (the summary's guaranteed alpha)
 *   pushed                              (with -g: the group was pushed)
 *   tallies done                        (after the last tally and quantile)
 *   deleted                             (with -g: at shutdown, the group
 *                                        was deleted)
 *
 * Exit status: 0 after a clean shutdown (SIGINT, SIGTERM), 1 on an error
 * (a file that cannot be read, a server that cannot start, a push or
 * delete that fails), 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/family.h>
#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/metrics_http.h>
#include <percpu/summary.h>

#include "example.h"

#define MAX_WORKERS 256
#define MAX_FILE_BYTES (1 << 20)
#define NS_PER_SEC INT64_C(1000000000)
#define MAX_GROUPING 8

/* ---- what a request can be ---- */

static const char *const methods[] = { "GET", "POST" };
static const char *const routes[] = { "/", "/api/items", "/api/users", "/health" };
static const char *const codes[] = { "200", "404", "500" };
#define NR_METHODS 2
#define NR_ROUTES 4
#define NR_CODES 3
/* one request in so many is observed with an exemplar (its trace) */
#define EXEMPLAR_EVERY 100
/* latency spread per route, ns: /health is fast, /api/users slow (some past 2.5 s) */
static const int64_t route_spread_ns[NR_ROUTES] = {
	5000000, 80000000, 3000000000, 400000,
};

/* histogram bounds, in ns (exposed in seconds): 100 us to 2.5 s */
static const int64_t latency_bounds[] = {
	100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 25000000,
	50000000, 100000000, 250000000, 500000000, 1000000000, 2500000000,
};
#define NR_BOUNDS (sizeof(latency_bounds) / sizeof(latency_bounds[0]))
/*
 * native buckets: 2^(1/8) apart (schema 3), from a zero bucket that no
 * positive duration falls in up to 60 s; with the classic bounds, 283
 * buckets (8 bytes per CPU each)
 */
static const struct pcpu_histogram_native latency_native = {
	.schema = 3,
	.max = 60 * NS_PER_SEC,
};

/*
 * response sizes: 100 B to 500 kB. At alpha 2 % the summary takes schema
 * 5 (1.1 %), whose buckets cover (0, 2^19] within a histogram's limit.
 */
#define MIN_RESPONSE_BYTES 100
#define RESPONSE_SPREAD_BYTES 500000
#define MAX_RESPONSE_BYTES (INT64_C(1) << 19)
static const double size_objectives[] = { 0.5, 0.9, 0.99 }; /* percents[] below */
#define NR_OBJECTIVES (sizeof(size_objectives) / sizeof(size_objectives[0]))

/* ---- the metrics ---- */

static struct pcpu_family *requests;  /* counter family {method, route, code} */
static struct pcpu_family *latency;   /* histogram family {route} */
static struct pcpu_family *busy;      /* scaled counter family {worker} */
static struct pcpu_family *queue;     /* set-gauge family {worker} */
static struct pcpu_summary *sizes;    /* response sizes */
static atomic_uint workers_done;      /* what the collector reports */

/* The summary of response sizes: 0, or -1 (said). */
static int create_sizes(void)
{
	const struct pcpu_summary_desc sd = {
		.name = "daemon_response_size_bytes",
		.help = "Size of the responses sent",
		.unit = "bytes",
		.quantiles = size_objectives,
		.nr_quantiles = NR_OBJECTIVES,
		.alpha = 0.02,
		.max = MAX_RESPONSE_BYTES,
	};

	sizes = pcpu_summary_create(&sd);
	if (!sizes) {
		perror("percpu-daemon: pcpu_summary_create");
		return -1;
	}
	return 0;
}

static int create_metrics(void)
{
	static const char *const request_labels[] = { "method", "route", "code", NULL };
	static const char *const route_label[] = { "route", NULL };
	static const char *const worker_label[] = { "worker", NULL };
	/* a label every series of the family carries, as a module's "service" */
	static const char *const service[] = { "service", "percpu-daemon", NULL };
	const struct pcpu_family_desc rd = {
		.name = "daemon_requests", /* a counter: the exposition adds _total */
		.help = "Requests handled, by method, route and status",
		.kind = PCPU_METRIC_COUNTER,
		.label_names = request_labels,
		.const_labels = service,
	};
	const struct pcpu_family_desc ld = {
		.name = "daemon_request_duration_seconds",
		.help = "Time to handle a request",
		.unit = "seconds",
		.kind = PCPU_METRIC_HISTOGRAM,
		.label_names = route_label,
		.bounds = latency_bounds,
		.nr_bounds = NR_BOUNDS,
		.scale = NS_PER_SEC, /* observed in ns, exposed in s */
		.native = &latency_native,
	};
	const struct pcpu_family_desc bd = {
		.name = "daemon_busy_seconds",
		.help = "Time each worker spent handling requests",
		.unit = "seconds",
		.kind = PCPU_METRIC_COUNTER,
		.label_names = worker_label,
		.scale = NS_PER_SEC, /* counted in ns, exposed in s */
	};
	const struct pcpu_family_desc qd = {
		.name = "daemon_queue_depth",
		.help = "Requests waiting in each worker's queue, as last seen",
		.kind = PCPU_METRIC_GAUGE,
		.label_names = worker_label,
		.flags = PCPU_FAMILY_F_SET_GAUGE, /* set, not added to */
	};

	requests = pcpu_family_create(&rd);
	latency = pcpu_family_create(&ld);
	busy = pcpu_family_create(&bd);
	queue = pcpu_family_create(&qd);
	if (!requests || !latency || !busy || !queue) {
		perror("percpu-daemon: pcpu_family_create");
		return -1;
	}
	return create_sizes();
}

static void destroy_metrics(void)
{
	pcpu_family_destroy(requests);
	pcpu_family_destroy(latency);
	pcpu_family_destroy(busy);
	pcpu_family_destroy(queue);
	pcpu_summary_destroy(sizes);
}

/*
 * A collector: runs at every scrape, outside the library's locks, and
 * emits samples computed then. Added with PCPU_METRICS_COLLECTOR_F_CONTINUE,
 * so that an error here would cost the scrape this gauge only.
 */
static int workers_collector(int (*emit)(const struct pcpu_metric_sample *s, void *ctx),
			     void *ctx, void *arg)
{
	static const char *const no_labels[] = { NULL };
	struct pcpu_metric_sample s = {
		.name = "daemon_workers_done",
		.help = "Worker threads that have made all their requests",
		.unit = "",
		.kind = PCPU_METRIC_GAUGE,
		.labels = no_labels,
	};

	(void)arg;
	s.value = atomic_load(&workers_done);
	return emit(&s, ctx);
}

/* ---- the workers ---- */

/* splitmix64: request i of seed s is the same whatever thread makes it */
static uint64_t mix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* a worker's own exact tallies, the oracle that the script checks against */
struct tally {
	uint64_t requests[NR_METHODS][NR_ROUTES][NR_CODES];
	uint64_t buckets[NR_ROUTES][NR_BOUNDS + 1]; /* non-cumulative, last +Inf */
	int64_t sum_ns[NR_ROUTES];
	int64_t busy_ns;
	int64_t queue_depth;
	int64_t size_bytes; /* the sum of the response sizes */
};

struct worker {
	pthread_t thread;
	unsigned int id;
	char name[16];           /* the worker label's value */
	uint64_t first, stride, n, seed;
	struct tally t;
	int64_t *latency_ns[NR_ROUTES]; /* every observation, for exact quantiles */
	size_t nr_latency[NR_ROUTES];
	int64_t *size;           /* every response size, for exact quantiles */
	size_t nr_size;
	int err;
};

/* The worker's own count of a request, the oracle the metrics are checked against. */
static void tally_request(struct worker *w, unsigned int m, unsigned int r, unsigned int c,
			  int64_t ns, int64_t bytes)
{
	unsigned int b = 0;

	w->t.requests[m][r][c]++;
	while (b < NR_BOUNDS && ns > latency_bounds[b])
		b++;
	w->t.buckets[r][b]++;
	w->t.sum_ns[r] += ns;
	w->t.busy_ns += ns;
	w->latency_ns[r][w->nr_latency[r]++] = ns;
	w->t.size_bytes += bytes;
	w->size[w->nr_size++] = bytes;
}

static int work(struct worker *w)
{
	const char *const wl[] = { w->name, NULL };
	/* a child that never changes: looked up once, then only the inline add */
	struct pcpu_counter *busy_child = pcpu_family_get(busy, wl);
	struct pcpu_gauge *depth = pcpu_family_get_gauge(queue, wl);

	if (!busy_child || !depth)
		return -errno;
	for (uint64_t i = w->first; i < w->n; i += w->stride) {
		uint64_t x = mix(w->seed ^ mix(i));
		unsigned int m = x % NR_METHODS, r = (x >> 8) % NR_ROUTES;
		/* 90 % 200, 7 % 404, 3 % 500 */
		unsigned int c = (x >> 16) % 100 < 90 ? 0 : (x >> 16) % 100 < 97 ? 1 : 2;
		int64_t ns = 1000 + (int64_t)((x >> 24) % (uint64_t)route_spread_ns[r]);
		int64_t bytes = MIN_RESPONSE_BYTES + (int64_t)(mix(x) % RESPONSE_SPREAD_BYTES);

		/*
		 * Label values known at run time: a lock-free lookup, then the
		 * child's inline add. Keep the pointer where the tuple is fixed.
		 */
		const char *const rv[] = { methods[m], routes[r], codes[c], NULL };
		const char *const lv[] = { routes[r], NULL };
		struct pcpu_counter *req = pcpu_family_get(requests, rv);
		struct pcpu_histogram *lat = pcpu_family_get_histogram(latency, lv);

		if (!req || !lat)
			return -errno;
		pcpu_counter_add(req, 1);
		if (i % EXEMPLAR_EVERY == 0) {
			/* a trace to link to: the latest of each bucket is shown */
			char trace[24];
			int err;

			snprintf(trace, sizeof(trace), "%" PRIu64, i);
			err = pcpu_histogram_observe_exemplar(lat, ns, (const char *const[]){
								      "trace_id", trace, NULL });
			if (err < 0)
				return err;
			printf("exemplar %s %" PRId64 "\n", trace, ns);
		} else {
			pcpu_histogram_observe(lat, ns);
		}
		pcpu_counter_add(busy_child, ns);
		pcpu_summary_observe(sizes, bytes);
		w->t.queue_depth = (int64_t)((x >> 40) % 64);
		pcpu_gauge_set(depth, w->t.queue_depth);
		tally_request(w, m, r, c, ns, bytes);
	}
	atomic_fetch_add(&workers_done, 1);
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	w->err = work(w);
	return NULL;
}

/* ---- the tallies on stdout ---- */

static void print_size_tallies(const struct worker *ws, unsigned int nr)
{
	uint64_t count = 0;
	int64_t sum = 0;

	for (unsigned int i = 0; i < nr; i++) {
		count += ws[i].nr_size;
		sum += ws[i].t.size_bytes;
	}
	printf("tally daemon_response_size_bytes_count %" PRIu64 " 1\n", count);
	printf("tally daemon_response_size_bytes_sum %" PRId64 " 1\n", sum);
}

static void print_tallies(const struct worker *ws, unsigned int nr)
{
	struct tally all;

	memset(&all, 0, sizeof(all));
	for (unsigned int i = 0; i < nr; i++) {
		const struct tally *t = &ws[i].t;

		for (unsigned int m = 0; m < NR_METHODS; m++)
			for (unsigned int r = 0; r < NR_ROUTES; r++)
				for (unsigned int c = 0; c < NR_CODES; c++)
					all.requests[m][r][c] += t->requests[m][r][c];
		for (unsigned int r = 0; r < NR_ROUTES; r++) {
			for (unsigned int b = 0; b <= NR_BOUNDS; b++)
				all.buckets[r][b] += t->buckets[r][b];
			all.sum_ns[r] += t->sum_ns[r];
		}
		printf("tally daemon_busy_seconds_total{worker=\"%s\"} %" PRId64 " %" PRId64 "\n",
		       ws[i].name, t->busy_ns, NS_PER_SEC);
		printf("tally daemon_queue_depth{worker=\"%s\"} %" PRId64 " 1\n", ws[i].name,
		       t->queue_depth);
	}
	/* a child is made on first use: series with no request do not exist */
	for (unsigned int m = 0; m < NR_METHODS; m++)
		for (unsigned int r = 0; r < NR_ROUTES; r++)
			for (unsigned int c = 0; c < NR_CODES; c++)
				if (all.requests[m][r][c])
					printf("tally daemon_requests_total{method=\"%s\",route=\"%s\","
					       "code=\"%s\",service=\"percpu-daemon\"} %" PRIu64
					       " 1\n",
					       methods[m], routes[r], codes[c], all.requests[m][r][c]);
	for (unsigned int r = 0; r < NR_ROUTES; r++) {
		uint64_t cumulative = 0, count = 0;

		for (unsigned int b = 0; b <= NR_BOUNDS; b++)
			count += all.buckets[r][b];
		if (!count)
			continue;
		for (unsigned int b = 0; b <= NR_BOUNDS; b++) {
			cumulative += all.buckets[r][b];
			if (b < NR_BOUNDS)
				printf("tally daemon_request_duration_seconds_bucket{route=\"%s\","
				       "le=\"%.17g\"} %" PRIu64 " 1\n",
				       routes[r], (double)latency_bounds[b] / NS_PER_SEC, cumulative);
			else
				printf("tally daemon_request_duration_seconds_bucket{route=\"%s\","
				       "le=\"+Inf\"} %" PRIu64 " 1\n",
				       routes[r], cumulative);
		}
		printf("tally daemon_request_duration_seconds_count{route=\"%s\"} %" PRIu64 " 1\n",
		       routes[r], cumulative);
		printf("tally daemon_request_duration_seconds_sum{route=\"%s\"} %" PRId64
		       " %" PRId64 "\n",
		       routes[r], all.sum_ns[r], NS_PER_SEC);
	}
	printf("tally daemon_workers_done %u 1\n", nr);
	print_size_tallies(ws, nr);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* the quantiles printed: the daemon's objectives, in percent */
static const unsigned int percents[] = { 50, 90, 99 };

/*
 * Sorts @all (@count values) and prints "@prefix 0.PP VALUE" for each
 * percent above: the observation at rank ceil(count x percent / 100).
 */
static void print_exact(const char *prefix, int64_t *all, size_t count)
{
	qsort(all, count, sizeof(*all), cmp_i64);
	for (size_t q = 0; q < sizeof(percents) / sizeof(percents[0]); q++) {
		size_t rank = (count * percents[q] + 99) / 100;

		printf("%s 0.%02u %" PRId64 "\n", prefix, percents[q], all[rank ? rank - 1 : 0]);
	}
}

/*
 * The exact quantiles of each route's latencies, which the native
 * buckets let Prometheus estimate within a bucket's width (9 %), and of
 * the response sizes, which the summary reports within its alpha.
 */
static int print_quantiles(const struct worker *ws, unsigned int nr)
{
	size_t count = 0, at = 0;
	int64_t *all;
	char prefix[64];

	for (unsigned int r = 0; r < NR_ROUTES; r++) {
		count = 0;
		at = 0;
		for (unsigned int i = 0; i < nr; i++)
			count += ws[i].nr_latency[r];
		if (!count)
			continue;
		all = malloc(count * sizeof(*all));
		if (!all)
			return -1;
		for (unsigned int i = 0; i < nr; i++) {
			memcpy(all + at, ws[i].latency_ns[r], ws[i].nr_latency[r] * sizeof(*all));
			at += ws[i].nr_latency[r];
		}
		snprintf(prefix, sizeof(prefix), "quantile %s", routes[r]);
		print_exact(prefix, all, count);
		free(all);
	}
	printf("size-alpha %.17g\n", pcpu_summary_alpha(sizes));
	count = 0;
	at = 0;
	for (unsigned int i = 0; i < nr; i++)
		count += ws[i].nr_size;
	if (count) {
		all = malloc(count * sizeof(*all));
		if (!all)
			return -1;
		for (unsigned int i = 0; i < nr; i++) {
			memcpy(all + at, ws[i].size, ws[i].nr_size * sizeof(*all));
			at += ws[i].nr_size;
		}
		print_exact("size-quantile", all, count);
		free(all);
	}
	fflush(stdout);
	return 0;
}

/* ---- options ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: percpu-daemon [-w WORKERS] [-n REQUESTS] [-s SEED] [-a ADDRESS] [-p PORT]\n"
		"                     [-m PATH] [-c CERT -k KEY] [-u USER -P PASSWORD_FILE]\n"
		"                     [-g URL -J JOB [-G NAME=VALUE]...]\n"
		"  -w  worker threads, 1 to %d (default 4)\n"
		"  -n  requests to simulate in all (default 100000)\n"
		"  -s  the generator's seed (default 1)\n"
		"  -a  numeric IP address to serve metrics on (default 127.0.0.1)\n"
		"  -p  TCP port, 0 for a free one (default 9464)\n"
		"  -m  path of the metrics (default /metrics)\n"
		"  -c, -k  PEM certificate and unencrypted key files: serve HTTPS\n"
		"  -u, -P  basic authentication: user, and a file holding the password\n"
		"          (its first line)\n"
		"  -g, -J  push the metrics to the Pushgateway at URL as job JOB once the\n"
		"          workers are done, and delete the group at shutdown\n"
		"  -G  a grouping label of the pushed group (at most %d)\n",
		MAX_WORKERS, MAX_GROUPING);
}

/* The whole of file @path, NUL terminated, in *@out; false with a message. */
static bool read_file(const char *path, char **out)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len;

	if (!f)
		goto fail;
	buf = malloc(MAX_FILE_BYTES + 1);
	if (!buf)
		goto fail;
	len = fread(buf, 1, MAX_FILE_BYTES + 1, f);
	if (ferror(f))
		goto fail;
	if (len > MAX_FILE_BYTES) {
		errno = EFBIG;
		goto fail;
	}
	buf[len] = '\0';
	fclose(f);
	*out = buf;
	return true;
fail:
	fprintf(stderr, "percpu-daemon: %s: %s\n", path, strerror(errno));
	free(buf);
	if (f)
		fclose(f);
	return false;
}

/*
 * -g: pushes (PUT) or deletes the group of @o; false with a message. The
 * gateway's reason, where it refused, is in the library's message.
 */
static bool push(const struct pcpu_metrics_push_options *o, enum pcpu_metrics_push_method m)
{
	char message[512];
	int err = pcpu_metrics_push(o, m, message, sizeof(message));

	if (err == 0)
		return true;
	fprintf(stderr, "percpu-daemon: %s %s: %s: %s\n",
		m == PCPU_METRICS_PUSH_DELETE ? "delete the group at" : "push to", o->url,
		strerror(-err), message);
	return false;
}

/* -G NAME=VALUE into @grouping (NAME, VALUE, ..., NULL), split in place */
static bool add_grouping(const char **grouping, unsigned int *nr, char *arg)
{
	char *eq = strchr(arg, '=');

	if (!eq || eq == arg || *nr >= MAX_GROUPING)
		return false;
	*eq = '\0';
	grouping[2 * *nr] = arg;
	grouping[2 * *nr + 1] = eq + 1;
	(*nr)++;
	return true;
}

struct daemon_args {
	uint64_t nr_workers, n, seed, port;
	const char *cert_file, *key_file, *pass_file;
	char *cert, *key, *pass; /* what those files hold (read_secrets()) */
	struct pcpu_metrics_server_options o;
	/* -g, -J, -G: the gateway, the job and the grouping labels */
	struct pcpu_metrics_push_options po;
	const char *grouping[2 * MAX_GROUPING + 1];
	unsigned int nr_grouping;
};

/* -g URL, -J JOB, -G NAME=VALUE into @a: false for a bad one. */
static bool parse_push_option(int opt, struct daemon_args *a)
{
	switch (opt) {
	case 'g':
		a->po.url = optarg;
		return true;
	case 'J':
		a->po.job = optarg;
		return true;
	default:
		return add_grouping(a->grouping, &a->nr_grouping, optarg);
	}
}

/* The command line into @a: -1 to run, else main's status (-h's 0, a usage error's 2). */
static int parse_args(int argc, char **argv, struct daemon_args *a)
{
	int opt;

	while ((opt = getopt(argc, argv, "w:n:s:a:p:m:c:k:u:P:g:J:G:h")) != -1) {
		switch (opt) {
		case 'w':
			if (!example_parse_u64(optarg, 1, MAX_WORKERS, &a->nr_workers))
				goto bad_usage;
			break;
		case 'n':
			if (!example_parse_u64(optarg, 0, UINT64_C(1) << 40, &a->n))
				goto bad_usage;
			break;
		case 's':
			if (!example_parse_u64(optarg, 0, UINT64_MAX, &a->seed))
				goto bad_usage;
			break;
		case 'a':
			a->o.address = optarg;
			break;
		case 'p':
			if (!example_parse_u64(optarg, 0, 65535, &a->port))
				goto bad_usage;
			break;
		case 'm':
			a->o.path = optarg;
			break;
		case 'c':
			a->cert_file = optarg;
			break;
		case 'k':
			a->key_file = optarg;
			break;
		case 'u':
			a->o.basic_auth_user = optarg;
			break;
		case 'P':
			a->pass_file = optarg;
			break;
		case 'g':
		case 'J':
		case 'G':
			if (!parse_push_option(opt, a))
				goto bad_usage;
			break;
		default:
			return example_other_option(opt, usage);
		}
	}
	if (optind != argc || !a->cert_file != !a->key_file || !a->o.basic_auth_user != !a->pass_file ||
	    !a->po.url != !a->po.job || (a->nr_grouping && !a->po.url))
		goto bad_usage;
	a->o.port = (unsigned int)a->port;
	return -1;
bad_usage:
	usage(stderr);
	return 2;
}

/*
 * The certificate, key and password from the files @a names into the
 * server's options (from files, so that they are not in ps's output):
 * false if one cannot be read (said). main() frees them.
 */
static bool read_secrets(struct daemon_args *a)
{
	if (a->cert_file && (!read_file(a->cert_file, &a->cert) || !read_file(a->key_file, &a->key)))
		return false;
	if (a->pass_file) {
		if (!read_file(a->pass_file, &a->pass))
			return false;
		a->pass[strcspn(a->pass, "\r\n")] = '\0';
	}
	a->o.tls_cert_pem = a->cert;
	a->o.tls_key_pem = a->key;
	a->o.basic_auth_password = a->pass;
	return true;
}

/* The workers' collector and the process metrics: false if one cannot be added (said). */
static bool add_collectors(void)
{
	if (pcpu_metrics_collector_add_flags(workers_collector, NULL,
					     PCPU_METRICS_COLLECTOR_F_CONTINUE) != 0 ||
	    pcpu_metrics_collector_add(pcpu_metrics_process_collector, NULL) != 0) {
		fprintf(stderr, "percpu-daemon: cannot add the collectors\n");
		return false;
	}
	return true;
}

/*
 * Runs @a->nr_workers workers in @ws (zeroed) until they are done: true if
 * every one started and ran whole, else false (said). Those started are
 * joined either way.
 */
static bool run_workers(struct worker *ws, const struct daemon_args *a)
{
	unsigned int started = 0;
	bool ok = true;

	for (; started < a->nr_workers; started++) {
		struct worker *w = &ws[started];

		w->id = started;
		snprintf(w->name, sizeof(w->name), "%u", started);
		w->first = started;
		w->stride = a->nr_workers;
		w->n = a->n;
		w->seed = a->seed;
		w->size = malloc((a->n / a->nr_workers + 1) * sizeof(int64_t));
		if (!w->size) {
			fprintf(stderr, "percpu-daemon: out of memory\n");
			ok = false;
		}
		for (unsigned int r = 0; ok && r < NR_ROUTES; r++) {
			w->latency_ns[r] = malloc((a->n / a->nr_workers + 1) * sizeof(int64_t));
			if (!w->latency_ns[r]) {
				fprintf(stderr, "percpu-daemon: out of memory\n");
				ok = false;
			}
		}
		if (ok && pthread_create(&w->thread, NULL, worker_main, w) != 0) {
			fprintf(stderr, "percpu-daemon: pthread_create failed\n");
			ok = false;
		}
		if (!ok)
			break;
	}
	for (unsigned int i = 0; i < started; i++)
		pthread_join(ws[i].thread, NULL);
	for (unsigned int i = 0; ok && i < started; i++)
		if (ws[i].err) {
			fprintf(stderr, "percpu-daemon: worker %u: %s\n", i, strerror(-ws[i].err));
			ok = false;
		}
	return ok;
}

/*
 * Threads inherit the signal mask: the stop signals (@sigs) blocked in all
 * of them (the server's and the workers'), main waits for them.
 */
static void block_stop_signals(sigset_t *sigs)
{
	sigemptyset(sigs);
	sigaddset(sigs, SIGINT);
	sigaddset(sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, sigs, NULL);
}

static void wait_for_stop(const sigset_t *sigs)
{
	int sig;

	do {
		if (sigwait(sigs, &sig) != 0)
			break;
	} while (sig != SIGINT && sig != SIGTERM);
}

/*
 * The tallies are out: pushes the final values to the gateway (-g), stays
 * up until told to stop, so that a scraper reads them, then deletes the
 * pushed group. False if a push failed (said).
 */
static bool push_and_wait(const struct daemon_args *a, const sigset_t *sigs)
{
	/* a batch job's ending: its final values to the gateway */
	if (a->po.url) {
		if (!push(&a->po, PCPU_METRICS_PUSH_PUT))
			return false;
		printf("pushed\n");
	}
	printf("tallies done\n");
	fflush(stdout);
	wait_for_stop(sigs);
	/* the group would outlive the daemon on the gateway: delete it */
	if (a->po.url) {
		if (!push(&a->po, PCPU_METRICS_PUSH_DELETE))
			return false;
		printf("deleted\n");
	}
	return true;
}

int main(int argc, char **argv)
{
	struct daemon_args a = {
		.nr_workers = 4, .n = 100000, .seed = 1, .port = 9464,
		.o = { .size = sizeof(struct pcpu_metrics_server_options),
		       .address = "127.0.0.1" },
	};
	struct pcpu_metrics_server *srv = NULL;
	struct worker *ws = NULL;
	sigset_t sigs;
	int ret;

	a.po = (struct pcpu_metrics_push_options){ .size = sizeof(a.po), .grouping = a.grouping };
	ret = parse_args(argc, argv, &a);
	if (ret >= 0)
		return ret;
	ret = 1;
	if (!read_secrets(&a) || create_metrics() < 0 || !add_collectors())
		goto out;
	block_stop_signals(&sigs);
	srv = pcpu_metrics_serve_opts(&a.o);
	if (!srv) {
		fprintf(stderr, "percpu-daemon: cannot serve metrics: %s\n", strerror(errno));
		/* the library checks path, credentials, certificate and key */
		ret = errno == EINVAL ? 2 : 1;
		goto out;
	}
	printf("listening on %s:%u\n", a.o.address, pcpu_metrics_server_port(srv));
	fflush(stdout);
	ws = calloc(a.nr_workers, sizeof(*ws));
	if (!ws || !run_workers(ws, &a))
		goto out;
	print_tallies(ws, (unsigned int)a.nr_workers);
	if (print_quantiles(ws, (unsigned int)a.nr_workers) != 0)
		goto out;
	if (!push_and_wait(&a, &sigs))
		goto out;
	printf("stopped\n");
	ret = 0;
out:
	pcpu_metrics_server_stop(srv);
	pcpu_metrics_collector_remove(pcpu_metrics_process_collector, NULL);
	pcpu_metrics_collector_remove(workers_collector, NULL);
	destroy_metrics();
	for (unsigned int i = 0; ws && i < a.nr_workers; i++) {
		for (unsigned int r = 0; r < NR_ROUTES; r++)
			free(ws[i].latency_ns[r]);
		free(ws[i].size);
	}
	free(ws);
	free(a.cert);
	free(a.key);
	free(a.pass);
	return ret;
}
