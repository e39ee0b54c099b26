/* SPDX-License-Identifier: MIT */
/*
 * A small /metrics server (<percpu/metrics_http.h>) on libmicrohttpd, for
 * daemons that have no HTTP server of their own: what pcpu_metrics_respond()
 * answers, from one internal thread.
 *
 * We make the listening socket ourselves and hand it to libmicrohttpd:
 * MHD_start_daemon() says only NULL when it cannot bind, and a caller
 * deserves EADDRINUSE or EACCES. SO_REUSEADDR lets a server restart while
 * its old connections sit in TIME_WAIT; on Linux it never lets two
 * sockets listen on one port. libmicrohttpd closes the socket at stop.
 *
 * One thread polls every connection; since 0.5 each scrape is exposed in a
 * thread of its own (scrape_start() below), its connection suspended
 * meanwhile, so that two scrapers are served at once and a slow collector
 * holds back only its own scrape. The limit on scrapes in flight bounds
 * those threads, as it bounded the one before (0.4 exposed in the polling
 * thread: one scrape at a time, and every connection waited for it). The
 * walk of the registered metrics is under the one metrics lock
 * (metrics_list.c), so two scrapes overlap in their collectors (outside
 * it), compression and sending, not in that walk.
 *
 * Options (pcpu_metrics_serve_opts()) are checked here, with or without
 * libmicrohttpd. TLS is libmicrohttpd's (GnuTLS): the key and certificate
 * are used up by MHD_start_daemon(), which says only NULL when GnuTLS
 * refuses them, so a failed start with TLS is tried again as a daemon
 * without socket or thread to tell a bad key (EINVAL) from want of memory.
 * Basic authentication is ours, a few lines: decoded without allocating
 * and compared in constant time, the same whatever libmicrohttpd's version.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <percpu/metrics_http.h>
#include <percpu/metrics_registry.h>

#include "list/list_internal.h"

/*
 * The socket address for @address (NULL: IPv6's any, all zeros) and @port,
 * its length; 0 if they are no numeric IP address and TCP port. Checked
 * with or without libmicrohttpd, so that bad arguments are EINVAL in both.
 */
static socklen_t parse_address(const char *address, unsigned int port,
			       struct sockaddr_storage *ss)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (port > 65535)
		return 0;
	if (!address || inet_pton(AF_INET6, address, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		return sizeof(*in6);
	}
	if (inet_pton(AF_INET, address, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		return sizeof(*in4);
	}
	return 0;
}

/* 0.4's options, the smallest a caller may pass */
#define OPTIONS_SIZE_0_4 \
	(offsetof(struct pcpu_metrics_server_options, registry) + sizeof(void *))
/* a larger size is a caller's mistake, not a later version's struct */
#define OPTIONS_SIZE_MAX 4096u
/* the longest path, user and password (bytes, without the NUL) */
#define PATH_MAX_LEN 255u
#define CREDENTIAL_MAX_LEN 255u
/* scrapes in flight when the options say 0 */
#define DEFAULT_MAX_IN_FLIGHT 16u

/*
 * Copies the caller's options into @opts, zero-filled past the caller's
 * size; 0 or -errno. A later version's field that is set is refused
 * rather than ignored (as openat2() does): it may ask for security.
 */
static int copy_options(const struct pcpu_metrics_server_options *user,
			struct pcpu_metrics_server_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	if (!user || user->size < OPTIONS_SIZE_0_4)
		return -EINVAL;
	if (user->size > OPTIONS_SIZE_MAX)
		return -E2BIG;
	for (size_t i = sizeof(*opts); i < user->size; i++)
		if (((const unsigned char *)user)[i])
			return -E2BIG;
	memcpy(opts, user, user->size < sizeof(*opts) ? user->size : sizeof(*opts));
	return 0;
}

static bool path_ok(const char *path)
{
	size_t n = strlen(path);

	if (path[0] != '/' || n > PATH_MAX_LEN)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)path[i];

		if (c <= ' ' || c > '~' || strchr("?#%", c))
			return false;
	}
	return true;
}

/* The rules of <percpu/metrics_http.h> on each option; 0 or -EINVAL. */
static int check_options(const struct pcpu_metrics_server_options *opts)
{
	struct sockaddr_storage ss;

	if (!parse_address(opts->address, opts->port, &ss))
		return -EINVAL;
	if (opts->path && !path_ok(opts->path))
		return -EINVAL;
	if (!opts->tls_cert_pem != !opts->tls_key_pem)
		return -EINVAL;
	if (!opts->basic_auth_user != !opts->basic_auth_password)
		return -EINVAL;
	if (opts->basic_auth_user &&
	    (!opts->basic_auth_user[0] || strchr(opts->basic_auth_user, ':') ||
	     strlen(opts->basic_auth_user) > CREDENTIAL_MAX_LEN ||
	     strlen(opts->basic_auth_password) > CREDENTIAL_MAX_LEN))
		return -EINVAL;
	return 0;
}

PCPU_EXPORT struct pcpu_metrics_server *pcpu_metrics_serve(const char *address,
							   unsigned int port)
{
	struct pcpu_metrics_server_options opts = {
		.size = sizeof(opts), .address = address, .port = port
	};

	return pcpu_metrics_serve_opts(&opts);
}

#ifndef PCPU_HAVE_MICROHTTPD

PCPU_EXPORT struct pcpu_metrics_server *
pcpu_metrics_serve_opts(const struct pcpu_metrics_server_options *user)
{
	struct pcpu_metrics_server_options opts;
	int err = copy_options(user, &opts);

	if (!err)
		err = check_options(&opts);
	errno = err ? -err : ENOTSUP;
	return NULL;
}

PCPU_EXPORT unsigned int pcpu_metrics_server_port(const struct pcpu_metrics_server *srv)
{
	(void)srv;
	return 0;
}

PCPU_EXPORT void pcpu_metrics_server_stop(struct pcpu_metrics_server *srv)
{
	(void)srv;
}

#else /* PCPU_HAVE_MICROHTTPD */

#include <microhttpd.h>

#if MHD_VERSION < 0x00097002
typedef int mhd_result;
#else
typedef enum MHD_Result mhd_result;
#endif

/* an idle client connection is closed after this many seconds */
#define IDLE_TIMEOUT_S 10u
/*
 * Connections open at once; more are closed as they come. Idle or slow
 * ones cost a pool each (CONNECTION_MEMORY) and nothing per poll with
 * epoll, so the limit is far above what any local process can pin idle
 * short of the descriptor limit: 64 let 70 idle connections hold a scrape
 * for 10 s (issue 24). One address may hold half, so that a remote
 * scraper still gets in beside a local crowd.
 */
#define MAX_CONNECTIONS 2048u
#define MAX_PER_ADDRESS (MAX_CONNECTIONS / 2)
/* a request's headers and a connection's buffers: a scrape's are < 1 KiB */
#define CONNECTION_MEMORY (16u * 1024)
#define LISTEN_BACKLOG 1024

struct pcpu_metrics_server {
	struct MHD_Daemon *mhd;
	unsigned int port;
	char path[PATH_MAX_LEN + 1];
	struct pcpu_metrics_registry *registry; /* NULL: the process's */
	/* basic auth: zero-padded, so that a comparison reads them whole */
	bool auth;
	size_t user_len, password_len;
	char user[CREDENTIAL_MAX_LEN + 1];
	char password[CREDENTIAL_MAX_LEN + 1];
	/* 0.5: the limits, and what the instrumentation counts */
	unsigned int max_in_flight, timeout_ms;
	bool instrument;
	pthread_mutex_t lock;
	pthread_cond_t quiet;   /* threads went to 0 */
	unsigned int in_flight; /* expositions running, timed out ones included */
	unsigned int threads;   /* scrape and exposition threads alive: stop waits */
	bool stopping;
	uint64_t answered[3];   /* scrapes answered 200, 500, 503 (atomics) */
};

/* the codes that the instrumentation counts, as promhttp initialises them */
static const unsigned int counted_codes[3] = { 200, 500, 503 };

/*
 * A scrape between its request and its response: the polling thread
 * suspends the connection and a thread of its own (scrape_thread()) fills
 * @status and @body, then resumes it; the polling thread answers it
 * (answer_scrape()) and frees it when the request ends (request_done()).
 */
struct scrape {
	struct pcpu_metrics_server *srv;
	struct MHD_Connection *conn;
	char *accept, *accept_encoding; /* copies, or NULL: absent */
	unsigned int status;            /* 0 until done */
	struct pcpu_metrics_response res;
	char *text;                     /* a 500's or 503's body, malloc()ed */
};

/*
 * An exposition under a timeout: the scrape's thread waits for it until
 * the deadline, then leaves it to finish alone. Freed by the last of the
 * two (@refs).
 */
struct exposition {
	struct pcpu_metrics_server *srv;
	char *accept, *accept_encoding; /* copies: the scrape may go first */
	pthread_mutex_t lock;
	pthread_cond_t done_cv;
	bool done;
	int refs;
	int err;
	struct pcpu_metrics_response res;
	char *text;
};

static const char not_found[] = "not found\n";
static const char not_allowed[] = "method not allowed\n";
static const char unauthorized[] = "unauthorized\n";
static const char failed[] = "exposition failed\n";
static const char too_many[] = "too many scrapes in flight\n";

static mhd_result queue_text(struct MHD_Connection *conn, unsigned int status, const char *body,
			     size_t len)
{
	struct MHD_Response *resp;
	mhd_result ret;

	resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Basic realm=\"metrics\"");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/*
 * A 500's body, saying why: a failed definition (metrics_register.c; the
 * process's registry, @process, only), else the collector that stopped the
 * exposition and the metric it had refused, with its labels and the reason
 * (as the Go client's body names the metric), else @err. Called in the
 * thread that exposed: the collectors' record of a refusal is per thread.
 * NULL: no memory.
 */
static char *failure_text(bool process, int err)
{
	const char *what = NULL;
	char *body, collector[640];

	if (!process || !pcpu_metrics_define_failure(&what))
		what = pcpu_collectors_failure(collector, sizeof(collector));
	if (asprintf(&body, "exposition failed: %s\n", what ? what : strerror(-err)) < 0)
		return NULL;
	return body;
}

/* Counts a scrape answered @status, for the instrumentation. */
static void count_answer(struct pcpu_metrics_server *srv, unsigned int status)
{
	for (size_t i = 0; i < sizeof(counted_codes) / sizeof(counted_codes[0]); i++)
		if (counted_codes[i] == status)
			__atomic_fetch_add(&srv->answered[i], 1, __ATOMIC_RELAXED);
}

/* A 500 or 503 with @text (malloc()ed, used up; NULL: @fallback). */
static mhd_result queue_error(struct MHD_Connection *conn, unsigned int status, char *text,
			      const char *fallback)
{
	struct MHD_Response *resp;
	mhd_result ret;

	if (!text)
		return queue_text(conn, status, fallback, strlen(fallback));
	resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* The exposition in @res, used up. */
static mhd_result queue_metrics(struct MHD_Connection *conn, struct pcpu_metrics_response *res)
{
	struct MHD_Response *resp;
	mhd_result ret;

	/* the body is malloc()ed: libmicrohttpd free()s it with the response */
	resp = MHD_create_response_from_buffer(res->length, res->body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		pcpu_metrics_response_free(res);
		return MHD_NO;
	}
	res->body = NULL;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, res->content_type);
	if (res->content_encoding)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING,
					res->content_encoding);
	/* the body depends on both: a cache must not serve one for another */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* A thread of the server's ends: the last thing it does with @srv. */
static void thread_exit(struct pcpu_metrics_server *srv, bool exposed)
{
	pthread_mutex_lock(&srv->lock);
	if (exposed)
		srv->in_flight--;
	if (--srv->threads == 0)
		pthread_cond_broadcast(&srv->quiet);
	pthread_mutex_unlock(&srv->lock);
}

/* Exposes into @res, or says why not in @text (NULL: no memory); the error. */
static int expose(const struct pcpu_metrics_server *srv, const char *accept,
		  const char *accept_encoding, struct pcpu_metrics_response *res, char **text)
{
	int err = pcpu_metrics_registry_respond(srv->registry, accept, accept_encoding, res);

	*text = err ? failure_text(!srv->registry, err) : NULL;
	return err;
}

static void exposition_put(struct exposition *e)
{
	int refs;

	pthread_mutex_lock(&e->lock);
	refs = --e->refs;
	pthread_mutex_unlock(&e->lock);
	if (refs)
		return;
	pcpu_metrics_response_free(&e->res);
	free(e->text);
	free(e->accept);
	free(e->accept_encoding);
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->done_cv);
	free(e);
}

/* An exposition under a timeout, in a thread of its own. */
static void *exposition_thread(void *arg)
{
	struct exposition *e = arg;
	struct pcpu_metrics_server *srv = e->srv;
	struct pcpu_metrics_response res;
	char *text;
	int err = expose(srv, e->accept, e->accept_encoding, &res, &text);

	pthread_mutex_lock(&e->lock);
	e->err = err;
	e->res = res;
	e->text = text;
	e->done = true;
	pthread_cond_signal(&e->done_cv);
	pthread_mutex_unlock(&e->lock);
	exposition_put(e);
	thread_exit(srv, true);
	return NULL;
}

static void deadline_after(struct timespec *ts, unsigned int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* An exposition for @sc's headers, held twice (the two threads); NULL: no memory. */
static struct exposition *exposition_new(const struct scrape *sc)
{
	struct exposition *e = calloc(1, sizeof(*e));
	pthread_condattr_t ca;

	if (!e)
		return NULL;
	pthread_mutex_init(&e->lock, NULL);
	/* the deadline is on the monotonic clock: a clock step changes nothing */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->done_cv, &ca);
	pthread_condattr_destroy(&ca);
	e->srv = sc->srv;
	e->refs = 1;
	e->accept = sc->accept ? strdup(sc->accept) : NULL;
	e->accept_encoding = sc->accept_encoding ? strdup(sc->accept_encoding) : NULL;
	if ((sc->accept && !e->accept) || (sc->accept_encoding && !e->accept_encoding)) {
		exposition_put(e);
		return NULL;
	}
	e->refs = 2;
	return e;
}

/*
 * Exposes for @sc in another thread and waits for it until the timeout;
 * 0 (@sc answered: its exposition, or 503 timed out, while the exposition
 * goes on, in flight, and frees itself), or -1: no thread or memory (@sc
 * not exposed, the exposition not counted).
 */
static int expose_timed(struct scrape *sc)
{
	struct pcpu_metrics_server *srv = sc->srv;
	struct exposition *e = exposition_new(sc);
	struct timespec deadline;
	pthread_t t;
	bool done;
	int err = 0;

	if (!e)
		return -1;
	pthread_mutex_lock(&srv->lock);
	srv->threads++;
	pthread_mutex_unlock(&srv->lock);
	if (pthread_create(&t, NULL, exposition_thread, e) != 0) {
		pthread_mutex_lock(&srv->lock);
		srv->threads--; /* this thread still runs: never 0 here */
		pthread_mutex_unlock(&srv->lock);
		e->refs = 1;
		exposition_put(e);
		return -1;
	}
	pthread_detach(t);
	deadline_after(&deadline, srv->timeout_ms);
	pthread_mutex_lock(&e->lock);
	while (!e->done && err != ETIMEDOUT)
		err = pthread_cond_timedwait(&e->done_cv, &e->lock, &deadline);
	done = e->done;
	if (done) {
		sc->res = e->res;
		sc->text = e->text;
		memset(&e->res, 0, sizeof(e->res));
		e->text = NULL;
		sc->status = e->err ? MHD_HTTP_INTERNAL_SERVER_ERROR : MHD_HTTP_OK;
	}
	pthread_mutex_unlock(&e->lock);
	if (!done) {
		sc->status = MHD_HTTP_SERVICE_UNAVAILABLE;
		if (asprintf(&sc->text, "scrape timed out after %u ms\n", srv->timeout_ms) < 0)
			sc->text = NULL;
	}
	exposition_put(e);
	return 0;
}

/* A scrape's thread: exposes, under the timeout if any, then resumes the connection. */
static void *scrape_thread(void *arg)
{
	struct scrape *sc = arg;
	struct pcpu_metrics_server *srv = sc->srv;
	bool exposed_here = true;

	if (srv->timeout_ms && expose_timed(sc) == 0) {
		exposed_here = false; /* the exposition's thread counts it out */
	} else {
		int err = expose(srv, sc->accept, sc->accept_encoding, &sc->res, &sc->text);

		sc->status = err ? MHD_HTTP_INTERNAL_SERVER_ERROR : MHD_HTTP_OK;
	}
	MHD_resume_connection(sc->conn);
	thread_exit(srv, exposed_here);
	return NULL;
}

static void scrape_free(struct scrape *sc)
{
	pcpu_metrics_response_free(&sc->res);
	free(sc->text);
	free(sc->accept);
	free(sc->accept_encoding);
	free(sc);
}

static char *header_copy(struct MHD_Connection *conn, const char *name, bool *failed_copy)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
	char *copy = v ? strdup(v) : NULL;

	if (v && !copy)
		*failed_copy = true;
	return copy;
}

/*
 * Starts a scrape: 503 beyond the limit (or while the server stops), else
 * the connection suspended and a thread to expose; in this thread where
 * none can be made (0.4's way). *@req_cls becomes the scrape.
 */
static mhd_result scrape_start(struct pcpu_metrics_server *srv, struct MHD_Connection *conn,
			       void **req_cls)
{
	struct scrape *sc;
	bool oom = false;
	pthread_t t;

	pthread_mutex_lock(&srv->lock);
	if (srv->stopping || srv->in_flight >= srv->max_in_flight) {
		pthread_mutex_unlock(&srv->lock);
		count_answer(srv, MHD_HTTP_SERVICE_UNAVAILABLE);
		return queue_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, too_many,
				  sizeof(too_many) - 1);
	}
	srv->in_flight++;
	srv->threads++;
	pthread_mutex_unlock(&srv->lock);
	sc = calloc(1, sizeof(*sc));
	if (sc) {
		sc->srv = srv;
		sc->conn = conn;
		sc->accept = header_copy(conn, MHD_HTTP_HEADER_ACCEPT, &oom);
		sc->accept_encoding = header_copy(conn, MHD_HTTP_HEADER_ACCEPT_ENCODING, &oom);
	}
	if (!sc || oom) {
		if (sc)
			scrape_free(sc);
		thread_exit(srv, true);
		return MHD_NO;
	}
	*req_cls = sc;
	MHD_suspend_connection(conn);
	if (pthread_create(&t, NULL, scrape_thread, sc) == 0)
		pthread_detach(t);
	else
		scrape_thread(sc); /* resumes it: answered at once */
	return MHD_YES;
}

/* The response to a scrape that its thread is done with. */
static mhd_result answer_scrape(struct scrape *sc, struct MHD_Connection *conn)
{
	unsigned int status = sc->status;
	char *text = sc->text;

	count_answer(sc->srv, status);
	sc->text = NULL;
	if (status == MHD_HTTP_OK)
		return queue_metrics(conn, &sc->res);
	return queue_error(conn, status, text, status == MHD_HTTP_SERVICE_UNAVAILABLE ?
			   "scrape timed out\n" : failed);
}

/*
 * Basic authentication (RFC 7617): "Basic" in any case, spaces, then
 * base64 (RFC 4648, padded) of user ':' password. A header longer than
 * credentials of the longest allowed lengths can be is refused unread.
 */
#define BASIC_B64_MAX (4 * ((2 * CREDENTIAL_MAX_LEN + 1 + 2) / 3))

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decodes @n bytes of padded base64 at @in into @out; its length, or -1. */
static long b64_decode(const char *in, size_t n, unsigned char *out)
{
	size_t len = 0;

	if (n == 0 || n % 4)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		bool last = i + 4 == n;

		for (int k = 0; k < 4; k++)
			v[k] = b64_value((unsigned char)in[i + k]);
		/* '=' only as the last one or two characters */
		if (last && in[i + 3] == '=') {
			v[3] = 0;
			if (in[i + 2] == '=')
				v[2] = 0;
		}
		if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0)
			return -1;
		out[len++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		if (!last || in[i + 2] != '=')
			out[len++] = (unsigned char)(v[1] << 4 | v[2] >> 2);
		if (!last || in[i + 3] != '=')
			out[len++] = (unsigned char)(v[2] << 6 | v[3]);
	}
	return (long)len;
}

/*
 * Non-zero if @given (@len bytes) is not @want (@want_len bytes, in a
 * zero-padded buffer of CREDENTIAL_MAX_LEN + 1): the time taken depends
 * on @len alone, which the client chose, never on where they differ.
 */
static unsigned int credential_differs(const unsigned char *given, size_t len,
				       const char *want, size_t want_len)
{
	unsigned char pad[CREDENTIAL_MAX_LEN + 1] = { 0 };
	unsigned int diff = len != want_len;

	memcpy(pad, given, len < sizeof(pad) ? len : sizeof(pad));
	for (size_t i = 0; i < sizeof(pad); i++)
		diff |= pad[i] ^ (unsigned char)want[i];
	explicit_bzero(pad, sizeof(pad));
	return diff;
}

static bool authorized(const struct pcpu_metrics_server *srv, struct MHD_Connection *conn)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);
	unsigned char plain[BASIC_B64_MAX];
	const unsigned char *colon = NULL;
	unsigned int diff = 1;
	long n = -1;

	if (!v || strncasecmp(v, "Basic ", 6) != 0)
		return false;
	for (v += 6; *v == ' '; v++)
		;
	if (strlen(v) <= BASIC_B64_MAX)
		n = b64_decode(v, strlen(v), plain);
	if (n >= 0)
		colon = memchr(plain, ':', (size_t)n);
	if (colon) {
		/* both compared whole: no early exit that tells the user was right */
		diff = credential_differs(plain, (size_t)(colon - plain), srv->user,
					  srv->user_len);
		diff |= credential_differs(colon + 1, (size_t)(plain + n - colon - 1),
					   srv->password, srv->password_len);
	}
	explicit_bzero(plain, sizeof(plain)); /* what the client sent, maybe the password */
	return diff == 0;
}

/*
 * Called when a request's headers are in, then for its body, then once at
 * its end: a response queued at the end keeps the connection alive for the
 * next scrape (libmicrohttpd closes one answered before). A request with a
 * body we would not read (a POST) is refused at once, and closed.
 */
static int headers_seen;

static mhd_result on_request(void *cls, struct MHD_Connection *conn, const char *url,
			     const char *method, const char *version, const char *upload_data,
			     size_t *upload_data_size, void **req_cls)
{
	struct pcpu_metrics_server *srv = cls;

	(void)version;
	(void)upload_data;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return queue_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, not_allowed,
				  sizeof(not_allowed) - 1);
	if (!*req_cls) {
		*req_cls = &headers_seen;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* a GET with a body: ignored */
		return MHD_YES;
	}
	if (*req_cls != &headers_seen)
		return answer_scrape(*req_cls, conn); /* resumed by its thread */
	if (srv->auth && !authorized(srv, conn))
		return queue_text(conn, MHD_HTTP_UNAUTHORIZED, unauthorized,
				  sizeof(unauthorized) - 1);
	if (strcmp(url, srv->path) != 0)
		return queue_text(conn, MHD_HTTP_NOT_FOUND, not_found, sizeof(not_found) - 1);
	return scrape_start(srv, conn, req_cls);
}

/* A request ends, answered or not: its scrape, if any, is freed. */
static void request_done(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	(void)toe;
	if (*req_cls && *req_cls != &headers_seen)
		scrape_free(*req_cls);
	*req_cls = NULL;
}

/* promhttp_metric_handler_requests_total and _in_flight (opts->instrument) */
static int instrumentation(int (*emit)(const struct pcpu_metric_sample *s, void *ctx), void *ctx,
			   void *arg)
{
	struct pcpu_metrics_server *srv = arg;
	struct pcpu_metric_sample s = {
		.name = "promhttp_metric_handler_requests",
		.help = "Total number of scrapes by HTTP status code.",
		.unit = "",
		.kind = PCPU_METRIC_COUNTER,
	};
	static const char *const no_labels[] = { NULL };
	char code[3][8];
	const char *labels[3][3];
	int err;

	for (size_t i = 0; i < 3; i++) {
		snprintf(code[i], sizeof(code[i]), "%u", counted_codes[i]);
		labels[i][0] = "code";
		labels[i][1] = code[i];
		labels[i][2] = NULL;
		s.labels = labels[i];
		s.value = (int64_t)__atomic_load_n(&srv->answered[i], __ATOMIC_RELAXED);
		err = emit(&s, ctx);
		if (err && err != -EEXIST && err != -EINVAL)
			return err; /* the output stopped */
	}
	pthread_mutex_lock(&srv->lock);
	s.value = srv->in_flight;
	pthread_mutex_unlock(&srv->lock);
	s.name = "promhttp_metric_handler_requests_in_flight";
	s.help = "Current number of scrapes being served.";
	s.kind = PCPU_METRIC_GAUGE;
	s.labels = no_labels;
	err = emit(&s, ctx);
	return err && err != -EEXIST && err != -EINVAL ? err : 0;
}

/* A listening socket on @address (NULL: every address) and @port, or -errno. */
static int listen_on(const char *address, unsigned int port, unsigned int *bound)
{
	struct sockaddr_storage ss;
	socklen_t len = parse_address(address, port, &ss);
	int fd, one = 1, zero = 0, err;

	if (!len)
		return -EINVAL;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 && !address && errno == EAFNOSUPPORT) {
		/* every address on a host without IPv6: IPv4's */
		struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;

		memset(&ss, 0, sizeof(ss));
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		len = sizeof(*in4);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	}
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* every address means IPv4 too, whatever net.ipv6.bindv6only says */
	if (!address && ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, LISTEN_BACKLOG) != 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
		err = -errno;
		close(fd);
		return err;
	}
	*bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
						  ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/*
 * One thread polling with epoll where libmicrohttpd has it: select()
 * cannot watch a descriptor above FD_SETSIZE, and poll() costs a pass
 * over every idle connection per event.
 */
static unsigned int server_flags(void)
{
	/* scrape threads suspend and resume their connections */
	if (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES)
		return MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
	return MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME;
}

/*
 * libmicrohttpd closes the socket it was given on most of the ways that
 * MHD_start_daemon() fails, not all (0.9.75 keeps it where epoll fails):
 * close @fd only if it still is the socket that @twin (a dup()) is, not a
 * descriptor that another thread opened since under the same number.
 */
static void close_if_still(int fd, int twin)
{
	struct stat a, b;

	if (fstat(fd, &a) == 0 && fstat(twin, &b) == 0 && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
		close(fd);
	close(twin);
}

/*
 * Why a start with TLS failed: GnuTLS refused the key or certificate
 * (-EINVAL) if a daemon without socket or thread, which needs nothing else,
 * fails too; want of memory or of a thread (-ENOMEM) if not.
 */
static int tls_failure(const struct pcpu_metrics_server_options *opts)
{
	struct MHD_Daemon *probe;

	/* no socket, so no request: on_request() never sees its NULL server */
	probe = MHD_start_daemon(MHD_USE_TLS | MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL,
				 on_request, NULL, MHD_OPTION_HTTPS_MEM_KEY, opts->tls_key_pem,
				 MHD_OPTION_HTTPS_MEM_CERT, opts->tls_cert_pem, MHD_OPTION_END);
	if (!probe)
		return -EINVAL;
	MHD_stop_daemon(probe);
	return -ENOMEM;
}

static struct MHD_Daemon *start(struct pcpu_metrics_server *srv,
				const struct pcpu_metrics_server_options *opts, int fd)
{
	struct MHD_OptionItem tls[] = {
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)opts->tls_key_pem },
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)opts->tls_cert_pem },
		{ MHD_OPTION_END, 0, NULL },
	};
	bool use_tls = opts->tls_cert_pem;

	return MHD_start_daemon(server_flags() | (use_tls ? MHD_USE_TLS : 0), 0, NULL, NULL,
				on_request, srv, MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL,
				MHD_OPTION_CONNECTION_TIMEOUT, IDLE_TIMEOUT_S,
				MHD_OPTION_CONNECTION_LIMIT, MAX_CONNECTIONS,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, MAX_PER_ADDRESS,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
				MHD_OPTION_ARRAY, use_tls ? tls : tls + 2, MHD_OPTION_END);
}

static void server_free(struct pcpu_metrics_server *srv)
{
	pthread_mutex_destroy(&srv->lock);
	pthread_cond_destroy(&srv->quiet);
	explicit_bzero(srv, sizeof(*srv)); /* the password */
	free(srv);
}

PCPU_EXPORT struct pcpu_metrics_server *
pcpu_metrics_serve_opts(const struct pcpu_metrics_server_options *user)
{
	struct pcpu_metrics_server_options opts;
	struct pcpu_metrics_server *srv;
	int fd, twin, err = copy_options(user, &opts);

	if (!err)
		err = check_options(&opts);
	if (!err && opts.tls_cert_pem && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
		err = -ENOTSUP;
	if (err) {
		errno = -err;
		return NULL;
	}
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return NULL;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->quiet, NULL);
	strcpy(srv->path, opts.path ? opts.path : "/metrics");
	srv->registry = opts.registry;
	srv->max_in_flight = opts.max_in_flight ? opts.max_in_flight : DEFAULT_MAX_IN_FLIGHT;
	srv->timeout_ms = opts.timeout_ms;
	srv->instrument = opts.instrument;
	if (opts.basic_auth_user) {
		srv->auth = true;
		srv->user_len = strlen(opts.basic_auth_user);
		srv->password_len = strlen(opts.basic_auth_password);
		memcpy(srv->user, opts.basic_auth_user, srv->user_len);
		memcpy(srv->password, opts.basic_auth_password, srv->password_len);
	}
	fd = listen_on(opts.address, opts.port, &srv->port);
	if (fd < 0) {
		server_free(srv);
		errno = -fd;
		return NULL;
	}
	twin = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (twin < 0) {
		err = errno;
		close(fd);
		server_free(srv);
		errno = err;
		return NULL;
	}
	if (srv->instrument) {
		/* before the daemon: a scrape may come at once */
		err = pcpu_metrics_registry_collector_add(srv->registry, instrumentation, srv,
							  PCPU_METRICS_COLLECTOR_F_CONTINUE);
		if (err) {
			close(twin);
			close(fd);
			server_free(srv);
			errno = -err;
			return NULL;
		}
	}
	srv->mhd = start(srv, &opts, fd);
	if (!srv->mhd) {
		if (srv->instrument)
			pcpu_metrics_registry_collector_remove(srv->registry, instrumentation, srv);
		close_if_still(fd, twin);
		server_free(srv);
		/* libmicrohttpd says no more: no thread or no memory, or a bad key */
		errno = opts.tls_cert_pem ? -tls_failure(&opts) : ENOMEM;
		return NULL;
	}
	close(twin);
	return srv;
}

PCPU_EXPORT unsigned int pcpu_metrics_server_port(const struct pcpu_metrics_server *srv)
{
	return srv ? srv->port : 0;
}

PCPU_EXPORT void pcpu_metrics_server_stop(struct pcpu_metrics_server *srv)
{
	if (!srv)
		return;
	/*
	 * Scrapes first: their threads resume connections, which must not be
	 * suspended when libmicrohttpd stops. New ones answer 503.
	 */
	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	while (srv->threads)
		pthread_cond_wait(&srv->quiet, &srv->lock);
	pthread_mutex_unlock(&srv->lock);
	MHD_stop_daemon(srv->mhd); /* joins its thread, closes the socket */
	if (srv->instrument)
		pcpu_metrics_registry_collector_remove(srv->registry, instrumentation, srv);
	server_free(srv);
}

#endif /* PCPU_HAVE_MICROHTTPD */
