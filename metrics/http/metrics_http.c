/* SPDX-License-Identifier: MIT */
/*
 * The /metrics response (<percpu/metrics_http.h>): content negotiation by
 * q-value, the exposition made in memory, gzip by zlib.
 *
 * Negotiation follows RFC 9110 section 12.5.1: each format we offer takes
 * the q-value of the most specific media range that matches it (with our
 * version > without a version > type wildcard > any type), and the better
 * q wins; ties go to the text format 0.0.4, which every scraper reads.
 * Protobuf is offered only to a scraper that names it in full (as
 * Prometheus does, and the Go client's expfmt.Negotiate() requires): a
 * wildcard never matches it, and it must beat both text formats, since
 * a client that did not ask for it cannot read it.
 * q-values are parsed by hand, in thousandths: strtod() would follow the
 * daemon's LC_NUMERIC.
 */
#define _GNU_SOURCE /* open_memstream, strncasecmp */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <percpu/metrics_http.h>
#include <percpu/metrics_registry.h>

#ifdef PCPU_HAVE_ZLIB
#include <zlib.h>
#endif

/* One element of a comma-separated header: [start, end), trimmed. */
struct span {
	const char *start, *end;
};

static struct span trim(const char *start, const char *end)
{
	while (start < end && (*start == ' ' || *start == '\t'))
		start++;
	while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	return (struct span){ start, end };
}

static bool span_is(struct span s, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(s.end - s.start) == n && strncasecmp(s.start, word, n) == 0;
}

/* A parameter's value without the quotes of a quoted-string (RFC 9110 5.6.4). */
static struct span unquote(struct span s)
{
	if (s.end - s.start >= 2 && s.start[0] == '"' && s.end[-1] == '"')
		return (struct span){ s.start + 1, s.end - 1 };
	return s;
}

/* "1", "1.000", "0", "0.5": thousandths, or -1 if it is no q-value. */
static int parse_q(struct span s)
{
	int q, digits = 0;
	const char *p = s.start;

	if (p == s.end || (*p != '0' && *p != '1'))
		return -1;
	q = (*p++ - '0') * 1000;
	if (p < s.end && *p == '.') {
		for (p++; p < s.end && digits < 3 && *p >= '0' && *p <= '9'; p++, digits++)
			q += (*p - '0') * (digits == 0 ? 100 : digits == 1 ? 10 : 1);
	}
	if (p != s.end || q > 1000)
		return -1;
	return q;
}

/* A media range, the parameters we look at and its q-value. */
struct range {
	struct span type, subtype, version, proto, encoding;
	int q;
};

/* Parses one element of an Accept header; false if it is malformed. */
static bool parse_range(struct span el, struct range *r)
{
	const char *semi = memchr(el.start, ';', (size_t)(el.end - el.start));
	struct span media = trim(el.start, semi ? semi : el.end);
	const char *slash = memchr(media.start, '/', (size_t)(media.end - media.start));

	if (!slash)
		return false;
	*r = (struct range){ .type = trim(media.start, slash), .subtype = trim(slash + 1, media.end),
			     .q = 1000 };
	while (semi) {
		const char *start = semi + 1, *eq;
		struct span param;

		semi = memchr(start, ';', (size_t)(el.end - start));
		param = trim(start, semi ? semi : el.end);
		eq = memchr(param.start, '=', (size_t)(param.end - param.start));
		if (!eq)
			continue;
		struct span name = trim(param.start, eq), value = unquote(trim(eq + 1, param.end));

		if (span_is(name, "q"))
			r->q = parse_q(trim(eq + 1, param.end));
		else if (span_is(name, "version"))
			r->version = value;
		else if (span_is(name, "proto"))
			r->proto = value;
		else if (span_is(name, "encoding"))
			r->encoding = value;
	}
	return r->q >= 0;
}

/* A format we offer: its media type, and the version we write. */
struct offer {
	const char *type, *subtype, *version;
	int specificity; /* of the best range seen so far; 0: none */
	int q;
	/* how specific range @r is for this offer: 0 for no match */
	int (*match)(const struct range *r, const struct offer *o);
};

#define PROTO_MESSAGE "io.prometheus.client.MetricFamily"

/* 4: type, subtype and our version; 3: without a version; 2, 1: wildcards; 0: no match */
static int specificity(const struct range *r, const struct offer *o)
{
	if (span_is(r->type, "*"))
		return span_is(r->subtype, "*") ? 1 : 0;
	if (!span_is(r->type, o->type))
		return 0;
	if (span_is(r->subtype, "*"))
		return 2;
	if (!span_is(r->subtype, o->subtype))
		return 0;
	if (r->version.start == r->version.end)
		return 3;
	return span_is(r->version, o->version) ? 4 : 0;
}

/*
 * The protobuf range, in full: type and subtype (any case), proto (a
 * message name: exact) and encoding (a token: any case); nothing less.
 */
static int protobuf_specificity(const struct range *r, const struct offer *o)
{
	size_t n = strlen(PROTO_MESSAGE);

	(void)o;
	if (!span_is(r->type, "application") || !span_is(r->subtype, "vnd.google.protobuf"))
		return 0;
	if ((size_t)(r->proto.end - r->proto.start) != n ||
	    memcmp(r->proto.start, PROTO_MESSAGE, n) != 0 || !span_is(r->encoding, "delimited"))
		return 0;
	return 4;
}

static void consider(struct offer *o, const struct range *r)
{
	int s = o->match(r, o);

	if (s > o->specificity || (s == o->specificity && s > 0 && r->q > o->q)) {
		o->specificity = s;
		o->q = r->q;
	}
}

/* Calls @fn on each trimmed, non-empty element of the list @header. */
static void each_element(const char *header, void (*fn)(struct span, void *), void *arg)
{
	const char *p = header;

	while (p && *p) {
		const char *comma = strchr(p, ',');
		const char *end = comma ? comma : p + strlen(p);
		struct span el = trim(p, end);

		if (el.start < el.end)
			fn(el, arg);
		p = comma ? comma + 1 : NULL;
	}
}

static void offer_range(struct span el, void *arg)
{
	struct offer *offers = arg;
	struct range r;

	if (!parse_range(el, &r))
		return;
	consider(&offers[0], &r);
	consider(&offers[1], &r);
	consider(&offers[2], &r);
	consider(&offers[3], &r);
}

PCPU_EXPORT enum pcpu_metrics_format pcpu_metrics_negotiate(const char *accept)
{
	struct offer offers[4] = {
		{ "text", "plain", "0.0.4", 0, 0, specificity },
		{ "application", "openmetrics-text", "1.0.0", 0, 0, specificity },
		{ NULL, NULL, NULL, 0, 0, protobuf_specificity },
		{ "application", "openmetrics-text", "0.0.1", 0, 0, specificity },
	};
	enum pcpu_metrics_format text, om = PCPU_METRICS_OPENMETRICS;
	int om_q;

	each_element(accept, offer_range, offers);
	/* OpenMetrics 0.0.1 only where ranked above 1.0.0 (a range of no version matches both) */
	om_q = offers[1].q;
	if (offers[3].q > om_q) {
		om = PCPU_METRICS_OPENMETRICS_0_0_1;
		om_q = offers[3].q;
	}
	text = om_q > offers[0].q ? om : PCPU_METRICS_PROMETHEUS;
	/* a protobuf range with a q above both (an unmatched offer's q is 0) */
	if (offers[2].q > offers[0].q && offers[2].q > om_q)
		return PCPU_METRICS_PROTOBUF;
	return text;
}

#ifdef PCPU_HAVE_ZLIB
/* gzip's q-value if named (then any * does not count), and *'s */
struct coding_q {
	int gzip, any;
};

static void coding_range(struct span el, void *arg)
{
	struct coding_q *cq = arg;
	const char *semi = memchr(el.start, ';', (size_t)(el.end - el.start));
	struct span coding = trim(el.start, semi ? semi : el.end);
	int q = 1000;

	if (semi) {
		struct span param = trim(semi + 1, el.end);
		const char *eq = memchr(param.start, '=', (size_t)(param.end - param.start));

		if (eq && span_is(trim(param.start, eq), "q"))
			q = parse_q(trim(eq + 1, param.end));
		if (q < 0)
			return;
	}
	if (span_is(coding, "gzip") || span_is(coding, "x-gzip"))
		cq->gzip = q > cq->gzip ? q : cq->gzip;
	else if (span_is(coding, "*"))
		cq->any = q;
}
#endif

PCPU_EXPORT bool pcpu_metrics_gzip_accepted(const char *accept_encoding)
{
#ifdef PCPU_HAVE_ZLIB
	struct coding_q cq = { -1, -1 };

	each_element(accept_encoding, coding_range, &cq);
	return cq.gzip >= 0 ? cq.gzip > 0 : cq.any > 0;
#else
	(void)accept_encoding;
	return false;
#endif
}

#ifdef PCPU_HAVE_ZLIB
/* Replaces @res's body by its gzip; -ENOMEM if zlib cannot. */
static int gzip_body(struct pcpu_metrics_response *res)
{
	z_stream z = { 0 };
	char *out;
	int err;

	/* 15 + 16: a gzip header and trailer around the deflate stream */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	z.avail_out = (uInt)deflateBound(&z, (uLong)res->length) + 32;
	out = malloc(z.avail_out);
	if (!out) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)res->body;
	z.avail_in = (uInt)res->length;
	z.next_out = (Bytef *)out;
	err = deflate(&z, Z_FINISH);
	deflateEnd(&z);
	if (err != Z_STREAM_END) {
		free(out);
		return -ENOMEM;
	}
	free(res->body);
	res->body = out;
	res->length = z.total_out;
	res->content_encoding = "gzip";
	return 0;
}
#endif

PCPU_EXPORT int pcpu_metrics_respond(const char *accept, const char *accept_encoding,
				     struct pcpu_metrics_response *res)
{
	return pcpu_metrics_registry_respond(NULL, accept, accept_encoding, res);
}

PCPU_EXPORT int pcpu_metrics_registry_respond(struct pcpu_metrics_registry *r, const char *accept,
					      const char *accept_encoding,
					      struct pcpu_metrics_response *res)
{
	enum pcpu_metrics_format f = pcpu_metrics_negotiate(accept);
	FILE *out;
	int err;

	if (!res)
		return -EINVAL;
	*res = (struct pcpu_metrics_response){ .content_type = pcpu_metrics_content_type(f) };
	out = open_memstream(&res->body, &res->length);
	if (!out)
		return -ENOMEM;
	err = pcpu_metrics_registry_write(r, out, f);
	if (fclose(out) != 0 && err == 0)
		err = -ENOMEM;
	if (err == 0 && pcpu_metrics_gzip_accepted(accept_encoding)) {
#ifdef PCPU_HAVE_ZLIB
		err = gzip_body(res);
#endif
	}
	if (err) {
		pcpu_metrics_response_free(res);
		res->content_type = NULL;
	}
	return err;
}

PCPU_EXPORT void pcpu_metrics_response_free(struct pcpu_metrics_response *res)
{
	if (!res)
		return;
	free(res->body);
	res->body = NULL;
	res->length = 0;
	res->content_encoding = NULL;
}
