/* SPDX-License-Identifier: MIT */
/*
 * The headers of a scrape: Accept and Accept-Encoding (two strings of the
 * input, separated by the first NUL) through pcpu_metrics_negotiate(),
 * pcpu_metrics_gzip_accepted() and pcpu_metrics_respond(). Checks: a known
 * format; the response's content type and encoding are what negotiation
 * and the gzip check said; an uncompressed body is the exposition of that
 * format (OpenMetrics ends with "# EOF", text has none, protobuf is
 * delimited MetricFamily messages); respond() never fails but for memory.
 */
#define _GNU_SOURCE
#include <percpu/counter.h>
#include <percpu/metrics.h>
#include <percpu/metrics_http.h>

#include "fuzz.h"

static struct pcpu_counter hits;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	char *buf = malloc(size + 2), *accept, *encoding;
	struct pcpu_metrics_response res = { 0 };
	enum pcpu_metrics_format f;
	bool gzip;
	int err;

	FUZZ_CHECK(buf, "malloc");
	if (!ready) {
		FUZZ_CHECK(pcpu_counter_init(&hits, 0) == 0, "init");
		FUZZ_CHECK(pcpu_counter_register(&hits, &(struct pcpu_metric_desc){
						   .name = "fuzz_scrapes",
						   .kind = PCPU_METRIC_COUNTER,
						   .help = "Scrapes.",
						   .labels = PCPU_LABELS("q", "\"\\\n") }) == 0,
			   "register");
		ready = true;
	}
	pcpu_counter_add(&hits, 1);
	memcpy(buf, data, size);
	buf[size] = buf[size + 1] = '\0';
	accept = buf;
	encoding = buf + strlen(buf) + 1;
	/* a first byte 0x01 or 0x02: that header absent (NULL) */
	if (size && data[0] == 1)
		accept = NULL;
	if (encoding < buf + size && encoding[0] == 2)
		encoding = NULL;

	f = pcpu_metrics_negotiate(accept);
	FUZZ_CHECK(f == PCPU_METRICS_PROMETHEUS || f == PCPU_METRICS_OPENMETRICS ||
			   f == PCPU_METRICS_PROTOBUF || f == PCPU_METRICS_OPENMETRICS_0_0_1,
		   "format %d", f);
	gzip = pcpu_metrics_gzip_accepted(encoding);
	err = pcpu_metrics_respond(accept, encoding, &res);
	FUZZ_CHECK(err == 0 || err == -ENOMEM, "respond: %d", err);
	if (!err) {
		FUZZ_CHECK(res.body && res.length, "an empty body");
		FUZZ_CHECK(res.content_type && strcmp(res.content_type,
						      pcpu_metrics_content_type(f)) == 0,
			   "content type %s for format %d", res.content_type, f);
		FUZZ_CHECK(gzip == (res.content_encoding != NULL), "gzip %d, encoding %s", gzip,
			   res.content_encoding ? res.content_encoding : "none");
		if (!gzip && (f == PCPU_METRICS_OPENMETRICS || f == PCPU_METRICS_OPENMETRICS_0_0_1))
			FUZZ_CHECK(res.length >= 6 &&
				   memcmp(res.body + res.length - 6, "# EOF\n", 6) == 0,
				   "OpenMetrics without # EOF");
		if (!gzip && f == PCPU_METRICS_PROMETHEUS)
			FUZZ_CHECK(!memmem(res.body, res.length, "# EOF", 5), "text with # EOF");
		if (!gzip && f == PCPU_METRICS_PROTOBUF)
			FUZZ_CHECK(fuzz_protobuf_families((const uint8_t *)res.body, res.length),
				   "protobuf that is no delimited MetricFamily stream");
		if (!gzip && f != PCPU_METRICS_PROTOBUF)
			FUZZ_CHECK(strncmp(res.body, "# HELP", 6) == 0, "text without # HELP first");
		if (gzip)
			FUZZ_CHECK(res.length >= 2 && (uint8_t)res.body[0] == 0x1f &&
				   (uint8_t)res.body[1] == 0x8b, "not gzip");
	}
	pcpu_metrics_response_free(&res);
	free(buf);
	return 0;
}
