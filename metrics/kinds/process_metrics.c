/* SPDX-License-Identifier: MIT */
/*
 * The standard process metrics (<percpu/metrics.h>,
 * pcpu_metrics_process_collector()), named as the official Prometheus
 * clients name them, read from /proc at scrape time. What cannot be read
 * (no /proc in a container, say) is left out rather than reported as 0.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <percpu/metrics.h>

/* The fields of /proc/self/stat that the metrics need. */
struct proc_stat {
	unsigned long long utime, stime; /* clock ticks */
	unsigned long long starttime;    /* clock ticks after boot */
	unsigned long long vsize;        /* bytes */
	long long rss;                   /* pages */
};

static int read_proc_stat(struct proc_stat *ps)
{
	char buf[1024], *p;
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command may hold spaces and parentheses: fields follow the last ')' */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	/* from field 3 (state) on: 14 utime, 15 stime, 22 starttime, 23 vsize, 24 rss */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
			  "%*d %*d %llu %llu %lld",
		   &ps->utime, &ps->stime, &ps->starttime, &ps->vsize, &ps->rss) != 5)
		return -1;
	return 0;
}

/* The boot time, from /proc/stat's btime line: seconds since the epoch. */
static long long boot_time(void)
{
	char line[256];
	long long btime = -1;
	FILE *f = fopen("/proc/stat", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %lld", &btime) == 1)
			break;
	fclose(f);
	return btime;
}

/* Open file descriptors, the one that lists them left out. */
static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
			n++;
	closedir(d);
	return n;
}

static int emit_int(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx,
		    const char *name, const char *help, enum pcpu_metric_kind kind, int64_t v)
{
	struct pcpu_metric_sample s = { .name = name, .help = help, .unit = "", .kind = kind,
					.value = v, .scale = 1 };

	return emit(&s, ctx);
}

static int emit_double(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx,
		       const char *name, const char *help, enum pcpu_metric_kind kind, double v)
{
	struct pcpu_metric_sample s = { .name = name, .help = help, .unit = "", .kind = kind,
					.value = (int64_t)v, .scale = 1,
					.flags = PCPU_METRIC_SAMPLE_F_DOUBLE, .dvalue = v };

	return emit(&s, ctx);
}

PCPU_EXPORT int pcpu_metrics_process_collector(int (*emit)(const struct pcpu_metric_sample *s,
							   void *ctx),
					       void *ctx, void *arg)
{
	long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds;
	long long btime = boot_time();
	struct proc_stat ps;
	struct rlimit rl;
	int err = 0;

	(void)arg;
	if (!emit)
		return -EINVAL;
	if (ticks > 0 && read_proc_stat(&ps) == 0) {
		err = emit_double(emit, ctx, "process_cpu_seconds",
				  "Total user and system CPU time spent in seconds.",
				  PCPU_METRIC_COUNTER, (double)(ps.utime + ps.stime) / (double)ticks);
		if (!err)
			err = emit_int(emit, ctx, "process_virtual_memory_bytes",
				       "Virtual memory size in bytes.", PCPU_METRIC_GAUGE,
				       (int64_t)ps.vsize);
		if (!err && page > 0)
			err = emit_int(emit, ctx, "process_resident_memory_bytes",
				       "Resident memory size in bytes.", PCPU_METRIC_GAUGE,
				       (int64_t)ps.rss * page);
		if (!err && btime >= 0)
			err = emit_double(emit, ctx, "process_start_time_seconds",
					  "Start time of the process since unix epoch in seconds.",
					  PCPU_METRIC_GAUGE,
					  (double)btime + (double)ps.starttime / (double)ticks);
	}
	fds = open_fds();
	if (!err && fds >= 0)
		err = emit_int(emit, ctx, "process_open_fds", "Number of open file descriptors.",
			       PCPU_METRIC_GAUGE, fds);
	if (!err && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		err = emit_int(emit, ctx, "process_max_fds",
			       "Maximum number of open file descriptors.", PCPU_METRIC_GAUGE,
			       (int64_t)rl.rlim_cur);
	return err;
}
