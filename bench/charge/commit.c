/* SPDX-License-Identifier: MIT */
/* percpu-bench's commit-near through its own runner (see commit.h). */
#include "commit.h"
#include "runner.h"

const char *const commit_impl_names[COMMIT_IMPLS] = {
	"percpu", "atomic", "kernel", "thread",
};

_Static_assert(COMMIT_IMPLS == NR_IMPLS, "percpu-bench's implementations");

int commit_near_measure(unsigned int impl, unsigned int threads, unsigned int duration_ms,
			struct commit_sample *out)
{
	struct run_config cfg = { .duration_ms = duration_ms, .pin = false };
	struct run_result r;
	int err = runner_run(WL_COMMIT_NEAR, (enum bench_impl)impl, threads, &cfg, &r);

	if (err)
		return err;
	out->mops = r.writer_mops;
	out->cpu_share = r.cpu_share;
	out->exact = r.exact;
	return 0;
}
