/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel drop-in at work: the overcommit check of mm/util.c, the
 * committed-memory counter vm_committed_as and its accounting helpers, as
 * the kernel writes them. Only the include line differs. Threads then map
 * and unmap "pages" against a commit limit, and the program checks that
 * every page is accounted for once they finish.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <percpu/percpu_counter.h> /* was: #include <linux/percpu_counter.h> */

/* ---- kernel-style code, unchanged but for the include line ---- */

static struct percpu_counter vm_committed_as;
static s32 vm_committed_as_batch = 32;
static long vm_commit_limit_pages = 1L << 20; /* 4 GiB of 4 KiB pages */

static inline void vm_acct_memory(long pages)
{
	percpu_counter_add_batch(&vm_committed_as, pages, vm_committed_as_batch);
}

static inline void vm_unacct_memory(long pages)
{
	vm_acct_memory(-pages);
}

static long vm_commit_limit(void)
{
	return vm_commit_limit_pages;
}

/* mm/util.c, OVERCOMMIT_NEVER: the approximate read is the fast check */
static int __vm_enough_memory(long pages)
{
	long allowed;

	vm_acct_memory(pages);
	allowed = vm_commit_limit();
	if (percpu_counter_read_positive(&vm_committed_as) < allowed)
		return 0;
	vm_unacct_memory(pages);
	return -ENOMEM;
}

static int mmap_init(void)
{
	return percpu_counter_init(&vm_committed_as, 0, GFP_KERNEL);
}

/* ---- a userspace driver ---- */

#define THREADS 4
#define TRIES 20000
#define MAX_PAGES 256

struct mapper {
	pthread_t tid;
	unsigned int seed;
	long held;    /* pages this thread holds committed */
	long refused; /* requests __vm_enough_memory() turned down */
};

static unsigned int next_pages(unsigned int *state)
{
	*state = *state * 1103515245u + 12345u;
	return 1 + (*state >> 16) % MAX_PAGES;
}

/* asks for ten times more than the limit allows, so many requests are refused */
static void *mapper(void *arg)
{
	struct mapper *m = arg;

	for (int i = 0; i < TRIES; i++) {
		long pages = next_pages(&m->seed);

		if (__vm_enough_memory(pages) == 0)
			m->held += pages;
		else
			m->refused++;
	}
	return NULL;
}

static void *unmapper(void *arg)
{
	struct mapper *m = arg;

	while (m->held > 0) {
		long pages = m->held < MAX_PAGES ? m->held : MAX_PAGES;

		vm_unacct_memory(pages);
		m->held -= pages;
	}
	return NULL;
}

static void run(struct mapper *m, void *(*fn)(void *))
{
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&m[i].tid, NULL, fn, &m[i])) {
			perror("pthread_create");
			exit(1);
		}
	for (int i = 0; i < THREADS; i++)
		pthread_join(m[i].tid, NULL);
}

int main(void)
{
	struct mapper m[THREADS] = { 0 };
	long held = 0, refused = 0;
	s64 committed;
	int ok = 1;

	if (mmap_init() != 0) {
		fprintf(stderr, "kernel_style: percpu_counter_init failed\n");
		return 1;
	}
	for (int i = 0; i < THREADS; i++)
		m[i].seed = 7u * (unsigned int)i + 1u;
	run(m, mapper);
	for (int i = 0; i < THREADS; i++) {
		held += m[i].held;
		refused += m[i].refused;
	}
	committed = percpu_counter_sum(&vm_committed_as);
	printf("limit %ld pages; committed %lld pages (read %lld), %ld requests refused\n",
	       vm_commit_limit(), (long long)committed,
	       (long long)percpu_counter_read(&vm_committed_as), refused);
	/*
	 * The check admits a request when the approximate value is under the
	 * limit: each thread may overshoot by its request, plus the error bound.
	 */
	ok &= committed == held;
	ok &= refused > 0;
	ok &= committed <= vm_commit_limit() + (long)pcpu_counter_error_bound(&vm_committed_as.pcpu) +
				   THREADS * MAX_PAGES;
	/* precise comparison, as the kernel's percpu_counter_compare() */
	printf("compare(committed, limit) = %d\n",
	       percpu_counter_compare(&vm_committed_as, vm_commit_limit()));

	run(m, unmapper);
	committed = percpu_counter_sum(&vm_committed_as);
	printf("after unmapping everything: sum %lld, sum_positive %lld\n", (long long)committed,
	       (long long)percpu_counter_sum_positive(&vm_committed_as));
	ok &= committed == 0;
	ok &= percpu_counter_compare(&vm_committed_as, 0) == 0;

	percpu_counter_destroy(&vm_committed_as);
	percpu_counter_destroy(&vm_committed_as); /* idempotent, unlike the kernel's */
	printf("%s\n", ok ? "all pages accounted for" : "ACCOUNTING ERROR");
	return ok ? 0 : 1;
}
