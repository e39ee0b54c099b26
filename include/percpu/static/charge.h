/* SPDX-License-Identifier: MIT */
/*
 * Internal to <percpu/charge.h>: the slow paths of its inline try and
 * uncharge, and their check.
 * Not API: these names may change in any release.
 */
#ifndef PERCPU_STATIC_CHARGE_H
#define PERCPU_STATIC_CHARGE_H

#ifndef PERCPU_CHARGE_H
#error "include <percpu/charge.h>, not <percpu/static/charge.h>"
#endif

/* The slow paths of try and uncharge. */
PCPU_EXPORT bool __pcpu_charge_try_slow(struct pcpu_charge *ch, int64_t amount);
PCPU_EXPORT void __pcpu_charge_uncharge_slow(struct pcpu_charge *ch, int64_t amount);

/*
 * Can the inline paths use @ch for @amount (a
 * magnitude up to half the cap)?
 */
PCPU_INLINE bool __pcpu_charge_fast(const struct pcpu_charge *ch, int64_t amount)
{
	return pcpu_likely(ch != NULL && ch->slots != NULL && amount >= 0 &&
			   amount <= __atomic_load_n(&ch->half, __ATOMIC_RELAXED));
}

#endif /* PERCPU_STATIC_CHARGE_H */
