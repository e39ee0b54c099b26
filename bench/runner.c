/* SPDX-License-Identifier: MIT */
/*
 * One timed run (see runner.h).
 *
 * All threads wait on a barrier with the main thread, take their start
 * time, and loop until the main thread, after sleeping the duration, raises
 * the stop flag; each takes its end time when it sees it. Throughput is the
 * operations of all writers over the span from the first start to the last
 * end. Threads are created per run and float unless asked to pin.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"
#include "timing.h"

struct bench_thread {
	alignas(BENCH_CACHELINE) struct workload_thread wt;
	pthread_t id;
	pthread_barrier_t *barrier;
	bool reader;
	int cpu; /* pin to this CPU; -1: float */
	uint64_t start_ns, end_ns;
	uint64_t cpu_ns; /* this thread's CPU time between start and end */
};

/* The stop flag, alone in its cacheline: read by every thread. */
static struct {
	alignas(BENCH_CACHELINE) int flag;
} stop;

volatile uint64_t runner_sink;

static void *thread_main(void *arg)
{
	struct bench_thread *t = arg;

	if (t->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(t->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	uint64_t cpu_start;

	/*
	 * Registers the library's own rseq area where libc registered none, as
	 * a thread's first slow-path add would: the kernel port's adds, which
	 * have no slow path into the library, need it too.
	 */
	pcpu_cpu_current();
	pthread_barrier_wait(t->barrier);
	t->start_ns = timing_now_ns();
	cpu_start = timing_thread_cpu_ns();
	if (t->reader)
		workload_read(&t->wt);
	else
		workload_write(&t->wt);
	t->cpu_ns = timing_thread_cpu_ns() - cpu_start;
	t->end_ns = timing_now_ns();
	return NULL;
}

/* The @i-th CPU this process may run on, cyclically; -1 if unknown. */
static int nth_allowed_cpu(unsigned int i)
{
	cpu_set_t set;
	int count;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -1;
	count = CPU_COUNT(&set);
	if (count <= 0)
		return -1;
	i %= (unsigned int)count;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set) && i-- == 0)
			return cpu;
	return -1;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static double at_most_online(unsigned int threads, long online)
{
	return online > 0 && (unsigned long)online < threads ? (double)online : (double)threads;
}

int runner_run(enum bench_workload w, enum bench_impl impl, unsigned int nr_writers,
	       const struct run_config *cfg, struct run_result *out)
{
	unsigned int nr_threads = nr_writers + (w == WL_READERS ? 1 : 0);
	struct bench_counter counter;
	struct bench_thread *threads;
	pthread_barrier_t barrier;
	uint64_t first_start = UINT64_MAX, last_end = 0, writer_ops = 0, reader_ops = 0;
	uint64_t cpu_ns = 0, writer_cpu_ns = 0;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int64_t net = 0;
	double us;
	int err;

	memset(out, 0, sizeof(*out));
	threads = aligned_alloc(BENCH_CACHELINE, nr_threads * sizeof(*threads));
	if (!threads)
		return -ENOMEM;
	err = bench_counter_init(&counter, impl, workload_seed(w), nr_writers);
	if (err) {
		free(threads);
		return err;
	}
	pthread_barrier_init(&barrier, NULL, nr_threads + 1);
	__atomic_store_n(&stop.flag, 0, __ATOMIC_RELAXED);

	for (unsigned int i = 0; i < nr_threads; i++) {
		struct bench_thread *t = &threads[i];

		memset(t, 0, sizeof(*t));
		t->reader = i == nr_writers;
		t->wt.impl = impl;
		t->wt.workload = w;
		t->wt.target = bench_target_of(&counter, i);
		t->wt.stop = &stop.flag;
		t->barrier = &barrier;
		t->cpu = cfg->pin ? nth_allowed_cpu(i) : -1;
		err = pthread_create(&t->id, NULL, thread_main, t);
		if (err) {
			/* the barrier counts on every thread: no way to go on */
			fprintf(stderr, "percpu-bench: pthread_create: %s\n", strerror(err));
			exit(1);
		}
	}
	pthread_barrier_wait(&barrier);
	sleep_ms(cfg->duration_ms);
	__atomic_store_n(&stop.flag, 1, __ATOMIC_RELAXED);

	for (unsigned int i = 0; i < nr_threads; i++) {
		struct bench_thread *t = &threads[i];

		pthread_join(t->id, NULL);
		if (t->start_ns < first_start)
			first_start = t->start_ns;
		if (t->end_ns > last_end)
			last_end = t->end_ns;
		cpu_ns += t->cpu_ns;
		runner_sink += t->wt.keep_live;
		for (int a = 0; a < 3; a++)
			out->answers[a] += t->wt.answers[a];
		if (t->reader) {
			reader_ops += t->wt.ops;
		} else {
			writer_ops += t->wt.ops;
			writer_cpu_ns += t->cpu_ns;
			net += t->wt.net;
		}
	}
	us = (double)(last_end - first_start) / 1e3;
	out->writer_mops = (double)writer_ops / us;
	out->reader_mops = (double)reader_ops / us;
	out->cpu_share = (double)cpu_ns / 1e3 / (us * at_most_online(nr_threads, online));
	out->cpu_mops = writer_cpu_ns ? (double)writer_ops / ((double)writer_cpu_ns / 1e3) *
						at_most_online(nr_writers, online) : 0;
	out->expected = workload_seed(w) + net;
	out->got = bench_counter_exact(&counter);
	out->exact = out->expected == out->got;
	pthread_barrier_destroy(&barrier);
	bench_counter_destroy(&counter);
	free(threads);
	return 0;
}
