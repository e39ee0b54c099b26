/* SPDX-License-Identifier: MIT */
/*
 * The /metrics server (pcpu_metrics_serve(), <percpu/metrics_http.h>),
 * through real HTTP over a socket: a free port picked for port 0, exact
 * counts against a shadow tally, the format by Accept, gzip, HEAD, 404 and
 * 405, a failing exposition, stop and restart on the same port, bad
 * arguments and a port in use; with options (pcpu_metrics_serve_opts()),
 * another path, basic authentication, and TLS spoken by a GnuTLS client
 * against a certificate made here (where GnuTLS is installed). Built
 * without libmicrohttpd, the server is refused with ENOTSUP, and bad
 * arguments and options are EINVAL all the same.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/metrics.h>
#include <percpu/metrics_http.h>
#include <percpu/metrics_registry.h>

#include "helpers.h"
#include "pcpu_test.h"

#ifdef PCPU_TEST_HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef PCPU_TEST_HAVE_MICROHTTPD
#include <dirent.h>
#include <microhttpd.h>
#endif
#ifdef PCPU_TEST_HAVE_GNUTLS
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#endif

#ifdef PCPU_TEST_HAVE_MICROHTTPD

/* Prometheus 2.42's Accept, and 3.x's (protobuf first, which we do not write) */
static const char prom2_accept[] =
	"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
	"q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
/* Prometheus 3.x's default (config.DefaultScrapeProtocols) */
static const char prom3_accept[] =
	"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
	"application/openmetrics-text;version=0.0.1;q=0.5,"
	"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,"
	"*/*;q=0.2";
/* Prometheus 3.x with native histograms: protobuf first */
static const char prom3_native_accept[] =
	"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
	"encoding=delimited;q=0.5,application/openmetrics-text;version=1.0.0;"
	"escaping=allow-utf-8;q=0.4,application/openmetrics-text;version=0.0.1;q=0.3,"
	"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.2,text/plain;version=0.0.4;q=0.1,"
	"*/*;q=0.05";

/* A response as read off the socket: status, headers, body. */
struct reply {
	char *raw; /* the whole response, NUL-terminated */
	size_t len;
	int status;
	const char *body;
	size_t body_len;
};

static void reply_free(struct reply *r)
{
	free(r->raw);
	memset(r, 0, sizeof(*r));
}

/* A connected socket to @addr (IPv4 or IPv6), or -errno. */
static int dial(const char *addr, unsigned int port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int fd, err;

	if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		len = sizeof(*in4);
	} else {
		cr_assert_eq(inet_pton(AF_INET6, addr, &in6->sin6_addr), 1, "%s", addr);
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		len = sizeof(*in6);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&ss, len) != 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Room for @more bytes past r->len, and the NUL after them. */
static void reply_reserve(struct reply *r, size_t *cap, size_t more)
{
	if (!r->raw || r->len + more + 1 > *cap) {
		while (r->len + more + 1 > *cap)
			*cap = *cap ? *cap * 2 : 4096;
		r->raw = realloc(r->raw, *cap);
		cr_assert_not_null(r->raw);
	}
}

/* The status, headers and body of the response in r->raw. */
static void reply_parse(struct reply *r)
{
	char *end;

	cr_assert_eq(sscanf(r->raw, "HTTP/1.%*d %d ", &r->status), 1, "a status line: %s", r->raw);
	end = strstr(r->raw, "\r\n\r\n");
	cr_assert_not_null(end, "the end of the headers: %s", r->raw);
	r->body = end + 4;
	r->body_len = r->len - (size_t)(r->body - r->raw);
}

/*
 * Sends @request (whole, HTTP/1.0 or Connection: close) to @addr:@port and
 * reads whatever comes back until the server closes (or 10 s pass) into
 * r->raw, unparsed.
 */
static void exchange_raw(const char *addr, unsigned int port, const char *request,
			 struct reply *r)
{
	struct timeval tv = { .tv_sec = 10 };
	size_t cap = 0, sent = 0, n = strlen(request);
	int fd = dial(addr, port);

	cr_assert_geq(fd, 0, "connect to %s port %u: %s", addr, port, strerror(-fd));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (sent < n) {
		ssize_t w = send(fd, request + sent, n - sent, MSG_NOSIGNAL);

		cr_assert_gt(w, 0, "send: %s", strerror(errno));
		sent += (size_t)w;
	}
	memset(r, 0, sizeof(*r));
	for (;;) {
		ssize_t got;

		reply_reserve(r, &cap, 4096);
		got = recv(fd, r->raw + r->len, 4096, 0);
		if (got < 0 && errno == ECONNRESET)
			break;
		cr_assert_geq(got, 0, "recv: %s", strerror(errno));
		if (got == 0)
			break;
		r->len += (size_t)got;
	}
	close(fd);
	r->raw[r->len] = '\0';
}

/* exchange_raw(), and the response parsed. */
static void exchange(const char *addr, unsigned int port, const char *request, struct reply *r)
{
	exchange_raw(addr, port, request, r);
	reply_parse(r);
}

/* The value of header @name in @r (malloc()ed), or NULL if absent. */
static char *header(const struct reply *r, const char *name)
{
	size_t n = strlen(name);

	for (const char *line = strstr(r->raw, "\r\n") + 2; line < r->body - 2;
	     line = strstr(line, "\r\n") + 2) {
		if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
			const char *v = line + n + 1;

			while (*v == ' ')
				v++;
			return strndup(v, (size_t)(strstr(v, "\r\n") - v));
		}
	}
	return NULL;
}

static void assert_header(const struct reply *r, const char *name, const char *want)
{
	char *got = header(r, name);

	if (want) {
		cr_assert_not_null(got, "no %s header in:\n%s", name, r->raw);
		cr_assert_str_eq(got, want, "%s", name);
	} else {
		cr_assert_null(got, "%s: %s", name, got);
	}
	free(got);
}

/* GET (or @method) @path with these headers (NULL: none), over HTTP/1.0. */
static void request(unsigned int port, const char *method, const char *path, const char *accept,
		    const char *accept_encoding, struct reply *r)
{
	char req[2048];

	snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: localhost\r\n%s%s%s%s%s%s\r\n",
		 method, path, accept ? "Accept: " : "", accept ? accept : "",
		 accept ? "\r\n" : "", accept_encoding ? "Accept-Encoding: " : "",
		 accept_encoding ? accept_encoding : "", accept_encoding ? "\r\n" : "");
	exchange("127.0.0.1", port, req, r);
}

static struct pcpu_counter requests;
static int64_t shadow; /* what was added to requests, exactly */

#define THREADS 4
#define ADDS 20000

static void *add_some(void *arg)
{
	int64_t k = (int64_t)(intptr_t)arg;

	for (int i = 0; i < ADDS; i++)
		pcpu_counter_add(&requests, k + (i & 7));
	return NULL;
}

/* Counts from THREADS threads, and keeps the exact total in shadow. */
static void count_requests(void)
{
	pthread_t t[THREADS];

	for (int k = 0; k < THREADS; k++) {
		cr_assert_eq(pthread_create(&t[k], NULL, add_some, (void *)(intptr_t)(k + 1)), 0);
		for (int i = 0; i < ADDS; i++)
			shadow += k + 1 + (i & 7);
	}
	for (int k = 0; k < THREADS; k++)
		pthread_join(t[k], NULL);
}

static void setup(void)
{
	static const char *const labels[] = { "code", "200", NULL };
	struct pcpu_metric_desc d = { .name = "serve_test_requests", .help = "Requests.",
				      .kind = PCPU_METRIC_COUNTER, .labels = labels };

	cr_assert_eq(pcpu_counter_init(&requests, 0), 0);
	cr_assert_eq(pcpu_counter_register(&requests, &d), 0);
	shadow = 0;
	count_requests();
}

TestSuite(metrics_serve, .init = setup, .timeout = 60);

/* The value of @series in the body of @r, which must have it. */
static long long body_value(const struct reply *r, const char *series)
{
	long long v = -1;

	cr_assert_eq(metrics_value(r->body, series, &v), 0, "%s in:\n%s", series, r->body);
	return v;
}

PCPU_TEST(metrics_serve, port_zero_picks_a_free_port_that_serves_the_exact_counts)
{
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);
	char *want = metrics_text(PCPU_METRICS_PROMETHEUS);
	struct reply r;

	cr_assert_not_null(srv, "pcpu_metrics_serve: %s", strerror(errno));
	cr_assert_gt(pcpu_metrics_server_port(srv), 0);
	cr_assert_leq(pcpu_metrics_server_port(srv), 65535);
	request(pcpu_metrics_server_port(srv), "GET", "/metrics", NULL, NULL, &r);
	cr_assert_eq(r.status, 200, "%s", r.raw);
	assert_header(&r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	assert_header(&r, "Content-Encoding", NULL);
	cr_assert_eq(body_value(&r, "serve_test_requests_total{code=\"200\"}"), shadow);
	/* the body is the exposition, byte for byte */
	cr_assert_eq(r.body_len, strlen(want));
	cr_assert_eq(memcmp(r.body, want, r.body_len), 0);
	reply_free(&r);
	free(want);
	pcpu_metrics_server_stop(srv);
}

PCPU_TEST(metrics_serve, openmetrics_goes_to_prometheus_2_and_3_and_text_to_who_prefers_it)
{
	static const struct {
		const char *accept, *type;
	} cases[] = {
		{ prom2_accept, "application/openmetrics-text; version=1.0.0; charset=utf-8" },
		{ prom3_accept, "application/openmetrics-text; version=1.0.0; charset=utf-8" },
		{ "text/plain;version=0.0.4;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4",
		  "text/plain; version=0.0.4; charset=utf-8" },
		{ "*/*", "text/plain; version=0.0.4; charset=utf-8" },
		{ prom3_native_accept, "application/vnd.google.protobuf; "
				       "proto=io.prometheus.client.MetricFamily; encoding=delimited" },
	};
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);

	cr_assert_not_null(srv, "pcpu_metrics_serve: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool om = strncmp(cases[i].type, "application/openmetrics", 23) == 0;
		struct reply r;

		request(pcpu_metrics_server_port(srv), "GET", "/metrics", cases[i].accept, NULL, &r);
		cr_assert_eq(r.status, 200);
		assert_header(&r, "Content-Type", cases[i].type);
		if (strncmp(cases[i].type, "application/vnd.google.protobuf", 31) == 0) {
			/* the counter's family, named with _total as a field 1 (test-protobuf decodes) */
			cr_assert(memmem(r.body, r.body_len, "\x0a\x19serve_test_requests_total",
					 27) != NULL);
			reply_free(&r);
			continue;
		}
		/* OpenMetrics: the counter's family has no _total; it ends in # EOF */
		cr_assert_eq(metrics_has_line(r.body, "# TYPE serve_test_requests counter"), om,
			     "%s", r.body);
		cr_assert_eq(r.body_len >= 6 && strcmp(r.body + r.body_len - 6, "# EOF\n") == 0, om);
		cr_assert_eq(body_value(&r, "serve_test_requests_total{code=\"200\"}"), shadow);
		reply_free(&r);
	}
	pcpu_metrics_server_stop(srv);
}

PCPU_TEST(metrics_serve, one_http_1_1_connection_serves_scrape_after_scrape)
{
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);
	struct reply r;
	int n = 0;

	cr_assert_not_null(srv, "pcpu_metrics_serve: %s", strerror(errno));
	/* as Prometheus keeps its connection: three requests, the last closes */
	exchange("127.0.0.1", pcpu_metrics_server_port(srv),
		 "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n"
		 "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n"
		 "GET /metrics HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", &r);
	for (const char *p = r.raw; (p = strstr(p, "HTTP/1.1 200 OK\r\n")); p++)
		n++;
	cr_assert_eq(n, 3, "%s", r.raw);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

PCPU_TEST(metrics_serve, gzip_is_sent_when_asked_and_inflates_to_the_exposition)
{
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);
	struct reply r;

	cr_assert_not_null(srv, "pcpu_metrics_serve: %s", strerror(errno));
	request(pcpu_metrics_server_port(srv), "GET", "/metrics", prom2_accept, "gzip", &r);
	cr_assert_eq(r.status, 200);
	assert_header(&r, "Vary", "Accept, Accept-Encoding");
#ifdef PCPU_TEST_HAVE_ZLIB
	{
		char *want = metrics_text(PCPU_METRICS_OPENMETRICS);
		char *got = malloc(strlen(want) + 1);
		z_stream z = { 0 };

		assert_header(&r, "Content-Encoding", "gzip");
		cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
		z.next_in = (Bytef *)r.body;
		z.avail_in = (uInt)r.body_len;
		z.next_out = (Bytef *)got;
		z.avail_out = (uInt)strlen(want) + 1;
		cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
		cr_assert_eq(z.total_out, strlen(want));
		cr_assert_eq(memcmp(got, want, z.total_out), 0);
		inflateEnd(&z);
		free(got);
		free(want);
	}
#else
	assert_header(&r, "Content-Encoding", NULL); /* no zlib: never */
#endif
	reply_free(&r);
	/* gzip;q=0 refuses it */
	request(pcpu_metrics_server_port(srv), "GET", "/metrics", NULL, "gzip;q=0, identity", &r);
	assert_header(&r, "Content-Encoding", NULL);
	cr_assert_eq(body_value(&r, "serve_test_requests_total{code=\"200\"}"), shadow);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

PCPU_TEST(metrics_serve, head_gets_the_headers_and_no_body)
{
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);
	struct reply r;

	cr_assert_not_null(srv, "pcpu_metrics_serve: %s", strerror(errno));
	request(pcpu_metrics_server_port(srv), "HEAD", "/metrics", prom2_accept, NULL, &r);
	cr_assert_eq(r.status, 200);
	assert_header(&r, "Content-Type", "application/openmetrics-text; version=1.0.0; "
					  "charset=utf-8");
	cr_assert_eq(r.body_len, 0, "%s", r.body);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

PCPU_TEST(metrics_serve, other_paths_are_404_and_a_query_string_is_ignored)
{
	static const char *const paths[] = { "/", "/metric", "/metrics/", "/metricsx",
					     "/METRICS" };
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);
	struct reply r;

	cr_assert_not_null(srv, "pcpu_metrics_serve: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		request(pcpu_metrics_server_port(srv), "GET", paths[i], NULL, NULL, &r);
		cr_assert_eq(r.status, 404, "GET %s: %s", paths[i], r.raw);
		cr_assert_null(strstr(r.body, "serve_test_requests"));
		reply_free(&r);
	}
	request(pcpu_metrics_server_port(srv), "GET", "/metrics?x=1", NULL, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(body_value(&r, "serve_test_requests_total{code=\"200\"}"), shadow);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

PCPU_TEST(metrics_serve, methods_other_than_get_and_head_are_405_with_allow)
{
	static const char *const methods[] = { "POST", "PUT", "DELETE", "OPTIONS", "PATCH" };
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);
	struct reply r;

	cr_assert_not_null(srv, "pcpu_metrics_serve: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		request(pcpu_metrics_server_port(srv), methods[i], "/metrics", NULL, NULL, &r);
		cr_assert_eq(r.status, 405, "%s: %s", methods[i], r.raw);
		assert_header(&r, "Allow", "GET, HEAD");
		cr_assert_null(strstr(r.body, "serve_test_requests"));
		reply_free(&r);
	}
	/* with a body, which is not read */
	exchange("127.0.0.1", pcpu_metrics_server_port(srv),
		 "POST /metrics HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello", &r);
	cr_assert_eq(r.status, 405, "%s", r.raw);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

static int failing_collector(int (*emit)(const struct pcpu_metric_sample *s, void *ctx),
			     void *ctx, void *arg)
{
	(void)emit;
	(void)ctx;
	(void)arg;
	return -EIO;
}

PCPU_TEST(metrics_serve, a_failing_exposition_is_500_and_serving_goes_on)
{
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);
	struct reply r;

	cr_assert_not_null(srv, "pcpu_metrics_serve: %s", strerror(errno));
	cr_assert_eq(pcpu_metrics_collector_add(failing_collector, NULL), 0);
	request(pcpu_metrics_server_port(srv), "GET", "/metrics", NULL, "gzip", &r);
	cr_assert_eq(r.status, 500, "%s", r.raw);
	assert_header(&r, "Content-Encoding", NULL);
	cr_assert_null(strstr(r.body, "serve_test_requests"), "no partial exposition");
	reply_free(&r);
	cr_assert_eq(pcpu_metrics_collector_remove(failing_collector, NULL), 0);
	request(pcpu_metrics_server_port(srv), "GET", "/metrics", NULL, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(body_value(&r, "serve_test_requests_total{code=\"200\"}"), shadow);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

/* The collector a user writes first: it returns emit()'s refusal of a name clash. */
static int clashing_collector(int (*emit)(const struct pcpu_metric_sample *s, void *ctx),
			      void *ctx, void *arg)
{
	static const char *const labels[] = { "code", "200", NULL };
	const struct pcpu_metric_sample s = { .name = "serve_test_requests", .help = "",
					      .unit = "", .kind = PCPU_METRIC_COUNTER,
					      .labels = labels, .value = 1 };

	(void)arg;
	return emit(&s, ctx);
}

/* A 500's body says why, as client_golang's names the metric (issue 33). */
PCPU_TEST(metrics_serve, a_500s_body_names_the_refused_metric_and_the_reason)
{
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);
	struct reply r;

	cr_assert_not_null(srv, "pcpu_metrics_serve: %s", strerror(errno));
	cr_assert_eq(pcpu_metrics_collector_add(clashing_collector, NULL), 0);
	request(pcpu_metrics_server_port(srv), "GET", "/metrics", NULL, NULL, &r);
	cr_assert_eq(r.status, 500, "%s", r.raw);
	cr_assert_not_null(strstr(r.body, "metric \"serve_test_requests\"{code=\"200\"}"),
			   "%s", r.body);
	cr_assert_not_null(strstr(r.body, "name clash"), "%s", r.body);
	cr_assert_not_null(strstr(r.body, strerror(EEXIST)), "%s", r.body);
	reply_free(&r);
	cr_assert_eq(pcpu_metrics_collector_remove(clashing_collector, NULL), 0);
	/* a collector's own error, with nothing refused: its errno */
	cr_assert_eq(pcpu_metrics_collector_add(failing_collector, NULL), 0);
	request(pcpu_metrics_server_port(srv), "GET", "/metrics", NULL, NULL, &r);
	cr_assert_eq(r.status, 500, "%s", r.raw);
	cr_assert_not_null(strstr(r.body, strerror(EIO)), "%s", r.body);
	cr_assert_null(strstr(r.body, "serve_test_requests"), "%s", r.body);
	reply_free(&r);
	cr_assert_eq(pcpu_metrics_collector_remove(failing_collector, NULL), 0);
	request(pcpu_metrics_server_port(srv), "GET", "/metrics", NULL, NULL, &r);
	cr_assert_eq(r.status, 200, "%s", r.raw);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

/* The README's collector, as written there. */
struct queue {
	const char *name; /* NULL ends the array */
	long depth;
};

static int queue_collector(int (*emit)(const struct pcpu_metric_sample *s, void *ctx),
			   void *ctx, void *arg)
{
	for (const struct queue *q = arg; q->name; q++) {
		const char *const labels[] = { "queue", q->name, NULL };
		const struct pcpu_metric_sample s = { .name = "queue_depth",
						      .help = "Jobs waiting.", .unit = "",
						      .kind = PCPU_METRIC_GAUGE, .labels = labels,
						      .value = q->depth };
		int err = emit(&s, ctx);

		/* refused (left out, counted): the other samples still go */
		if (err && err != -EEXIST && err != -EINVAL)
			return err; /* the output stopped: nothing more is written */
	}
	return 0;
}

static int add_queue_collector(struct queue *queues)
{
	int err = pcpu_metrics_collector_add_flags(queue_collector, queues,
						   PCPU_METRICS_COLLECTOR_F_CONTINUE);

	/* percpu_collector_failed_total and percpu_collector_refused_total */
	return err ? err : pcpu_metrics_collector_add(pcpu_metrics_failures_collector, NULL);
}

/*
 * The README's collector: a name clash (a registered queue_depth) and a
 * malformed sample (a label value that is not UTF-8) cost the scrape
 * those samples only; the rest is served, with the refusals counted.
 */
PCPU_TEST(metrics_serve, the_readmes_collector_survives_a_name_clash)
{
	struct queue queues[] = { { "a", 3 }, { "\xff", 4 }, { NULL, 0 } };
	struct pcpu_counter clash;
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);
	uint64_t refused = pcpu_metrics_collector_refused();
	struct reply r;

	cr_assert_not_null(srv, "pcpu_metrics_serve: %s", strerror(errno));
	cr_assert_eq(add_queue_collector(queues), 0);
	request(pcpu_metrics_server_port(srv), "GET", "/metrics", NULL, NULL, &r);
	cr_assert_eq(r.status, 200, "%s", r.raw);
	cr_assert_eq(body_value(&r, "queue_depth{queue=\"a\"}"), 3, "%s", r.body);
	cr_assert_eq(pcpu_metrics_collector_refused(), refused + 1, "the bad label value");
	reply_free(&r);
	/* now a registered metric of the collector's name */
	cr_assert_eq(pcpu_counter_init(&clash, 7), 0);
	cr_assert_eq(pcpu_counter_register(&clash, &(struct pcpu_metric_desc){
						       .name = "queue_depth",
						       .kind = PCPU_METRIC_COUNTER }),
		     0);
	request(pcpu_metrics_server_port(srv), "GET", "/metrics", NULL, NULL, &r);
	cr_assert_eq(r.status, 200, "%s", r.raw);
	cr_assert_eq(body_value(&r, "serve_test_requests_total{code=\"200\"}"), shadow);
	cr_assert_eq(body_value(&r, "queue_depth_total"), 7, "%s", r.body);
	cr_assert_null(strstr(r.body, "queue_depth{"), "the clashing samples are left out");
	cr_assert_eq(pcpu_metrics_collector_refused(), refused + 3, "1 + both queues");
	cr_assert_gt(body_value(&r, "percpu_collector_refused_total"), 0, "%s", r.body);
	reply_free(&r);
	pcpu_counter_destroy(&clash);
	cr_assert_eq(pcpu_metrics_collector_remove(queue_collector, queues), 0);
	cr_assert_eq(pcpu_metrics_collector_remove(pcpu_metrics_failures_collector, NULL), 0);
	pcpu_metrics_server_stop(srv);
}

PCPU_TEST(metrics_serve, stop_frees_the_port_and_a_restart_on_it_serves_new_counts)
{
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);
	unsigned int port;
	struct reply r;

	cr_assert_not_null(srv, "pcpu_metrics_serve: %s", strerror(errno));
	port = pcpu_metrics_server_port(srv);
	request(port, "GET", "/metrics", NULL, NULL, &r); /* leaves a closed connection */
	cr_assert_eq(body_value(&r, "serve_test_requests_total{code=\"200\"}"), shadow);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
	cr_assert_eq(dial("127.0.0.1", port), -ECONNREFUSED, "nothing listens after stop");

	count_requests();
	srv = pcpu_metrics_serve("127.0.0.1", port);
	cr_assert_not_null(srv, "restart on port %u: %s", port, strerror(errno));
	cr_assert_eq(pcpu_metrics_server_port(srv), port);
	request(port, "GET", "/metrics", NULL, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(body_value(&r, "serve_test_requests_total{code=\"200\"}"), shadow);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
	pcpu_metrics_server_stop(NULL);
	cr_assert_eq(pcpu_metrics_server_port(NULL), 0);
}

/* While threads add, every scrape sees a value no lower than the last, and the last is exact. */
static void *scrape_while_adding(void *arg)
{
	(void)arg;
	count_requests();
	return NULL;
}

PCPU_TEST(metrics_serve, scrapes_during_adds_never_go_back_and_end_exact)
{
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);
	long long last = 0, v;
	pthread_t t;
	struct reply r;

	cr_assert_not_null(srv, "pcpu_metrics_serve: %s", strerror(errno));
	cr_assert_eq(pthread_create(&t, NULL, scrape_while_adding, NULL), 0);
	for (int i = 0; i < 20; i++) {
		request(pcpu_metrics_server_port(srv), "GET", "/metrics", NULL, NULL, &r);
		v = body_value(&r, "serve_test_requests_total{code=\"200\"}");
		cr_assert_geq(v, last, "scrape %d went back", i);
		last = v;
		reply_free(&r);
	}
	pthread_join(t, NULL);
	request(pcpu_metrics_server_port(srv), "GET", "/metrics", NULL, NULL, &r);
	cr_assert_eq(body_value(&r, "serve_test_requests_total{code=\"200\"}"), shadow);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

PCPU_TEST(metrics_serve, a_port_in_use_is_eaddrinuse)
{
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0), *again;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd;

	/* by our own server */
	cr_assert_not_null(srv, "pcpu_metrics_serve: %s", strerror(errno));
	errno = 0;
	again = pcpu_metrics_serve("127.0.0.1", pcpu_metrics_server_port(srv));
	cr_assert_null(again);
	cr_assert_eq(errno, EADDRINUSE, "%s", strerror(errno));
	/* every address includes it */
	errno = 0;
	again = pcpu_metrics_serve(NULL, pcpu_metrics_server_port(srv));
	cr_assert_null(again);
	cr_assert_eq(errno, EADDRINUSE, "%s", strerror(errno));
	pcpu_metrics_server_stop(srv);

	/* by another program's socket, listening without SO_REUSEADDR */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(listen(fd, 1), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	errno = 0;
	cr_assert_null(pcpu_metrics_serve("127.0.0.1", ntohs(sin.sin_port)));
	cr_assert_eq(errno, EADDRINUSE, "%s", strerror(errno));
	close(fd);
}

/* Where the host has IPv6 loopback; else nothing to test. */
static bool have_ipv6_loopback(void)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&sin6, sizeof(sin6)) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

PCPU_TEST(metrics_serve, ipv6_and_every_address_serve_too)
{
	struct pcpu_metrics_server *srv;
	struct reply r;

	/* NULL: every address, reached here over IPv4 loopback */
	srv = pcpu_metrics_serve(NULL, 0);
	cr_assert_not_null(srv, "pcpu_metrics_serve(NULL): %s", strerror(errno));
	request(pcpu_metrics_server_port(srv), "GET", "/metrics", NULL, NULL, &r);
	cr_assert_eq(body_value(&r, "serve_test_requests_total{code=\"200\"}"), shadow);
	reply_free(&r);
	if (have_ipv6_loopback()) {
		exchange("::1", pcpu_metrics_server_port(srv), "GET /metrics HTTP/1.0\r\n\r\n", &r);
		cr_assert_eq(r.status, 200);
		reply_free(&r);
	}
	pcpu_metrics_server_stop(srv);
	if (!have_ipv6_loopback())
		cr_skip_test("no IPv6 loopback here");

	srv = pcpu_metrics_serve("::1", 0);
	cr_assert_not_null(srv, "pcpu_metrics_serve(::1): %s", strerror(errno));
	exchange("::1", pcpu_metrics_server_port(srv), "GET /metrics HTTP/1.0\r\n\r\n", &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(body_value(&r, "serve_test_requests_total{code=\"200\"}"), shadow);
	reply_free(&r);
	/* ::1 only: not on IPv4 */
	cr_assert_eq(dial("127.0.0.1", pcpu_metrics_server_port(srv)), -ECONNREFUSED);
	pcpu_metrics_server_stop(srv);
}

/* A server with @opts (size set here); it must start. */
static struct pcpu_metrics_server *serve_opts(struct pcpu_metrics_server_options opts)
{
	struct pcpu_metrics_server *srv;

	opts.size = sizeof(opts);
	if (!opts.address)
		opts.address = "127.0.0.1";
	srv = pcpu_metrics_serve_opts(&opts);
	cr_assert_not_null(srv, "pcpu_metrics_serve_opts: %s", strerror(errno));
	return srv;
}

/* GET @path over HTTP/1.0 with header line @extra ("Name: value", or NULL). */
static void get(unsigned int port, const char *path, const char *extra, struct reply *r)
{
	char req[4096];

	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: localhost\r\n%s%s\r\n", path,
		 extra ? extra : "", extra ? "\r\n" : "");
	exchange("127.0.0.1", port, req, r);
}

/* @r is the exposition with the exact count. */
static void assert_exposition(const struct reply *r)
{
	cr_assert_eq(r->status, 200, "%s", r->raw);
	cr_assert_eq(body_value(r, "serve_test_requests_total{code=\"200\"}"), shadow);
}

/* @r is a status other than 200, with no exposition in its body. */
static void assert_refused(const struct reply *r, int status)
{
	cr_assert_eq(r->status, status, "%s", r->raw);
	cr_assert_null(strstr(r->raw, "serve_test_requests"), "%s", r->raw);
}

PCPU_TEST(metrics_serve, a_set_path_is_served_and_metrics_is_then_404)
{
	static const char *const others[] = { "/metrics", "/x", "/x/scrape.txt/", "/" };
	struct pcpu_metrics_server *srv =
		serve_opts((struct pcpu_metrics_server_options){ .path = "/x/scrape.txt" });
	unsigned int port = pcpu_metrics_server_port(srv);
	struct reply r;

	get(port, "/x/scrape.txt", NULL, &r);
	assert_exposition(&r);
	reply_free(&r);
	get(port, "/x/scrape.txt?target=a", NULL, &r);
	assert_exposition(&r);
	reply_free(&r);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		get(port, others[i], NULL, &r);
		assert_refused(&r, 404);
		reply_free(&r);
	}
	request(port, "POST", "/x/scrape.txt", NULL, NULL, &r);
	assert_refused(&r, 405);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

PCPU_TEST(metrics_serve, the_longest_path_allowed_is_served)
{
	char path[256];
	struct pcpu_metrics_server *srv;
	struct reply r;

	memset(path, 'p', 255);
	path[0] = '/';
	path[255] = '\0';
	srv = serve_opts((struct pcpu_metrics_server_options){ .path = path });
	get(pcpu_metrics_server_port(srv), path, NULL, &r);
	assert_exposition(&r);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

/* "Authorization: Basic " and base64 of @creds. */
static void basic_header(const char *creds, char *out, size_t size)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(creds), o = (size_t)snprintf(out, size, "Authorization: Basic ");

	for (size_t i = 0; i < n; i += 3) {
		unsigned int v = (unsigned char)creds[i] << 16;

		if (i + 1 < n)
			v |= (unsigned char)creds[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)creds[i + 2];
		cr_assert_lt(o + 5, size);
		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	out[o] = '\0';
}

/* GET @path with basic credentials @creds ("user:password"). */
static void get_as(unsigned int port, const char *path, const char *creds, struct reply *r)
{
	char h[1024];

	basic_header(creds, h, sizeof(h));
	get(port, path, h, r);
}

static void assert_401(const struct reply *r)
{
	assert_refused(r, 401);
	assert_header(r, "WWW-Authenticate", "Basic realm=\"metrics\"");
}

PCPU_TEST(metrics_serve, basic_auth_serves_the_right_credentials_only)
{
	static const char *const wrong[] = {
		"scraper:wrong", "scraper:s3cret", "scraper:s3cret:", "scraper:S3cret:x",
		"Scraper:s3cret:x", "scrape:s3cret:x", "scraperr:s3cret:x", "scraper",
		":s3cret:x", "",
	};
	struct pcpu_metrics_server *srv = serve_opts((struct pcpu_metrics_server_options){
		.basic_auth_user = "scraper", .basic_auth_password = "s3cret:x" });
	unsigned int port = pcpu_metrics_server_port(srv);
	struct reply r;

	get(port, "/metrics", NULL, &r);
	assert_401(&r);
	reply_free(&r);
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		get_as(port, "/metrics", wrong[i], &r);
		assert_401(&r);
		reply_free(&r);
	}
	/* a NUL after the user or the password: not the same credentials */
	get(port, "/metrics", "Authorization: Basic c2NyYXBlcgA6czNjcmV0Ong=", &r);
	assert_401(&r);
	reply_free(&r);
	get(port, "/metrics", "Authorization: Basic c2NyYXBlcjpzM2NyZXQ6eAA=", &r);
	assert_401(&r);
	reply_free(&r);
	/* the password holds a ':': the user ends at the first one */
	get_as(port, "/metrics", "scraper:s3cret:x", &r);
	assert_exposition(&r);
	reply_free(&r);
	/* the scheme in any case, more than one space */
	get(port, "/metrics", "Authorization: bAsIc   c2NyYXBlcjpzM2NyZXQ6eA==", &r);
	assert_exposition(&r);
	reply_free(&r);
	/* a path not served: 401 without credentials, 404 with them */
	get(port, "/other", NULL, &r);
	assert_401(&r);
	reply_free(&r);
	get_as(port, "/other", "scraper:s3cret:x", &r);
	assert_refused(&r, 404);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

PCPU_TEST(metrics_serve, basic_auth_refuses_malformed_headers)
{
	static const char *const bad[] = {
		"Authorization: Basic",
		"Authorization: Basic ",
		"Authorization: Basicc2NyYXBlcjpzM2NyZXQ=",
		"Authorization: Bearer c2NyYXBlcjpzM2NyZXQ=",
		"Authorization: c2NyYXBlcjpzM2NyZXQ=",
		"Authorization: Basic c2NyYXBlcjpzM2NyZXQ",    /* no padding */
		"Authorization: Basic c2NyYXBlcjpzM2NyZXQ==",  /* too much */
		"Authorization: Basic c2NyYXBlcjpz=2NyZXQ=",   /* '=' inside */
		"Authorization: Basic c2NyYXBlcjpzM2N!ZXQ=",   /* not base64 */
		"Authorization: Basic c2NyYXBl cjpzM2NyZXQ=",  /* a space inside */
		"Authorization: Basic c2NyYXBlcjpzM2NyZXQ=,x", /* a list */
		"Authorization: Digest username=\"scraper\"",
		"Authorization: Basic c2NyYXBlcjpzM2NyZXQ=c2NyYXBlcjpzM2NyZXQ=",
	};
	char big[2048];
	struct pcpu_metrics_server *srv = serve_opts((struct pcpu_metrics_server_options){
		.basic_auth_user = "scraper", .basic_auth_password = "s3cret" });
	unsigned int port = pcpu_metrics_server_port(srv);
	struct reply r;

	/* the right one, so that the refusals below are the header's fault */
	get(port, "/metrics", "Authorization: Basic c2NyYXBlcjpzM2NyZXQ=", &r);
	assert_exposition(&r);
	reply_free(&r);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		get(port, "/metrics", bad[i], &r);
		assert_401(&r);
		reply_free(&r);
	}
	/* longer than any allowed credentials: the right ones, then 'A's */
	snprintf(big, sizeof(big), "Authorization: Basic c2NyYXBlcjpzM2NyZXQ=%01400d", 0);
	memset(big + strlen("Authorization: Basic c2NyYXBlcjpzM2NyZXQ="), 'A', 1400);
	get(port, "/metrics", big, &r);
	assert_401(&r);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

PCPU_TEST(metrics_serve, the_longest_credentials_and_an_empty_password_are_served)
{
	char user[256], password[256], creds[600];
	struct pcpu_metrics_server *srv;
	struct reply r;

	memset(user, 'u', 255);
	user[255] = '\0';
	memset(password, 'p', 255);
	password[255] = '\0';
	srv = serve_opts((struct pcpu_metrics_server_options){ .basic_auth_user = user,
							     .basic_auth_password = password });
	snprintf(creds, sizeof(creds), "%s:%s", user, password);
	get_as(pcpu_metrics_server_port(srv), "/metrics", creds, &r);
	assert_exposition(&r);
	reply_free(&r);
	/* one byte less of each */
	snprintf(creds, sizeof(creds), "%.254s:%s", user, password);
	get_as(pcpu_metrics_server_port(srv), "/metrics", creds, &r);
	assert_401(&r);
	reply_free(&r);
	snprintf(creds, sizeof(creds), "%s:%.254s", user, password);
	get_as(pcpu_metrics_server_port(srv), "/metrics", creds, &r);
	assert_401(&r);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);

	srv = serve_opts((struct pcpu_metrics_server_options){ .basic_auth_user = "u",
							     .basic_auth_password = "" });
	get_as(pcpu_metrics_server_port(srv), "/metrics", "u:", &r);
	assert_exposition(&r);
	reply_free(&r);
	get_as(pcpu_metrics_server_port(srv), "/metrics", "u:x", &r);
	assert_401(&r);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

PCPU_TEST(metrics_serve, options_are_copied_and_the_callers_strings_may_go)
{
	char *path = strdup("/p"), *user = strdup("me"), *password = strdup("pw");
	struct pcpu_metrics_server *srv = serve_opts((struct pcpu_metrics_server_options){
		.path = path, .basic_auth_user = user, .basic_auth_password = password });
	struct reply r;

	/* the same lengths, other bytes, then gone */
	strcpy(path, "/q");
	strcpy(user, "xx");
	strcpy(password, "yy");
	free(path);
	free(user);
	free(password);
	get_as(pcpu_metrics_server_port(srv), "/p", "me:pw", &r);
	assert_exposition(&r);
	reply_free(&r);
	get_as(pcpu_metrics_server_port(srv), "/q", "xx:yy", &r);
	assert_401(&r);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

/* The descriptors open in this process. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	cr_assert_not_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static bool mhd_has_tls(void)
{
	return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

PCPU_TEST(metrics_serve, a_key_or_certificate_refused_is_einval_and_leaks_no_descriptor)
{
	static const char junk[] = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n"
				   "-----END CERTIFICATE-----\n";
	const struct pcpu_metrics_server_options cases[] = {
		{ .tls_cert_pem = junk, .tls_key_pem = junk },
		{ .tls_cert_pem = "", .tls_key_pem = "" },
		{ .tls_cert_pem = "not PEM", .tls_key_pem = "not PEM" },
	};
	int before = open_fds();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pcpu_metrics_server_options o = cases[i];

		o.size = sizeof(o);
		o.address = "127.0.0.1";
		errno = 0;
		cr_assert_null(pcpu_metrics_serve_opts(&o), "case %zu", i);
		cr_assert_eq(errno, mhd_has_tls() ? EINVAL : ENOTSUP, "case %zu: %s", i,
			     strerror(errno));
		cr_assert_eq(open_fds(), before, "case %zu: a descriptor left open", i);
	}
}

#ifdef PCPU_TEST_HAVE_GNUTLS

/* A self-signed certificate for "localhost" and its key, PEM (malloc()ed). */
struct tls_pair {
	char *cert, *key;
};

static char *datum_str(gnutls_datum_t *d)
{
	char *s = strndup((const char *)d->data, d->size);

	cr_assert_not_null(s);
	gnutls_free(d->data);
	return s;
}

/* P-256: fast to make, even under valgrind */
static void make_tls_pair(struct tls_pair *p)
{
	gnutls_x509_privkey_t key;
	gnutls_x509_crt_t crt;
	gnutls_datum_t d;
	time_t now = time(NULL);
	unsigned char serial[8];

	for (size_t i = 0; i < sizeof(serial); i++)
		serial[i] = (unsigned char)(now >> (i % 4 * 8)) | 1;
	serial[0] &= 0x7f; /* a positive serial */
	cr_assert_eq(gnutls_x509_privkey_init(&key), 0);
	cr_assert_eq(gnutls_x509_privkey_generate(
			     key, GNUTLS_PK_ECDSA,
			     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
		     0);
	cr_assert_eq(gnutls_x509_crt_init(&crt), 0);
	cr_assert_eq(gnutls_x509_crt_set_version(crt, 3), 0);
	cr_assert_eq(gnutls_x509_crt_set_serial(crt, serial, sizeof(serial)), 0);
	cr_assert_eq(gnutls_x509_crt_set_activation_time(crt, now - 3600), 0);
	cr_assert_eq(gnutls_x509_crt_set_expiration_time(crt, now + 86400), 0);
	cr_assert_eq(gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0,
						   "localhost", 9), 0);
	cr_assert_eq(gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, "localhost",
							  9, GNUTLS_FSAN_SET), 0);
	cr_assert_eq(gnutls_x509_crt_set_key(crt, key), 0);
	cr_assert_eq(gnutls_x509_crt_set_basic_constraints(crt, 0, -1), 0);
	cr_assert_eq(gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE), 0);
	cr_assert_eq(gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0), 0);
	cr_assert_eq(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0), 0);
	cr_assert_eq(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d), 0);
	p->cert = datum_str(&d);
	cr_assert_eq(gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &d), 0);
	p->key = datum_str(&d);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
}

static void tls_pair_free(struct tls_pair *p)
{
	free(p->cert);
	free(p->key);
}

/*
 * @pem's key in PKCS #8, encrypted with a password (malloc()ed). Its key
 * derivation takes most of a minute under valgrind.
 */
static char *encrypt_key(const char *pem)
{
	gnutls_datum_t in = { (unsigned char *)pem, (unsigned int)strlen(pem) }, d;
	gnutls_x509_privkey_t key;

	cr_assert_eq(gnutls_x509_privkey_init(&key), 0);
	cr_assert_eq(gnutls_x509_privkey_import(key, &in, GNUTLS_X509_FMT_PEM), 0);
	cr_assert_eq(gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, "pw",
						       GNUTLS_PKCS_PBES2_AES_256, &d), 0);
	gnutls_x509_privkey_deinit(key);
	cr_assert_not_null(strstr((const char *)d.data, "ENCRYPTED"));
	return datum_str(&d);
}

/*
 * Sends @request over TLS to 127.0.0.1:@port, trusting @cert_pem only
 * and checking that the server shows it for "localhost", and reads the
 * response to the end of the connection into @r.
 */
static void tls_exchange(unsigned int port, const char *cert_pem, const char *request,
			 struct reply *r)
{
	gnutls_datum_t ca = { (unsigned char *)cert_pem, (unsigned int)strlen(cert_pem) };
	gnutls_certificate_credentials_t cred;
	gnutls_session_t s;
	size_t cap = 0, sent = 0, n = strlen(request);
	int fd = dial("127.0.0.1", port), ret;

	cr_assert_geq(fd, 0, "connect: %s", strerror(-fd));
	cr_assert_eq(gnutls_certificate_allocate_credentials(&cred), 0);
	cr_assert_eq(gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM), 1);
	cr_assert_eq(gnutls_init(&s, GNUTLS_CLIENT), 0);
	cr_assert_eq(gnutls_set_default_priority(s), 0);
	cr_assert_eq(gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred), 0);
	cr_assert_eq(gnutls_server_name_set(s, GNUTLS_NAME_DNS, "localhost", 9), 0);
	gnutls_session_set_verify_cert(s, "localhost", 0);
	gnutls_transport_set_int(s, fd);
	gnutls_handshake_set_timeout(s, 30 * 1000);
	do
		ret = gnutls_handshake(s);
	while (ret < 0 && !gnutls_error_is_fatal(ret));
	cr_assert_eq(ret, 0, "handshake: %s", gnutls_strerror(ret));
	while (sent < n) {
		ssize_t w = gnutls_record_send(s, request + sent, n - sent);

		cr_assert_gt(w, 0, "send: %s", gnutls_strerror((int)w));
		sent += (size_t)w;
	}
	memset(r, 0, sizeof(*r));
	for (;;) {
		ssize_t got;

		reply_reserve(r, &cap, 4096);
		got = gnutls_record_recv(s, r->raw + r->len, 4096);
		if (got == GNUTLS_E_AGAIN || got == GNUTLS_E_INTERRUPTED)
			continue;
		/* a close without close_notify ends an HTTP/1.0 body all the same */
		if (got == 0 || got == GNUTLS_E_PREMATURE_TERMINATION)
			break;
		cr_assert_gt(got, 0, "recv: %s", gnutls_strerror((int)got));
		r->len += (size_t)got;
	}
	r->raw[r->len] = '\0';
	gnutls_deinit(s);
	gnutls_certificate_free_credentials(cred);
	close(fd);
	reply_parse(r);
}

PCPU_TEST(metrics_serve, tls_serves_the_exposition_over_https)
{
	struct tls_pair p;
	struct pcpu_metrics_server *srv;
	char *want = metrics_text(PCPU_METRICS_PROMETHEUS);
	struct reply r;
	int n = 0;

	if (!mhd_has_tls())
		cr_skip_test("libmicrohttpd without TLS (refusal tested elsewhere)");
	make_tls_pair(&p);
	srv = serve_opts((struct pcpu_metrics_server_options){ .tls_cert_pem = p.cert,
							     .tls_key_pem = p.key });
	tls_exchange(pcpu_metrics_server_port(srv), p.cert,
		     "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n", &r);
	assert_exposition(&r);
	assert_header(&r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	cr_assert_eq(r.body_len, strlen(want));
	cr_assert_eq(memcmp(r.body, want, r.body_len), 0);
	reply_free(&r);
	/* and keep-alive over one TLS connection */
	tls_exchange(pcpu_metrics_server_port(srv), p.cert,
		     "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n"
		     "GET /metrics HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", &r);
	for (const char *at = r.raw; (at = strstr(at, "HTTP/1.1 200 OK\r\n")); at++)
		n++;
	cr_assert_eq(n, 2, "%s", r.raw);
	reply_free(&r);
	free(want);
	pcpu_metrics_server_stop(srv);
	tls_pair_free(&p);
}

PCPU_TEST(metrics_serve, plain_http_to_a_tls_server_gets_no_exposition)
{
	struct tls_pair p;
	struct pcpu_metrics_server *srv;
	struct reply r;

	if (!mhd_has_tls())
		cr_skip_test("libmicrohttpd without TLS (refusal tested elsewhere)");
	make_tls_pair(&p);
	srv = serve_opts((struct pcpu_metrics_server_options){ .tls_cert_pem = p.cert,
							     .tls_key_pem = p.key });
	exchange_raw("127.0.0.1", pcpu_metrics_server_port(srv),
		     "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n", &r);
	cr_assert_null(strstr(r.raw, "serve_test_requests"));
	cr_assert_null(memmem(r.raw, r.len, "200 OK", 6));
	reply_free(&r);
	/* and the server still speaks TLS after it */
	tls_exchange(pcpu_metrics_server_port(srv), p.cert,
		     "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n", &r);
	assert_exposition(&r);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
	tls_pair_free(&p);
}

PCPU_TEST(metrics_serve, tls_basic_auth_and_a_path_together)
{
	char h[256], req[512];
	struct tls_pair p;
	struct pcpu_metrics_server *srv;
	struct reply r;

	if (!mhd_has_tls())
		cr_skip_test("libmicrohttpd without TLS (refusal tested elsewhere)");
	make_tls_pair(&p);
	srv = serve_opts((struct pcpu_metrics_server_options){
		.path = "/m", .tls_cert_pem = p.cert, .tls_key_pem = p.key,
		.basic_auth_user = "prom", .basic_auth_password = "pw" });
	tls_exchange(pcpu_metrics_server_port(srv), p.cert, "GET /m HTTP/1.0\r\n\r\n", &r);
	assert_401(&r);
	reply_free(&r);
	basic_header("prom:pw", h, sizeof(h));
	snprintf(req, sizeof(req), "GET /m HTTP/1.0\r\n%s\r\n\r\n", h);
	tls_exchange(pcpu_metrics_server_port(srv), p.cert, req, &r);
	assert_exposition(&r);
	reply_free(&r);
	snprintf(req, sizeof(req), "GET /metrics HTTP/1.0\r\n%s\r\n\r\n", h);
	tls_exchange(pcpu_metrics_server_port(srv), p.cert, req, &r);
	assert_refused(&r, 404);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
	tls_pair_free(&p);
}

PCPU_TEST(metrics_serve, a_key_that_is_not_the_certificates_is_einval)
{
	struct tls_pair a, b;
	struct pcpu_metrics_server_options o = { .size = sizeof(o), .address = "127.0.0.1" };
	int before = open_fds();

	if (!mhd_has_tls())
		cr_skip_test("libmicrohttpd without TLS (refusal tested elsewhere)");
	make_tls_pair(&a);
	make_tls_pair(&b);
	o.tls_cert_pem = a.cert;
	o.tls_key_pem = b.key;
	errno = 0;
	cr_assert_null(pcpu_metrics_serve_opts(&o));
	cr_assert_eq(errno, EINVAL, "%s", strerror(errno));
	/* the certificate where the key goes */
	o.tls_key_pem = a.cert;
	errno = 0;
	cr_assert_null(pcpu_metrics_serve_opts(&o));
	cr_assert_eq(errno, EINVAL, "%s", strerror(errno));
	/* the right key, encrypted */
	if (!pcpu_test_small()) {
		char *encrypted = encrypt_key(a.key);

		o.tls_key_pem = encrypted;
		errno = 0;
		cr_assert_null(pcpu_metrics_serve_opts(&o));
		cr_assert_eq(errno, EINVAL, "%s", strerror(errno));
		free(encrypted);
	}
	cr_assert_eq(open_fds(), before, "a descriptor left open");
	/* the pair that belongs together starts */
	o.tls_key_pem = a.key;
	pcpu_metrics_server_stop(serve_opts(o));
	tls_pair_free(&a);
	tls_pair_free(&b);
}

#endif /* PCPU_TEST_HAVE_GNUTLS */

PCPU_TEST(metrics_serve, tls_without_libmicrohttpds_tls_is_enotsup)
{
	struct pcpu_metrics_server_options o = { .size = sizeof(o), .address = "127.0.0.1",
						 .tls_cert_pem = "c", .tls_key_pem = "k" };

	if (mhd_has_tls())
		cr_skip_test("libmicrohttpd has TLS here");
	errno = 0;
	cr_assert_null(pcpu_metrics_serve_opts(&o));
	cr_assert_eq(errno, ENOTSUP);
}

PCPU_TEST(metrics_serve, a_larger_options_struct_with_zeros_past_ours_is_served)
{
	struct {
		struct pcpu_metrics_server_options o;
		uint64_t later[4];
	} big = { .o = { .size = sizeof(big), .address = "127.0.0.1", .path = "/big" } };
	struct pcpu_metrics_server *srv = pcpu_metrics_serve_opts(&big.o);
	struct reply r;

	cr_assert_not_null(srv, "%s", strerror(errno));
	get(pcpu_metrics_server_port(srv), "/big", NULL, &r);
	assert_exposition(&r);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
}

/* A server of a registry serves its metrics, with its labels, and not the process's. */
PCPU_TEST(metrics_serve, a_registrys_server_serves_it_and_not_the_processs)
{
	static const char *const tenant[] = { "tenant", "a", NULL };
	struct pcpu_metrics_registry *reg = pcpu_metrics_registry_create(tenant);
	struct pcpu_counter c;
	struct pcpu_metrics_server *srv;
	struct reply r;

	cr_assert_not_null(reg);
	cr_assert_eq(pcpu_counter_init(&c, 0), 0);
	cr_assert_eq(pcpu_counter_register(&c, &(struct pcpu_metric_desc){
							.name = "serve_test_requests",
							.kind = PCPU_METRIC_COUNTER,
							.registry = reg }),
		     0);
	pcpu_counter_add(&c, 42);
	srv = serve_opts((struct pcpu_metrics_server_options){ .registry = reg });
	get(pcpu_metrics_server_port(srv), "/metrics", NULL, &r);
	cr_assert_eq(r.status, 200, "%s", r.raw);
	cr_assert_eq(body_value(&r, "serve_test_requests_total{tenant=\"a\"}"), 42);
	/* the process's series of the same name is not this registry's */
	cr_assert_null(strstr(r.body, "code=\"200\""), "%s", r.body);
	reply_free(&r);
	pcpu_metrics_server_stop(srv);
	pcpu_counter_destroy(&c);
	cr_assert_eq(pcpu_metrics_registry_destroy(reg), 0);
}

#else /* no libmicrohttpd */

Test(metrics_serve, without_libmicrohttpd_serving_is_enotsup)
{
	struct pcpu_metrics_server_options o = { .size = sizeof(o), .path = "/p",
						 .basic_auth_user = "u",
						 .basic_auth_password = "p" };

	errno = 0;
	cr_assert_null(pcpu_metrics_serve_opts(&o));
	cr_assert_eq(errno, ENOTSUP);
	errno = 0;
	cr_assert_null(pcpu_metrics_serve("127.0.0.1", 0));
	cr_assert_eq(errno, ENOTSUP);
	errno = 0;
	cr_assert_null(pcpu_metrics_serve(NULL, 9100));
	cr_assert_eq(errno, ENOTSUP);
	cr_assert_eq(pcpu_metrics_server_port(NULL), 0);
	pcpu_metrics_server_stop(NULL);
}

#endif

/* with or without libmicrohttpd */
PCPU_TEST(metrics_serve, bad_arguments_are_einval)
{
	static const char *const addrs[] = { "", "localhost", "127.0.0.1:80", "256.0.0.1",
					     "[::1]", "1.2.3" };

	errno = 0;
	cr_assert_null(pcpu_metrics_serve("127.0.0.1", 65536));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(pcpu_metrics_serve("127.0.0.1", UINT32_MAX));
	cr_assert_eq(errno, EINVAL);
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		errno = 0;
		cr_assert_null(pcpu_metrics_serve(addrs[i], 0), "%s", addrs[i]);
		cr_assert_eq(errno, EINVAL, "%s: %s", addrs[i], strerror(errno));
	}
}

/* Each rule on the options (<percpu/metrics_http.h>), with or without libmicrohttpd. */
PCPU_TEST(metrics_serve, bad_options_are_einval)
{
	char long_path[258], long_cred[258];
	const char *const bad_paths[] = { "", "metrics", "/a b", "/a\tb", "/a\x7f", "/caf\xc3\xa9",
					  "/a?b", "/a#b", "/a%20b", long_path };
	const char *const bad_users[] = { "", "a:b", ":", long_cred };
	/* 0.4's struct is the smallest: one byte short of it, and less */
	const size_t sizes[] = { 0, sizeof(void *),
				 offsetof(struct pcpu_metrics_server_options, registry) +
					 sizeof(void *) - 1 };
	struct pcpu_metrics_server_options o;
	size_t i;

	memset(long_path, 'p', 256);
	long_path[0] = '/';
	long_path[256] = '\0'; /* 256 bytes */
	memset(long_cred, 'c', 256);
	long_cred[256] = '\0';
#define EXPECT_EINVAL(what, ...)                                                        \
	do {                                                                            \
		o = (struct pcpu_metrics_server_options){ .size = sizeof(o),            \
							  __VA_ARGS__ };                \
		errno = 0;                                                              \
		cr_assert_null(pcpu_metrics_serve_opts(&o), "%s", what);                \
		cr_assert_eq(errno, EINVAL, "%s: %s", what, strerror(errno));           \
	} while (0)

	errno = 0;
	cr_assert_null(pcpu_metrics_serve_opts(NULL));
	cr_assert_eq(errno, EINVAL);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		o = (struct pcpu_metrics_server_options){ .size = sizes[i], .address = "127.0.0.1" };
		errno = 0;
		cr_assert_null(pcpu_metrics_serve_opts(&o), "size %zu", sizes[i]);
		cr_assert_eq(errno, EINVAL, "size %zu: %s", sizes[i], strerror(errno));
	}
	EXPECT_EINVAL("a name, not an address", .address = "localhost");
	EXPECT_EINVAL("port above 65535", .port = 65536);
	for (i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++)
		EXPECT_EINVAL(bad_paths[i], .path = bad_paths[i]);
	EXPECT_EINVAL("certificate alone", .tls_cert_pem = "c");
	EXPECT_EINVAL("key alone", .tls_key_pem = "k");
	EXPECT_EINVAL("user alone", .basic_auth_user = "u");
	EXPECT_EINVAL("password alone", .basic_auth_password = "p");
	for (i = 0; i < sizeof(bad_users) / sizeof(bad_users[0]); i++)
		EXPECT_EINVAL(bad_users[i], .basic_auth_user = bad_users[i],
			      .basic_auth_password = "p");
	EXPECT_EINVAL("password of 256 bytes", .basic_auth_user = "u",
		      .basic_auth_password = long_cred);
	/* a bad option beside a TLS pair: EINVAL before any TLS question */
	EXPECT_EINVAL("bad path with TLS", .path = "x", .tls_cert_pem = "c", .tls_key_pem = "k");
#undef EXPECT_EINVAL
}

PCPU_TEST(metrics_serve, a_later_field_set_or_a_huge_size_is_e2big)
{
	struct {
		struct pcpu_metrics_server_options o;
		unsigned char later[64];
	} big;

	memset(&big, 0, sizeof(big));
	big.o.size = sizeof(big);
	big.o.address = "127.0.0.1";
	big.later[63] = 1; /* the last byte: every byte past ours is read */
	errno = 0;
	cr_assert_null(pcpu_metrics_serve_opts(&big.o));
	cr_assert_eq(errno, E2BIG, "%s", strerror(errno));
	big.later[63] = 0;
	big.later[0] = 1;
	errno = 0;
	cr_assert_null(pcpu_metrics_serve_opts(&big.o));
	cr_assert_eq(errno, E2BIG, "%s", strerror(errno));
	/* a size no version will have, as an uninitialised one might be */
	big.later[0] = 0;
	big.o.size = 4097;
	errno = 0;
	cr_assert_null(pcpu_metrics_serve_opts(&big.o));
	cr_assert_eq(errno, E2BIG, "%s", strerror(errno));
}

/* The options are ABI: 0.4's fields where 0.4 put them (LP64 and ILP32). */
PCPU_TEST(metrics_serve, options_layout_is_frozen)
{
	const size_t p = sizeof(void *);

	cr_assert_eq(offsetof(struct pcpu_metrics_server_options, size), 0);
	cr_assert_eq(offsetof(struct pcpu_metrics_server_options, address), p);
	cr_assert_eq(offsetof(struct pcpu_metrics_server_options, port), 2 * p);
	cr_assert_eq(offsetof(struct pcpu_metrics_server_options, path), 3 * p);
	cr_assert_eq(offsetof(struct pcpu_metrics_server_options, tls_cert_pem), 4 * p);
	cr_assert_eq(offsetof(struct pcpu_metrics_server_options, tls_key_pem), 5 * p);
	cr_assert_eq(offsetof(struct pcpu_metrics_server_options, basic_auth_user), 6 * p);
	cr_assert_eq(offsetof(struct pcpu_metrics_server_options, basic_auth_password), 7 * p);
	cr_assert_eq(offsetof(struct pcpu_metrics_server_options, registry), 8 * p);
	/* appended in 0.5 */
	cr_assert_eq(offsetof(struct pcpu_metrics_server_options, max_in_flight), 9 * p);
	cr_assert_eq(offsetof(struct pcpu_metrics_server_options, timeout_ms), 9 * p + 4);
	cr_assert_eq(offsetof(struct pcpu_metrics_server_options, instrument), 9 * p + 8);
	cr_assert_eq(sizeof(struct pcpu_metrics_server_options), 10 * p + 8);
}
