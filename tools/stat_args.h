/* SPDX-License-Identifier: MIT */
/*
 * percpu-stat's command line (tools/percpu-stat.c), parsed apart from its
 * main() so that the fuzzer (test/fuzz/fuzz_stat_args.c) can call it again
 * and again: no exit, no global state (its own loop, not getopt_long's
 * optind), strings of @argv not written (ADDR is copied).
 */
#ifndef PERCPU_STAT_ARGS_H
#define PERCPU_STAT_ARGS_H

#include <stdio.h>

enum stat_format { STAT_PLAIN, STAT_PROMETHEUS, STAT_OPENMETRICS };

/* ADDR of --listen as pcpu_metrics_serve() takes it: "[::1]" is "::1" */
#define STAT_ADDR_MAX 64

struct stat_args {
	enum stat_format format;
	double interval;	/* seconds between reports, 0 < it < 1e6; 0: once */
	long count;		/* reports, >= 1; -1: not given */
	int help;		/* --help or --version given (and written): exit 0 */
	int listen;		/* --listen given */
	const char *listen_addr; /* NULL: every address; else points into addr_buf */
	unsigned int listen_port; /* 0..65535 (0: any) */
	const char *name;	/* the segment's name as given (an element of argv) */
	char addr_buf[STAT_ADDR_MAX];
};

/*
 * Parses percpu-stat's arguments into @out. Returns 0, or 2 for bad usage
 * (said on @err): the exit status. 0 with @out->help set: --help, written
 * to stdout; 0 otherwise: run, with exactly one NAME. Options and NAME may
 * come in any order, and "--" ends the options, as with getopt_long().
 */
int percpu_stat_parse_args(int argc, char **argv, struct stat_args *out, FILE *err);

void percpu_stat_usage(FILE *out);

#endif /* PERCPU_STAT_ARGS_H */
