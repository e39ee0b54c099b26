/* SPDX-License-Identifier: MIT */
/*
 * The exposition formats, inside: the writer that the registry's
 * exposition (pcpu_metrics_write()) and a shared segment's
 * (shared_expose.c) share, over any walk of samples, and the protobuf
 * writer it hands PCPU_METRICS_PROTOBUF to.
 */
#ifndef PCPU_METRICS_FORMAT_INTERNAL_H
#define PCPU_METRICS_FORMAT_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include <percpu/metrics.h>

/* Calls @cb(sample, @arg) for each sample to write, families contiguous. */
typedef int (*pcpu_sample_walk)(int (*cb)(const struct pcpu_metric_sample *, void *), void *arg,
				void *ctx);

/*
 * Writes the samples @walk(..., @ctx) gives to @out in format @f, as
 * pcpu_metrics_write() writes the registry's (exposition.c).
 */
int pcpu_exposition_write(FILE *out, enum pcpu_metrics_format f, pcpu_sample_walk walk,
			  void *ctx);

/*
 * Writes the samples @walk(..., @ctx) gives to @out as Prometheus's
 * delimited protobuf MetricFamily messages (exposition_proto.c): 0, what
 * the walk returned, or -ENOMEM. @out is pcpu_exposition_write()'s
 * memory stream: it checks the stream's errors.
 */
int pcpu_exposition_write_proto(FILE *out, pcpu_sample_walk walk, void *ctx);

/*
 * The latest exemplar of fine buckets @from to @to of sample @m (NULL if
 * none has one), for the classic bucket that ends with fine bucket @to,
 * in every format: a classic bucket of a native histogram carries it, as
 * client_golang's do, because Prometheus up to 2.4x reads a histogram's
 * exemplars from its classic buckets only and ignores the native list
 * (2.42 stored none of a native histogram's); the text formats have no
 * fine buckets to carry the others.
 */
static inline const struct pcpu_exemplar *pcpu_latest_exemplar(const struct pcpu_metric_sample *m,
							       uint32_t from, uint32_t to)
{
	const struct pcpu_exemplar *best = NULL;

	for (uint32_t i = from; m->exemplars && i <= to; i++)
		if (m->exemplars[i].labels &&
		    (!best || m->exemplars[i].timestamp >= best->timestamp))
			best = &m->exemplars[i];
	return best;
}

#endif /* PCPU_METRICS_FORMAT_INTERNAL_H */
