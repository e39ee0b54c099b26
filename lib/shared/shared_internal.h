/* SPDX-License-Identifier: MIT */
/*
 * Shared segments, inside (see <percpu/shared.h>): the segment's layout,
 * which every process maps and open() validates, and the process-local
 * handle.
 *
 * The segment, in this order, each part starting after the previous one:
 *   header   struct shared_header (magic ... the lock), 64-byte aligned size
 *   items    nr_items struct shared_item: offsets into strings, kind, policy
 *   strings  every name, help text and label, each NUL-terminated
 *   bounds   every histogram's bounds (int64_t), in the order of the items
 *   central  nr_slots struct shared_central, written by folders (under the lock)
 *   threshold   nr_slots uint64_t, read by every add: apart from the central lines
 *   armed    struct shared_armed: the count of armed rows, then a bitmap of
 *            them, one bit per row in words of 64 [armed-segment]
 *   cpus     (possible + 1) strides of PCPU_STRIDE bytes: per CPU, nr_slots
 *            pairs {value, mark}; the extra last stride is the row of a thread
 *            with no CPU number, which only atomic adds write
 * Slots are counters: item i is slot i (a histogram's: its sum), then come
 * the histograms' buckets, nr_bounds + 1 slots each, in the order of the
 * items. Where a histogram's buckets and bounds start is not recorded but
 * counted, so that they cannot disagree: open() checks that the counts add
 * up to nr_slots and to the bounds' length.
 *
 * Layout 3 (0.4) stores every pair armed (its mark plus PCPU_SLOT_ARMED,
 * 0: not armed) and adds the armed region; a reader of 0.3 finds version 3
 * where it loads 2 and refuses it with EBADMSG, and so does this one a
 * segment of layout 2, whose zero-filled pairs it would read as armed.
 * Layout 2 (0.3) added labels, histograms, nr_slots and the bounds after
 * every field of layout 1 that a reader of 0.2 loads before the version
 * (ready stays where it was), so that reader refuses it with EBADMSG.
 * The creator sizes the file (zeros), fills it, then sets ready (a release
 * store). open() loads ready first (acquire) and reads nothing it covers
 * before: a segment whose ready is 0 and whose magic is zero or (part of)
 * ours is one being made (EAGAIN); one whose ready is not 0 nor
 * SHARED_READY, or whose magic is another, is not ours (EBADMSG).
 */
#ifndef PCPU_LIB_SHARED_INTERNAL_H
#define PCPU_LIB_SHARED_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <percpu/shared.h>

#include "base/misuse.h"

#define SHARED_MAGIC "percpuSH"
#define SHARED_VERSION 3u
/* set last by the creator; every byte non-zero, so no single flip makes it 0 */
#define SHARED_READY 0x59444552u
/* more possible CPUs than a header may claim (the kernel's NR_CPUS is at most 8192) */
#define SHARED_MAX_CPUS 65536u
#define SHARED_LINE 64

struct shared_range {
	uint64_t off;
	uint64_t len;
};

struct shared_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;    /* sizeof(struct shared_header) */
	uint64_t total_size;     /* the file's size */
	uint32_t update_path;    /* enum pcpu_cpu_mode of every writer */
	uint32_t possible;       /* possible CPUs when created */
	uint32_t stride;         /* PCPU_STRIDE */
	uint32_t nr_items;
	uint32_t ready;          /* SHARED_READY once complete */
	uint32_t mutex_size;     /* sizeof(pthread_mutex_t) */
	struct shared_range items, strings, central, threshold, cpus;
	struct shared_range bounds;  /* layout 2 */
	uint32_t nr_slots;       /* counters: nr_items, then the histograms' buckets */
	uint32_t reserved;
	struct shared_range armed;   /* layout 3: struct shared_armed */
	/* taken by every fold, by every process; robust [segment-recovery] */
	_Alignas(SHARED_LINE) pthread_mutex_t lock;
};

/* One item, as the creator resolved its descriptor. */
struct shared_item {
	uint32_t name_off, name_len; /* in strings; NUL at name_off + name_len */
	uint32_t help_off, help_len; /* likewise; help_len 0: none */
	uint32_t kind;               /* PCPU_METRIC_COUNTER, _GAUGE or _HISTOGRAM */
	uint32_t group;
	uint32_t accuracy;           /* 1 to PCPU_STAT_MAX_ACCURACY */
	uint32_t nr_labels;          /* 0 to PCPU_SHARED_MAX_LABELS */
	int64_t floor;               /* 0 to PCPU_SHARED_MAX_THRESH */
	/* in strings: "name\0value\0" per label, sorted by name; 0 and 0: none */
	uint32_t labels_off, labels_len;
	uint32_t nr_bounds;          /* a histogram's; else 0 */
	uint32_t reserved;
	int64_t scale;               /* a histogram's, >= 1; else 1 */
};

/*
 * The rows that hold anything (docs/internals.md [armed-segment]): count
 * first, then the row's bit, then its slots are armed. count runs ahead of
 * the set (a death between the two), never behind; bits are never cleared.
 */
struct shared_armed {
	uint64_t nr;     /* the count of armed rows */
	uint64_t bits[]; /* (rows + 63) / 64 words */
};

/* The armed region's length for @rows rows. */
static inline uint64_t shared_armed_len(uint64_t rows)
{
	return sizeof(struct shared_armed) + (rows + 63) / 64 * sizeof(uint64_t);
}

/* What a process made of an item at open: pointers into its own copies. */
struct shared_meta {
	const char *const *labels; /* {"k", "v", ..., NULL}, sorted by key */
	const int64_t *bounds;     /* a histogram's nr_bounds bounds */
	uint32_t nr_bounds;
	uint32_t bucket;           /* a histogram's first bucket slot */
};

struct shared_central {
	int64_t value;       /* sum of the item's marks over every row */
	uint64_t threshold_max; /* largest threshold since creation */
};

/* A process's handle: the public fields, then what only the library reads. */
struct shared_handle {
	struct pcpu_shared pub;
	struct shared_header *hdr;      /* the mapping */
	size_t map_size;
	int fd;                         /* a named segment's file, for its size; else -1 */
	bool writable;
	uint32_t nr_items;              /* slots (see the top): what folds walk */
	uint32_t nr_public;             /* items, what the API counts */
	uint32_t rows;                  /* possible CPUs + the row without a CPU */
	struct shared_central *central; /* in the mapping */
	uint64_t *threshold;               /* in the mapping */
	struct shared_armed *armed;     /* in the mapping */
	struct shared_item *items;      /* validated copies, process-local, per slot */
	char *strings;
	struct shared_meta *meta;       /* per item */
	const char **label_ptrs;        /* what meta's labels point to */
	int64_t *bounds;                /* a validated copy */
};

static inline struct shared_handle *shared_handle(const struct pcpu_shared *s)
{
	return (struct shared_handle *)(void *)s;
}

/* Whether @s and @item may be used; reports misuse by @call otherwise. */
static inline bool shared_usable(const struct pcpu_shared *s, unsigned int item, const char *call)
{
	if (pcpu_likely(s && item < shared_handle(s)->nr_public))
		return true;
	pcpu_misuse(call, s ? "item out of range" : "NULL segment");
	return false;
}

/* The pair of @item in row @row (a CPU number, or the last row). */
static inline int64_t *shared_pair(const struct shared_handle *h, unsigned int item,
				   unsigned int row)
{
	return (int64_t *)(void *)((char *)h->pub.pairs + ((size_t)row << PCPU_STRIDE_SHIFT)) +
	       2 * (size_t)item;
}

/*
 * Word @w of the armed set, without the bits past the last row: another
 * process may have set them, and a walk must not leave the mapping.
 */
static inline uint64_t shared_armed_word(const struct shared_handle *h, unsigned int w)
{
	uint64_t bits = __atomic_load_n(&h->armed->bits[w], __ATOMIC_ACQUIRE);
	unsigned int past = (w + 1) * 64 > h->rows ? (w + 1) * 64 - h->rows : 0;

	return past ? bits & (~UINT64_C(0) >> past) : bits;
}

static inline bool shared_row_armed(const struct shared_handle *h, unsigned int row)
{
	return shared_armed_word(h, row / 64) >> (row % 64) & 1;
}

/*
 * Sets @row's bit in the armed set: true if this call set it. (Not
 * lib/base/armset.h's: a segment's set is part of its layout, one bit per
 * row and no summary word.)
 */
static inline bool shared_armed_add(const struct shared_handle *h, unsigned int row)
{
	uint64_t bit = UINT64_C(1) << (row % 64);

	return !(__atomic_fetch_or(&h->armed->bits[row / 64], bit, __ATOMIC_SEQ_CST) & bit);
}

/*
 * for (each armed row @row of @h): one acquire load per word of 64 rows,
 * then its bits in order. @row is an unsigned int of the caller's.
 */
#define shared_for_each_armed(h, row)                                                              \
	for (unsigned int shared_w_ = 0; shared_w_ < ((h)->rows + 63) / 64; shared_w_++)            \
		for (uint64_t shared_bits_ = shared_armed_word((h), shared_w_);                    \
		     shared_bits_ &&                                                               \
		     ((row) = shared_w_ * 64 + (unsigned int)__builtin_ctzll(shared_bits_), 1);   \
		     shared_bits_ &= shared_bits_ - 1)

/* Rows the error bound counts: the armed count, never more than the rows. */
static inline uint32_t shared_armed_rows(const struct shared_handle *h)
{
	uint64_t n = __atomic_load_n(&h->armed->nr, __ATOMIC_SEQ_CST);

	return n < h->rows ? (uint32_t)n : h->rows;
}

/*
 * Validates the mapping @base of @size bytes and makes a handle on it.
 * Returns NULL with errno set (EINVAL, EBADMSG, EAGAIN, EPROTO, ENOMEM).
 * On success the handle owns the mapping and @fd (-1: none).
 */
struct shared_handle *pcpu_shared_attach(void *base, size_t size, bool writable, int fd);

/* Is @s, of @len bytes, UTF-8 (no overlong form, surrogate, or code point past U+10FFFF)? */
bool pcpu_shared_utf8(const char *s, size_t len);

/*
 * On a read-only handle: 0, or -ENXIO if the segment's file is now shorter
 * than the mapping (a process with write access truncated it): a load past
 * its end would raise SIGBUS. One fstat(). Always 0 on a writer's handle
 * (writers trust each other) and on an anonymous segment (no file to cut).
 */
int pcpu_shared_intact(const struct shared_handle *h);

/*
 * Would items @a (name @na, kind @ka, labels @la) and @b clash: the same
 * name with another kind or the same labels (in any order), or names whose
 * samples meet? One rule for create and open.
 */
bool pcpu_shared_items_clash(const char *na, enum pcpu_metric_kind ka, const char *const *la,
			     const char *nb, enum pcpu_metric_kind kb, const char *const *lb);

/* Do the label pairs @a and @b hold the same labels, in any order? */
bool pcpu_shared_same_labels(const char *const *a, const char *const *b);

/*
 * Adds @amount to @slot of writable @h under the lock (the slow path of
 * any add, histograms' buckets included), then folds this CPU's pair.
 */
void pcpu_shared_add_locked(struct shared_handle *h, unsigned int slot, int64_t amount);

/* Test hook: called inside a fold, between the swap and the central update. */
extern void (*pcpu_shared_fold_hook)(void);

#endif /* PCPU_LIB_SHARED_INTERNAL_H */
