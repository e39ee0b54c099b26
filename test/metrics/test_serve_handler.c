/* SPDX-License-Identifier: MIT */
/*
 * The built-in server's limits and self-instrumentation (issue 33, as the
 * Go client's promhttp HandlerOpts and InstrumentMetricHandler): scrapes
 * beyond max_in_flight answer 503, a scrape past timeout_ms answers 503
 * saying so, promhttp_metric_handler_requests_total counts by code and
 * _in_flight counts the scrapes exposing, and two scrapes are served at
 * once. A collector that blocks until the test opens its gate holds
 * scrapes in flight deterministically.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <percpu/metrics.h>
#include <percpu/metrics_http.h>

#include "pcpu_test.h"

TestSuite(serve_handler, .timeout = 60);

struct reply {
	int status;
	char *body; /* NUL-terminated */
};

/* GET @path from 127.0.0.1:@port, the connection closed after it. */
static struct reply scrape(unsigned int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = 20 };
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
	struct reply r = { 0 };
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), *body;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ssize_t n;

	cr_assert(buf && fd >= 0);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
	cr_assert_eq(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len < 2) {
			cap *= 2;
			buf = realloc(buf, cap);
			cr_assert(buf);
		}
	}
	close(fd);
	buf[len] = '\0';
	cr_assert_eq(sscanf(buf, "HTTP/1.1 %d", &r.status), 1, "no status line: %s", buf);
	body = strstr(buf, "\r\n\r\n");
	cr_assert(body);
	r.body = strdup(body + 4);
	free(buf);
	return r;
}

static struct pcpu_metrics_server *serve(unsigned int max_in_flight, unsigned int timeout_ms,
					 bool instrument)
{
	struct pcpu_metrics_server_options o = {
		.size = sizeof(o), .address = "127.0.0.1", .max_in_flight = max_in_flight,
		.timeout_ms = timeout_ms, .instrument = instrument,
	};
	struct pcpu_metrics_server *srv = pcpu_metrics_serve_opts(&o);

	cr_assert(srv, "serve: %s", strerror(errno));
	return srv;
}

/*
 * The gate: a collector whose first @gate_blocks calls wait until the test
 * opens it; @gate_entered counts the calls that began.
 */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_entered, gate_blocks;
static bool gate_open, gate_fails;

static int gate_collector(int (*emit)(const struct pcpu_metric_sample *s, void *ctx), void *ctx,
			  void *arg)
{
	int n;

	(void)emit;
	(void)ctx;
	(void)arg;
	pthread_mutex_lock(&gate_lock);
	n = gate_entered++;
	pthread_cond_broadcast(&gate_cv);
	while (n < gate_blocks && !gate_open)
		pthread_cond_wait(&gate_cv, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	return gate_fails ? -EIO : 0;
}

static void gate_setup(int blocks)
{
	gate_blocks = blocks;
	cr_assert_eq(pcpu_metrics_collector_add(gate_collector, NULL), 0);
}

/* Waits until @n calls of the collector began. */
static void gate_wait_entered(int n)
{
	pthread_mutex_lock(&gate_lock);
	while (gate_entered < n)
		pthread_cond_wait(&gate_cv, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

static void gate_release(void)
{
	pthread_mutex_lock(&gate_lock);
	gate_open = true;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_lock);
}

struct background {
	pthread_t t;
	unsigned int port;
	struct reply r;
	bool done; /* under gate_lock */
};

static void *scrape_in_background(void *arg)
{
	struct background *b = arg;
	struct reply r = scrape(b->port);

	pthread_mutex_lock(&gate_lock);
	b->r = r;
	b->done = true;
	pthread_mutex_unlock(&gate_lock);
	return NULL;
}

static void background_start(struct background *b, unsigned int port)
{
	b->port = port;
	cr_assert_eq(pthread_create(&b->t, NULL, scrape_in_background, b), 0);
}

static bool background_done(struct background *b)
{
	bool done;

	pthread_mutex_lock(&gate_lock);
	done = b->done;
	pthread_mutex_unlock(&gate_lock);
	return done;
}

/* The value of @series (name and labels, exactly) in @body; -1 if absent. */
static long long series_value(const char *body, const char *series)
{
	size_t n = strlen(series);

	for (const char *line = body; line && *line; line = strchr(line, '\n'), line += !!line)
		if (!strncmp(line, series, n) && line[n] == ' ')
			return strtoll(line + n + 1, NULL, 10);
	return -1;
}

Test(serve_handler, a_scrape_beyond_max_in_flight_answers_503)
{
	struct pcpu_metrics_server *srv;
	struct background first = { 0 };
	struct reply r;

	gate_setup(1);
	srv = serve(1, 0, false);
	background_start(&first, pcpu_metrics_server_port(srv));
	gate_wait_entered(1); /* the first scrape is in flight, held */
	r = scrape(pcpu_metrics_server_port(srv));
	cr_expect_eq(r.status, 503);
	cr_expect_str_eq(r.body, "too many scrapes in flight\n");
	cr_expect_not(background_done(&first), "the first scrape was not held");
	gate_release();
	pthread_join(first.t, NULL);
	cr_expect_eq(first.r.status, 200);
	/* the limit counts scrapes in flight, not scrapes: one more fits now */
	free(r.body);
	r = scrape(pcpu_metrics_server_port(srv));
	cr_expect_eq(r.status, 200);
	pcpu_metrics_server_stop(srv);
	free(r.body);
	free(first.r.body);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

Test(serve_handler, a_scrape_past_its_timeout_answers_503_saying_so)
{
	struct pcpu_metrics_server *srv;
	struct reply r;
	double t0, took;
	int refused = 0; /* 503s while the held exposition returns */

	gate_setup(1);
	srv = serve(1, 200, true);
	t0 = now_ms();
	r = scrape(pcpu_metrics_server_port(srv));
	took = now_ms() - t0;
	cr_expect_eq(r.status, 503);
	cr_expect_str_eq(r.body, "scrape timed out after 200 ms\n");
	cr_expect_geq(took, 200.0);
	cr_expect_lt(took, 5000.0, "answered after %.0f ms", took);
	free(r.body);
	/* the timed-out exposition still runs: it holds the only slot */
	r = scrape(pcpu_metrics_server_port(srv));
	cr_expect_eq(r.status, 503);
	cr_expect_str_eq(r.body, "too many scrapes in flight\n");
	free(r.body);
	gate_release();
	/* once it returns, the slot is free; a fast scrape beats the timeout */
	for (int i = 0; i < 200; i++) {
		r = scrape(pcpu_metrics_server_port(srv));
		if (r.status == 200)
			break;
		cr_assert_eq(r.status, 503);
		refused++;
		free(r.body);
		usleep(10000);
	}
	cr_assert_eq(r.status, 200);
	cr_expect_eq(series_value(r.body, "promhttp_metric_handler_requests_total{code=\"503\"}"),
		     2 + refused);
	free(r.body);
	pcpu_metrics_server_stop(srv);
}

Test(serve_handler, the_instrumentation_counts_scrapes_by_code_and_in_flight)
{
	struct pcpu_metrics_server *srv;
	struct background held = { 0 };
	struct reply r;

	gate_setup(1);
	srv = serve(2, 0, true);
	background_start(&held, pcpu_metrics_server_port(srv)); /* 1 in flight */
	gate_wait_entered(1);
	/* a second in flight, which reads the gauge: itself and the held one */
	r = scrape(pcpu_metrics_server_port(srv));
	cr_assert_eq(r.status, 200);
	cr_expect_eq(series_value(r.body, "promhttp_metric_handler_requests_in_flight"), 2);
	cr_expect_eq(series_value(r.body, "promhttp_metric_handler_requests_total{code=\"200\"}"),
		     0);
	cr_expect_eq(series_value(r.body, "promhttp_metric_handler_requests_total{code=\"500\"}"),
		     0);
	cr_expect_eq(series_value(r.body, "promhttp_metric_handler_requests_total{code=\"503\"}"),
		     0);
	free(r.body);
	gate_release();
	pthread_join(held.t, NULL);
	cr_expect_eq(held.r.status, 200);
	free(held.r.body);
	/* then: 2 answered 200; one failing (500) */
	pthread_mutex_lock(&gate_lock);
	gate_fails = true;
	pthread_mutex_unlock(&gate_lock);
	r = scrape(pcpu_metrics_server_port(srv));
	cr_expect_eq(r.status, 500);
	free(r.body);
	pthread_mutex_lock(&gate_lock);
	gate_fails = false;
	pthread_mutex_unlock(&gate_lock);
	r = scrape(pcpu_metrics_server_port(srv));
	cr_assert_eq(r.status, 200);
	cr_expect_eq(series_value(r.body, "promhttp_metric_handler_requests_total{code=\"200\"}"),
		     2);
	cr_expect_eq(series_value(r.body, "promhttp_metric_handler_requests_total{code=\"500\"}"),
		     1);
	cr_expect_eq(series_value(r.body, "promhttp_metric_handler_requests_total{code=\"503\"}"),
		     0);
	cr_expect_eq(series_value(r.body, "promhttp_metric_handler_requests_in_flight"), 1);
	free(r.body);
	pcpu_metrics_server_stop(srv);
}

Test(serve_handler, without_instrument_the_server_adds_no_metric)
{
	struct pcpu_metrics_server *srv = serve(0, 0, false);
	struct reply r = scrape(pcpu_metrics_server_port(srv));

	cr_assert_eq(r.status, 200);
	cr_expect_null(strstr(r.body, "promhttp_"), "%s", r.body);
	free(r.body);
	pcpu_metrics_server_stop(srv);
}

Test(serve_handler, a_second_scrape_is_served_while_the_first_waits)
{
	struct pcpu_metrics_server *srv;
	struct background first = { 0 };
	struct reply r;

	gate_setup(1); /* only the first call blocks */
	srv = serve(0, 0, false);
	background_start(&first, pcpu_metrics_server_port(srv));
	gate_wait_entered(1);
	r = scrape(pcpu_metrics_server_port(srv));
	cr_expect_eq(r.status, 200);
	cr_expect_not(background_done(&first), "the first scrape did not wait");
	gate_release();
	pthread_join(first.t, NULL);
	cr_expect_eq(first.r.status, 200);
	free(r.body);
	free(first.r.body);
	pcpu_metrics_server_stop(srv);
}

static void *release_later(void *arg)
{
	(void)arg;
	usleep(200000);
	gate_release();
	return NULL;
}

Test(serve_handler, stop_waits_for_a_scrape_that_timed_out)
{
	struct pcpu_metrics_server *srv;
	pthread_t opener;
	struct reply r;
	double t0, took;

	gate_setup(1);
	srv = serve(0, 50, false);
	r = scrape(pcpu_metrics_server_port(srv));
	cr_expect_eq(r.status, 503);
	free(r.body);
	/* the exposition is still held in the collector: stop must wait for it */
	gate_wait_entered(1);
	pthread_mutex_lock(&gate_lock);
	cr_expect_not(gate_open);
	pthread_mutex_unlock(&gate_lock);
	cr_assert_eq(pthread_create(&opener, NULL, release_later, NULL), 0);
	t0 = now_ms();
	pcpu_metrics_server_stop(srv);
	took = now_ms() - t0;
	pthread_join(opener, NULL);
	cr_expect_geq(took, 150.0, "stop returned after %.0f ms, before the exposition", took);
}

Test(serve_handler, an_old_callers_options_without_the_new_fields_serve)
{
	struct pcpu_metrics_server_options o = { .size = sizeof(o), .address = "127.0.0.1" };
	struct pcpu_metrics_server *srv;
	struct reply r;

	/* 0.4's struct ended with registry */
	o.size = offsetof(struct pcpu_metrics_server_options, registry) + sizeof(void *);
	srv = pcpu_metrics_serve_opts(&o);
	cr_assert(srv, "%s", strerror(errno));
	r = scrape(pcpu_metrics_server_port(srv));
	cr_expect_eq(r.status, 200);
	free(r.body);
	pcpu_metrics_server_stop(srv);
}

Test(serve_handler, max_in_flight_0_is_16)
{
	struct background held[16] = { 0 };
	struct pcpu_metrics_server *srv;
	struct reply r;

	gate_setup(16);
	srv = serve(0, 0, false);
	for (int i = 0; i < 16; i++)
		background_start(&held[i], pcpu_metrics_server_port(srv));
	gate_wait_entered(16); /* 16 in flight, held */
	r = scrape(pcpu_metrics_server_port(srv));
	cr_expect_eq(r.status, 503);
	cr_expect_str_eq(r.body, "too many scrapes in flight\n");
	free(r.body);
	gate_release();
	for (int i = 0; i < 16; i++) {
		pthread_join(held[i].t, NULL);
		cr_expect_eq(held[i].r.status, 200);
		free(held[i].r.body);
	}
	pcpu_metrics_server_stop(srv);
}
