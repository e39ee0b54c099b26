/* SPDX-License-Identifier: MIT */
/*
 * The built-in server under idle and slow connections (issue 24,
 * defect 1): with 1,000 connections open that send nothing, or one byte a
 * second (a request that never ends), a scrape is still answered within
 * 1 s. Any local process can open them.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/metrics.h>
#include <percpu/metrics_http.h>

#include "pcpu_test.h"

TestSuite(serve_load, .timeout = 120);

#define CROWD 1000
/* a scrape answered later than this fails the test (valgrind: slower) */
#define DEADLINE_MS (pcpu_test_small() ? 3000 : 1000)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Room for the crowd's descriptors at both ends, or skip. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < 2 * CROWD + 256) {
		rl.rlim_cur = rl.rlim_max < 4 * CROWD ? rl.rlim_max : 4 * CROWD;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur < 2 * CROWD + 256)
		cr_skip_test("RLIMIT_NOFILE %llu: too few descriptors",
			     (unsigned long long)rl.rlim_cur);
}

/* A connection to 127.0.0.1:@port, not waited for (non-blocking). */
static int dial_nowait(unsigned int port)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	cr_assert_geq(fd, 0, "socket: %s", strerror(errno));
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&in, sizeof(in)) != 0)
		cr_assert_eq(errno, EINPROGRESS, "connect: %s", strerror(errno));
	return fd;
}

/* Waits on @fd for @events until @deadline (ms); false if it passed. */
static bool wait_for(int fd, short events, double deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	double left = deadline - now_ms();

	return left > 0 && poll(&p, 1, (int)left + 1) == 1;
}

/*
 * One scrape of /metrics on a new connection; its milliseconds, or -1 if
 * no complete 200 response came within @limit_ms.
 */
static double scrape_ms(unsigned int port, double limit_ms)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	double start = now_ms(), deadline = start + limit_ms;
	char buf[65536];
	size_t len = 0;
	int fd = dial_nowait(port), status = 0;

	if (!wait_for(fd, POLLOUT, deadline) ||
	    send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(req) - 1)
		goto fail;
	while (wait_for(fd, POLLIN, deadline)) {
		ssize_t got = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);

		if (got < 0 && errno == EAGAIN)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
		if (len == sizeof(buf) - 1)
			break;
	}
	buf[len] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d ", &status) != 1 || status != 200 ||
	    !strstr(buf, "load_requests_total 3"))
		goto fail;
	close(fd);
	return now_ms() - start;
fail:
	close(fd);
	return -1;
}

struct crowd {
	int fd[CROWD];
	unsigned int port;
	atomic_bool stop;
};

/* One byte a second on each connection: a request line that never ends. */
static void *trickle(void *p)
{
	struct crowd *c = p;

	for (unsigned int i = 0; !atomic_load(&c->stop); i++) {
		for (int k = 0; k < CROWD; k++)
			send(c->fd[k], &"GET /metrics"[i % 12], 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		for (int t = 0; t < 10 && !atomic_load(&c->stop); t++)
			usleep(100000);
	}
	return NULL;
}

static void run(bool slow)
{
	struct pcpu_counter c;
	struct pcpu_metric_desc d = { .name = "load_requests", .kind = PCPU_METRIC_COUNTER };
	struct pcpu_metrics_server *srv;
	static struct crowd crowd;
	pthread_t t;
	double worst = 0;

	raise_fd_limit();
	cr_assert_eq(pcpu_counter_init(&c, 3), 0);
	cr_assert_eq(pcpu_counter_register(&c, &d), 0);
	srv = pcpu_metrics_serve("127.0.0.1", 0);
	cr_assert_not_null(srv, "serve: %s", strerror(errno));
	crowd.port = pcpu_metrics_server_port(srv);
	atomic_store(&crowd.stop, false);
	cr_assert_geq(scrape_ms(crowd.port, 5000), 0, "no scrape at all");
	for (int k = 0; k < CROWD; k++)
		crowd.fd[k] = dial_nowait(crowd.port);
	if (slow)
		pthread_create(&t, NULL, trickle, &crowd);
	/* let the server meet the crowd (and the trickle run) before scraping */
	usleep(1500000);
	for (int i = 0; i < 3; i++) {
		double ms = scrape_ms(crowd.port, DEADLINE_MS);

		cr_log_info("%s: scrape %d behind %d connections: %.1f ms", slow ? "slow" : "idle",
			    i, CROWD, ms);
		fprintf(stderr, "# %s: scrape %d behind %d connections: %.1f ms\n",
			slow ? "slow" : "idle", i, CROWD, ms);
		cr_expect_geq(ms, 0, "scrape %d: no answer within %d ms behind %d %s connections",
			      i, DEADLINE_MS, CROWD, slow ? "one-byte-a-second" : "idle");
		if (ms > worst)
			worst = ms;
	}
	atomic_store(&crowd.stop, true);
	if (slow)
		pthread_join(t, NULL);
	for (int k = 0; k < CROWD; k++)
		close(crowd.fd[k]);
	pcpu_metrics_server_stop(srv);
	pcpu_counter_destroy(&c);
}

PCPU_TEST(serve_load, a_scrape_is_served_within_1s_behind_1000_idle_connections)
{
	run(false);
}

PCPU_TEST(serve_load, a_scrape_is_served_within_1s_behind_1000_slow_connections)
{
	run(true);
}
