/* SPDX-License-Identifier: MIT */
/*
 * The server side of bench/serve/run.sh: a collector of NR gauges, which
 * sleeps SLEEP_MS first when asked (a collector waiting on I/O), served by
 * pcpu_metrics_serve() on PORT for SECS seconds; then the process's CPU
 * time. Linked against whichever libpercpu-metrics LD_LIBRARY_PATH names,
 * so that one binary measures two releases.
 *
 *   serve PORT SECS NR SLEEP_MS [NR_REGISTERED]
 *
 * NR_REGISTERED: that many registered counters as well, which a scrape
 * walks under the metrics lock (the collector runs outside it).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/resource.h>
#include <percpu/counter.h>
#include <percpu/metrics.h>
#include <percpu/metrics_http.h>
static int nr, sleep_ms;
static int coll(int (*emit)(const struct pcpu_metric_sample *, void *), void *ctx, void *arg)
{
	char name[32];
	(void)arg;
	if (sleep_ms)
		usleep(sleep_ms * 1000);
	for (int i = 0; i < nr; i++) {
		struct pcpu_metric_sample s = {.name = name,
					       .help = "h",
					       .unit = "",
					       .kind = PCPU_METRIC_GAUGE,
					       .labels = (const char *const[]){NULL},
					       .value = i};
		snprintf(name, sizeof(name), "bench_gauge_%d", i);
		emit(&s, ctx);
	}
	return 0;
}
int main(int argc, char **argv)
{
	unsigned port = atoi(argv[1]);
	int secs = atoi(argv[2]);
	struct rusage ru;
	nr = atoi(argv[3]);
	sleep_ms = atoi(argv[4]);
	for (int i = 0; argc > 5 && i < atoi(argv[5]); i++) {
		struct pcpu_counter *c = malloc(sizeof(*c));
		char *name = malloc(32);

		snprintf(name, 32, "bench_counter_%d", i);
		struct pcpu_metric_desc d = {
		    .name = name, .help = "h", .kind = PCPU_METRIC_COUNTER};
		if (!c || pcpu_counter_init(c, i) || pcpu_counter_register(c, &d))
			return 1;
	}
	pcpu_metrics_collector_add(coll, NULL);
	struct pcpu_metrics_server *srv = pcpu_metrics_serve("127.0.0.1", port);
	if (!srv) {
		perror("serve");
		return 1;
	}
	sleep(secs);
	pcpu_metrics_server_stop(srv);
	getrusage(RUSAGE_SELF, &ru);
	printf("server cpu: user %.2f s sys %.2f s\n",
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	return 0;
}
