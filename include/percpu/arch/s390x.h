/* SPDX-License-Identifier: MIT */
/*
 * s390x: no restartable sequence yet (arch/generic.h's atomic path), but a
 * 16-byte compare-and-swap of its own: CDSG in asm, as the kernel's
 * arch_cmpxchg128(). The builtin inlines CDSG only where GCC can prove the
 * pair 16-aligned (the ABI aligns __int128 to 8), and elsewhere, at -O0
 * say, calls libatomic, which the library does not link.
 */
#ifndef PERCPU_ARCH_S390X_H
#define PERCPU_ARCH_S390X_H

#include <stdint.h>

#ifndef PERCPU_ARCH_H
#error "Never include <percpu/arch/s390x.h> directly; include <percpu/arch.h>"
#endif

/*
 * Internal to the library: see arch/x86_64.h. The pair is compared and
 * stored as the bytes it is in memory, so the order of its halves is the
 * same on this big-endian machine as anywhere.
 */
#define PCPU_ARCH_HAVE_CAS_PAIR 1
PCPU_INLINE int pcpu_arch_cas_pair(int64_t *pair, int64_t expected[2], int64_t lo, int64_t hi)
{
	__extension__ typedef unsigned __int128 pcpu_u128;
	pcpu_u128 want, desired, now;
	int64_t desired_pair[2] = { lo, hi };

	__builtin_memcpy(&want, expected, sizeof(want));
	__builtin_memcpy(&desired, desired_pair, sizeof(desired));
	now = want;
	__asm__ __volatile__("cdsg %[now],%[desired],%[mem]"
			     : [now] "+d"(now), [mem] "+QS"(*(pcpu_u128 *)(void *)pair)
			     : [desired] "d"(desired)
			     : "memory", "cc");
	if (now == want)
		return 1;
	__builtin_memcpy(expected, &now, sizeof(now));
	return 0;
}

#endif /* PERCPU_ARCH_S390X_H */
