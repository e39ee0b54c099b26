/* SPDX-License-Identifier: MIT */
/*
 * Attaching to a shared segment (see <percpu/shared.h>): everything the
 * process will use is validated against the mapping first, on copies (the
 * header, the item table, the strings), so that another process changing
 * the segment afterwards cannot make this one read out of bounds. After
 * that only numbers are read from the segment: values, marks, centrals,
 * thresholds. A named segment's handle keeps its file open, so that the
 * reads can see its size (pcpu_shared_intact()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cpu_internal.h"
#include "base/names.h"
#include "base/pair.h"
#include "shared_internal.h"

/* @r lies in [@from, @size), and starts on a multiple of @align. */
static bool range_ok(const struct shared_range *r, uint64_t from, uint64_t size, uint64_t align)
{
	return r->off >= from && r->off <= size && r->len <= size - r->off &&
	       (r->off & (align - 1)) == 0;
}

/* Is each byte of @magic 0 or ours? A creator may be writing it, in any order. */
static bool magic_being_written(const char *magic)
{
	for (size_t i = 0; i < sizeof(((struct shared_header *)0)->magic); i++)
		if (magic[i] != 0 && magic[i] != SHARED_MAGIC[i])
			return false;
	return true;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/*
 * The parts of @hdr (in bounds) where the creator puts them (lay_out() in
 * shared_create.c): no gap between them but alignment, so that no byte of
 * the file is one that nothing reads.
 */
static bool packed(const struct shared_header *hdr)
{
	return hdr->items.off == align_up(sizeof(*hdr), SHARED_LINE) &&
	       hdr->strings.off == hdr->items.off + hdr->items.len &&
	       hdr->bounds.off == align_up(hdr->strings.off + hdr->strings.len, sizeof(int64_t)) &&
	       hdr->central.off == align_up(hdr->bounds.off + hdr->bounds.len, SHARED_LINE) &&
	       hdr->threshold.off == align_up(hdr->central.off + hdr->central.len, SHARED_LINE) &&
	       hdr->armed.off == align_up(hdr->threshold.off + hdr->threshold.len, SHARED_LINE) &&
	       hdr->cpus.off == align_up(hdr->armed.off + hdr->armed.len, PCPU_STRIDE);
}

/*
 * The header's fixed fields, copied after @ready was loaded (acquire):
 * -EAGAIN if a creator may still be making it (lib/shared/shared_internal.h),
 * -EBADMSG for what is not ours, -EINVAL for what does not fit.
 */
static int check_header(const struct shared_header *hdr, uint32_t ready, uint64_t size)
{
	uint64_t n;

	if (ready != SHARED_READY)
		return ready == 0 && magic_being_written(hdr->magic) ? -EAGAIN : -EBADMSG;
	if (memcmp(hdr->magic, SHARED_MAGIC, sizeof(hdr->magic)) != 0 ||
	    hdr->version != SHARED_VERSION)
		return -EBADMSG;
	if (hdr->header_size != sizeof(*hdr) || hdr->total_size != size ||
	    hdr->stride != PCPU_STRIDE || hdr->mutex_size != sizeof(pthread_mutex_t))
		return -EINVAL;
	if (hdr->update_path != PCPU_CPU_RSEQ && hdr->update_path != PCPU_CPU_ATOMIC)
		return -EBADMSG;
	n = hdr->nr_items;
	if (n == 0 || n > PCPU_SHARED_MAX_ITEMS || hdr->possible == 0 ||
	    hdr->possible > SHARED_MAX_CPUS || hdr->nr_slots < n ||
	    hdr->nr_slots > PCPU_SHARED_MAX_ITEMS || hdr->reserved)
		return -EINVAL;
	/* each part in its place: after the previous one, of its exact length */
	if (!range_ok(&hdr->items, sizeof(*hdr), size, 8) ||
	    hdr->items.len != n * sizeof(struct shared_item) ||
	    !range_ok(&hdr->strings, hdr->items.off + hdr->items.len, size, 1) ||
	    hdr->strings.len > n * (PCPU_STAT_MAX_NAME + 1 + PCPU_SHARED_MAX_HELP + 1 +
				    PCPU_SHARED_MAX_LABEL_TEXT) ||
	    !range_ok(&hdr->bounds, hdr->strings.off + hdr->strings.len, size, 8) ||
	    hdr->bounds.len > (uint64_t)hdr->nr_slots * sizeof(int64_t) ||
	    hdr->bounds.len % sizeof(int64_t) ||
	    !range_ok(&hdr->central, hdr->bounds.off + hdr->bounds.len, size, SHARED_LINE) ||
	    hdr->central.len != hdr->nr_slots * sizeof(struct shared_central) ||
	    !range_ok(&hdr->threshold, hdr->central.off + hdr->central.len, size, SHARED_LINE) ||
	    hdr->threshold.len != hdr->nr_slots * sizeof(uint64_t) ||
	    !range_ok(&hdr->armed, hdr->threshold.off + hdr->threshold.len, size, SHARED_LINE) ||
	    hdr->armed.len != shared_armed_len((uint64_t)hdr->possible + 1) ||
	    !range_ok(&hdr->cpus, hdr->armed.off + hdr->armed.len, size, PCPU_STRIDE) ||
	    hdr->cpus.len != ((uint64_t)hdr->possible + 1) * PCPU_STRIDE ||
	    hdr->cpus.off + hdr->cpus.len != size || !packed(hdr))
		return -EINVAL;
	return 0;
}

bool pcpu_shared_utf8(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str, *end = s + len;

	while (s < end) {
		unsigned char c = *s++;
		uint32_t cp, min;
		size_t more;

		if (c < 0x80)
			continue;
		if (c >= 0xc2 && c <= 0xdf) {
			more = 1, cp = c & 0x1fu, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			more = 2, cp = c & 0x0fu, min = 0x800;
		} else if (c >= 0xf0 && c <= 0xf4) {
			more = 3, cp = c & 0x07u, min = 0x10000;
		} else {
			return false; /* a continuation byte, or a lead of an overlong form */
		}
		if ((size_t)(end - s) < more)
			return false;
		for (; more; more--, s++) {
			if ((*s & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (*s & 0x3fu);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
	}
	return true;
}

/* A string of @len bytes at @off in @strings of @size bytes, NUL-terminated there. */
static bool string_ok(const char *strings, uint64_t size, uint32_t off, uint32_t len)
{
	return off < size && len < size - off && strings[off + len] == '\0' &&
	       strlen(strings + off) == len;
}

bool pcpu_shared_same_labels(const char *const *a, const char *const *b)
{
	size_t na = 0, nb = 0;

	for (; a && a[na]; na += 2)
		;
	for (; b && b[nb]; nb += 2)
		;
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i += 2) {
		size_t j = 0;

		while (j < nb && strcmp(a[i], b[j]) != 0)
			j += 2;
		if (j == nb || strcmp(a[i + 1], b[j + 1]) != 0)
			return false;
	}
	return true;
}

bool pcpu_shared_items_clash(const char *na, enum pcpu_metric_kind ka, const char *const *la,
			     const char *nb, enum pcpu_metric_kind kb, const char *const *lb)
{
	if (strcmp(na, nb) == 0)
		return ka != kb || pcpu_shared_same_labels(la, lb);
	return pcpu_metrics_names_meet(na, ka, nb, kb);
}

/*
 * The labels of @it as pairs at @ptrs (2 * nr_labels + 1 of them): each of
 * its strings NUL-terminated inside the labels' range, names in the label
 * grammar and strictly ascending, values UTF-8. -EBADMSG if not.
 */
static int parse_labels(const struct shared_item *it, const char *strings, uint64_t size,
			const char **ptrs)
{
	const char *p = strings + it->labels_off, *end;

	if (it->labels_len > PCPU_SHARED_MAX_LABEL_TEXT || (it->nr_labels == 0) != (it->labels_len == 0) ||
	    it->labels_off > size || it->labels_len > size - it->labels_off)
		return -EBADMSG;
	end = p + it->labels_len;
	for (uint32_t k = 0; k < 2 * it->nr_labels; k++) {
		size_t len = strnlen(p, (size_t)(end - p));

		if (len == (size_t)(end - p))
			return -EBADMSG; /* no NUL before the end */
		ptrs[k] = p;
		p += len + 1;
	}
	ptrs[2 * it->nr_labels] = NULL;
	if (p != end || pcpu_metrics_check_labels(ptrs, it->kind) != (int)it->nr_labels)
		return -EBADMSG;
	for (uint32_t k = 0; k < it->nr_labels; k++)
		if ((k && strcmp(ptrs[2 * k - 2], ptrs[2 * k]) >= 0) ||
		    pcpu_metrics_check_label_value(ptrs[2 * k + 1], PCPU_SHARED_MAX_LABEL_TEXT))
			return -EBADMSG;
	return 0;
}

/* One copied item, alone: -EBADMSG if anything is off. */
static int check_item(const struct shared_item *it, const char *strings, uint64_t size)
{
	if (it->name_len == 0 || it->name_len > PCPU_STAT_MAX_NAME ||
	    it->help_len > PCPU_SHARED_MAX_HELP || it->nr_labels > PCPU_SHARED_MAX_LABELS ||
	    !string_ok(strings, size, it->name_off, it->name_len) ||
	    !string_ok(strings, size, it->help_off, it->help_len) ||
	    !pcpu_shared_utf8(strings + it->help_off, it->help_len))
		return -EBADMSG;
	if ((it->kind != PCPU_METRIC_COUNTER && it->kind != PCPU_METRIC_GAUGE &&
	     it->kind != PCPU_METRIC_HISTOGRAM) ||
	    it->accuracy == 0 || it->accuracy > PCPU_STAT_MAX_ACCURACY || it->floor < 0 ||
	    it->floor > PCPU_SHARED_MAX_THRESH || it->reserved || it->scale < 1 ||
	    (it->kind != PCPU_METRIC_HISTOGRAM && (it->nr_bounds || it->scale != 1)) ||
	    it->nr_bounds > PCPU_SHARED_MAX_ITEMS - 2)
		return -EBADMSG;
	/* what percpu-stat writes out must be a metric name, not text */
	if (pcpu_metrics_check_name(NULL, strings + it->name_off, NULL, it->kind) != 0)
		return -EBADMSG;
	return 0;
}

/*
 * The @n items' strings in @strings (@size bytes): each item checked, and
 * laid end to end as the creator writes them. 0, and in *@nr_ptrs the
 * label pointers they need, or -EBADMSG.
 */
static int check_strings(const struct shared_item *items, uint32_t n, const char *strings,
			 uint64_t size, size_t *nr_ptrs)
{
	for (uint32_t i = 0, at = 0; i < n; i++) {
		const struct shared_item *it = &items[i];

		if (check_item(it, strings, size) != 0)
			return -EBADMSG;
		/*
		 * Each item's name, help and labels follow the previous item's,
		 * as the creator writes them: no string overlaps another and
		 * every byte is one of them. No labels: offset 0 too.
		 */
		if (it->name_off != at || it->help_off != at + it->name_len + 1 ||
		    it->labels_off != (it->nr_labels ? it->help_off + it->help_len + 1 : 0))
			return -EBADMSG;
		at = it->help_off + it->help_len + 1 + it->labels_len;
		if (i == n - 1 && at != size)
			return -EBADMSG;
		*nr_ptrs += 2 * (size_t)it->nr_labels + 1;
	}
	return 0;
}

/*
 * The copied item table, strings and bounds of @h (hdr's counts): every
 * item, label and bound; items that clash; buckets and bounds that do not
 * add up to the header's. Fills @h's meta, label pointers and slots' items.
 * -EBADMSG if anything is off, -ENOMEM.
 */
static int check_items(struct shared_handle *h, const struct shared_header *hdr,
		       const struct shared_item *items)
{
	const char *strings = h->strings;
	uint64_t size = hdr->strings.len, nr_bounds = hdr->bounds.len / sizeof(int64_t);
	uint32_t n = hdr->nr_items, slot = n, bound = 0;
	size_t nr_ptrs = 0;
	const char **ptrs;

	if (check_strings(items, n, strings, size, &nr_ptrs) != 0)
		return -EBADMSG;
	h->label_ptrs = ptrs = malloc(nr_ptrs * sizeof(*ptrs));
	if (!ptrs)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct shared_item *it = &items[i];
		struct shared_meta *m = &h->meta[i];

		if (parse_labels(it, strings, size, ptrs) != 0)
			return -EBADMSG;
		m->labels = ptrs;
		ptrs += 2 * it->nr_labels + 1;
		for (uint32_t j = 0; j < i; j++)
			if (pcpu_shared_items_clash(strings + items[j].name_off, items[j].kind,
						    h->meta[j].labels, strings + it->name_off,
						    it->kind, m->labels))
				return -EBADMSG;
		h->items[i] = *it;
		if (it->kind != PCPU_METRIC_HISTOGRAM)
			continue;
		/* its buckets and bounds come next: counted, never read from the segment */
		if (it->nr_bounds > nr_bounds - bound || it->nr_bounds + 1 > hdr->nr_slots - slot)
			return -EBADMSG;
		m->bounds = h->bounds + bound;
		m->nr_bounds = it->nr_bounds;
		m->bucket = slot;
		for (uint32_t b = 1; b < it->nr_bounds; b++)
			if (m->bounds[b - 1] >= m->bounds[b])
				return -EBADMSG;
		bound += it->nr_bounds;
		/* a bucket folds with its item's policy (lib/shared/shared_fold.c) */
		for (uint32_t b = 0; b <= it->nr_bounds; b++)
			h->items[slot++] = *it;
	}
	return slot == hdr->nr_slots && bound == nr_bounds ? 0 : -EBADMSG;
}

/*
 * The armed set as found (live: other processes arm rows meanwhile): no
 * bit past the last row, and a count of at least the bits and at most
 * the rows. The bits are loaded first: bits are never cleared and the
 * count never falls below them, so a count loaded after them covers them
 * [armed-segment]. -EBADMSG if not.
 */
static int check_armed(const struct shared_handle *h)
{
	unsigned int words = (h->rows + 63) / 64, past = words * 64 - h->rows;
	uint64_t set = 0, count;

	for (unsigned int w = 0; w < words; w++) {
		uint64_t bits = __atomic_load_n(&h->armed->bits[w], __ATOMIC_ACQUIRE);

		if (w == words - 1 && past && bits >> (64 - past))
			return -EBADMSG;
		set += (uint64_t)__builtin_popcountll(bits);
	}
	count = __atomic_load_n(&h->armed->nr, __ATOMIC_SEQ_CST);
	return count < set || count > h->rows ? -EBADMSG : 0;
}

static void free_handle(struct shared_handle *h)
{
	free(h->items);
	free(h->strings);
	free(h->meta);
	free(h->label_ptrs);
	free(h->bounds);
	free(h);
}

/*
 * The header of the mapping @base of @size into @hdr, checked, and for a
 * writer (@writable) checked against this process: 0 or a negative errno.
 */
static int read_header(const void *base, size_t size, bool writable, struct shared_header *hdr)
{
	uint32_t ready;
	int err;

	if (size < sizeof(*hdr))
		return -EINVAL;
	/* the creator's release store of ready, before anything it covers is read */
	ready = __atomic_load_n(&((const struct shared_header *)base)->ready, __ATOMIC_ACQUIRE);
	memcpy(hdr, base, offsetof(struct shared_header, lock));
	err = check_header(hdr, ready, size);
	if (!err && writable && hdr->possible != pcpu_cpu_possible())
		err = -EINVAL; /* a CPU number could pass the last row */
	if (!err && writable && hdr->update_path != (uint32_t)pcpu_cpu_setup())
		err = -EPROTO; /* a plain rseq add and an atomic add on one slot lose updates */
	return err;
}

/*
 * @h's own copies of the segment's items, strings and bounds, checked:
 * 0 or a negative errno. What it allocated is @h's (free_handle()).
 */
static int copy_items(struct shared_handle *h, const struct shared_header *hdr,
		      const void *base)
{
	struct shared_item *items = malloc(hdr->items.len);
	int err;

	h->items = malloc(hdr->nr_slots * sizeof(*h->items));
	h->strings = malloc(hdr->strings.len ? hdr->strings.len : 1);
	h->meta = calloc(hdr->nr_items, sizeof(*h->meta));
	h->bounds = malloc(hdr->bounds.len ? hdr->bounds.len : 1);
	if (!h->items || !h->strings || !h->meta || !h->bounds || !items) {
		free(items);
		return -ENOMEM;
	}
	memcpy(items, (const char *)base + hdr->items.off, hdr->items.len);
	memcpy(h->strings, (const char *)base + hdr->strings.off, hdr->strings.len);
	memcpy(h->bounds, (const char *)base + hdr->bounds.off, hdr->bounds.len);
	err = check_items(h, hdr, items);
	free(items);
	return err;
}

/* Points @h at the regions of the mapping @base that @hdr lays out. */
static void point_at(struct shared_handle *h, const struct shared_header *hdr, void *base,
		     bool writable)
{
	h->hdr = base;
	h->writable = writable;
	h->nr_items = hdr->nr_slots;
	h->nr_public = hdr->nr_items;
	h->rows = hdr->possible + 1;
	h->central = (void *)((char *)base + hdr->central.off);
	h->threshold = (void *)((char *)base + hdr->threshold.off);
	h->armed = (void *)((char *)base + hdr->armed.off);
	h->pub.pairs = (void *)((char *)base + hdr->cpus.off);
	h->pub.threshold = h->threshold;
	h->pub.add_items = writable ? hdr->nr_items : 0;
	h->pub.mode = hdr->update_path;
}

struct shared_handle *pcpu_shared_attach(void *base, size_t size, bool writable, int fd)
{
	struct shared_header hdr;
	struct shared_handle *h;
	int err;

	err = read_header(base, size, writable, &hdr);
	if (err)
		goto err_out;
	err = -ENOMEM;
	h = calloc(1, sizeof(*h));
	if (!h)
		goto err_out;
	err = copy_items(h, &hdr, base);
	if (err)
		goto err_handle;
	point_at(h, &hdr, base, writable);
	h->map_size = size;
	h->fd = fd;
	err = check_armed(h);
	if (err)
		goto err_handle;
	return h;

err_handle:
	free_handle(h);
err_out:
	errno = -err;
	return NULL;
}

/*
 * The segment @name opened for reading, or for writing too (@writable):
 * its descriptor or a negative errno. O_NONBLOCK: a FIFO planted at the
 * name would block open(2) until a writer came. What open(2) refuses as
 * not a regular file is not a segment either: a symbolic link (shm_open()
 * adds O_NOFOLLOW: ELOOP), a socket or a device (ENXIO), a directory opened
 * for writing (EISDIR): -EBADMSG.
 */
static int open_segment(const char *name, bool writable)
{
	int fd = shm_open(name, (writable ? O_RDWR : O_RDONLY) | O_NONBLOCK | O_CLOEXEC, 0);

	if (fd >= 0)
		return fd;
	if (errno == ELOOP || errno == ENXIO || errno == EISDIR)
		return -EBADMSG;
	return -errno;
}

/*
 * The size of the segment open at @fd in *@size: 0, or -EBADMSG (not a
 * regular file), -EAGAIN (created, not sized yet), -EINVAL (smaller than a
 * header or too large to map) or fstat(2)'s negative errno.
 */
static int segment_size(int fd, size_t *size)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADMSG;
	if (st.st_size == 0)
		return -EAGAIN;
	if ((uint64_t)st.st_size < sizeof(struct shared_header) ||
	    (uint64_t)st.st_size > (uint64_t)SIZE_MAX / 2)
		return -EINVAL;
	*size = (size_t)st.st_size;
	return 0;
}

PCPU_EXPORT struct pcpu_shared *pcpu_shared_open(const char *name, unsigned int flags)
{
	bool writable = !(flags & PCPU_SHARED_RDONLY);
	struct shared_handle *h;
	size_t size = 0;
	void *base;
	int fd, err;

	err = -EINVAL;
	if (!name || (flags & ~PCPU_SHARED_RDONLY))
		goto err_out;
	err = -ENOTSUP;
	if (!PCPU_PAIR_LOCK_FREE)
		goto err_out;
	fd = err = open_segment(name, writable);
	if (fd < 0)
		goto err_out;
	err = segment_size(fd, &size);
	if (err)
		goto err_close;
	base = mmap(NULL, size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto err_close;
	}
	h = pcpu_shared_attach(base, size, writable, fd);
	if (!h) {
		err = -errno;
		goto err_unmap;
	}
	return &h->pub;

err_unmap:
	munmap(base, size);
err_close:
	close(fd);
err_out:
	errno = -err;
	return NULL;
}

PCPU_EXPORT void pcpu_shared_close(struct pcpu_shared *s)
{
	struct shared_handle *h = shared_handle(s);

	if (!s)
		return;
	munmap(h->hdr, h->map_size);
	if (h->fd >= 0)
		close(h->fd);
	free_handle(h);
}

PCPU_EXPORT int pcpu_shared_unlink(const char *name)
{
	if (!name)
		return -EINVAL;
	return shm_unlink(name) == 0 ? 0 : -errno;
}
