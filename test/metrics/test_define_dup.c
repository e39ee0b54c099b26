/* SPDX-License-Identifier: MIT */
/*
 * A file-scope definition that fails (issue 24, defect 7: the same name
 * defined in two files hid the second module's adds) is impossible to
 * miss: every exposition fails with its errno and writes nothing, and the
 * built-in server answers 500 naming it; the counters stay usable and
 * pcpu_metrics_define_errors() counts them. This file and
 * define_dup_other.c both define "dup_requests"; a bad name and a bad
 * unit fail too.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <percpu/metrics.h>
#include <percpu/metrics_http.h>

#include "helpers.h"
#include "pcpu_test.h"

PCPU_COUNTER_DEFINE(dup_requests, "dup_requests", "Defined here and in define_dup_other.c.");
PCPU_COUNTER_DEFINE(dup_bad, "dup bad", "Refused: a space in the name.");
PCPU_COUNTER_DEFINE_DESC(dup_bad_unit, .name = "dup_sent", .unit = "bytes",
			 .help = "Refused: the unit is not the end of the name.");

struct pcpu_counter *dup_other(void);

PCPU_TEST(define_dup, every_exposition_fails_and_writes_nothing)
{
	struct pcpu_metrics_response res = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int err;

	cr_assert_not_null(out);
	err = pcpu_metrics_write(out, PCPU_METRICS_PROMETHEUS);
	fclose(out);
	cr_expect(err == -EEXIST || err == -EINVAL, "write returned %d", err);
	cr_expect_eq(len, 0, "wrote %zu bytes", len);
	cr_expect_eq(pcpu_metrics_respond(NULL, NULL, &res), err);
	pcpu_metrics_response_free(&res);
	free(buf);
}

PCPU_TEST(define_dup, failed_definitions_are_counted_and_still_usable)
{
	struct pcpu_counter *other = dup_other();

	cr_expect_eq(pcpu_metrics_define_errors(), 3, "the duplicate, the bad name, the bad unit");
	cr_assert(pcpu_counter_initialized(&dup_requests));
	cr_assert(pcpu_counter_initialized(other));
	cr_assert(pcpu_counter_initialized(&dup_bad));
	cr_assert(pcpu_counter_initialized(&dup_bad_unit));
	pcpu_counter_add(&dup_requests, 3);
	pcpu_counter_add(other, 4);
	cr_expect_eq(pcpu_counter_sum(&dup_requests), 3);
	cr_expect_eq(pcpu_counter_sum(other), 4);
}

#ifdef PCPU_TEST_HAVE_MICROHTTPD
PCPU_TEST(define_dup, the_server_answers_500_naming_the_failed_definition)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", 0);
	struct sockaddr_in in = { .sin_family = AF_INET };
	char buf[4096];
	size_t len = 0;
	ssize_t got;
	int fd;

	cr_assert_not_null(srv);
	in.sin_port = htons((uint16_t)pcpu_metrics_server_port(srv));
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&in, sizeof(in)), 0);
	cr_assert_eq(send(fd, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
	while ((got = recv(fd, buf + len, sizeof(buf) - 1 - len, 0)) > 0)
		len += (size_t)got;
	buf[len] = '\0';
	close(fd);
	pcpu_metrics_server_stop(srv);
	cr_expect(strstr(buf, " 500 ") != NULL, "%s", buf);
	cr_expect(strstr(buf, "exposition failed: the file-scope definition of metric \"") != NULL,
		  "%s", buf);
}
#endif
