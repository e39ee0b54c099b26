/* SPDX-License-Identifier: MIT */
/*
 * The /metrics response (<percpu/metrics_http.h>): the format negotiated
 * from Accept headers as Prometheus 2.x and 3.x send them and as people
 * write them, gzip from Accept-Encoding, and the body: what
 * pcpu_metrics_write() writes, gzipped byte for byte when asked.
 */
#define _GNU_SOURCE /* open_memstream in helpers.h */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <string.h>

#include <percpu/counter.h>
#include <percpu/metrics.h>
#include <percpu/metrics_http.h>

#include "helpers.h"

#ifdef PCPU_TEST_HAVE_ZLIB
#include <zlib.h>
#endif

struct accept_case {
	const char *accept;
	enum pcpu_metrics_format want;
};

#define OM PCPU_METRICS_OPENMETRICS
#define TEXT PCPU_METRICS_PROMETHEUS
#define PB PCPU_METRICS_PROTOBUF
#define OM001 PCPU_METRICS_OPENMETRICS_0_0_1

static struct accept_case accept_cases[] = {
	/* no header, or nothing we can read: the text format */
	{ NULL, TEXT },
	{ "", TEXT },
	{ "@@@, ;;;, /", TEXT },
	/* Prometheus 2.42's default */
	{ "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
	  "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", OM },
	/* Prometheus 2.x with OpenMetrics off (scrape_protocols text only) */
	{ "text/plain;version=0.0.4;q=1,*/*;q=0.1", TEXT },
	/* Prometheus 3.x's default (config.DefaultScrapeProtocols, weights from 0.6) */
	{ "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
	  "application/openmetrics-text;version=0.0.1;q=0.5,"
	  "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,"
	  "*/*;q=0.2", OM },
	/* Prometheus 3.x with native histograms (DefaultProtoFirstScrapeProtocols) */
	{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
	  "encoding=delimited;q=0.5,application/openmetrics-text;version=1.0.0;"
	  "escaping=allow-utf-8;q=0.4,application/openmetrics-text;version=0.0.1;q=0.3,"
	  "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.2,text/plain;version=0.0.4;q=0.1,"
	  "*/*;q=0.05", PB },
	/* Prometheus 3.x told to prefer the classic text format */
	{ "text/plain;version=0.0.4;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,"
	  "*/*;q=0.1", TEXT },
	/* OpenMetrics 0.0.1 alone, or above 1.0.0: its Content-Type (since 0.4) */
	{ "application/openmetrics-text;version=0.0.1", OM001 },
	{ "application/openmetrics-text;version=0.0.1;q=0.9,application/openmetrics-text;q=0.8",
	  OM001 },
	{ "application/openmetrics-text;version=0.0.1;q=0.5,text/plain;q=0.6", TEXT },
	{ "application/openmetrics-text;version=0.0.1,application/openmetrics-text", OM },
	/* all three at q 1 (the wildcard's): a tie, which goes to text */
	{ "application/openmetrics-text;version=0.0.1,*/*", TEXT },
	/* a version we do not write does not match */
	{ "text/plain;version=1.0.0;q=1, application/openmetrics-text;version=1.0.0;q=0.2", OM },
	/* a version as a quoted-string (RFC 9110 5.6.4), as some clients send it */
	{ "application/openmetrics-text; version=\"1.0.0\"", OM },
	{ "application/openmetrics-text; version=\"0.0.1\", text/plain;q=0.5", OM001 },
	{ "text/plain; version=\"0.0.4\"; q=0.5, application/openmetrics-text;q=0.4", TEXT },
	/* plain media types, spaces, case */
	{ "application/openmetrics-text", OM },
	{ "text/plain", TEXT },
	{ " Application/OpenMetrics-Text ; Version=1.0.0 ", OM },
	/* wildcards count at their own q; the most specific range decides */
	{ "*/*", TEXT },
	{ "application/*;q=0.9, text/plain;q=0.8", OM },
	{ "text/*;q=0.9, application/*;q=0.8", TEXT },
	{ "application/openmetrics-text;q=0, */*", TEXT },
	{ "text/plain;q=0, application/openmetrics-text;q=0.001", OM },
	/* ties go to the text format; a bad q drops its range */
	{ "text/plain;q=0.9, application/openmetrics-text;q=0.9", TEXT },
	{ "application/openmetrics-text;q=1.5, text/plain;q=0.1", TEXT },
	{ "application/openmetrics-text;q=abc", TEXT },
	{ "application/openmetrics-text;q=0.5, text/plain;q=0.499", OM },
	/* Prometheus 2.42 with --enable-feature=native-histograms (scrape.go) */
	{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
	  "encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,"
	  "application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,"
	  "*/*;q=0.1", PB },
	/* as later 2.x send it (acceptHeader(): weights) */
	{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
	  "encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2", PB },
	/* protobuf: parameters in any order, among others; case as RFC 9110 */
	{ "application/vnd.google.protobuf;encoding=delimited;proto=io.prometheus.client.MetricFamily",
	  PB },
	{ "Application/Vnd.Google.Protobuf ; Encoding=\"Delimited\" ; foo=bar ; "
	  "Proto=\"io.prometheus.client.MetricFamily\" ; q=0.9, text/plain;q=0.8", PB },
	/* the message name is exact; other encodings and bare protobuf do not match */
	{ "application/vnd.google.protobuf;proto=io.prometheus.client.metricfamily;"
	  "encoding=delimited", TEXT },
	{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text",
	  TEXT },
	{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily", TEXT },
	{ "application/vnd.google.protobuf;encoding=delimited", TEXT },
	{ "application/vnd.google.protobuf", TEXT },
	/* no wildcard matches it, however it ranks */
	{ "application/*", OM },
	{ "*/*;q=1, application/openmetrics-text;q=0.1", TEXT },
	/* it must beat both text formats; a tie goes to text */
	{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
	  "encoding=delimited;q=0.5,application/openmetrics-text;q=0.5", OM },
	{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
	  "encoding=delimited;q=0.5,text/plain;q=0.5", TEXT },
	{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
	  "encoding=delimited;q=0.5,application/openmetrics-text;q=0.6,text/plain;q=0.1", OM },
	{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
	  "encoding=delimited;q=0.5,*/*;q=0.6", TEXT },
	{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
	  "encoding=delimited;q=0", TEXT },
	{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
	  "encoding=delimited;q=0.001", PB },
};

/*
 * The parameters are indices into the tables: a test may run in a process
 * of its own where pointers in copied parameters would not be valid.
 */
static size_t case_indices[64];

static struct criterion_test_params indices(size_t n)
{
	for (size_t i = 0; i < n; i++)
		case_indices[i] = i;
	return cr_make_param_array(size_t, case_indices, n);
}

ParameterizedTestParameters(metrics_http, accept_picks_the_format_prometheus_asked_for)
{
	return indices(sizeof(accept_cases) / sizeof(accept_cases[0]));
}

ParameterizedTest(size_t *i, metrics_http, accept_picks_the_format_prometheus_asked_for)
{
	const struct accept_case *c = &accept_cases[*i];

	cr_assert_eq(pcpu_metrics_negotiate(c->accept), c->want, "Accept: %s",
		     c->accept ? c->accept : "(none)");
}

struct encoding_case {
	const char *accept_encoding;
	bool gzip;
};

static struct encoding_case encoding_cases[] = {
	{ NULL, false },
	{ "", false },
	{ "gzip", true },
	{ "GZIP", true },
	{ "br, x-gzip;q=0.5", true },
	{ "deflate, gzip;q=0", false },
	{ "identity", false },
	{ "*", true },
	{ "gzip;q=0, *", false },
	{ "*;q=0", false },
	{ "gzip;q=2", false },
};

ParameterizedTestParameters(metrics_http, accept_encoding_allows_gzip_only_when_it_says_so)
{
	return indices(sizeof(encoding_cases) / sizeof(encoding_cases[0]));
}

ParameterizedTest(size_t *i, metrics_http, accept_encoding_allows_gzip_only_when_it_says_so)
{
	const struct encoding_case *c = &encoding_cases[*i];
#ifdef PCPU_TEST_HAVE_ZLIB
	bool want = c->gzip;
#else
	bool want = false; /* no zlib: never */
#endif
	cr_assert_eq(pcpu_metrics_gzip_accepted(c->accept_encoding), want, "Accept-Encoding: %s",
		     c->accept_encoding ? c->accept_encoding : "(none)");
}

static struct pcpu_counter requests;

static void register_requests(void)
{
	static const char *const labels[] = { "code", "200", NULL };
	struct pcpu_metric_desc d = { .name = "http_test_requests", .help = "Requests.",
				      .kind = PCPU_METRIC_COUNTER, .labels = labels };

	cr_assert_eq(pcpu_counter_init(&requests, 0), 0);
	cr_assert_eq(pcpu_counter_register(&requests, &d), 0);
	pcpu_counter_add(&requests, 42);
}

TestSuite(metrics_http, .init = register_requests, .fini = NULL, .timeout = 30);

Test(metrics_http, the_response_is_the_exposition_in_the_negotiated_format)
{
	struct pcpu_metrics_response res;
	char *want = metrics_text(PCPU_METRICS_OPENMETRICS);

	cr_assert_eq(pcpu_metrics_respond("application/openmetrics-text;version=1.0.0", NULL, &res),
		     0);
	cr_assert_str_eq(res.content_type, pcpu_metrics_content_type(PCPU_METRICS_OPENMETRICS));
	cr_assert_null(res.content_encoding);
	cr_assert_eq(res.length, strlen(want));
	cr_assert_eq(memcmp(res.body, want, res.length), 0);
	cr_assert(strstr(want, "http_test_requests_total{code=\"200\"} 42\n") != NULL, "%s", want);
	cr_assert(res.length >= 6 && memcmp(res.body + res.length - 6, "# EOF\n", 6) == 0);
	pcpu_metrics_response_free(&res);
	cr_assert_null(res.body);
	free(want);

	/* OpenMetrics 0.0.1 only: the same body, under its own version */
	want = metrics_text(PCPU_METRICS_OPENMETRICS);
	cr_assert_eq(pcpu_metrics_respond("application/openmetrics-text;version=0.0.1", NULL, &res),
		     0);
	cr_assert_str_eq(res.content_type,
			 "application/openmetrics-text; version=0.0.1; charset=utf-8");
	cr_assert_eq(res.length, strlen(want));
	cr_assert_eq(memcmp(res.body, want, res.length), 0);
	pcpu_metrics_response_free(&res);
	free(want);

	want = metrics_text(PCPU_METRICS_PROMETHEUS);
	cr_assert_eq(pcpu_metrics_respond(NULL, "identity", &res), 0);
	cr_assert_str_eq(res.content_type, pcpu_metrics_content_type(PCPU_METRICS_PROMETHEUS));
	cr_assert_eq(res.length, strlen(want));
	cr_assert_eq(memcmp(res.body, want, res.length), 0);
	pcpu_metrics_response_free(&res);
	free(want);
}

Test(metrics_http, a_gzipped_response_inflates_to_the_exposition)
{
#ifdef PCPU_TEST_HAVE_ZLIB
	struct pcpu_metrics_response res;
	char *want = metrics_text(PCPU_METRICS_PROMETHEUS);
	size_t cap = strlen(want) + 1;
	char *got = malloc(cap);
	z_stream z = { 0 };

	cr_assert_eq(pcpu_metrics_respond("text/plain", "gzip, deflate", &res), 0);
	cr_assert_str_eq(res.content_encoding, "gzip");
	cr_assert_geq(res.length, 18, "a gzip member has a header and a trailer");
	cr_assert_eq((unsigned char)res.body[0], 0x1f);
	cr_assert_eq((unsigned char)res.body[1], 0x8b);
	cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (Bytef *)res.body;
	z.avail_in = (uInt)res.length;
	z.next_out = (Bytef *)got;
	z.avail_out = (uInt)cap;
	cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
	cr_assert_eq(z.total_out, strlen(want));
	cr_assert_eq(memcmp(got, want, z.total_out), 0);
	inflateEnd(&z);
	pcpu_metrics_response_free(&res);
	free(got);
	free(want);
#else
	cr_skip_test("built without zlib");
#endif
}

/* pcpu_metrics_write()'s bytes for @f (a protobuf body may hold NULs). */
static char *metrics_bytes(enum pcpu_metrics_format f, size_t *len)
{
	char *body = NULL;
	FILE *out = open_memstream(&body, len);

	cr_assert_not_null(out);
	cr_assert_eq(pcpu_metrics_write(out, f), 0);
	fclose(out);
	return body;
}

#define PROMETHEUS_PROTOBUF                                                              \
	"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"       \
	"encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,"           \
	"application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5," \
	"*/*;q=0.1"

Test(metrics_http, a_protobuf_response_is_the_protobuf_exposition_gzipped_or_not)
{
	struct pcpu_metrics_response res;
	size_t len;
	char *want = metrics_bytes(PCPU_METRICS_PROTOBUF, &len);
	/* the counter's family: its name with "_total", as a length-delimited field 1 */
	static const char name[] = "\x0a\x18http_test_requests_total";

	cr_assert_eq(pcpu_metrics_respond(PROMETHEUS_PROTOBUF, NULL, &res), 0);
	cr_assert_str_eq(res.content_type,
			 "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
			 "encoding=delimited");
	cr_assert_str_eq(res.content_type, pcpu_metrics_content_type(PCPU_METRICS_PROTOBUF));
	cr_assert_null(res.content_encoding);
	cr_assert_eq(res.length, len);
	cr_assert_eq(memcmp(res.body, want, len), 0);
	cr_assert(memmem(want, len, name, sizeof(name) - 1) != NULL);
	pcpu_metrics_response_free(&res);
#ifdef PCPU_TEST_HAVE_ZLIB
	{
		char *got = malloc(len + 1);
		z_stream z = { 0 };

		cr_assert_eq(pcpu_metrics_respond(PROMETHEUS_PROTOBUF, "gzip", &res), 0);
		cr_assert_str_eq(res.content_type, pcpu_metrics_content_type(PCPU_METRICS_PROTOBUF));
		cr_assert_str_eq(res.content_encoding, "gzip");
		cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
		z.next_in = (Bytef *)res.body;
		z.avail_in = (uInt)res.length;
		z.next_out = (Bytef *)got;
		z.avail_out = (uInt)len + 1;
		cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
		cr_assert_eq(z.total_out, len);
		cr_assert_eq(memcmp(got, want, len), 0);
		inflateEnd(&z);
		pcpu_metrics_response_free(&res);
		free(got);
	}
#endif
	free(want);
}

Test(metrics_http, respond_without_a_response_returns_einval)
{
	cr_assert_eq(pcpu_metrics_respond(NULL, NULL, NULL), -EINVAL);
	pcpu_metrics_response_free(NULL);
}
