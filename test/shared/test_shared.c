/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of <percpu/shared.h>: creation and bad descriptors,
 * permissions and O_EXCL, open by name (read-only and for writing), the
 * fast and slow paths against a shadow tally, reads and their bounds,
 * names, exposition, misuse, an anonymous segment across fork, a reader in
 * an unrelated (exec'd) process, a writer on the other update path
 * refused, and a writer killed while it holds the fold lock.
 */
#include "shared_helpers.h"

TestSuite(shared, .timeout = 60);

/* ---- ABI: the handle's public fields are what the inline add reads -------- */

#define SHARED_MEMBER(s, m, off, size)                                            \
	_Static_assert(offsetof(struct s, m) == (off), #s "." #m " moved");         \
	_Static_assert(sizeof(((struct s *)0)->m) == (size), #s "." #m " resized");
SHARED_MEMBER(pcpu_shared, pairs, 0, 8)
SHARED_MEMBER(pcpu_shared, threshold, 8, 8)
SHARED_MEMBER(pcpu_shared, add_items, 16, 4)
SHARED_MEMBER(pcpu_shared, mode, 20, 4)
SHARED_MEMBER(pcpu_shared_desc, items, 0, 8)
SHARED_MEMBER(pcpu_shared_desc, nr_items, 8, 4)
SHARED_MEMBER(pcpu_shared_desc, flags, 12, 4)
SHARED_MEMBER(pcpu_shared_desc, mode, 16, 4)
SHARED_MEMBER(pcpu_shared_desc, reserved, 20, 4)
SHARED_MEMBER(pcpu_shared_desc, more, 24, 8)
/* a descriptor of 0.2 ends at 24 bytes: the library reads more only with PCPU_SHARED_MORE */
_Static_assert(sizeof(struct pcpu_shared) == 24 && sizeof(struct pcpu_shared_desc) == 32,
	       "shared structs resized");
_Static_assert(PCPU_SHARED_MORE == 1u, "flag changed");
_Static_assert(PCPU_SHARED_MAX_ITEMS * 16 == PCPU_STRIDE, "a CPU's pairs fill its stride");
_Static_assert(PCPU_SHARED_RDONLY == 1u, "flag changed");
/* the segment's layout: version 3 is what other processes may have mapped */
_Static_assert(SHARED_VERSION == 3 && sizeof(struct shared_item) == 64 &&
		       sizeof(struct shared_central) == 16 &&
		       sizeof(struct shared_armed) == 8 &&
		       offsetof(struct shared_header, armed) == 152,
	       "segment layout changed: bump SHARED_VERSION");
/* where a reader of layout 1 (0.2) finds the version and the ready mark */
_Static_assert(offsetof(struct shared_header, version) == 8 &&
		       offsetof(struct shared_header, ready) == 40,
	       "a reader of 0.2 would not see the version");

PCPU_TEST(shared, handle_sits_first_in_the_private_state)
{
	cr_assert_eq(offsetof(struct shared_handle, pub), 0);
}

/* ---- creation and bad descriptors ---------------------------------------- */

enum { BAD_NULL_DESC, BAD_NULL_ITEMS, BAD_ZERO, BAD_TOO_MANY, BAD_NULL_NAME, BAD_EMPTY_NAME,
       BAD_DUPLICATE, BAD_SAME_SAMPLE, BAD_METRIC_NAME, BAD_KIND, BAD_FLAGS, BAD_MODE,
       BAD_FLOOR, BAD_ACCURACY, BAD_LONG_HELP, BAD_SHM_NAME };

struct bad_case {
	const char *what;
	int kind;
};

ParameterizedTestParameters(shared, create_rejects_bad_input_with_einval)
{
	static struct bad_case cases[] = {
		{ "NULL descriptor", BAD_NULL_DESC }, { "NULL items", BAD_NULL_ITEMS },
		{ "no items", BAD_ZERO }, { "too many items", BAD_TOO_MANY },
		{ "NULL name", BAD_NULL_NAME }, { "empty name", BAD_EMPTY_NAME },
		{ "duplicate names", BAD_DUPLICATE }, { "gauge x_total beside counter x", BAD_SAME_SAMPLE },
		{ "not a metric name", BAD_METRIC_NAME }, { "unknown kind", BAD_KIND },
		{ "unknown flags", BAD_FLAGS }, { "mode above 0777", BAD_MODE },
		{ "floor above the cap", BAD_FLOOR }, { "negative accuracy", BAD_ACCURACY },
		{ "help too long", BAD_LONG_HELP }, { "shm name without a slash", BAD_SHM_NAME },
	};

	return cr_make_param_array(struct bad_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct bad_case *bad, shared, create_rejects_bad_input_with_einval)
{
	static struct pcpu_stat_item items[PCPU_SHARED_MAX_ITEMS + 1];
	static char names[PCPU_SHARED_MAX_ITEMS + 1][16], help[PCPU_SHARED_MAX_HELP + 2];
	struct pcpu_shared_desc d = { .items = items, .nr_items = 3 };
	const struct pcpu_shared_desc *dp = &d;
	const char *name = NULL;

	for (unsigned int i = 0; i <= PCPU_SHARED_MAX_ITEMS; i++) {
		snprintf(names[i], sizeof(names[i]), "item%u", i);
		items[i] = (struct pcpu_stat_item){ .name = names[i] };
	}
	memset(help, 'h', sizeof(help) - 1);
	switch (bad->kind) {
	case BAD_NULL_DESC: dp = NULL; break;
	case BAD_NULL_ITEMS: d.items = NULL; break;
	case BAD_ZERO: d.nr_items = 0; break;
	case BAD_TOO_MANY: d.nr_items = PCPU_SHARED_MAX_ITEMS + 1; break;
	case BAD_NULL_NAME: items[1].name = NULL; break;
	case BAD_EMPTY_NAME: items[1].name = ""; break;
	case BAD_DUPLICATE: items[2].name = "item0"; break;
	case BAD_SAME_SAMPLE:
		items[1].name = "item0_total";
		items[1].kind = PCPU_METRIC_GAUGE;
		break;
	case BAD_METRIC_NAME: items[1].name = "two words"; break;
	case BAD_KIND: items[1].kind = PCPU_METRIC_INFO; break;
	case BAD_FLAGS: d.flags = 2; break;
	case BAD_MODE: d.mode = 01777; break;
	case BAD_FLOOR: items[0].floor = PCPU_SHARED_MAX_THRESH + 1; break;
	case BAD_ACCURACY: items[0].accuracy = -1; break;
	case BAD_LONG_HELP: items[0].help = help; break;
	case BAD_SHM_NAME: name = "no-slash"; break;
	}
	errno = 0;
	cr_assert_null(pcpu_shared_create(name, dp), "%s accepted", bad->what);
	cr_assert_eq(errno, EINVAL, "%s: errno %d", bad->what, errno);
}

/* Held in the parameter (Criterion copies it to the test's process), not pointed to. */
struct utf8_case {
	char help[32];
};

ParameterizedTestParameters(shared, help_that_is_not_utf8_is_refused)
{
	static struct utf8_case cases[] = {
		{ "latin-1 \xe9t\xe9" },          /* a lone lead byte */
		{ "stray \x80 continuation" },   /* a continuation without a lead */
		{ "overlong \xc0\xaf slash" },   /* '/' in two bytes */
		{ "overlong \xe0\x80\xaf" },     /* and in three */
		{ "surrogate \xed\xa0\x80" },    /* U+D800 */
		{ "past U+10FFFF \xf4\x90\x80\x80" },
		{ "cut short \xe2\x82" },        /* the euro sign without its last byte */
		{ "\xff\xfe" },
	};

	return cr_make_param_array(struct utf8_case, cases, sizeof(cases) / sizeof(cases[0]));
}

/* Both exposition formats are UTF-8: a help text that is not cannot go out. */
ParameterizedTest(struct utf8_case *c, shared, help_that_is_not_utf8_is_refused)
{
	struct pcpu_stat_item items[] = { { .name = "fine", .help = "Fine." },
					  { .name = "bad", .help = c->help } };
	struct pcpu_shared_desc d = { .items = items, .nr_items = 2 };
	struct pcpu_shared *s;

	errno = 0;
	s = pcpu_shared_create(NULL, &d);
	pcpu_shared_close(s);
	cr_assert_null(s, "help \"%s\" accepted", c->help);
	cr_assert_eq(errno, EINVAL);
}

PCPU_TEST(shared, help_in_utf8_goes_out_as_it_came)
{
	static const char help[] = "Bytes in \xe2\x82\xac, \xe6\x97\xa5\xe6\x9c\xac and "
				   "\xf0\x9d\x84\x9e; \xc3\xa9t\xc3\xa9 \xef\xbf\xbd \xf4\x8f\xbf\xbf";
	struct pcpu_stat_item items[] = { { .name = "bytes", .help = help } };
	struct pcpu_shared_desc d = { .items = items, .nr_items = 1 };
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	cr_assert_not_null(s, "errno %d", errno);
	cr_assert_str_eq(pcpu_shared_help(s, 0), help);
	out = open_memstream(&text, &len);
	cr_assert_eq(pcpu_shared_write(s, out, PCPU_METRICS_OPENMETRICS), 0);
	fclose(out);
	cr_assert(strstr(text, help), "%s", text);
	free(text);
	pcpu_shared_close(s);
}

PCPU_TEST(shared, max_items_fit_one_stride)
{
	static struct pcpu_stat_item items[PCPU_SHARED_MAX_ITEMS];
	static char names[PCPU_SHARED_MAX_ITEMS][16];
	struct pcpu_shared_desc d = { .items = items, .nr_items = PCPU_SHARED_MAX_ITEMS };
	struct pcpu_shared *s;

	for (unsigned int i = 0; i < PCPU_SHARED_MAX_ITEMS; i++) {
		snprintf(names[i], sizeof(names[i]), "item%u", i);
		items[i] = (struct pcpu_stat_item){ .name = names[i] };
	}
	s = pcpu_shared_create(NULL, &d);
	cr_assert_not_null(s);
	for (unsigned int i = 0; i < PCPU_SHARED_MAX_ITEMS; i++)
		pcpu_shared_add(s, i, (int64_t)i + 1);
	for (unsigned int i = 0; i < PCPU_SHARED_MAX_ITEMS; i++)
		cr_assert_eq(pcpu_shared_sum(s, i), (int64_t)i + 1);
	cr_assert_eq(pcpu_shared_lookup(s, "item255"), 255);
	pcpu_shared_close(s);
}

/* ---- names, permissions ---------------------------------------------------- */

PCPU_TEST(shared, named_segment_is_0600_and_exclusive)
{
	struct pcpu_shared_desc d = shared_test_desc();
	char name[64];
	struct pcpu_shared *s, *again;
	struct stat st;
	int fd;

	shared_test_name(name, sizeof(name), "perm");
	umask(0); /* the default mode must not depend on it */
	s = pcpu_shared_create(name, &d);
	cr_assert_not_null(s, "create: %s", strerror(errno));
	fd = shm_open(name, O_RDONLY, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	close(fd);
	cr_assert_eq(st.st_mode & 07777, 0600, "mode %o", st.st_mode & 07777);
	errno = 0;
	again = pcpu_shared_create(name, &d);
	cr_assert_null(again);
	cr_assert_eq(errno, EEXIST);
	pcpu_shared_close(s);
	cr_assert_eq(pcpu_shared_unlink(name), 0);
	cr_assert_eq(pcpu_shared_unlink(name), -ENOENT);
	umask(022);
}

PCPU_TEST(shared, descriptor_mode_shares_with_a_group)
{
	struct pcpu_shared_desc d = shared_test_desc();
	char name[64];
	struct pcpu_shared *s;
	struct stat st;
	int fd;

	d.mode = 0640;
	s = pcpu_shared_create(shared_test_name(name, sizeof(name), "group"), &d);
	cr_assert_not_null(s);
	fd = shm_open(name, O_RDONLY, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	close(fd);
	pcpu_shared_unlink(name);
	pcpu_shared_close(s);
	cr_assert_eq(st.st_mode & 07777, 0640, "mode %o", st.st_mode & 07777);
}

/* An unprivileged user cannot open a 0600 segment of another; root can, so drop to nobody. */
static int open_as_nobody(void *arg)
{
	struct pcpu_shared *s;

	if (setgid(65534) != 0 || setuid(65534) != 0)
		return 10;
	if (geteuid() == 0 || access("/proc/self", R_OK) != 0)
		return 11; /* setuid() pretended (valgrind's setxid, after Criterion's threads) */
	s = pcpu_shared_open(arg, PCPU_SHARED_RDONLY);
	if (s)
		return 1;
	return errno == EACCES ? 0 : 2;
}

/* static: reachable in the child, whose leak check (valgrind) runs at its exit */
static struct pcpu_shared *users_seg;

PCPU_TEST(shared, other_users_are_kept_out)
{
	struct pcpu_shared_desc d = shared_test_desc();
	char name[64];
	int status;

	if (geteuid() != 0)
		cr_skip_test("needs root to become another user");
	users_seg = pcpu_shared_create(shared_test_name(name, sizeof(name), "users"), &d);
	cr_assert_not_null(users_seg);
	status = pcpu_test_in_child(open_as_nobody, name, 10);
	pcpu_shared_unlink(name);
	pcpu_shared_close(users_seg);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 11)
		cr_skip_test("could not become another user here");
	pcpu_test_assert_child_passed(status, "open as nobody");
}

PCPU_TEST(shared, open_rejects_bad_arguments)
{
	char name[64];

	errno = 0;
	cr_assert_null(pcpu_shared_open(NULL, 0));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(pcpu_shared_open("/x", 2));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(pcpu_shared_open(shared_test_name(name, sizeof(name), "none"), 0));
	cr_assert_eq(errno, ENOENT);
	cr_assert_eq(pcpu_shared_unlink(NULL), -EINVAL);
}

/* ---- adds and reads ---------------------------------------------------------- */

PCPU_TEST(shared, adds_match_a_shadow_tally_through_both_paths)
{
	struct pcpu_shared_desc d = shared_test_desc();
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);
	int64_t shadow[3] = { 0 }, values[3];
	uint64_t bounds[3], rng = 42;
	long n = pcpu_test_iterations(200000);

	cr_assert_not_null(s);
	cr_assert_eq(pcpu_shared_count(s), 3);
	for (long k = 0; k < n; k++) {
		unsigned int item = (unsigned int)(k % 3);
		/* mostly small, one in 64 far over any threshold: the slow path */
		int64_t amount = (int64_t)(pcpu_test_rand(&rng) % 64);

		if (item == 2)
			amount -= 32;
		if (k % 64 == 0)
			amount *= 100000;
		pcpu_shared_add(s, item, amount);
		shadow[item] += amount;
	}
	cr_assert_eq(pcpu_shared_snapshot(s, values, bounds), 0);
	for (unsigned int i = 0; i < 3; i++) {
		cr_assert_eq(pcpu_shared_sum(s, i), shadow[i]);
		cr_assert_eq(values[i], shadow[i]);
		cr_assert_eq(bounds[i], pcpu_shared_error_bound(s, i));
		cr_assert_leq(pcpu_test_distance(pcpu_shared_read(s, i), shadow[i]), bounds[i],
			      "item %u: read %" PRId64 " exact %" PRId64 " bound %" PRIu64, i,
			      pcpu_shared_read(s, i), shadow[i], bounds[i]);
	}
	cr_assert_eq(pcpu_shared_sync_if_delta_above(s, 0, 0), shadow[0]);
	cr_assert_eq(pcpu_shared_read(s, 0), shadow[0]);
	pcpu_shared_fold_all(s);
	for (unsigned int i = 0; i < 3; i++)
		cr_assert_eq(pcpu_shared_read(s, i), shadow[i]);
	pcpu_shared_close(s);
}

PCPU_TEST(shared, threshold_grows_with_the_value)
{
	static const struct pcpu_stat_item items[] = { { .name = "bytes", .floor = 16 } };
	struct pcpu_shared_desc d = { .items = items, .nr_items = 1 };
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);
	uint64_t small;

	cr_assert_not_null(s);
	cr_assert_eq(pcpu_shared_error_bound(s, 0), 0, "no row armed: nothing can be pending");
	pcpu_shared_add(s, 0, 1);
	/* one row armed (this CPU's, or the row without a CPU number; two after a migration) */
	small = pcpu_shared_error_bound(s, 0);
	cr_assert_geq(shared_handle(s)->armed->nr, 1);
	cr_assert_eq(small, 16 * shared_handle(s)->armed->nr);
	pcpu_shared_add(s, 0, INT64_C(1) << 30);
	cr_assert_eq(pcpu_shared_read(s, 0), 1 + (INT64_C(1) << 30), "a slow-path add folds itself");
	cr_assert_gt(pcpu_shared_error_bound(s, 0), small);
	cr_assert_gt(s->threshold[0], 16);
	pcpu_shared_close(s);
}

PCPU_TEST(shared, read_is_monotone_and_sync_returns_exact)
{
	static const struct pcpu_stat_item items[] = { { .name = "hits", .floor = 4 } };
	struct pcpu_shared_desc d = { .items = items, .nr_items = 1 };
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);
	struct pcpu_test_monotone r = pcpu_test_monotone(1), m = pcpu_test_monotone(1);

	cr_assert_not_null(s);
	for (int64_t k = 1; k <= 10000; k++) {
		pcpu_shared_add(s, 0, 1);
		pcpu_test_monotone_see(&r, pcpu_shared_read(s, 0));
		pcpu_test_monotone_see(&m, pcpu_shared_sum(s, 0));
		cr_assert_eq(pcpu_shared_sum(s, 0), k);
	}
	cr_assert_eq(r.backs + m.backs, 0);
	cr_assert_eq(pcpu_shared_sync_if_delta_above(s, 0, UINT64_MAX), pcpu_shared_read(s, 0));
	cr_assert_eq(pcpu_shared_sync_if_delta_above(s, 0, 0), 10000);
	pcpu_shared_close(s);
}

PCPU_TEST(shared, names_kinds_help_and_lookup)
{
	struct pcpu_shared_desc d = shared_test_desc();
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);

	cr_assert_not_null(s);
	cr_assert_str_eq(pcpu_shared_name(s, 1), "bytes");
	cr_assert_str_eq(pcpu_shared_help(s, 0), "Requests served.");
	cr_assert_str_eq(pcpu_shared_help(s, 2), "");
	cr_assert_eq(pcpu_shared_kind(s, 0), PCPU_METRIC_COUNTER);
	cr_assert_eq(pcpu_shared_kind(s, 2), PCPU_METRIC_GAUGE);
	cr_assert_eq(pcpu_shared_lookup(s, "depth"), 2);
	cr_assert_eq(pcpu_shared_lookup(s, "nope"), -ENOENT);
	cr_assert_eq(pcpu_shared_lookup(s, NULL), -EINVAL);
	errno = 0;
	cr_assert_null(pcpu_shared_name(s, 3));
	cr_assert_eq(errno, ERANGE);
	errno = 0;
	cr_assert_null(pcpu_shared_name(NULL, 0));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(pcpu_shared_count(NULL), 0);
	cr_assert_eq(pcpu_shared_snapshot(NULL, NULL, NULL), -EINVAL);
	pcpu_shared_close(s);
	pcpu_shared_close(NULL);
}

PCPU_TEST(shared, exposition_has_help_type_and_total)
{
	struct pcpu_shared_desc d = shared_test_desc();
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	cr_assert_not_null(s);
	pcpu_shared_add(s, 0, 7);
	pcpu_shared_add(s, 2, -3);
	out = open_memstream(&text, &len);
	cr_assert_eq(pcpu_shared_write(s, out, PCPU_METRICS_OPENMETRICS), 0);
	fclose(out);
	cr_assert(strstr(text, "# TYPE requests counter\nrequests_total 7\n"), "%s", text);
	cr_assert(strstr(text, "# HELP bytes Bytes sent.\\nWith a \\\"newline\\\" and a \\\\.\n"),
		  "%s", text);
	cr_assert(strstr(text, "# TYPE depth gauge\ndepth -3\n"), "%s", text);
	cr_assert(strstr(text, "# EOF\n"), "%s", text);
	free(text);
	out = open_memstream(&text, &len);
	cr_assert_eq(pcpu_shared_write(s, out, PCPU_METRICS_PROMETHEUS), 0);
	fclose(out);
	cr_assert(strstr(text, "# TYPE requests_total counter\nrequests_total 7\n"), "%s", text);
	cr_assert_null(strstr(text, "# EOF"));
	free(text);
	cr_assert_eq(pcpu_shared_write(s, NULL, PCPU_METRICS_PROMETHEUS), -EINVAL);
	pcpu_shared_close(s);
}

/* ---- a segment cut short under its readers --------------------------------- */

/*
 * A process with write access may truncate the segment's file: loads from
 * the pages past its new end would raise SIGBUS. On a reader's handle, the
 * calls that walk the CPUs' rows (sum, snapshot, write, a sync past the
 * bound) see the size first and give ENXIO; after it grows back they work.
 * (Writers trust each other: the creator's handle does not check.)
 */
PCPU_TEST(shared, reads_of_a_truncated_segment_give_enxio_not_sigbus)
{
	struct pcpu_shared_desc d = shared_test_desc();
	int64_t values[3];
	uint64_t bounds[3];
	char name[64];
	struct pcpu_shared *w = pcpu_shared_create(shared_test_name(name, sizeof(name), "cut"), &d);
	struct pcpu_shared *r = pcpu_shared_open(name, PCPU_SHARED_RDONLY);
	size_t size = shared_handle(w)->map_size, rows = shared_handle(w)->hdr->cpus.off;
	int fd = shm_open(name, O_RDWR, 0);
	FILE *out = fopen("/dev/null", "w");

	pcpu_shared_unlink(name);
	cr_assert(w && r && fd >= 0 && out);
	pcpu_shared_add(w, 0, 5);
	cr_assert_eq(pcpu_shared_sum(r, 0), 5);
	cr_assert_eq(pcpu_shared_snapshot(r, values, bounds), 0);
	cr_assert_eq(values[0], 5);
	/* cut where the rows start, then to nothing */
	for (int cut = 0; cut < 2; cut++) {
		cr_assert_eq(ftruncate(fd, cut ? 0 : (off_t)rows), 0);
		errno = 0;
		cr_assert_eq(pcpu_shared_sum(r, 0), 0);
		cr_assert_eq(errno, ENXIO);
		cr_assert_eq(pcpu_shared_snapshot(r, values, bounds), -ENXIO);
		cr_assert_eq(pcpu_shared_write(r, out, PCPU_METRICS_PROMETHEUS), -ENXIO);
		if (cut == 0) { /* its first step, error_bound(), loads from a first page */
			errno = 0;
			cr_assert_eq(pcpu_shared_sync_if_delta_above(r, 0, 0), 0);
			cr_assert_eq(errno, ENXIO);
		}
	}
	/* grown back (zeros): every read works again, as on a segment that lost its values */
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	cr_assert_eq(pcpu_shared_snapshot(r, values, bounds), 0);
	cr_assert_eq(pcpu_shared_sum(r, 0), 0);
	fclose(out);
	close(fd);
	pcpu_shared_close(r);
	pcpu_shared_close(w);
}

/* ---- misuse ------------------------------------------------------------------ */

PCPU_TEST(shared, add_out_of_range_is_misuse, .signal = PCPU_TEST_MISUSE_SIGNAL)
{
	struct pcpu_shared_desc d = shared_test_desc();
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);

	pcpu_shared_add(s, 3, 1);
	cr_assert_eq(pcpu_shared_sum(s, 0), 0); /* release builds: nothing happened */
	pcpu_shared_close(s);
}

PCPU_TEST(shared, read_of_null_is_misuse, .signal = PCPU_TEST_MISUSE_SIGNAL)
{
	cr_assert_eq(pcpu_shared_read(NULL, 0), 0);
}

PCPU_TEST(shared, add_to_read_only_segment_is_misuse, .signal = PCPU_TEST_MISUSE_SIGNAL)
{
	struct pcpu_shared_desc d = shared_test_desc();
	char name[64];
	struct pcpu_shared *w = pcpu_shared_create(shared_test_name(name, sizeof(name), "ro"), &d);
	struct pcpu_shared *r = pcpu_shared_open(name, PCPU_SHARED_RDONLY);

	pcpu_shared_unlink(name); /* before the abort */
	cr_assert_not_null(w);
	cr_assert_not_null(r);
	pcpu_shared_add(r, 0, 1);
	cr_assert_eq(pcpu_shared_sum(r, 0), 0);
	pcpu_shared_close(r);
	pcpu_shared_close(w);
}

/* ---- other processes ------------------------------------------------------- */

PCPU_TEST(shared, read_only_handle_sees_writers_and_syncs_without_folding)
{
	struct pcpu_shared_desc d = shared_test_desc();
	char name[64];
	struct pcpu_shared *w = pcpu_shared_create(shared_test_name(name, sizeof(name), "rd"), &d);
	struct pcpu_shared *r = pcpu_shared_open(name, PCPU_SHARED_RDONLY);
	struct pcpu_shared *w2 = pcpu_shared_open(name, 0);

	pcpu_shared_unlink(name);
	cr_assert_not_null(w);
	cr_assert_not_null(r, "open: %s", strerror(errno));
	cr_assert_not_null(w2, "open: %s", strerror(errno));
	cr_assert_eq(r->add_items, 0);
	for (int k = 0; k < 1000; k++) {
		pcpu_shared_add(w, 0, 1);
		pcpu_shared_add(w2, 0, 2);
	}
	cr_assert_eq(pcpu_shared_sum(r, 0), 3000);
	cr_assert_eq(pcpu_shared_sync_if_delta_above(r, 0, 0), 3000);
	pcpu_shared_fold_all(r); /* does nothing, and must not fault on the read-only map */
	pcpu_shared_fold_all(w2);
	cr_assert_eq(pcpu_shared_read(r, 0), 3000);
	pcpu_shared_close(w2);
	pcpu_shared_close(r);
	pcpu_shared_close(w);
}

PCPU_TEST(shared, anonymous_segment_is_shared_with_forked_children)
{
	struct pcpu_shared_desc d = shared_test_desc();
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);
	const int children = 4, adds = (int)pcpu_test_iterations(50000);

	cr_assert_not_null(s);
	for (int c = 0; c < children; c++) {
		pid_t pid = fork();

		cr_assert_neq(pid, -1);
		if (pid == 0) {
			for (int k = 0; k < adds; k++)
				pcpu_shared_add(s, 1, k % 100);
			_exit(0);
		}
	}
	for (int c = 0; c < children; c++) {
		int status;

		cr_assert_neq(wait(&status), -1);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	/* sum over k < adds of k % 100, per child */
	int64_t per = (int64_t)(adds / 100) * 4950;

	for (int k = adds / 100 * 100; k < adds; k++)
		per += k % 100;
	cr_assert_eq(pcpu_shared_sum(s, 1), per * children);
	pcpu_shared_close(s);
}

PCPU_TEST(shared, exec_reader_agrees_with_the_exact_total)
{
	struct pcpu_shared_desc d = shared_test_desc();
	char name[64], out[256], want[64];
	struct pcpu_shared *s = pcpu_shared_create(shared_test_name(name, sizeof(name), "exec"), &d);
	int rc;

	cr_assert_not_null(s);
	for (int k = 0; k < 12345; k++)
		pcpu_shared_add(s, 0, 1);
	pcpu_shared_add(s, 1, 1 << 20);
	rc = shared_test_peer("sum", name, NULL, out, sizeof(out));
	pcpu_shared_unlink(name);
	pcpu_shared_close(s);
	cr_assert_eq(rc, 0, "peer: %s", out);
	cr_assert(strstr(out, "requests 12345\n"), "%s", out);
	snprintf(want, sizeof(want), "bytes %d\n", 1 << 20);
	cr_assert(strstr(out, want), "%s", out);
}

PCPU_TEST(shared, writer_on_the_other_update_path_is_refused)
{
	struct pcpu_shared_desc d = shared_test_desc();
	enum pcpu_cpu_mode ours = pcpu_cpu_setup();
	char *env_rseq[] = { (char *)"PCPU_FORCE_FALLBACK=0", NULL };
	char *env_atomic[] = { (char *)"PCPU_FORCE_FALLBACK=1", NULL };
	char *const *other = ours == PCPU_CPU_RSEQ ? env_atomic : env_rseq;
	char name[64], out[64];
	struct pcpu_shared *s;
	int rc;

	cr_assert_eq(shared_test_peer("mode", NULL, other, out, sizeof(out)), 0);
	if (atoi(out) == (int)ours)
		cr_skip_test("this machine has one update path only");
	s = pcpu_shared_create(shared_test_name(name, sizeof(name), "path"), &d);
	cr_assert_not_null(s);
	rc = shared_test_peer("write", name, other, out, sizeof(out));
	cr_assert_eq(rc, 1);
	cr_assert_str_eq(out, "EPROTO\n");
	/* a reader on the other path is welcome; a writer on ours too */
	cr_assert_eq(shared_test_peer("sum", name, other, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(shared_test_peer("write", name, NULL, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(pcpu_shared_sum(s, 0), 1);
	pcpu_shared_unlink(name);
	pcpu_shared_close(s);
}

/* ---- a writer killed in a fold -------------------------------------------- */

static int hook_fd = -1;

/* Inside the fold, holding the lock, after the swap: tell the parent, then wait to die. */
static void stop_in_fold(void)
{
	char c = 'f';

	if (write(hook_fd, &c, 1) != 1)
		_exit(3);
	for (;;)
		pause();
}

PCPU_TEST(shared, writer_killed_holding_the_fold_lock_blocks_nobody)
{
	static const struct pcpu_stat_item items[] = { { .name = "bytes", .floor = 16 },
						       { .name = "other", .floor = 16 } };
	struct pcpu_shared_desc d = { .items = items, .nr_items = 2 };
	struct pcpu_shared *s;
	int fds[2], status;
	int64_t exact = 0;
	char c;
	pid_t pid;

	pcpu_test_skip_under_qemu(); /* qemu-user has no robust futex list */
	s = pcpu_shared_create(NULL, &d);
	cr_assert_not_null(s);
	for (int k = 0; k < 10; k++, exact += 5)
		pcpu_shared_add(s, 0, 5);
	cr_assert_eq(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		hook_fd = fds[1];
		pcpu_shared_fold_hook = stop_in_fold;
		pcpu_shared_add(s, 0, 1000000); /* the slow path: add, lock, swap, hook */
		_exit(4);
	}
	cr_assert_eq(read(fds[0], &c, 1), 1, "the child never reached the fold");
	exact += 1000000;
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	close(fds[0]);
	close(fds[1]);

	/* the add the child completed is there; its fold's central update is not */
	cr_assert_eq(pcpu_shared_sum(s, 0), exact);
	cr_assert_lt(pcpu_shared_read(s, 0), exact - 1000);
	/* fast-path adds never needed the lock */
	pcpu_shared_add(s, 1, 1);
	cr_assert_eq(pcpu_shared_sum(s, 1), 1);
	/* the next sync takes the dead holder's lock, repairs, and is exact */
	cr_assert_eq(pcpu_shared_sync_if_delta_above(s, 0, 0), exact);
	cr_assert_eq(pcpu_shared_read(s, 0), exact);
	cr_assert_leq(pcpu_test_distance(pcpu_shared_read(s, 1), 1), pcpu_shared_error_bound(s, 1));
	/* and the lock works as before */
	pcpu_shared_add(s, 0, 1 << 30);
	exact += 1 << 30;
	pcpu_shared_fold_all(s);
	cr_assert_eq(pcpu_shared_read(s, 0), exact);
	pcpu_shared_close(s);
}
