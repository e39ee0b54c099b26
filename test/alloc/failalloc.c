/* SPDX-License-Identifier: MIT */
/*
 * failalloc: see failalloc.h. Every definition here replaces libc's for the
 * whole process, so nothing in this file may call anything that allocates:
 * only __libc_* forwarding, raw system calls and atomics on static storage.
 */
#define _GNU_SOURCE
/*
 * meson passes -D_FILE_OFFSET_BITS=64, under which <sys/mman.h> renames
 * mmap to mmap64: here both names are defined, each under its own name.
 */
#undef _FILE_OFFSET_BITS
#include "failalloc.h"

#ifndef FAILALLOC_DISABLED

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* glibc's own allocator, under the names it exports for replacements. */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

#define TABLE_SIZE 1024
#define RESERVED ((uintptr_t)1) /* an entry being filled in */

struct slot {
	uintptr_t addr; /* atomic; 0: free */
	size_t size;
	long attempt;
	enum failalloc_kind kind;
};

static int armed;         /* atomic */
static long attempts;     /* atomic: attempts since arm */
static long fail_at = -1; /* written only while disarmed */
static long nr_live;      /* atomic: slots in use */
static int overflowed;    /* atomic */
static struct slot table[TABLE_SIZE];

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

bool failalloc_available(void)
{
	return true;
}

/*
 * Counts one attempt if armed; true if it must fail. *@attempt gets its
 * number, or -1 when disarmed (not to be recorded).
 */
static bool attempt_fails(long *attempt)
{
	long n;

	if (!LOAD(&armed)) {
		*attempt = -1;
		return false;
	}
	n = __atomic_fetch_add(&attempts, 1, __ATOMIC_ACQ_REL);
	*attempt = n;
	return n == fail_at;
}

#define SCRIBBLE 0xa5

/*
 * While armed, memory that malloc would hand out uninitialised is filled
 * with SCRIBBLE (as glibc's MALLOC_PERTURB_ does), so that code that reads
 * a field it never wrote (a cleanup path freeing pointers it did not set)
 * fails at once instead of finding zeroes in a fresh heap.
 */
static void *scribbled(void *p, size_t size, long attempt)
{
	if (p && attempt >= 0)
		memset(p, SCRIBBLE, size);
	return p;
}

static void record(enum failalloc_kind kind, void *addr, size_t size, long attempt)
{
	if (attempt < 0 || !addr)
		return;
	for (size_t i = 0; i < TABLE_SIZE; i++) {
		uintptr_t expected = 0;

		if (__atomic_compare_exchange_n(&table[i].addr, &expected, RESERVED, false,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			table[i].kind = kind;
			table[i].size = size;
			table[i].attempt = attempt;
			__atomic_fetch_add(&nr_live, 1, __ATOMIC_ACQ_REL);
			STORE(&table[i].addr, (uintptr_t)addr);
			return;
		}
	}
	STORE(&overflowed, 1);
}

static void release_slot(struct slot *s, uintptr_t addr)
{
	if (__atomic_compare_exchange_n(&s->addr, &addr, 0, false, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED))
		__atomic_fetch_sub(&nr_live, 1, __ATOMIC_ACQ_REL);
}

/* Forgets block @p if it is recorded. */
static void forget_block(void *p)
{
	if (!p || LOAD(&nr_live) == 0)
		return;
	for (size_t i = 0; i < TABLE_SIZE; i++) {
		if (LOAD(&table[i].addr) == (uintptr_t)p && table[i].kind == FAILALLOC_BLOCK) {
			release_slot(&table[i], (uintptr_t)p);
			return;
		}
	}
}

static bool block_recorded(void *p)
{
	if (!p || LOAD(&nr_live) == 0)
		return false;
	for (size_t i = 0; i < TABLE_SIZE; i++)
		if (LOAD(&table[i].addr) == (uintptr_t)p && table[i].kind == FAILALLOC_BLOCK)
			return true;
	return false;
}

/*
 * munmap(@addr, @len): forgets the recorded mappings inside the range and
 * trims those that it cuts at one end. One it punches a hole into stays
 * recorded whole (still live, which it partly is).
 */
static void forget_range(uintptr_t addr, size_t len)
{
	uintptr_t end = addr + len;

	if (LOAD(&nr_live) == 0)
		return;
	for (size_t i = 0; i < TABLE_SIZE; i++) {
		uintptr_t a = LOAD(&table[i].addr);
		uintptr_t e;

		if (a <= RESERVED || table[i].kind != FAILALLOC_MAPPING)
			continue;
		e = a + table[i].size;
		if (e <= addr || a >= end)
			continue;
		if (a >= addr && e <= end) {
			release_slot(&table[i], a);
		} else if (a < addr && e <= end) {
			table[i].size = addr - a; /* the tail went */
		} else if (a >= addr && e > end) {
			table[i].size = e - end; /* the head went */
			STORE(&table[i].addr, end);
		}
	}
}

void failalloc_arm(long n)
{
	STORE(&armed, 0);
	for (size_t i = 0; i < TABLE_SIZE; i++)
		STORE(&table[i].addr, 0);
	STORE(&nr_live, 0);
	STORE(&overflowed, 0);
	STORE(&attempts, 0);
	fail_at = n;
	STORE(&armed, 1);
}

long failalloc_disarm(void)
{
	STORE(&armed, 0);
	return LOAD(&attempts);
}

size_t failalloc_live(void)
{
	return (size_t)LOAD(&nr_live);
}

bool failalloc_first_live(struct failalloc_entry *out)
{
	for (size_t i = 0; i < TABLE_SIZE; i++) {
		uintptr_t a = LOAD(&table[i].addr);

		if (a > RESERVED) {
			out->kind = table[i].kind;
			out->addr = (void *)a;
			out->size = table[i].size;
			out->attempt = table[i].attempt;
			return true;
		}
	}
	return false;
}

bool failalloc_overflowed(void)
{
	return LOAD(&overflowed);
}

/* ---- the replacements --------------------------------------------------- */

void *malloc(size_t size)
{
	long n;
	void *p;

	if (attempt_fails(&n)) {
		errno = ENOMEM;
		return NULL;
	}
	p = scribbled(__libc_malloc(size), size, n);
	record(FAILALLOC_BLOCK, p, size, n);
	return p;
}

void *calloc(size_t nmemb, size_t size)
{
	long n;
	void *p;

	if (attempt_fails(&n)) {
		errno = ENOMEM;
		return NULL;
	}
	p = __libc_calloc(nmemb, size);
	record(FAILALLOC_BLOCK, p, nmemb * size, n);
	return p;
}

void *realloc(void *old, size_t size)
{
	bool was_recorded;
	long n;
	void *p;

	if (old && size == 0) { /* glibc: frees, returns NULL */
		forget_block(old);
		return __libc_realloc(old, 0);
	}
	if (attempt_fails(&n)) {
		errno = ENOMEM;
		return NULL; /* @old is untouched */
	}
	was_recorded = block_recorded(old);
	p = __libc_realloc(old, size);
	if (!p)
		return NULL;
	forget_block(old);
	/*
	 * A new block, or the move of one taken while armed, is recorded;
	 * resizing a block from before arm takes nothing new.
	 */
	if (!old)
		record(FAILALLOC_BLOCK, p, size, n);
	else if (was_recorded)
		record(FAILALLOC_BLOCK, p, size, n >= 0 ? n : 0); /* even if disarmed */
	return p;
}

void *reallocarray(void *old, size_t nmemb, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(nmemb, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(old, bytes);
}

void free(void *p)
{
	forget_block(p);
	__libc_free(p);
}

static void *aligned(size_t alignment, size_t size)
{
	long n;
	void *p;

	if (attempt_fails(&n)) {
		errno = ENOMEM;
		return NULL;
	}
	p = scribbled(__libc_memalign(alignment, size), size, n);
	record(FAILALLOC_BLOCK, p, size, n);
	return p;
}

void *aligned_alloc(size_t alignment, size_t size)
{
	return aligned(alignment, size);
}

void *memalign(size_t alignment, size_t size)
{
	return aligned(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size)
{
	int saved = errno;
	void *p;

	if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0)
		return EINVAL;
	p = aligned(alignment, size);
	if (!p) {
		int err = errno;

		errno = saved; /* posix_memalign does not set errno */
		return err;
	}
	*out = p;
	return 0;
}

void *valloc(size_t size)
{
	long n;
	void *p;

	if (attempt_fails(&n)) {
		errno = ENOMEM;
		return NULL;
	}
	p = __libc_valloc(size);
	record(FAILALLOC_BLOCK, p, size, n);
	return p;
}

void *pvalloc(size_t size)
{
	long n;
	void *p;

	if (attempt_fails(&n)) {
		errno = ENOMEM;
		return NULL;
	}
	p = __libc_pvalloc(size);
	record(FAILALLOC_BLOCK, p, size, n);
	return p;
}

/* The length the kernel maps or unmaps for @len. */
static size_t page_round(size_t len)
{
	size_t page = (size_t)getpagesize(); /* no allocation, no system call */

	return (len + page - 1) & ~(page - 1);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	long n, ret;

	if (attempt_fails(&n)) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
#ifdef SYS_mmap2
	/* 32-bit kernels: SYS_mmap is old_mmap(struct *); mmap2 counts pages */
	ret = syscall(SYS_mmap2, addr, len, prot, flags, fd, (long)(off / 4096));
#else
	ret = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
#endif
	if (ret == -1)
		return MAP_FAILED; /* syscall() set errno */
	record(FAILALLOC_MAPPING, (void *)ret, page_round(len), n);
	return (void *)ret;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	return mmap(addr, len, prot, flags, fd, (off_t)off);
}

int munmap(void *addr, size_t len)
{
	long ret = syscall(SYS_munmap, addr, len);

	if (ret == 0)
		forget_range((uintptr_t)addr, page_round(len));
	return (int)ret;
}

/*
 * A thread is a resource that can run out too, and the stack cache that
 * glibc's fork() hands down usually lets pthread_create() succeed without
 * any malloc: so each pthread_create() is one attempt of its own, and the
 * failing one returns EAGAIN (as when the kernel has no room for a thread).
 */
typedef int pthread_create_fn(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static pthread_create_fn *real_pthread_create;

__attribute__((constructor)) static void find_pthread_create(void)
{
	/* once, before main, while disarmed: dlsym() may allocate */
	real_pthread_create = (pthread_create_fn *)dlsym(RTLD_NEXT, "pthread_create");
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
		   void *arg)
{
	long n;

	if (attempt_fails(&n))
		return EAGAIN;
	if (!real_pthread_create)
		return ENOSYS;
	return real_pthread_create(thread, attr, start, arg);
}

#else /* FAILALLOC_DISABLED */

bool failalloc_available(void)
{
	return false;
}

void failalloc_arm(long n)
{
	(void)n;
}

long failalloc_disarm(void)
{
	return 0;
}

size_t failalloc_live(void)
{
	return 0;
}

bool failalloc_first_live(struct failalloc_entry *out)
{
	(void)out;
	return false;
}

bool failalloc_overflowed(void)
{
	return false;
}

#endif /* FAILALLOC_DISABLED */
