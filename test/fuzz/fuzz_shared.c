/* SPDX-License-Identifier: MIT */
/*
 * A shared segment from outside: the input is written as the file of a
 * named segment, then opened read-only as percpu-stat opens it, and, if it
 * opens, every reader runs on it: count, names, help, kinds, labels, bounds,
 * lookups, read, bound, sum, sync, snapshot, histogram, the collector, the
 * exposition in both formats and percpu-stat's table (its print_plain(),
 * compiled in from tools/percpu-stat.c). open() must give NULL with
 * EINVAL, EBADMSG or EAGAIN, or a handle on which all of that works.
 *
 * Input: one byte of flags, then the segment. Flag 1 expands it (see
 * build_image()): the zeros before the CPU rows and the rows (4 KiB each,
 * most of a segment) are not in the input, so that a seed of a real
 * segment fits in a few hundred bytes. Flag 2 checks that the item
 * fields no reader uses (group) change nothing a reader reports: the
 * segment is opened again with every group changed, and both expositions
 * must be the same bytes. Flag 8, in the replayed regressions only (not
 * under libFuzzer, whose mutations set it at random): the segment must be
 * refused (a field that open() once left unchecked).
 *
 * Seeds: gen_seeds.c writes real segments of every kind of item; under
 * libFuzzer, shared_mutate.h varies them a field at a time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "shared/shared_internal.h"
#include "shared_mutate.h"

/* percpu-stat's formatting, as a function of this program */
int percpu_stat_main(int argc, char **argv);
#define main percpu_stat_main
#include "../../tools/percpu-stat.c"
#undef main

_Static_assert(STAT_LAYOUT == SHARED_VERSION, "percpu-stat names another layout than it reads");

#define MAX_SEGMENT (1u << 20)

static char seg[64];
static struct {
	uint8_t *bytes;
	size_t size;
} image;

static void put_segment(const uint8_t *bytes, size_t len)
{
	int fd = shm_open(seg, O_RDWR | O_CREAT | O_TRUNC, 0600);

	FUZZ_CHECK(fd >= 0, "shm_open %s: %s", seg, strerror(errno));
	FUZZ_CHECK(ftruncate(fd, (off_t)len) == 0, "ftruncate");
	FUZZ_CHECK(pwrite(fd, bytes, len, 0) == (ssize_t)len, "pwrite");
	close(fd);
}

/*
 * The file for @data: as is, or expanded (flag 1). Expanded, the input is
 * the segment's head, then (flags >> 4) * 16 bytes of a row: the head goes
 * at 0, zeros up to the header's cpus offset, and the row bytes at the
 * start of every CPU's row.
 */
static void build_image(const uint8_t *data, size_t len, uint8_t flags)
{
	size_t row = (size_t)(flags >> 4) * 16, head;
	struct shared_header h;

	free(image.bytes);
	image.bytes = NULL;
	if ((flags & 1) && len >= sizeof(h) + row) {
		head = len - row;
		memcpy(&h, data, sizeof(h));
		if (h.cpus.off >= head && h.total_size <= MAX_SEGMENT &&
		    h.cpus.off <= h.total_size && h.cpus.len == h.total_size - h.cpus.off &&
		    h.cpus.len % PCPU_STRIDE == 0) {
			image.size = h.total_size;
			image.bytes = calloc(1, image.size ? image.size : 1);
			FUZZ_CHECK(image.bytes, "calloc");
			memcpy(image.bytes, data, head);
			for (uint64_t at = h.cpus.off; at < h.total_size; at += PCPU_STRIDE)
				memcpy(image.bytes + at, data + head, row);
			return;
		}
	}
	image.size = len;
	image.bytes = malloc(len ? len : 1);
	FUZZ_CHECK(image.bytes, "malloc");
	memcpy(image.bytes, data, len);
}

static int check_sample(const struct pcpu_metric_sample *s, void *ctx)
{
	(void)ctx;
	FUZZ_CHECK(s->name && s->help && s->unit, "a sample without its strings");
	if (s->kind == PCPU_METRIC_HISTOGRAM) {
		uint64_t count = 0;

		FUZZ_CHECK(s->buckets && (s->nr_bounds == 0 || s->bounds) && s->scale >= 1,
			   "histogram sample %s", s->name);
		for (uint32_t b = 0; b <= s->nr_bounds; b++)
			count += s->buckets[b];
		FUZZ_CHECK(count == s->count, "count %s", s->name);
	}
	return 0;
}

/* Both expositions of @s, into one malloc()ed text. */
static char *expose(const struct pcpu_shared *s, size_t *len)
{
	char *text = NULL;
	FILE *out = open_memstream(&text, len);

	FUZZ_CHECK(out, "open_memstream");
	FUZZ_CHECK(pcpu_shared_write(s, out, PCPU_METRICS_PROMETHEUS) == 0, "write text");
	FUZZ_CHECK(pcpu_shared_write(s, out, PCPU_METRICS_OPENMETRICS) == 0, "write om");
	fclose(out);
	return text;
}

static void read_all(struct pcpu_shared *s)
{
	unsigned int n = pcpu_shared_count(s);
	int64_t values[PCPU_SHARED_MAX_ITEMS];
	uint64_t bounds[PCPU_SHARED_MAX_ITEMS];

	FUZZ_CHECK(n >= 1 && n <= PCPU_SHARED_MAX_ITEMS, "count %u", n);
	FUZZ_CHECK(pcpu_shared_snapshot(s, values, bounds) == 0, "snapshot");
	for (unsigned int i = 0; i < n; i++) {
		const char *name = pcpu_shared_name(s, i);
		const char *const *labels = pcpu_shared_labels(s, i);
		enum pcpu_metric_kind kind = pcpu_shared_kind(s, i);
		uint64_t buckets[PCPU_SHARED_MAX_ITEMS];
		uint32_t nr = 0;
		int64_t scale = 0, sum;

		FUZZ_CHECK(name && labels && pcpu_shared_help(s, i), "item %u's strings", i);
		/* open() refuses items that clash: each is found by its name and labels */
		FUZZ_CHECK(pcpu_shared_lookup_labels(s, name, labels) == (int)i, "lookup %s", name);
		FUZZ_CHECK(pcpu_shared_lookup(s, name) >= 0, "lookup %s", name);
		(void)pcpu_shared_read(s, i);
		(void)pcpu_shared_error_bound(s, i);
		FUZZ_CHECK(pcpu_shared_sum(s, i) == values[i], "sum %u", i);
		(void)pcpu_shared_sync_if_delta_above(s, i, 0);
		if (kind != PCPU_METRIC_HISTOGRAM) {
			FUZZ_CHECK(kind == PCPU_METRIC_COUNTER || kind == PCPU_METRIC_GAUGE,
				   "kind %d", kind);
			continue;
		}
		FUZZ_CHECK(pcpu_shared_bounds(s, i, &nr, &scale) != NULL || nr == 0, "bounds");
		FUZZ_CHECK(scale >= 1 && nr <= PCPU_SHARED_MAX_ITEMS - 2, "scale %" PRId64, scale);
		FUZZ_CHECK(pcpu_shared_histogram(s, i, buckets, &sum) == 0, "histogram %u", i);
	}
	FUZZ_CHECK(pcpu_shared_collector(check_sample, NULL, s) == 0, "collector");
	FUZZ_CHECK(print_plain(s) == 0, "percpu-stat's table");
}

#ifndef PCPU_FUZZ_LIBFUZZER
/*
 * In the replay build, where libFuzzer does not call the mutator: it
 * runs on every replayed input, twice per seed, and must give the same
 * bytes (deterministic given the seed), within max_size, leaving what
 * follows its output untouched, and must change a segment for most
 * seeds; under a sanitizer build, also without a bad access.
 */
static void check_mutator(const uint8_t *data, size_t size)
{
	size_t max = size + 4096;
	uint8_t *a = malloc(max + 1), *b = malloc(max + 1);

	struct mut_seg m = { .data = (uint8_t *)data, .size = size, .max = size };
	unsigned int changed = 0;

	FUZZ_CHECK(a && b, "malloc");
	for (unsigned int seed = 1; seed <= 16; seed++) {
		size_t na, nb;

		memcpy(a, data, size);
		memcpy(b, data, size);
		a[max] = b[max] = 0x5a;
		na = shared_mutate(a, size, max, seed);
		nb = shared_mutate(b, size, max, seed);
		FUZZ_CHECK(na == nb && na <= max && memcmp(a, b, na) == 0 && a[max] == 0x5a,
			   "the mutator, seed %u: %zu and %zu bytes", seed, na, nb);
		changed += na != 0;
	}
	/* a segment (our magic) is changed by most seeds (a field out of reach: none) */
	FUZZ_CHECK(!mut_parse(&m) || changed >= 8, "the mutator changed a segment %u times in 16",
		   changed);
	free(a);
	free(b);
}
#endif

static void cleanup(void)
{
	shm_unlink(seg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct pcpu_shared *s;
	uint8_t flags = size ? data[0] : 0;
	char *text, *again;
	size_t len, len2;

	if (!ready) {
		snprintf(seg, sizeof(seg), "/pcpu-fuzz-%ld", (long)getpid());
		atexit(cleanup);
		/* percpu-stat's table goes to stdout: nowhere */
		FUZZ_CHECK(freopen("/dev/null", "w", stdout), "stdout");
		ready = true;
	}
#ifndef PCPU_FUZZ_LIBFUZZER
	check_mutator(data, size);
#endif
	if (size)
		data++, size--;
	build_image(data, size, flags);
	put_segment(image.bytes, image.size);
	errno = 0;
	s = pcpu_shared_open(seg, PCPU_SHARED_RDONLY);
	if (!s) {
		if (getenv("FUZZ_DEBUG"))
			fprintf(stderr, "open: %s\n", strerror(errno));
		FUZZ_CHECK(errno == EINVAL || errno == EBADMSG || errno == EAGAIN,
			   "open: errno %d (%s)", errno, strerror(errno));
		return 0;
	}
#ifndef PCPU_FUZZ_LIBFUZZER
	FUZZ_CHECK(!(flags & 8), "a segment that must be refused opened");
#endif
	read_all(s);
	text = expose(s, &len);
	pcpu_shared_close(s);
	if (flags & 2) {
		const struct shared_header *h = (const void *)image.bytes;
		struct shared_item *items = (void *)(image.bytes + h->items.off);

		for (uint32_t i = 0; i < h->nr_items; i++)
			items[i].group = ~items[i].group ^ (i * 2654435761u);
		put_segment(image.bytes, image.size);
		s = pcpu_shared_open(seg, PCPU_SHARED_RDONLY);
		FUZZ_CHECK(s, "a changed group refused: errno %d", errno);
		again = expose(s, &len2);
		FUZZ_CHECK(len == len2 && memcmp(text, again, len) == 0,
			   "a changed group changed the exposition");
		free(again);
		pcpu_shared_close(s);
	}
	free(text);
	return 0;
}

#ifdef PCPU_FUZZ_LIBFUZZER
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

/* A field of a segment three times in four (see shared_mutate.h), else libFuzzer's. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	static int on = -1;
	size_t n = 0;

	if (on < 0) {
		const char *e = getenv("FUZZ_SHARED_MUTATOR");

		on = !e || strcmp(e, "0") != 0;
	}
	if (on && seed % 4)
		n = shared_mutate(data, size, max_size, seed);
	return n ? n : LLVMFuzzerMutate(data, size, max_size);
}
#endif
