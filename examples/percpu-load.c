/* SPDX-License-Identifier: MIT */
/*
 * percpu-load: a load client for percpu-httpd with plain sockets. Threads
 * take requests from one shared budget, so exactly -n GETs are sent in all;
 * each thread keeps one HTTP/1.1 keep-alive connection (or, with -0, sends
 * HTTP/1.0 and opens a connection per request). A request succeeds when its
 * response has the expected status and its whole body (Content-Length, or
 * up to the close for HTTP/1.0) was read.
 *
 * Exit status: 0 when every request succeeded, 1 when one failed, 2 on bad
 * usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "example.h"

#define MAX_THREADS 1024
/* requests in all, at most: 2^40, or what an unsigned long holds */
#define MAX_REQUESTS \
	((uint64_t)ULONG_MAX < UINT64_C(1) << 40 ? (uint64_t)ULONG_MAX : UINT64_C(1) << 40)
#define BUF_SIZE 16384

struct options {
	const char *host;
	const char *port;
	const char *path;
	unsigned long requests;
	unsigned long threads;
	int status;     /* expected status */
	bool http10;
};

struct worker {
	_Alignas(64) pthread_t tid;
	unsigned long ok, failed;
	char err[160];  /* the first failure */
};

static struct options opt = {
	.host = "127.0.0.1",
	.port = "8080",
	.path = "/",
	.requests = 1000,
	.threads = 2,
	.status = 200,
};
static struct addrinfo *target;
static atomic_ulong next_request;

static void usage(FILE *f)
{
	fprintf(f, "usage: percpu-load [-H HOST] [-p PORT] [-u PATH] [-n REQUESTS] [-c THREADS]\n"
		   "                   [-s STATUS] [-0]\n"
		   "  -H HOST      server (default 127.0.0.1)\n"
		   "  -p PORT      port (default 8080)\n"
		   "  -u PATH      path to GET (default /)\n"
		   "  -n REQUESTS  requests in all (default 1000)\n"
		   "  -c THREADS   client threads, one connection each (default 2)\n"
		   "  -s STATUS    the status every response must have (default 200)\n"
		   "  -0           HTTP/1.0, a connection per request (default HTTP/1.1 keep-alive)\n");
}

/* records the first failure's message */
__attribute__((format(printf, 2, 3)))
static void fail(struct worker *w, const char *fmt, ...)
{
	va_list ap;

	if (w->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(w->err, sizeof(w->err), fmt, ap);
	va_end(ap);
}

static int connect_target(void)
{
	const struct addrinfo *ai;
	int fd, one = 1;

	for (ai = target; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return fd;
		}
		close(fd);
	}
	return -1;
}

static int send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The request, sent on @fd: 0, or -1 with w->err set. */
static int send_request(struct worker *w, int fd)
{
	char req[512];
	int n = snprintf(req, sizeof(req),
			 "GET %s HTTP/1.%c\r\nHost: %s:%s\r\nUser-Agent: percpu-load\r\n%s\r\n",
			 opt.path, opt.http10 ? '0' : '1', opt.host, opt.port,
			 opt.http10 ? "" : "Connection: keep-alive\r\n");

	if (n < 0 || (size_t)n >= sizeof(req)) {
		fail(w, "request line too long");
		return -1;
	}
	if (send_all(fd, req, (size_t)n) < 0) {
		fail(w, "send: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The response's head from @fd into @buf (BUF_SIZE bytes), cut at the
 * blank line that ends it, and what came after it: its length with that
 * line, the bytes read in *@have; 0 with w->err set.
 */
static size_t read_head(struct worker *w, int fd, char *buf, size_t *have)
{
	char *eoh;

	*have = 0;
	for (;;) {
		ssize_t r;

		if (*have == BUF_SIZE - 1) {
			fail(w, "response head too long");
			return 0;
		}
		r = recv(fd, buf + *have, BUF_SIZE - 1 - *have, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fail(w, "connection %s before the response head",
			     r == 0 ? "closed" : strerror(errno));
			return 0;
		}
		*have += (size_t)r;
		buf[*have] = '\0';
		eoh = strstr(buf, "\r\n\r\n");
		if (eoh)
			break;
	}
	*eoh = '\0';
	return (size_t)(eoh - buf) + 4;
}

/*
 * The fields of @head after its status line: Content-Length into *@clen
 * (kept where there is none), Connection: close into *@conn_close.
 */
static void parse_fields(char *head, long long *clen, bool *conn_close)
{
	char *line = strstr(head, "\r\n"), *next;

	for (; line; line = next) {
		line += 2;
		next = strstr(line, "\r\n");
		if (next)
			*next = '\0';
		if (strncasecmp(line, "Content-Length:", 15) == 0)
			*clen = strtoll(line + 15, NULL, 10);
		else if (strncasecmp(line, "Connection:", 11) == 0 && strcasestr(line, "close"))
			*conn_close = true;
	}
}

/*
 * The rest of a body of @clen bytes (-1: until the connection closes), of
 * which @body_have came with the head: 0, or -1 with w->err set.
 */
static int read_body(struct worker *w, int fd, size_t body_have, long long clen)
{
	char buf[BUF_SIZE];

	while (clen < 0 || (long long)body_have < clen) {
		ssize_t r = recv(fd, buf, sizeof(buf), 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fail(w, "recv: %s", strerror(errno));
			return -1;
		}
		if (r == 0) {
			if (clen < 0)
				break;
			fail(w, "body cut short");
			return -1;
		}
		body_have += (size_t)r;
	}
	if (clen >= 0 && (long long)body_have != clen) {
		fail(w, "body longer than its Content-Length");
		return -1;
	}
	return 0;
}

/*
 * One request on fd; 0 on success, -1 with w->err set. *reusable says
 * whether the connection may carry another request.
 */
static int do_request(struct worker *w, int fd, bool *reusable)
{
	char buf[BUF_SIZE];
	size_t have, hdr_len;
	long long clen = -1;
	bool conn_close = opt.http10;
	int status;

	*reusable = false;
	if (send_request(w, fd) < 0)
		return -1;
	hdr_len = read_head(w, fd, buf, &have);
	if (!hdr_len)
		return -1;
	if (sscanf(buf, "HTTP/1.%*c %d", &status) != 1) {
		fail(w, "bad status line: %.60s", buf);
		return -1;
	}
	parse_fields(buf, &clen, &conn_close);
	if (clen < 0 && !conn_close) {
		fail(w, "no Content-Length on a kept-alive connection");
		return -1;
	}
	if (read_body(w, fd, have - hdr_len, clen) < 0)
		return -1;
	if (status != opt.status) {
		fail(w, "status %d, expected %d", status, opt.status);
		return -1;
	}
	*reusable = !conn_close;
	return 0;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	bool reusable = false;
	int fd = -1;

	while (atomic_fetch_add(&next_request, 1) < opt.requests) {
		if (fd < 0) {
			fd = connect_target();
			if (fd < 0) {
				fail(w, "connect: %s", strerror(errno));
				w->failed++;
				continue;
			}
		}
		if (do_request(w, fd, &reusable) == 0)
			w->ok++;
		else
			w->failed++;
		if (!reusable) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* The command line into opt: -1 to run, else main's status (-h's 0, a usage error's 2). */
static int parse_args(int argc, char **argv)
{
	uint64_t v;
	int c;

	while ((c = getopt(argc, argv, "H:p:u:n:c:s:0h")) != -1) {
		switch (c) {
		case 'H':
			opt.host = optarg;
			break;
		case 'p':
			opt.port = optarg;
			break;
		case 'u':
			if (optarg[0] != '/' || strpbrk(optarg, " \r\n"))
				goto bad_usage;
			opt.path = optarg;
			break;
		case 'n':
			if (!example_parse_u64(optarg, 0, MAX_REQUESTS, &v))
				goto bad_usage;
			opt.requests = (unsigned long)v;
			break;
		case 'c':
			if (!example_parse_u64(optarg, 1, MAX_THREADS, &v))
				goto bad_usage;
			opt.threads = (unsigned long)v;
			break;
		case 's':
			if (!example_parse_u64(optarg, 100, 599, &v))
				goto bad_usage;
			opt.status = (int)v;
			break;
		case '0':
			opt.http10 = true;
			break;
		default:
			return example_other_option(c, usage);
		}
	}
	if (optind == argc)
		return -1;
bad_usage:
	usage(stderr);
	return 2;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct worker *workers;
	unsigned long ok = 0, failed = 0, i;
	double t0, t;
	int rc = parse_args(argc, argv);

	if (rc >= 0)
		return rc;
	rc = getaddrinfo(opt.host, opt.port, &hints, &target);
	if (rc != 0) {
		fprintf(stderr, "percpu-load: %s:%s: %s\n", opt.host, opt.port, gai_strerror(rc));
		return 1;
	}
	workers = calloc(opt.threads, sizeof(*workers));
	if (!workers) {
		perror("percpu-load: calloc");
		return 1;
	}
	t0 = example_now();
	for (i = 0; i < opt.threads; i++) {
		rc = pthread_create(&workers[i].tid, NULL, work, &workers[i]);
		if (rc != 0) {
			fprintf(stderr, "percpu-load: pthread_create: %s\n", strerror(rc));
			return 1;
		}
	}
	for (i = 0; i < opt.threads; i++) {
		pthread_join(workers[i].tid, NULL);
		ok += workers[i].ok;
		failed += workers[i].failed;
		if (workers[i].err[0])
			fprintf(stderr, "percpu-load: thread %lu: %lu failed, first: %s\n", i,
				workers[i].failed, workers[i].err);
	}
	t = example_now() - t0;
	printf("%lu requests to http://%s:%s%s (HTTP/1.%c, %lu threads): %lu ok, %lu failed, "
	       "%.3f s, %.0f req/s\n",
	       opt.requests, opt.host, opt.port, opt.path, opt.http10 ? '0' : '1', opt.threads,
	       ok, failed, t, t > 0 ? (double)ok / t : 0.0);
	freeaddrinfo(target);
	free(workers);
	return failed == 0 && ok == opt.requests ? 0 : 1;
}
