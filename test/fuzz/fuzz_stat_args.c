/* SPDX-License-Identifier: MIT */
/*
 * percpu-stat's command line (tools/stat_args.c): the input split at NUL
 * bytes into argv[1..] (argv[0] is "percpu-stat"), parsed twice. Checks:
 * the result is 0 or 2, and the same both times, which no state left
 * between calls would allow otherwise; 2 says why on the error stream;
 * argv is not written; an accepted command line has exactly one NAME, one
 * of argv's strings, an interval in (0, 1e6) or none, a count >= 1 or
 * none, a known format, and --listen a port in 0..65535 (0: any) and an
 * address that is NULL or a string of its buffer, with none of the report
 * options.
 */
#define _GNU_SOURCE
#include "fuzz.h"

#include "stat_args.h"

#define MAX_ARGS 64

static void check_args(const struct stat_args *a, int argc, char **argv)
{
	bool from_argv = false;

	FUZZ_CHECK(a->name, "accepted without a NAME");
	for (int i = 1; i < argc; i++)
		from_argv |= a->name == argv[i];
	FUZZ_CHECK(from_argv, "NAME %s is none of argv's", a->name);
	FUZZ_CHECK(a->format == STAT_PLAIN || a->format == STAT_PROMETHEUS ||
		   a->format == STAT_OPENMETRICS, "format %d", (int)a->format);
	FUZZ_CHECK(a->interval == 0 || (a->interval > 0 && a->interval < 1e6),
		   "interval %g", a->interval);
	FUZZ_CHECK(a->count == -1 || a->count >= 1, "count %ld", a->count);
	if (a->listen) {
		FUZZ_CHECK(a->listen_port <= 65535, "port %u", a->listen_port);
		FUZZ_CHECK(!a->listen_addr || (a->listen_addr == a->addr_buf && a->addr_buf[0] &&
					       strlen(a->addr_buf) < STAT_ADDR_MAX),
			   "address");
		FUZZ_CHECK(a->format == STAT_PLAIN && a->interval == 0 && a->count == -1,
			   "--listen with a report option");
	} else {
		FUZZ_CHECK(!a->listen_addr && a->listen_port == 0, "an address without --listen");
	}
}

static bool same(const struct stat_args *a, const struct stat_args *b)
{
	/* listen_addr points into each one's own buffer */
	return a->format == b->format && a->help == b->help && a->listen == b->listen &&
	       (a->interval == b->interval || (a->interval != a->interval &&
					       b->interval != b->interval)) &&
	       a->count == b->count && a->listen_port == b->listen_port &&
	       a->name == b->name && !a->listen_addr == !b->listen_addr &&
	       strcmp(a->addr_buf, b->addr_buf) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *err;
	static char errbuf[4096];
	char *buf = malloc(size + 1), *copy = malloc(size + 1);
	char *argv[MAX_ARGS + 2] = { "percpu-stat" };
	struct stat_args a, b;
	int argc = 1, r1, r2;
	long said;

	FUZZ_CHECK(buf && copy, "malloc");
	if (!err) {
		/* --help writes to stdout: nowhere, here */
		FUZZ_CHECK(freopen("/dev/null", "w", stdout), "stdout");
		err = fmemopen(errbuf, sizeof(errbuf), "w");
		FUZZ_CHECK(err, "fmemopen");
	}
	memcpy(buf, data, size);
	buf[size] = '\0';
	/* NUL-separated arguments; a last one without its NUL counts too */
	for (size_t i = 0; i < size && argc < MAX_ARGS + 1; i += strlen(buf + i) + 1)
		argv[argc++] = buf + i;
	argv[argc] = NULL;
	memcpy(copy, buf, size + 1);

	fseek(err, 0, SEEK_SET);
	r1 = percpu_stat_parse_args(argc, argv, &a, err);
	fflush(err);
	said = ftell(err);
	FUZZ_CHECK(r1 == 0 || r1 == 2, "returned %d", r1);
	FUZZ_CHECK(r1 == 0 || said > 0, "refused without a word");
	FUZZ_CHECK(r1 == 0 || !a.help, "--help and 2");
	FUZZ_CHECK(memcmp(buf, copy, size + 1) == 0, "argv written");
	if (r1 == 0 && !a.help)
		check_args(&a, argc, argv);

	fseek(err, 0, SEEK_SET);
	r2 = percpu_stat_parse_args(argc, argv, &b, err);
	FUZZ_CHECK(r1 == r2 && same(&a, &b), "a second parse differs: %d then %d", r1, r2);
	free(copy);
	free(buf);
	return 0;
}
