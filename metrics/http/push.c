/* SPDX-License-Identifier: MIT */
/*
 * pcpu_metrics_push(): the exposition sent to a Prometheus Pushgateway
 * with libcurl, as client_golang's push package and prometheus-cpp's
 * Gateway do. The options are checked and the URL is built here whether
 * or not the library has libcurl, so that a build without it refuses the
 * same bad calls (EINVAL) before it says ENOTSUP.
 *
 * Nothing from the gateway is parsed: libcurl reads the status line and
 * headers; the body of an answer is only copied, bounded, control bytes
 * replaced, into the caller's message buffer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percpu/metrics.h>
#include <percpu/metrics_http.h>
#include <percpu/metrics_registry.h>

#include "base/names.h"

#ifdef PCPU_HAVE_CURL
#include <curl/curl.h>
#include <pthread.h>
#endif

/* 0.5's struct: the size that the first version with push knows. */
#define PUSH_OPTIONS_SIZE_0_5 sizeof(struct pcpu_metrics_push_options)
#define PUSH_OPTIONS_SIZE_MAX 4096
#define CREDENTIAL_MAX_LEN 255
#define URL_MAX_LEN 2048
#define DEFAULT_TIMEOUT_MS 10000

/* The caller's message buffer; every write leaves it NUL-terminated. */
struct push_message {
	char *buf;
	size_t size;
	size_t len;
};

static void message_add(struct push_message *m, const char *s, size_t n)
{
	if (!m->buf || !m->size)
		return;
	for (size_t i = 0; i < n && m->len + 1 < m->size; i++) {
		unsigned char c = (unsigned char)s[i];

		/* one line: control bytes (the body's newlines too) as '?' */
		m->buf[m->len++] = c < ' ' || c == 0x7f ? '?' : (char)c;
	}
	m->buf[m->len] = '\0';
}

static void message_set(struct push_message *m, const char *s)
{
	m->len = 0;
	if (m->buf && m->size)
		m->buf[0] = '\0';
	message_add(m, s, strlen(s));
}

static int copy_options(const struct pcpu_metrics_push_options *user,
			struct pcpu_metrics_push_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	if (!user || user->size < PUSH_OPTIONS_SIZE_0_5)
		return -EINVAL;
	if (user->size > PUSH_OPTIONS_SIZE_MAX)
		return -E2BIG;
	for (size_t i = sizeof(*opts); i < user->size; i++)
		if (((const unsigned char *)user)[i])
			return -E2BIG;
	memcpy(opts, user, sizeof(*opts));
	return 0;
}

static bool url_ok(const char *url)
{
	size_t n;

	if (!url || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
		return false;
	n = strlen(url);
	if (n > URL_MAX_LEN || n <= strlen("https://"))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)url[i] <= ' ' || (unsigned char)url[i] > '~')
			return false;
	return true;
}

static bool credentials_ok(const char *user, const char *password)
{
	if (!user && !password)
		return true;
	if (!user || !password || !user[0] || strchr(user, ':'))
		return false;
	return strlen(user) <= CREDENTIAL_MAX_LEN && strlen(password) <= CREDENTIAL_MAX_LEN;
}

/* The rules of struct pcpu_metrics_push_options; 0 or -EINVAL. */
static int check_options(const struct pcpu_metrics_push_options *o,
			 enum pcpu_metrics_push_method method)
{
	if (method != PCPU_METRICS_PUSH_PUT && method != PCPU_METRICS_PUSH_POST &&
	    method != PCPU_METRICS_PUSH_DELETE)
		return -EINVAL;
	if (!url_ok(o->url) || !o->job || !o->job[0])
		return -EINVAL;
	if (o->format != PCPU_METRICS_PROMETHEUS && o->format != PCPU_METRICS_PROTOBUF)
		return -EINVAL;
	if (!credentials_ok(o->basic_auth_user, o->basic_auth_password))
		return -EINVAL;
	/* the grouping labels follow the label name rules; "job" is the job's */
	if (pcpu_metrics_check_labels(o->grouping, PCPU_METRIC_COUNTER) < 0)
		return -EINVAL;
	for (size_t i = 0; o->grouping && o->grouping[i]; i += 2)
		if (strcmp(o->grouping[i], "job") == 0)
			return -EINVAL;
	return 0;
}

/* RFC 4648's URL-safe alphabet, with padding (the gateway takes both). */
static void put_base64url(FILE *out, const char *s)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	/* the gateway reads "=" as the empty value: it needs some text */
	if (!n)
		fputc('=', out);
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		fputc(abc[v >> 18 & 63], out);
		fputc(abc[v >> 12 & 63], out);
		fputc(i + 1 < n ? abc[v >> 6 & 63] : '=', out);
		fputc(i + 2 < n ? abc[v & 63] : '=', out);
	}
}

/*
 * "/NAME/VALUE" of the group's path: VALUE percent-encoded but for RFC
 * 3986's unreserved characters; "/NAME@base64/VALUE" where VALUE has a
 * '/' (a router decodes %2F before it splits the path) or is empty.
 */
static void put_label(FILE *out, const char *name, const char *value)
{
	if (!value[0] || strchr(value, '/')) {
		fprintf(out, "/%s@base64/", name);
		put_base64url(out, value);
		return;
	}
	fprintf(out, "/%s/", name);
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p))
			fputc(*p, out);
		else
			fprintf(out, "%%%02X", *p);
	}
}

/* URL/metrics/job/JOB[/NAME/VALUE...] (malloc'ed), or NULL (ENOMEM). */
static char *group_url(const struct pcpu_metrics_push_options *o)
{
	char *url = NULL;
	size_t len = 0, base = strlen(o->url);
	FILE *out = open_memstream(&url, &len);

	if (!out)
		return NULL;
	while (base && o->url[base - 1] == '/')
		base--;
	fprintf(out, "%.*s/metrics", (int)base, o->url);
	put_label(out, "job", o->job);
	for (size_t i = 0; o->grouping && o->grouping[i]; i += 2)
		put_label(out, o->grouping[i], o->grouping[i + 1]);
	if (ferror(out) | fclose(out)) {
		free(url);
		return NULL;
	}
	return url;
}

#ifdef PCPU_HAVE_CURL

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result = CURLE_FAILED_INIT;

/* curl_global_init() is not thread-safe before 7.84: once, under a once. */
static void curl_init(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* The start of the gateway's answer: enough for its reason. */
struct answer {
	char data[4096];
	size_t len;
};

/* libcurl's write callback: the answer's body, what fits, into @arg. */
static size_t take_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct answer *a = arg;
	size_t n = size * nmemb;

	if (n > sizeof(a->data) - a->len)
		n = sizeof(a->data) - a->len;
	memcpy(a->data + a->len, data, n);
	a->len += n;
	return size * nmemb;
}

/* "HTTP STATUS: " and the body, without its trailing newlines, as @m. */
static void message_answer(struct push_message *m, long status, struct answer *a)
{
	char head[32];

	while (a->len && strchr(" \t\r\n", a->data[a->len - 1]))
		a->len--;
	snprintf(head, sizeof(head), "HTTP %ld: ", status);
	message_set(m, head);
	message_add(m, a->data, a->len);
}

/* A transport error as a negative errno. */
static int curl_errno(CURLcode rc)
{
	switch (rc) {
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_URL_MALFORMAT:
		return -EINVAL;
	case CURLE_UNSUPPORTED_PROTOCOL:
		/* an answer that is not HTTP (0.9 refused), or https without TLS */
		return -EPROTO;
	default:
		return -ECONNRESET;
	}
}

/* An answer's status as 0 or a negative errno (<percpu/metrics_http.h>). */
static int status_errno(long status)
{
	if (status >= 200 && status < 300)
		return 0;
	switch (status) {
	case 400:
		return -EBADMSG;
	case 401:
		return -EACCES;
	case 403:
		return -EPERM;
	case 404:
		return -ENOENT;
	default:
		return status >= 500 ? -EIO : -EPROTO;
	}
}

/* The request's options on @c; 0 or -ENOMEM (a setopt that failed). */
static int set_request(CURL *c, const struct pcpu_metrics_push_options *o,
		       enum pcpu_metrics_push_method method, const char *url,
		       const char *body, size_t length, struct curl_slist *headers)
{
	static const char *const verb[] = { "PUT", "POST", "DELETE" };
	CURLcode rc = CURLE_OK;

	rc |= curl_easy_setopt(c, CURLOPT_URL, url);
	rc |= curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	rc |= curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
			       (long)(o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS));
#if LIBCURL_VERSION_NUM >= 0x075500
	rc |= curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	rc |= curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, verb[method]);
	if (method != PCPU_METRICS_PUSH_DELETE) {
		rc |= curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		rc |= curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)length);
		rc |= curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	}
	if (o->basic_auth_user) {
		rc |= curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		rc |= curl_easy_setopt(c, CURLOPT_USERNAME, o->basic_auth_user);
		rc |= curl_easy_setopt(c, CURLOPT_PASSWORD, o->basic_auth_password);
	}
	return rc == CURLE_OK ? 0 : -ENOMEM;
}

/* One request, the gateway's answer into @m; 0 or a negative errno. */
static int send_request(const struct pcpu_metrics_push_options *o,
			enum pcpu_metrics_push_method method, const char *url, const char *body,
			size_t length, struct push_message *m)
{
	char content_type[128], curl_error[CURL_ERROR_SIZE] = "";
	struct curl_slist *headers = NULL, *h;
	struct answer *a = calloc(1, sizeof(*a));
	CURL *c = curl_easy_init();
	long status = 0;
	CURLcode rc;
	int err;

	snprintf(content_type, sizeof(content_type), "Content-Type: %s",
		 pcpu_metrics_content_type(o->format));
	/* no "Expect: 100-continue" round trip for a large body */
	h = curl_slist_append(NULL, content_type);
	headers = h ? curl_slist_append(h, "Expect:") : NULL;
	if (!headers)
		curl_slist_free_all(h);
	err = !c || !headers || !a ? -ENOMEM :
				     set_request(c, o, method, url, body, length, headers);
	if (!err)
		err = curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_error) ||
			      curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, take_body) ||
			      curl_easy_setopt(c, CURLOPT_WRITEDATA, a) ?
			      -ENOMEM : 0;
	message_set(m, "");
	if (!err) {
		rc = curl_easy_perform(c);
		if (rc == CURLE_OK) {
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
			err = status_errno(status);
		} else {
			err = curl_errno(rc);
			message_set(m, curl_error[0] ? curl_error : curl_easy_strerror(rc));
		}
	}
	curl_slist_free_all(headers);
	curl_easy_cleanup(c);
	if (status && err)
		message_answer(m, status, a);
	free(a);
	return err;
}

/* The exposition of @o's registry in @o's format (malloc'ed) in @body. */
static int write_body(const struct pcpu_metrics_push_options *o, char **body, size_t *length)
{
	FILE *out = open_memstream(body, length);
	int err;

	if (!out)
		return -ENOMEM;
	err = pcpu_metrics_registry_write(o->registry, out, o->format);
	if (fclose(out) && !err)
		err = -ENOMEM;
	if (err) {
		free(*body);
		*body = NULL;
	}
	return err;
}

static int push(const struct pcpu_metrics_push_options *o, enum pcpu_metrics_push_method method,
		struct push_message *m)
{
	char *url, *body = NULL;
	size_t length = 0;
	int err;

	pthread_once(&curl_once, curl_init);
	if (curl_init_result != CURLE_OK) {
		message_set(m, curl_easy_strerror(curl_init_result));
		return -ENOMEM;
	}
	url = group_url(o);
	if (!url)
		return -ENOMEM;
	err = method == PCPU_METRICS_PUSH_DELETE ? 0 : write_body(o, &body, &length);
	if (!err)
		err = send_request(o, method, url, body, length, m);
	else
		message_set(m, "the exposition failed");
	free(body);
	free(url);
	return err;
}

#else /* !PCPU_HAVE_CURL */

static int push(const struct pcpu_metrics_push_options *o, enum pcpu_metrics_push_method method,
		struct push_message *m)
{
	char *url = group_url(o);

	(void)method;
	free(url);
	message_set(m, "libpercpu-metrics was built without libcurl");
	return -ENOTSUP;
}

#endif /* PCPU_HAVE_CURL */

PCPU_EXPORT int pcpu_metrics_push(const struct pcpu_metrics_push_options *user,
				  enum pcpu_metrics_push_method method, char *message,
				  size_t message_size)
{
	struct push_message m = { .buf = message, .size = message_size };
	struct pcpu_metrics_push_options opts;
	int err = copy_options(user, &opts);

	if (!err)
		err = check_options(&opts, method);
	if (err) {
		message_set(&m, err == -E2BIG ? "an option of a later version is set" :
						"invalid options");
		return err;
	}
	return push(&opts, method, &m);
}
