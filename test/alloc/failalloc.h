/* SPDX-License-Identifier: MIT */
/*
 * failalloc: an allocation interposer for the allocation-failure tests.
 *
 * failalloc.c defines malloc, calloc, realloc, reallocarray, free,
 * aligned_alloc, posix_memalign, memalign, valloc, pvalloc, mmap, mmap64,
 * munmap and pthread_create in the test executable. Symbols of the executable come first
 * in the dynamic linker's search order, so these replace libc's for every
 * caller: the library (linked statically), libnuma, liburcu, libc itself
 * and ld.so (which binds its malloc to the global one once relocated). They
 * forward to glibc's __libc_malloc family and to the raw mmap/munmap system
 * calls, so memory from both sides is one allocator and mixing is safe;
 * pthread_create goes to libc's through dlsym(RTLD_NEXT).
 *
 * Disarmed (the default) they only forward. failalloc_arm(n) starts
 * counting allocation attempts (every malloc-family call, every mmap and
 * every pthread_create, frees excluded) from 0: attempt number n fails
 * (NULL or MAP_FAILED with errno ENOMEM, posix_memalign's ENOMEM,
 * pthread_create's EAGAIN), every other one succeeds.
 * failalloc_disarm() stops and returns how many attempts were made. So a
 * loop over n = 0, 1, 2, ... has visited every failure point of a call
 * once an armed run makes fewer than n + 1 attempts.
 *
 * While armed, blocks from malloc, aligned_alloc, memalign and
 * posix_memalign come filled with 0xa5 (like glibc's MALLOC_PERTURB_), so
 * a cleanup path that frees a field it never set crashes every time.
 *
 * While armed, every block and mapping handed out is also recorded in a
 * fixed table (no allocation, lock-free) until it is freed or unmapped,
 * whenever that happens; failalloc_live() says how many are still there,
 * so a test can check that a failed call gave back all it took.
 *
 * Everything is atomics on static storage: thread-safe and usable from
 * signal handlers. The state is process-wide: arm only in a process (a
 * fork()ed child) where no other thread allocates behind the test's back.
 *
 * Under AddressSanitizer, ThreadSanitizer or MemorySanitizer the
 * sanitizer's runtime owns malloc: replacing it there is not meaningful
 * (and breaks the runtime), so failalloc.c then defines nothing and
 * failalloc_available() is false. Under valgrind the replacement is
 * valgrind's: tests check pcpu_test_on_valgrind() and skip.
 */
#ifndef PCPU_TEST_FAILALLOC_H
#define PCPU_TEST_FAILALLOC_H

#include <stdbool.h>
#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FAILALLOC_DISABLED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define FAILALLOC_DISABLED 1
#endif
#endif

/* What a live table entry is. */
enum failalloc_kind {
	FAILALLOC_BLOCK = 1, /* from the malloc family; freed by free() */
	FAILALLOC_MAPPING,   /* from mmap; released by munmap() */
};

/* One block or mapping allocated while armed and not yet given back. */
struct failalloc_entry {
	enum failalloc_kind kind;
	void *addr;
	size_t size;
	long attempt; /* its attempt number since failalloc_arm() */
};

/* False when the interposer is compiled out (sanitizers). */
bool failalloc_available(void);

/*
 * Clears the attempt count and the table, then fails attempt number
 * @fail_at (0: the very next one); a negative @fail_at fails nothing but
 * still counts and records.
 */
void failalloc_arm(long fail_at);

/* Stops counting, failing and recording; returns the attempts since arm. */
long failalloc_disarm(void);

/* Blocks and mappings recorded while armed that are still not given back. */
size_t failalloc_live(void);

/* Copies the first live entry to @out; false if there is none. */
bool failalloc_first_live(struct failalloc_entry *out);

/* True if the table was full at some point since arm (entries were missed). */
bool failalloc_overflowed(void);

#endif /* PCPU_TEST_FAILALLOC_H */
