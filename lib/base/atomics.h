/* SPDX-License-Identifier: MIT */
/*
 * Shorthands for the library's relaxed and acquire accesses of words that
 * other threads (or processes) read or write at the same time. Everything
 * with a stronger order is written out where it stands, with its reason.
 */
#ifndef PCPU_LIB_ATOMICS_H
#define PCPU_LIB_ATOMICS_H

#define LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

#endif /* PCPU_LIB_ATOMICS_H */
