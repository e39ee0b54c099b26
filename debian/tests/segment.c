/* SPDX-License-Identifier: MIT */
/*
 * segment create NAME: makes the shared segment NAME with two counters,
 * requests = 1000 (added one at a time) and bytes = 1 MiB, and leaves it
 * for percpu-stat to read. segment unlink NAME: removes it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <percpu/shared.h>

static const struct pcpu_stat_item items[] = {
	{ .name = "requests", .help = "Requests served." },
	{ .name = "bytes", .help = "Bytes sent." },
};

int main(int argc, char **argv)
{
	struct pcpu_shared_desc d = { .items = items, .nr_items = 2 };
	struct pcpu_shared *s;

	if (argc == 3 && strcmp(argv[1], "unlink") == 0)
		return pcpu_shared_unlink(argv[2]) ? 1 : 0;
	if (argc != 3 || strcmp(argv[1], "create") != 0) {
		fprintf(stderr, "usage: segment create|unlink NAME\n");
		return 2;
	}
	s = pcpu_shared_create(argv[2], &d);
	if (!s) {
		fprintf(stderr, "pcpu_shared_create(%s): %s\n", argv[2], strerror(errno));
		return 1;
	}
	for (int i = 0; i < 1000; i++)
		pcpu_shared_add(s, 0, 1);
	pcpu_shared_add(s, 1, 1 << 20);
	pcpu_shared_close(s);
	return 0;
}
