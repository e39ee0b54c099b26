/* SPDX-License-Identifier: MIT */
/*
 * percpu-lifecycle-bench: the cost over an object's life. For each N it
 * makes N objects (first fill: every chunk is new), destroys them all, and
 * makes N again (refill: the chunks freed before may or may not still be
 * there), then destroys them again, and prints the seconds each phase took:
 * once for bare arena objects of a counter's size, once for whole counters
 * (pcpu_counter_init()/pcpu_counter_destroy(), registry included). Before
 * the arena kept a list of chunks with free units, the refill rescanned
 * every full chunk and was quadratic; before the registry batched its grace
 * periods, every destroy waited for one.
 *
 * Usage: percpu-lifecycle-bench [N...]   (default: 60000 100000)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <percpu/counter.h>

#include "arena/arena.h"
#include "host_cpu.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Makes object @i: a bare arena object, or a counter in @counters. */
static int make(void **objs, struct pcpu_counter *counters, long i)
{
	if (counters) {
		int err = pcpu_counter_init(&counters[i], 0);

		errno = -err;
		return err;
	}
	objs[i] = pcpu_arena_alloc(sizeof(struct pcpu_slot));
	return objs[i] ? 0 : -1;
}

static int fill(void **objs, struct pcpu_counter *counters, long n)
{
	for (long i = 0; i < n; i++) {
		if (make(objs, counters, i)) {
			fprintf(stderr, "object %ld of %ld failed: %s\n", i, n, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void drain(void **objs, struct pcpu_counter *counters, long n)
{
	for (long i = 0; i < n; i++) {
		if (counters)
			pcpu_counter_destroy(&counters[i]);
		else
			pcpu_arena_free(objs[i], sizeof(struct pcpu_slot));
	}
}

/* One row: first fill, destroy, refill, destroy again of @n objects. */
static int run(const char *what, long n, bool as_counters)
{
	void **objs = calloc((size_t)n, sizeof(*objs));
	struct pcpu_counter *counters = as_counters ? calloc((size_t)n, sizeof(*counters)) : NULL;
	double t0, t1, t2, t3, t4;
	int err = -1;

	if (!objs || (as_counters && !counters)) {
		fprintf(stderr, "out of memory\n");
		goto out;
	}
	t0 = now();
	if (fill(objs, counters, n))
		goto out;
	t1 = now();
	drain(objs, counters, n);
	t2 = now();
	if (fill(objs, counters, n))
		goto out;
	t3 = now();
	drain(objs, counters, n);
	t4 = now();
	printf("%-8s %8ld %12.4f %12.4f %12.4f %12.4f\n", what, n, t1 - t0, t2 - t1, t3 - t2,
	       t4 - t3);
	err = 0;
out:
	free(objs);
	free(counters);
	return err;
}

int main(int argc, char **argv)
{
	static const long defaults[] = { 60000, 100000 };
	long nr = argc > 1 ? argc - 1 : 2;
	char cpu[256];

	host_cpu_describe(cpu, sizeof(cpu));
	printf("CPU: %s\n", cpu);
	printf("%-8s %8s %12s %12s %12s %12s\n", "objects", "N", "fill_s", "free_s", "refill_s",
	       "refree_s");
	for (int as_counters = 0; as_counters < 2; as_counters++) {
		for (long k = 0; k < nr; k++) {
			long n = argc > 1 ? strtol(argv[k + 1], NULL, 0) : defaults[k];

			if (n <= 0) {
				fprintf(stderr, "bad N\n");
				return 1;
			}
			if (run(as_counters ? "counters" : "arena", n, as_counters))
				return 1;
		}
	}
	return 0;
}
