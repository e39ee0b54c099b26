/* SPDX-License-Identifier: MIT */
/*
 * The /metrics server (pcpu_metrics_serve(), <percpu/metrics_http.h>),
 * through real HTTP over a socket: a free port picked for port 0, exact
 * counts against a shadow tally, the format by Accept, gzip, HEAD, 404 and
 * 405, a failing exposition, stop and restart on the same port, bad
 * arguments and a port in use. Built without libmicrohttpd, the server is
 * refused with ENOTSUP, and bad arguments are EINVAL all the same.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/metrics.h>
#include <percpu/metrics_http.h>

#include "helpers.h"
#include "pcpu_test.h"

#ifdef PCPU_TEST_HAVE_ZLIB
#include <zlib.h>
#endif

#ifdef PCPU_TEST_HAVE_MICROHTTPD

/* Prometheus 2.42's Accept, and 3.x's (protobuf first, which we do not write) */
static const char prom2_accept[] =
	"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
	"q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
static const char prom3_accept[] =
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

/*
 * Sends @request (whole, HTTP/1.0 or Connection: close) to @addr:@port and
 * reads the response to the end of the connection into @r.
 */
static void exchange(const char *addr, unsigned int port, const char *request, struct reply *r)
{
	size_t cap = 4096, sent = 0, n = strlen(request);
	int fd = dial(addr, port);
	char *end;

	cr_assert_geq(fd, 0, "connect to %s port %u: %s", addr, port, strerror(-fd));
	while (sent < n) {
		ssize_t w = send(fd, request + sent, n - sent, MSG_NOSIGNAL);

		cr_assert_gt(w, 0, "send: %s", strerror(errno));
		sent += (size_t)w;
	}
	memset(r, 0, sizeof(*r));
	r->raw = malloc(cap);
	for (;;) {
		ssize_t got;

		if (r->len + 1 == cap)
			r->raw = realloc(r->raw, cap *= 2);
		cr_assert_not_null(r->raw);
		got = recv(fd, r->raw + r->len, cap - 1 - r->len, 0);
		cr_assert_geq(got, 0, "recv: %s", strerror(errno));
		if (got == 0)
			break;
		r->len += (size_t)got;
	}
	close(fd);
	r->raw[r->len] = '\0';
	cr_assert_eq(sscanf(r->raw, "HTTP/1.%*d %d ", &r->status), 1, "a status line: %s", r->raw);
	end = strstr(r->raw, "\r\n\r\n");
	cr_assert_not_null(end, "the end of the headers: %s", r->raw);
	r->body = end + 4;
	r->body_len = r->len - (size_t)(r->body - r->raw);
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
	};
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);

	cr_assert_not_null(srv, "pcpu_metrics_serve: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool om = strncmp(cases[i].type, "application/", 12) == 0;
		struct reply r;

		request(pcpu_metrics_server_port(srv), "GET", "/metrics", cases[i].accept, NULL, &r);
		cr_assert_eq(r.status, 200);
		assert_header(&r, "Content-Type", cases[i].type);
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

#else /* no libmicrohttpd */

Test(metrics_serve, without_libmicrohttpd_serving_is_enotsup)
{
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
