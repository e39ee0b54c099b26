/* SPDX-License-Identifier: MIT */
/*
 * What the example programs share besides the library: a monotonic clock
 * and reading their command lines. Not part of the library's
 * API: a user's program has its own.
 */
#ifndef PERCPU_EXAMPLE_H
#define PERCPU_EXAMPLE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* CLOCK_MONOTONIC in seconds. */
static inline double example_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * @s as a decimal number in [@min, @max], into @out. False for anything
 * else: empty, signed, trailing text, out of range.
 */
static inline bool example_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s == '\0' || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/*
 * The end of a getopt() switch, for what is not one of the program's
 * options: -h asks for @usage on stdout (exit status 0); anything else is a
 * usage error (@usage on stderr, 2). Returns main's status.
 */
static inline int example_other_option(int opt, void (*usage)(FILE *f))
{
	usage(opt == 'h' ? stdout : stderr);
	return opt == 'h' ? 0 : 2;
}

#endif /* PERCPU_EXAMPLE_H */
