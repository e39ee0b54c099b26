/* SPDX-License-Identifier: MIT */
/*
 * Creating a shared segment (see <percpu/shared.h>): check the descriptor,
 * lay the segment out (lib/shared_internal.h), fill it, mark it ready, and
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

#include "cpu_internal.h"
#include "names.h"
#include "pair.h"
#include "policy.h"
#include "shared_internal.h"

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static enum pcpu_metric_kind kind_of(const struct pcpu_stat_item *it)
{
	return it->kind ? it->kind : PCPU_METRIC_COUNTER;
}

/* 0, or -EINVAL for a descriptor the header rejects. Adds up the strings in *@strings. */
static int check_desc(const struct pcpu_shared_desc *d, uint64_t *strings)
{
	*strings = 0;
	if (!d || !d->items || d->nr_items == 0 || d->nr_items > PCPU_SHARED_MAX_ITEMS ||
	    d->flags || (d->mode & ~0777u) || d->reserved)
		return -EINVAL;
	for (uint32_t i = 0; i < d->nr_items; i++) {
		const struct pcpu_stat_item *it = &d->items[i];
		const char *text = it->help ? it->help : "";
		size_t help = strlen(text);

		/* 64-bit words; what percpu-stat writes out must be a metric name */
		if (pcpu_stat_item_check(it, PCPU_SHARED_MAX_THRESH) != 0 ||
		    pcpu_metrics_check_name(NULL, it->name, NULL, kind_of(it)) != 0)
			return -EINVAL;
		/* both exposition formats are UTF-8 */
		if (help > PCPU_SHARED_MAX_HELP || !pcpu_shared_utf8(text, help))
			return -EINVAL;
		/* nor may two write the same sample ("x_total" beside a counter "x") */
		for (uint32_t j = 0; j < i; j++)
			if (pcpu_metrics_names_meet(d->items[j].name, kind_of(&d->items[j]),
						    it->name, kind_of(it)))
				return -EINVAL;
		*strings += strlen(it->name) + 1 + help + 1;
	}
	return 0;
}

/* Every offset, in the order lib/shared_internal.h gives. */
static void lay_out(struct shared_header *hdr, uint32_t nr_items, uint64_t strings,
		    unsigned int possible)
{
	uint64_t at = align_up(sizeof(*hdr), SHARED_LINE);

	hdr->items = (struct shared_range){ at, nr_items * sizeof(struct shared_item) };
	at += hdr->items.len;
	hdr->strings = (struct shared_range){ at, strings };
	at = align_up(at + strings, SHARED_LINE);
	hdr->central = (struct shared_range){ at, nr_items * sizeof(struct shared_central) };
	at = align_up(at + hdr->central.len, SHARED_LINE);
	hdr->thresh = (struct shared_range){ at, nr_items * sizeof(uint64_t) };
	at = align_up(at + hdr->thresh.len, PCPU_STRIDE);
	hdr->cpus = (struct shared_range){ at, ((uint64_t)possible + 1) * PCPU_STRIDE };
	hdr->total_size = at + hdr->cpus.len;
}

static int init_lock(pthread_mutex_t *lock)
{
	pthread_mutexattr_t attr;
	int err = pthread_mutexattr_init(&attr);

	if (err)
		return err;
	err = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	if (!err)
		err = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	if (!err)
		err = pthread_mutex_init(lock, &attr);
	pthread_mutexattr_destroy(&attr);
	return err;
}

/* Fills the zeroed mapping @base from @d; @proto holds the laid-out header. */
static int fill(void *base, const struct shared_header *proto, const struct pcpu_shared_desc *d)
{
	struct shared_header *hdr = base;
	struct shared_item *items = (void *)((char *)base + proto->items.off);
	char *strings = (char *)base + proto->strings.off;
	struct shared_central *central = (void *)((char *)base + proto->central.off);
	uint64_t *thresh = (void *)((char *)base + proto->thresh.off);
	uint32_t at = 0;
	int err;

	memcpy(hdr, proto, offsetof(struct shared_header, lock));
	err = init_lock(&hdr->lock);
	if (err)
		return -err;
	for (uint32_t i = 0; i < d->nr_items; i++) {
		const struct pcpu_stat_item *it = &d->items[i];
		struct shared_item *s = &items[i];
		const char *help = it->help ? it->help : "";

		s->name_off = at;
		s->name_len = (uint32_t)strlen(it->name);
		memcpy(strings + at, it->name, s->name_len + 1);
		at += s->name_len + 1;
		s->help_off = at;
		s->help_len = (uint32_t)strlen(help);
		memcpy(strings + at, help, s->help_len + 1);
		at += s->help_len + 1;
		s->kind = kind_of(it);
		s->group = it->group;
		s->accuracy = it->accuracy ? (uint32_t)it->accuracy : PCPU_POLICY_ACCURACY;
		s->floor = it->floor ? it->floor : PCPU_POLICY_FLOOR;
		thresh[i] = pcpu_policy_threshold(0, (uint64_t)s->accuracy * proto->possible,
						  (uint64_t)s->floor, PCPU_SHARED_MAX_THRESH);
		central[i].thresh_max = thresh[i];
	}
	__atomic_store_n(&hdr->ready, SHARED_READY, __ATOMIC_RELEASE);
	return 0;
}

PCPU_EXPORT struct pcpu_shared *pcpu_shared_create(const char *name,
						   const struct pcpu_shared_desc *d)
{
	struct shared_header proto = { .magic = SHARED_MAGIC };
	struct shared_handle *h;
	uint64_t strings;
	void *base = MAP_FAILED;
	int fd = -1, err = check_desc(d, &strings);

	if (!PCPU_PAIR_LOCK_FREE) {
		errno = ENOTSUP;
		return NULL;
	}
	if (err || (name && name[0] != '/')) {
		errno = EINVAL;
		return NULL;
	}
	proto.version = SHARED_VERSION;
	proto.header_size = sizeof(proto);
	proto.update_path = pcpu_cpu_setup();
	proto.possible = pcpu_cpu_possible();
	proto.stride = PCPU_STRIDE;
	proto.nr_items = d->nr_items;
	proto.mutex_size = sizeof(pthread_mutex_t);
	lay_out(&proto, d->nr_items, strings, proto.possible);

	if (name) {
		mode_t mode = d->mode ? d->mode : 0600;

		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (fd < 0)
			return NULL;
		/* exactly @mode, whatever the umask */
		if (fchmod(fd, mode) != 0 || ftruncate(fd, (off_t)proto.total_size) != 0)
			goto fail;
		base = mmap(NULL, proto.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	} else {
		base = mmap(NULL, proto.total_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	}
	if (base == MAP_FAILED)
		goto fail;
	err = fill(base, &proto, d);
	if (err) {
		errno = -err;
		goto fail;
	}
	h = pcpu_shared_attach(base, proto.total_size, true, fd);
	if (!h)
		goto fail;
	return &h->pub;
fail:
	err = errno;
	if (base != MAP_FAILED)
		munmap(base, proto.total_size);
	if (fd >= 0) {
		shm_unlink(name);
		close(fd);
	}
	errno = err;
	return NULL;
}
