/* SPDX-License-Identifier: MIT */
/*
 * Programming errors that a void call cannot report: with assertions on
 * (no NDEBUG) they abort with a message; in release builds they are ignored
 * and the call does nothing, as the public headers document.
 */
#ifndef PCPU_LIB_MISUSE_H
#define PCPU_LIB_MISUSE_H

#include <stdbool.h>

#ifdef NDEBUG
#define pcpu_misuse(call, what) ((void)(call), (void)(what))
#else
#define pcpu_misuse(call, what) pcpu_misuse_abort(call, what)
#endif

__attribute__((noreturn, cold)) void pcpu_misuse_abort(const char *call, const char *what);

#endif /* PCPU_LIB_MISUSE_H */
