/* SPDX-License-Identifier: MIT */
/*
 * percpu-lifecycle-bench: the arena's cost over an object's life. For each
 * N it allocates N counter-sized objects (first fill: every chunk is new),
 * frees them all, and allocates N again (refill: the chunks freed before
 * may or may not still be there), then frees them again, and prints the
 * seconds each phase took. Before the arena kept a list of chunks with
 * free units, the refill rescanned every full chunk and was quadratic.
 *
 * Usage: percpu-lifecycle-bench [N...]   (default: 60000 100000)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <percpu/counter.h>

#include "arena.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fill(void **objs, long n)
{
	for (long i = 0; i < n; i++) {
		objs[i] = pcpu_arena_alloc(sizeof(struct pcpu_slot));
		if (!objs[i]) {
			fprintf(stderr, "allocation %ld of %ld failed: %s\n", i, n, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void drain(void **objs, long n)
{
	for (long i = 0; i < n; i++)
		pcpu_arena_free(objs[i], sizeof(struct pcpu_slot));
}

int main(int argc, char **argv)
{
	static const long defaults[] = { 60000, 100000 };
	long nr = argc > 1 ? argc - 1 : 2;

	printf("%8s %12s %12s %12s %12s\n", "N", "fill_s", "free_s", "refill_s", "refree_s");
	for (long k = 0; k < nr; k++) {
		long n = argc > 1 ? strtol(argv[k + 1], NULL, 0) : defaults[k];
		void **objs = calloc((size_t)(n > 0 ? n : 1), sizeof(*objs));
		double t0, t1, t2, t3, t4;

		if (!objs || n <= 0) {
			fprintf(stderr, "bad N or out of memory\n");
			return 1;
		}
		t0 = now();
		if (fill(objs, n))
			return 1;
		t1 = now();
		drain(objs, n);
		t2 = now();
		if (fill(objs, n))
			return 1;
		t3 = now();
		drain(objs, n);
		t4 = now();
		printf("%8ld %12.4f %12.4f %12.4f %12.4f\n", n, t1 - t0, t2 - t1, t3 - t2, t4 - t3);
		free(objs);
	}
	return 0;
}
