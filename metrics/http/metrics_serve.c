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
 * One thread, not a pool: scrapes come every few seconds, and one thread
 * bounds what a flood of them can cost the daemon.
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
};

static const char not_found[] = "not found\n";
static const char not_allowed[] = "method not allowed\n";
static const char unauthorized[] = "unauthorized\n";
static const char failed[] = "exposition failed\n";

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
 * 500, saying why: a failed definition (metrics_register.c; the process's
 * registry, @process, only), else the collector that stopped the
 * exposition and the metric it had refused, with its labels and the reason
 * (as the Go client's body names the metric), else @err.
 */
static mhd_result queue_failure(struct MHD_Connection *conn, bool process, int err)
{
	struct MHD_Response *resp;
	const char *what = NULL;
	char *body, collector[640];
	mhd_result ret;

	if (!process || !pcpu_metrics_define_failure(&what))
		what = pcpu_collectors_failure(collector, sizeof(collector));
	if (asprintf(&body, "exposition failed: %s\n", what ? what : strerror(-err)) < 0)
		return queue_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, failed, sizeof(failed) - 1);
	resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	ret = MHD_queue_response(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, resp);
	MHD_destroy_response(resp);
	return ret;
}

static mhd_result queue_metrics(struct MHD_Connection *conn,
				const struct pcpu_metrics_server *srv)
{
	struct pcpu_metrics_response res;
	struct MHD_Response *resp;
	mhd_result ret;
	int err = pcpu_metrics_registry_respond(
		srv->registry,
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT),
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING),
		&res);

	if (err != 0)
		return queue_failure(conn, !srv->registry, err);
	/* the body is malloc()ed: libmicrohttpd free()s it with the response */
	resp = MHD_create_response_from_buffer(res.length, res.body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		pcpu_metrics_response_free(&res);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, res.content_type);
	if (res.content_encoding)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING,
					res.content_encoding);
	/* the body depends on both: a cache must not serve one for another */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
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
static mhd_result on_request(void *cls, struct MHD_Connection *conn, const char *url,
			     const char *method, const char *version, const char *upload_data,
			     size_t *upload_data_size, void **req_cls)
{
	static int headers_seen;
	const struct pcpu_metrics_server *srv = cls;

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
	if (srv->auth && !authorized(srv, conn))
		return queue_text(conn, MHD_HTTP_UNAUTHORIZED, unauthorized,
				  sizeof(unauthorized) - 1);
	if (strcmp(url, srv->path) != 0)
		return queue_text(conn, MHD_HTTP_NOT_FOUND, not_found, sizeof(not_found) - 1);
	return queue_metrics(conn, srv);
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
	if (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES)
		return MHD_USE_EPOLL_INTERNAL_THREAD;
	return MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
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
				MHD_OPTION_CONNECTION_TIMEOUT, IDLE_TIMEOUT_S,
				MHD_OPTION_CONNECTION_LIMIT, MAX_CONNECTIONS,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, MAX_PER_ADDRESS,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
				MHD_OPTION_ARRAY, use_tls ? tls : tls + 2, MHD_OPTION_END);
}

static void server_free(struct pcpu_metrics_server *srv)
{
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
	strcpy(srv->path, opts.path ? opts.path : "/metrics");
	srv->registry = opts.registry;
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
	srv->mhd = start(srv, &opts, fd);
	if (!srv->mhd) {
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
	MHD_stop_daemon(srv->mhd); /* joins its thread, closes the socket */
	server_free(srv);
}

#endif /* PCPU_HAVE_MICROHTTPD */
