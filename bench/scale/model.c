/* SPDX-License-Identifier: MIT */
/*
 * One CPU count of the scale model (see main.c): the library is told it has
 * N possible CPUs of which M run (pcpu_cpu_model()), so every chunk of the
 * arena has N strides, while the threads still run on the machine's real
 * CPUs. The M running CPUs' slots are then filled directly as their adds
 * would leave them on a busy machine: armed, as lib/counter/counter.c's
 * arm() does (the CPU in the counter's armed set and count, the mark
 * stored plus PCPU_SLOT_ARMED), with a pending delta between 1 and the
 * threshold in force, so that every bound the library reports stays true;
 * the other N - M slots stay zero-filled, not armed. The counters' walks
 * then visit M real slots on M distinct pages. Stat sets and shared
 * segments are filled the same way, armed (their armed sets, since 0.4),
 * and their walks visit the same M.
 *
 * What the model cannot reproduce: on a real machine the other CPUs' slots
 * sit in those CPUs' caches, so a walk takes a coherence miss per CPU. Two
 * columns approach it: "cold" flushes every slot's line first (a miss to
 * memory per CPU), "remote" has a thread pinned on the other real CPU write
 * every slot just before the walk (a coherence miss per CPU, all of them
 * to one cache rather than to N).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/metrics.h>
#include <percpu/registry.h>
#include <percpu/shared.h>
#include <percpu/stat.h>

#include "arena/arena.h"
#include "counter/counter_internal.h"
#include "base/armset.h"
#include "base/cpu_internal.h"
#include "base/fold.h"
#include "base/pair.h"
#include "base/policy.h"
#include "shared/shared_internal.h"
#include "stat/stat_internal.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define PCPU_SCALE_VALGRIND 1
#endif
#endif

#include "../baselines.h"
#include "bench_arch.h"
#include "timing.h"
#include "model.h"

const struct scale_column_info scale_columns[SCALE_NR_COLUMNS] = {
#define SCALE_INFO(name, unit, what) { #name, unit, what },
	SCALE_COLUMNS(SCALE_INFO)
#undef SCALE_INFO
};

#define MAX_REPS 31
#define COLD_COUNTERS 16 /* distinct counters per cold batch */
#define SPACING 4        /* counters per 64-byte line of slots: use every 4th */
#define STAT_ITEMS 64
#define PREFETCH_AHEAD 8 /* strides */
#define GIB (INT64_C(1) << 30)

static unsigned int nr_cpus, nr_online, reps, visits;
static enum scale_mode mode;
static volatile int64_t sink;

/* ---- filling slots as a busy machine leaves them ------------------------ */

/* A pending delta in [1, threshold] for @cpu, deterministic; 0 if threshold is 0. */
static int64_t pending_for(unsigned int cpu, unsigned int salt, uint64_t threshold)
{
	uint64_t h = (uint64_t)cpu * 2654435761u + (uint64_t)salt * 40503u + 12345u;

	return threshold ? 1 + (int64_t)(h % threshold) : 0;
}

static struct pcpu_slot *slot_of(const struct pcpu_counter *c, unsigned int cpu)
{
	return cpu_copy(c->slots, cpu);
}

/* The @i-th of the nr_online running CPUs, spread over the possible ones. */
static unsigned int running_cpu(unsigned int i)
{
	return i * (nr_cpus / nr_online);
}

/*
 * CPU @cpu's slot of @c as that CPU's adds leave it with @pending pending:
 * armed first if it is not, as counter.c's arm() does (the set, then the
 * count, then the mark 0 stored armed), then value = mark + @pending.
 */
static void set_pending(struct pcpu_counter *c, unsigned int cpu, int64_t pending)
{
	struct pcpu_slot *s = slot_of(c, cpu);
	int64_t snap[2];

	pcpu_armed_snap(&s->value, snap);
	if (!pcpu_armed_armed(snap)) {
		pcpu_armset_join(c->armset, &c->armed, cpu);
		pcpu_armed_arm(&s->value, snap);
		pcpu_armed_snap(&s->value, snap);
	}
	__atomic_store_n(&s->value,
			 (int64_t)((uint64_t)pcpu_armed_mark(snap[1]) + (uint64_t)pending),
			 __ATOMIC_RELAXED);
}

/* Each running CPU's pending delta of @c becomes pending_for(). */
static void fill_counter(struct pcpu_counter *c, unsigned int salt)
{
	uint64_t threshold = (uint64_t)__atomic_load_n(&c->threshold, __ATOMIC_RELAXED);

	for (unsigned int i = 0; i < nr_online; i++) {
		unsigned int cpu = running_cpu(i);

		set_pending(c, cpu, pending_for(cpu, salt, threshold));
	}
}

static void fill_counters(struct pcpu_counter *c, unsigned int n, unsigned int step)
{
	for (unsigned int i = 0; i < n; i++)
		fill_counter(&c[i * step], i);
}

/*
 * Each running CPU's stat words, armed as lib/stat/stat_fold.c's arm_cpu()
 * leaves them (the CPU counted and in the set, every word's mark stored
 * armed), then each value (low half) becomes mark + pending.
 */
static void fill_stat(struct pcpu_stat *pub)
{
	struct stat_set *s = set_of(pub);

	for (unsigned int r = 0; r < nr_online; r++) {
		unsigned int cpu = running_cpu(r);
		uint64_t *words = cpu_copy(pub->words, cpu);

		pcpu_armset_join(s->armset, &s->armed, cpu);
		for (unsigned int i = 0; i < pub->nr_items; i++) {
			uint64_t *w = &words[pub->hot[i].slot], snap = *w;
			uint32_t d = (uint32_t)pending_for(cpu, i, pub->hot[i].threshold);

			pcpu_word_arm(w, &snap);
			snap = *w;
			__atomic_store_n(w, (snap & ~(uint64_t)UINT32_MAX) |
					     (uint32_t)(pcpu_word_mark(snap) + d),
					 __ATOMIC_RELAXED);
		}
	}
}

/*
 * Each running CPU's row of a segment, armed as lib/shared/shared_fold.c
 * arms a row (counted, in the set, every pair's mark stored armed), then
 * each value becomes mark + pending.
 */
static void fill_shared(struct pcpu_shared *s)
{
	const struct shared_handle *h = shared_handle(s);

	for (unsigned int r = 0; r < nr_online; r++) {
		unsigned int row = running_cpu(r);

		if (shared_armed_add(h, row))
			__atomic_add_fetch(&h->armed->nr, 1, __ATOMIC_SEQ_CST);
		for (unsigned int i = 0; i < h->nr_items; i++) {
			int64_t *pair = shared_pair(h, i, row), snap[2];

			pcpu_armed_snap(pair, snap);
			pcpu_armed_arm(pair, snap);
			__atomic_store_n(&pair[0],
					 pcpu_armed_mark(pair[1]) + pending_for(row, i, h->threshold[i]),
					 __ATOMIC_RELAXED);
		}
	}
}

/* The kernel port folds at |slot| >= batch: a slot holds at most batch - 1. */
static void fill_kp(struct kp_counter *c, unsigned int salt)
{
	for (unsigned int cpu = 0; cpu < c->nr_slots; cpu++)
		__atomic_store_n((int64_t *)(void *)((char *)c->slots + (size_t)cpu * KP_STRIDE),
				 pending_for(cpu, salt, (uint64_t)kp_counter_batch - 1),
				 __ATOMIC_RELAXED);
}

/* ---- timing --------------------------------------------------------------- */

struct op {
	void (*prep)(void *ctx);              /* untimed, before each batch; may be NULL */
	void (*run)(void *ctx, unsigned int i); /* timed, @batch times */
	void *ctx;
	unsigned int batch;
};

static void prepare(const struct op *op)
{
	if (op->prep)
		op->prep(op->ctx);
}

/* Median over the repetitions of the thread CPU time per run(), in ns. */
static double measure(const struct op *op)
{
	double v[MAX_REPS];

	for (unsigned int r = 0; r < reps; r++) {
		uint64_t t0;

		prepare(op);
		t0 = timing_thread_cpu_ns();
		for (unsigned int i = 0; i < op->batch; i++)
			op->run(op->ctx, i);
		v[r] = (double)(timing_thread_cpu_ns() - t0) / op->batch;
	}
	return timing_median(v, reps);
}

/*
 * Two operations measured alternately, repetition by repetition, so that a
 * change of the machine's load falls on both: @a and @b get their medians
 * over 3 x the usual repetitions.
 */
static void measure_pair(const struct op *a, const struct op *b, double *ra, double *rb)
{
	double va[3 * MAX_REPS], vb[3 * MAX_REPS];
	const struct op *ops[2] = { a, b };
	double *v[2] = { va, vb };
	unsigned int n = 3 * reps;

	for (unsigned int r = 0; r < n; r++)
		for (unsigned int k = 0; k < 2; k++) {
			const struct op *op = ops[(r + k) % 2]; /* who goes first alternates */
			uint64_t t0;

			prepare(op);
			t0 = timing_thread_cpu_ns();
			for (unsigned int i = 0; i < op->batch; i++)
				op->run(op->ctx, i);
			v[(r + k) % 2][r] = (double)(timing_thread_cpu_ns() - t0) / op->batch;
		}
	*ra = timing_median(va, n);
	*rb = timing_median(vb, n);
}

/* Calls per batch for an operation visiting @slots slots: about 1M visits. */
static unsigned int batch_for(unsigned int slots)
{
	unsigned int b = visits / (slots ? slots : 1);

	return b < 4 ? 4 : b;
}

/* PCPU_SCALE_TRACE=1: how long each section took, on stderr. */
static void trace(const char *section)
{
	static uint64_t last;
	uint64_t now = timing_now_ns();

	if (getenv("PCPU_SCALE_TRACE"))
		fprintf(stderr, "N=%u %s: %.0f ms\n", nr_cpus, section, (now - last) / 1e6);
	last = now;
}

/* ---- the operations ------------------------------------------------------- */

struct counters {
	struct pcpu_counter *c;
	unsigned int n, step;
};

/* ---- a filler on the other real CPU --------------------------------------- */

/* First the counters it fills: the sums take it as their struct counters. */
struct remote {
	struct counters cs;
	pthread_t thread;
	sem_t go, done;
	unsigned int cpu;
	bool stop;
};

static int pin(pthread_t thread, unsigned int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(thread, sizeof(set), &set);
}

static void *remote_main(void *arg)
{
	struct remote *r = arg;

	for (;;) {
		while (sem_wait(&r->go) != 0)
			;
		if (r->stop)
			break;
		fill_counters(r->cs.c, r->cs.n, r->cs.step);
		sem_post(&r->done);
	}
	return NULL;
}

/* prep: the filler rewrites every slot from its CPU; returns when it has. */
static void remote_fill(void *ctx)
{
	struct remote *r = ctx;

	sem_post(&r->go);
	while (sem_wait(&r->done) != 0)
		;
}

/*
 * Starts the filler on a real CPU other than the first one this process may
 * use, and pins the caller to that first one; -ENODEV if the process may
 * run on one CPU only. The caller's affinity is restored by remote_stop().
 */
static int remote_start(struct remote *r, struct counters *cs, cpu_set_t *saved)
{
	unsigned int first = CPU_SETSIZE, second = CPU_SETSIZE;

	if (sched_getaffinity(0, sizeof(*saved), saved) != 0)
		return -errno;
	for (unsigned int cpu = 0; cpu < CPU_SETSIZE && second == CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, saved)) {
			if (first == CPU_SETSIZE)
				first = cpu;
			else
				second = cpu;
		}
	if (second == CPU_SETSIZE)
		return -ENODEV;
	*r = (struct remote){ .cs = *cs, .cpu = second };
	sem_init(&r->go, 0, 0);
	sem_init(&r->done, 0, 0);
	if (pthread_create(&r->thread, NULL, remote_main, r) != 0)
		return -EAGAIN;
	pin(r->thread, second);
	pin(pthread_self(), first);
	return 0;
}

static void remote_stop(struct remote *r, const cpu_set_t *saved)
{
	r->stop = true;
	sem_post(&r->go);
	pthread_join(r->thread, NULL);
	sem_destroy(&r->go);
	sem_destroy(&r->done);
	sched_setaffinity(0, sizeof(*saved), saved);
}

static void flush_counters(void *ctx)
{
	struct counters *cs = ctx;

	for (unsigned int i = 0; i < cs->n; i++) {
		struct pcpu_counter *c = &cs->c[i * cs->step];
		unsigned int cpu;

		pcpu_armset_for_each(c->armset, nr_cpus, cpu)
			bench_flush_line(slot_of(c, cpu));
	}
	bench_flush_done();
}

static void refill_counters(void *ctx)
{
	struct counters *cs = ctx;

	fill_counters(cs->c, cs->n, cs->step);
}

static void run_sum(void *ctx, unsigned int i)
{
	struct counters *cs = ctx;

	sink = pcpu_counter_sum(&cs->c[(i % cs->n) * cs->step]);
}

/*
 * 0.3's pcpu_counter_sum() loop over every possible CPU (a slot not armed
 * holds 0), prefetching PREFETCH_AHEAD strides ahead.
 */
static int64_t sum_prefetch(const struct pcpu_counter *c)
{
	uint64_t sum = (uint64_t)__atomic_load_n(&c->base, __ATOMIC_ACQUIRE);

	for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
		if (cpu + PREFETCH_AHEAD < nr_cpus)
			__builtin_prefetch(slot_of(c, cpu + PREFETCH_AHEAD));
		sum += (uint64_t)__atomic_load_n(&slot_of(c, cpu)->value, __ATOMIC_ACQUIRE);
	}
	return (int64_t)sum;
}

static void run_sum_prefetch(void *ctx, unsigned int i)
{
	struct counters *cs = ctx;

	sink = sum_prefetch(&cs->c[(i % cs->n) * cs->step]);
}

/*
 * Replicas of lib/counter/counter.c's fold of the armed CPUs (the armed
 * layout of lib/base/fold.h), for the cost of its atomic operations only:
 * today's enters the counter's fold sequence around each CPU's fold (4
 * locked operations per CPU with something pending: seq, pair swap, count,
 * seq); the proposal enters it once around the walk (2 per CPU). Both add
 * what each CPU held to count at once, as today: adding it up and adding
 * once at the end would let read() drift up to twice the bound during the
 * walk. Single-threaded here, so touching seq is safe; every slot walked
 * is armed (fill_counter()).
 */
static void republish(struct pcpu_counter *c, int64_t count)
{
	int64_t t = (int64_t)pcpu_policy_threshold(count, (uint64_t)c->accuracy * nr_cpus,
						   (uint64_t)c->floor, PCPU_COUNTER_MAX_BATCH);

	if (__atomic_load_n(&c->threshold, __ATOMIC_RELAXED) != t)
		__atomic_store_n(&c->threshold, t, __ATOMIC_RELAXED);
}

static int64_t fold_one(struct pcpu_counter *c, unsigned int cpu, bool seq)
{
	int64_t snap[2], moved;

	pcpu_armed_snap(&slot_of(c, cpu)->value, snap);
	if (pcpu_armed_pending(snap) == 0)
		return 0;
	if (seq)
		__atomic_add_fetch(&c->seq, COUNTER_SEQ_FOLD, __ATOMIC_SEQ_CST);
	moved = pcpu_fold_take_armed(&slot_of(c, cpu)->value, snap);
	if (moved)
		republish(c, __atomic_add_fetch(&c->central, moved, __ATOMIC_SEQ_CST));
	if (seq)
		__atomic_add_fetch(&c->seq, COUNTER_SEQ_GEN - COUNTER_SEQ_FOLD, __ATOMIC_SEQ_CST);
	return moved;
}

static void run_fold_walk(void *ctx, unsigned int i)
{
	struct counters *cs = ctx;
	struct pcpu_counter *c = &cs->c[(i % cs->n) * cs->step];
	unsigned int cpu;

	pcpu_armset_for_each(c->armset, nr_cpus, cpu)
		fold_one(c, cpu, true);
}

static void run_fold_walk_seq_once(void *ctx, unsigned int i)
{
	struct counters *cs = ctx;
	struct pcpu_counter *c = &cs->c[(i % cs->n) * cs->step];
	unsigned int cpu;

	__atomic_add_fetch(&c->seq, COUNTER_SEQ_FOLD, __ATOMIC_SEQ_CST);
	pcpu_armset_for_each(c->armset, nr_cpus, cpu)
		fold_one(c, cpu, false);
	__atomic_add_fetch(&c->seq, COUNTER_SEQ_GEN - COUNTER_SEQ_FOLD, __ATOMIC_SEQ_CST);
}

static void run_compare(void *ctx, unsigned int i)
{
	struct counters *cs = ctx;
	struct pcpu_counter *c = &cs->c[(i % cs->n) * cs->step];

	/* read + 1 is within the bound: the answer needs sum() */
	sink = pcpu_counter_compare(c, pcpu_counter_read(c) + 1);
}

static void run_sync(void *ctx, unsigned int i)
{
	struct counters *cs = ctx;

	sink = pcpu_counter_sync_if_delta_above(&cs->c[(i % cs->n) * cs->step], 0);
}

static void run_fold_all(void *ctx, unsigned int i)
{
	(void)ctx;
	(void)i;
	pcpu_registry_fold_all();
}

static void run_expo(void *ctx, unsigned int i)
{
	(void)i;
	if (pcpu_metrics_write(ctx, PCPU_METRICS_PROMETHEUS) != 0)
		abort();
	fflush(ctx);
}

struct stat_ctx {
	struct pcpu_stat *s;
	int64_t values[STAT_ITEMS];
	uint64_t bounds[STAT_ITEMS];
	struct pcpu_shared *sh;
};

static void run_stat_snapshot(void *ctx, unsigned int i)
{
	struct stat_ctx *sc = ctx;

	(void)i;
	if (pcpu_stat_snapshot(sc->s, sc->values, sc->bounds) != 0)
		abort();
}

static void refill_stat(void *ctx)
{
	fill_stat(((struct stat_ctx *)ctx)->s);
}

/*
 * Each call a full line of its own (its first item's sync), so that each
 * finds every CPU pending: the 64 items' first STAT_FULL_LINES lines.
 */
#define STAT_FULL_LINES (STAT_ITEMS / PCPU_STAT_LINE_ITEMS)

static void run_stat_sync(void *ctx, unsigned int i)
{
	struct stat_ctx *sc = ctx;

	sink = pcpu_stat_sync_if_delta_above(sc->s, set_of(sc->s)->lines[i].item[0], 0);
}

static void run_shared_snapshot(void *ctx, unsigned int i)
{
	struct stat_ctx *sc = ctx;

	(void)i;
	if (pcpu_shared_snapshot(sc->sh, sc->values, sc->bounds) != 0)
		abort();
}

struct kps {
	struct kp_counter c[COLD_COUNTERS];
};

static void refill_kp(void *ctx)
{
	struct kps *k = ctx;

	for (unsigned int i = 0; i < COLD_COUNTERS; i++)
		fill_kp(&k->c[i], i);
}

/* One counter, as pcpu_counter_sum()'s "in cache" column */
static void run_kp_sum(void *ctx, unsigned int i)
{
	struct kps *k = ctx;

	(void)i;
	sink = kp_counter_sum(&k->c[0]);
}

static void run_kp_compare(void *ctx, unsigned int i)
{
	struct kps *k = ctx;
	struct kp_counter *c = &k->c[0];

	(void)i;
	sink = kp_counter_compare(c, kp_counter_read(c) + 1, kp_counter_batch);
}

static void run_kp_sync(void *ctx, unsigned int i)
{
	struct kps *k = ctx;

	sink = kp_counter_sync_if_delta_above(&k->c[i % COLD_COUNTERS], 0);
}

/* ---- the sections of a row ------------------------------------------------ */

/*
 * Registers counters [@from, @to) as one family, scale_requests{i="..."}:
 * registration checks a new metric against every registered one, a check
 * that costs more between different names (10k distinct names: 1.9 s, one
 * family: 1.3 s, on a quiet moment of the 2-vCPU VM).
 */
static int register_range(struct pcpu_counter *c, unsigned int from, unsigned int to)
{
	for (unsigned int i = from; i < to; i++) {
		char value[16];
		const char *labels[] = { "i", value, NULL };
		int err;

		snprintf(value, sizeof(value), "%u", i);
		err = pcpu_counter_register(&c[i], &(struct pcpu_metric_desc){
							   .name = "scale_requests",
							   .kind = PCPU_METRIC_COUNTER,
							   .labels = labels });
		if (err)
			return err;
	}
	return 0;
}

/* ---- resident memory ------------------------------------------------------ */

/*
 * The small file at @path into @buf with read(2), so that no heap is
 * touched while the resident set is measured; its length, or -1.
 */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	ssize_t got = 0, n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while ((size_t)got < size - 1 && (n = read(fd, buf + got, size - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return n < 0 ? -1 : got;
}

/*
 * The process's resident set in KiB, -1 if unknown. smaps_rollup walks the
 * page tables, so it is exact; statm's resident field is read from the
 * kernel's per-CPU RSS counters since Linux 6.2, which may lag by dozens
 * of pages per CPU: too coarse for 16 pages.
 */
static long rss_kib(void)
{
	char buf[4096];
	const char *rss;

	if (read_small("/proc/self/smaps_rollup", buf, sizeof(buf)) < 0)
		return -1;
	rss = strstr(buf, "\nRss:");
	return rss ? strtol(rss + 5, NULL, 10) : -1;
}

/*
 * Why the resident set would not be the library's alone, or NULL. THP
 * "always" may back the heap (armed sets, registry entries) with 2 MiB
 * pages at a fault; the arena's chunks are MADV_NOHUGEPAGE (new_chunk() in
 * lib/arena/arena.c), not the heap. A sanitizer's shadow memory and
 * redzones, or valgrind's, grow with what the program writes.
 */
static const char *rss_skewed(void)
{
	char buf[256];
	const char *preload = getenv("LD_PRELOAD");

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return "built with a sanitizer";
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
	return "built with a sanitizer";
#endif
#endif
#ifdef PCPU_SCALE_VALGRIND
	if (RUNNING_ON_VALGRIND)
		return "under valgrind";
#endif
	if (preload && strstr(preload, "vgpreload"))
		return "under valgrind";
	if (read_small("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof(buf)) > 0 &&
	    strstr(buf, "[always]"))
		return "transparent huge pages \"always\": the heap may take 2 MiB at a fault"
		       " (the arena's chunks are MADV_NOHUGEPAGE)";
	return NULL;
}

/*
 * include/percpu/counter.h's claim: @n counters filled on the M running
 * CPUs grow the resident set by M x ceil(n x 16 B / PCPU_STRIDE) pages of
 * arena (each of a CPU's strides is in a page of its own, if pages are
 * not larger), not N x that; plus heap: per counter its struct, its armed
 * set (a summary word and N / 64 words), its registry entry (48 B, private
 * to lib/registry/registry.c), a malloc header and rounding (16 B) for
 * each of the last two, and a fixed 192 KiB for the pages those land on,
 * the arena's own records and the library's first setup (this is the
 * row's first init). (128 KiB fell short by 19 KiB in one run of twelve on
 * AMD Zen 4, in both rows of that process; the cause was not pinned down.) In containers (M < N) the growth must also
 * be far below all N CPUs' share: at most half. 0, or -EPROTO with why.
 */
static int check_rss(long grown_kib, unsigned int n)
{
	double page = (double)sysconf(_SC_PAGESIZE);
	double strides = ceil((double)n * sizeof(struct pcpu_slot) / PCPU_STRIDE);
	double heap = (double)n * (sizeof(struct pcpu_counter) +
				   sizeof(uint64_t) * (1 + pcpu_armset_words(nr_cpus)) + 16 + 48 + 16);
	double arena = nr_online * strides * fmax(page, PCPU_STRIDE);
	double all = nr_cpus * strides * PCPU_STRIDE;
	double limit = (fmin(arena, all) + heap) / 1024 + 192, grown = (double)grown_kib;
	const char *skewed = rss_skewed();

	if (grown_kib < 0) {
		fprintf(stderr, "percpu-bench-scale: N=%u: no /proc/self/smaps_rollup, RSS not checked\n",
			nr_cpus);
		return 0;
	}
	if (skewed) {
		fprintf(stderr, "percpu-bench-scale: N=%u: RSS not checked: %s\n", nr_cpus, skewed);
		return 0;
	}
	if (grown > limit || (nr_online < nr_cpus && grown > all / 1024 / 2)) {
		fprintf(stderr,
			"percpu-bench-scale: N=%u online=%u: %u counters grew RSS by %ld KiB;"
			" at most %.0f KiB expected (%.0f of arena for the running CPUs; all N's: %.0f)\n",
			nr_cpus, nr_online, n, grown_kib, limit, fmin(arena, all) / 1024, all / 1024);
		return -EPROTO;
	}
	return 0;
}

/*
 * 1k counters: the arena's footprint, the resident set they grow by, fold_all,
 * and the 1k exposition. First in the row: nothing of the library lives
 * yet when the resident set is first measured.
 */
static int measure_many(double *row, FILE *devnull)
{
	unsigned int n = 1000, more = 10000;
	struct pcpu_counter *c = calloc(more, sizeof(*c));
	struct counters cs = { c, n, 1 };
	long rss_before, rss_after;
	int err;

	if (!c)
		return -ENOMEM;
	/* after the calloc: with MALLOC_PERTURB_ (meson test) it writes all 10k structs */
	rss_before = rss_kib();
	err = pcpu_counter_init_many(c, 0, n);
	if (err) {
		free(c);
		return err;
	}
	/* nothing else lives yet: the chunks are the 1k counters' */
	row[SCALE_arena_bytes_1k] = (double)pcpu_arena_debug_chunks() * nr_cpus * PCPU_STRIDE / n;
	/* each running CPU's slot written, as its adds would (fold_all refills them) */
	fill_counters(c, n, 1);
	rss_after = rss_kib();
	if (rss_before >= 0 && rss_after >= 0)
		row[SCALE_rss_1k] = (double)(rss_after - rss_before);
	err = check_rss(rss_before >= 0 && rss_after >= 0 ? rss_after - rss_before : -1, n);
	if (err)
		goto destroy;

	row[SCALE_fold_all_1k] = measure(&(struct op){ refill_counters, run_fold_all, &cs, 1 }) / 1e3;
	for (unsigned int i = 0; i < n; i++)
		if (pcpu_counter_read(&c[i]) != pcpu_counter_sum(&c[i])) {
			fprintf(stderr, "percpu-bench-scale: counter %u: pending after fold_all\n", i);
			err = -EPROTO;
			goto destroy;
		}
	row[SCALE_fold_all_1k_idle] = measure(&(struct op){ NULL, run_fold_all, &cs, 1 }) / 1e3;

	err = register_range(c, 0, n);
	if (err)
		goto destroy;
	fill_counters(c, n, 1);
	row[SCALE_expo_1k] = measure(&(struct op){ NULL, run_expo, devnull, 1 }) / 1e3;
	if (mode == SCALE_CHECK)
		goto destroy;

	err = pcpu_counter_init_many(c + n, 0, more - n);
	if (err)
		goto destroy;
	err = register_range(c, n, more);
	if (err)
		goto destroy_more;
	fill_counters(c, more, 1);
	row[SCALE_expo_10k] = measure(&(struct op){ NULL, run_expo, devnull, 1 }) / 1e3;
	/*
	 * Kept: the child exits after its row, and unregistering 10k metrics
	 * walks the list of metrics for each (a quarter of a second).
	 */
	return 0;
destroy_more:
	pcpu_counter_destroy_many(c + n, more - n);
destroy:
	pcpu_counter_destroy_many(c, n);
	free(c);
	return err;
}

/*
 * The model is what it claims: the library counts N and M CPUs, will not
 * change them now, and the filled counters keep their promise
 * |sum - read| <= error_bound with a pending delta of at least 1 on each
 * of the M running CPUs, which alone are armed.
 */
static int check_filled(struct pcpu_counter *c, unsigned int n, unsigned int step)
{
	if (pcpu_cpu_possible() != nr_cpus || pcpu_cpu_online() != nr_online ||
	    pcpu_cpu_model(nr_cpus + 1, 1) != -EBUSY) {
		fprintf(stderr, "percpu-bench-scale: the CPU model did not take\n");
		return -EPROTO;
	}
	for (unsigned int i = 0; i < n; i++) {
		struct pcpu_counter *ci = &c[i * step];
		int64_t sum = pcpu_counter_sum(ci), read = pcpu_counter_read(ci);
		uint64_t error = sum > read ? (uint64_t)(sum - read) : (uint64_t)(read - sum);

		if (error > pcpu_counter_error_bound(ci) || error < nr_online ||
		    ci->armed != nr_online) {
			fprintf(stderr, "percpu-bench-scale: counter %u: |sum - read| = %llu, bound %llu, %u armed\n",
				i, (unsigned long long)error,
				(unsigned long long)pcpu_counter_error_bound(ci), ci->armed);
			return -EPROTO;
		}
	}
	return 0;
}

/* Sums, compare and sync on a few counters. */
static int measure_counter(double *row)
{
	unsigned int n = COLD_COUNTERS * SPACING;
	struct pcpu_counter *c = calloc(n, sizeof(*c));
	struct counters one = { c, 1, 1 }, cold = { c, COLD_COUNTERS, SPACING };
	struct remote remote;
	cpu_set_t saved;
	int err;

	if (!c)
		return -ENOMEM;
	err = pcpu_counter_init_many(c, 0, n);
	if (err)
		goto out;
	fill_counters(c, COLD_COUNTERS, SPACING);
	err = check_filled(c, COLD_COUNTERS, SPACING);
	if (err)
		goto destroy;

	measure_pair(&(struct op){ NULL, run_sum, &one, batch_for(nr_online) },
		     &(struct op){ NULL, run_sum_prefetch, &one, batch_for(nr_cpus) },
		     &row[SCALE_sum_warm], &row[SCALE_sum_pf_warm]);
	if (bench_can_flush())
		measure_pair(&(struct op){ flush_counters, run_sum, &cold, COLD_COUNTERS },
			     &(struct op){ flush_counters, run_sum_prefetch, &cold, COLD_COUNTERS },
			     &row[SCALE_sum_cold], &row[SCALE_sum_pf_cold]);
	if (remote_start(&remote, &cold, &saved) == 0) {
		measure_pair(&(struct op){ remote_fill, run_sum, &remote, COLD_COUNTERS },
			     &(struct op){ remote_fill, run_sum_prefetch, &remote, COLD_COUNTERS },
			     &row[SCALE_sum_remote], &row[SCALE_sum_pf_remote]);
		remote_stop(&remote, &saved);
	}
	row[SCALE_compare_precise] =
		measure(&(struct op){ NULL, run_compare, &one, batch_for(nr_online) });
	row[SCALE_sync_fold] =
		measure(&(struct op){ refill_counters, run_sync, &cold, COLD_COUNTERS });
	for (unsigned int i = 0; i < COLD_COUNTERS; i++)
		if (pcpu_counter_read(&c[i * SPACING]) != pcpu_counter_sum(&c[i * SPACING])) {
			fprintf(stderr, "percpu-bench-scale: pending after sync_if_delta_above(0)\n");
			err = -EPROTO;
			goto destroy;
		}
	measure_pair(&(struct op){ refill_counters, run_fold_walk, &cold, COLD_COUNTERS },
		     &(struct op){ refill_counters, run_fold_walk_seq_once, &cold, COLD_COUNTERS },
		     &row[SCALE_fold_walk], &row[SCALE_fold_walk_seq_once]);
	for (unsigned int i = 0; i < COLD_COUNTERS; i++)
		if (pcpu_counter_read(&c[i * SPACING]) != pcpu_counter_sum(&c[i * SPACING]) ||
		    c[i * SPACING].seq % COUNTER_SEQ_GEN) {
			fprintf(stderr, "percpu-bench-scale: the fold replicas left something\n");
			err = -EPROTO;
			goto destroy;
		}
destroy:
	pcpu_counter_destroy_many(c, n);
out:
	free(c);
	return err;
}

#define ADD1_BATCH (1u << 16) /* adds of 1 from 0: below 64 x N x 32 from N = 32 on */

static void run_set_zero(void *ctx)
{
	pcpu_counter_set(ctx, 0);
}

static void run_add1(void *ctx, unsigned int i)
{
	(void)i;
	pcpu_counter_add(ctx, 1);
}

/* Each running CPU of @c makes an add of 1, as far as its slot and the bound go. */
static void add1_running(struct pcpu_counter *c)
{
	for (unsigned int i = 0; i < nr_online; i++)
		set_pending(c, running_cpu(i), 1);
}

/*
 * The bounds at 0 and at 1 GiB as the library reports them once each
 * running CPU made an add (0 before: no CPU is armed), beside 0.2's
 * default floor (the kernel's batch, max(32, 2 x online)), which the model
 * computes. The bound at 0 must be at most the kernel's, batch x online,
 * whatever the possible count. And what the lower floor costs: a fold
 * every 32 adds of a CPU near zero instead of every 2 x online, measured as
 * adds of 1 with each floor, alternately.
 */
static int measure_bounds(double *row)
{
	struct pcpu_counter zero, big, dropin, old;
	double floor_0_2 = (double)pcpu_policy_kernel_batch(nr_online);
	double kernel_bound = floor_0_2 * nr_online;
	uint64_t before;
	double accuracy = PCPU_POLICY_ACCURACY;
	/* as percpu_counter_init() makes it (not linked: its constructor reads the CPUs) */
	struct pcpu_counter_options fixed = { .batch = pcpu_policy_kernel_batch(nr_online) };
	struct pcpu_counter_options floor_old = { .floor = pcpu_policy_kernel_batch(nr_online) };
	unsigned int adds = visits < ADD1_BATCH ? visits : ADD1_BATCH;
	int err = pcpu_counter_init(&zero, 0);

	if (err)
		return err;
	err = pcpu_counter_init(&big, GIB);
	if (err)
		goto zero;
	err = pcpu_counter_init_opts(&dropin, 0, &fixed);
	if (err)
		goto big;
	err = pcpu_counter_init_opts(&old, 0, &floor_old);
	if (err)
		goto dropin;
	before = pcpu_counter_error_bound(&zero) | pcpu_counter_error_bound(&big) |
		 pcpu_counter_error_bound(&dropin);
	add1_running(&zero);
	add1_running(&big);
	add1_running(&dropin);
	row[SCALE_bound_zero_0_2] = floor_0_2 * nr_cpus;
	row[SCALE_bound_zero] = (double)pcpu_counter_error_bound(&zero);
	row[SCALE_bound_1g] = (double)pcpu_counter_error_bound(&big);
	row[SCALE_dropin_bound_zero] = (double)pcpu_counter_error_bound(&dropin);
	/* the threshold is |value| / (accuracy x possible) once that is above the floor */
	row[SCALE_elastic_from_0_2] = accuracy * nr_cpus * floor_0_2;
	row[SCALE_elastic_from] = accuracy * nr_cpus * (double)pcpu_counter_default_floor();
	row[SCALE_counter_bytes] = (double)(sizeof(struct pcpu_slot) * nr_cpus +
					    sizeof(struct pcpu_counter) +
					    sizeof(uint64_t) * pcpu_armset_words(nr_cpus));
	/* bound = armed CPUs x threshold_max, and the running CPUs alone are armed */
	if (before != 0 || row[SCALE_bound_zero] != nr_online * (double)zero.threshold_max ||
	    zero.threshold_max != (uint64_t)pcpu_counter_default_floor() ||
	    row[SCALE_bound_1g] != nr_online * (double)big.threshold_max ||
	    row[SCALE_dropin_bound_zero] != (floor_0_2 - 1) * nr_online ||
	    row[SCALE_bound_zero] > kernel_bound) {
		fprintf(stderr,
			"percpu-bench-scale: bound before any add %llu; at 0 %.0f (kernel's %.0f),"
			" at 1 GiB %.0f, drop-in's %.0f\n",
			(unsigned long long)before, row[SCALE_bound_zero], kernel_bound,
			row[SCALE_bound_1g], row[SCALE_dropin_bound_zero]);
		err = -EPROTO;
	}
	measure_pair(&(struct op){ run_set_zero, run_add1, &old, adds },
		     &(struct op){ run_set_zero, run_add1, &zero, adds }, &row[SCALE_add1_0_2],
		     &row[SCALE_add1]);
	pcpu_counter_destroy(&old);
dropin:
	pcpu_counter_destroy(&dropin);
big:
	pcpu_counter_destroy(&big);
zero:
	pcpu_counter_destroy(&zero);
	return err;
}

static int measure_stat(double *row)
{
	struct pcpu_stat_item items[STAT_ITEMS];
	char names[STAT_ITEMS][16];
	struct stat_ctx *sc = calloc(1, sizeof(*sc));
	int err = 0;

	if (!sc)
		return -ENOMEM;
	for (unsigned int i = 0; i < STAT_ITEMS; i++) {
		snprintf(names[i], sizeof(names[i]), "scale_s%u", i);
		items[i] = (struct pcpu_stat_item){ .name = names[i] };
	}
	sc->s = pcpu_stat_create(&(struct pcpu_stat_desc){ items, STAT_ITEMS, 0 });
	if (!sc->s) {
		err = -errno;
		goto out;
	}
	if (pcpu_stat_error_bound(sc->s, 0) != 0) {
		fprintf(stderr, "percpu-bench-scale: a stat bound before any add\n");
		err = -EPROTO;
	}
	row[SCALE_stat_item_bytes] = 8.0 * nr_cpus;
	fill_stat(sc->s); /* the running CPUs armed, each item pending on each */
	row[SCALE_stat_bound_zero] = (double)pcpu_stat_error_bound(sc->s, 0);
	row[SCALE_stat_snapshot_64] = measure(
		&(struct op){ NULL, run_stat_snapshot, sc, batch_for(nr_online * STAT_ITEMS) });
	for (unsigned int i = 0; i < STAT_ITEMS; i++) {
		int64_t read = pcpu_stat_read(sc->s, i), v = sc->values[i];

		if (v != pcpu_stat_sum(sc->s, i) ||
		    (uint64_t)(v > read ? v - read : read - v) > sc->bounds[i] ||
		    (v - read) < (int64_t)nr_online) {
			fprintf(stderr, "percpu-bench-scale: stat item %u: snapshot %lld, read %lld\n",
				i, (long long)v, (long long)read);
			err = -EPROTO;
		}
	}
	for (unsigned int l = 0; l < STAT_FULL_LINES; l++)
		if (set_of(sc->s)->lines[l].nr != PCPU_STAT_LINE_ITEMS) {
			fprintf(stderr, "percpu-bench-scale: stat line %u not full\n", l);
			err = -EPROTO;
		}
	row[SCALE_stat_sync_fold] =
		measure(&(struct op){ refill_stat, run_stat_sync, sc, STAT_FULL_LINES });
	for (unsigned int l = 0; l < STAT_FULL_LINES; l++)
		for (unsigned int k = 0; k < PCPU_STAT_LINE_ITEMS; k++) {
			unsigned int i = set_of(sc->s)->lines[l].item[k];

			if (pcpu_stat_read(sc->s, i) != pcpu_stat_sum(sc->s, i)) {
				fprintf(stderr, "percpu-bench-scale: stat item %u pending after sync\n",
					i);
				err = -EPROTO;
			}
		}
	pcpu_stat_add(sc->s, 1, GIB); /* the slow path: central, then the threshold */
	row[SCALE_stat_bound_1g] = (double)pcpu_stat_error_bound(sc->s, 1);
	pcpu_stat_destroy(sc->s);

	sc->sh = pcpu_shared_create(NULL, &(struct pcpu_shared_desc){ .items = items,
								      .nr_items = STAT_ITEMS });
	if (!sc->sh) {
		err = -errno;
		goto out;
	}
	row[SCALE_shared_item_bytes] = 16.0 * (nr_cpus + 1);
	if (pcpu_shared_error_bound(sc->sh, 0) != 0) {
		fprintf(stderr, "percpu-bench-scale: a shared bound before any add\n");
		err = -EPROTO;
	}
	fill_shared(sc->sh); /* the running CPUs' rows armed, each item pending on each */
	row[SCALE_shared_bound_zero] = (double)pcpu_shared_error_bound(sc->sh, 0);
	row[SCALE_shared_snapshot_64] = measure(
		&(struct op){ NULL, run_shared_snapshot, sc, batch_for(nr_online * STAT_ITEMS) });
	for (unsigned int i = 0; i < STAT_ITEMS; i++)
		if (sc->values[i] != pcpu_shared_sum(sc->sh, i) ||
		    sc->values[i] - pcpu_shared_read(sc->sh, i) < (int64_t)nr_online) {
			fprintf(stderr, "percpu-bench-scale: shared item %u: snapshot %lld\n", i,
				(long long)sc->values[i]);
			err = -EPROTO;
		}
	pcpu_shared_close(sc->sh);
out:
	free(sc);
	return err;
}

static int measure_kp(double *row)
{
	struct kps *k = calloc(1, sizeof(*k));
	unsigned int i;
	int err = 0;

	if (!k)
		return -ENOMEM;
	for (i = 0; i < COLD_COUNTERS; i++) {
		err = kp_counter_init(&k->c[i], 0);
		if (err)
			goto out;
	}
	/* kp_counter_init() took the real online CPUs: the model's instead */
	kp_online_cpus = (int)nr_online;
	kp_counter_batch = 2 * kp_online_cpus > 32 ? 2 * kp_online_cpus : 32;
	refill_kp(k);
	row[SCALE_kp_sum] = measure(&(struct op){ NULL, run_kp_sum, k, batch_for(nr_cpus) });
	row[SCALE_kp_compare_precise] =
		measure(&(struct op){ NULL, run_kp_compare, k, batch_for(nr_cpus) });
	row[SCALE_kp_sync_fold] = measure(&(struct op){ refill_kp, run_kp_sync, k, COLD_COUNTERS });
	/* the kernel's struct percpu_counter: lock, count, list, counters pointer */
	row[SCALE_kp_bytes] = 4.0 * nr_cpus + 40;
	row[SCALE_kp_bound] = (double)kp_counter_batch * kp_online_cpus;
out:
	while (i--)
		kp_counter_destroy(&k->c[i]);
	free(k);
	return err;
}

int scale_model_run(unsigned int possible, unsigned int online, enum scale_mode m, double *row)
{
	FILE *devnull;
	int err;

	for (unsigned int i = 0; i < SCALE_NR_COLUMNS; i++)
		row[i] = NAN;
	/* possible 0: no model, the machine's own CPUs */
	err = possible ? pcpu_cpu_model(possible, online) : 0;
	if (err)
		return err;
	if (!possible) {
		possible = pcpu_cpu_possible();
		online = pcpu_cpu_online();
	}
	nr_cpus = possible;
	nr_online = online;
	mode = m;
	reps = mode == SCALE_FULL ? 11 : mode == SCALE_QUICK ? 5 : 1;
	visits = mode == SCALE_CHECK ? 1u << 12 : 1u << 20;
	row[SCALE_possible] = possible;
	row[SCALE_online] = online;
	trace("start");
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		return -errno;
	err = measure_many(row, devnull);
	trace("many");
	if (!err)
		err = measure_counter(row);
	trace("counter");
	if (!err)
		err = measure_bounds(row);
	if (!err)
		err = measure_stat(row);
	trace("stat");
	if (!err)
		err = measure_kp(row);
	trace("kp");
	fclose(devnull);
	return err;
}
