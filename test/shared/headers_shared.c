/* SPDX-License-Identifier: MIT */
/*
 * <percpu/shared.h> compiles as strict ISO C (c99 and c11, -pedantic
 * -Werror) and as C++ (this file again, as headers_shared.cpp), and its
 * inline add links: the segment's side of test/abi's header tests.
 */
#include <percpu/shared.h>

int main(void)
{
	static const struct pcpu_stat_item items[] = { { "pedantic_hits", 0, 0, 0, "Hits.",
							 PCPU_METRIC_COUNTER, 0 } };
	struct pcpu_shared_desc d = { items, 1, 0, 0, 0, 0 };
	struct pcpu_shared *s = pcpu_shared_create(NULL, &d);
	int ok;

	if (!s)
		return 1;
	pcpu_shared_add(s, 0, 3);
	ok = pcpu_shared_sum(s, 0) == 3 && pcpu_shared_lookup(s, "pedantic_hits") == 0;
	pcpu_shared_close(s);
	return ok ? 0 : 1;
}
