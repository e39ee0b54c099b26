/* SPDX-License-Identifier: MIT */
/*
 * percpu-httpd: a small multi-threaded HTTP server on libmicrohttpd,
 * instrumented with percpu metrics. It serves a page at / and the
 * exposition at /metrics through pcpu_metrics_respond(): the format its
 * Accept header prefers (Prometheus text 0.0.4 or OpenMetrics 1.0.0),
 * gzipped when Accept-Encoding allows.
 *
 * What it counts, exactly:
 *  - httpd_requests_total{method, code} (a label family: a child per
 *    method and status, made on first use): every request except the
 *    scrapes of /metrics, counted when its response is queued, so a client
 *    that has read its response is already counted. Only / answers 200, so
 *    httpd_requests_total{method="GET",code="200"} is the number of GET /.
 *  - httpd_scrapes_total: requests for /metrics, counted before the
 *    exposition is written (a scrape sees itself).
 *  - httpd_response_body_bytes_total: body bytes of every response queued.
 *  - httpd_connections: connections open now (MHD's connection notifier).
 *  - httpd_request_duration_seconds: a histogram of the time from a
 *    request's first callback to its completion, observed in ns and exposed
 *    in seconds.
 *  - the standard process_* metrics (pcpu_metrics_process_collector()).
 *
 * Exit status: 0 after a clean shutdown (SIGINT, SIGTERM), 1 on an error,
 * 2 on bad usage.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include <percpu/counter.h>
#include <percpu/family.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/metrics_http.h>

#include "example.h"
#if MHD_VERSION < 0x00097002
typedef int mhd_result;
#else
typedef enum MHD_Result mhd_result;
#endif

#define MAX_THREADS 1024
#define NS_PER_SEC INT64_C(1000000000)

/* ---- the metrics ---- */

PCPU_COUNTER_DEFINE(scrapes, "httpd_scrapes", "Requests for /metrics, this one included");
PCPU_COUNTER_DEFINE(body_bytes, "httpd_response_body_bytes",
		    "Body bytes of the responses queued");
PCPU_GAUGE_DEFINE(connections, "httpd_connections", "Client connections open now");

/* requests by method and status: labels, not names */
static const char *const request_labels[] = { "method", "code", NULL };
static struct pcpu_family *requests;

/*
 * Counts a request: a lookup of the child for its labels (lock-free), then
 * the child's inline add. Methods other than GET and HEAD count as "other",
 * so that clients cannot grow the family without bound.
 */
static void count_request(const char *method, const char *code)
{
	const char *values[] = { method, code, NULL };
	struct pcpu_counter *child;

	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		values[0] = "other";
	child = pcpu_family_get(requests, values);
	if (child)
		pcpu_counter_add(child, 1);
}

static struct pcpu_histogram *latency;

/* request latency bounds, in ns: 50 us to 1 s */
static const int64_t latency_bounds[] = {
	50000, 100000, 250000, 500000, 1000000, 2500000, 5000000,
	10000000, 25000000, 50000000, 100000000, 250000000, 1000000000,
};

/* ---- the pages ---- */

static const char index_page[] =
	"<!DOCTYPE html>\n<html><head><title>percpu-httpd</title></head>\n"
	"<body><h1>percpu-httpd</h1>\n"
	"<p>Counted with per-CPU counters; see <a href=\"/metrics\">/metrics</a>.</p>\n"
	"</body></html>\n";
static const char not_found_page[] = "not found\n";
static const char not_allowed_page[] = "method not allowed\n";

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

/* queues a response and counts its body bytes; the item is counted by the caller */
static mhd_result queue(struct MHD_Connection *conn, unsigned int status,
			struct MHD_Response *resp, size_t body_len)
{
	mhd_result ret;

	if (!resp)
		return MHD_NO;
	pcpu_counter_add(&body_bytes, (int64_t)body_len);
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static struct MHD_Response *static_response(const char *body, size_t len, const char *type)
{
	struct MHD_Response *resp;

	resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_PERSISTENT);
	if (resp)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	return resp;
}

static mhd_result serve_metrics(struct MHD_Connection *conn)
{
	struct pcpu_metrics_response res;
	struct MHD_Response *resp;

	pcpu_counter_add(&scrapes, 1);
	if (pcpu_metrics_respond(
		    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT),
		    MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						MHD_HTTP_HEADER_ACCEPT_ENCODING),
		    &res) != 0) {
		resp = static_response("exposition failed\n", 18, "text/plain");
		return queue(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, resp, 18);
	}
	resp = MHD_create_response_from_buffer(res.length, res.body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		pcpu_metrics_response_free(&res);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, res.content_type);
	if (res.content_encoding)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING,
					res.content_encoding);
	return queue(conn, MHD_HTTP_OK, resp, res.length);
}

static mhd_result on_request(void *cls, struct MHD_Connection *conn, const char *url,
			     const char *method, const char *version, const char *upload_data,
			     size_t *upload_data_size, void **req_cls)
{
	bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
	bool head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
	struct MHD_Response *resp;
	int64_t *start;

	(void)cls;
	(void)version;
	(void)upload_data;
	if (!get && !head) {
		/* at once, its body unread: libmicrohttpd closes the connection */
		count_request(method, "405");
		resp = static_response(not_allowed_page, sizeof(not_allowed_page) - 1,
				       "text/plain");
		if (resp)
			MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
		return queue(conn, MHD_HTTP_METHOD_NOT_ALLOWED, resp,
			     sizeof(not_allowed_page) - 1);
	}
	if (!*req_cls) {
		/*
		 * first call: headers only; the start time lives until completion.
		 * Answer at the last call: a response queued now would make
		 * libmicrohttpd close a keep-alive connection after it.
		 */
		start = malloc(sizeof(*start));
		if (!start)
			return MHD_NO;
		*start = now_ns();
		*req_cls = start;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* a GET with a body: ignored */
		return MHD_YES;
	}
	if (strcmp(url, "/metrics") == 0)
		return serve_metrics(conn);
	if (strcmp(url, "/") == 0) {
		count_request(method, "200");
		resp = static_response(index_page, sizeof(index_page) - 1, "text/html");
		return queue(conn, MHD_HTTP_OK, resp, head ? 0 : sizeof(index_page) - 1);
	}
	count_request(method, "404");
	resp = static_response(not_found_page, sizeof(not_found_page) - 1, "text/plain");
	return queue(conn, MHD_HTTP_NOT_FOUND, resp, head ? 0 : sizeof(not_found_page) - 1);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode code)
{
	int64_t *start = *req_cls;

	(void)cls;
	(void)conn;
	if (!start)
		return;
	if (code == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		pcpu_histogram_observe(latency, now_ns() - *start);
	free(start);
	*req_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
			  enum MHD_ConnectionNotificationCode code)
{
	(void)cls;
	(void)conn;
	(void)socket_ctx;
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		pcpu_counter_add(&connections, 1);
	else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
		pcpu_counter_add(&connections, -1);
}

/* ---- setup ---- */

static void usage(FILE *f)
{
	fprintf(f, "usage: percpu-httpd [-a ADDR] [-p PORT] [-t THREADS]\n"
		   "  -a ADDR     IPv4 or IPv6 address to listen on (default 127.0.0.1)\n"
		   "  -p PORT     TCP port (default 8080; 0: pick a free one)\n"
		   "  -t THREADS  server threads (default: one per online CPU)\n"
		   "Serves / and /metrics; prints 'listening on ADDR:PORT' once ready;\n"
		   "stops cleanly on SIGINT or SIGTERM.\n");
}

static int create_metrics(void)
{
	static const struct pcpu_family_desc desc = {
		.name = "httpd_requests",
		.help = "Requests answered, /metrics excepted",
		.kind = PCPU_METRIC_COUNTER,
		.label_names = request_labels,
		.max_children = 16,
	};
	static const struct pcpu_histogram_desc hdesc = {
		.name = "httpd_request_duration_seconds",
		.help = "Time from a request's arrival to its completion",
		.unit = "seconds",
		.bounds = latency_bounds,
		.nr_bounds = sizeof(latency_bounds) / sizeof(latency_bounds[0]),
		.scale = NS_PER_SEC,
	};

	requests = pcpu_family_create(&desc);
	if (!requests) {
		fprintf(stderr, "percpu-httpd: pcpu_family_create: %s\n", strerror(errno));
		return -1;
	}
	/* process_cpu_seconds_total, process_resident_memory_bytes, ... */
	if (pcpu_metrics_collector_add(pcpu_metrics_process_collector, NULL) != 0) {
		fprintf(stderr, "percpu-httpd: pcpu_metrics_collector_add failed\n");
		return -1;
	}
	latency = pcpu_histogram_create(&hdesc);
	if (!latency) {
		fprintf(stderr, "percpu-httpd: pcpu_histogram_create: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * @addr (IPv4 or IPv6) and @port into @ss, and @addr as "listening on"
 * shows it into @shown: false if it is no IP address (said).
 */
static bool parse_address(const char *addr, uint64_t port, struct sockaddr_storage *ss,
			  char *shown, size_t size)
{
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		((struct sockaddr_in *)ss)->sin_family = AF_INET;
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
		snprintf(shown, size, "%s", addr);
	} else if (inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
		snprintf(shown, size, "[%s]", addr);
	} else {
		fprintf(stderr, "percpu-httpd: not an IP address: %s\n", addr);
		return false;
	}
	return true;
}

/*
 * SIGINT and SIGTERM (@sigs) blocked before the server starts: MHD's
 * threads inherit this mask, so only main takes them, by sigwait().
 */
static void block_stop_signals(sigset_t *sigs)
{
	sigemptyset(sigs);
	sigaddset(sigs, SIGINT);
	sigaddset(sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* The server on @ss (@port) with a pool of @threads; NULL if it cannot listen. */
static struct MHD_Daemon *start_server(struct sockaddr_storage *ss, uint64_t port,
				       uint64_t threads)
{
	return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
					(ss->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				(uint16_t)port, NULL, NULL, on_request, NULL,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)ss,
				MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)threads,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
				MHD_OPTION_CONNECTION_TIMEOUT, 30u,
				MHD_OPTION_END);
}

/* Serves until SIGINT or SIGTERM (@sigs), then stops @d and says what it answered. */
static void serve_until_stopped(struct MHD_Daemon *d, const sigset_t *sigs)
{
	int sig;

	do {
		if (sigwait(sigs, &sig) != 0)
			break;
	} while (sig != SIGINT && sig != SIGTERM);
	MHD_stop_daemon(d);
	printf("stopped: %" PRId64 " GET / answered, %" PRId64 " scrapes\n",
	       pcpu_counter_sum(pcpu_family_get(requests, (const char *const[]){ "GET", "200",
										 NULL })),
	       pcpu_counter_sum(&scrapes));
}

int main(int argc, char **argv)
{
	const char *addr = "127.0.0.1";
	uint64_t port = 8080, threads;
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	struct MHD_Daemon *d;
	sigset_t sigs;
	char shown[INET6_ADDRSTRLEN + 2];
	int opt, ret = 1;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	threads = ncpu > 0 ? (uint64_t)ncpu : 1;
	while ((opt = getopt(argc, argv, "a:p:t:h")) != -1) {
		switch (opt) {
		case 'a':
			addr = optarg;
			break;
		case 'p':
			if (!example_parse_u64(optarg, 0, 65535, &port))
				goto bad_usage;
			break;
		case 't':
			if (!example_parse_u64(optarg, 1, MAX_THREADS, &threads))
				goto bad_usage;
			break;
		default:
			return example_other_option(opt, usage);
		}
	}
	if (optind != argc || !parse_address(addr, port, &ss, shown, sizeof(shown)))
		goto bad_usage;
	if (create_metrics() < 0)
		goto out;
	block_stop_signals(&sigs);
	d = start_server(&ss, port, threads);
	if (!d) {
		fprintf(stderr, "percpu-httpd: cannot listen on %s:%" PRIu64 "\n", shown, port);
		goto out;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	if (info && info->port)
		port = info->port;
	printf("listening on %s:%" PRIu64 "\n", shown, port);
	fflush(stdout);
	serve_until_stopped(d, &sigs);
	ret = 0;
out:
	if (latency)
		pcpu_histogram_destroy(latency);
	pcpu_family_destroy(requests);
	return ret;

bad_usage:
	usage(stderr);
	return 2;
}
