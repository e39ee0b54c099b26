/* SPDX-License-Identifier: MIT */
/*
 * The real parsers on an exposition (check_body.py: prometheus_client's
 * text and OpenMetrics parsers), for tests that build bodies a collector
 * or a family could spoil. Criterion tests only.
 */
#ifndef PCPU_TEST_METRICS_CHECK_BODY_H
#define PCPU_TEST_METRICS_CHECK_BODY_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static inline void check_body_save(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/*
 * check_body.py (PCPU_TEST_CHECK_BODY, set by test/metrics/meson.build) on
 * the text body @prom and the OpenMetrics body @om: both must parse, and
 * with @exemplars >= 0 the OpenMetrics parser must find that many
 * exemplars. The test is skipped without /usr/bin/python3, the script or
 * prometheus_client.
 */
static inline void assert_parsers_accept_exemplars(const char *prom, const char *om,
						   int exemplars)
{
	const char *script = getenv("PCPU_TEST_CHECK_BODY");
	char dir[] = "/tmp/pcpu-body-XXXXXX", cmd[4096], p1[64], p2[64], n[16] = "";
	int st;

	if (!script || access("/usr/bin/python3", X_OK) != 0)
		cr_skip_test("no /usr/bin/python3 or PCPU_TEST_CHECK_BODY");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(p1, sizeof(p1), "%s/prom.txt", dir);
	snprintf(p2, sizeof(p2), "%s/om.txt", dir);
	check_body_save(p1, prom);
	check_body_save(p2, om);
	if (exemplars >= 0)
		snprintf(n, sizeof(n), " %d", exemplars);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 '%s' %s %s%s", script, p1, p2, n);
	st = system(cmd);
	unlink(p1);
	unlink(p2);
	rmdir(dir);
	cr_assert(WIFEXITED(st), "python did not exit");
	if (WEXITSTATUS(st) == 77)
		cr_skip_test("prometheus_client is not installed");
	cr_assert_eq(WEXITSTATUS(st), 0, "a parser rejects the body or its exemplars:\n%s\n%s",
		     prom, om);
}

/* As assert_parsers_accept_exemplars(), without counting exemplars. */
static inline void assert_parsers_accept(const char *prom, const char *om)
{
	assert_parsers_accept_exemplars(prom, om, -1);
}

#endif /* PCPU_TEST_METRICS_CHECK_BODY_H */
