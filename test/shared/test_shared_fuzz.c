/* SPDX-License-Identifier: MIT */
/*
 * Hostile segments: open() of a truncated file (at every boundary of the
 * layout and around it) and of a segment with random bytes changed in its
 * header, item table, strings, central and threshold arrays must give NULL
 * with errno EINVAL, EBADMSG or EAGAIN, or a handle that works; never a
 * crash or a read out of bounds (the ASan build and valgrind would see one).
 */
#include "shared_helpers.h"

TestSuite(shared_fuzz, .timeout = 120);

struct image {
	unsigned char *bytes;
	size_t size;
	struct shared_header hdr;
};

/* A real segment, made and filled by the library, as bytes. */
static struct image make_image(const char *name)
{
	struct pcpu_shared_desc d = shared_test_desc();
	struct pcpu_shared *s = pcpu_shared_create(name, &d);
	struct image im;
	struct stat st;
	int fd;

	cr_assert_not_null(s);
	pcpu_shared_add(s, 0, 3);
	pcpu_shared_add(s, 1, 1 << 20);
	fd = shm_open(name, O_RDONLY, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	im.size = (size_t)st.st_size;
	im.bytes = malloc(im.size);
	cr_assert_eq(pread(fd, im.bytes, im.size, 0), (ssize_t)im.size);
	close(fd);
	memcpy(&im.hdr, im.bytes, sizeof(im.hdr));
	pcpu_shared_close(s);
	pcpu_shared_unlink(name);
	return im;
}

/* Writes @len bytes of @bytes as the segment @name (a new one each time). */
static void put_segment(const char *name, const unsigned char *bytes, size_t len)
{
	int fd = shm_open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)len), 0);
	cr_assert_eq(pwrite(fd, bytes, len, 0), (ssize_t)len);
	close(fd);
}

/* Opens @name both ways; returns how many opens succeeded. Fails on a wrong errno. */
static int try_open(const char *name, const char *what, size_t at)
{
	int ok = 0;

	for (int ro = 0; ro < 2; ro++) {
		struct pcpu_shared *s;
		int64_t values[PCPU_SHARED_MAX_ITEMS];
		uint64_t bounds[PCPU_SHARED_MAX_ITEMS];

		errno = 0;
		s = pcpu_shared_open(name, ro ? PCPU_SHARED_RDONLY : 0);
		if (!s) {
			cr_assert(errno == EINVAL || errno == EBADMSG || errno == EAGAIN,
				  "%s %zu: errno %d (%s)", what, at, errno, strerror(errno));
			continue;
		}
		ok++;
		/* whatever it holds, a handle that opened must work */
		cr_assert_eq(pcpu_shared_snapshot(s, values, bounds), 0);
		for (unsigned int i = 0; i < pcpu_shared_count(s); i++) {
			cr_assert_not_null(pcpu_shared_name(s, i));
			(void)pcpu_shared_read(s, i);
		}
		/*
		 * No add: its slow path would take the segment's lock, and a
		 * flipped lock word may look held for ever (writers trust each
		 * other's lock; open() never takes it).
		 */
		pcpu_shared_close(s);
	}
	return ok;
}

PCPU_TEST(shared_fuzz, truncated_segments_are_refused)
{
	char name[64], fname[64];
	struct image im = make_image(shared_test_name(name, sizeof(name), "trunc"));
	const struct shared_header *h = &im.hdr;
	uint64_t cuts[] = { 0, 1, 7, 8, 16, offsetof(struct shared_header, lock),
			    sizeof(*h) - 1, sizeof(*h), h->items.off + h->items.len - 1,
			    h->strings.off + 1, h->strings.off + h->strings.len - 1,
			    h->central.off, h->thresh.off + 8, h->cpus.off, h->cpus.off + 1,
			    h->cpus.off + PCPU_STRIDE, im.size - PCPU_STRIDE, im.size - 1 };

	shared_test_name(fname, sizeof(fname), "trunc-f");
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		put_segment(fname, im.bytes, cuts[i]);
		errno = 0;
		cr_assert_null(pcpu_shared_open(fname, PCPU_SHARED_RDONLY), "cut at %zu opened",
			       (size_t)cuts[i]);
		cr_assert(errno == EINVAL || (cuts[i] == 0 && errno == EAGAIN),
			  "cut at %zu: errno %d", (size_t)cuts[i], errno);
	}
	/* one byte more than the header says is not ours either */
	im.bytes = realloc(im.bytes, im.size + 1);
	im.bytes[im.size] = 0;
	put_segment(fname, im.bytes, im.size + 1);
	errno = 0;
	cr_assert_null(pcpu_shared_open(fname, PCPU_SHARED_RDONLY));
	cr_assert_eq(errno, EINVAL);
	/* and the whole image opens */
	put_segment(fname, im.bytes, im.size);
	cr_assert_eq(try_open(fname, "whole", 0), 2);
	pcpu_shared_unlink(fname);
	free(im.bytes);
}

PCPU_TEST(shared_fuzz, flipped_bytes_are_refused_or_harmless)
{
	char name[64], fname[64];
	struct image im = make_image(shared_test_name(name, sizeof(name), "flip"));
	unsigned char *copy = malloc(im.size);
	long n = pcpu_test_iterations(3000);
	uint64_t rng = 7, region = im.hdr.cpus.off;
	int opened = 0;

	shared_test_name(fname, sizeof(fname), "flip-f");
	for (long k = 0; k < n; k++) {
		unsigned int flips = 1 + (unsigned int)(pcpu_test_rand(&rng) % 3);
		size_t at = 0;

		memcpy(copy, im.bytes, im.size);
		for (unsigned int f = 0; f < flips; f++) {
			/* half in the header, where every field matters */
			at = (size_t)(pcpu_test_rand(&rng) % (k % 2 ? region : sizeof(im.hdr)));
			copy[at] ^= (unsigned char)(1 + pcpu_test_rand(&rng) % 255);
		}
		put_segment(fname, copy, im.size);
		opened += try_open(fname, "flip at", at) > 0;
	}
	pcpu_shared_unlink(fname);
	free(copy);
	free(im.bytes);
	cr_assert_gt(opened, 0, "no flip was harmless: the test checks nothing that opens");
	cr_assert_lt(opened, n, "every flip opened: validation checks nothing");
}

PCPU_TEST(shared_fuzz, unfinished_segment_gives_eagain)
{
	char name[64], fname[64];
	struct image im = make_image(shared_test_name(name, sizeof(name), "ready"));

	memset(im.bytes + offsetof(struct shared_header, ready), 0, sizeof(uint32_t));
	put_segment(shared_test_name(fname, sizeof(fname), "ready-f"), im.bytes, im.size);
	errno = 0;
	cr_assert_null(pcpu_shared_open(fname, PCPU_SHARED_RDONLY));
	cr_assert_eq(errno, EAGAIN);
	memcpy(im.bytes, "notours!", 8);
	put_segment(fname, im.bytes, im.size);
	errno = 0;
	cr_assert_null(pcpu_shared_open(fname, PCPU_SHARED_RDONLY));
	cr_assert_eq(errno, EBADMSG);
	pcpu_shared_unlink(fname);
	free(im.bytes);
}
