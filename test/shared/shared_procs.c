/* SPDX-License-Identifier: MIT */
/*
 * The multi-process oracle, a plain program (exit status 0, 77 to skip, or
 * the number of the failed check) so that it also runs under
 * ThreadSanitizer. Each round: PROCS worker processes of THREADS threads
 * each add into one anonymous segment while they hop CPUs and the parent
 * storms them with SIGUSR1 (and each with its own SIGALRM timer); the
 * parent SIGKILLs KILLED of them at random moments, the others keep adding,
 * then stop. Every thread writes, in a tally mapping of its own, the amount
 * it is about to add (intent), then after the add its running total
 * (done), then clears the intent. So the exact value of an item is the sum
 * of done plus the intents of killed threads whose add had committed: a
 * subset of at most KILLED * THREADS amounts, which the check enumerates.
 * Then a fold_all by the parent must make read() exact, whatever the dead
 * left half done; and read() and sum() of the +1 item must never have gone
 * back while the parent watched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <percpu/shared.h>

#define PCPU_CHECK_PROGRAM "shared-procs"
#include "check.h"

enum { PROCS = 4, KILLED = 2, THREADS = 3, ITEMS = 3, ROUNDS = 3 };

struct tally {
	int64_t intent[ITEMS];
	int64_t done[ITEMS];
} __attribute__((aligned(64)));

struct board {
	int stop;
	struct tally t[PROCS][THREADS];
};

static const struct pcpu_stat_item items[ITEMS] = {
	{ .name = "ones", .floor = 8 },
	{ .name = "bytes" },
	{ .name = "depth", .kind = PCPU_METRIC_GAUGE },
};

static struct pcpu_shared *seg;
static struct board *board;
static int cpus[CPU_SETSIZE], nr_cpus;
static int signals; /* handlers run on every thread: an atomic */
static int in_flight; /* adds the killed left in flight, over all rounds */

#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

static uint64_t next(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return *state >> 33;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_signal(int sig)
{
	(void)sig;
	__atomic_fetch_add(&signals, 1, __ATOMIC_RELAXED);
}

static int64_t amount_for(unsigned int item, uint64_t *rng)
{
	uint64_t r = next(rng);

	switch (item) {
	case 0:
		return 1;
	case 1: /* one in 128 far over the threshold: the slow path, a fold */
		return r % 128 == 0 ? (int64_t)(r % 4096) << 20 : (int64_t)(r % 4096);
	default:
		return ((int64_t)(r % 201) - 100) * (r % 128 == 0 ? INT64_C(1) << 24 : 1);
	}
}

static void *adder(void *arg)
{
	struct tally *t = arg;
	uint64_t rng = (uintptr_t)arg ^ (uint64_t)getpid() << 20;

	for (unsigned long k = 0; !LOAD(&board->stop); k++) {
		unsigned int item = (unsigned int)(k % ITEMS);
		int64_t a = amount_for(item, &rng);

		/*
		 * Not too often: a thread that hops waits in the syscall for its
		 * new CPU, and the kills would find every thread there.
		 */
		if (k % 65536 == 0 && nr_cpus > 1) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(cpus[next(&rng) % (uint64_t)nr_cpus], &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		STORE(&t->intent[item], a);
		pcpu_shared_add(seg, item, a);
		STORE(&t->done[item], t->done[item] + a);
		STORE(&t->intent[item], 0);
	}
	return NULL;
}

static void worker(int p)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	struct itimerval tick = { { 0, 500 }, { 0, 500 } };
	pthread_t threads[THREADS];

	sigaction(SIGALRM, &sa, NULL); /* the parent's alarm() is its deadline, not ours */
	setitimer(ITIMER_REAL, &tick, NULL);
	for (int t = 0; t < THREADS; t++)
		if (pthread_create(&threads[t], NULL, adder, &board->t[p][t]) != 0)
			_exit(20);
	for (int t = 0; t < THREADS; t++)
		pthread_join(threads[t], NULL);
	_exit(0);
}

/* Is @diff the sum of some subset of the @n amounts @a? */
static bool subset_sum(const int64_t *a, int n, int64_t diff)
{
	for (unsigned int mask = 0; mask < 1u << n; mask++) {
		int64_t s = 0;

		for (int i = 0; i < n; i++)
			if (mask & (1u << i))
				s += a[i];
		if (s == diff)
			return true;
	}
	return false;
}

/* Storms every live worker with SIGUSR1 for @seconds, watching item 0. */
static void storm(const pid_t *pids, const bool *dead, double seconds, int64_t *last_read,
		  int64_t *last_sum)
{
	double end = now() + seconds;

	while (now() < end) {
		int64_t r = pcpu_shared_read(seg, 0), s = pcpu_shared_sum(seg, 0);

		CHECK(30, r >= *last_read);
		CHECK(31, s >= *last_sum);
		*last_read = r;
		*last_sum = s;
		for (int p = 0; p < PROCS; p++)
			if (!dead[p])
				kill(pids[p], SIGUSR1);
		usleep(200);
	}
}

static void round_once(unsigned int round, double seconds)
{
	struct pcpu_shared_desc d = { .items = items, .nr_items = ITEMS };
	int64_t last_read = 0, last_sum = 0, at_kill[PROCS] = { 0 };
	pid_t pids[PROCS];
	bool dead[PROCS] = { false };
	uint64_t rng = round + 1;

	seg = pcpu_shared_create(NULL, &d);
	CHECK(1, seg != NULL);
	memset(board, 0, sizeof(*board));
	fflush(NULL);
	for (int p = 0; p < PROCS; p++) {
		pids[p] = fork();
		CHECK(2, pids[p] >= 0);
		if (pids[p] == 0)
			worker(p);
	}
	/* the killed ones die at random moments of the first half */
	for (int p = 0; p < KILLED; p++) {
		storm(pids, dead, seconds * (double)(next(&rng) % 100) / 200.0, &last_read,
		      &last_sum);
		CHECK(3, kill(pids[p], SIGKILL) == 0);
		dead[p] = true;
	}
	for (int p = 0; p < PROCS; p++)
		at_kill[p] = LOAD(&board->t[p][0].done[0]);
	storm(pids, dead, seconds / 2, &last_read, &last_sum);
	STORE(&board->stop, 1);
	for (int p = 0; p < PROCS; p++) {
		int status;

		CHECK(4, waitpid(pids[p], &status, 0) == pids[p]);
		if (p < KILLED ? !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			       : !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
			fprintf(stderr, "worker %d: status %#x\n", p, status);
		if (p < KILLED)
			CHECK(5, WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		else
			CHECK(6, WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	/* the survivors went on adding after the kills */
	for (int p = KILLED; p < PROCS; p++)
		CHECK(7, board->t[p][0].done[0] > at_kill[p]);

	for (unsigned int i = 0; i < ITEMS; i++) {
		int64_t done = 0, intents[KILLED * THREADS], total = pcpu_shared_sum(seg, i);
		int n = 0;

		for (int p = 0; p < PROCS; p++)
			for (int t = 0; t < THREADS; t++) {
				done += board->t[p][t].done[i];
				if (p >= KILLED)
					CHECK(8, board->t[p][t].intent[i] == 0);
				else if (board->t[p][t].intent[i])
					intents[n++] = board->t[p][t].intent[i];
			}
		if (!subset_sum(intents, n, total - done)) {
			fprintf(stderr, "item %u: sum %" PRId64 " done %" PRId64 ", %d in flight\n",
				i, total, done, n);
			CHECK(9, false);
		}
		in_flight += n;
		if (i == 0)
			CHECK(10, total >= done && total <= done + n);
	}
	/* whatever the dead left half done, one fold_all repairs read() */
	pcpu_shared_fold_all(seg);
	for (unsigned int i = 0; i < ITEMS; i++) {
		CHECK(11, pcpu_shared_read(seg, i) == pcpu_shared_sum(seg, i));
		CHECK(12, pcpu_shared_sync_if_delta_above(seg, i, 0) == pcpu_shared_sum(seg, i));
	}
	pcpu_shared_close(seg);
}

int main(void)
{
	const char *small = getenv("PCPU_TEST_SMALL"), *preload = getenv("LD_PRELOAD");
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	double seconds = 0.6;
	cpu_set_t set;

	if (getenv("PCPU_TEST_UNDER_QEMU")) {
		printf("skipped: qemu-user aborts on threads made in a forked child\n");
		return 77;
	}
	if ((small && *small && strcmp(small, "0") != 0) || (preload && strstr(preload, "vgpreload")))
		seconds = 2.0; /* valgrind: one thread at a time, slowly */
	alarm(120);
	/* before any fork: a storm must not find a child without its handler */
	CHECK(42, sigaction(SIGUSR1, &sa, NULL) == 0);
	CHECK(40, sched_getaffinity(0, sizeof(set), &set) == 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpus[nr_cpus++] = c;
	board = mmap(NULL, sizeof(*board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		     0);
	CHECK(41, board != MAP_FAILED);
	for (unsigned int r = 0; r < ROUNDS; r++)
		round_once(r, seconds);
	printf("shared-procs: %d rounds of %d processes x %d threads, %d killed each "
	       "(%d adds in flight when killed): exact\n",
	       ROUNDS, PROCS, THREADS, KILLED, in_flight);
	return 0;
}
