/* SPDX-License-Identifier: MIT */
/*
 * percpu-stat's command line (stat_args.h). A small parser of its own
 * rather than getopt_long(): that one keeps its place in globals (optind,
 * and a hidden one for a cluster of short options) and permutes argv,
 * which a parser called again and again (by the fuzzer) must not depend
 * on. It takes what getopt_long() took for these options: "-i 1", "-i1",
 * "-hn2" (a cluster), "--listen ADDR:PORT", "--listen=ADDR:PORT", a long
 * option's unique prefix ("--prom"), NAME before or after the options, and
 * "--" before a NAME that starts with '-'.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stat_args.h"

void percpu_stat_usage(FILE *out)
{
	fprintf(out,
		"usage: percpu-stat [-i SECONDS] [-n COUNT] [--prometheus | --openmetrics] NAME\n"
		"       percpu-stat --listen ADDR:PORT NAME\n"
		"Prints every item of the percpu shared segment NAME (a shm name, such as\n"
		"/myd-stats; the leading slash may be left out): name, exact value,\n"
		"approximate value and its error bound.\n"
		"  -i SECONDS      repeat every SECONDS (a decimal number)\n"
		"  -n COUNT        stop after COUNT reports (default: 1, or for ever with -i)\n"
		"  --prometheus    Prometheus text format 0.0.4\n"
		"  --openmetrics   OpenMetrics 1.0.0\n"
		"                  (repeated: text reports start with '# percpu-stat report N',\n"
		"                  OpenMetrics ones end with '# EOF')\n"
		"  --listen ADDR:PORT  serve NAME at http://ADDR:PORT/metrics until SIGINT or\n"
		"                  SIGTERM, the format negotiated per scrape (ADDR: an IPv4\n"
		"                  address, [IPv6], or empty for every address; PORT 0: any)\n"
		"  -h, --help      this text\n"
		"  --version       the version of percpu-stat\n"
		"A segment that its creator has not finished is waited for, up to 2 s.\n");
}

/* meson.build's version (tools/meson.build); a build without it says so */
#ifndef PERCPU_VERSION
#define PERCPU_VERSION "(unknown version)"
#endif

static const struct {
	const char *name;
	char opt;
	int has_arg;
} long_options[] = {
	{ "prometheus", 'P', 0 },
	{ "openmetrics", 'O', 0 },
	{ "listen", 'L', 1 },
	{ "help", 'h', 0 },
	{ "version", 'V', 0 },
};

#define NR_LONG (sizeof(long_options) / sizeof(long_options[0]))

/*
 * ADDR:PORT, split at the last colon: ADDR an IPv4 address, an IPv6 one in
 * brackets, or empty (NULL: every address); PORT 0 to 65535. ADDR goes to
 * @out->addr_buf; pcpu_metrics_serve() checks it is a numeric address (one
 * too long for the buffer is none). -1 if it is none of these.
 */
static int parse_listen(const char *spec, struct stat_args *out)
{
	const char *colon = strrchr(spec, ':'), *addr = spec;
	char *end;
	size_t len;
	unsigned long p;

	if (!colon || colon[1] < '0' || colon[1] > '9')
		return -1;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno || *end || p > 65535)
		return -1;
	len = (size_t)(colon - spec);
	if (spec[0] == '[' && len >= 2 && colon[-1] == ']') {
		addr++;
		len -= 2;
	}
	if (len >= sizeof(out->addr_buf))
		return -1;
	memcpy(out->addr_buf, addr, len);
	out->addr_buf[len] = '\0';
	out->listen_addr = len ? out->addr_buf : NULL;
	out->listen_port = (unsigned int)p;
	return 0;
}

/* One option @opt with its argument @arg: 0 to go on, else the exit status. */
static int take(struct stat_args *out, char opt, const char *arg, FILE *err)
{
	char *end;

	switch (opt) {
	case 'i':
		out->interval = strtod(arg, &end);
		if (*end || !(out->interval > 0 && out->interval < 1e6)) {
			fprintf(err, "percpu-stat: -i: not a positive number of seconds: %s\n", arg);
			return 2;
		}
		return 0;
	case 'n':
		out->count = strtol(arg, &end, 10);
		if (*end || out->count < 1) {
			fprintf(err, "percpu-stat: -n: not a positive count: %s\n", arg);
			return 2;
		}
		return 0;
	case 'P':
	case 'O':
		if (out->format != STAT_PLAIN) {
			fprintf(err, "percpu-stat: --prometheus and --openmetrics "
				     "exclude each other\n");
			return 2;
		}
		out->format = opt == 'P' ? STAT_PROMETHEUS : STAT_OPENMETRICS;
		return 0;
	case 'L':
		out->listen = 1;
		if (parse_listen(arg, out) < 0) {
			fprintf(err, "percpu-stat: --listen: not ADDR:PORT "
				     "(127.0.0.1:9100, [::1]:9100, :9100): %s\n",
				arg);
			return 2;
		}
		return 0;
	case 'V':
		printf("percpu-stat %s\n", PERCPU_VERSION);
		out->help = 1;
		return 0;
	default: /* 'h' */
		percpu_stat_usage(stdout);
		out->help = 1;
		return 0;
	}
}

/* --NAME[=ARG] at argv[*i] (@s past the dashes); 0 to go on, else the exit status. */
static int long_option(int argc, char **argv, int *i, const char *s, struct stat_args *out,
		       FILE *err)
{
	const char *eq = strchr(s, '=');
	size_t len = eq ? (size_t)(eq - s) : strlen(s);
	int found = -1, matches = 0;

	for (size_t k = 0; k < NR_LONG; k++) {
		if (strncmp(long_options[k].name, s, len) != 0)
			continue;
		if (strlen(long_options[k].name) == len) { /* exact: wins over prefixes */
			found = (int)k;
			matches = 1;
			break;
		}
		found = (int)k;
		matches++;
	}
	if (matches != 1) {
		fprintf(err, matches ? "percpu-stat: option '--%.*s' is ambiguous\n" :
				       "percpu-stat: unrecognized option '--%.*s'\n",
			(int)len, s);
		percpu_stat_usage(err);
		return 2;
	}
	if (!long_options[found].has_arg) {
		if (eq) {
			fprintf(err, "percpu-stat: option '--%s' doesn't allow an argument\n",
				long_options[found].name);
			percpu_stat_usage(err);
			return 2;
		}
		return take(out, long_options[found].opt, NULL, err);
	}
	if (!eq) {
		if (*i + 1 >= argc) {
			fprintf(err, "percpu-stat: option '--%s' requires an argument\n",
				long_options[found].name);
			percpu_stat_usage(err);
			return 2;
		}
		eq = argv[++*i] - 1;
	}
	return take(out, long_options[found].opt, eq + 1, err);
}

/* The letters of a cluster -abc at argv[*i]; 0 to go on, else the exit status. */
static int short_options(int argc, char **argv, int *i, struct stat_args *out, FILE *err)
{
	for (const char *c = argv[*i] + 1; *c; c++) {
		const char *arg;

		if (*c == 'h')
			return take(out, 'h', NULL, err);
		if (*c != 'i' && *c != 'n') {
			fprintf(err, "percpu-stat: invalid option -- '%c'\n", *c);
			percpu_stat_usage(err);
			return 2;
		}
		if (c[1]) {
			arg = c + 1;
		} else if (*i + 1 < argc) {
			arg = argv[++*i];
		} else {
			fprintf(err, "percpu-stat: option requires an argument -- '%c'\n", *c);
			percpu_stat_usage(err);
			return 2;
		}
		return take(out, *c, arg, err);
	}
	return 0;
}

int percpu_stat_parse_args(int argc, char **argv, struct stat_args *out, FILE *err)
{
	int names = 0, r = 0;

	memset(out, 0, sizeof(*out));
	out->format = STAT_PLAIN;
	out->count = -1;
	for (int i = 1; i < argc && r == 0 && !out->help; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0) { /* the rest are names */
			if (!out->name && i + 1 < argc)
				out->name = argv[i + 1];
			names += argc - i - 1;
			break;
		}
		if (a[0] == '-' && a[1] == '-')
			r = long_option(argc, argv, &i, a + 2, out, err);
		else if (a[0] == '-' && a[1])
			r = short_options(argc, argv, &i, out, err);
		else if (names++ == 0)
			out->name = a;
	}
	if (r || out->help)
		return r;
	if (names != 1) {
		percpu_stat_usage(err);
		return 2;
	}
	/* a server answers each scrape in the format it asks for, when it asks */
	if (out->listen && (out->format != STAT_PLAIN || out->interval > 0 || out->count > 0)) {
		fprintf(err, "percpu-stat: --listen serves each scrape in the format its Accept "
			     "header asks for: it takes no --prometheus, --openmetrics, -i or -n\n");
		return 2;
	}
	return 0;
}
