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
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <percpu/metrics_http.h>

#include "metrics_internal.h"

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

#ifndef PCPU_HAVE_MICROHTTPD

PCPU_EXPORT struct pcpu_metrics_server *pcpu_metrics_serve(const char *address,
							   unsigned int port)
{
	struct sockaddr_storage ss;

	errno = parse_address(address, port, &ss) ? ENOTSUP : EINVAL;
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
};

static const char not_found[] = "not found\n";
static const char not_allowed[] = "method not allowed\n";
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
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* 500, saying why where a failed definition is the cause (metrics_register.c). */
static mhd_result queue_failure(struct MHD_Connection *conn)
{
	struct MHD_Response *resp;
	const char *what;
	char *body;
	mhd_result ret;

	if (!pcpu_metrics_define_failure(&what) ||
	    asprintf(&body, "exposition failed: %s\n", what) < 0)
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

static mhd_result queue_metrics(struct MHD_Connection *conn)
{
	struct pcpu_metrics_response res;
	struct MHD_Response *resp;
	mhd_result ret;

	if (pcpu_metrics_respond(
		    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT),
		    MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						MHD_HTTP_HEADER_ACCEPT_ENCODING),
		    &res) != 0)
		return queue_failure(conn);
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

	(void)cls;
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
	if (strcmp(url, "/metrics") != 0)
		return queue_text(conn, MHD_HTTP_NOT_FOUND, not_found, sizeof(not_found) - 1);
	return queue_metrics(conn);
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

PCPU_EXPORT struct pcpu_metrics_server *pcpu_metrics_serve(const char *address,
							   unsigned int port)
{
	struct pcpu_metrics_server *srv;
	int fd;

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return NULL;
	fd = listen_on(address, port, &srv->port);
	if (fd < 0) {
		free(srv);
		errno = -fd;
		return NULL;
	}
	srv->mhd = MHD_start_daemon(server_flags(), 0, NULL, NULL,
				    on_request, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
				    MHD_OPTION_CONNECTION_TIMEOUT, IDLE_TIMEOUT_S,
				    MHD_OPTION_CONNECTION_LIMIT, MAX_CONNECTIONS,
				    MHD_OPTION_PER_IP_CONNECTION_LIMIT, MAX_PER_ADDRESS,
				    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
				    MHD_OPTION_END);
	if (!srv->mhd) {
		/* no thread or no memory: libmicrohttpd says no more */
		close(fd);
		free(srv);
		errno = ENOMEM;
		return NULL;
	}
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
	free(srv);
}

#endif /* PCPU_HAVE_MICROHTTPD */
