/* SPDX-License-Identifier: MIT */
/*
 * percpu-prefork: a prefork server's counters in one shared segment
 * (<percpu/shared.h>), as nginx workers or PHP-FPM children would keep them.
 *
 * The parent creates the segment /percpu-prefork-PID (or -n NAME) and forks
 * N workers; each serves synthetic "requests" (a request, a response size,
 * one error in 50) and counts them into the shared set with
 * pcpu_shared_add(), no lock and no shared cache line on the fast path:
 * also as responses{code="200"} or responses{code="500"} (one family of two
 * label tuples, fixed at create) and into the histogram
 * response_size_bytes with pcpu_shared_observe().
 * Each worker also keeps its own plain tally and sends it to the parent
 * through a pipe when it exits. The parent prints the exact totals and every
 * worker's tally, checks that they agree, and unlinks the segment.
 *
 * While it runs (or, with -H, until it gets SIGTERM or SIGINT), read it
 * from outside:
 *   percpu-stat /percpu-prefork-PID
 *   percpu-stat -i 1 --prometheus /percpu-prefork-PID
 *
 *   percpu-prefork [-w WORKERS] [-r REQUESTS] [-n NAME] [-H]
 * Exit status: 0 when the totals agree; 1 otherwise; 2 for a usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <percpu/shared.h>

enum { REQUESTS, BYTES, ERRORS, RESP_200, RESP_500, SIZES, NR_ITEMS };

static const struct pcpu_stat_item items[NR_ITEMS] = {
	[REQUESTS] = { .name = "requests", .help = "Requests served by every worker." },
	[BYTES] = { .name = "response_bytes", .help = "Bytes of response bodies sent." },
	[ERRORS] = { .name = "errors", .help = "Requests that failed." },
	[RESP_200] = { .name = "responses", .help = "Responses by status code." },
	[RESP_500] = { .name = "responses", .help = "Responses by status code." },
	[SIZES] = { .name = "response_size_bytes", .help = "Sizes of response bodies.",
		    .kind = PCPU_METRIC_HISTOGRAM },
};

#define NR_BOUNDS 3
static const int64_t size_bounds[NR_BOUNDS] = { 1024, 16384, 65536 };

/* labels and bounds: fixed when the segment is made, before the fork */
static const struct pcpu_shared_more more[NR_ITEMS] = {
	[RESP_200] = { .labels = PCPU_LABELS("code", "200") },
	[RESP_500] = { .labels = PCPU_LABELS("code", "500") },
	[SIZES] = { .bounds = size_bounds, .nr_bounds = NR_BOUNDS },
};

/* A worker's own count: each item (the histogram's sum), and the histogram's buckets. */
struct tally {
	int64_t n[NR_ITEMS];
	int64_t buckets[NR_BOUNDS + 1];
};

static unsigned int bucket_of(int64_t bytes)
{
	unsigned int b = 0;

	while (b < NR_BOUNDS && bytes > size_bounds[b])
		b++;
	return b;
}

static void serve(struct pcpu_shared *s, long requests, unsigned int seed, struct tally *t)
{
	uint64_t rng = seed * 2654435761u + 1;

	for (long k = 0; k < requests; k++) {
		int64_t bytes;

		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		bytes = 200 + (int64_t)((rng >> 33) % 65536);
		pcpu_shared_add(s, REQUESTS, 1);
		pcpu_shared_add(s, BYTES, bytes);
		pcpu_shared_observe(s, SIZES, bytes);
		t->n[REQUESTS]++;
		t->n[BYTES] += bytes;
		t->n[SIZES] += bytes;
		t->buckets[bucket_of(bytes)]++;
		if ((rng >> 20) % 50 == 0) {
			pcpu_shared_add(s, ERRORS, 1);
			pcpu_shared_add(s, RESP_500, 1);
			t->n[ERRORS]++;
			t->n[RESP_500]++;
		} else {
			pcpu_shared_add(s, RESP_200, 1);
			t->n[RESP_200]++;
		}
	}
}

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

/*
 * Forks @workers workers, each serving @requests into @s and writing its
 * tally to @fd_out: 0, or -1 if a fork failed (said; those forked so far
 * finish and exit).
 */
static int fork_workers(struct pcpu_shared *s, int fd_in, int fd_out, long workers,
			long requests)
{
	for (long w = 0; w < workers; w++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("percpu-prefork: fork");
			return -1;
		}
		if (pid == 0) {
			struct tally mine = { { 0 }, { 0 } };

			close(fd_in);
			serve(s, requests, (unsigned int)w, &mine);
			pcpu_shared_close(s); /* the parent keeps its own mapping */
			/* one small write: atomic on a pipe, whatever the others do */
			_exit(write(fd_out, &mine, sizeof(mine)) == sizeof(mine) ? 0 : 1);
		}
	}
	return 0;
}

/* The workers' tallies from @fd, printed and summed into @total: false if one is missing. */
static bool collect_tallies(int fd, long workers, struct tally *total)
{
	for (long w = 0; w < workers; w++) {
		struct tally t;

		if (read(fd, &t, sizeof(t)) != sizeof(t)) {
			fprintf(stderr, "percpu-prefork: a worker died without its tally\n");
			return false;
		}
		printf("worker: requests %" PRId64 " response_bytes %" PRId64 " errors %" PRId64 "\n",
		       t.n[REQUESTS], t.n[BYTES], t.n[ERRORS]);
		for (int i = 0; i < NR_ITEMS; i++)
			total->n[i] += t.n[i];
		for (int b = 0; b <= NR_BOUNDS; b++)
			total->buckets[b] += t.buckets[b];
	}
	return true;
}

/*
 * The segment's exact sums and buckets against the workers' tallies
 * @total (whole if @ok): true if they agree.
 */
static bool check_totals(const struct pcpu_shared *s, const struct tally *total, bool ok)
{
	uint64_t buckets[NR_BOUNDS + 1];

	for (int i = 0; i < NR_ITEMS; i++) {
		int64_t exact = pcpu_shared_sum(s, (unsigned int)i);

		const char *const *l = pcpu_shared_labels(s, (unsigned int)i);
		char label[64] = "";

		/* as percpu-stat names it: responses{code="200"} (one label here) */
		if (l[0])
			snprintf(label, sizeof(label), "{%s=\"%s\"}", l[0], l[1]);
		printf("total %s%s %" PRId64 " (workers' tallies %" PRId64 ", read %" PRId64
		       " \u00b1%" PRIu64 ")\n",
		       items[i].name, label, exact, total->n[i], pcpu_shared_read(s, (unsigned int)i),
		       pcpu_shared_error_bound(s, (unsigned int)i));
		ok &= exact == total->n[i];
	}
	if (pcpu_shared_histogram(s, SIZES, buckets, NULL) != 0)
		ok = false;
	for (int b = 0; ok && b <= NR_BOUNDS; b++) {
		printf("bucket %d of response_size_bytes: %" PRIu64 " (workers' tallies %" PRId64
		       ")\n", b, buckets[b], total->buckets[b]);
		ok &= buckets[b] == (uint64_t)total->buckets[b];
	}
	return ok;
}

/* -H: the segment stays for readers until SIGTERM or SIGINT. */
static void hold_until_stopped(void)
{
	struct sigaction sa = { .sa_handler = on_stop };

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	while (!stop)
		pause();
}

int main(int argc, char **argv)
{
	struct pcpu_shared_desc d = { .items = items, .nr_items = NR_ITEMS,
				      .flags = PCPU_SHARED_MORE, .more = more };
	long workers = 4, requests = 1000000;
	struct tally total = { { 0 }, { 0 } };
	char name[256] = "";
	bool hold = false, ok;
	struct pcpu_shared *s;
	int fds[2], opt;

	while ((opt = getopt(argc, argv, "w:r:n:H")) != -1) {
		switch (opt) {
		case 'w': workers = strtol(optarg, NULL, 10); break;
		case 'r': requests = strtol(optarg, NULL, 10); break;
		case 'n': snprintf(name, sizeof(name), "%s", optarg); break;
		case 'H': hold = true; break;
		default: goto usage;
		}
	}
	if (optind != argc || workers < 1 || workers > 1024 || requests < 0)
		goto usage;
	if (!name[0])
		snprintf(name, sizeof(name), "/percpu-prefork-%ld", (long)getpid());
	s = pcpu_shared_create(name, &d);
	if (!s) {
		fprintf(stderr, "percpu-prefork: %s: %s\n", name, strerror(errno));
		return 1;
	}
	printf("segment %s: %ld workers, %ld requests each\n", name, workers, requests);
	fflush(stdout);
	if (pipe(fds) != 0) {
		perror("percpu-prefork: pipe");
		goto fail;
	}
	if (fork_workers(s, fds[0], fds[1], workers, requests) != 0)
		goto fail;
	close(fds[1]);
	ok = collect_tallies(fds[0], workers, &total);
	while (wait(NULL) > 0)
		;
	ok = check_totals(s, &total, ok);
	printf("%s\n", ok ? "totals agree" : "TOTALS DIFFER");
	fflush(stdout);
	if (hold)
		hold_until_stopped();
	pcpu_shared_unlink(name);
	pcpu_shared_close(s);
	return ok ? 0 : 1;
fail:
	pcpu_shared_unlink(name);
	pcpu_shared_close(s);
	return 1;
usage:
	fprintf(stderr, "usage: percpu-prefork [-w WORKERS] [-r REQUESTS] [-n NAME] [-H]\n");
	return 2;
}
