/* SPDX-License-Identifier: MIT */
/*
 * Says which update path this process takes (.ci/aarch64-system.sh prints
 * it from the arm64 kernel's console, where the suite must run on rseq):
 * "percpu-mode: rseq" or "percpu-mode: atomic", then an exact count of
 * adds through that path as a check that it adds.
 */
#include <stdio.h>

#include <percpu/counter.h>

/* glibc's, weak: absent before 2.35 */
extern const unsigned int __rseq_size __attribute__((weak));

int main(void)
{
	struct pcpu_counter c;
	enum pcpu_cpu_mode mode = pcpu_cpu_setup();

	if (pcpu_counter_init(&c, 0) != 0)
		return 1;
	for (int i = 0; i < 100000; i++)
		pcpu_counter_add(&c, 1);
	printf("percpu-mode: %s (glibc __rseq_size %u, %u CPUs online, sum %lld)\n",
	       mode == PCPU_CPU_RSEQ ? "rseq" : "atomic", &__rseq_size ? __rseq_size : 0,
	       pcpu_cpu_online(), (long long)pcpu_counter_sum(&c));
	pcpu_counter_destroy(&c);
	return 0;
}
