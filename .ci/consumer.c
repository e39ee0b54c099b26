/* SPDX-License-Identifier: MIT */
/*
 * A program outside the source tree, built by .ci/run against the installed
 * library with `pkg-config --cflags --libs percpu` (and as a meson
 * subproject). It uses both installed headers and checks the answers.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <percpu/counter.h>
#include <percpu/percpu_counter.h>
#include <percpu/stat.h>

#define THREADS 3
#define ADDS 100000

static struct pcpu_counter hits;
static struct percpu_counter free_blocks[2];
static struct pcpu_stat *vm_stat;

static void *work(void *arg)
{
	(void)arg;
	for (int i = 0; i < ADDS; i++) {
		pcpu_counter_add(&hits, 3);
		percpu_counter_dec(&free_blocks[0]);
		percpu_counter_add_batch(&free_blocks[1], 2, 64);
		pcpu_stat_add(vm_stat, 0, 1);
		pcpu_stat_add(vm_stat, 1, i % 2 ? 4096 : -4096);
	}
	return NULL;
}

#define CHECK(cond)                                                                \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "consumer: check failed: %s\n", #cond);    \
			return 1;                                                  \
		}                                                                  \
	} while (0)

int main(void)
{
	static const struct pcpu_stat_item items[] = {
		{ .name = "pgfault", .group = 1 },
		{ .name = "bytes", .group = 1 },
	};
	const struct pcpu_stat_desc desc = { .items = items, .nr_items = 2 };
	const int64_t exact = (int64_t)THREADS * ADDS * 3;
	int64_t values[2];
	uint64_t bounds[2];
	pthread_t tid[THREADS];
	uint64_t bound;
	int64_t rd;

	CHECK(pcpu_counter_init(&hits, 0) == 0);
	CHECK(percpu_counter_init_many(free_blocks, 1000000, GFP_KERNEL, 2) == 0);
	CHECK((vm_stat = pcpu_stat_create(&desc)) != NULL);
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_create(&tid[i], NULL, work, NULL) == 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(tid[i], NULL);

	rd = pcpu_counter_read(&hits);
	bound = pcpu_counter_error_bound(&hits);
	printf("update path %d; read %" PRId64 " ± %" PRIu64 ", sum %" PRId64 ", exact %" PRId64
	       "\n",
	       (int)pcpu_cpu_setup(), rd, bound, pcpu_counter_sum(&hits), exact);
	CHECK(pcpu_counter_sum(&hits) == exact);
	CHECK((uint64_t)(rd > exact ? rd - exact : exact - rd) <= bound);
	CHECK(pcpu_counter_compare(&hits, exact) == 0);
	CHECK(pcpu_counter_compare(&hits, exact + 1) < 0);
	CHECK(pcpu_counter_sync_if_delta_above(&hits, 0) == exact);
	CHECK(!pcpu_counter_limited_add(&hits, exact, 1));
	CHECK(pcpu_counter_limited_add(&hits, exact + 1, 1));

	CHECK(percpu_counter_sum(&free_blocks[0]) == 1000000 - THREADS * ADDS);
	CHECK(percpu_counter_sum_positive(&free_blocks[1]) == 1000000 + 2 * THREADS * ADDS);
	CHECK(percpu_counter_compare(&free_blocks[0], 0) > 0);
	CHECK(percpu_counter_read_positive(&free_blocks[0]) > 0);

	CHECK(pcpu_stat_sum(vm_stat, 0) == (int64_t)THREADS * ADDS);
	CHECK(pcpu_stat_snapshot(vm_stat, values, bounds) == 0);
	CHECK(values[0] == (int64_t)THREADS * ADDS && values[1] == 0);
	CHECK(pcpu_stat_lookup(vm_stat, "bytes") == 1);
	pcpu_stat_fold_all(vm_stat);
	CHECK(pcpu_stat_read(vm_stat, 0) == (int64_t)THREADS * ADDS);
	pcpu_stat_destroy(vm_stat);

	percpu_counter_destroy_many(free_blocks, 2);
	pcpu_counter_destroy(&hits);
	CHECK(!pcpu_counter_initialized(&hits));
	printf("consumer: OK\n");
	return 0;
}
