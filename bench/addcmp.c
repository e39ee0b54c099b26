/* SPDX-License-Identifier: MIT */
/* The add against 0.4's, 0.3's and the bare rseq adds, paired (see addcmp.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <percpu/counter.h>

#include "addcmp.h"
#include "harness.h"
#include "placement.h"
#include "rseq_addv.h"
#include "timing.h"
#include "v03_add.h"
#include "v04_add.h"

#define CHUNK 10000 /* adds between two looks at the stop flag */
#define LINE 64
#define STRIDE 4096

static const char *const kind_names[NR_ADD_KINDS] = {
	[ADD_PERCPU] = "percpu: pcpu_counter_add(), elastic counter",
	[ADD_V04] = "0.4: the same add, as released (vendored)",
	[ADD_V03] = "0.3: the same add, as released (vendored)",
	[ADD_BARE] = "bare rseq add, the library's sequence",
	[ADD_LIBRSEQ] = "bare rseq add, librseq's rseq_addv idiom",
};

/* The ratios' names: "percpu / NAME" */
static const char *const ratio_names[NR_ADD_KINDS] = {
	[ADD_V04] = "0.4",
	[ADD_V03] = "0.3",
	[ADD_BARE] = "bare add, library's sequence",
	[ADD_LIBRSEQ] = "bare add, librseq's idiom",
};

#if PCPU_ARCH_HAVE_RSEQ_ADD

static const bool kind_built[NR_ADD_KINDS] = {
	[ADD_PERCPU] = true,
	[ADD_V04] = V04_HAVE_ADD,
	[ADD_V03] = V03_HAVE_ADD,
	[ADD_BARE] = true,
	[ADD_LIBRSEQ] = BENCH_HAVE_RSEQ_ADDV,
};

/* this_cpu_add(): a per-CPU int64_t, the add and nothing else */
struct bare_counter {
	int64_t *slots;       /* CPU 0's; CPU n's is n * STRIDE bytes on */
	int64_t unregistered; /* adds of a thread without an rseq area */
	unsigned int nr_slots;
};

/* One round's counters, each placed clear of rseq_cs (placement.h). */
struct counters {
	struct pcpu_counter *percpu;
	struct v04_counter *v04;
	struct v03_counter *v03;
	struct bare_counter *bare; /* ADD_BARE's and ADD_LIBRSEQ's */
};

static struct {
	alignas(LINE) int flag;
} stop;

struct worker {
	alignas(LINE) enum add_kind kind;
	struct counters *c;
	pthread_barrier_t *barrier;
	pthread_t id;
	uint64_t ops, start_ns, end_ns, cpu_ns;
};

static __attribute__((noinline)) void percpu_chunk(struct pcpu_counter *c)
{
	for (int i = 0; i < CHUNK; i++)
		pcpu_counter_add(c, 1);
}

#if V04_HAVE_ADD
static __attribute__((noinline)) void v04_chunk(struct v04_counter *c)
{
	for (int i = 0; i < CHUNK; i++)
		v04_counter_add(c, 1);
}
#endif

#if V03_HAVE_ADD
static __attribute__((noinline)) void v03_chunk(struct v03_counter *c)
{
	for (int i = 0; i < CHUNK; i++)
		v03_counter_add(c, 1);
}
#endif

static __attribute__((noinline)) void bare_chunk(struct bare_counter *c)
{
	for (int i = 0; i < CHUNK; i++)
		if (__builtin_expect(pcpu_arch_rseq_add(c->slots, 1) < 0, 0))
			__atomic_fetch_add(&c->unregistered, 1, __ATOMIC_RELAXED);
}

#if BENCH_HAVE_RSEQ_ADDV
static __attribute__((noinline)) void librseq_chunk(struct bare_counter *c)
{
	if (__builtin_expect(!bench_rseq_registered(), 0)) {
		__atomic_fetch_add(&c->unregistered, CHUNK, __ATOMIC_RELAXED);
		return;
	}
	for (int i = 0; i < CHUNK; i++)
		bench_rseq_this_cpu_add(c->slots, 1);
}
#endif

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t cpu_start;

	pcpu_cpu_current(); /* registers the library's own rseq area, if that */
	pthread_barrier_wait(w->barrier);
	w->start_ns = timing_now_ns();
	cpu_start = timing_thread_cpu_ns();
	while (!__atomic_load_n(&stop.flag, __ATOMIC_RELAXED)) {
		switch (w->kind) {
		case ADD_PERCPU:
			percpu_chunk(w->c->percpu);
			break;
#if V04_HAVE_ADD
		case ADD_V04:
			v04_chunk(w->c->v04);
			break;
#endif
#if V03_HAVE_ADD
		case ADD_V03:
			v03_chunk(w->c->v03);
			break;
#endif
#if BENCH_HAVE_RSEQ_ADDV
		case ADD_LIBRSEQ:
			librseq_chunk(w->c->bare);
			break;
#endif
		default:
			bare_chunk(w->c->bare);
			break;
		}
		w->ops += CHUNK;
	}
	w->cpu_ns = timing_thread_cpu_ns() - cpu_start;
	w->end_ns = timing_now_ns();
	return NULL;
}

static void counters_free(struct counters *c)
{
	bench_percpu_free(c->percpu);
#if V04_HAVE_ADD
	if (c->v04)
		v04_counter_destroy(c->v04);
	bench_free_clear(c->v04);
#endif
#if V03_HAVE_ADD
	if (c->v03)
		v03_counter_destroy(c->v03);
	bench_free_clear(c->v03);
#endif
	if (c->bare)
		bench_free_clear(c->bare->slots);
	bench_free_clear(c->bare);
}

static int counters_new(struct counters *c, enum add_kind kind)
{
	memset(c, 0, sizeof(*c));
	switch (kind) {
	case ADD_PERCPU:
		c->percpu = bench_percpu_new(0);
		return c->percpu ? 0 : -errno;
#if V04_HAVE_ADD
	case ADD_V04:
		c->v04 = bench_alloc_clear_of_rseq(sizeof(*c->v04), sizeof(*c->v04));
		return !c->v04 ? -ENOMEM : v04_counter_init(c->v04);
#endif
#if V03_HAVE_ADD
	case ADD_V03:
		c->v03 = bench_alloc_clear_of_rseq(sizeof(*c->v03), sizeof(*c->v03));
		return !c->v03 ? -ENOMEM : v03_counter_init(c->v03);
#endif
	default:
		c->bare = bench_alloc_clear_of_rseq(sizeof(*c->bare), sizeof(*c->bare));
		if (!c->bare)
			return -ENOMEM;
		c->bare->nr_slots = pcpu_cpu_possible();
		c->bare->slots = bench_alloc_clear_of_rseq((size_t)c->bare->nr_slots * STRIDE,
							   sizeof(int64_t));
		return c->bare->slots ? 0 : -ENOMEM;
	}
}

static int64_t counters_exact(const struct counters *c, enum add_kind kind)
{
	int64_t sum;

	switch (kind) {
	case ADD_PERCPU:
		return pcpu_counter_sum(c->percpu);
#if V04_HAVE_ADD
	case ADD_V04:
		return v04_counter_sum(c->v04);
#endif
#if V03_HAVE_ADD
	case ADD_V03:
		return v03_counter_sum(c->v03);
#endif
	default:
		sum = c->bare->unregistered;
		for (unsigned int cpu = 0; cpu < c->bare->nr_slots; cpu++)
			sum += *(int64_t *)(void *)((char *)c->bare->slots + (size_t)cpu * STRIDE);
		return sum;
	}
}

/* One run of @kind on @nr threads: Mops/s by the wall clock and per CPU time. */
static int run_one(enum add_kind kind, unsigned int nr, unsigned int duration_ms,
		   double *mops, double *cpu_mops, bool *exact)
{
	struct worker w[ADDCMP_THREAD_COUNTS];
	struct counters c;
	pthread_barrier_t barrier;
	uint64_t first = UINT64_MAX, last = 0, ops = 0, cpu_ns = 0;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int err = counters_new(&c, kind);

	if (err) {
		counters_free(&c);
		return err;
	}
	pthread_barrier_init(&barrier, NULL, nr + 1);
	__atomic_store_n(&stop.flag, 0, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < nr; i++) {
		w[i] = (struct worker){ .kind = kind, .c = &c, .barrier = &barrier };
		err = pthread_create(&w[i].id, NULL, worker_main, &w[i]);
		if (err) {
			fprintf(stderr, "percpu-bench: pthread_create: %s\n", strerror(err));
			exit(1); /* the barrier counts on every thread */
		}
	}
	pthread_barrier_wait(&barrier);
	bench_sleep_ms(duration_ms);
	__atomic_store_n(&stop.flag, 1, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < nr; i++) {
		pthread_join(w[i].id, NULL);
		first = w[i].start_ns < first ? w[i].start_ns : first;
		last = w[i].end_ns > last ? w[i].end_ns : last;
		ops += w[i].ops;
		cpu_ns += w[i].cpu_ns;
	}
	*mops = (double)ops / ((double)(last - first) / 1e3);
	*cpu_mops = (double)ops / ((double)cpu_ns / 1e3) *
		    (online > 0 && (unsigned long)online < nr ? (double)online : (double)nr);
	*exact = counters_exact(&c, kind) == (int64_t)ops;
	pthread_barrier_destroy(&barrier);
	counters_free(&c);
	return 0;
}

int addcmp_measure(struct addcmp_result *r, unsigned int rounds, unsigned int duration_ms)
{
	static double mops[NR_ADD_KINDS][BENCH_MAX_RUNS], cpu[NR_ADD_KINDS][BENCH_MAX_RUNS];
	static double ratio[NR_ADD_KINDS][BENCH_MAX_RUNS], cpu_ratio[NR_ADD_KINDS][BENCH_MAX_RUNS];
	memset(r, 0, sizeof(*r));
	memcpy(r->have, kind_built, sizeof(r->have));
	if (pcpu_cpu_setup() != PCPU_CPU_RSEQ) {
		r->skipped = "percpu takes the atomic path here: there is no bare rseq add to compare with";
		return 0;
	}
	if (rounds == 0 || rounds > BENCH_MAX_RUNS)
		return -EINVAL;
	r->rounds = rounds;
	r->duration_ms = duration_ms;
	for (unsigned int t = 0; t < ADDCMP_THREAD_COUNTS; t++) {
		r->threads[t] = t + 1;
		for (unsigned int round = 0; round < rounds; round++) {
			for (unsigned int k = 0; k < NR_ADD_KINDS; k++) {
				enum add_kind kind = (enum add_kind)((round + k) % NR_ADD_KINDS);
				bool exact;
				int err;

				if (!kind_built[kind])
					continue;
				err = run_one(kind, r->threads[t], duration_ms, &mops[kind][round],
					      &cpu[kind][round], &exact);
				if (err)
					return err;
				r->inexact += !exact;
			}
			for (unsigned int kind = 0; kind < NR_ADD_KINDS; kind++) {
				if (!kind_built[kind])
					continue;
				ratio[kind][round] = mops[ADD_PERCPU][round] / mops[kind][round];
				cpu_ratio[kind][round] = cpu[ADD_PERCPU][round] / cpu[kind][round];
			}
		}
		for (unsigned int kind = 0; kind < NR_ADD_KINDS; kind++) {
			if (!kind_built[kind])
				continue;
			r->mops[t][kind] = timing_median(mops[kind], rounds);
			r->cpu_mops[t][kind] = timing_median(cpu[kind], rounds);
			r->ratio[t][kind] = timing_median(ratio[kind], rounds);
			r->cpu_ratio[t][kind] = timing_median(cpu_ratio[kind], rounds);
		}
	}
	return 0;
}

#else /* no rseq add on this architecture */

int addcmp_measure(struct addcmp_result *r, unsigned int rounds, unsigned int duration_ms)
{
	(void)rounds;
	(void)duration_ms;
	memset(r, 0, sizeof(*r));
	r->skipped = "no rseq add on this architecture";
	return 0;
}

#endif

enum add_kind addcmp_strongest_bare(const struct addcmp_result *r)
{
	return r->have[ADD_LIBRSEQ] ? ADD_LIBRSEQ : ADD_BARE;
}

void addcmp_report(FILE *f, const struct addcmp_result *r)
{
	fprintf(f, "\nThe add against the last releases' and the bare rseq adds (+1 in an inlined "
		   "loop, paired");
	if (r->skipped) {
		fprintf(f, "): skipped: %s\n", r->skipped);
		return;
	}
	fprintf(f, ": median of %u rounds of %u ms; [per CPU time]):\n", r->rounds,
		r->duration_ms);
	fprintf(f, "  %-46s %19s %19s\n", "", "1 thread", "2 threads");
	for (int kind = 0; kind < NR_ADD_KINDS; kind++) {
		if (!r->have[kind])
			continue;
		fprintf(f, "  %-46s", kind_names[kind]);
		for (int t = 0; t < ADDCMP_THREAD_COUNTS; t++)
			fprintf(f, " %7.1f Mops [%.0f]", r->mops[t][kind], r->cpu_mops[t][kind]);
		fputc('\n', f);
	}
	for (int kind = ADD_V04; kind < NR_ADD_KINDS; kind++) {
		if (!r->have[kind])
			continue;
		fprintf(f, "  percpu / %-37s", ratio_names[kind]);
		for (int t = 0; t < ADDCMP_THREAD_COUNTS; t++)
			fprintf(f, "      %5.2fx [%.2f]", r->ratio[t][kind], r->cpu_ratio[t][kind]);
		fputc('\n', f);
	}
	if (!r->have[ADD_V04] || !r->have[ADD_V03] || !r->have[ADD_LIBRSEQ])
		fprintf(f, "  (0.4's and 0.3's adds and librseq's idiom are written for x86_64 "
			   "only)\n");
	if (r->inexact)
		fprintf(f, "  ERROR: %u runs ended with a wrong value\n", r->inexact);
}

bool addcmp_check_release(FILE *f, const struct addcmp_result *r, enum add_kind kind,
			  double min)
{
	const char *name = ratio_names[kind];
	bool ok = true;

	if (r->skipped || !r->have[kind]) {
		fprintf(f, "check against %s: not run (%s)\n", name,
			r->skipped ? r->skipped : "its add is not vendored here");
		return true;
	}
	for (int t = 0; t < ADDCMP_THREAD_COUNTS; t++)
		ok &= r->cpu_ratio[t][kind] >= min;
	fprintf(f, "check against %s: percpu / %s per CPU time %.2fx, %.2fx (1, 2 threads), "
		   "at least %.2fx wanted: %s\n", name, name, r->cpu_ratio[0][kind],
		r->cpu_ratio[1][kind], min, ok ? "ok" : "SLOWER THAN THAT RELEASE");
	return ok;
}
