/* SPDX-License-Identifier: MIT */
/* The end of a documented misuse (see misuse.h). */
#include <stdio.h>
#include <stdlib.h>

#include "misuse.h"

void pcpu_misuse_abort(const char *call, const char *what)
{
	fprintf(stderr, "percpu: %s: %s\n", call, what);
	abort();
}
