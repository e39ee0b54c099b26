/* SPDX-License-Identifier: MIT */
/*
 * A process with its own address space for the shared-segment tests, run
 * by exec (nothing inherited but the name):
 *   shared-peer sum NAME     attaches read-only, prints "NAME VALUE" per item
 *   shared-peer write NAME   attaches for writing, adds 1 to item 0;
 *                            prints "ok" or the errno's name (EPROTO...)
 *   shared-peer mode         prints this process's update path (1 rseq, 2 atomic)
 *   shared-peer create NAME  creates NAME with the helpers' three items holding
 *                            requests 12345, bytes 2^20, depth -3, and leaves it
 *   shared-peer create-labelled NAME
 *                            creates NAME with shared_labelled.h's descriptor,
 *                            http_requests{code="200",method="get"} 7,
 *                            request_size_bytes{path="/api"} observing 50
 *                            and 5000, and leaves it
 *   shared-peer unlink NAME  removes NAME
 *   shared-peer create-stopped NAME
 *                            sets up its update path and CPU count, stops
 *                            itself (SIGSTOP), creates NAME as create does
 *                            (no adds), and stops again: a tracer steps the
 *                            create and opens NAME at every instruction
 *   shared-peer create-labelled-stopped NAME
 *                            the same with shared_labelled.h's descriptor
 *                            (labels and histograms)
 *   shared-peer die NAME     attaches for writing, stops itself (SIGSTOP), then
 *                            adds twice the largest threshold to item 0 (always
 *                            the slow path: add, lock,
 *                            fold, unlock): a tracer single-steps it and kills
 *                            it at any instruction
 * Exit status: 0 when attached, 1 otherwise, 2 for a usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <percpu/shared.h>

#include "shared_labelled.h"

static const struct pcpu_stat_item items[] = {
	{ .name = "requests", .help = "Requests served." },
	{ .name = "bytes", .help = "Bytes sent.\nWith a \"newline\" and a \\." },
	{ .name = "depth", .help = "Queue depth.", .kind = PCPU_METRIC_GAUGE, .floor = 8 },
};

int main(int argc, char **argv)
{
	struct pcpu_shared *s;

	if (argc == 2 && strcmp(argv[1], "mode") == 0) {
		printf("%d\n", (int)pcpu_cpu_setup());
		return 0;
	}
	if (argc != 3)
		return 2;
	if (strcmp(argv[1], "sum") == 0) {
		s = pcpu_shared_open(argv[2], PCPU_SHARED_RDONLY);
		if (!s) {
			printf("%s\n", strerrorname_np(errno));
			return 1;
		}
		for (unsigned int i = 0; i < pcpu_shared_count(s); i++)
			printf("%s %" PRId64 "\n", pcpu_shared_name(s, i), pcpu_shared_sum(s, i));
	} else if (strcmp(argv[1], "create") == 0) {
		struct pcpu_shared_desc d = { .items = items, .nr_items = 3 };

		s = pcpu_shared_create(argv[2], &d);
		if (!s) {
			printf("%s\n", strerrorname_np(errno));
			return 1;
		}
		for (int k = 0; k < 12345; k++)
			pcpu_shared_add(s, 0, 1);
		pcpu_shared_add(s, 1, 1 << 20);
		pcpu_shared_add(s, 2, -3);
	} else if (strcmp(argv[1], "create-labelled") == 0) {
		struct pcpu_shared_desc d = shared_lab_desc();

		s = pcpu_shared_create(argv[2], &d);
		if (!s) {
			printf("%s\n", strerrorname_np(errno));
			return 1;
		}
		pcpu_shared_add(s, LAB_GET_200, 7);
		pcpu_shared_observe(s, LAB_LAT_API, 50);
		pcpu_shared_observe(s, LAB_LAT_API, 5000);
	} else if (strcmp(argv[1], "die") == 0) {
		s = pcpu_shared_open(argv[2], 0);
		if (!s)
			return 1;
		raise(SIGSTOP);
		pcpu_shared_add(s, 0, 2 * PCPU_SHARED_MAX_THRESH);
		raise(SIGSTOP); /* done: the tracer kills it here */
	} else if (strcmp(argv[1], "create-stopped") == 0 ||
		   strcmp(argv[1], "create-labelled-stopped") == 0) {
		struct pcpu_shared_desc d = { .items = items, .nr_items = 3 };

		if (strcmp(argv[1], "create-labelled-stopped") == 0)
			d = shared_lab_desc();

		/* what a daemon did long before: the stepped part is the create */
		pcpu_cpu_setup();
		pcpu_cpu_possible();
		pcpu_cpu_online();
		raise(SIGSTOP);
		s = pcpu_shared_create(argv[2], &d);
		raise(SIGSTOP); /* done: the tracer lets it go on */
		if (!s)
			return 1;
	} else if (strcmp(argv[1], "unlink") == 0) {
		return pcpu_shared_unlink(argv[2]) == 0 ? 0 : 1;
	} else if (strcmp(argv[1], "write") == 0) {
		s = pcpu_shared_open(argv[2], 0);
		if (!s) {
			printf("%s\n", strerrorname_np(errno));
			return 1;
		}
		pcpu_shared_add(s, 0, 1);
		printf("ok\n");
	} else {
		return 2;
	}
	pcpu_shared_close(s);
	return 0;
}
