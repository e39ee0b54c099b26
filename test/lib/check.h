/* SPDX-License-Identifier: MIT */
/*
 * CHECK for the plain (non-Criterion) race programs, which run under
 * ThreadSanitizer: a failed check prints itself and exits with its number,
 * so the exit status says which one failed. Define PCPU_CHECK_PROGRAM (the
 * name printed) before including this header.
 */
#ifndef PCPU_TEST_CHECK_H
#define PCPU_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#ifndef PCPU_CHECK_PROGRAM
#define PCPU_CHECK_PROGRAM "check"
#endif

#define CHECK(n, cond)                                                                       \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			fprintf(stderr, PCPU_CHECK_PROGRAM ": check %d failed: %s\n", n,      \
				#cond);                                                       \
			exit(n);                                                              \
		}                                                                             \
	} while (0)

#endif /* PCPU_TEST_CHECK_H */
