/* SPDX-License-Identifier: MIT */
/*
 * What one thread-stat update costs one thread, the way memcached 1.6.18
 * does it and the way percpu.patch does: pthread_mutex_lock(&thread's
 * stats.mutex); field++; unlock (uncontended: only `stats` readers ever take
 * it from another thread) against pcpu_stat_add(set, item, 1), and a plain
 * increment of a per-thread field (no lock: what a thread-private stat
 * costs if nobody else needed to read it safely). Medians of 7 rounds.
 *
 * build: cc -O2 -pthread statcost.c $(pkg-config --cflags --libs percpu)
 * run:   ./a.out [MILLION-UPDATES]   (PCPU_FORCE_FALLBACK=1: the atomic path)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <percpu/stat.h>

#define ROUNDS 7

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct thread_stats_like {
	pthread_mutex_t mutex;
	uint64_t get_cmds;
};

int main(int argc, char **argv)
{
	long n = (argc > 1 ? atol(argv[1]) : 50) * 1000000L;
	static const struct pcpu_stat_item items[] = { { .name = "get_cmds" } };
	const struct pcpu_stat_desc desc = { items, 1, 0 };
	struct pcpu_stat *set = pcpu_stat_create(&desc);
	struct thread_stats_like t = { PTHREAD_MUTEX_INITIALIZER, 0 };
	double mutex_ns[ROUNDS], stat_ns[ROUNDS], plain_ns[ROUNDS], t0;

	if (!set)
		return 1;
	for (int r = 0; r < ROUNDS; r++) {
		t0 = now();
		for (long i = 0; i < n; i++) {
			pthread_mutex_lock(&t.mutex);
			t.get_cmds++;
			pthread_mutex_unlock(&t.mutex);
		}
		mutex_ns[r] = (now() - t0) * 1e9 / n;
		t0 = now();
		for (long i = 0; i < n; i++)
			pcpu_stat_add(set, 0, 1);
		stat_ns[r] = (now() - t0) * 1e9 / n;
		t0 = now();
		for (long i = 0; i < n; i++) {
			t.get_cmds++;
			__asm__ volatile("" : : "r"(&t.get_cmds) : "memory");
		}
		plain_ns[r] = (now() - t0) * 1e9 / n;
	}
	qsort(mutex_ns, ROUNDS, sizeof(double), cmp);
	qsort(stat_ns, ROUNDS, sizeof(double), cmp);
	qsort(plain_ns, ROUNDS, sizeof(double), cmp);
	printf("mutex lock; field++; unlock   %6.2f ns\n", mutex_ns[ROUNDS / 2]);
	printf("pcpu_stat_add(set, item, 1)   %6.2f ns\n", stat_ns[ROUNDS / 2]);
	printf("field++ (thread-private)      %6.2f ns\n", plain_ns[ROUNDS / 2]);
	if (pcpu_stat_sum(set, 0) != (int64_t)n * ROUNDS)
		return 1;
	pcpu_stat_destroy(set);
	return 0;
}
