/* SPDX-License-Identifier: MIT */
/*
 * The shared target's structure-aware mutator (issue 25): byte flips
 * rarely get a segment past open()'s checks into the readers, and the
 * fields open() checks are the ones to vary one at a time. An input that
 * is a segment (in fuzz_shared.c's form: flags, the head, the row bytes)
 * gets one field changed, rarely two, the rest kept: a header field or
 * range (offset or length), an item's field, two items swapped or a
 * string of one given to another, a threshold, a central value, a bound,
 * the armed count, one armed bit, a byte of the strings, or half a pair
 * of the row. Anything else, and a quarter of segments,
 * gets libFuzzer's own mutations. Deterministic given the seed.
 *
 * Static inline, so that the replay build (no libFuzzer) compiles it and
 * does not use it; fuzz_shared.c defines LLVMFuzzerCustomMutator() on it
 * under libFuzzer only. FUZZ_SHARED_MUTATOR=0 in the environment turns it
 * off (libFuzzer's mutations only: to measure what it adds).
 */
#ifndef PCPU_FUZZ_SHARED_MUTATE_H
#define PCPU_FUZZ_SHARED_MUTATE_H

#include "fuzz.h"
#include "shared/shared_internal.h"

/* fields past this offset are not grown into (a segment seed is < 64 KiB) */
#define MUT_MAX_OFF (UINT64_C(1) << 20)

struct mut_seg {
	uint8_t *data;    /* the input: flags byte, head, row bytes */
	size_t size, max;
	size_t head;      /* segment bytes in the input after the flags */
	size_t row;       /* row bytes after them (expanded inputs) */
	bool expanded;
	struct shared_header h;
	uint64_t rnd;
};

static inline uint64_t mut_next(struct mut_seg *m)
{
	/* splitmix64: the seed alone decides */
	uint64_t z = (m->rnd += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static inline uint64_t mut_below(struct mut_seg *m, uint64_t n)
{
	return n ? mut_next(m) % n : 0;
}

/* Is the input a segment? As build_image() reads it. */
static inline bool mut_parse(struct mut_seg *m)
{
	uint8_t flags;

	if (m->size < 1 + offsetof(struct shared_header, lock))
		return false;
	flags = m->data[0];
	m->row = (size_t)(flags >> 4) * 16;
	m->expanded = (flags & 1) && m->size - 1 >= sizeof(m->h) + m->row;
	if (!m->expanded)
		m->row = 0;
	m->head = m->size - 1 - m->row;
	memset(&m->h, 0, sizeof(m->h));
	memcpy(&m->h, m->data + 1, m->head < sizeof(m->h) ? m->head : sizeof(m->h));
	return memcmp(m->h.magic, SHARED_MAGIC, sizeof(m->h.magic)) == 0;
}

/*
 * Segment offset @rel into a region at @base: past MUT_MAX_OFF (which
 * mut_reach() refuses) if either is, so that no sum of fields wraps.
 */
static inline uint64_t mut_off(uint64_t base, uint64_t rel)
{
	return base > MUT_MAX_OFF || rel > MUT_MAX_OFF ? UINT64_MAX : base + rel;
}

/*
 * Makes the @width bytes at segment offset @off part of the input (the
 * head grows with zeros, which is what the file holds there); false if
 * they cannot be: past max_size, or in the rows of an expanded input.
 */
static inline bool mut_reach(struct mut_seg *m, uint64_t off, unsigned int width)
{
	size_t grow;

	if (off > MUT_MAX_OFF)
		return false;
	if (off + width <= m->head)
		return true;
	if (m->expanded && off + width > m->h.cpus.off)
		return false;
	grow = (size_t)(off + width - m->head);
	if (m->size + grow > m->max)
		return false;
	memmove(m->data + 1 + m->head + grow, m->data + 1 + m->head, m->row);
	memset(m->data + 1 + m->head, 0, grow);
	m->head += grow;
	m->size += grow;
	return true;
}

static inline uint64_t mut_load(const uint8_t *p, unsigned int width)
{
	uint64_t v = 0;

	memcpy(&v, p, width); /* little-endian, as the segment (x86, arm64) */
	return v;
}

/*
 * A new value for a field of @width bytes that holds @v: near it, a bit
 * flipped, an edge, or another field's value (a range's end, the size:
 * what makes regions meet or overlap).
 */
static inline uint64_t mut_value(struct mut_seg *m, uint64_t v, unsigned int width)
{
	const struct shared_range *r = &m->h.items;
	uint64_t mask = width == 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * width)) - 1;
	uint64_t other;

	switch (mut_below(m, 10)) {
	case 0:
		v += 1 + mut_below(m, 8);
		break;
	case 1:
		v -= 1 + mut_below(m, 8);
		break;
	case 2:
		v ^= UINT64_C(1) << mut_below(m, 8 * width);
		break;
	case 3:
		v = mut_below(m, 2) ? 0 : mask;
		break;
	case 4:
		v = (UINT64_C(1) << mut_below(m, 8 * width)) - mut_below(m, 2);
		break;
	case 5:
		/* items .. bounds, then the armed range: 7 ranges */
		r = mut_below(m, 7) == 6 ? &m->h.armed : &m->h.items + mut_below(m, 6);
		other = mut_below(m, 3);
		v = other == 0 ? r->off : other == 1 ? r->len : r->off + r->len;
		break;
	case 6:
		v = m->h.total_size - mut_below(m, 2) * (m->h.total_size - m->h.cpus.off);
		break;
	case 7:
		v += (mut_below(m, 2) ? 1 : -1) * (uint64_t)(8 << mut_below(m, 4));
		break;
	case 8:
		v = mut_below(m, 4); /* small: counts, kinds, versions */
		break;
	default:
		v = mut_next(m);
		break;
	}
	return v & mask;
}

/* Changes the field of @width bytes at segment offset @off; false if out of reach. */
static inline bool mut_field(struct mut_seg *m, uint64_t off, unsigned int width)
{
	uint8_t *p;
	uint64_t v;

	if (!mut_reach(m, off, width))
		return false;
	p = m->data + 1 + off;
	v = mut_value(m, mut_load(p, width), width);
	memcpy(p, &v, width);
	return true;
}

/* An index below @n, and below what the region of @len bytes of @size each holds. */
static inline uint64_t mut_index(struct mut_seg *m, uint64_t n, uint64_t len, uint64_t size)
{
	if (len / size < n)
		n = len / size;
	return mut_below(m, n ? n : 1);
}

/*
 * Two items (both in the input): their records swapped (@swap), else one
 * string of one (name, help or labels: offset and length together) given
 * to the other, so that names and label sets meet, as open() must refuse
 * where they clash.
 */
static inline bool mut_items(struct mut_seg *m, bool swap)
{
	static const uint8_t str_off[] = {
		offsetof(struct shared_item, name_off), offsetof(struct shared_item, help_off),
		offsetof(struct shared_item, labels_off),
	};
	const uint64_t size = sizeof(struct shared_item);
	uint64_t a = mut_index(m, m->h.nr_items, m->h.items.len, size);
	uint64_t b = mut_index(m, m->h.nr_items, m->h.items.len, size);
	uint8_t *pa, *pb, tmp[sizeof(struct shared_item)];
	unsigned int f;

	if (a == b || !mut_reach(m, mut_off(m->h.items.off, (a > b ? a : b) * size + size), 0))
		return false;
	pa = m->data + 1 + m->h.items.off + a * size;
	pb = m->data + 1 + m->h.items.off + b * size;
	if (swap) {
		memcpy(tmp, pa, size);
		memcpy(pa, pb, size);
		memcpy(pb, tmp, size);
		return true;
	}
	f = str_off[mut_below(m, sizeof(str_off))];
	/* the offset and the length after it */
	memcpy(pa + f, pb + f, 8);
	if (f == offsetof(struct shared_item, labels_off))
		memcpy(pa + offsetof(struct shared_item, nr_labels),
		       pb + offsetof(struct shared_item, nr_labels), 4);
	return true;
}

/* Changes one field of the segment; false if the one picked was out of reach. */
static inline bool mut_one(struct mut_seg *m)
{
	static const uint8_t item_off[] = {
		offsetof(struct shared_item, name_off), offsetof(struct shared_item, name_len),
		offsetof(struct shared_item, help_off), offsetof(struct shared_item, help_len),
		offsetof(struct shared_item, kind), offsetof(struct shared_item, group),
		offsetof(struct shared_item, accuracy), offsetof(struct shared_item, nr_labels),
		offsetof(struct shared_item, floor), offsetof(struct shared_item, labels_off),
		offsetof(struct shared_item, labels_len), offsetof(struct shared_item, nr_bounds),
		offsetof(struct shared_item, reserved), offsetof(struct shared_item, scale),
	};
	static const uint8_t hdr_off[] = {
		offsetof(struct shared_header, version), offsetof(struct shared_header, header_size),
		offsetof(struct shared_header, total_size), offsetof(struct shared_header, update_path),
		offsetof(struct shared_header, possible), offsetof(struct shared_header, stride),
		offsetof(struct shared_header, nr_items), offsetof(struct shared_header, ready),
		offsetof(struct shared_header, mutex_size), offsetof(struct shared_header, nr_slots),
		offsetof(struct shared_header, reserved),
	};
	static const char chars[] = { 0, '"', '\\', '\n', '{', '}', '=', ',', ' ', '_', ':',
				      'a', '0', '\x7f', '\x80', '\xc3', '\xe2', '\xf0', '\xff' };
	const struct shared_header *h = &m->h;
	uint64_t i, off, rows = (uint64_t)h->possible + 1;
	unsigned int f;

	switch (mut_below(m, 14)) {
	case 0:
		f = (unsigned int)mut_below(m, sizeof(hdr_off));
		return mut_field(m, hdr_off[f], hdr_off[f] == offsetof(struct shared_header, total_size) ? 8 : 4);
	case 1:
	case 2:
		/* a range's offset or length: items .. armed, 16 bytes each */
		f = (unsigned int)mut_below(m, 7);
		off = f < 6 ? offsetof(struct shared_header, items) + 16 * f
			    : offsetof(struct shared_header, armed);
		return mut_field(m, off + 8 * mut_below(m, 2), 8);
	case 3:
	case 4:
		i = mut_index(m, h->nr_items, h->items.len, sizeof(struct shared_item));
		f = (unsigned int)mut_below(m, sizeof(item_off));
		return mut_field(m, mut_off(h->items.off, i * sizeof(struct shared_item) + item_off[f]),
				 item_off[f] == offsetof(struct shared_item, floor) ||
				 item_off[f] == offsetof(struct shared_item, scale) ? 8 : 4);
	case 12:
	case 13:
		return mut_items(m, mut_below(m, 2));
	case 5:
		i = mut_index(m, h->nr_slots, h->threshold.len, 8);
		return mut_field(m, mut_off(h->threshold.off, 8 * i), 8);
	case 6:
		i = mut_index(m, h->nr_slots, h->central.len, sizeof(struct shared_central));
		return mut_field(m, mut_off(h->central.off, sizeof(struct shared_central) * i +
							    8 * mut_below(m, 2)), 8);
	case 7:
		return mut_field(m, h->armed.off, 8);
	case 8:
		/* one armed bit: a row's, or one past the rows */
		i = mut_below(m, rows + 64 > 4096 ? 4096 : rows + 64);
		off = mut_off(h->armed.off, sizeof(struct shared_armed) + i / 64 * 8);
		if (!mut_reach(m, off, 8))
			return false;
		m->data[1 + off + i % 64 / 8] ^= (uint8_t)(1u << (i % 8));
		return true;
	case 9:
		i = mut_index(m, UINT32_MAX, h->bounds.len, 8);
		return mut_field(m, mut_off(h->bounds.off, 8 * i), 8);
	case 10:
		if (!h->strings.len)
			return false;
		off = mut_off(h->strings.off, mut_below(m, h->strings.len));
		if (!mut_reach(m, off, 1))
			return false;
		m->data[1 + off] = mut_below(m, 4) ? (uint8_t)chars[mut_below(m, sizeof(chars))]
						   : (uint8_t)mut_next(m);
		return true;
	default: {
		/* half a pair in the row: value, or mark (armed or not) */
		uint8_t *p;
		uint64_t v;

		if (m->expanded) {
			if (m->row < 16)
				return false;
			p = m->data + 1 + m->head + 8 * mut_below(m, m->row / 8);
		} else {
			i = mut_index(m, h->nr_slots, PCPU_STRIDE, 16);
			off = mut_off(h->cpus.off, i * 16 + 8 * mut_below(m, 2));
			if (!mut_reach(m, off, 8))
				return false;
			p = m->data + 1 + off;
		}
		v = mut_value(m, mut_load(p, 8), 8);
		if (mut_below(m, 2))
			v ^= PCPU_SLOT_ARMED;
		memcpy(p, &v, 8);
		return true;
	}
	}
}

/*
 * One to three fields of the segment @data changed (a few tries each);
 * the new size, or 0 if @data is not a segment or nothing could be changed.
 */
static inline size_t shared_mutate(uint8_t *data, size_t size, size_t max, unsigned int seed)
{
	struct mut_seg m = { .data = data, .size = size, .max = max, .rnd = seed };
	unsigned int n, done = 0;

	if (size > max || !mut_parse(&m))
		return 0;
	n = 1 + (mut_below(&m, 4) == 0) + (mut_below(&m, 8) == 0);
	for (unsigned int t = 0; t < 8 * n && done < n; t++) {
		if (mut_one(&m)) {
			done++;
			/* the next field is read against the changed header */
			(void)mut_parse(&m);
		}
	}
	return done ? m.size : 0;
}

#endif /* PCPU_FUZZ_SHARED_MUTATE_H */
