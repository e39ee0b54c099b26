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
#include "shared_labelled.h"

#include <sys/socket.h>
#include <sys/un.h>

TestSuite(shared_fuzz, .timeout = 120);

struct image {
	unsigned char *bytes;
	size_t size;
	struct shared_header hdr;
};

/* A real segment of @d, made and filled by the library, as bytes. */
static struct image make_image_of(const char *name, const struct pcpu_shared_desc *d)
{
	struct pcpu_shared *s = pcpu_shared_create(name, d);
	struct image im;
	struct stat st;
	int fd;

	cr_assert_not_null(s);
	pcpu_shared_add(s, 0, 3);
	pcpu_shared_add(s, 1, 1 << 20);
	for (unsigned int i = 0; i < pcpu_shared_count(s); i++)
		if (pcpu_shared_kind(s, i) == PCPU_METRIC_HISTOGRAM)
			pcpu_shared_observe(s, i, 50);
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

static struct image make_image(const char *name)
{
	struct pcpu_shared_desc d = shared_test_desc();

	return make_image_of(name, &d);
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

/* Writes @s in both formats (to memory): labels and bounds go through the writer. */
static void write_both(struct pcpu_shared *s)
{
	for (int om = 0; om < 2; om++) {
		char *text = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&text, &len);

		cr_assert_not_null(out);
		cr_assert_eq(pcpu_shared_write(s, out, om ? PCPU_METRICS_OPENMETRICS :
							    PCPU_METRICS_PROMETHEUS), 0);
		fclose(out);
		free(text);
	}
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
			uint64_t buckets[PCPU_SHARED_MAX_ITEMS];

			cr_assert_not_null(pcpu_shared_name(s, i));
			cr_assert_not_null(pcpu_shared_labels(s, i));
			(void)pcpu_shared_read(s, i);
			if (pcpu_shared_kind(s, i) == PCPU_METRIC_HISTOGRAM)
				cr_assert_eq(pcpu_shared_histogram(s, i, buckets, NULL), 0);
		}
		write_both(s);
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
			    h->central.off, h->threshold.off + 8, h->cpus.off, h->cpus.off + 1,
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

/*
 * Flips 1 to 3 random bytes of @im, @n times, half in the header and half
 * in [@from, @to); opens each both ways.
 */
static void flip_and_open(struct image *im, const char *tag, uint64_t from, uint64_t to)
{
	char fname[64];
	unsigned char *copy = malloc(im->size);
	long n = pcpu_test_iterations(3000);
	uint64_t rng = 7;
	int opened = 0;

	shared_test_name(fname, sizeof(fname), tag);
	for (long k = 0; k < n; k++) {
		unsigned int flips = 1 + (unsigned int)(pcpu_test_rand(&rng) % 3);
		size_t at = 0;

		memcpy(copy, im->bytes, im->size);
		for (unsigned int f = 0; f < flips; f++) {
			/* half in the header, where every field matters */
			at = k % 2 ? (size_t)(from + pcpu_test_rand(&rng) % (to - from)) :
				     (size_t)(pcpu_test_rand(&rng) % sizeof(im->hdr));
			copy[at] ^= (unsigned char)(1 + pcpu_test_rand(&rng) % 255);
		}
		put_segment(fname, copy, im->size);
		opened += try_open(fname, "flip at", at) > 0;
	}
	pcpu_shared_unlink(fname);
	free(copy);
	cr_assert_gt(opened, 0, "no flip was harmless: the test checks nothing that opens");
	cr_assert_lt(opened, n, "every flip opened: validation checks nothing");
}

PCPU_TEST(shared_fuzz, flipped_bytes_are_refused_or_harmless)
{
	char name[64];
	struct image im = make_image(shared_test_name(name, sizeof(name), "flip"));

	flip_and_open(&im, "flip-f", 0, im.hdr.cpus.off);
	free(im.bytes);
}

/* The same in the item table, labels and bounds of a segment that has them. */
PCPU_TEST(shared_fuzz, flipped_labels_and_bounds_are_refused_or_harmless)
{
	char name[64];
	struct pcpu_shared_desc d = shared_lab_desc();
	struct image im = make_image_of(shared_test_name(name, sizeof(name), "lflip"), &d);

	flip_and_open(&im, "lflip-f", im.hdr.items.off, im.hdr.bounds.off + im.hdr.bounds.len);
	free(im.bytes);
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

/* ---- labels, histograms and the layout version, one field at a time ------- */

enum hostile { H_LABEL_UTF8, H_LABEL_NAME, H_LABEL_ORDER, H_LABEL_NUL, H_LABEL_PAST, H_LABEL_COUNT,
	       H_LABEL_SHORT, H_SAME_TUPLE, H_BOUNDS_DOWN, H_BUCKETS_MORE, H_BUCKETS_NONE,
	       H_BOUNDS_ON_COUNTER, H_ITEM_RESERVED, H_VERSION_1, H_HEADER_RESERVED, H_BOUNDS_LEN,
	       H_SLOTS, H_SCALE_ZERO, H_SCALE_ON_COUNTER, H_VERSION_2, H_ARMED_PAST_ROWS,
	       H_ARMED_COUNT_LOW, H_ARMED_COUNT_HIGH, H_ARMED_OFF, H_ARMED_LEN };

struct hostile_case {
	const char *what;
	enum hostile kind;
	int err;
};

ParameterizedTestParameters(shared_fuzz, each_new_field_is_validated_at_open)
{
	static struct hostile_case cases[] = {
		{ "a label value not UTF-8", H_LABEL_UTF8, EBADMSG },
		{ "a label name out of the grammar", H_LABEL_NAME, EBADMSG },
		{ "label names out of order", H_LABEL_ORDER, EBADMSG },
		{ "a label without its NUL", H_LABEL_NUL, EBADMSG },
		{ "labels past the strings", H_LABEL_PAST, EBADMSG },
		{ "a label count past the cap", H_LABEL_COUNT, EBADMSG },
		{ "fewer labels than their text", H_LABEL_SHORT, EBADMSG },
		{ "one name, one tuple twice", H_SAME_TUPLE, EBADMSG },
		{ "bounds not strictly ascending", H_BOUNDS_DOWN, EBADMSG },
		{ "a bound more than the bounds hold", H_BUCKETS_MORE, EBADMSG },
		{ "a histogram made a counter", H_BUCKETS_NONE, EBADMSG },
		{ "bounds on a counter", H_BOUNDS_ON_COUNTER, EBADMSG },
		{ "an item's reserved word", H_ITEM_RESERVED, EBADMSG },
		{ "layout 1 (a segment of 0.2)", H_VERSION_1, EBADMSG },
		{ "the header's reserved word", H_HEADER_RESERVED, EINVAL },
		{ "bounds of a length not in int64s", H_BOUNDS_LEN, EINVAL },
		{ "counters fewer than the items", H_SLOTS, EINVAL },
		{ "a histogram's scale 0", H_SCALE_ZERO, EBADMSG },
		{ "a scale on a counter", H_SCALE_ON_COUNTER, EBADMSG },
		{ "layout 2 (a segment of 0.3)", H_VERSION_2, EBADMSG },
		{ "an armed bit past the last row", H_ARMED_PAST_ROWS, EBADMSG },
		{ "an armed count below the armed bits", H_ARMED_COUNT_LOW, EBADMSG },
		{ "an armed count above the rows", H_ARMED_COUNT_HIGH, EBADMSG },
		{ "the armed set where the rows start", H_ARMED_OFF, EINVAL },
		{ "the armed set a word too long", H_ARMED_LEN, EINVAL },
	};

	return cr_make_param_array(struct hostile_case, cases, sizeof(cases) / sizeof(cases[0]));
}

/*
 * A segment with labels and histograms, one field changed as a hostile or
 * broken writer could: refused with the errno the header lists, never
 * opened (and the untouched image opens).
 */
ParameterizedTest(struct hostile_case *c, shared_fuzz, each_new_field_is_validated_at_open)
{
	char name[64], fname[64];
	struct pcpu_shared_desc d = shared_lab_desc();
	struct image im = make_image_of(shared_test_name(name, sizeof(name), "hostile"), &d);
	struct shared_header *hdr = (void *)im.bytes;
	struct shared_item *items = (void *)(im.bytes + im.hdr.items.off);
	char *strings = (char *)im.bytes + im.hdr.strings.off;
	int64_t *bounds = (void *)(im.bytes + im.hdr.bounds.off);
	/* item 0: code="200",method="get"; item 1: code="500",method="get" */
	char *labels0 = strings + items[LAB_GET_200].labels_off;
	char *labels1 = strings + items[LAB_GET_500].labels_off;
	struct shared_armed *armed = (void *)(im.bytes + im.hdr.armed.off);
	unsigned int rows = im.hdr.possible + 1;

	shared_test_name(fname, sizeof(fname), "hostile-f");
	put_segment(fname, im.bytes, im.size);
	cr_assert_eq(try_open(fname, "intact", 0), 2);
	cr_assert_str_eq(labels0, "code");
	cr_assert_str_eq(labels1 + 5, "500");
	switch (c->kind) {
	case H_LABEL_UTF8: labels0[5] = (char)0xc3; break;          /* "\xc3" "00" */
	case H_LABEL_NAME: labels0[0] = '1'; break;                 /* "1ode" */
	case H_LABEL_ORDER: labels0[0] = 'z'; break;                /* "zode" after "method" */
	case H_LABEL_NUL: labels0[items[0].labels_len - 1] = 'x'; break;
	case H_LABEL_PAST: items[0].labels_off = (uint32_t)im.hdr.strings.len - 2; break;
	case H_LABEL_COUNT: items[0].nr_labels = 1000; break;
	case H_LABEL_SHORT: items[0].nr_labels = 1; break;
	case H_SAME_TUPLE: labels1[5] = '2'; break;                 /* 500 -> 200 */
	case H_BOUNDS_DOWN: bounds[1] = bounds[0]; break;
	case H_BUCKETS_MORE: items[LAB_LAT_API].nr_bounds++; break;
	case H_BUCKETS_NONE:
		items[LAB_LAT_API].kind = PCPU_METRIC_COUNTER;
		items[LAB_LAT_API].nr_bounds = 0;
		break;
	case H_BOUNDS_ON_COUNTER: items[LAB_DEPTH].nr_bounds = 1; break;
	case H_ITEM_RESERVED: items[2].reserved = 1; break;
	case H_VERSION_1: hdr->version = 1; break;
	case H_HEADER_RESERVED: hdr->reserved = 1; break;
	case H_BOUNDS_LEN: hdr->bounds.len -= 4; break;
	case H_SLOTS: hdr->nr_slots = LAB_ITEMS - 1; break;
	case H_SCALE_ZERO: items[LAB_LAT_ROOT].scale = 0; break;
	case H_SCALE_ON_COUNTER: items[LAB_GET_200].scale = 1000; break;
	case H_VERSION_2: hdr->version = 2; break;
	case H_ARMED_PAST_ROWS:
		if (rows % 64 == 0)
			cr_skip_test("no bit past %u rows", rows);
		armed->bits[rows / 64] |= UINT64_C(1) << (rows % 64);
		armed->nr = rows; /* the count is not what refuses it */
		break;
	case H_ARMED_COUNT_LOW:
		cr_assert_geq(armed->nr, 1, "the image's adds armed a row");
		armed->nr = 0;
		break;
	case H_ARMED_COUNT_HIGH: armed->nr = rows + 1; break;
	case H_ARMED_OFF: hdr->armed.off = hdr->cpus.off; break;
	case H_ARMED_LEN: hdr->armed.len += 8; break;
	}
	put_segment(fname, im.bytes, im.size);
	cr_assert_eq(open_errno(fname), c->err, "%s", c->what);
	errno = 0;
	cr_assert_null(pcpu_shared_open(fname, 0), "%s: opened for writing", c->what);
	cr_assert_eq(errno, c->err, "%s: errno %d for writing", c->what, errno);
	pcpu_shared_unlink(fname);
	free(im.bytes);
}

/*
 * The armed set is live: a writer arms rows after a reader's open, so the
 * reader cannot refuse what a hostile writer stores there later. It must
 * read it safely: no walk past the last row (bits there are ignored), a
 * count past the rows bounds as the rows, a count below the bits as is
 * (a loose bound of a lying writer, never a fault) [armed-segment].
 */
PCPU_TEST(shared_fuzz, an_armed_set_changed_after_open_is_read_safely)
{
	char name[64];
	struct pcpu_shared *w = pcpu_shared_create(shared_test_name(name, sizeof(name), "armlie"),
						   &(struct pcpu_shared_desc){
							   .items = shared_test_items,
							   .nr_items = 3 });
	struct pcpu_shared *r;
	struct shared_handle *h;
	unsigned int rows, words;
	int64_t values[3];
	uint64_t threshold_max;

	cr_assert_not_null(w);
	pcpu_shared_add(w, 0, 5);
	r = pcpu_shared_open(name, PCPU_SHARED_RDONLY);
	cr_assert_not_null(r, "errno %d", errno);
	h = shared_handle(w);
	rows = h->rows;
	words = (rows + 63) / 64;
	threshold_max = h->central[0].threshold_max;
	/* every bit set, past the rows too, and a count past them */
	for (unsigned int k = 0; k < words; k++)
		__atomic_store_n(&h->armed->bits[k], ~UINT64_C(0), __ATOMIC_SEQ_CST);
	__atomic_store_n(&h->armed->nr, UINT64_MAX, __ATOMIC_SEQ_CST);
	cr_assert_eq(pcpu_shared_sum(r, 0), 5, "the other rows hold 0");
	cr_assert_eq(pcpu_shared_snapshot(r, values, NULL), 0);
	cr_assert_eq(values[0], 5);
	cr_assert_eq(pcpu_shared_error_bound(r, 0), rows * threshold_max, "the count is capped");
	cr_assert_eq(pcpu_shared_sync_if_delta_above(r, 0, 0), 5);
	/* and a count below the bits: a bound that lies, never a fault */
	__atomic_store_n(&h->armed->nr, 0, __ATOMIC_SEQ_CST);
	cr_assert_eq(pcpu_shared_error_bound(r, 0), 0);
	cr_assert_eq(pcpu_shared_sum(r, 0), 5);
	pcpu_shared_close(r);
	pcpu_shared_close(w);
	pcpu_shared_unlink(name);
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
