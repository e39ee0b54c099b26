/* SPDX-License-Identifier: MIT */
/*
 * Writes the shared target's seeds into DIR: real segments made by the
 * library, one per kind of descriptor (counters and a gauge; labels;
 * histograms with bounds and a scale; one name with several label sets;
 * the most items), each as fuzz_shared.c reads them (flags: expanded, with
 * 64 bytes of row, groups changed too; the head without its trailing zeros,
 * then the first 64 bytes of CPU 0's row, made on CPU 0 where it may run,
 * so that the armed set names that row). Also two cut short, not expanded.
 * Usage: fuzz-gen-seeds DIR (test/fuzz/corpus/shared).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <percpu/shared.h>

#include "fuzz.h"
#include "shared/shared_internal.h"

static const char *dir;

static void put(const char *file, uint8_t flags, const uint8_t *bytes, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "wb");
	FUZZ_CHECK(f && fwrite(&flags, 1, 1, f) == 1 && fwrite(bytes, 1, len, f) == len &&
		   fclose(f) == 0, "%s: %s", path, strerror(errno));
}

static void seed(const char *file, const struct pcpu_shared_desc *d)
{
	char name[64];
	struct pcpu_shared *s;
	struct shared_header h;
	struct stat st;
	uint8_t *bytes;
	size_t head;
	int fd;

	snprintf(name, sizeof(name), "/pcpu-fuzz-gen-%ld", (long)getpid());
	shm_unlink(name);
	s = pcpu_shared_create(name, d);
	FUZZ_CHECK(s, "%s: create: %s", file, strerror(errno));
	for (unsigned int i = 0; i < pcpu_shared_count(s); i++) {
		if (pcpu_shared_kind(s, i) == PCPU_METRIC_HISTOGRAM) {
			pcpu_shared_observe(s, i, 3);
			pcpu_shared_observe(s, i, 1 << 20);
		} else {
			pcpu_shared_add(s, i, 5 + (int64_t)i);
		}
	}
	fd = shm_open(name, O_RDONLY, 0);
	FUZZ_CHECK(fd >= 0 && fstat(fd, &st) == 0, "%s", name);
	bytes = malloc((size_t)st.st_size);
	FUZZ_CHECK(bytes && pread(fd, bytes, (size_t)st.st_size, 0) == st.st_size, "read");
	close(fd);
	memcpy(&h, bytes, sizeof(h));
	/* the head without the zeros before the rows, then 64 bytes of row 0 */
	head = h.cpus.off;
	while (head > sizeof(h) && bytes[head - 1] == 0)
		head--;
	memmove(bytes + head, bytes + h.cpus.off, 64);
	put(file, 1 | 4 << 4 | 2, bytes, head + 64);
	pcpu_shared_close(s);
	pcpu_shared_unlink(name);
	free(bytes);
}

int main(int argc, char **argv)
{
	static const int64_t bounds[] = { 1, 10, 100, 1000, 1000000 };
	struct pcpu_stat_item items[PCPU_SHARED_MAX_ITEMS];
	struct pcpu_shared_more more[PCPU_SHARED_MAX_ITEMS];
	char names[PCPU_SHARED_MAX_ITEMS][16];
	struct pcpu_shared_desc d;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	/*
	 * On CPU 0 if it may: row 0's 64 bytes are what a seed keeps of the
	 * rows, and the armed set (layout 3) then names row 0.
	 */
	{
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(0, &one);
		(void)sched_setaffinity(0, sizeof(one), &one);
	}

	d = (struct pcpu_shared_desc){ .nr_items = 3, .items = (const struct pcpu_stat_item[]){
		{ .name = "requests", .help = "Requests served." },
		{ .name = "bytes", .help = "Bytes \"sent\".\nA \\ too.", .floor = 1000 },
		{ .name = "depth", .kind = PCPU_METRIC_GAUGE, .accuracy = 8, .group = 3 },
	} };
	seed("counters", &d);

	d = (struct pcpu_shared_desc){ .nr_items = 1, .items = (const struct pcpu_stat_item[]){
		{ .name = "one" } } };
	seed("one", &d);

	d = (struct pcpu_shared_desc){
		.nr_items = 3, .flags = PCPU_SHARED_MORE,
		.items = (const struct pcpu_stat_item[]){
			{ .name = "http_requests", .help = "By code." },
			{ .name = "http_requests", .help = "By code." },
			{ .name = "temp", .kind = PCPU_METRIC_GAUGE },
		},
		.more = (const struct pcpu_shared_more[]){
			{ .labels = PCPU_LABELS("code", "200", "method", "GET") },
			{ .labels = PCPU_LABELS("code", "5\"0\\0\n", "method", "caf\xc3\xa9") },
			{ .labels = PCPU_LABELS("room", "\xf0\x9f\x8f\xa0") },
		} };
	seed("labels", &d);

	d = (struct pcpu_shared_desc){
		.nr_items = 3, .flags = PCPU_SHARED_MORE,
		.items = (const struct pcpu_stat_item[]){
			{ .name = "latency_seconds", .kind = PCPU_METRIC_HISTOGRAM, .help = "Latency." },
			{ .name = "size_bytes", .kind = PCPU_METRIC_HISTOGRAM },
			{ .name = "done" },
		},
		.more = (const struct pcpu_shared_more[]){
			{ .bounds = bounds, .nr_bounds = 5, .scale = 1000000,
			  .labels = PCPU_LABELS("path", "/") },
			{ .bounds = bounds, .nr_bounds = 0 },
			{ 0 },
		} };
	seed("histograms", &d);

	/* the most items: 256 slots */
	for (int i = 0; i < PCPU_SHARED_MAX_ITEMS; i++) {
		snprintf(names[i], sizeof(names[i]), "c%d", i);
		items[i] = (struct pcpu_stat_item){ .name = names[i],
						    .kind = i % 2 ? PCPU_METRIC_GAUGE : 0 };
		more[i] = (struct pcpu_shared_more){ 0 };
	}
	d = (struct pcpu_shared_desc){ .nr_items = PCPU_SHARED_MAX_ITEMS, .items = items };
	seed("many", &d);
	/* one histogram of every slot: 254 bounds */
	{
		int64_t b[PCPU_SHARED_MAX_ITEMS - 2];

		for (int i = 0; i < PCPU_SHARED_MAX_ITEMS - 2; i++)
			b[i] = (int64_t)i * i - 1000;
		items[0] = (struct pcpu_stat_item){ .name = "h", .kind = PCPU_METRIC_HISTOGRAM };
		more[0] = (struct pcpu_shared_more){ .bounds = b, .nr_bounds = 254, .scale = 7 };
		d = (struct pcpu_shared_desc){ .nr_items = 1, .items = items,
					       .flags = PCPU_SHARED_MORE, .more = more };
		seed("one-histogram-254", &d);
	}
	/* not expanded: a header alone, and nothing */
	{
		struct shared_header h = { .magic = SHARED_MAGIC, .version = SHARED_VERSION,
					   .ready = SHARED_READY };

		put("header-only", 0, (const uint8_t *)&h, offsetof(struct shared_header, lock));
		put("empty", 0, NULL, 0);
	}
	return 0;
}
