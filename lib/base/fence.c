/* SPDX-License-Identifier: MIT */
/*
 * The rseq fence (see cpu_internal.h): membarrier(2)'s
 * MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, which restarts every restartable
 * sequence in progress on the process's other CPUs. Made through
 * syscall(2) (the charge race test interposes it to see each fence).
 */
#define _GNU_SOURCE /* syscall() */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu_internal.h"
#include "misuse.h"

/* membarrier(2)'s commands, as <linux/membarrier.h> numbers them (Linux 5.10) */
#define FENCE_CMD_QUERY 0
#define FENCE_CMD_RSEQ (1 << 7)
#define FENCE_CMD_REGISTER_RSEQ (1 << 8)

int pcpu_fence_state = PCPU_FENCE_UNKNOWN;
static pthread_once_t fence_once = PTHREAD_ONCE_INIT;

static long membarrier(int cmd)
{
	return syscall(SYS_membarrier, cmd, 0u, 0);
}

static void setup_fence(void)
{
	long cmds = membarrier(FENCE_CMD_QUERY);
	int state = 0;

	if (cmds < 0)
		state = -errno;
	else if (!(cmds & FENCE_CMD_RSEQ))
		state = -ENOSYS;
	else if (membarrier(FENCE_CMD_REGISTER_RSEQ) != 0)
		state = -errno;
	__atomic_store_n(&pcpu_fence_state, state, __ATOMIC_RELEASE);
}

int pcpu_cpu_fence_setup_once(void)
{
	pthread_once(&fence_once, setup_fence);
	return __atomic_load_n(&pcpu_fence_state, __ATOMIC_ACQUIRE);
}

void pcpu_cpu_fence(void)
{
	/*
	 * The registration belongs to the address space, and a forked child's
	 * is a copy; register again in case a kernel did not copy it. Going on
	 * without the fence would break a promise silently: stop instead.
	 */
	if (membarrier(FENCE_CMD_RSEQ) != 0 &&
	    (membarrier(FENCE_CMD_REGISTER_RSEQ) != 0 || membarrier(FENCE_CMD_RSEQ) != 0))
		pcpu_misuse_abort("pcpu_cpu_fence", strerror(errno));
}
