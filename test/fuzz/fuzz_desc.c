/* SPDX-License-Identifier: MIT */
/*
 * Descriptions from the input into every creation call: counter options,
 * a registered counter and gauge (name, help, unit, kind, labels), a
 * histogram (bounds, scale, labels, native buckets), a family (label names, maximum of
 * children, options, bounds), a stat set (items: names, kinds, groups,
 * accuracy, floors, help, flags), a charge's options and a shared
 * segment's descriptor. Each call gives 0 or a negative errno (NULL and
 * errno), never a crash; whatever was made is exposed in every format,
 * which must succeed, then destroyed.
 */
#define _GNU_SOURCE
#include <percpu/charge.h>
#include <percpu/counter.h>
#include <percpu/family.h>
#include <percpu/gauge.h>
#include <percpu/histogram.h>
#include <percpu/metrics.h>
#include <percpu/shared.h>
#include <percpu/stat.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

#define NSTR 8

static bool errno_ok(int e)
{
	return e == EINVAL || e == EEXIST || e == ENOMEM || e == E2BIG || e == ERANGE ||
	       e == ENOTSUP;
}

/* A value of the input, often small or at an edge. */
static int64_t num(struct fuzz_in *in)
{
	static const int64_t edges[] = { 0, 1, -1, 2, 64, INT32_MAX, INT64_MAX, INT64_MIN,
					 PCPU_COUNTER_MAX_BATCH, PCPU_COUNTER_MAX_BATCH + 1,
					 PCPU_COUNTER_MAX_ACCURACY, PCPU_CHARGE_MAX,
					 PCPU_CHARGE_MAX + 1, PCPU_SHARED_MAX_THRESH + 1 };
	uint8_t how = fuzz_u8(in);

	switch (how & 3) {
	case 0:
		return (int8_t)fuzz_u8(in);
	case 1:
		return edges[(how >> 2) % (sizeof(edges) / sizeof(edges[0]))];
	case 2:
		return (int32_t)fuzz_u32(in);
	default:
		return fuzz_i64(in);
	}
}

static void expose_all(void)
{
	/* Prometheus text, OpenMetrics (both versions) and protobuf */
	for (int f = 0; f <= PCPU_METRICS_OPENMETRICS_0_0_1; f++) {
		char *text = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&text, &len);

		FUZZ_CHECK(out, "open_memstream");
		FUZZ_CHECK(pcpu_metrics_write(out, f) == 0, "write %d", f);
		fclose(out);
		free(text);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	char str[NSTR][80];
	const char *labels[2 * 3 + 1], *names[4];
	int64_t bounds[8];
	struct pcpu_stat_item items[4];
	struct pcpu_counter_options opts;
	struct pcpu_counter c, g;
	struct pcpu_histogram *h;
	struct pcpu_family *fam;
	struct pcpu_stat *set;
	struct pcpu_charge ch;
	struct pcpu_histogram_native native;
	bool with_native;
	struct pcpu_shared *seg;
	uint32_t nl, nb, ni;
	int err, c_ok, g_ok;

	for (int i = 0; i < NSTR; i++)
		fuzz_str(&in, str[i], sizeof(str[i]));
	/* str[0..1] name and help, str[2] unit, str[3..7] labels and items */
	nl = fuzz_u8(&in) % 4;
	for (uint32_t k = 0; k < nl; k++) {
		labels[2 * k] = str[3 + k];
		labels[2 * k + 1] = str[4 + k];
	}
	labels[2 * nl] = NULL;
	nb = fuzz_u8(&in) % 9;
	for (uint32_t k = 0; k < nb; k++)
		bounds[k] = num(&in);
	opts = (struct pcpu_counter_options){ (int32_t)num(&in), num(&in), num(&in) };

	err = pcpu_counter_init_opts(&c, num(&in), &opts);
	FUZZ_CHECK(err == 0 || err == -EINVAL || err == -ENOMEM, "init_opts: %d", err);
	if (err)
		FUZZ_CHECK(pcpu_counter_init(&c, 0) == 0, "init");
	c_ok = pcpu_counter_register(&c, &(struct pcpu_metric_desc){
		.name = str[0], .help = str[1], .unit = str[2],
		.kind = (enum pcpu_metric_kind)(fuzz_u8(&in) % 6), .labels = nl ? labels : NULL });
	FUZZ_CHECK(c_ok <= 0 && errno_ok(-c_ok ? -c_ok : EINVAL), "register: %d", c_ok);
	FUZZ_CHECK(pcpu_counter_init(&g, -5) == 0, "init");
	g_ok = pcpu_counter_register(&g, &(struct pcpu_metric_desc){
		.name = str[1], .help = str[0], .kind = PCPU_METRIC_GAUGE,
		.labels = nl ? labels + 2 : NULL });
	FUZZ_CHECK(g_ok <= 0 && errno_ok(-g_ok ? -g_ok : EINVAL), "register: %d", g_ok);

	/* native buckets: a schema near its range, a zero threshold, a top */
	with_native = fuzz_u8(&in) & 1;
	native = (struct pcpu_histogram_native){ .schema = (int8_t)fuzz_u8(&in) % 11,
						 .reserved = fuzz_u8(&in) == 0xff,
						 .zero_threshold = num(&in), .max = num(&in) };
	h = pcpu_histogram_create(&(struct pcpu_histogram_desc){
		.name = str[2], .help = str[1], .unit = fuzz_u8(&in) & 1 ? str[3] : NULL,
		.labels = nl ? labels : NULL, .bounds = bounds, .nr_bounds = nb,
		.scale = num(&in), .native = with_native ? &native : NULL });
	FUZZ_CHECK(h || errno_ok(errno), "histogram: errno %d", errno);
	if (h)
		pcpu_histogram_observe(h, num(&in));

	for (uint32_t k = 0; k < nl; k++)
		names[k] = labels[2 * k];
	names[nl] = NULL;
	fam = pcpu_family_create(&(struct pcpu_family_desc){
		.name = str[3], .help = str[4], .unit = fuzz_u8(&in) & 1 ? str[2] : NULL,
		.kind = (enum pcpu_metric_kind)(fuzz_u8(&in) % 5), .label_names = names,
		.max_children = (uint32_t)num(&in), .opts = fuzz_u8(&in) & 1 ? &opts : NULL,
		.bounds = bounds, .nr_bounds = nb, .scale = num(&in),
		.native = with_native && fuzz_u8(&in) & 1 ? &native : NULL });
	FUZZ_CHECK(fam || errno_ok(errno), "family: errno %d", errno);
	if (fam) {
		const char *values[4] = { str[5], str[6], str[7], NULL };
		struct pcpu_counter *child;

		values[nl] = NULL;
		child = pcpu_family_get(fam, values);
		FUZZ_CHECK(child || errno_ok(errno), "family_get: errno %d", errno);
		if (child)
			pcpu_counter_add(child, 1);
	}

	ni = fuzz_u8(&in) % 5;
	for (uint32_t k = 0; k < ni; k++)
		items[k] = (struct pcpu_stat_item){
			.name = str[3 + k], .group = fuzz_u32(&in), .accuracy = (int32_t)num(&in),
			.floor = num(&in), .help = str[1],
			.kind = (enum pcpu_metric_kind)(fuzz_u8(&in) % 5) };
	set = pcpu_stat_create(&(struct pcpu_stat_desc){ .items = items, .nr_items = ni,
							 .flags = fuzz_u8(&in) % 4 });
	FUZZ_CHECK(set || errno_ok(errno), "stat_create: errno %d", errno);
	if (set) {
		err = pcpu_stat_register(set, fuzz_u8(&in) & 1 ? str[0] : NULL);
		FUZZ_CHECK(err <= 0 && errno_ok(err ? -err : EINVAL), "stat_register: %d", err);
	}

	err = pcpu_charge_init(&ch, &(struct pcpu_charge_options){ num(&in), num(&in) });
	FUZZ_CHECK(err == 0 || err == -EINVAL || err == -ENOMEM, "charge_init: %d", err);
	if (!err)
		pcpu_charge_destroy(&ch);

	if (fuzz_u8(&in) & 1) {
		char seg_name[64];
		struct pcpu_shared_more more[4];

		for (uint32_t k = 0; k < ni; k++)
			more[k] = (struct pcpu_shared_more){
				.labels = fuzz_u8(&in) & 1 ? labels : NULL, .bounds = bounds,
				.nr_bounds = fuzz_u8(&in) % (nb + 1), .scale = num(&in) };
		snprintf(seg_name, sizeof(seg_name), "/pcpu-fuzz-desc-%ld", (long)getpid());
		shm_unlink(seg_name);
		seg = pcpu_shared_create(fuzz_u8(&in) & 1 ? seg_name : NULL,
					 &(struct pcpu_shared_desc){
						 .items = items, .nr_items = ni,
						 .flags = fuzz_u8(&in) % 3, .mode = fuzz_u32(&in),
						 .more = fuzz_u8(&in) & 1 ? more : NULL });
		FUZZ_CHECK(seg || errno_ok(errno), "shared_create: errno %d", errno);
		if (seg) {
			char *text = NULL;
			size_t len = 0;
			FILE *out = open_memstream(&text, &len);

			FUZZ_CHECK(out && pcpu_shared_write(seg, out, PCPU_METRICS_OPENMETRICS) == 0,
				   "shared_write");
			fclose(out);
			free(text);
			pcpu_shared_close(seg);
		}
		shm_unlink(seg_name);
	}

	expose_all();
	pcpu_stat_destroy(set);
	pcpu_family_destroy(fam);
	pcpu_histogram_destroy(h);
	pcpu_counter_destroy(&g);
	pcpu_counter_destroy(&c);
	return 0;
}
