/* SPDX-License-Identifier: MIT */
/*
 * Hostile segments: open() of a truncated file (at every boundary of the
 * layout and around it) and of a segment with random bytes changed in its
 * header, item table, strings, central and threshold arrays must give NULL
 * with errno EINVAL, EBADMSG or EAGAIN, or a handle that works; never a
 * crash or a read out of bounds (the ASan build and valgrind would see one).
 * The states a create passes through give EAGAIN; what is not a regular
 * file at the name gives EBADMSG at once.
 */
#include "shared_helpers.h"

#include <sys/socket.h>
#include <sys/un.h>

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

/* Opens @name read-only, expecting NULL; returns the errno. */
static int open_errno(const char *name)
{
	struct pcpu_shared *s;

	errno = 0;
	s = pcpu_shared_open(name, PCPU_SHARED_RDONLY);
	cr_assert_null(s, "%s opened", name);
	return errno;
}

/*
 * What a reader may find while another process creates a segment: an empty
 * file (before ftruncate), a zero-filled one (after it), the header being
 * written (the magic first, part of it, or all of it), everything but the
 * ready mark. Each is "not finished yet": EAGAIN, which a reader retries.
 * What a create never leaves (another magic, or the ready mark on a zero
 * magic) is not ours: EBADMSG.
 */
PCPU_TEST(shared_fuzz, every_state_of_an_unfinished_create_gives_eagain)
{
	char name[64], fname[64];
	struct image im = make_image(shared_test_name(name, sizeof(name), "ready"));
	unsigned char *state = calloc(1, im.size);
	size_t ready = offsetof(struct shared_header, ready);

	shared_test_name(fname, sizeof(fname), "ready-f");
	put_segment(fname, state, 0);
	cr_assert_eq(open_errno(fname), EAGAIN, "empty");
	put_segment(fname, state, im.size);
	cr_assert_eq(open_errno(fname), EAGAIN, "zero-filled");
	for (size_t n = 1; n <= 8; n++) {
		memcpy(state, im.bytes, n);
		put_segment(fname, state, im.size);
		cr_assert_eq(open_errno(fname), EAGAIN, "%zu bytes of the magic", n);
	}
	memcpy(state, im.bytes, im.size);
	memset(state + ready, 0, sizeof(uint32_t));
	put_segment(fname, state, im.size);
	cr_assert_eq(open_errno(fname), EAGAIN, "all but the ready mark");

	memcpy(state, "notours!", 8);
	put_segment(fname, state, im.size);
	cr_assert_eq(open_errno(fname), EBADMSG, "another magic");
	memcpy(state, im.bytes, im.size);
	memset(state, 0, 8);
	put_segment(fname, state, im.size);
	cr_assert_eq(open_errno(fname), EBADMSG, "the ready mark on a zero magic");
	pcpu_shared_unlink(fname);
	free(state);
	free(im.bytes);
}

/* A help text changed to bytes that are not UTF-8 is refused: EBADMSG. */
PCPU_TEST(shared_fuzz, help_that_is_not_utf8_is_refused)
{
	char name[64], fname[64];
	struct image im = make_image(shared_test_name(name, sizeof(name), "utf8"));
	const struct shared_item *items = (const void *)(im.bytes + im.hdr.items.off);
	unsigned char *help = im.bytes + im.hdr.strings.off + items[0].help_off;

	cr_assert_geq(items[0].help_len, 2);
	put_segment(shared_test_name(fname, sizeof(fname), "utf8-f"), im.bytes, im.size);
	cr_assert_eq(try_open(fname, "intact", 0), 2);
	help[0] = 0xc3; /* a lead byte, then an ASCII letter */
	put_segment(fname, im.bytes, im.size);
	cr_assert_eq(open_errno(fname), EBADMSG);
	pcpu_shared_unlink(fname);
	free(im.bytes);
}

/* ---- what is at the name is not a file ------------------------------------- */

enum not_file { NOT_FIFO, NOT_DIR, NOT_SOCKET, NOT_SYMLINK };

struct not_file_case {
	const char *name;
	bool dir;
};

static int open_both_ways(void *arg)
{
	const struct not_file_case *c = arg;

	/* read-only first: that is the open a FIFO would block */
	for (int ro = 1; ro >= 0; ro--) {
		errno = 0;
		if (pcpu_shared_open(c->name, ro ? PCPU_SHARED_RDONLY : 0) != NULL)
			return 1;
		/*
		 * glibc's shm_open() turns open(2)'s EISDIR into EINVAL (a
		 * directory's is no name for a segment): the header says so
		 */
		if (errno != EBADMSG && !(errno == EINVAL && !ro && c->dir))
			return 10 + errno; /* the errno, for the message */
	}
	return 0;
}

ParameterizedTestParameters(shared_fuzz, what_is_not_a_regular_file_is_refused_at_once)
{
	static enum not_file kinds[] = { NOT_FIFO, NOT_DIR, NOT_SOCKET, NOT_SYMLINK };

	return cr_make_param_array(enum not_file, kinds, sizeof(kinds) / sizeof(kinds[0]));
}

/*
 * Any local user may plant a FIFO, a directory, a socket or a symbolic link
 * at a segment's name: open() gives EBADMSG (not a segment) at once, both
 * ways (but EINVAL for a directory opened for writing on glibc), and never
 * waits for a FIFO's other end.
 */
ParameterizedTest(enum not_file *kind, shared_fuzz, what_is_not_a_regular_file_is_refused_at_once)
{
	static const char *const what[] = { "a FIFO", "a directory", "a socket", "a symlink" };
	char name[64], path[96], target[96];
	int status, fd = -1;

	shared_test_name(name, sizeof(name), "notfile");
	snprintf(path, sizeof(path), "/dev/shm%s", name);
	if (access("/dev/shm", W_OK) != 0)
		cr_skip_test("no /dev/shm to plant things in");
	switch (*kind) {
	case NOT_FIFO:
		cr_assert_eq(mkfifo(path, 0600), 0);
		break;
	case NOT_DIR:
		cr_assert_eq(mkdir(path, 0700), 0);
		break;
	case NOT_SOCKET: {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		cr_assert_geq(fd, 0);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
		cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		break;
	}
	case NOT_SYMLINK: {
		/* to a real segment: still not one at this name */
		struct pcpu_shared_desc d = shared_test_desc();
		char tname[64];
		struct pcpu_shared *t = pcpu_shared_create(
			shared_test_name(tname, sizeof(tname), "notfile-t"), &d);

		cr_assert_not_null(t);
		pcpu_shared_close(t);
		snprintf(target, sizeof(target), "/dev/shm%s", tname);
		cr_assert_eq(symlink(target, path), 0);
		break;
	}
	}
	status = pcpu_test_in_child(open_both_ways,
				    &(struct not_file_case){ name, *kind == NOT_DIR }, 10);
	if (*kind == NOT_DIR)
		rmdir(path);
	else
		unlink(path);
	if (*kind == NOT_SYMLINK)
		unlink(target);
	if (fd >= 0)
		close(fd);
	cr_assert(!WIFSIGNALED(status) || WTERMSIG(status) != SIGALRM, "%s: open hung", what[*kind]);
	cr_assert(WIFEXITED(status), "%s: open died of signal %d", what[*kind],
		  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	cr_assert(WEXITSTATUS(status) != 1, "%s: it opened", what[*kind]);
	cr_assert_eq(WEXITSTATUS(status), 0, "%s: errno %d (%s), not EBADMSG", what[*kind],
		     WEXITSTATUS(status) - 10, strerror(WEXITSTATUS(status) - 10));
}
