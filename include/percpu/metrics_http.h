/* SPDX-License-Identifier: MIT */
/**
 * @file metrics_http.h
 * The body of a /metrics response for any HTTP server: the format chosen
 * from the request's Accept header by q-value, as Prometheus negotiates it
 * (protobuf or OpenMetrics 1.0.0 when preferred, the text format 0.0.4
 * otherwise), and
 * gzip when Accept-Encoding allows it (where the library was built with
 * zlib). Every registered metric, as pcpu_metrics_write() writes them.
 * And, for a daemon that has no HTTP server, a small one that serves
 * /metrics so, over HTTP or HTTPS, with basic authentication where asked
 * (where the library was built with libmicrohttpd).
 * And, for a batch job that no server scrapes, a push to a Prometheus
 * Pushgateway (where the library was built with libcurl; since 0.5).
 *
 * Link: pkg-config percpu-metrics.
 */
#ifndef PERCPU_METRICS_HTTP_H
#define PERCPU_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include <percpu/common.h>
#include <percpu/metrics.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A response body and the headers that go with it. @since 0.3 */
struct pcpu_metrics_response {
	char *body;                   /**< malloc()ed; pcpu_metrics_response_free() */
	size_t length;                /**< bytes of @c body */
	const char *content_type;     /**< the Content-Type header's value */
	const char *content_encoding; /**< gzip, or NULL: send no such header */
};

/**
 * The format for an Accept header: OpenMetrics if the header gives it a
 * higher q-value than the text format, the text format otherwise (on a
 * tie, and for a NULL, empty or unparsable header). Each format takes the
 * q-value of the most specific media range that matches it, as in RFC
 * 9110: application/openmetrics-text without a version or with version
 * 1.0.0, or text/plain without a version or with 0.0.4; then the type's
 * wildcard (application or text); then the any-type wildcard. A range with
 * another version (text 1.0.0) does not match. Since 0.4, a range of
 * OpenMetrics version 0.0.1 that ranks above 1.0.0 (which a range of no
 * version or a wildcard matches alike) gives PCPU_METRICS_OPENMETRICS_0_0_1.
 *
 * Since 0.4, PCPU_METRICS_PROTOBUF when the header names
 * application/vnd.google.protobuf with the parameters
 * proto=io.prometheus.client.MetricFamily and encoding=delimited (in any
 * order, among others; type, subtype, parameter names and the encoding in
 * any case, the message name exact) at a q-value above both text formats'
 * (a tie goes to text). No wildcard and no other protobuf range matches it:
 * a scraper gets protobuf only when it asks for it by name, as Prometheus
 * does with native histograms on.
 * @since 0.3
 */
PCPU_EXPORT enum pcpu_metrics_format pcpu_metrics_negotiate(const char *accept);

/**
 * Whether an Accept-Encoding header allows gzip (gzip, x-gzip or *, at a
 * q-value above 0) and the library can compress (built with zlib).
 * @since 0.3
 */
PCPU_EXPORT bool pcpu_metrics_gzip_accepted(const char *accept_encoding);

/**
 * Fills @p res with the exposition of every registered metric in the
 * negotiated format, gzipped when @p accept_encoding allows it. Either
 * header may be NULL (absent). @return 0; -EINVAL for a NULL @p res;
 * -ENOMEM; or what pcpu_metrics_write() returns. On error @p res holds no
 * body (free it all the same, or not: both are fine). @since 0.3
 */
PCPU_EXPORT int pcpu_metrics_respond(const char *accept, const char *accept_encoding,
				     struct pcpu_metrics_response *res);

/**
 * As pcpu_metrics_respond(), with the metrics of registry @p r (NULL: the
 * process's, which is pcpu_metrics_respond()); see
 * <percpu/metrics_registry.h>. @since 0.4
 */
PCPU_EXPORT int pcpu_metrics_registry_respond(struct pcpu_metrics_registry *r, const char *accept,
					      const char *accept_encoding,
					      struct pcpu_metrics_response *res);

/** Frees the body of @p res and empties it; NULL does nothing. @since 0.3 */
PCPU_EXPORT void pcpu_metrics_response_free(struct pcpu_metrics_response *res);

/**
 * A /metrics server started by pcpu_metrics_serve() or
 * pcpu_metrics_serve_opts(). @since 0.3
 */
struct pcpu_metrics_server;

/**
 * Serves every registered metric at /metrics, as pcpu_metrics_respond()
 * answers (format by Accept, gzip by Accept-Encoding), from a thread of
 * its own, on TCP @p port of @p address: a numeric IPv4 or IPv6 address
 * ("127.0.0.1", "::1"), or NULL for every address (IPv6 and IPv4 where
 * the host has both). Port 0 picks a free port: see
 * pcpu_metrics_server_port(). Other paths answer 404, methods other than
 * GET and HEAD 405, and an exposition that fails 500. Since 0.5, scrapes
 * are served concurrently, each exposed in a thread of its own, up to 16 at
 * once (more answer 503; see struct pcpu_metrics_server_options), and one
 * polling thread serves the connections (one at a time before 0.5): a slow
 * collector holds back its own scrape only. Their walks of the registered
 * metrics still take the metrics lock in turn; an
 * idle connection is closed after 10 s. Up to 2048
 * connections are open at once, 1024 from one address (since 0.4; 64
 * before), so that idle or slow clients do not hold a scrape back; the
 * process's descriptor limit (RLIMIT_NOFILE) must leave room for them. A child of
 * fork() has no copy of the thread: it must not stop the server, and it
 * holds the listening socket open until it closes its descriptors or exits
 * (so start the server after forking workers, where that matters).
 * @return the server; NULL with errno EINVAL (an address that is not a
 *         numeric IP address, @p port above 65535), EADDRINUSE,
 *         EADDRNOTAVAIL, EACCES (a privileged port) or another errno of
 *         socket(), bind() or listen(), ENOMEM, or ENOTSUP where the
 *         library was built without libmicrohttpd (bad arguments are
 *         EINVAL there too). pcpu_metrics_serve_opts() with @c size,
 *         @p address and @p port set and nothing else does the same.
 * @since 0.3
 */
PCPU_EXPORT struct pcpu_metrics_server *pcpu_metrics_serve(const char *address,
							   unsigned int port);

/**
 * How pcpu_metrics_serve_opts() serves. Fields that are 0 or NULL take
 * their default; set @c size, and only the fields you need, as
 * `struct pcpu_metrics_server_options o = { .size = sizeof(o), .port = 9100 };`
 * (or memset() it to 0 first). Strings are copied or used up by the call:
 * they need not outlive it. @since 0.4
 */
struct pcpu_metrics_server_options {
	/**
	 * sizeof(struct pcpu_metrics_server_options) as the caller's header
	 * has it: later versions append fields, and a library older than the
	 * caller's header refuses a field that it does not know and that is
	 * set (E2BIG) rather than ignore it.
	 */
	size_t size;
	/** As pcpu_metrics_serve()'s: a numeric IPv4 or IPv6 address; NULL: every address. */
	const char *address;
	/** As pcpu_metrics_serve()'s: a TCP port, 0 to pick a free one. */
	unsigned int port;
	/**
	 * The path served; NULL: "/metrics". Else 1 to 255 bytes that start
	 * with '/', each a printable ASCII character other than space, '?',
	 * '#' and '%' (the path is matched after percent-decoding, and a query
	 * string is ignored). Matched exactly: other paths answer 404.
	 */
	const char *path;
	/**
	 * Both set: serve HTTPS (TLS) only, with this certificate chain (the
	 * server's certificate first) and this private key, as PEM text in
	 * memory (an unencrypted key). Both NULL: plain HTTP. One alone: EINVAL.
	 */
	const char *tls_cert_pem;
	const char *tls_key_pem; /**< see @c tls_cert_pem */
	/**
	 * Both set: HTTP basic authentication (RFC 7617). A request without
	 * an Authorization header of scheme Basic with exactly this user and
	 * password (compared in constant time) gets 401 with
	 * `WWW-Authenticate: Basic realm="metrics"`, whatever its path. The user:
	 * 1 to 255 bytes without ':'; the password: 0 to 255 bytes. Both NULL:
	 * no authentication. One alone: EINVAL. Without TLS, the password
	 * crosses the network in clear.
	 */
	const char *basic_auth_user;
	const char *basic_auth_password; /**< see @c basic_auth_user */
	/**
	 * NULL: the process's metrics; else the registry to serve
	 * (<percpu/metrics_registry.h>), which must outlive the server.
	 */
	struct pcpu_metrics_registry *registry;
	/* appended in 0.5: limits and self-instrumentation, as the Go client's promhttp */
	/**
	 * Scrapes exposed at once, as promhttp's MaxRequestsInFlight: one
	 * more answers 503 at once, with a body that says so. 0: 16. A scrape
	 * that timed out counts until its exposition returns. @since 0.5
	 */
	unsigned int max_in_flight;
	/**
	 * Milliseconds a scrape may take, as promhttp's Timeout: one that
	 * takes longer answers 503 with a body that says it timed out, and its
	 * exposition goes on in its own thread until it returns (the
	 * collector that is slow cannot be interrupted), in flight all that
	 * time. 0: no timeout. @since 0.5
	 */
	unsigned int timeout_ms;
	/**
	 * true: the served registry (@c registry) gets the server's own
	 * metrics, named as promhttp's InstrumentMetricHandler names them: the
	 * counter promhttp_metric_handler_requests_total of scrapes answered,
	 * by label code ("200", "500", "503"; requests for another path, for
	 * another method or without credentials are not scrapes), and the
	 * gauge promhttp_metric_handler_requests_in_flight (scrapes exposing
	 * now, the one that reads it included). One server per registry may
	 * have them: a second one's are refused as a clash. @since 0.5
	 */
	bool instrument;
};

/**
 * Starts a server as pcpu_metrics_serve() does, with the options of
 * @p opts (struct pcpu_metrics_server_options): at its @c path instead of
 * /metrics, over TLS, and behind basic authentication, each where set.
 * A request with a method other than GET or HEAD answers 405; then one
 * without the right credentials 401; then one for another path 404.
 * @return the server; NULL with errno as pcpu_metrics_serve()'s, and
 *         EINVAL (a NULL @p opts, a @c size smaller than 0.4's struct, a
 *         path or credential against the rules of struct
 *         pcpu_metrics_server_options, one of a pair set alone, or a
 *         certificate or key that libmicrohttpd refuses: not PEM, an
 *         encrypted key, a key that is not the certificate's), E2BIG
 *         (@c size above 4096, or larger than this library's struct with a
 *         non-zero byte past it: a later version's field), or ENOTSUP
 *         (built without libmicrohttpd, or TLS asked of a libmicrohttpd
 *         without it; the options are checked first, so that bad ones are
 *         EINVAL there too).
 * @since 0.4
 */
PCPU_EXPORT struct pcpu_metrics_server *
pcpu_metrics_serve_opts(const struct pcpu_metrics_server_options *opts);

/**
 * The TCP port that @p srv listens on (the one picked for port 0); 0 for
 * NULL. @since 0.3
 */
PCPU_EXPORT unsigned int pcpu_metrics_server_port(const struct pcpu_metrics_server *srv);

/**
 * Stops @p srv: closes its socket and connections, waits for the scrapes in
 * progress (since 0.5, those that timed out included), and frees it. NULL does nothing. The port is free again when
 * it returns. @since 0.3
 */
PCPU_EXPORT void pcpu_metrics_server_stop(struct pcpu_metrics_server *srv);

/**
 * What pcpu_metrics_push() does to the group of a Pushgateway. @since 0.5
 */
enum pcpu_metrics_push_method {
	/** PUT: the pushed metrics replace every metric of the group. */
	PCPU_METRICS_PUSH_PUT,
	/** POST: they replace the metrics of the same names only. */
	PCPU_METRICS_PUSH_POST,
	/** DELETE: the group is removed; nothing is pushed. */
	PCPU_METRICS_PUSH_DELETE,
};

/**
 * Where and how pcpu_metrics_push() pushes. Fields that are 0 or NULL take
 * their default; set @c size, and only the fields you need, as
 * `struct pcpu_metrics_push_options o = { .size = sizeof(o), .url = ..., .job = "batch" };`.
 * Strings need not outlive the call. @since 0.5
 */
struct pcpu_metrics_push_options {
	/**
	 * sizeof(struct pcpu_metrics_push_options) as the caller's header has
	 * it (as struct pcpu_metrics_server_options's @c size).
	 */
	size_t size;
	/**
	 * The gateway: "http://" or "https://", a host and a port, and the
	 * path prefix where it has one (its --web.route-prefix), without
	 * "/metrics": "http://127.0.0.1:9091". Printable ASCII, no space. For
	 * https, the peer is verified against the system's CA store.
	 */
	const char *url;
	/** The job: the group's first label, required (non-empty UTF-8). */
	const char *job;
	/**
	 * The other labels of the group: {"name", "value", ..., NULL}, or
	 * NULL for none. Names as label names (not "job", no two alike),
	 * values any UTF-8. A value with a '/', or empty, goes into the URL in
	 * base64url ("name@base64/..."), as the Pushgateway's API asks; others
	 * percent-encoded.
	 */
	const char *const *grouping;
	/**
	 * The body: PCPU_METRICS_PROMETHEUS (0, the default: text 0.0.4) or
	 * PCPU_METRICS_PROTOBUF (which carries native histograms). OpenMetrics
	 * is EINVAL: the gateway does not take it.
	 */
	enum pcpu_metrics_format format;
	/**
	 * Both set: HTTP basic authentication (RFC 7617), as the gateway's
	 * --web.config.file asks it. The user: 1 to 255 bytes without ':'; the
	 * password: 0 to 255 bytes. Both NULL: none. One alone: EINVAL.
	 */
	const char *basic_auth_user;
	const char *basic_auth_password; /**< see @c basic_auth_user */
	/** The whole request's limit in milliseconds; 0: 10000. */
	unsigned int timeout_ms;
	/** NULL: the process's metrics; else the registry to push. */
	struct pcpu_metrics_registry *registry;
};

/**
 * Pushes the exposition of every metric of @c registry (as
 * pcpu_metrics_registry_write() writes it) to a Prometheus Pushgateway's
 * group @c job and @c grouping: PUT, POST, or DELETE by @p method, at
 * URL/metrics/job/JOB[/NAME/VALUE...]. Blocks until the gateway answers
 * (or @c timeout_ms). Thread-safe; it initializes libcurl once, and never
 * raises a signal (CURLOPT_NOSIGNAL). libcurl's proxy variables of the
 * environment (http_proxy, https_proxy, no_proxy) apply, as Go's
 * ProxyFromEnvironment does for client_golang's push. Redirects are not
 * followed.
 *
 * @p message, where not NULL, gets a NUL-terminated line of at most
 * @p message_size - 1 bytes: "" on success; on an error that the gateway
 * answered, "HTTP STATUS: " and its body (the reason it refused, such as
 * a metric inconsistent with another group's), control bytes as '?'; on
 * another error, libcurl's or this call's reason.
 *
 * @return 0 (2xx); -EINVAL (@p opts NULL or @c size smaller than 0.5's
 *         struct, or a field or @p method against the rules of struct
 *         pcpu_metrics_push_options), -E2BIG (a later version's field
 *         set), -ENOMEM, what pcpu_metrics_registry_write() returns; the
 *         gateway's answer: -EBADMSG (400: metrics that the gateway
 *         refuses, invalid or inconsistent), -EACCES (401), -EPERM (403),
 *         -ENOENT (404: not a Pushgateway's URL), -EPROTO (another
 *         status that is not 2xx below 500, an answer that is not HTTP, or
 *         https where libcurl has no TLS), -EIO (5xx); the transport's:
 *         -ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH (a name that does not
 *         resolve, a host that cannot be reached), -ECONNRESET (a
 *         connection closed or failed mid-request, TLS included), or
 *         -ENOTSUP where the library was built without libcurl (the
 *         options are checked first, so bad ones are -EINVAL there too).
 * @since 0.5
 */
PCPU_EXPORT int pcpu_metrics_push(const struct pcpu_metrics_push_options *opts,
				  enum pcpu_metrics_push_method method, char *message,
				  size_t message_size);

#ifdef __cplusplus
}
#endif

#endif /* PERCPU_METRICS_HTTP_H */
