/* SPDX-License-Identifier: MIT */
/*
 * percpu-charge-bench: charging against a limit (DESIGN.md's `charge`
 * workload, issue 9 item 5), five implementations side by side in one
 * process (see impls.h): pcpu_charge, a shared CAS loop, the kernel's way on
 * percpu-bench's kernel port, pcpu_counter_limited_add and a never-drained
 * per-thread stock.
 *
 * Workloads: one operation = try to charge 4 KiB, and uncharge it if the
 * charge succeeded.
 *
 *   charge-far   the limit is 1 TiB: every charge fits
 *   charge-near  the limit is threads x 4 x 4 KiB: room for a few charges per
 *                thread. A failure is legitimate here; successes and failures
 *                are counted separately and both reported.
 *
 * For every workload and thread count it does N runs, each of every
 * implementation back to back (bench/common/harness.h: options, runs,
 * medians, ratios, plots). After every run, at
 * quiescence, it checks the usage is back to exactly 0 (every success was
 * uncharged) and that there is no false failure: a try of limit - usage + 1
 * fails and a try of limit - usage succeeds (the stock baseline is expected
 * to fail that; it is reported, not an error; so is the kernel port, whose
 * compare trusts a bound, batch x online CPUs, that its userspace fold can
 * break: a fold by a thread that migrated leaves the amount in one slot and
 * its negation in another, each beyond the batch). Optionally it also runs
 * percpu-bench's commit-near workload, unchanged (see commit.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <percpu/charge.h>
#include <percpu/counter.h>
#include <percpu/cpu.h>

#include "commit.h"
#include "harness.h"
#include "impls.h"
#include "timing.h"

#define STOP_EVERY 64

#define CHARGE (INT64_C(4096))
#define LIMIT_FAR (INT64_C(1) << 40)
#define NEAR_PER_THREAD 4

enum workload { WL_FAR, WL_NEAR, NR_WORKLOADS };

static const char *const workload_names[NR_WORKLOADS] = { "charge-far", "charge-near" };

/* ---- options ------------------------------------------------------------ */

/* The options of this benchmark besides the harness's. */
struct options {
	bool commit;
	bool workloads[NR_WORKLOADS];
	unsigned int impls; /* bit i: measure implementation i */
	int64_t stock_cap; /* pcpu_charge's option; 0: the default */
	int64_t held;      /* what limited_add's counter holds besides the charges */
};

static struct bench_options opt = BENCH_OPTIONS("percpu-charge-bench");
static struct options copt = { .commit = true, .workloads = { true, true },
			       .impls = (1u << NR_IMPLS) - 1 };

static void usage(FILE *f)
{
	fprintf(f, "usage: percpu-charge-bench [options]\n%s", bench_usage_runs);
	fputs("  --stock-cap N       pcpu_charge's stock cap in bytes (default: the library's,\n"
	      "                      limit / possible CPUs, at most 4 GiB)\n"
	      "  --held N            limited_add's counter holds N bytes besides the charges\n"
	      "                      (its limit moves up by N): a counter of committed memory\n"
	      "                      holds a large value, and its elastic threshold with it\n"
	      "                      (default 0: threshold 32, every 4 KiB add decides centrally)\n"
	      "  --workloads LIST    comma-separated subset of charge-far,charge-near,\n"
	      "                      commit-near (default all)\n"
	      "  --no-commit         skip percpu-bench's commit-near workload\n"
	      "  --impls LIST        measure only these of pcpu_charge,cas,kernel,limited_add,\n"
	      "                      stock (for profiling; the others read 0)\n",
	      f);
	fputs(bench_usage_outputs, f);
	fputs("Environment: PCPU_FORCE_FALLBACK=1 makes libpercpu and the kernel port use\n"
	      "their atomic path.\n",
	      f);
}

static void parse_workloads(char *list)
{
	memset(copt.workloads, 0, sizeof(copt.workloads));
	copt.commit = false;
	for (char *save = NULL, *name = strtok_r(list, ",", &save); name;
	     name = strtok_r(NULL, ",", &save)) {
		int w = bench_name_index(name, workload_names, NR_WORKLOADS);

		if (w >= 0) {
			copt.workloads[w] = true;
		} else if (strcmp(name, "commit-near") == 0) {
			copt.commit = true;
		} else {
			fprintf(stderr, "percpu-charge-bench: unknown workload '%s'\n", name);
			exit(2);
		}
	}
}

static void parse_impls(char *list)
{
	copt.impls = 0;
	for (char *save = NULL, *name = strtok_r(list, ",", &save); name;
	     name = strtok_r(NULL, ",", &save)) {
		int i = bench_name_index(name, charge_impl_names, NR_IMPLS);

		if (i < 0) {
			fprintf(stderr, "percpu-charge-bench: unknown implementation '%s'\n", name);
			exit(2);
		}
		copt.impls |= 1u << i;
	}
}

static void parse_options(int argc, char **argv)
{
	static const struct option longopts[] = {
		BENCH_LONG_OPTIONS,
		{ "stock-cap", required_argument, NULL, 's' },
		{ "held", required_argument, NULL, 'H' },
		{ "no-commit", no_argument, NULL, 'n' },
		{ "workloads", required_argument, NULL, 'w' },
		{ "impls", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (bench_option(&opt, c, usage))
			continue;
		switch (c) {
		case 's':
			copt.stock_cap = (int64_t)bench_parse_num(&opt, optarg, "--stock-cap",
								  (unsigned long long)PCPU_CHARGE_MAX);
			break;
		case 'H':
			copt.held = (int64_t)bench_parse_num(&opt, optarg, "--held", UINT64_C(1) << 50);
			break;
		case 'n': copt.commit = false; break;
		case 'w': parse_workloads(optarg); break;
		case 'i': parse_impls(optarg); break;
		}
	}
	bench_options_done(&opt, argc, usage);
}

static int64_t limit_of(enum workload wl, unsigned int threads)
{
	return wl == WL_FAR ? LIMIT_FAR : (int64_t)threads * NEAR_PER_THREAD * CHARGE;
}

/* ---- the loops -------------------------------------------------------------- */

struct worker {
	alignas(BENCH_CACHELINE) pthread_t id;
	enum impl impl;
	struct target t;
	pthread_barrier_t *go;
	const int *stop;
	/* out */
	uint64_t ok, failed;
	uint64_t start_ns, end_ns, cpu_ns;
};

/* The stop flag, alone in its cacheline: read by every thread. */
static struct {
	alignas(BENCH_CACHELINE) int flag;
} stop;

BENCH_INLINE void loop(enum impl impl, struct worker *w)
{
	struct target t = w->t;
	const int *stop_flag = w->stop;
	uint64_t ok = 0, failed = 0;

	while (!__atomic_load_n(stop_flag, __ATOMIC_RELAXED)) {
		for (int i = 0; i < STOP_EVERY; i++) {
			/* every answer is used: counted, and the charge undone */
			if (impl_try(impl, t, CHARGE)) {
				impl_uncharge(impl, t, CHARGE);
				ok++;
			} else {
				failed++;
			}
		}
	}
	w->ok = ok;
	w->failed = failed;
}

/* One loop per implementation, each the implementation's own inline code. */
static void loop_charge(struct worker *w)
{
	loop(IMPL_CHARGE, w);
}

static void loop_cas(struct worker *w)
{
	loop(IMPL_CAS, w);
}

static void loop_kernel(struct worker *w)
{
	loop(IMPL_KERNEL, w);
}

static void loop_limited(struct worker *w)
{
	loop(IMPL_LIMITED, w);
}

static void loop_stock(struct worker *w)
{
	loop(IMPL_STOCK, w);
}

static void *worker_main(void *p)
{
	static void (*const loops[NR_IMPLS])(struct worker *) = {
		loop_charge, loop_cas, loop_kernel, loop_limited, loop_stock,
	};
	struct worker *w = p;
	uint64_t cpu0;

	pthread_barrier_wait(w->go);
	w->start_ns = timing_now_ns();
	cpu0 = timing_thread_cpu_ns();
	loops[w->impl](w);
	w->cpu_ns = timing_thread_cpu_ns() - cpu0;
	w->end_ns = timing_now_ns();
	return NULL;
}

/* ---- one measurement -------------------------------------------------------------- */

struct sample {
	double mops;       /* operations (tries) per microsecond, all threads */
	double ok_mops;    /* successful charge/uncharge pairs per microsecond */
	double fail_share; /* failed tries / tries */
	double cpu_share;  /* the threads' CPU time / (span x min(threads, online)) */
	double cpu_mops;   /* tries per thread CPU microsecond x min(threads, online) */
	bool false_failure; /* at quiescence, a try of limit - usage failed */
	bool overshoot;     /* at quiescence, a try of limit - usage + 1 succeeded */
};

/*
 * The end check, on the main thread (the stock baseline's extra stock):
 * a try of limit - usage + 1 must fail, one of limit - usage must succeed.
 */
static void check_limit(const struct bench_obj *o, unsigned int threads, struct sample *s)
{
	struct target t = target_of(o, threads);
	int64_t room = o->limit - obj_usage(o);

	s->overshoot = false;
	if (impl_try(o->impl, t, room + 1)) {
		s->overshoot = true;
		impl_uncharge(o->impl, t, room + 1);
	}
	s->false_failure = !impl_try(o->impl, t, room);
	if (!s->false_failure)
		impl_uncharge(o->impl, t, room);
	if (o->impl == IMPL_CHARGE && pcpu_charge_reserved(o->charge) > o->limit) {
		fprintf(stderr, "percpu-charge-bench: pcpu_charge reserved %lld > limit %lld\n",
			(long long)pcpu_charge_reserved(o->charge), (long long)o->limit);
		exit(1);
	}
}

static struct sample measure(enum impl impl, enum workload wl, unsigned int threads)
{
	static struct worker w[BENCH_MAX_THREADS];
	unsigned int online = pcpu_cpu_online(), busy = threads < online ? threads : online;
	uint64_t first = UINT64_MAX, last = 0, ok = 0, failed = 0, cpu_ns = 0;
	pthread_barrier_t go;
	struct bench_obj o;
	struct sample s;
	int64_t usage;
	double us;
	int err;

	err = obj_init(&o, impl, limit_of(wl, threads), threads, copt.stock_cap, copt.held);
	if (err) {
		fprintf(stderr, "percpu-charge-bench: %s: cannot set up: %s\n", charge_impl_names[impl],
			strerror(-err));
		exit(1);
	}
	pthread_barrier_init(&go, NULL, threads + 1);
	__atomic_store_n(&stop.flag, 0, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < threads; i++) {
		w[i] = (struct worker){ .impl = impl, .t = target_of(&o, i), .go = &go,
					.stop = &stop.flag };
		if (pthread_create(&w[i].id, NULL, worker_main, &w[i]) != 0) {
			perror("percpu-charge-bench: pthread_create");
			exit(1);
		}
	}
	pthread_barrier_wait(&go);
	bench_sleep_ms(opt.duration_ms);
	__atomic_store_n(&stop.flag, 1, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < threads; i++) {
		pthread_join(w[i].id, NULL);
		if (w[i].start_ns < first)
			first = w[i].start_ns;
		if (w[i].end_ns > last)
			last = w[i].end_ns;
		ok += w[i].ok;
		failed += w[i].failed;
		cpu_ns += w[i].cpu_ns;
	}
	pthread_barrier_destroy(&go);

	/* the oracle: every success was uncharged */
	usage = obj_usage(&o);
	if (usage != 0) {
		fprintf(stderr, "percpu-charge-bench: %s/%s/%u: usage %lld at quiescence, not 0\n",
			workload_names[wl], charge_impl_names[impl], threads, (long long)usage);
		exit(1);
	}
	check_limit(&o, threads, &s);
	obj_destroy(&o);

	us = (double)(last - first) / 1e3;
	s.mops = (double)(ok + failed) / us;
	s.ok_mops = (double)ok / us;
	s.fail_share = ok + failed ? (double)failed / (double)(ok + failed) : 0;
	s.cpu_share = (double)cpu_ns / 1e3 / (us * busy);
	s.cpu_mops = cpu_ns ? (double)(ok + failed) / ((double)cpu_ns / 1e3) * busy : 0;
	return s;
}

/* ---- statistics ---------------------------------------------------------------------- */

struct point {
	enum workload wl;
	unsigned int threads;
	struct sample s[NR_IMPLS][BENCH_MAX_RUNS];
};

struct commit_point {
	unsigned int threads;
	struct commit_sample s[COMMIT_IMPLS][BENCH_MAX_RUNS];
};

/* A figure of a sample, named by where it stands in it */
enum field {
	F_MOPS = offsetof(struct sample, mops),
	F_OK_MOPS = offsetof(struct sample, ok_mops),
	F_FAIL = offsetof(struct sample, fail_share),
	F_SHARE = offsetof(struct sample, cpu_share),
	F_CPU_MOPS = offsetof(struct sample, cpu_mops),
};

static double med(const struct point *p, enum impl impl, enum field f)
{
	return bench_runs_median(p->s[impl], sizeof(struct sample), f, opt.runs);
}

/* The median over runs of pcpu_charge / @impl within each run. */
static double ratio(const struct point *p, enum impl impl, enum field f)
{
	return bench_runs_ratio(p->s[IMPL_CHARGE], p->s[impl], sizeof(struct sample), f, opt.runs);
}

static unsigned int count_runs(const struct point *p, enum impl impl, bool overshoot)
{
	unsigned int n = 0;

	for (unsigned int k = 0; k < opt.runs; k++)
		n += overshoot ? p->s[impl][k].overshoot : p->s[impl][k].false_failure;
	return n;
}

static double commit_med(const struct commit_point *p, unsigned int impl)
{
	return bench_runs_median(p->s[impl], sizeof(struct commit_sample),
				 offsetof(struct commit_sample, mops), opt.runs);
}

static double commit_share(const struct commit_point *p)
{
	double share = 1;

	for (unsigned int i = 0; i < COMMIT_IMPLS; i++) {
		double m = bench_runs_median(p->s[i], sizeof(struct commit_sample),
					     offsetof(struct commit_sample, cpu_share), opt.runs);

		if (m < share)
			share = m;
	}
	return share;
}

static double commit_ratio(const struct commit_point *p, unsigned int impl)
{
	return bench_runs_ratio(p->s[0], p->s[impl], sizeof(struct commit_sample),
				offsetof(struct commit_sample, mops), opt.runs);
}

/* ---- reports --------------------------------------------------------------------------- */

static const char *mode_name(void)
{
	return pcpu_cpu_setup() == PCPU_CPU_RSEQ ? "rseq" : "atomic (fallback)";
}

static void print_machine(FILE *f)
{
	char machine[512];
	struct pcpu_charge probe;
	struct pcpu_charge_options co = { .limit = LIMIT_FAR, .stock_cap = copt.stock_cap };

	bench_machine(machine, sizeof(machine));
	fprintf(f, "machine: %s; load %.1f\n", machine, bench_load());
	/* the mode pcpu_charge takes: rseq needs the membarrier rseq fence too */
	if (pcpu_charge_init(&probe, &co) == 0) {
		fprintf(f, "update path: libpercpu %s, pcpu_charge %s, kernel port %s\n",
			mode_name(), probe.mode == PCPU_CPU_RSEQ ? "rseq" : "atomic",
			kp_path_name(kp_path_current()));
		pcpu_charge_destroy(&probe);
	}
	fprintf(f, "one op: try to charge %lld B, uncharge it if charged; charge-far limit "
		   "%lld B, charge-near limit threads x %d x %lld B\n",
		(long long)CHARGE, (long long)LIMIT_FAR, NEAR_PER_THREAD, (long long)CHARGE);
	if (copt.stock_cap)
		fprintf(f, "pcpu_charge stock cap: %lld B (--stock-cap)\n", (long long)copt.stock_cap);
	else
		fprintf(f, "pcpu_charge stock cap: the default, limit / %u possible CPUs, "
			   "2 B to 4 GiB; inline while the amount <= cap / 2\n",
			pcpu_cpu_possible());
	if (copt.held)
		fprintf(f, "limited_add's counter holds %lld B besides the charges (--held)\n",
			(long long)copt.held);
	for (unsigned int i = 0; i < NR_IMPLS; i++)
		fprintf(f, "  %-12s %s\n", charge_impl_names[i], charge_impl_descriptions[i]);
}

static void print_table(FILE *f, const struct point *pts, unsigned int npts)
{
	fprintf(f, "\nThroughput, Mops/s (tries, all threads), median of %u runs of %u ms; "
		   "ratios pcpu_charge / other (median of per-run ratios)\n\n",
		opt.runs, opt.duration_ms);
	if (opt.markdown)
		fputs("| workload | threads | pcpu_charge | cas | kernel | limited_add | stock "
		      "| vs cas | vs kernel | vs limited_add | vs stock | cpu% |\n"
		      "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n", f);
	else
		fprintf(f, "%-11s %3s %11s %9s %9s %11s %9s %8s %9s %10s %8s %5s\n", "workload",
			"thr", "pcpu_charge", "cas", "kernel", "limited_add", "stock", "vs cas",
			"vs kernel", "vs limited", "vs stock", "cpu%");
	for (unsigned int k = 0; k < npts; k++) {
		const struct point *p = &pts[k];
		double share = 1;

		for (unsigned int i = 0; i < NR_IMPLS; i++)
			if (med(p, i, F_SHARE) < share)
				share = med(p, i, F_SHARE);
		if (opt.markdown) {
			fprintf(f, "| %s | %u", workload_names[p->wl], p->threads);
			for (unsigned int i = 0; i < NR_IMPLS; i++)
				fprintf(f, " | %.1f", med(p, i, F_MOPS));
			for (unsigned int i = 1; i < NR_IMPLS; i++)
				fprintf(f, " | %.2fx", ratio(p, i, F_MOPS));
			fprintf(f, " | %.0f |\n", 100 * share);
		} else {
			fprintf(f, "%-11s %3u %11.1f %9.1f %9.1f %11.1f %9.1f", workload_names[p->wl],
				p->threads, med(p, IMPL_CHARGE, F_MOPS), med(p, IMPL_CAS, F_MOPS),
				med(p, IMPL_KERNEL, F_MOPS), med(p, IMPL_LIMITED, F_MOPS),
				med(p, IMPL_STOCK, F_MOPS));
			fprintf(f, " %7.2fx %8.2fx %9.2fx %7.2fx %5.0f\n", ratio(p, IMPL_CAS, F_MOPS),
				ratio(p, IMPL_KERNEL, F_MOPS), ratio(p, IMPL_LIMITED, F_MOPS),
				ratio(p, IMPL_STOCK, F_MOPS), 100 * share);
		}
	}

	fprintf(f, "\nSuccesses and failures: successful charges, Mops/s / failed tries, %% of "
		   "tries (medians); end check at quiescence: false failures (a try of "
		   "limit - usage failed) and overshoots (limit - usage + 1 succeeded), runs of %u\n\n",
		opt.runs);
	if (opt.markdown) {
		fputs("| workload | threads", f);
		for (unsigned int i = 0; i < NR_IMPLS; i++)
			fprintf(f, " | %s ok / failed", charge_impl_names[i]);
		fputs(" | end check |\n|---|--:|--:|--:|--:|--:|--:|---|\n", f);
	} else {
		fprintf(f, "%-11s %3s", "workload", "thr");
		for (unsigned int i = 0; i < NR_IMPLS; i++)
			fprintf(f, " %18s", charge_impl_names[i]);
		fputs("  end check\n", f);
	}
	for (unsigned int k = 0; k < npts; k++) {
		const struct point *p = &pts[k];
		char check[256] = "", *c = check;

		fprintf(f, opt.markdown ? "| %s | %u" : "%-11s %3u", workload_names[p->wl],
			p->threads);
		for (unsigned int i = 0; i < NR_IMPLS; i++) {
			unsigned int ff = count_runs(p, i, false), os = count_runs(p, i, true);

			fprintf(f, opt.markdown ? " | %.1f / %.1f%%" : " %9.1f / %5.1f%%",
				med(p, i, F_OK_MOPS), 100 * med(p, i, F_FAIL));
			if (ff || os)
				c += snprintf(c, sizeof(check) - (size_t)(c - check),
					      "%s%s: %u false failure(s), %u overshoot(s)",
					      c == check ? "" : "; ", charge_impl_names[i], ff, os);
		}
		fprintf(f, opt.markdown ? " | %s |\n" : "  %s\n", check[0] ? check : "ok");
	}

	fprintf(f, "\nPer thread CPU second (corrects for a shared machine), Mops per CPU-s x "
		   "min(threads, CPUs); ratios pcpu_charge / other\n\n");
	if (opt.markdown)
		fputs("| workload | threads | pcpu_charge | cas | kernel | limited_add | stock "
		      "| vs cas | vs kernel | vs limited_add | vs stock |\n"
		      "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n", f);
	for (unsigned int k = 0; k < npts; k++) {
		const struct point *p = &pts[k];

		fprintf(f, opt.markdown ? "| %s | %u" : "%-11s %3u", workload_names[p->wl],
			p->threads);
		for (unsigned int i = 0; i < NR_IMPLS; i++)
			fprintf(f, opt.markdown ? " | %.1f" : " %9.1f", med(p, i, F_CPU_MOPS));
		for (unsigned int i = 1; i < NR_IMPLS; i++)
			fprintf(f, opt.markdown ? " | %.2fx" : " %8.2fx", ratio(p, i, F_CPU_MOPS));
		fputs(opt.markdown ? " |\n" : "\n", f);
	}
}

static const struct point *find_point(const struct point *pts, unsigned int npts,
				      enum workload wl, unsigned int threads)
{
	for (unsigned int k = 0; k < npts; k++)
		if (pts[k].wl == wl && pts[k].threads == threads)
			return &pts[k];
	return NULL;
}

static const char *verdict(bool met)
{
	return met ? "met" : "MISSED";
}

/* The targets beside what this run measured (not tuned to them). */
static void print_targets(FILE *f, const struct point *pts, unsigned int npts)
{
	unsigned int two = pcpu_cpu_online() < 2 ? 1 : 2;
	const struct point *far = find_point(pts, npts, WL_FAR, two);

	fprintf(f, "\nTargets (issue 9, item 5), at %u threads unless said:\n", two);
	if (far) {
		double c = ratio(far, IMPL_CAS, F_MOPS), s = ratio(far, IMPL_STOCK, F_MOPS);

		fprintf(f, "  charge-far  pcpu_charge / cas   %7.2fx (target >= 20x):  %s\n", c,
			verdict(c >= 20));
		fprintf(f, "  charge-far  pcpu_charge / stock %7.2fx (target >= 0.5x): %s\n", s,
			verdict(s >= 0.5));
	}
	for (unsigned int k = 0; k < npts; k++) {
		const struct point *p = &pts[k];
		double c;
		unsigned int ff;

		if (p->wl != WL_NEAR)
			continue;
		c = ratio(p, IMPL_CAS, F_MOPS);
		ff = count_runs(p, IMPL_CHARGE, false);
		fprintf(f, "  charge-near pcpu_charge / cas   %7.2fx at %u threads (target >= 1x, "
			   "no false failure): %s; %u false failure(s) in %u runs; "
			   "successes %.2fx cas's\n",
			c, p->threads, verdict(c >= 1 && ff == 0), ff, opt.runs,
			ratio(p, IMPL_CAS, F_OK_MOPS));
	}
	fputs("  limited_add far from the limit, today (a global mutex): ", f);
	for (unsigned int k = 0; k < npts; k++)
		if (pts[k].wl == WL_FAR)
			fprintf(f, "%s%.1f Mops/s at %u", k ? ", " : "", med(&pts[k], IMPL_LIMITED, F_MOPS),
				pts[k].threads);
	fputs(" threads; the target is 10x these figures\n", f);
}

static void print_commit(FILE *f, const struct commit_point *cps, unsigned int n)
{
	fprintf(f, "\npercpu-bench's commit-near (add 16, compare with the value itself, "
		   "subtract 16; unchanged), Mops/s, median of %u runs of %u ms\n\n",
		opt.runs, opt.duration_ms);
	if (opt.markdown)
		fputs("| threads | percpu | atomic | kernel | thread | vs atomic | vs kernel "
		      "| vs thread | cpu% |\n|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n", f);
	else
		fprintf(f, "%3s %9s %9s %9s %9s %9s %9s %9s %5s\n", "thr", "percpu", "atomic",
			"kernel", "thread", "vs atomic", "vs kernel", "vs thread", "cpu%");
	for (unsigned int k = 0; k < n; k++) {
		fprintf(f, opt.markdown ? "| %u" : "%3u", cps[k].threads);
		for (unsigned int i = 0; i < COMMIT_IMPLS; i++)
			fprintf(f, opt.markdown ? " | %.1f" : " %9.1f", commit_med(&cps[k], i));
		for (unsigned int i = 1; i < COMMIT_IMPLS; i++)
			fprintf(f, opt.markdown ? " | %.2fx" : " %8.2fx", commit_ratio(&cps[k], i));
		fprintf(f, opt.markdown ? " | %.0f |\n" : " %5.0f\n", 100 * commit_share(&cps[k]));
	}
}

static void write_csv(const char *path, const struct point *pts, unsigned int npts,
		      const struct commit_point *cps, unsigned int ncps)
{
	FILE *f = bench_csv_open(&opt, path);

	fprintf(f, "workload,threads,impl,mode,runs,duration_ms,limit,median_mops,min_mops,"
		   "max_mops,charge_ratio,ok_mops,fail_share,false_failure_runs,overshoot_runs,"
		   "cpu_share,cpu_mops,charge_cpu_ratio\n");
	for (unsigned int k = 0; k < npts; k++)
		for (unsigned int i = 0; i < NR_IMPLS; i++) {
			const struct point *p = &pts[k];
			double lo = bench_runs_extreme(p->s[i], sizeof(struct sample), F_MOPS,
						       opt.runs, false),
			       hi = bench_runs_extreme(p->s[i], sizeof(struct sample), F_MOPS,
						       opt.runs, true);

			fprintf(f, "%s,%u,%s,%s,%u,%u,%lld,%.3f,%.3f,%.3f,%.4f,%.3f,%.5f,%u,%u,"
				   "%.3f,%.3f,%.4f\n",
				workload_names[p->wl], p->threads, charge_impl_names[i],
				i == IMPL_CAS || i == IMPL_STOCK ? "atomic" : mode_name(), opt.runs,
				opt.duration_ms, (long long)limit_of(p->wl, p->threads),
				med(p, i, F_MOPS), lo, hi,
				i ? ratio(p, i, F_MOPS) : 1.0, med(p, i, F_OK_MOPS), med(p, i, F_FAIL),
				count_runs(p, i, false), count_runs(p, i, true), med(p, i, F_SHARE),
				med(p, i, F_CPU_MOPS), i ? ratio(p, i, F_CPU_MOPS) : 1.0);
		}
	/* commit-near: the ratio is percpu's (pcpu_counter) to each */
	for (unsigned int k = 0; k < ncps; k++)
		for (unsigned int i = 0; i < COMMIT_IMPLS; i++)
			fprintf(f, "commit-near,%u,%s,%s,%u,%u,,%.3f,,,%.4f,,,,,,,\n", cps[k].threads,
				commit_impl_names[i], mode_name(), opt.runs, opt.duration_ms,
				commit_med(&cps[k], i), i ? commit_ratio(&cps[k], i) : 1.0);
	fclose(f);
}

static void plot_where(const void *point, unsigned int *workload, unsigned int *threads)
{
	*workload = ((const struct point *)point)->wl;
	*threads = ((const struct point *)point)->threads;
}

/* The plot's figures: throughput, and the ratios by wall clock */
static double plot_figure(const void *point, unsigned int impl, bool ratio_of)
{
	return ratio_of ? ratio(point, impl, F_MOPS) : med(point, impl, F_MOPS);
}

static void write_plot(const char *path, const struct point *pts, unsigned int npts)
{
	static const struct bench_panels panels = {
		.workloads = workload_names,
		.shown = copt.workloads,
		.nr_workloads = NR_WORKLOADS,
		.nr_impls = NR_IMPLS,
		.impls = "pcpu_charge cas kernel limited_add stock",
		.others = "cas kernel limited_add stock",
		.first = "pcpu_charge",
		.xlabel = "threads",
		.throughput = "throughput (tries, wall clock)",
		.ratios = "pcpu_charge / other (per-run ratios, median)",
	};
	unsigned int nwl = 0;
	FILE *g;

	for (unsigned int wl = 0; wl < NR_WORKLOADS; wl++)
		nwl += copt.workloads[wl];
	if (!nwl)
		return;
	g = bench_plot_open(&opt, path);
	if (!g)
		return;
	bench_plot_data(g, &panels,
			&(struct bench_plot_points){ .pts = pts, .size = sizeof(*pts), .npts = npts,
						     .where = plot_where, .figure = plot_figure });
	fprintf(g, "set multiplot layout 2,%u title 'percpu-charge-bench: charge 4 KiB, "
		   "uncharge it (median of %u x %u ms, %u CPUs, %s)'\n",
		nwl, opt.runs, opt.duration_ms, pcpu_cpu_online(), mode_name());
	bench_plot_panels(g, &panels);
	bench_plot_close(&opt, path, g);
}

int main(int argc, char **argv)
{
	static struct point pts[NR_WORKLOADS * BENCH_MAX_COUNTS];
	static struct commit_point cps[BENCH_MAX_COUNTS];
	unsigned int counts[BENCH_MAX_COUNTS], ncounts, npts = 0, ncps = 0, bad = 0;

	parse_options(argc, argv);
	pcpu_cpu_setup();
	ncounts = bench_thread_counts(&opt, counts);

	print_machine(stdout);
	fflush(stdout);
	for (unsigned int wl = 0; wl < NR_WORKLOADS; wl++)
		for (unsigned int c = 0; copt.workloads[wl] && c < ncounts; c++) {
			struct point *p = &pts[npts++];

			p->wl = wl;
			p->threads = counts[c];
			for (unsigned int run = 0; run < opt.runs; run++)
				for (unsigned int k = 0; k < NR_IMPLS; k++) {
					enum impl impl = (k + run) % NR_IMPLS;

					if (copt.impls & (1u << impl))
						p->s[impl][run] = measure(impl, wl, p->threads);
				}
			for (unsigned int i = 0; i < NR_IMPLS; i++)
				if (i != IMPL_STOCK && i != IMPL_KERNEL &&
				    (count_runs(p, i, false) || count_runs(p, i, true)))
					bad++;
			fprintf(stderr, ".");
		}
	for (unsigned int c = 0; copt.commit && c < ncounts; c++) {
		struct commit_point *p = &cps[ncps++];

		p->threads = counts[c];
		for (unsigned int run = 0; run < opt.runs; run++)
			for (unsigned int k = 0; k < COMMIT_IMPLS; k++) {
				unsigned int impl = (k + run) % COMMIT_IMPLS;

				if (commit_near_measure(impl, p->threads, opt.duration_ms,
							&p->s[impl][run]) != 0) {
					fprintf(stderr, "percpu-charge-bench: commit-near: cannot run\n");
					exit(1);
				}
				if (!p->s[impl][run].exact) {
					fprintf(stderr, "percpu-charge-bench: commit-near/%s/%u: "
							"wrong final value\n",
						commit_impl_names[impl], p->threads);
					exit(1);
				}
			}
		fprintf(stderr, ".");
	}
	fprintf(stderr, "\n");
	print_table(stdout, pts, npts);
	if (ncps)
		print_commit(stdout, cps, ncps);
	print_targets(stdout, pts, npts);
	if (opt.csv)
		write_csv(opt.csv, pts, npts, cps, ncps);
	if (opt.plot)
		write_plot(opt.plot, pts, npts);
	if (bad) {
		fprintf(stderr, "percpu-charge-bench: %u point(s) with a false failure or an "
				"overshoot at quiescence (see the end check column)\n",
			bad);
		return 1;
	}
	return 0;
}
