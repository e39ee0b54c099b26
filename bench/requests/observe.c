/* SPDX-License-Identifier: MIT */
/*
 * percpu-observe-bench: a histogram observe fed nanoseconds (uniform in
 * [50,000, 5,000,000], the README's unit) or microseconds (the same / 1000),
 * on 1 and 2 threads, for the library's pcpu_histogram_observe() and for
 * 0.3's layout rebuilt here from the public stat-set API (one stat set:
 * a +1 per bucket and the whole value into one "sum" item of default
 * options), paired in each run: every run measures every variant back to
 * back, so that ratios compare numbers taken moments apart.
 *
 * Reported per variant and thread count: the median over the runs of
 * Mops/s of wall time, of ns of thread CPU time per observe (which a
 * loaded machine disturbs less), and of slow paths per million observes
 * (adds that left the fast path: each folds or writes a shared central
 * value; a count that no load disturbs); 2T/1T is the 2-thread figure over
 * the 1-thread one of the same run. Each run's sum and count are checked
 * against the threads' own tallies.
 *
 * Usage: percpu-observe-bench [-d MS] [-r RUNS] [--min-scaling X] [--max-slow N]
 *   --min-scaling X: exit 1 unless the library's 2-thread wall-clock
 *   throughput with nanoseconds is at least X times its 1-thread one (only
 *   meaningful on a machine with 2 idle CPUs);
 *   --max-slow N: exit 1 if the library's observes of nanoseconds take more
 *   than N slow paths per million (1 thread).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <percpu/histogram.h>
#include <percpu/stat.h>

#include "timing.h"

#define NR_BOUNDS 13
#define MAX_RUNS 64

static const int64_t bounds[NR_BOUNDS] = {
	50000, 100000, 250000, 500000, 1000000, 2500000, 5000000,
	10000000, 25000000, 50000000, 100000000, 250000000, 1000000000,
};

/* 0.3's histogram: buckets and the whole sum in one stat set, default options */
static struct pcpu_stat *old_make(uint32_t nr_bounds)
{
	struct pcpu_stat_item items[NR_BOUNDS + 2];
	char names[NR_BOUNDS + 2][8];

	for (unsigned int i = 0; i < nr_bounds + 2; i++) {
		snprintf(names[i], sizeof(names[i]), i <= nr_bounds ? "b%u" : "sum", i);
		items[i] = (struct pcpu_stat_item){ .name = names[i], .group = 1 };
	}
	return pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items,
							  .nr_items = nr_bounds + 2 });
}

/* 0.3's pcpu_histogram_observe(), word for word */
static inline void old_observe(struct pcpu_histogram *h, int64_t value)
{
	uint32_t lo = 0, hi;

	if (pcpu_unlikely(h == NULL)) {
		pcpu_stat_add((struct pcpu_stat *)0, 0, value);
		return;
	}
	hi = h->nr_bounds;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (value <= h->bounds[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	pcpu_stat_add(h->set, lo, 1);
	pcpu_stat_add(h->set, h->nr_bounds + 1, value);
}

/*
 * The stat sets' slow path, counted: an add that leaves the fast path is
 * one that folds (or sends its amount to the shared central value). This
 * executable's definition takes the inline adds' calls; the library's is
 * the next one.
 */
static _Thread_local uint64_t slow_calls;
static void (*real_add_slow)(struct pcpu_stat *, unsigned int, int64_t);

void __pcpu_stat_add_slow(struct pcpu_stat *s, unsigned int item, int64_t amount)
{
	slow_calls++;
	real_add_slow(s, item, amount);
}

enum variant { V_OLD, V_NEW, V_NOBRANCH, NR_VARIANTS };
static const char *const variant_names[NR_VARIANTS] = { "0.3 layout", "library",
							 "no-sparse" };

/*
 * The library's observe before sparse histograms (0.5 up to 2026-12): the
 * same histogram without the sparse branch, to pair against the inline one.
 */
static inline void nobranch_observe(struct pcpu_histogram *h, int64_t value)
{
	if (pcpu_unlikely(h == NULL)) {
		pcpu_stat_add((struct pcpu_stat *)0, 0, value);
		return;
	}
	pcpu_stat_add(h->set, __pcpu_histogram_bucket(h, value), 1);
	pcpu_counter_add(h->sum, value);
}

static struct pcpu_histogram old_h, *new_h;

struct worker {
	pthread_t thread;
	enum variant v;
	int64_t div; /* 1: nanoseconds; 1000: microseconds */
	uint64_t seed;
	uint64_t ops, cpu_ns, slow;
	int64_t sum;
	char pad[64];
};

static atomic_int go, stop;

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t x = w->seed | 1, ops = 0, t0;
	int64_t sum = 0;

	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	slow_calls = 0;
	t0 = timing_thread_cpu_ns();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < 256; i++) {
			int64_t v;

			/* xorshift64: uniform in [50,000, 5,000,000) ns */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			v = (50000 + (int64_t)(x % 4950000)) / w->div;
			sum += v;
			if (w->v == V_OLD)
				old_observe(&old_h, v);
			else if (w->v == V_NOBRANCH)
				nobranch_observe(new_h, v);
			else
				pcpu_histogram_observe(new_h, v);
		}
		ops += 256;
	}
	w->cpu_ns = timing_thread_cpu_ns() - t0;
	w->ops = ops;
	w->sum = sum;
	w->slow = slow_calls;
	return NULL;
}

static int64_t div_now = 1; /* the unit: 1 ns or 1000 ns */
static int64_t bounds_now[NR_BOUNDS];

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/*
 * One measurement: Mops/s of wall time into *wall, ns of CPU per op into
 * *cpu, slow paths per million observations into *slow.
 */
static int measure(enum variant v, unsigned int n, unsigned int ms, uint64_t seed, double *wall,
		   double *cpu, double *slow)
{
	struct worker w[2];
	uint64_t t0, t, ops = 0, cpu_ns = 0, slow_ns = 0, count = 0, counts[NR_BOUNDS + 1];
	int64_t sum = 0, got;
	int err;

	if (v == V_OLD) {
		old_h = (struct pcpu_histogram){ .set = old_make(NR_BOUNDS), .bounds = bounds_now,
						 .nr_bounds = NR_BOUNDS, .scale = 1 };
		if (!old_h.set)
			return -errno;
	} else {
		new_h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
			.name = "bench_observe_seconds", .bounds = bounds_now,
			.nr_bounds = NR_BOUNDS, .scale = 1000000000 / div_now });
		if (!new_h)
			return -errno;
	}
	atomic_store(&go, 0);
	atomic_store(&stop, 0);
	for (unsigned int i = 0; i < n; i++) {
		w[i] = (struct worker){ .v = v, .div = div_now, .seed = seed * 2654435761u + i };
		if (pthread_create(&w[i].thread, NULL, work, &w[i]))
			return -EAGAIN;
	}
	t0 = timing_now_ns();
	atomic_store_explicit(&go, 1, memory_order_release);
	sleep_ms(ms); /* not spinning: the threads may need every CPU */
	atomic_store(&stop, 1);
	for (unsigned int i = 0; i < n; i++) {
		pthread_join(w[i].thread, NULL);
		ops += w[i].ops;
		cpu_ns += w[i].cpu_ns;
		slow_ns += w[i].slow;
		sum += w[i].sum;
	}
	t = timing_now_ns() - t0;
	*slow = (double)slow_ns * 1e6 / (double)ops;
	if (v == V_OLD) {
		int64_t vals[NR_BOUNDS + 2];

		err = pcpu_stat_snapshot(old_h.set, vals, NULL);
		for (int b = 0; b <= NR_BOUNDS; b++)
			counts[b] = (uint64_t)vals[b];
		got = vals[NR_BOUNDS + 1];
		pcpu_stat_destroy(old_h.set);
	} else {
		err = pcpu_histogram_snapshot(new_h, counts, &got);
		pcpu_histogram_destroy(new_h);
	}
	for (int b = 0; b <= NR_BOUNDS; b++)
		count += counts[b];
	if (err || count != ops || got != sum) {
		fprintf(stderr, "%s: sum %lld want %lld, count %llu want %llu\n", variant_names[v],
			(long long)got, (long long)sum, (unsigned long long)count,
			(unsigned long long)ops);
		return -EIO;
	}
	*wall = (double)ops * 1e3 / (double)t;
	*cpu = (double)cpu_ns / (double)ops;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "duration-ms", required_argument, NULL, 'd' },
					      { "runs", required_argument, NULL, 'r' },
					      { "min-scaling", required_argument, NULL, 's' },
					      { "max-slow", required_argument, NULL, 'm' },
					      { NULL, 0, NULL, 0 } };
	unsigned int ms = 200, runs = 7;
	double min_scaling = 0, lib_scaling = 0, max_slow = -1, lib_slow = 0;
	int c;

	while ((c = getopt_long(argc, argv, "d:r:s:m:", opts, NULL)) != -1) {
		if (c == 'd')
			ms = (unsigned int)strtoul(optarg, NULL, 0);
		else if (c == 'r')
			runs = (unsigned int)strtoul(optarg, NULL, 0);
		else if (c == 's')
			min_scaling = strtod(optarg, NULL);
		else if (c == 'm')
			max_slow = strtod(optarg, NULL);
		else
			return 2;
	}
	if (!ms || !runs || runs > MAX_RUNS)
		return 2;
	*(void **)&real_add_slow = dlsym(RTLD_NEXT, "__pcpu_stat_add_slow");
	if (!real_add_slow) {
		fprintf(stderr, "no __pcpu_stat_add_slow in the library: %s\n", dlerror());
		return 1;
	}
	printf("histogram observe, 13 bounds from 50 us to 1 s, values uniform in [50 us, 5 ms],\n"
	       "in ns or in us (bounds in the same unit); %u runs of %u ms, medians over the runs:\n"
	       "Mops/s of wall time, ns of thread CPU time per observe, slow paths (folds)\n"
	       "per million observes; 2T/1T: the 2-thread figure over the 1-thread one of the\n"
	       "same run (wall; CPU: 2 x ns/op at 1 thread over ns/op at 2)\n\n",
	       runs, ms);
	for (int unit = 0; unit < 2; unit++) {
		double wall[NR_VARIANTS][2][MAX_RUNS], cpu[NR_VARIANTS][2][MAX_RUNS];
		double slow[NR_VARIANTS][2][MAX_RUNS];
		double xw[NR_VARIANTS][MAX_RUNS], xc[NR_VARIANTS][MAX_RUNS];

		div_now = unit ? 1000 : 1;
		for (int b = 0; b < NR_BOUNDS; b++)
			bounds_now[b] = bounds[b] / div_now;
		for (unsigned int r = 0; r < runs; r++) {
			for (unsigned int k = 0; k < 2 * NR_VARIANTS; k++) {
				/* rotate the order of the variants and thread counts */
				unsigned int j = (k + r) % (2 * NR_VARIANTS);
				enum variant v = (enum variant)(j / 2);
				unsigned int n = j % 2 + 1;
				int err = measure(v, n, ms, r + 1, &wall[v][n - 1][r],
						  &cpu[v][n - 1][r], &slow[v][n - 1][r]);

				if (err) {
					fprintf(stderr, "run failed: %s\n", strerror(-err));
					return 1;
				}
			}
			for (int v = 0; v < NR_VARIANTS; v++) {
				xw[v][r] = wall[v][1][r] / wall[v][0][r];
				xc[v][r] = cpu[v][0][r] * 2 / cpu[v][1][r];
			}
		}
		for (int v = 0; v < NR_VARIANTS; v++) {
			printf("%-2s %-10s 1T %6.1f Mops/s %5.2f ns %6.0f slow | 2T %6.1f Mops/s"
			       " %5.2f ns %6.0f slow | 2T/1T wall x%.2f, CPU x%.2f\n",
			       unit ? "us" : "ns", variant_names[v], timing_median(wall[v][0], runs),
			       timing_median(cpu[v][0], runs), timing_median(slow[v][0], runs),
			       timing_median(wall[v][1], runs), timing_median(cpu[v][1], runs),
			       timing_median(slow[v][1], runs), timing_median(xw[v], runs),
			       timing_median(xc[v], runs));
			if (!unit && v == V_NEW) {
				lib_scaling = timing_median(xw[v], runs);
				lib_slow = timing_median(slow[v][0], runs);
			}
		}
	}
	if (min_scaling > 0 && lib_scaling < min_scaling) {
		printf("FAIL: the library's 2-thread observe with nanoseconds is x%.2f of 1 thread,"
		       " below x%.2f\n", lib_scaling, min_scaling);
		return 1;
	}
	if (max_slow >= 0 && lib_slow > max_slow) {
		printf("FAIL: the library's observe of nanoseconds takes %.0f slow paths per"
		       " million, above %.0f\n", lib_slow, max_slow);
		return 1;
	}
	return 0;
}
