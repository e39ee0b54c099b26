/* SPDX-License-Identifier: MIT */
/*
 * The record of file-scope definitions that failed (PCPU_COUNTER_DEFINE()
 * and its kin, metrics_register.c): their count, and the first failure,
 * which every exposition reports (metrics_list.c, metrics_serve.c). It calls
 * nothing of the metrics, so that both sides can call it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <percpu/metrics.h>

#include "list/list_internal.h"

/* File-scope definitions that failed (pcpu_metrics_define_errors()). */
static unsigned int define_errors;
/* The first failure: its negative errno, and what it was, for every scrape */
static int define_err;
static char define_what[256];

/*
 * A definition that failed must be impossible to miss (issue 24: a name
 * defined in two files hid the second's adds): it is said on stderr at
 * once, the only channel a constructor has, and from then on every
 * exposition fails with its errno (pcpu_metrics_foreach()), so that the
 * first scrape reports it (HTTP 500 with this text).
 */
void pcpu_metrics_define_failed(const char *name, int err)
{
	int expected = 0;

	__atomic_fetch_add(&define_errors, 1, __ATOMIC_RELAXED);
	if (!__atomic_compare_exchange_n(&define_err, &expected, err, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	snprintf(define_what, sizeof(define_what),
		 "the file-scope definition of metric \"%s\" failed: %s%s",
		 name ? name : "(null)", strerror(-err),
		 err == -EEXIST ? " (the name is defined twice, or registered)" : "");
	fprintf(stderr, "percpu: %s; every exposition fails until the program is fixed\n",
		define_what);
}

int pcpu_metrics_define_failure(const char **what)
{
	int err = __atomic_load_n(&define_err, __ATOMIC_ACQUIRE);

	if (what)
		*what = err ? define_what : NULL;
	return err;
}

PCPU_EXPORT unsigned int pcpu_metrics_define_errors(void)
{
	return __atomic_load_n(&define_errors, __ATOMIC_RELAXED);
}
