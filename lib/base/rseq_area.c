/* SPDX-License-Identifier: MIT */
/*
 * The rseq area of each thread, where the inline rseq path finds its CPU
 * number and arms its critical sections.
 *
 * glibc >= 2.35 registers one for every thread and says where
 * (__rseq_offset, __rseq_size > 0). Where it did not (older glibc, the
 * tunable glibc.pthread.rseq=0, musl), the library registers its own, as
 * librseq does: an initial-exec TLS area, so that its offset from the
 * thread pointer is the same in every thread and the inline path reads one
 * offset, __pcpu_rseq_offset, whoever registered. Each thread registers
 * lazily, on its first slow-path add (until then its area says cpu_id -1,
 * and every inline add of it takes the slow path, which is always correct),
 * and unregisters in a thread-specific destructor, before its TLS goes
 * away; the kernel then sets cpu_id back to -1, so an add from a later
 * destructor takes the slow path again. A fork()ed child inherits the
 * registration of the forking thread, and its TLS.
 *
 * Never two registrants: glibc's area wins when it has one; and a thread
 * that someone else registered (another library, EBUSY) keeps our area
 * unregistered and takes the slow path for good. Updates are never lost
 * either way: an unregistered thread's adds go to the central value and
 * its folds are compare-and-swaps, as any remote fold's.
 *
 * The offset is const for callers (<percpu/arch/x86_64.h>, aarch64.h), as glibc's
 * __rseq_offset is, so that a caller's loop of adds keeps it in a register
 * instead of loading it again after each sequence's memory clobber (0.3
 * lost 10 % of its add to that load). This file alone defines it, writable
 * (the header's const declaration is renamed away below: writing an object
 * defined const would be undefined), and writes it once, in a constructor
 * that runs before the program's own constructors and main(), so no add,
 * wherever a compiler hoisted its load, can see another value. Both values
 * are known by then: glibc registers before any constructor runs, and the
 * library's own area is initial-exec TLS, at the same offset in every
 * thread whether or not it is registered yet.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#define __pcpu_rseq_offset __pcpu_rseq_offset_const_view
#include <percpu/cpu.h>
#undef __pcpu_rseq_offset

#include "rseq_area.h"

#if PCPU_ARCH_HAVE_RSEQ_ADD

/* glibc's, weak: absent before 2.35 and on other libcs */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

/* struct rseq of linux/rseq.h: the original 32 bytes, 32-byte aligned */
struct own_area {
	uint32_t cpu_id_start;
	int32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
	uint32_t pad[3];
} __attribute__((aligned(32)));

_Static_assert(offsetof(struct own_area, cpu_id) == PCPU_RSEQ_CPU_ID_OFFSET, "cpu_id");
_Static_assert(offsetof(struct own_area, rseq_cs) == PCPU_RSEQ_CS_OFFSET, "rseq_cs");
_Static_assert(sizeof(struct own_area) == 32, "the kernel's original struct rseq");

#define RSEQ_FLAG_UNREGISTER 1
/* linux/rseq.h: RSEQ_CPU_ID_UNINITIALIZED */
#define CPU_ID_UNREGISTERED (-1)

static __thread struct own_area own __attribute__((tls_model("initial-exec"))) = {
	.cpu_id = CPU_ID_UNREGISTERED,
};

enum own_state { OWN_UNTRIED, OWN_REGISTERED, OWN_DONE };
static __thread unsigned char own_state __attribute__((tls_model("initial-exec")));

PCPU_EXPORT long __pcpu_rseq_offset;
static bool libc_area; /* glibc registered: its area, chosen by choose_area() */
static pthread_once_t choose_once = PTHREAD_ONCE_INIT;
static enum pcpu_rseq_owner owner;
static pthread_key_t own_key;

static long sys_rseq(struct own_area *area, int flags)
{
	return syscall(SYS_rseq, area, (unsigned int)sizeof(*area), flags, PCPU_RSEQ_SIG);
}

/* The thread's TLS is about to go: the kernel must stop writing there. */
static void own_unregister(void *area)
{
	sys_rseq(area, RSEQ_FLAG_UNREGISTER);
	own_state = OWN_DONE;
}

/* Registers the calling thread's own area, once per thread. */
static bool own_register(void)
{
	if (pcpu_likely(own_state != OWN_UNTRIED))
		return own_state == OWN_REGISTERED && own.cpu_id >= 0;
	own_state = OWN_DONE; /* one try per thread, whatever happens */
	if (pthread_setspecific(own_key, &own) != 0)
		return false;
	if (sys_rseq(&own, 0) != 0) {
		pthread_setspecific(own_key, NULL);
		return false;
	}
	own_state = OWN_REGISTERED;
	return true;
}

bool pcpu_rseq_area_register(void)
{
	enum pcpu_rseq_owner o = pcpu_rseq_area_owner();

	return o == PCPU_RSEQ_OWN ? own_register() : o == PCPU_RSEQ_LIBC;
}

static int32_t cpu_id_at(long offset)
{
	return __atomic_load_n((int32_t *)(void *)((char *)__builtin_thread_pointer() + offset +
						   PCPU_RSEQ_CPU_ID_OFFSET),
			       __ATOMIC_RELAXED);
}

/* glibc's area if it registered one, else the library's own: the offset. */
static void choose_area(void)
{
	libc_area = &__rseq_size != NULL && __rseq_size > 0 && cpu_id_at(__rseq_offset) >= 0;
	__pcpu_rseq_offset = libc_area ? (long)__rseq_offset :
		(long)((char *)&own - (char *)__builtin_thread_pointer());
}

/*
 * 101: the first priority a program may use, so that in a static link too
 * the offset is fixed before the constructors of the program's own objects.
 */
__attribute__((constructor(101))) static void fix_offset(void)
{
	pthread_once(&choose_once, choose_area);
}

enum pcpu_rseq_owner pcpu_rseq_area_setup(void)
{
	pthread_once(&choose_once, choose_area); /* a constructor ran before ours */
	if (libc_area) {
		__atomic_store_n(&owner, PCPU_RSEQ_LIBC, __ATOMIC_RELEASE);
	} else if (pthread_key_create(&own_key, own_unregister) == 0) {
		/* no rseq in the kernel (valgrind, qemu-user), or someone else's */
		if (own_register())
			__atomic_store_n(&owner, PCPU_RSEQ_OWN, __ATOMIC_RELEASE);
		else
			pthread_key_delete(own_key);
	}
	return pcpu_rseq_area_owner();
}

/* Set once, before any object takes the rseq path; read by any thread. */
enum pcpu_rseq_owner pcpu_rseq_area_owner(void)
{
	return __atomic_load_n(&owner, __ATOMIC_ACQUIRE);
}

void pcpu_rseq_area_disarm(void)
{
	if (owner != PCPU_RSEQ_NONE)
		__atomic_store_n((uint64_t *)(void *)((char *)__builtin_thread_pointer() +
						      __pcpu_rseq_offset + PCPU_RSEQ_CS_OFFSET),
				 0, __ATOMIC_RELAXED);
}

#else /* no rseq sequences on this architecture */

enum pcpu_rseq_owner pcpu_rseq_area_setup(void)
{
	return PCPU_RSEQ_NONE;
}

enum pcpu_rseq_owner pcpu_rseq_area_owner(void)
{
	return PCPU_RSEQ_NONE;
}

bool pcpu_rseq_area_register(void)
{
	return false;
}

void pcpu_rseq_area_disarm(void)
{
}

#endif
