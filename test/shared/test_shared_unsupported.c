/* SPDX-License-Identifier: MIT */
/*
 * Where the architecture has no lock-free 16-byte compare-and-swap (i386,
 * armhf, riscv64), shared segments are refused with ENOTSUP: the pair
 * swaps' emulation locks within one process only (lib/base/pair.h).
 */
#include <criterion/criterion.h>
#include <errno.h>

#include <percpu/shared.h>

static const struct pcpu_stat_item items[] = { { .name = "requests" } };

Test(shared_unsupported, create_and_open_are_refused_with_enotsup)
{
	struct pcpu_shared_desc d = { .items = items, .nr_items = 1 };

	errno = 0;
	cr_assert_null(pcpu_shared_create(NULL, &d));
	cr_assert_eq(errno, ENOTSUP);
	errno = 0;
	cr_assert_null(pcpu_shared_create("/percpu-test-unsupported", &d));
	cr_assert_eq(errno, ENOTSUP);
	errno = 0;
	cr_assert_null(pcpu_shared_open("/percpu-test-unsupported", PCPU_SHARED_RDONLY));
	cr_assert_eq(errno, ENOTSUP);
}
