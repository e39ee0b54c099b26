/* SPDX-License-Identifier: MIT */
/*
 * Reads of a shared segment (see <percpu/shared.h>): loads only, so that
 * they work on a read-only mapping and never wait. sum() adds up values,
 * which only adds change, so no fold, live or dead, can make it count
 * anything twice or miss it. Walks visit the armed rows [armed-segment]:
 * a row outside the set holds nothing, or a slow path's add still in
 * flight, whose row is counted before any walk can see it.
 *
 * A segment cut short: sum() and snapshot() load from every CPU's row, the
 * pages furthest into the file, so on a read-only handle they first see
 * that the file still covers the mapping: one fstat(), 1-2 us on a small
 * VM, a hundred times a sum() over a few CPUs, so a writer (which trusts
 * the other writers anyway) does not pay it. A truncation after that
 * check, or one into the first pages, which read() and error_bound() load
 * from without a check (one load each), still faults: the header says so.
 */
#define _GNU_SOURCE /* as every shared_*.c: one view of <pthread.h> */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "base/atomics.h"
#include "base/fold.h"
#include "base/misuse.h"
#include "base/policy.h"
#include "shared_internal.h"

int pcpu_shared_intact(const struct shared_handle *h)
{
	struct stat st;

	/* fstat() fails only on a descriptor closed behind our back: no telling */
	if (h->fd < 0 || h->writable || fstat(h->fd, &st) != 0)
		return 0;
	return (uint64_t)st.st_size >= h->map_size ? 0 : -ENXIO;
}

PCPU_EXPORT int64_t pcpu_shared_read(const struct pcpu_shared *s, unsigned int item)
{
	if (!shared_usable(s, item, "pcpu_shared_read"))
		return 0;
	return __atomic_load_n(&shared_handle(s)->central[item].value, __ATOMIC_ACQUIRE);
}

static uint64_t bound_of(const struct shared_handle *h, unsigned int item)
{
	return pcpu_policy_bound(__atomic_load_n(&h->central[item].threshold_max, __ATOMIC_SEQ_CST),
				 shared_armed_rows(h));
}

PCPU_EXPORT uint64_t pcpu_shared_error_bound(const struct pcpu_shared *s, unsigned int item)
{
	if (!shared_usable(s, item, "pcpu_shared_error_bound"))
		return 0;
	return bound_of(shared_handle(s), item);
}

/* The values of @item's slots in the armed rows [exact-sum]. */
static uint64_t sum_armed(const struct shared_handle *h, unsigned int item)
{
	uint64_t sum = 0;
	unsigned int row;

	shared_for_each_armed(h, row)
		sum += (uint64_t)LOAD_ACQ(shared_pair(h, item, row));
	return sum;
}

PCPU_EXPORT int64_t pcpu_shared_sum(const struct pcpu_shared *s, unsigned int item)
{
	const struct shared_handle *h = shared_handle(s);
	int err;

	if (!shared_usable(s, item, "pcpu_shared_sum"))
		return 0;
	err = pcpu_shared_intact(h);
	if (err) {
		errno = -err;
		return 0;
	}
	return (int64_t)sum_armed(h, item);
}

/* The exact values of every slot (nr_items of them) into @values: 0 or -ENXIO. */
static int snapshot_slots(const struct shared_handle *h, int64_t *values)
{
	int err = pcpu_shared_intact(h);
	unsigned int row;

	if (err)
		return err;
	memset(values, 0, h->nr_items * sizeof(*values));
	/* row by row: each CPU's page once */
	shared_for_each_armed(h, row)
		for (unsigned int slot = 0; slot < h->nr_items; slot++)
			values[slot] = (int64_t)((uint64_t)values[slot] +
						 (uint64_t)LOAD(shared_pair(h, slot, row)));
	return 0;
}

PCPU_EXPORT int pcpu_shared_snapshot(const struct pcpu_shared *s, int64_t *values,
				     uint64_t *bounds)
{
	const struct shared_handle *h = shared_handle(s);
	int64_t slots[PCPU_SHARED_MAX_ITEMS];
	int err;

	if (!s || !values)
		return -EINVAL;
	/* the items are the first slots; the caller's array holds only them */
	err = snapshot_slots(h, slots);
	if (err)
		return err;
	memcpy(values, slots, h->nr_public * sizeof(*values));
	if (bounds)
		for (unsigned int item = 0; item < h->nr_public; item++)
			bounds[item] = bound_of(h, item);
	return 0;
}

PCPU_EXPORT unsigned int pcpu_shared_count(const struct pcpu_shared *s)
{
	return s ? shared_handle(s)->nr_public : 0;
}

static const char *string_of(const struct pcpu_shared *s, unsigned int item, bool help)
{
	const struct shared_handle *h = shared_handle(s);

	if (!s || item >= h->nr_public) {
		errno = s ? ERANGE : EINVAL;
		return NULL;
	}
	return h->strings + (help ? h->items[item].help_off : h->items[item].name_off);
}

PCPU_EXPORT const char *pcpu_shared_name(const struct pcpu_shared *s, unsigned int item)
{
	return string_of(s, item, false);
}

PCPU_EXPORT const char *pcpu_shared_help(const struct pcpu_shared *s, unsigned int item)
{
	return string_of(s, item, true);
}

PCPU_EXPORT enum pcpu_metric_kind pcpu_shared_kind(const struct pcpu_shared *s,
						   unsigned int item)
{
	if (!s || item >= shared_handle(s)->nr_public)
		return (enum pcpu_metric_kind)0;
	return (enum pcpu_metric_kind)shared_handle(s)->items[item].kind;
}

PCPU_EXPORT int pcpu_shared_lookup(const struct pcpu_shared *s, const char *name)
{
	const struct shared_handle *h = shared_handle(s);

	if (!s || !name)
		return -EINVAL;
	for (unsigned int item = 0; item < h->nr_public; item++)
		if (strcmp(h->strings + h->items[item].name_off, name) == 0)
			return (int)item;
	return -ENOENT;
}

PCPU_EXPORT int pcpu_shared_lookup_labels(const struct pcpu_shared *s, const char *name,
					  const char *const *labels)
{
	const struct shared_handle *h = shared_handle(s);

	if (!s || !name)
		return -EINVAL;
	for (unsigned int item = 0; item < h->nr_public; item++)
		if (strcmp(h->strings + h->items[item].name_off, name) == 0 &&
		    pcpu_shared_same_labels(h->meta[item].labels, labels))
			return (int)item;
	return -ENOENT;
}

PCPU_EXPORT const char *const *pcpu_shared_labels(const struct pcpu_shared *s,
						  unsigned int item)
{
	if (!string_of(s, item, false))
		return NULL;
	return shared_handle(s)->meta[item].labels;
}

/* @item's meta if it is a histogram; else NULL, with *@err. */
static const struct shared_meta *histogram_of(const struct pcpu_shared *s, unsigned int item,
					      int *err)
{
	const struct shared_handle *h = shared_handle(s);

	*err = !s ? -EINVAL : item >= h->nr_public ? -ERANGE :
	       h->items[item].kind != PCPU_METRIC_HISTOGRAM ? -EINVAL : 0;
	return *err ? NULL : &h->meta[item];
}

PCPU_EXPORT const int64_t *pcpu_shared_bounds(const struct pcpu_shared *s, unsigned int item,
					       uint32_t *nr_bounds, int64_t *scale)
{
	int err;
	const struct shared_meta *m = histogram_of(s, item, &err);

	if (!m || !nr_bounds) {
		errno = m ? EINVAL : -err;
		return NULL;
	}
	*nr_bounds = m->nr_bounds;
	if (scale)
		*scale = shared_handle(s)->items[item].scale;
	return m->bounds;
}

PCPU_EXPORT int pcpu_shared_histogram(const struct pcpu_shared *s, unsigned int item,
				      uint64_t *buckets, int64_t *sum)
{
	const struct shared_handle *h = shared_handle(s);
	int err;
	const struct shared_meta *m = histogram_of(s, item, &err);

	if (!m || !buckets)
		return m ? -EINVAL : err;
	err = pcpu_shared_intact(h);
	if (err)
		return err;
	for (uint32_t b = 0; b <= m->nr_bounds; b++)
		buckets[b] = sum_armed(h, m->bucket + b);
	if (sum)
		*sum = pcpu_shared_sum(s, item);
	return 0;
}
