/* SPDX-License-Identifier: MIT */
/*
 * Creating a shared segment (see <percpu/shared.h>): check the descriptor,
 * lay the segment out (lib/shared/shared_internal.h), fill it, mark it ready, and
 * attach to it through the same validation as any other process, so that
 * a creator and an opener see one segment the same way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cpu_internal.h"
#include "base/names.h"
#include "base/pair.h"
#include "base/policy.h"
#include "shared_internal.h"

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static enum pcpu_metric_kind kind_of(const struct pcpu_stat_item *it)
{
	return it->kind ? it->kind : PCPU_METRIC_COUNTER;
}

/* Item @i's labels and bounds: none where the descriptor has no more. */
static const struct pcpu_shared_more *more_of(const struct pcpu_shared_desc *d, uint32_t i)
{
	static const struct pcpu_shared_more none;

	return (d->flags & PCPU_SHARED_MORE) && d->more ? &d->more[i] : &none;
}

/* What a descriptor takes in a segment (lib/shared/shared_internal.h). */
struct desc_size {
	uint64_t strings;
	uint32_t slots;
	uint32_t bounds;
};

/* Bytes of @labels as the segment keeps them, or 0 for none. */
static size_t label_text(const char *const *labels)
{
	size_t n = 0;

	for (const char *const *l = labels; l && *l; l++)
		n += strlen(*l) + 1;
	return n;
}

/* 0, or -EINVAL for labels the header rejects on an item of @kind. */
static int check_labels(const char *const *labels, enum pcpu_metric_kind kind)
{
	int n = pcpu_metrics_check_labels(labels, kind);

	if (n < 0 || n > PCPU_SHARED_MAX_LABELS || label_text(labels) > PCPU_SHARED_MAX_LABEL_TEXT)
		return -EINVAL;
	for (int k = 0; k < n; k++)
		if (pcpu_metrics_check_label_value(labels[2 * k + 1], PCPU_SHARED_MAX_LABEL_TEXT))
			return -EINVAL;
	return 0;
}

/* 0, or -EINVAL for bounds the header rejects on an item of @kind. */
static int check_bounds(const struct pcpu_shared_more *m, enum pcpu_metric_kind kind)
{
	if (m->reserved || m->scale < 0 ||
	    (kind != PCPU_METRIC_HISTOGRAM && (m->nr_bounds || m->scale)) ||
	    m->nr_bounds > PCPU_SHARED_MAX_ITEMS - 2 || (m->nr_bounds && !m->bounds))
		return -EINVAL;
	for (uint32_t k = 1; k < m->nr_bounds; k++)
		if (m->bounds[k - 1] >= m->bounds[k])
			return -EINVAL;
	return 0;
}

/* 0, or -EINVAL for a descriptor the header rejects; what it takes in *@size. */
static int check_desc(const struct pcpu_shared_desc *d, struct desc_size *size)
{
	*size = (struct desc_size){ 0 };
	if (!d || !d->items || d->nr_items == 0 || d->nr_items > PCPU_SHARED_MAX_ITEMS ||
	    (d->flags & ~PCPU_SHARED_MORE) || (d->mode & ~0777u) || d->reserved)
		return -EINVAL;
	for (uint32_t i = 0; i < d->nr_items; i++) {
		struct pcpu_stat_item it = d->items[i];
		const struct pcpu_shared_more *m = more_of(d, i);
		enum pcpu_metric_kind kind = kind_of(&it);
		const char *text = it.help ? it.help : "";
		size_t help = strlen(text);

		/* a histogram's counters are items as a counter's is */
		if (kind == PCPU_METRIC_HISTOGRAM)
			it.kind = PCPU_METRIC_COUNTER;
		/* 64-bit words; what percpu-stat writes out must be a metric name */
		if (pcpu_stat_item_check(&it, PCPU_SHARED_MAX_THRESH) != 0 ||
		    pcpu_metrics_check_name(NULL, it.name, NULL, kind) != 0)
			return -EINVAL;
		/* the segment's format has no item scale (a histogram's is in more) */
		if (it.scale > 1)
			return -EINVAL;
		/* both exposition formats are UTF-8 */
		if (help > PCPU_SHARED_MAX_HELP || !pcpu_shared_utf8(text, help))
			return -EINVAL;
		if (check_labels(m->labels, kind) != 0 || check_bounds(m, kind) != 0)
			return -EINVAL;
		/* nor may two write the same sample ("x_total" beside a counter "x") */
		for (uint32_t j = 0; j < i; j++)
			if (pcpu_shared_items_clash(d->items[j].name, kind_of(&d->items[j]),
						    more_of(d, j)->labels, it.name, kind,
						    m->labels))
				return -EINVAL;
		size->strings += strlen(it.name) + 1 + help + 1 + label_text(m->labels);
		size->slots += 1 + (kind == PCPU_METRIC_HISTOGRAM ? m->nr_bounds + 1 : 0);
		size->bounds += m->nr_bounds;
		if (size->slots > PCPU_SHARED_MAX_ITEMS)
			return -EINVAL;
	}
	return 0;
}

/* Every offset, in the order lib/shared/shared_internal.h gives. */
static void lay_out(struct shared_header *hdr, uint32_t nr_items, const struct desc_size *size,
		    unsigned int possible)
{
	uint64_t at = align_up(sizeof(*hdr), SHARED_LINE);

	hdr->nr_slots = size->slots;
	hdr->items = (struct shared_range){ at, nr_items * sizeof(struct shared_item) };
	at += hdr->items.len;
	hdr->strings = (struct shared_range){ at, size->strings };
	at = align_up(at + size->strings, sizeof(int64_t));
	hdr->bounds = (struct shared_range){ at, size->bounds * sizeof(int64_t) };
	at = align_up(at + hdr->bounds.len, SHARED_LINE);
	hdr->central = (struct shared_range){ at, size->slots * sizeof(struct shared_central) };
	at = align_up(at + hdr->central.len, SHARED_LINE);
	hdr->threshold = (struct shared_range){ at, size->slots * sizeof(uint64_t) };
	at = align_up(at + hdr->threshold.len, SHARED_LINE);
	/* zeros: no row armed, and every pair's stored mark 0, not armed */
	hdr->armed = (struct shared_range){ at, shared_armed_len((uint64_t)possible + 1) };
	at = align_up(at + hdr->armed.len, PCPU_STRIDE);
	hdr->cpus = (struct shared_range){ at, ((uint64_t)possible + 1) * PCPU_STRIDE };
	hdr->total_size = at + hdr->cpus.len;
}

/* The segment's lock, process-shared and robust: 0 or a negative errno. */
static int init_lock(pthread_mutex_t *lock)
{
	pthread_mutexattr_t attr;
	int err = pthread_mutexattr_init(&attr);

	if (err)
		return -err;
	err = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	if (!err)
		err = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	if (!err)
		err = pthread_mutex_init(lock, &attr);
	pthread_mutexattr_destroy(&attr);
	return -err;
}

/* Copies @s with its NUL to @strings + *@at; returns its offset. */
static uint32_t put_string(char *strings, uint32_t *at, const char *s, uint32_t *len)
{
	uint32_t off = *at;

	*len = (uint32_t)strlen(s);
	memcpy(strings + off, s, *len + 1);
	*at += *len + 1;
	return off;
}

/* @labels as "name\0value\0" pairs at @strings + *@at, sorted by name, into @it. */
static void put_labels(char *strings, uint32_t *at, const char *const *labels,
		       struct shared_item *it)
{
	const char *const *order[PCPU_SHARED_MAX_LABELS];
	uint32_t n = 0, len;

	for (const char *const *l = labels; l && *l; l += 2) {
		uint32_t k = n++;

		for (; k > 0 && strcmp(*order[k - 1], *l) > 0; k--)
			order[k] = order[k - 1];
		order[k] = l;
	}
	it->nr_labels = n;
	it->labels_off = n ? *at : 0;
	for (uint32_t k = 0; k < n; k++) {
		put_string(strings, at, order[k][0], &len);
		put_string(strings, at, order[k][1], &len);
	}
	it->labels_len = n ? *at - it->labels_off : 0;
}

/* The threshold a counter of @it starts with, in @threshold and @central. */
static void start_threshold(const struct shared_header *proto, const struct shared_item *it,
			    uint64_t *threshold, struct shared_central *central)
{
	*threshold = pcpu_policy_threshold(0, (uint64_t)it->accuracy * proto->possible,
					(uint64_t)it->floor, PCPU_SHARED_MAX_THRESH);
	central->threshold_max = *threshold;
}

/* Fills the zeroed mapping @base from @d; @proto holds the laid-out header. */
static int fill(void *base, const struct shared_header *proto, const struct pcpu_shared_desc *d)
{
	struct shared_header *hdr = base;
	struct shared_item *items = (void *)((char *)base + proto->items.off);
	char *strings = (char *)base + proto->strings.off;
	int64_t *bounds = (void *)((char *)base + proto->bounds.off);
	struct shared_central *central = (void *)((char *)base + proto->central.off);
	uint64_t *threshold = (void *)((char *)base + proto->threshold.off);
	uint32_t at = 0, slot = d->nr_items;
	int err;

	memcpy(hdr, proto, offsetof(struct shared_header, lock));
	err = init_lock(&hdr->lock);
	if (err)
		return err;
	for (uint32_t i = 0; i < d->nr_items; i++) {
		const struct pcpu_stat_item *it = &d->items[i];
		const struct pcpu_shared_more *m = more_of(d, i);
		struct shared_item *s = &items[i];

		s->name_off = put_string(strings, &at, it->name, &s->name_len);
		s->help_off = put_string(strings, &at, it->help ? it->help : "", &s->help_len);
		put_labels(strings, &at, m->labels, s);
		s->kind = kind_of(it);
		s->scale = m->scale > 1 ? m->scale : 1;
		s->group = it->group;
		s->accuracy = it->accuracy ? (uint32_t)it->accuracy : PCPU_POLICY_ACCURACY;
		s->floor = it->floor ? it->floor : PCPU_POLICY_FLOOR;
		start_threshold(proto, s, &threshold[i], &central[i]);
		if (s->kind != PCPU_METRIC_HISTOGRAM)
			continue;
		/* the buckets: counters of the item's policy, after every item */
		s->nr_bounds = m->nr_bounds;
		if (m->nr_bounds)
			memcpy(bounds, m->bounds, m->nr_bounds * sizeof(*bounds));
		bounds += m->nr_bounds;
		for (uint32_t b = 0; b <= m->nr_bounds; b++, slot++)
			start_threshold(proto, s, &threshold[slot], &central[slot]);
	}
	__atomic_store_n(&hdr->ready, SHARED_READY, __ATOMIC_RELEASE);
	return 0;
}

/* @proto: the header of a segment for @d (of @size), laid out for this process. */
static void describe_segment(struct shared_header *proto, const struct pcpu_shared_desc *d,
			     const struct desc_size *size)
{
	*proto = (struct shared_header){ .magic = SHARED_MAGIC };
	proto->version = SHARED_VERSION;
	proto->header_size = sizeof(*proto);
	proto->update_path = pcpu_cpu_setup();
	proto->possible = pcpu_cpu_possible();
	proto->stride = PCPU_STRIDE;
	proto->nr_items = d->nr_items;
	proto->mutex_size = sizeof(pthread_mutex_t);
	lay_out(proto, d->nr_items, size, proto->possible);
}

/*
 * A new segment @name of @len bytes, exactly @mode whatever the umask, its
 * descriptor in *@fd (-1 for NULL @name: an anonymous one has none): 0 or a
 * negative errno, the name unlinked again.
 */
static int new_segment(const char *name, size_t len, mode_t mode, int *fd)
{
	int err;

	*fd = -1;
	if (!name)
		return 0;
	*fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (*fd < 0)
		return -errno;
	if (fchmod(*fd, mode) != 0 || ftruncate(*fd, (off_t)len) != 0) {
		err = -errno;
		shm_unlink(name);
		close(*fd);
		return err;
	}
	return 0;
}

PCPU_EXPORT struct pcpu_shared *pcpu_shared_create(const char *name,
						   const struct pcpu_shared_desc *d)
{
	struct shared_header proto;
	struct shared_handle *h;
	struct desc_size size;
	void *base;
	int fd, err;

	err = -ENOTSUP;
	if (!PCPU_PAIR_LOCK_FREE)
		goto err_out;
	err = check_desc(d, &size);
	if (err || (name && name[0] != '/')) {
		err = -EINVAL;
		goto err_out;
	}
	describe_segment(&proto, d, &size);
	err = new_segment(name, proto.total_size, d->mode ? d->mode : 0600, &fd);
	if (err)
		goto err_out;
	base = mmap(NULL, proto.total_size, PROT_READ | PROT_WRITE,
		    fd >= 0 ? MAP_SHARED : MAP_SHARED | MAP_ANONYMOUS, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto err_segment;
	}
	err = fill(base, &proto, d);
	if (err)
		goto err_unmap;
	h = pcpu_shared_attach(base, proto.total_size, true, fd);
	if (!h) {
		err = -errno;
		goto err_unmap;
	}
	return &h->pub;

err_unmap:
	munmap(base, proto.total_size);
err_segment:
	if (fd >= 0) {
		shm_unlink(name);
		close(fd);
	}
err_out:
	errno = -err;
	return NULL;
}
