/* SPDX-License-Identifier: MIT */
/*
 * pcpu_metrics_push() (<percpu/metrics_http.h>).
 *
 * Always: the options' rules (EINVAL, E2BIG); without libcurl, ENOTSUP.
 * With libcurl, against a listener of this test (a thread that records one
 * request and answers what the test says): the request line and headers
 * byte for byte (method, the group's path with its base64url and percent
 * encodings, Content-Type, Authorization), a 503's body as the message,
 * a refused connection and a timeout.
 *
 * Against a real Pushgateway, where check-push.sh started one (its URL in
 * PCPU_TEST_PUSHGATEWAY, the credentials its web config asks in
 * PCPU_TEST_PUSHGATEWAY_USER and _PASSWORD; skipped otherwise): a pushed
 * group's exact values in the gateway's /metrics, in text and protobuf;
 * PUT replaces, POST merges, DELETE removes one group and leaves another;
 * a grouping value with '/' stored as that value; 401 without or with
 * wrong credentials, 400 for metrics the gateway refuses, 404 for a URL
 * that is not a gateway's, each with the gateway's message.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/metrics_http.h>
#include <percpu/metrics_registry.h>

#ifdef PCPU_TEST_HAVE_CURL
#include <curl/curl.h>
#endif

#define OPTS(...) ((struct pcpu_metrics_push_options){ .size = sizeof(struct pcpu_metrics_push_options), __VA_ARGS__ })

static char message[512];

Test(push, invalid_options)
{
	struct pcpu_metrics_push_options ok = OPTS(.url = "http://127.0.0.1:1", .job = "j");
	struct {
		struct pcpu_metrics_push_options o;
		const char *why;
	} bad[] = {
		{ OPTS(.url = NULL, .job = "j"), "no url" },
		{ OPTS(.url = "ftp://h:1", .job = "j"), "not http" },
		{ OPTS(.url = "http://", .job = "j"), "no host" },
		{ OPTS(.url = "http://h:1/a b", .job = "j"), "a space" },
		{ OPTS(.url = "http://h:1", .job = NULL), "no job" },
		{ OPTS(.url = "http://h:1", .job = ""), "an empty job" },
		{ OPTS(.url = "http://h:1", .job = "j", .grouping = (const char *const[]){ "job", "x", NULL }),
		  "job among the grouping labels" },
		{ OPTS(.url = "http://h:1", .job = "j", .grouping = (const char *const[]){ "a-b", "x", NULL }),
		  "a bad label name" },
		{ OPTS(.url = "http://h:1", .job = "j",
		       .grouping = (const char *const[]){ "a", "x", "a", "y", NULL }), "a label twice" },
		{ OPTS(.url = "http://h:1", .job = "j", .grouping = (const char *const[]){ "a", NULL }),
		  "an odd list" },
		{ OPTS(.url = "http://h:1", .job = "j", .format = PCPU_METRICS_OPENMETRICS), "OpenMetrics" },
		{ OPTS(.url = "http://h:1", .job = "j", .basic_auth_user = "u"), "a user alone" },
		{ OPTS(.url = "http://h:1", .job = "j", .basic_auth_password = "p"), "a password alone" },
		{ OPTS(.url = "http://h:1", .job = "j", .basic_auth_user = "u:v", .basic_auth_password = "p"),
		  "a user with ':'" },
		{ { .size = 8, .url = "http://h:1", .job = "j" }, "a size below 0.5's" },
	};
	struct {
		struct pcpu_metrics_push_options o;
		char later[8];
	} big = { .o = ok, .later = { 1 } };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(pcpu_metrics_push(&bad[i].o, PCPU_METRICS_PUSH_PUT, message,
					       sizeof(message)), -EINVAL, "%s", bad[i].why);
		cr_expect_str_eq(message, "invalid options", "%s", bad[i].why);
	}
	cr_expect_eq(pcpu_metrics_push(NULL, PCPU_METRICS_PUSH_PUT, NULL, 0), -EINVAL);
	cr_expect_eq(pcpu_metrics_push(&ok, (enum pcpu_metrics_push_method)3, NULL, 0), -EINVAL);
	big.o.size = sizeof(big);
	cr_expect_eq(pcpu_metrics_push(&big.o, PCPU_METRICS_PUSH_PUT, NULL, 0), -E2BIG);
	/* a larger struct of zeros past ours is this version's */
	big.later[0] = 0;
	cr_expect_neq(pcpu_metrics_push(&big.o, PCPU_METRICS_PUSH_DELETE, NULL, 0), -E2BIG);
}

#ifndef PCPU_TEST_HAVE_CURL

Test(push, without_libcurl)
{
	struct pcpu_metrics_push_options o = OPTS(.url = "http://127.0.0.1:1", .job = "j");

	cr_expect_eq(pcpu_metrics_push(&o, PCPU_METRICS_PUSH_PUT, message, sizeof(message)),
		     -ENOTSUP);
	cr_expect_str_eq(message, "libpercpu-metrics was built without libcurl");
}

#else /* PCPU_TEST_HAVE_CURL */

/* A listener of one request on a loopback port: what it read, what it answers. */
struct listener {
	int fd;
	unsigned int port;
	const char *answer; /* NULL: read the request, never answer */
	char request[4096];
	pthread_t thread;
};

static void *listen_once(void *arg)
{
	struct listener *l = arg;
	size_t n = 0;
	ssize_t r;
	int c = accept(l->fd, NULL, NULL);

	if (c < 0)
		return NULL;
	/* the headers, and the body where it came with them */
	while (n + 1 < sizeof(l->request) && !strstr(l->request, "\r\n\r\n")) {
		r = read(c, l->request + n, sizeof(l->request) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		l->request[n] = '\0';
	}
	if (l->answer) {
		cr_assert_eq(write(c, l->answer, strlen(l->answer)), (ssize_t)strlen(l->answer));
		shutdown(c, SHUT_WR);
	}
	/* until the client closes: no reset of an unread body */
	while (read(c, (char[256]){ 0 }, 256) > 0)
		;
	close(c);
	return NULL;
}

static void listener_start(struct listener *l, const char *answer)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	memset(l, 0, sizeof(*l));
	l->answer = answer;
	l->fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(l->fd, 0);
	cr_assert_eq(bind(l->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(l->fd, 1), 0);
	cr_assert_eq(getsockname(l->fd, (struct sockaddr *)&a, &len), 0);
	l->port = ntohs(a.sin_port);
	cr_assert_eq(pthread_create(&l->thread, NULL, listen_once, l), 0);
}

static void listener_join(struct listener *l)
{
	pthread_join(l->thread, NULL);
	close(l->fd);
}

static struct pcpu_counter pushed;

static void register_pushed(void)
{
	cr_assert_eq(pcpu_counter_init(&pushed, 0), 0);
	cr_assert_eq(pcpu_counter_register(&pushed, &(struct pcpu_metric_desc){
						       .name = "push_jobs",
						       .kind = PCPU_METRIC_COUNTER,
						       .help = "Jobs done." }), 0);
	pcpu_counter_add(&pushed, 42);
}

Test(push, request_on_the_wire, .init = register_pushed)
{
	static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	static const char line[] = "POST /gw/metrics/job@base64/bmlnaHRseS9kYg==/instance/a%20b%C3%A9"
				   "/shard@base64/=/path@base64/L3Zhci94 HTTP/1.1\r\n";
	struct listener l;
	char url[64];
	struct pcpu_metrics_push_options o;

	listener_start(&l, answer);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/gw/", l.port);
	o = OPTS(.url = url, .job = "nightly/db",
		 .grouping = (const char *const[]){ "instance", "a b\xc3\xa9", "shard", "", "path",
						    "/var/x", NULL },
		 .basic_auth_user = "alice", .basic_auth_password = "s3cret");
	message[0] = 'x';
	cr_assert_eq(pcpu_metrics_push(&o, PCPU_METRICS_PUSH_POST, message, sizeof(message)), 0);
	listener_join(&l);
	cr_expect_str_eq(message, "");
	/* job and "/var/x" have a '/': base64url ("bmlnaHRseS9kYg==", "L3Zhci94");
	 * "" is "="; the rest percent-encoded (UTF-8 bytes) */
	cr_expect(strncmp(l.request, line, strlen(line)) == 0, "%s", l.request);
	/* RFC 7617: base64("alice:s3cret") */
	cr_expect(strstr(l.request, "\r\nAuthorization: Basic YWxpY2U6czNjcmV0\r\n"), "%s",
		  l.request);
	cr_expect(strstr(l.request, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
		  "%s", l.request);
	cr_expect(strstr(l.request, "\r\n\r\n# HELP push_jobs_total Jobs done.\n"
				    "# TYPE push_jobs_total counter\npush_jobs_total 42\n"),
		  "%s", l.request);
}

Test(push, delete_has_no_body, .init = register_pushed)
{
	static const char answer[] = "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
	struct listener l;
	char url[64];

	listener_start(&l, answer);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", l.port);
	cr_assert_eq(pcpu_metrics_push(&OPTS(.url = url, .job = "j", .format = PCPU_METRICS_PROTOBUF),
				       PCPU_METRICS_PUSH_DELETE, NULL, 0), 0);
	listener_join(&l);
	cr_expect(strncmp(l.request, "DELETE /metrics/job/j HTTP/1.1\r\n", 32) == 0, "%s",
		  l.request);
	cr_expect(!strstr(l.request, "Authorization:"), "%s", l.request);
	cr_expect(!strstr(l.request, "push_jobs"), "%s", l.request);
}

Test(push, server_error_with_its_message)
{
	static const char answer[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 18\r\n"
				     "Connection: close\r\n\r\ntoo busy\nto push\r\n";
	struct listener l;
	char url[64], small[12];

	listener_start(&l, answer);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", l.port);
	cr_expect_eq(pcpu_metrics_push(&OPTS(.url = url, .job = "j"), PCPU_METRICS_PUSH_PUT,
				       message, sizeof(message)), -EIO);
	listener_join(&l);
	/* one line: the newline inside as '?', the last ones left out */
	cr_expect_str_eq(message, "HTTP 503: too busy?to push");

	listener_start(&l, answer);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", l.port);
	cr_expect_eq(pcpu_metrics_push(&OPTS(.url = url, .job = "j"), PCPU_METRICS_PUSH_PUT,
				       small, sizeof(small)), -EIO);
	listener_join(&l);
	cr_expect_str_eq(small, "HTTP 503: t", "truncated to the buffer, NUL included");
}

Test(push, refused_and_timed_out)
{
	struct listener l;
	char url[64];
	int fd;

	/* a port bound but not listening: refused */
	listener_start(&l, NULL);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	{
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(a);

		cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
		cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
		snprintf(url, sizeof(url), "http://127.0.0.1:%u", ntohs(a.sin_port));
	}
	cr_expect_eq(pcpu_metrics_push(&OPTS(.url = url, .job = "j"), PCPU_METRICS_PUSH_PUT,
				       message, sizeof(message)), -ECONNREFUSED);
	cr_expect_neq(message[0], '\0', "curl's reason");
	close(fd);

	/* a listener that never answers: the timeout */
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", l.port);
	cr_expect_eq(pcpu_metrics_push(&OPTS(.url = url, .job = "j", .timeout_ms = 300),
				       PCPU_METRICS_PUSH_PUT, message, sizeof(message)), -ETIMEDOUT);
	listener_join(&l);
}

/* The real gateway, where check-push.sh started one. */

static const char *gateway;
static const char *user, *password;

static void need_gateway(void)
{
	gateway = getenv("PCPU_TEST_PUSHGATEWAY");
	user = getenv("PCPU_TEST_PUSHGATEWAY_USER");
	password = getenv("PCPU_TEST_PUSHGATEWAY_PASSWORD");
	if (!gateway || !user || !password)
		cr_skip_test("no Pushgateway: check-push.sh starts one (test push-gateway)");
}

static size_t append(char *data, size_t size, size_t nmemb, void *arg)
{
	fwrite(data, size, nmemb, arg);
	return nmemb;
}

/* The gateway's /metrics (malloc'ed). */
static char *gateway_metrics(void)
{
	char url[256], *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	CURL *c = curl_easy_init();
	long status = 0;

	cr_assert(out && c);
	snprintf(url, sizeof(url), "%s/metrics", gateway);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_USERNAME, user);
	curl_easy_setopt(c, CURLOPT_PASSWORD, password);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	cr_assert_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	fclose(out);
	cr_assert_eq(status, 200, "%s", text);
	return text;
}

/* Whether the gateway's /metrics has the line of format @fmt as a whole line. */
static bool __attribute__((format(printf, 1, 2))) gateway_has(const char *fmt, ...)
{
	char *text = gateway_metrics(), *line, *want;
	bool found;
	va_list ap;

	va_start(ap, fmt);
	cr_assert(vasprintf(&line, fmt, ap) > 0);
	va_end(ap);
	cr_assert(asprintf(&want, "\n%s\n", line) > 0);
	free(line);
	found = strstr(text, want) != NULL;
	free(want);
	free(text);
	return found;
}

/*
 * Whether the line of format @fmt is gone from the gateway's /metrics
 * within 5 s: the gateway answers a DELETE (202 Accepted) before it applies it.
 */
static bool __attribute__((format(printf, 1, 2))) gateway_drops(const char *fmt, ...)
{
	char *line;
	va_list ap;
	bool gone = false;

	va_start(ap, fmt);
	cr_assert(vasprintf(&line, fmt, ap) > 0);
	va_end(ap);
	for (int i = 0; i < 500 && !gone; i++) {
		gone = !gateway_has("%s", line);
		if (!gone)
			usleep(10000);
	}
	free(line);
	return gone;
}

/* A counter of value @v named @name in registry @r. */
static void counter_in(struct pcpu_metrics_registry *r, struct pcpu_counter *c, const char *name,
		       int64_t v, const char *const *labels)
{
	cr_assert_eq(pcpu_counter_init(c, 0), 0);
	cr_assert_eq(pcpu_counter_register(c, &(struct pcpu_metric_desc){
						      .name = name, .kind = PCPU_METRIC_COUNTER,
						      .help = "Test.", .labels = labels,
						      .registry = r }), 0);
	pcpu_counter_add(c, v);
}

static int push_to(struct pcpu_metrics_registry *r, const char *job, const char *const *grouping,
		   enum pcpu_metrics_format f, enum pcpu_metrics_push_method m)
{
	return pcpu_metrics_push(&OPTS(.url = gateway, .job = job, .grouping = grouping,
				       .format = f, .basic_auth_user = user,
				       .basic_auth_password = password, .registry = r),
				 m, message, sizeof(message));
}

static void put_post_delete(enum pcpu_metrics_format f, const char *job)
{
	static const char *const group[] = { "instance", "host/1", NULL };
	static const char *const other[] = { "instance", "host/2", NULL };
	struct pcpu_metrics_registry *ab = pcpu_metrics_registry_create(NULL),
				     *a = pcpu_metrics_registry_create(NULL),
				     *c = pcpu_metrics_registry_create(NULL);
	struct pcpu_counter ab_a, ab_b, a_a, c_c;

	cr_assert(ab && a && c);
	counter_in(ab, &ab_a, "push_a", 1, NULL);
	counter_in(ab, &ab_b, "push_b", 2, NULL);
	counter_in(a, &a_a, "push_a", 5, NULL);
	counter_in(c, &c_c, "push_c", 1000007, NULL);

	cr_assert_eq(push_to(ab, job, group, f, PCPU_METRICS_PUSH_PUT), 0, "%s", message);
	cr_assert_eq(push_to(ab, job, other, f, PCPU_METRICS_PUSH_PUT), 0, "%s", message);
	cr_expect_str_eq(message, "");
	cr_expect(gateway_has("push_a_total{instance=\"host/1\",job=\"%s\"} 1", job));
	cr_expect(gateway_has("push_b_total{instance=\"host/1\",job=\"%s\"} 2", job));
	/* PUT replaces the whole group */
	cr_assert_eq(push_to(a, job, group, f, PCPU_METRICS_PUSH_PUT), 0, "%s", message);
	cr_expect(gateway_has("push_a_total{instance=\"host/1\",job=\"%s\"} 5", job));
	cr_expect(!gateway_has("push_b_total{instance=\"host/1\",job=\"%s\"} 2", job));
	/* POST replaces the metrics of its names only */
	cr_assert_eq(push_to(c, job, group, f, PCPU_METRICS_PUSH_POST), 0, "%s", message);
	cr_expect(gateway_has("push_a_total{instance=\"host/1\",job=\"%s\"} 5", job));
	cr_expect(gateway_has("push_c_total{instance=\"host/1\",job=\"%s\"} 1.000007e+06", job));
	/* DELETE removes the group, and only it */
	cr_assert_eq(push_to(NULL, job, group, f, PCPU_METRICS_PUSH_DELETE), 0, "%s", message);
	cr_expect(gateway_drops("push_a_total{instance=\"host/1\",job=\"%s\"} 5", job));
	cr_expect(gateway_drops("push_c_total{instance=\"host/1\",job=\"%s\"} 1.000007e+06", job));
	cr_expect(gateway_has("push_b_total{instance=\"host/2\",job=\"%s\"} 2", job));
	cr_assert_eq(push_to(NULL, job, other, f, PCPU_METRICS_PUSH_DELETE), 0, "%s", message);
	cr_expect(gateway_drops("push_b_total{instance=\"host/2\",job=\"%s\"} 2", job));

	pcpu_counter_destroy(&ab_a);
	pcpu_counter_destroy(&ab_b);
	pcpu_counter_destroy(&a_a);
	pcpu_counter_destroy(&c_c);
	pcpu_metrics_registry_destroy(ab);
	pcpu_metrics_registry_destroy(a);
	pcpu_metrics_registry_destroy(c);
}

Test(gateway, put_post_delete_text, .init = need_gateway)
{
	put_post_delete(PCPU_METRICS_PROMETHEUS, "pj-text");
}

Test(gateway, put_post_delete_protobuf, .init = need_gateway)
{
	put_post_delete(PCPU_METRICS_PROTOBUF, "pj-protobuf");
}

Test(gateway, refusals, .init = need_gateway)
{
	struct pcpu_metrics_registry *r = pcpu_metrics_registry_create(NULL),
				     *r2 = pcpu_metrics_registry_create(NULL);
	static struct pcpu_gauge kind = PCPU_GAUGE_INIT(3);
	struct pcpu_histogram *h;
	char url[256];

	cr_assert(r && r2);
	cr_expect_eq(pcpu_metrics_push(&OPTS(.url = gateway, .job = "pj"), PCPU_METRICS_PUSH_PUT,
				       message, sizeof(message)), -EACCES);
	cr_expect(strncmp(message, "HTTP 401: ", 10) == 0, "%s", message);
	cr_expect_eq(pcpu_metrics_push(&OPTS(.url = gateway, .job = "pj", .basic_auth_user = user,
					     .basic_auth_password = "wrong"),
				       PCPU_METRICS_PUSH_PUT, message, sizeof(message)), -EACCES);
	cr_expect(strncmp(message, "HTTP 401: ", 10) == 0, "%s", message);

	/*
	 * The same name a gauge in one group and a histogram in another: the
	 * gateway refuses the second push (its check that every group still
	 * gathers together), and keeps the first
	 */
	cr_assert_eq(pcpu_gauge_register(&kind, &(struct pcpu_metric_desc){
						     .name = "push_kind", .kind = PCPU_METRIC_GAUGE,
						     .help = "Test.", .registry = r }), 0);
	h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = "push_kind", .help = "Test.", .bounds = (const int64_t[]){ 1 },
		.nr_bounds = 1, .registry = r2 });
	cr_assert_not_null(h);
	cr_assert_eq(push_to(r, "pj-gauge", NULL, PCPU_METRICS_PROMETHEUS, PCPU_METRICS_PUSH_PUT), 0,
		     "%s", message);
	cr_expect_eq(push_to(r2, "pj-histogram", NULL, PCPU_METRICS_PROMETHEUS,
			     PCPU_METRICS_PUSH_PUT), -EBADMSG, "%s", message);
	cr_expect(strncmp(message, "HTTP 400: ", 10) == 0 && strstr(message, "push_kind") &&
			  message[strlen(message) - 1] != '?', "%s", message);
	cr_log_info("the gateway: %s", message);
	cr_expect(gateway_has("push_kind{instance=\"\",job=\"pj-gauge\"} 3"));
	cr_expect(!gateway_has("push_kind_count{instance=\"\",job=\"pj-histogram\"} 0"));
	cr_expect_eq(push_to(NULL, "pj-gauge", NULL, PCPU_METRICS_PROMETHEUS,
			     PCPU_METRICS_PUSH_DELETE), 0, "%s", message);

	snprintf(url, sizeof(url), "%s/not-a-gateway", gateway);
	cr_expect_eq(pcpu_metrics_push(&OPTS(.url = url, .job = "pj", .basic_auth_user = user,
					     .basic_auth_password = password),
				       PCPU_METRICS_PUSH_PUT, message, sizeof(message)), -ENOENT);
	cr_expect(strncmp(message, "HTTP 404: ", 10) == 0, "%s", message);
	pcpu_gauge_unregister(&kind);
	pcpu_histogram_destroy(h);
	pcpu_metrics_registry_destroy(r);
	pcpu_metrics_registry_destroy(r2);
}

#endif /* PCPU_TEST_HAVE_CURL */
