/* SPDX-License-Identifier: MIT */
/*
 * percpu-stat: prints the items of a shared segment (<percpu/shared.h>)
 * from outside the processes that count into it, like varnishstat or
 * vmstat -s. It attaches read-only: it never writes the segment nor takes
 * its lock, so it cannot disturb the writers, and it needs read permission
 * only.
 *
 *   percpu-stat [-i SECONDS] [-n COUNT] [--prometheus | --openmetrics] NAME
 *   percpu-stat --listen ADDR:PORT NAME
 *
 * Plain output, one line per item: the name, the exact value (the sum over
 * the CPUs), and the approximate value the writers' read() returns with
 * its error bound. Exit status: 0; 1 if the segment cannot be attached or
 * written out, or is cut short while it reads it, or cannot be served; 2
 * for a usage error.
 *
 * Repeated expositions (-i or -n with a format) are each whole and parse
 * alone once split: in the text format each starts with a comment line
 * "# percpu-stat report N" (comments are allowed there); in OpenMetrics,
 * which allows no other comment, each ends with its own "# EOF".
 *
 * --listen is an exporter beside the processes that count: it serves the
 * segment at /metrics (pcpu_metrics_serve() with the segment's collector),
 * the format negotiated per scrape, until SIGINT or SIGTERM.
 *
 * A segment still being made (EAGAIN) is waited for, up to WAIT_MS. A
 * process with write access may truncate the segment: the library sees it
 * before each report (ENXIO); a truncation in the middle of one raises
 * SIGBUS, which is reported the same way, not died of.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <percpu/metrics_http.h>
#include <percpu/shared.h>

#include "stat_args.h"

/* How long a segment whose creator has not finished it is waited for. */
#define WAIT_MS 2000
#define WAIT_STEP_MS 20

static const char cut_short[] = "its file was truncated (by a process with write access)";
static const char *seg_name; /* for the SIGBUS handler */

/* @s as it goes out in a label value (backslash, double quote, newline escaped); its columns. */
static int put_escaped(FILE *out, const char *s)
{
	int n = 0;

	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			n += fprintf(out, "\\%c", *s);
		else if (*s == '\n')
			n += fprintf(out, "\\n");
		else
			n += fputc(*s, out) != EOF;
	}
	return n;
}

/* NAME{k="v",...} of item @i to @out; the columns it took. */
static int put_name(FILE *out, const struct pcpu_shared *s, unsigned int i)
{
	const char *const *l = pcpu_shared_labels(s, i);
	int n = fprintf(out, "%s", pcpu_shared_name(s, i));

	for (const char *const *p = l; p && *p; p += 2) {
		n += fprintf(out, "%s%s=\"", p == l ? "{" : ",", p[0]);
		n += put_escaped(out, p[1]);
		n += fprintf(out, "\"%s", p[2] ? "" : "}");
	}
	return n;
}

/* Under a histogram's row: its count and cumulative buckets. */
static int print_buckets(const struct pcpu_shared *s, unsigned int i)
{
	uint64_t buckets[PCPU_SHARED_MAX_ITEMS], cumulative = 0, count = 0;
	uint32_t nr = 0;
	const int64_t *bounds = pcpu_shared_bounds(s, i, &nr, NULL);
	int err = pcpu_shared_histogram(s, i, buckets, NULL);

	if (err || !bounds)
		return err ? err : -errno;
	for (uint32_t b = 0; b <= nr; b++)
		count += buckets[b];
	printf("  count %" PRIu64 ", cumulative:", count);
	for (uint32_t b = 0; b <= nr; b++) {
		cumulative += buckets[b];
		if (b < nr)
			printf(" le=%" PRId64 ":%" PRIu64, bounds[b], cumulative);
		else
			printf(" le=+Inf:%" PRIu64 "\n", cumulative);
	}
	return 0;
}

static int print_plain(const struct pcpu_shared *s)
{
	unsigned int n = pcpu_shared_count(s);
	int64_t values[PCPU_SHARED_MAX_ITEMS];
	uint64_t bounds[PCPU_SHARED_MAX_ITEMS];
	int width = 4, err = pcpu_shared_snapshot(s, values, bounds);

	if (err)
		return err;
	/* labels widen the column: measured by writing the names to nowhere */
	FILE *null = fopen("/dev/null", "w");

	for (unsigned int i = 0; i < n; i++) {
		int w = null ? put_name(null, s, i) : (int)strlen(pcpu_shared_name(s, i));

		if (w > width)
			width = w;
	}
	if (null)
		fclose(null);
	printf("%-*s %20s %20s %s\n", width, "# name", "exact", "approx", "bound");
	for (unsigned int i = 0; i < n; i++) {
		/* a histogram's row is its sum; its buckets follow */
		printf("%*s", width - put_name(stdout, s, i), "");
		printf(" %20" PRId64 " %20" PRId64 " \u00b1%" PRIu64 "\n", values[i],
		       pcpu_shared_read(s, i), bounds[i]);
		if (pcpu_shared_kind(s, i) == PCPU_METRIC_HISTOGRAM) {
			err = print_buckets(s, i);
			if (err)
				return err;
		}
	}
	return fflush(stdout) == 0 ? 0 : -errno;
}

/* Attaches read-only; a segment whose creator is still filling it is worth a short wait. */
static struct pcpu_shared *attach(const char *name)
{
	for (int waited = 0;; waited += WAIT_STEP_MS) {
		struct pcpu_shared *s = pcpu_shared_open(name, PCPU_SHARED_RDONLY);

		if (s || errno != EAGAIN || waited >= WAIT_MS)
			return s;
		usleep(WAIT_STEP_MS * 1000);
	}
}

/* To stderr, from a signal handler. */
static void say(const char *text)
{
	ssize_t r = write(2, text, strlen(text));

	(void)r;
}

/* A load past the end of a segment cut short under a report: say so, exit 1. */
static void on_sigbus(int sig)
{
	(void)sig;
	say("percpu-stat: ");
	say(seg_name);
	say(": ");
	say(cut_short);
	say("\n");
	_exit(1);
}

/*
 * The segment layout this program reads (lib/shared/shared_internal.h's
 * SHARED_VERSION; test/fuzz/fuzz_shared.c checks that they agree). Every
 * layout starts with the magic and then the version, at these offsets.
 */
#define STAT_LAYOUT 3u
#ifndef PERCPU_VERSION
#define PERCPU_VERSION "(unknown version)" /* as stat_args.c */
#endif
#define STAT_MAGIC "percpuSH"
#define STAT_VERSION_AT 8

/* Which percpu made a segment of layout @v. */
static const char *layout_maker(uint32_t v)
{
	return v == 1 ? "percpu 0.2" : v == 2 ? "percpu 0.3" : "another percpu";
}

/*
 * A segment refused as not ours: is it one of another layout? Then says
 * which into @buf and returns it; NULL if not (or it cannot tell).
 */
static const char *other_layout(const char *name, char *buf, size_t size)
{
	unsigned char head[STAT_VERSION_AT + 4];
	uint32_t version;
	int fd = shm_open(name, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = pread(fd, head, sizeof(head), 0);
	close(fd);
	if (n != (ssize_t)sizeof(head) || memcmp(head, STAT_MAGIC, 8) != 0)
		return NULL;
	memcpy(&version, head + STAT_VERSION_AT, sizeof(version));
	if (version == STAT_LAYOUT)
		return NULL; /* ours, and corrupt */
	snprintf(buf, size,
		 "a percpu shared segment of layout %" PRIu32 " (made by %s); this percpu-stat "
		 "(%s) reads layout %u only: read it with the percpu-stat of the release "
		 "that made it",
		 version, layout_maker(version), PERCPU_VERSION, STAT_LAYOUT);
	return buf;
}

/* Why @name could not be attached: errno @err. */
static const char *attach_error(const char *name, int err)
{
	static char buf[256];
	const char *other;

	switch (err) {
	case EBADMSG:
		other = other_layout(name, buf, sizeof(buf));
		return other ? other : "not a percpu shared segment (or a corrupt one)";
	case EAGAIN:
		return "not ready after 2 s: its creator has not finished making it, died "
		       "doing so, or it is not a percpu shared segment";
	default:
		return strerror(err);
	}
}

/*
 * Serves @s at /metrics on @addr:@port until SIGINT or SIGTERM: the
 * segment's collector in the exposition, which holds nothing else (this
 * program registers no metric). Returns the exit status.
 */
static int serve(struct pcpu_shared *s, const char *addr, unsigned int port)
{
	struct pcpu_metrics_server *srv;
	sigset_t sigs;
	int sig, err;

	err = pcpu_metrics_collector_add(pcpu_shared_collector, s);
	if (err) {
		fprintf(stderr, "percpu-stat: %s\n", strerror(-err));
		return 1;
	}
	/* the server's thread inherits this mask: only sigwait() takes them */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	srv = pcpu_metrics_serve(addr, port);
	if (!srv) {
		err = errno;
		if (err == ENOTSUP)
			fprintf(stderr, "percpu-stat: --listen: this libpercpu was built "
					"without libmicrohttpd\n");
		else if (err == EINVAL)
			fprintf(stderr, "percpu-stat: --listen: not a numeric IP address: %s\n",
				addr);
		else
			fprintf(stderr, "percpu-stat: --listen: %s port %u: %s\n",
				addr ? addr : "every address", port, strerror(err));
		pcpu_metrics_collector_remove(pcpu_shared_collector, s);
		return err == EINVAL ? 2 : 1;
	}
	printf("listening on %s%s%s:%u\n", addr && strchr(addr, ':') ? "[" : "",
	       addr ? addr : "*", addr && strchr(addr, ':') ? "]" : "",
	       pcpu_metrics_server_port(srv));
	fflush(stdout);
	do {
		if (sigwait(&sigs, &sig) != 0)
			break;
	} while (sig != SIGINT && sig != SIGTERM);
	pcpu_metrics_server_stop(srv);
	pcpu_metrics_collector_remove(pcpu_shared_collector, s);
	return 0;
}

/*
 * --help and --version print and stop: their text must reach stdout's file
 * as a report's must (a full disk, a closed pipe), or the status says so.
 */
static int stdout_written(void)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	fprintf(stderr, "percpu-stat: write error: %s\n", strerror(errno));
	return 1;
}

/* "/@given" (the slash once), whole however long: shm_open() says if it is too long. */
static char *shm_name(const char *given)
{
	char *name = malloc(strlen(given) + 2);

	if (name)
		sprintf(name, "%s%s", given[0] == '/' ? "" : "/", given);
	return name;
}

/* A SIGBUS from now on (the segment cut short under a report) is on_sigbus()'s. */
static void catch_sigbus(void)
{
	struct sigaction sa = { .sa_handler = on_sigbus };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

/* Sleeps @interval seconds, between two reports. */
static void pause_for(double interval)
{
	struct timespec ts = { (time_t)interval,
			       (long)((interval - (double)(time_t)interval) * 1e9) };

	nanosleep(&ts, NULL);
}

/*
 * Report @k (from 0) of @count (0: for ever) in @format: 0 or a negative
 * errno. Each is a whole exposition: in text, a comment says where one
 * starts; OpenMetrics allows no comment, and its # EOF ends one.
 */
static int report(const struct pcpu_shared *s, enum stat_format format, long k, long count)
{
	if (format == STAT_PLAIN)
		return print_plain(s);
	if (format == STAT_PROMETHEUS && count != 1)
		printf("# percpu-stat report %ld\n", k + 1);
	return pcpu_shared_write(s, stdout, format == STAT_PROMETHEUS ? PCPU_METRICS_PROMETHEUS :
									PCPU_METRICS_OPENMETRICS);
}

/*
 * The reports that @a asks of segment @s (@name), every a->interval
 * seconds: stops at the first error and says it. Returns the exit status.
 */
static int reports(const struct pcpu_shared *s, const struct stat_args *a, const char *name)
{
	long count = a->count >= 0 ? a->count : a->interval > 0 ? 0 : 1; /* 0: for ever */
	int err = 0;

	for (long k = 0; !err && (count == 0 || k < count); k++) {
		if (k > 0) {
			pause_for(a->interval);
			if (a->format == STAT_PLAIN)
				putchar('\n');
		}
		err = report(s, a->format, k, count);
	}
	if (err == -ENXIO)
		fprintf(stderr, "percpu-stat: %s: %s\n", name, cut_short);
	else if (err)
		fprintf(stderr, "percpu-stat: writing: %s\n", strerror(-err));
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct stat_args args;
	struct pcpu_shared *s;
	char *name;
	int status = percpu_stat_parse_args(argc, argv, &args, stderr);

	if (status)
		return status;
	if (args.help)
		return stdout_written();
	name = shm_name(args.name);
	if (!name) {
		perror("percpu-stat");
		return 1;
	}
	seg_name = name;
	catch_sigbus();
	s = attach(name);
	if (!s) {
		fprintf(stderr, "percpu-stat: %s: %s\n", name, attach_error(name, errno));
		status = 1;
	} else {
		status = args.listen ? serve(s, args.listen_addr, args.listen_port) :
				       reports(s, &args, name);
		pcpu_shared_close(s);
	}
	free(name);
	return status;
}
