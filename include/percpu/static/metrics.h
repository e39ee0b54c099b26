/* SPDX-License-Identifier: MIT */
/*
 * Internal to <percpu/metrics.h>: what its file-scope definitions
 * (PCPU_COUNTER_DEFINE() and its kin) run.
 * Not API: these names may change in any release.
 */
#ifndef PERCPU_STATIC_METRICS_H
#define PERCPU_STATIC_METRICS_H

#ifndef PERCPU_METRICS_H
#error "include <percpu/metrics.h>, not <percpu/static/metrics.h>"
#endif

/*
 * What a file-scope definition runs before main()
 * (or when its plugin is loaded).
 */
PCPU_EXPORT void __pcpu_metrics_define(struct pcpu_counter *c, const char *name,
				       const char *help, enum pcpu_metric_kind kind);

/* The same, from a whole description. */
PCPU_EXPORT void __pcpu_metrics_define_desc(struct pcpu_counter *c,
					    const struct pcpu_metric_desc *d);

/*
 * What a file-scope definition runs at exit (or
 * unload): destroys @c, and clears the calling thread's rseq critical
 * section, which may point into the object being unloaded.
 */
PCPU_EXPORT void __pcpu_metrics_undefine(struct pcpu_counter *c);

#endif /* PERCPU_STATIC_METRICS_H */
