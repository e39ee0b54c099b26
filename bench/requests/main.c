/* SPDX-License-Identifier: MIT */
/*
 * percpu-requests-bench: the `requests` workload of DESIGN.md, a daemon's
 * metrics. Per request: three counter adds (requests +1, bytes in, bytes
 * out) and one latency observation in a 13-bound histogram, kept three ways:
 *
 *   percpu  three pcpu_counters and a pcpu_histogram (no lock, no atomic
 *           RMW on the rseq path);
 *   mutex   a pthread mutex per metric, as libprom (prometheus-client-c)
 *           does: each counter is {lock, value}, the histogram one lock
 *           over its buckets, sum and count;
 *   atomic  shared atomics: one per counter, one per bucket, sum and count.
 *
 * at 1, 2 and 4 threads (median of the runs, Mops/s of wall time), each run
 * checked exactly at the end. Then the cost of one pcpu_metrics_write() of
 * 1,000 registered counters, to /dev/null and to an open_memstream buffer
 * (median of the runs).
 *
 * Usage: percpu-requests-bench [--quick] [-d MS] [-r RUNS]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>

#include "host_cpu.h"
#include "timing.h"

#define NR_BOUNDS 13
#define MAX_THREADS 4
#define EXPO_METRICS 1000
#define CACHELINE 64

static const int64_t bounds[NR_BOUNDS] = {
	50000, 100000, 250000, 500000, 1000000, 2500000, 5000000,
	10000000, 25000000, 50000000, 100000000, 250000000, 1000000000,
};

enum impl { IMPL_PERCPU, IMPL_MUTEX, IMPL_ATOMIC, NR_IMPLS };
static const char *const impl_names[NR_IMPLS] = { "percpu", "mutex", "atomic" };

/* ---- the mutex baseline (libprom's layout: a lock per metric) ---- */

struct mutex_counter {
	_Alignas(CACHELINE) pthread_mutex_t lock;
	int64_t value;
};

struct mutex_histogram {
	_Alignas(CACHELINE) pthread_mutex_t lock;
	uint64_t buckets[NR_BOUNDS + 1];
	uint64_t count;
	int64_t sum;
};

/* ---- the atomic baseline ---- */

struct atomic_metric {
	_Alignas(CACHELINE) _Atomic int64_t value;
};

struct atomic_histogram {
	_Alignas(CACHELINE) _Atomic uint64_t buckets[NR_BOUNDS + 1];
	_Atomic uint64_t count;
	_Atomic int64_t sum;
};

/* the metrics of one run */
static struct {
	struct pcpu_counter pc[3];
	struct pcpu_histogram *ph;
	struct mutex_counter mc[3];
	struct mutex_histogram mh;
	struct atomic_metric ac[3];
	struct atomic_histogram ah;
} m;

struct worker {
	_Alignas(CACHELINE) pthread_t tid;
	enum impl impl;
	uint64_t seed;
	uint64_t ops;
	int64_t totals[3]; /* exact sums of what this thread added */
	int64_t lat_sum;
	double cpu; /* seconds of CPU time the loop got */
};

static atomic_int stop_flag;
static atomic_int go_flag;

static inline uint32_t bucket_of(int64_t v)
{
	uint32_t lo = 0, hi = NR_BOUNDS;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (v <= bounds[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* one request's metrics, with the implementation a constant after inlining */
static inline __attribute__((always_inline)) void request(enum impl impl, int64_t in,
							   int64_t out, int64_t lat)
{
	uint32_t b;

	switch (impl) {
	case IMPL_PERCPU:
		pcpu_counter_add(&m.pc[0], 1);
		pcpu_counter_add(&m.pc[1], in);
		pcpu_counter_add(&m.pc[2], out);
		pcpu_histogram_observe(m.ph, lat);
		break;
	case IMPL_MUTEX:
		pthread_mutex_lock(&m.mc[0].lock);
		m.mc[0].value += 1;
		pthread_mutex_unlock(&m.mc[0].lock);
		pthread_mutex_lock(&m.mc[1].lock);
		m.mc[1].value += in;
		pthread_mutex_unlock(&m.mc[1].lock);
		pthread_mutex_lock(&m.mc[2].lock);
		m.mc[2].value += out;
		pthread_mutex_unlock(&m.mc[2].lock);
		b = bucket_of(lat);
		pthread_mutex_lock(&m.mh.lock);
		m.mh.buckets[b]++;
		m.mh.count++;
		m.mh.sum += lat;
		pthread_mutex_unlock(&m.mh.lock);
		break;
	case IMPL_ATOMIC:
	case NR_IMPLS:
		atomic_fetch_add_explicit(&m.ac[0].value, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&m.ac[1].value, in, memory_order_relaxed);
		atomic_fetch_add_explicit(&m.ac[2].value, out, memory_order_relaxed);
		b = bucket_of(lat);
		atomic_fetch_add_explicit(&m.ah.buckets[b], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&m.ah.count, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&m.ah.sum, lat, memory_order_relaxed);
		break;
	}
}

static inline uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

#define LOOP(impl)                                                                \
	do {                                                                      \
		while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) { \
			for (int i = 0; i < 256; i++) {                           \
				uint64_t r = xorshift(&seed);                     \
				int64_t in = 100 + (int64_t)(r & 511);            \
				int64_t out = 1000 + (int64_t)((r >> 9) & 4095);  \
				/* 10 us to about 2.6 ms, log-ish spread */       \
				int64_t lat = (int64_t)(10000 + ((r >> 21) & 1023) *  \
							((r >> 31) & 255));       \
				request(impl, in, out, lat);                      \
				t0 += 1;                                          \
				t1 += in;                                         \
				t2 += out;                                        \
				ls += lat;                                        \
			}                                                         \
			ops += 256;                                               \
		}                                                                 \
	} while (0)

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t seed = w->seed, ops = 0;
	int64_t t0 = 0, t1 = 0, t2 = 0, ls = 0;

	struct timespec c0, c1;

	while (!atomic_load(&go_flag))
		;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	switch (w->impl) {
	case IMPL_PERCPU:
		LOOP(IMPL_PERCPU);
		break;
	case IMPL_MUTEX:
		LOOP(IMPL_MUTEX);
		break;
	case IMPL_ATOMIC:
	case NR_IMPLS:
		LOOP(IMPL_ATOMIC);
		break;
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	w->cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9;
	w->ops = ops;
	w->totals[0] = t0;
	w->totals[1] = t1;
	w->totals[2] = t2;
	w->lat_sum = ls;
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int setup(enum impl impl)
{
	static const struct pcpu_histogram_desc hd = {
		.name = "bench_request_duration_seconds",
		.help = "bench",
		.unit = "seconds",
		.bounds = bounds,
		.nr_bounds = NR_BOUNDS,
		.scale = 1000000000,
	};

	memset(&m.mc, 0, sizeof(m.mc));
	memset(&m.mh, 0, sizeof(m.mh));
	memset(&m.ac, 0, sizeof(m.ac));
	memset(&m.ah, 0, sizeof(m.ah));
	for (int i = 0; i < 3; i++)
		pthread_mutex_init(&m.mc[i].lock, NULL);
	pthread_mutex_init(&m.mh.lock, NULL);
	if (impl != IMPL_PERCPU)
		return 0;
	for (int i = 0; i < 3; i++) {
		int rc = pcpu_counter_init(&m.pc[i], 0);

		if (rc < 0)
			return rc;
	}
	m.ph = pcpu_histogram_create(&hd);
	return m.ph ? 0 : -errno;
}

/* the metrics' totals after a run, checked against the threads' own */
static int check(enum impl impl, const struct worker *w, unsigned int n)
{
	int64_t want[3] = { 0, 0, 0 }, got[3], lat_want = 0, lat_got = 0;
	uint64_t ops = 0, count = 0;
	int ok = 1;

	for (unsigned int t = 0; t < n; t++) {
		for (int i = 0; i < 3; i++)
			want[i] += w[t].totals[i];
		lat_want += w[t].lat_sum;
		ops += w[t].ops;
	}
	for (int i = 0; i < 3; i++) {
		got[i] = impl == IMPL_PERCPU ? pcpu_counter_sum(&m.pc[i]) :
			 impl == IMPL_MUTEX  ? m.mc[i].value :
					       atomic_load(&m.ac[i].value);
		ok &= got[i] == want[i];
	}
	if (impl == IMPL_PERCPU) {
		uint64_t counts[NR_BOUNDS + 1];

		if (pcpu_histogram_snapshot(m.ph, counts, &lat_got) < 0)
			return 0;
		for (int b = 0; b <= NR_BOUNDS; b++)
			count += counts[b];
	} else if (impl == IMPL_MUTEX) {
		count = m.mh.count;
		lat_got = m.mh.sum;
	} else {
		count = atomic_load(&m.ah.count);
		lat_got = atomic_load(&m.ah.sum);
	}
	ok &= count == ops && lat_got == lat_want;
	return ok;
}

static void teardown(enum impl impl)
{
	for (int i = 0; i < 3; i++)
		pthread_mutex_destroy(&m.mc[i].lock);
	pthread_mutex_destroy(&m.mh.lock);
	if (impl != IMPL_PERCPU)
		return;
	for (int i = 0; i < 3; i++)
		pcpu_counter_destroy(&m.pc[i]);
	pcpu_histogram_destroy(m.ph);
	m.ph = NULL;
}

/* the share of the CPUs the benchmark threads got in the last run */
static double last_cpu_share;

/* one run; Mops/s, or a negative value when the run failed its check */
static double run(enum impl impl, unsigned int n, unsigned int ms, uint64_t seed)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double cpu = 0;
	struct worker w[MAX_THREADS];
	uint64_t ops = 0;
	double t0, t;
	int ok;

	if (setup(impl) < 0) {
		fprintf(stderr, "setup of %s failed\n", impl_names[impl]);
		return -1;
	}
	memset(w, 0, sizeof(w));
	atomic_store(&stop_flag, 0);
	atomic_store(&go_flag, 0);
	for (unsigned int i = 0; i < n; i++) {
		w[i].impl = impl;
		w[i].seed = seed * 0x9e3779b97f4a7c15ULL + i + 1;
		pthread_create(&w[i].tid, NULL, work, &w[i]);
	}
	t0 = now();
	atomic_store(&go_flag, 1);
	sleep_ms(ms);
	atomic_store(&stop_flag, 1);
	for (unsigned int i = 0; i < n; i++)
		pthread_join(w[i].tid, NULL);
	t = now() - t0;
	for (unsigned int i = 0; i < n; i++) {
		ops += w[i].ops;
		cpu += w[i].cpu;
	}
	last_cpu_share = cpu / (t * (double)((long)n < ncpu ? (long)n : ncpu));
	ok = check(impl, w, n);
	teardown(impl);
	if (!ok) {
		fprintf(stderr, "%s, %u threads: the metrics do not add up\n", impl_names[impl], n);
		return -1;
	}
	return (double)ops / t / 1e6;
}

/* ---- exposition ---- */

/* EXPO_METRICS counters @cs named in @names, registered: 0 or a negative errno (said). */
static int register_counters(struct pcpu_counter *cs, char (*names)[32])
{
	for (unsigned int i = 0; i < EXPO_METRICS; i++) {
		struct pcpu_metric_desc d = {
			.name = names[i],
			.help = "a benchmark counter",
			.kind = PCPU_METRIC_COUNTER,
		};
		int rc;

		snprintf(names[i], sizeof(names[i]), "bench_metric_%04u", i);
		rc = pcpu_counter_init(&cs[i], 0);
		if (rc == 0)
			rc = pcpu_counter_register(&cs[i], &d);
		if (rc < 0) {
			fprintf(stderr, "counter %u: %s\n", i, strerror(-rc));
			return rc;
		}
		pcpu_counter_add(&cs[i], (int64_t)i * 1000);
	}
	return 0;
}

/* One pcpu_metrics_write() into @f (NULL: not opened, errno), timed into *@secs; @f closed. */
static int timed_write(FILE *f, double *secs)
{
	double t0;
	int rc;

	if (!f)
		return -errno;
	t0 = now();
	rc = pcpu_metrics_write(f, PCPU_METRICS_PROMETHEUS);
	fflush(f);
	*secs = now() - t0;
	fclose(f);
	return rc;
}

static int bench_exposition(unsigned int runs)
{
	struct pcpu_counter *cs;
	char (*names)[32];
	double dn[64], dm[64];
	size_t bytes = 0;
	int rc = 0;

	if (runs > 64)
		runs = 64;
	cs = calloc(EXPO_METRICS, sizeof(*cs));
	names = calloc(EXPO_METRICS, sizeof(*names));
	if (!cs || !names)
		return -ENOMEM;
	rc = register_counters(cs, names);
	if (rc < 0)
		goto out;
	for (unsigned int r = 0; r < runs; r++) {
		char *buf = NULL;
		size_t len = 0;

		rc = timed_write(fopen("/dev/null", "w"), &dn[r]);
		if (rc >= 0)
			rc = timed_write(open_memstream(&buf, &len), &dm[r]);
		bytes = len;
		free(buf);
		if (rc < 0)
			goto out;
	}
	printf("\npcpu_metrics_write of %u registered counters (Prometheus text, %zu bytes, "
	       "%ld CPUs), median of %u:\n",
	       EXPO_METRICS, bytes, sysconf(_SC_NPROCESSORS_ONLN), runs);
	printf("| target | ms per write | us per metric |\n|---|--:|--:|\n");
	printf("| /dev/null | %.3f | %.3f |\n", timing_median(dn, runs) * 1e3,
	       timing_median(dn, runs) * 1e6 / EXPO_METRICS);
	printf("| open_memstream | %.3f | %.3f |\n", timing_median(dm, runs) * 1e3,
	       timing_median(dm, runs) * 1e6 / EXPO_METRICS);
	rc = 0;
out:
	for (unsigned int i = 0; i < EXPO_METRICS; i++)
		pcpu_counter_destroy(&cs[i]);
	free(cs);
	free(names);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: percpu-requests-bench [--quick] [-d MS] [-r RUNS]\n"
		   "  --quick  -d 50 -r 3\n"
		   "  -d MS    length of one run (default 200)\n"
		   "  -r RUNS  runs per cell, the median is shown (default 7)\n");
}

int main(int argc, char **argv)
{
	static const unsigned int threads[] = { 1, 2, 4 };
	unsigned int ms = 200, runs = 7;
	double res[NR_IMPLS][3], share[NR_IMPLS][3];
	int failed = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			ms = 50;
			runs = 3;
		} else if (strcmp(argv[i], "-d") == 0 && i + 1 < argc) {
			ms = (unsigned int)strtoul(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
			runs = (unsigned int)strtoul(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (ms == 0 || runs == 0 || runs > 64) {
		usage(stderr);
		return 2;
	}
	{
		char cpu[256];

		host_cpu_describe(cpu, sizeof(cpu));
		printf("CPU: %s\n", cpu);
	}
	/* exposition first, with nothing else registered but its 1,000 */
	if (bench_exposition(runs * 3) < 0)
		failed = 1;

	printf("\nrequests: 3 counter adds + 1 histogram observation per request, "
	       "Mops/s (wall), median of %u runs of %u ms, %ld CPUs\n",
	       runs, ms, sysconf(_SC_NPROCESSORS_ONLN));
	for (int impl = 0; impl < NR_IMPLS; impl++) {
		for (int t = 0; t < 3; t++) {
			double v[64], c[64];

			for (unsigned int r = 0; r < runs; r++) {
				v[r] = run((enum impl)impl, threads[t], ms, r + 1);
				c[r] = last_cpu_share;
				if (v[r] < 0)
					failed = 1;
			}
			res[impl][t] = timing_median(v, runs);
			share[impl][t] = timing_median(c, runs);
		}
	}
	printf("| threads | percpu | mutex per metric | shared atomics | vs mutex | vs atomics "
	       "| cpu%% (percpu/mutex/atomic) |\n"
	       "|--:|--:|--:|--:|--:|--:|--:|\n");
	for (int t = 0; t < 3; t++)
		printf("| %u | %.1f | %.1f | %.1f | %.2fx | %.2fx | %.0f/%.0f/%.0f |\n", threads[t],
		       res[IMPL_PERCPU][t], res[IMPL_MUTEX][t], res[IMPL_ATOMIC][t],
		       res[IMPL_PERCPU][t] / res[IMPL_MUTEX][t],
		       res[IMPL_PERCPU][t] / res[IMPL_ATOMIC][t], share[IMPL_PERCPU][t] * 100,
		       share[IMPL_MUTEX][t] * 100, share[IMPL_ATOMIC][t] * 100);
	printf("cpu%%: CPU time the benchmark threads got / (wall time x min(threads, CPUs)); "
	       "under 90 means the machine was busy\n");
	if (failed)
		fprintf(stderr, "percpu-requests-bench: a run failed its check\n");
	return failed;
}
