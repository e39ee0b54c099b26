/* SPDX-License-Identifier: MIT */
/*
 * A reader racing the creator, made deterministic: shared-peer creates a
 * named segment while this process single-steps it (ptrace) and opens the
 * name after every instruction of pcpu_shared_create(), both ways. Each
 * open must see the name missing (ENOENT), the segment unfinished (EAGAIN:
 * empty, zero-filled after ftruncate, filled but not marked ready), or the
 * finished segment, which then stays open-able; never "not a segment"
 * (EBADMSG) or "truncated" (EINVAL), which a reader would not retry.
 * Skipped under valgrind and qemu-user (no ptrace there).
 */
#include "shared_helpers.h"
#include "shared_labelled.h"

TestSuite(shared_race, .timeout = 240);

/* Opens @name with @flags; the errno, or 0 when it opened as the peer made it. */
static int try_open(const char *name, unsigned int flags, bool labelled)
{
	struct pcpu_shared *s;

	errno = 0;
	s = pcpu_shared_open(name, flags);
	if (!s)
		return errno ? errno : -1;
	if (labelled) {
		uint64_t buckets[4] = { 1, 1, 1, 1 };
		uint32_t nb = 0;

		cr_assert_eq(pcpu_shared_count(s), LAB_ITEMS);
		cr_assert_str_eq(pcpu_shared_labels(s, LAB_LAT_API)[1], "/api");
		cr_assert_not_null(pcpu_shared_bounds(s, LAB_LAT_API, &nb, NULL));
		cr_assert_eq(nb, 3);
		cr_assert_eq(pcpu_shared_histogram(s, LAB_LAT_API, buckets, NULL), 0);
		for (unsigned int b = 0; b < 4; b++)
			cr_assert_eq(buckets[b], 0);
	} else {
		cr_assert_eq(pcpu_shared_count(s), 3);
		cr_assert_str_eq(pcpu_shared_name(s, 2), "depth");
	}
	for (unsigned int i = 0; i < pcpu_shared_count(s); i++)
		cr_assert_eq(pcpu_shared_sum(s, i), 0);
	pcpu_shared_close(s);
	return 0;
}

ParameterizedTestParameters(shared_race, open_at_every_instruction_of_a_create_says_retry_or_opens)
{
	static bool labelled[] = { false, true };

	return cr_make_param_array(bool, labelled, 2);
}

/* Both segments: the plain one, and one with labels and histograms. */
ParameterizedTest(bool *labelled, shared_race, open_at_every_instruction_of_a_create_says_retry_or_opens)
{
	char name[64];
	long k, missing = 0, unfinished = 0, opened = 0;
	int status;
	pid_t pid;

	if (pcpu_test_on_valgrind() || getenv("PCPU_TEST_UNDER_QEMU"))
		cr_skip_test("no ptrace single-stepping here");
	shared_test_name(name, sizeof(name), *labelled ? "lrace" : "race");
	pid = shared_test_start_stopped(*labelled ? "create-labelled-stopped" : "create-stopped",
					name);
	for (k = 0; shared_test_step(pid, 1); k++) {
		for (int ro = 0; ro < 2; ro++) {
			int err = try_open(name, ro ? PCPU_SHARED_RDONLY : 0, *labelled);

			cr_assert(err == 0 || err == ENOENT || err == EAGAIN,
				  "step %ld, %s: errno %d (%s)", k, ro ? "read-only" : "writable",
				  err, strerror(err));
			cr_assert(opened == 0 || err == 0, "step %ld: opened before, now %s", k,
				  strerror(err));
			missing += err == ENOENT;
			unfinished += err == EAGAIN;
			opened += err == 0 && ro == 1;
		}
		cr_assert_lt(k, 10000000, "the create never returned");
	}
	/* untraced for its exit (LeakSanitizer refuses to run under ptrace) */
	cr_assert_eq(ptrace(PTRACE_DETACH, pid, NULL, NULL), 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the peer: status %#x", status);
	pcpu_shared_unlink(name);
	cr_assert_gt(missing, 0, "no open before the name existed");
	cr_assert_gt(unfinished, 0, "no open while the segment was unfinished");
	cr_assert_gt(opened, 0, "the finished segment never opened");
	cr_log_info("%ld instructions: %ld opens found no name, %ld an unfinished segment, "
		    "%ld the segment", k, missing, unfinished, opened);
}
