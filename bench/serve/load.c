/* SPDX-License-Identifier: MIT */
/*
 * The client side of bench/serve/run.sh: K load clients, each a thread
 * with one keep-alive connection (as a Prometheus server keeps one), that
 * scrape 127.0.0.1:PORT/metrics back to back for SECS seconds; then each
 * one's scrapes per second and latency (p50, p99).
 *
 *   load PORT SECS K
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static unsigned port;
static double secs;
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}
static int cmp(const void *a, const void *b)
{
	double x = *(double *)a, y = *(double *)b;
	return x < y ? -1 : x > y;
}
struct cl {
	int n;
	double lat[200000];
};
static void *run(void *arg)
{
	struct cl *c = arg;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: b\r\n\r\n";
	char *buf = malloc(1 << 24);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (connect(fd, (void *)&sa, sizeof(sa))) {
		perror("connect");
		exit(1);
	}
	double end = now() + secs;
	while (now() < end && c->n < 200000) {
		double t0 = now();
		size_t len = 0;
		long clen = -1;
		char *hdr_end = NULL;
		write(fd, req, sizeof(req) - 1);
		for (;;) {
			ssize_t r = read(fd, buf + len, (1 << 24) - len);
			if (r <= 0) {
				fprintf(stderr, "closed\n");
				exit(1);
			}
			len += r;
			if (!hdr_end && (hdr_end = memmem(buf, len, "\r\n\r\n", 4))) {
				char *cl = strcasestr(buf, "content-length:");
				clen = strtol(cl + 15, NULL, 10);
			}
			if (hdr_end && len >= (size_t)(hdr_end + 4 - buf) + clen)
				break;
		}
		c->lat[c->n++] = now() - t0;
	}
	close(fd);
	return NULL;
}
int main(int argc, char **argv)
{
	port = atoi(argv[1]);
	secs = atof(argv[2]);
	int k = atoi(argv[3]);
	pthread_t t[8];
	struct cl *c[8];
	for (int i = 0; i < k; i++) {
		c[i] = calloc(1, sizeof(struct cl));
		pthread_create(&t[i], NULL, run, c[i]);
	}
	for (int i = 0; i < k; i++) {
		pthread_join(t[i], NULL);
		qsort(c[i]->lat, c[i]->n, sizeof(double), cmp);
		printf("client %d: %d scrapes (%.1f/s) p50 %.2f ms p99 %.2f ms\n", i, c[i]->n,
		       c[i]->n / secs, c[i]->lat[c[i]->n / 2] * 1e3,
		       c[i]->lat[c[i]->n * 99 / 100] * 1e3);
	}
	return 0;
}
