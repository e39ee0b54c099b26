/* SPDX-License-Identifier: MIT */
/*
 * A whole HTTP request to the built-in server (pcpu_metrics_serve(),
 * <percpu/metrics_http.h>), over loopback TCP. The server is started once,
 * on 127.0.0.1 and a port of its choosing, with two metrics registered.
 * Input: a flag byte (bit 0: half-close the connection once the request is
 * sent), then the raw bytes of the request (request line, headers, body;
 * several, pipelined, or none whole).
 *
 * Checks: whatever comes back (nothing is allowed: a request not whole
 * yet is waited for, one the server cannot read may be closed on) is a
 * well-formed HTTP/1.x response: a status line with a code in 200..599
 * (after any 100 Continue), the end of the headers, and a body as long as
 * its Content-Length; a 200 is the exposition (a body starting with
 * "# HELP" or "# TYPE", delimited MetricFamily messages when Content-Type
 * says protobuf, or gzip's magic when Content-Encoding says so).
 * Then a plain valid GET, on a connection kept alive between inputs, must
 * still get its 200 within seconds: no input can kill or wedge the server.
 *
 * Each input waits for an answer at most WAIT_MS; a connection kept open
 * that has had no answer for QUIET_MS is half-closed then, so that a
 * request not whole (which the server waits on) costs no more. Our end
 * of each connection is closed with a reset (SO_LINGER 0), so that
 * thousands of connections a second leave no TIME_WAIT behind to run out
 * of ports.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/metrics.h>
#include <percpu/metrics_http.h>

#include "fuzz.h"

#define WAIT_MS 100
#define QUIET_MS 10
#define ALIVE_MS 10000
#define MAX_REPLY (1u << 20)

static struct pcpu_counter requests, in_flight;
static unsigned int port;
static int alive_fd = -1; /* the plain GETs' connection, kept alive */
/* lives until the process ends, never stopped: held here, not leaked */
static struct pcpu_metrics_server *srv;

static const char plain_get[] = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int dial(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct linger lin = { .l_onoff = 1, .l_linger = 0 };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	FUZZ_CHECK(fd >= 0, "socket: %s", strerror(errno));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	FUZZ_CHECK(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0, "connect to port %u: %s",
		   port, strerror(errno));
	return fd;
}

/* Sends what it can of @p (the server may close or reset before the end). */
static void send_all(int fd, const uint8_t *p, size_t n, int64_t deadline)
{
	while (n) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t w;

		if (poll(&pfd, 1, (int)(deadline - now_ms())) <= 0)
			return;
		w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EAGAIN)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* A response parsed so far: complete once its body is all in. */
struct reply {
	const char *at; /* its first byte in the buffer */
	int status;
	size_t head;    /* bytes of status line and headers, the blank line included */
	long length;    /* Content-Length; -1 if none */
	bool gzip;
	bool protobuf;  /* Content-Type: Prometheus's protobuf format */
};

/* The value of header @name in the headers at @h (@n bytes), or NULL. */
static const char *header(const char *h, size_t n, const char *name, size_t *len)
{
	size_t k = strlen(name);

	for (const char *line = memmem(h, n, "\r\n", 2); line && line + 2 < h + n;
	     line = memmem(line + 2, (size_t)(h + n - line - 2), "\r\n", 2)) {
		const char *v = line + 2, *end;

		if ((size_t)(h + n - v) > k && strncasecmp(v, name, k) == 0 && v[k] == ':') {
			v += k + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			end = memmem(v, (size_t)(h + n - v), "\r\n", 2);
			*len = (size_t)(end - v);
			return v;
		}
	}
	return NULL;
}

/*
 * The response at @p (@n bytes so far) into @r: 1 if its head is whole, 0
 * if not yet, failing a check if what is there cannot start a response.
 */
static int parse_head(const char *p, size_t n, struct reply *r)
{
	const char *end, *v;
	size_t len;
	char *stop;

	/* "HTTP/1.x NNN " as far as it has come */
	static const char pattern[] = "HTTP/1.d ddd";

	for (size_t i = 0; i < n && i < sizeof(pattern) - 1; i++) {
		bool ok = pattern[i] == 'd' ? p[i] >= '0' && p[i] <= '9' : p[i] == pattern[i];

		FUZZ_CHECK(ok, "not an HTTP/1.x status line: %.*s", (int)(n < 40 ? n : 40), p);
	}
	end = memmem(p, n, "\r\n\r\n", 4);
	if (!end)
		return 0;
	FUZZ_CHECK(end - p >= 12 && (p[12] == ' ' || p[12] == '\r'), "status line: %.*s",
		   (int)(end - p), p);
	memset(r, 0, sizeof(*r));
	r->at = p;
	r->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	r->head = (size_t)(end - p) + 4;
	r->length = -1;
	v = header(p, r->head - 2, "Content-Length", &len);
	if (v) {
		r->length = strtol(v, &stop, 10);
		FUZZ_CHECK(stop == v + len && r->length >= 0, "Content-Length: %.*s", (int)len, v);
	}
	v = header(p, r->head - 2, "Content-Encoding", &len);
	r->gzip = v && len == 4 && strncasecmp(v, "gzip", 4) == 0;
	v = header(p, r->head - 2, "Content-Type", &len);
	r->protobuf = v && len >= 31 && strncasecmp(v, "application/vnd.google.protobuf", 31) == 0;
	return 1;
}

/*
 * Reads the answer on @fd to a request (@head: to HEAD, which gets no
 * body) until it is whole, the connection ends, or @deadline. Checks what
 * came; returns the final status, 0 if none came whole.
 */
static int read_reply(int fd, bool head, bool maybe_head, int64_t deadline, bool *eof)
{
	static char buf[MAX_REPLY + 1];
	size_t n = 0, off = 0;
	struct reply r;

	*eof = false;
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - now_ms();
		ssize_t got;

		/* what is in: 100 Continue then the response, each checked */
		while (n > off && parse_head(buf + off, n - off, &r)) {
			size_t body = r.status == 100 || r.status == 204 || r.status == 304 || head ?
					      0 : (size_t)(r.length < 0 ? 0 : r.length);

			FUZZ_CHECK(r.status == 100 || (r.status >= 200 && r.status <= 599),
				   "status %d", r.status);
			if (r.status == 100) {
				off += r.head;
				continue;
			}
			if (r.length < 0 && !head && !*eof)
				break; /* a body to the end of the connection */
			if (n - off - r.head < body) {
				/*
				 * none of it, from a server that read a HEAD where
				 * the input has one at a line's start that the
				 * model above did not see as the request line
				 */
				if (*eof && maybe_head && n - off - r.head == 0)
					return r.status;
				FUZZ_CHECK(!*eof, "a body cut short: %zu of %ld bytes",
					   n - off - r.head, r.length);
				break;
			}
			if (r.status == 200 && !head && n - off - r.head > 0) {
				const char *b = r.at + r.head;

				if (r.gzip)
					FUZZ_CHECK((uint8_t)b[0] == 0x1f && (uint8_t)b[1] == 0x8b,
						   "a 200 gzip body without gzip's magic");
				else if (r.protobuf)
					FUZZ_CHECK(fuzz_protobuf_families((const uint8_t *)b,
									  body ? body : n - off - r.head),
						   "a 200 protobuf body that is no delimited stream");
				else
					FUZZ_CHECK(strncmp(b, "# HELP", 6) == 0 ||
						   strncmp(b, "# TYPE", 6) == 0,
						   "a 200 that is no exposition: %.40s", b);
			}
			return r.status;
		}
		if (*eof || n == MAX_REPLY || left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			break;
		got = recv(fd, buf + n, MAX_REPLY - n, 0);
		if (got <= 0) {
			*eof = true; /* the end, or a reset: then the last check */
			buf[n] = '\0';
			continue;
		}
		n += (size_t)got;
		buf[n] = '\0';
	}
	return 0;
}

/* Whether "HEAD " starts the input or follows a CR, LF or NUL in it. */
static bool has_head_line(const uint8_t *req, size_t n)
{
	for (size_t i = 0; i + 5 <= n; i++)
		if ((i == 0 || req[i - 1] == '\r' || req[i - 1] == '\n' || req[i - 1] == '\0') &&
		    memcmp(req + i, "HEAD ", 5) == 0)
			return true;
	return false;
}

/* A plain GET on the kept-alive connection gets its 200: the server lives. */
static void check_alive(void)
{
	bool eof;
	int status = 0;

	/* the server may have closed it since (idle 10 s): one retry, fresh */
	for (int tries = 0; tries < 2 && status != 200; tries++) {
		if (alive_fd < 0)
			alive_fd = dial();
		send_all(alive_fd, (const uint8_t *)plain_get, sizeof(plain_get) - 1,
			 now_ms() + ALIVE_MS);
		status = read_reply(alive_fd, false, false, now_ms() + ALIVE_MS, &eof);
		if (status != 200 || eof) {
			close(alive_fd);
			alive_fd = -1;
		}
	}
	FUZZ_CHECK(status == 200, "the server no longer answers a plain GET: status %d", status);
}

static void stop_server(void)
{
	pcpu_metrics_server_stop(srv);
	srv = NULL;
}

static void start(void)
{
	FUZZ_CHECK(pcpu_counter_init(&requests, 0) == 0, "init");
	FUZZ_CHECK(pcpu_counter_init(&in_flight, 0) == 0, "init");
	FUZZ_CHECK(pcpu_counter_register(&requests, &(struct pcpu_metric_desc){
					 .name = "fuzz_requests",
					 .kind = PCPU_METRIC_COUNTER,
					 .help = "Requests sent.",
					 .labels = PCPU_LABELS("path", "/\"\\\n") }) == 0,
		   "register");
	FUZZ_CHECK(pcpu_counter_register(&in_flight, &(struct pcpu_metric_desc){
					 .name = "fuzz_in_flight",
					 .kind = PCPU_METRIC_GAUGE,
					 .help = "Requests in flight." }) == 0,
		   "register");
	srv = pcpu_metrics_serve("127.0.0.1", 0);
	FUZZ_CHECK(srv || errno == ENOTSUP, "serve: %s", strerror(errno));
	/* stopped at exit, so that a leak check sees nothing of it */
	atexit(stop_server);
	port = pcpu_metrics_server_port(srv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	const uint8_t *req = data + (size ? 1 : 0);
	size_t n = size ? size - 1 : 0, skip = 0;
	bool half_close = size && (data[0] & 1), eof;
	int64_t deadline;
	int fd;

	if (!ready) {
		start();
		ready = true;
	}
	if (!port) /* built without libmicrohttpd: nothing to fuzz */
		return 0;
	pcpu_counter_add(&requests, 1);
	pcpu_counter_add(&in_flight, 1);
	fd = dial();
	deadline = now_ms() + WAIT_MS;
	send_all(fd, req, n, deadline);
	/*
	 * kept open, a request not whole yet is waited for by the server: once
	 * nothing has come for QUIET_MS, half-close after all, so that such an
	 * input costs that and not all of WAIT_MS
	 */
	if (!half_close) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		half_close = poll(&pfd, 1, QUIET_MS) == 0;
	}
	if (half_close)
		shutdown(fd, SHUT_WR);
	/*
	 * the server skips the lines before a request line that are empty as
	 * C strings: blank ones, and those that start with a NUL byte (a line
	 * ends at the first CR or LF)
	 */
	while (skip < n) {
		if (req[skip] == '\r' || req[skip] == '\n')
			skip++;
		else if (req[skip] == '\0')
			while (skip < n && req[skip] != '\r' && req[skip] != '\n')
				skip++;
		else
			break;
	}
	read_reply(fd, n - skip >= 5 && memcmp(req + skip, "HEAD ", 5) == 0, has_head_line(req, n),
		   deadline, &eof);
	close(fd);
	pcpu_counter_add(&in_flight, -1);
	check_alive();
	return 0;
}
