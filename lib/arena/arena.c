/* SPDX-License-Identifier: MIT */
/*
 * The per-CPU arena (see arena.h).
 *
 * A chunk is one anonymous mapping of possible CPUs x PCPU_STRIDE bytes; its
 * first stride is cut into UNITS units of PCPU_ARENA_UNIT bytes, and an
 * object of n units owns the same n units of every stride. Invariants, all
 * under arena_lock:
 *
 *   Free units are zero on every CPU. A fresh mapping is zero; free zeroes
 *   each CPU's copy, writing only copies that are not zero already. So
 *   alloc writes nothing, and a page of a CPU that never runs a thread is
 *   never written (reading it maps the shared zero page): chunks cost
 *   memory only on CPUs that use them.
 *
 *   Every chunk is in the table, keyed by its base. The CPU-0 copy lies in
 *   the first stride and bases are page-aligned, so free finds the chunk
 *   of cpu0 as cpu0 & ~(PCPU_STRIDE - 1) without walking anything.
 *
 *   A chunk with a free unit is on the list of its class, the floor of
 *   log2 of its longest free run; a full chunk is on no list. Every chunk
 *   of class c has a run of 2^c units, so an object of n units takes the
 *   first chunk of the lowest class >= ceil(log2(n)): no list is walked,
 *   and the fullest chunks fill first, so that others drain and go back.
 *   Class TOP holds exactly the empty chunks.
 *
 *   At most one empty chunk stays mapped, and only while another chunk
 *   holds objects: a spare, so that an object allocated and freed again
 *   and again just past a full chunk does not mmap and munmap each time.
 *   When the last object goes, every chunk goes back to the OS.
 *
 *   Alloc succeeds or changes nothing: it gets everything a new chunk
 *   needs (a table slot, the record, the mapping) before linking any of it,
 *   and gives back what it got if a later step fails. No call in it can
 *   exit the process: that is why NUMA placement uses mbind(2) directly
 *   and not libnuma, whose helpers allocate bitmasks and exit(1) when
 *   malloc fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef PCPU_HAVE_NUMA
#include <stdio.h> /* snprintf */
#include <numaif.h> /* MPOL_PREFERRED; the call itself is syscall(SYS_mbind) */
#include <sys/syscall.h>
#endif

#include <percpu/cpu.h>

#include "arena.h"
#include "base/cpu_internal.h"
#include "base/misuse.h"

#define UNITS (PCPU_STRIDE / PCPU_ARENA_UNIT)
#define WORD_BITS 64
#define WORDS (UNITS / WORD_BITS)
#define TOP 8 /* log2(UNITS): the class of empty chunks */
#define NR_CLASSES (TOP + 1)

_Static_assert(UNITS == 1u << TOP, "TOP must be log2(UNITS)");
_Static_assert(UNITS % WORD_BITS == 0, "the bitmap is whole words");

struct chunk {
	char *base;
	struct chunk *prev, *next; /* on the list of its class */
	unsigned int free_units;
	unsigned int run;          /* longest free run, as last filed */
	uint64_t used[WORDS];
};

static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static struct chunk *classes[NR_CLASSES];
static unsigned int nr_chunks;
static size_t live_units; /* units handed out and not freed, for the tests */

/* Open addressing, linear probing, never full: a probe meets NULL. */
static struct chunk *first_table[16];
static struct chunk **table = first_table;
static unsigned int table_bits = 4;

static long fail_after = -1;
static long fail_resource = -1;

/* ---- test hooks' failures ------------------------------------------------ */

/* Every malloc and mmap of the arena asks first, so a test can fail each. */
static bool resource_fails(void)
{
	if (fail_resource < 0)
		return false;
	return fail_resource-- == 0;
}

static void *arena_calloc(size_t n, size_t size)
{
	return resource_fails() ? NULL : calloc(n, size);
}

static void *arena_mmap(size_t bytes)
{
	void *p;

	if (resource_fails())
		return NULL;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* ---- the bitmap of a chunk ----------------------------------------------- */

/* The first unit >= @from that is used (@used) or free (!@used); UNITS if none. */
static unsigned int next_unit(const struct chunk *ch, unsigned int from, bool used)
{
	for (unsigned int w = from / WORD_BITS; w < WORDS; w++) {
		uint64_t bits = used ? ch->used[w] : ~ch->used[w];

		if (w == from / WORD_BITS)
			bits &= ~UINT64_C(0) << (from % WORD_BITS);
		if (bits)
			return w * WORD_BITS + (unsigned int)__builtin_ctzll(bits);
	}
	return UNITS;
}

/*
 * Returns the longest free run of @ch and sets *@first to the start of its
 * first run of at least @want units (UNITS if none). O(runs), at most
 * O(UNITS): bounded whatever the number of chunks.
 */
static unsigned int scan_runs(const struct chunk *ch, unsigned int want, unsigned int *first)
{
	unsigned int longest = 0, start, end = 0;

	*first = UNITS;
	while ((start = next_unit(ch, end, false)) < UNITS) {
		end = next_unit(ch, start, true);
		if (end - start >= want && *first == UNITS)
			*first = start;
		if (end - start > longest)
			longest = end - start;
	}
	return longest;
}

static void mark_units(struct chunk *ch, unsigned int first, unsigned int n, bool used)
{
	for (unsigned int u = first; u < first + n; u++) {
		uint64_t bit = UINT64_C(1) << (u % WORD_BITS);

		if (used)
			ch->used[u / WORD_BITS] |= bit;
		else
			ch->used[u / WORD_BITS] &= ~bit;
	}
}

static bool units_used(const struct chunk *ch, unsigned int first, unsigned int n)
{
	unsigned int free_unit = next_unit(ch, first, false);

	return free_unit >= first + n;
}

/* ---- classes: chunks by their longest free run ------------------------- */

static unsigned int class_of(unsigned int run)
{
	return 31u - (unsigned int)__builtin_clz(run);
}

/* The lowest class whose every chunk has a run of @units. */
static unsigned int class_for(unsigned int units)
{
	return units <= 1 ? 0 : 32u - (unsigned int)__builtin_clz(units - 1);
}

static void unfile_chunk(struct chunk *ch)
{
	if (!ch->run)
		return;
	if (ch->prev)
		ch->prev->next = ch->next;
	else
		classes[class_of(ch->run)] = ch->next;
	if (ch->next)
		ch->next->prev = ch->prev;
	ch->prev = ch->next = NULL;
}

/* Files @ch (not on a list) by its bitmap. */
static void file_chunk(struct chunk *ch)
{
	unsigned int first, c;

	ch->run = scan_runs(ch, 0, &first);
	if (!ch->run)
		return;
	c = class_of(ch->run);
	ch->prev = NULL;
	ch->next = classes[c];
	if (ch->next)
		ch->next->prev = ch;
	classes[c] = ch;
}

/* ---- the table: chunk by base -------------------------------------------- */

static size_t table_size(void)
{
	return (size_t)1 << table_bits;
}

static size_t home_of(const char *base, unsigned int bits)
{
	uint64_t key = (uint64_t)(uintptr_t)base >> PCPU_STRIDE_SHIFT;

	return (size_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - bits));
}

static void table_put(struct chunk **t, unsigned int bits, struct chunk *ch)
{
	size_t mask = ((size_t)1 << bits) - 1, i = home_of(ch->base, bits);

	while (t[i])
		i = (i + 1) & mask;
	t[i] = ch;
}

static struct chunk *table_find(const char *base)
{
	size_t mask = table_size() - 1;

	for (size_t i = home_of(base, table_bits); table[i]; i = (i + 1) & mask)
		if (table[i]->base == base)
			return table[i];
	return NULL;
}

/* Deletes by shifting back the entries after it (no tombstones). */
static void table_remove(const struct chunk *ch)
{
	size_t mask = table_size() - 1, i = home_of(ch->base, table_bits), j;

	while (table[i] != ch)
		i = (i + 1) & mask;
	for (j = i;;) {
		table[i] = NULL;
		for (;;) {
			size_t k;

			j = (j + 1) & mask;
			if (!table[j])
				return;
			k = home_of(table[j]->base, table_bits);
			/* table[j] may fill the hole at i unless its home is in (i, j] */
			if (i <= j ? (k <= i || k > j) : (k <= i && k > j))
				break;
		}
		table[i] = table[j];
		i = j;
	}
}

/*
 * Makes room for one more chunk: doubles the table past half full. If that
 * malloc fails, the old table serves while it has a slot to spare (a probe
 * must always meet NULL); false only when it has none.
 */
static bool table_make_room(void)
{
	unsigned int bits = table_bits + 1;
	struct chunk **t;

	if ((size_t)(nr_chunks + 1) * 2 <= table_size())
		return true;
	t = arena_calloc((size_t)1 << bits, sizeof(*t));
	if (!t)
		return (size_t)nr_chunks + 1 < table_size();
	for (size_t i = 0; i < table_size(); i++)
		if (table[i])
			table_put(t, bits, table[i]);
	if (table != first_table)
		free(table);
	table = t;
	table_bits = bits;
	return true;
}

/* ---- NUMA: each CPU's stride on its node --------------------------------- */

#ifdef PCPU_HAVE_NUMA
#define MAX_NODES 1024 /* the kernel's MAX_NUMNODES at most (NODES_SHIFT 10) */
#define LONG_BITS (8 * sizeof(unsigned long))

/* node_of[cpu], -1 for none; built once, and only if there are 2+ nodes. */
static short *node_of;
static bool nodes_known;

/*
 * Reads a sysfs attribute into @buf (a page: no attribute is longer) with
 * open(2) and read(2): no stdio, so nothing that allocates. -1 on failure.
 */
static ssize_t read_attr(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return n < 0 ? -1 : (ssize_t)len;
}

/*
 * Calls @fn(@ctx, n) for every n < @limit in the sysfs list @s
 * ("0-3,8,10-11"); stops at the first character that does not parse.
 */
static void for_each_in_list(const char *s, unsigned long limit,
			     void (*fn)(void *ctx, unsigned long n), void *ctx)
{
	while (*s >= '0' && *s <= '9') {
		char *end;
		unsigned long lo = strtoul(s, &end, 10), hi = lo;

		if (*end == '-')
			hi = strtoul(end + 1, &end, 10);
		for (unsigned long n = lo; n <= hi && n < limit; n++)
			fn(ctx, n);
		if (*end != ',')
			break;
		s = end + 1;
	}
}

static void note_node(void *ctx, unsigned long node)
{
	unsigned long *last = ctx;

	*last = node;
}

struct cpus_of_node {
	short *map;
	short node;
};

static void note_cpu(void *ctx, unsigned long cpu)
{
	struct cpus_of_node *c = ctx;

	c->map[cpu] = c->node;
}

/*
 * Builds node_of from /sys/devices/system/node/nodeN/cpulist, once: one
 * read per node rather than a directory walk per CPU. Without sysfs, or
 * with one node, nothing is bound (first touch is then as good). -ENOMEM
 * when the map cannot be allocated: the caller fails, a later call retries.
 */
static int learn_nodes(void)
{
	char buf[4096], path[64];
	unsigned long last = 0;
	unsigned int cpus = cpu_possible();
	short *map;
	int with_cpus = 0;

	if (nodes_known)
		return 0;
	if (read_attr("/sys/devices/system/node/possible", buf, sizeof(buf)) < 0)
		goto single;
	for_each_in_list(buf, MAX_NODES, note_node, &last);
	if (last == 0)
		goto single;
	map = arena_calloc(cpus, sizeof(*map));
	if (!map)
		return -ENOMEM;
	for (unsigned int cpu = 0; cpu < cpus; cpu++)
		map[cpu] = -1;
	for (unsigned long node = 0; node <= last; node++) {
		struct cpus_of_node ctx = { map, (short)node };

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%lu/cpulist", node);
		if (read_attr(path, buf, sizeof(buf)) <= 0 || buf[0] < '0' || buf[0] > '9')
			continue;
		for_each_in_list(buf, cpus, note_cpu, &ctx);
		with_cpus++;
	}
	if (with_cpus < 2) {
		free(map);
		goto single;
	}
	node_of = map;
single:
	nodes_known = true;
	return 0;
}

/*
 * Prefers each CPU's node for its stride, one mbind(2) per run of CPUs on
 * the same node, before any page is touched. MPOL_PREFERRED, not
 * MPOL_BIND: a full node must cost locality, never a SIGBUS or an OOM kill
 * at a page fault. A failure only costs locality too, so it is ignored.
 */
static void place_strides(char *base)
{
	unsigned int cpus = cpu_possible();

	if (!node_of)
		return;
	for (unsigned int cpu = 0, next; cpu < cpus; cpu = next) {
		unsigned long mask[MAX_NODES / LONG_BITS] = { 0 };
		int node = node_of[cpu];

		for (next = cpu + 1; next < cpus && node_of[next] == node; next++)
			;
		if (node < 0)
			continue;
		mask[node / LONG_BITS] = 1UL << (node % LONG_BITS);
		/* the kernel reads maxnode - 1 bits */
		syscall(SYS_mbind, base + (size_t)cpu * PCPU_STRIDE,
			(size_t)(next - cpu) * PCPU_STRIDE, MPOL_PREFERRED, mask,
			(unsigned long)MAX_NODES + 1, 0UL);
	}
}
#else
static int learn_nodes(void)
{
	return 0;
}

static void place_strides(char *base)
{
	(void)base;
}
#endif

/* ---- chunks -------------------------------------------------------------- */

static size_t chunk_bytes(void)
{
	return (size_t)cpu_possible() * PCPU_STRIDE;
}

/* A new empty chunk, filed and in the table; NULL with nothing changed. */
static struct chunk *new_chunk(void)
{
	struct chunk *ch;

	if (learn_nodes() < 0 || !table_make_room())
		return NULL;
	ch = arena_calloc(1, sizeof(*ch));
	if (!ch)
		return NULL;
	ch->base = arena_mmap(chunk_bytes());
	if (!ch->base) {
		free(ch);
		return NULL;
	}
	/*
	 * A huge page would make every CPU's stride resident at the first
	 * write to any of them; chunks of 512 CPUs or more are that large.
	 */
	madvise(ch->base, chunk_bytes(), MADV_NOHUGEPAGE);
	place_strides(ch->base);
	table_put(table, table_bits, ch);
	nr_chunks++;
	ch->free_units = UNITS;
	file_chunk(ch);
	return ch;
}

static void destroy_chunk(struct chunk *ch)
{
	unfile_chunk(ch);
	table_remove(ch);
	nr_chunks--;
	munmap(ch->base, chunk_bytes());
	free(ch);
}

/* @ch has just become empty (and is filed first in class TOP). */
static void release_empty(struct chunk *ch)
{
	struct chunk *spare = ch->next; /* the other empty chunk, if any */

	if (spare || nr_chunks == 1)
		destroy_chunk(ch);
	if (spare && nr_chunks == 1)
		destroy_chunk(spare);
}

/*
 * Zeroes @bytes at @p unless they are zero already: reading first keeps
 * a page that no thread of this CPU wrote unwritten.
 */
static void zero_if_dirty(char *p, size_t bytes)
{
	for (size_t i = 0; i < bytes; i += sizeof(uint64_t)) {
		uint64_t w;

		memcpy(&w, p + i, sizeof(w));
		if (w) {
			memset(p + i, 0, bytes - i);
			return;
		}
	}
}

/* ---- the interface ------------------------------------------------------- */

static unsigned int units_of(size_t size)
{
	return (unsigned int)((size + PCPU_ARENA_UNIT - 1) / PCPU_ARENA_UNIT);
}

void *pcpu_arena_alloc(size_t size)
{
	unsigned int units = units_of(size), first;
	struct chunk *ch = NULL;

	if (size == 0 || size > PCPU_STRIDE) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&arena_lock);
	if (fail_after == 0)
		goto nomem;
	for (unsigned int c = class_for(units); c < NR_CLASSES && !ch; c++)
		ch = classes[c];
	if (!ch)
		ch = new_chunk();
	if (!ch)
		goto nomem;
	scan_runs(ch, units, &first); /* found: the class promises a run */
	unfile_chunk(ch);
	mark_units(ch, first, units, true);
	ch->free_units -= units;
	live_units += units;
	file_chunk(ch);
	if (fail_after > 0)
		fail_after--;
	pthread_mutex_unlock(&arena_lock);
	return ch->base + (size_t)first * PCPU_ARENA_UNIT;

nomem:
	pthread_mutex_unlock(&arena_lock);
	errno = ENOMEM;
	return NULL;
}

void pcpu_arena_free(void *cpu0, size_t size)
{
	char *p = cpu0, *base = (char *)((uintptr_t)p & ~(uintptr_t)(PCPU_STRIDE - 1));
	unsigned int units = units_of(size), first, cpus = cpu_possible();
	struct chunk *ch;

	if (!p)
		return;
	first = (unsigned int)((size_t)(p - base) / PCPU_ARENA_UNIT);
	pthread_mutex_lock(&arena_lock);
	ch = table_find(base);
	if (!ch || size == 0 || size > PCPU_STRIDE || (size_t)(p - base) % PCPU_ARENA_UNIT ||
	    first + units > UNITS || !units_used(ch, first, units)) {
		pthread_mutex_unlock(&arena_lock);
		pcpu_misuse(__func__, "not an object of this size from the arena (or freed twice)");
		return;
	}
	/* whole units: the invariant is per unit, whatever the caller wrote */
	for (unsigned int cpu = 0; cpu < cpus; cpu++)
		zero_if_dirty(cpu_copy(p, cpu), (size_t)units * PCPU_ARENA_UNIT);
	unfile_chunk(ch);
	mark_units(ch, first, units, false);
	ch->free_units += units;
	live_units -= units;
	file_chunk(ch);
	if (ch->free_units == UNITS)
		release_empty(ch);
	pthread_mutex_unlock(&arena_lock);
}

void pcpu_arena_fork_prepare(void)
{
	pthread_mutex_lock(&arena_lock);
}

void pcpu_arena_fork_parent(void)
{
	pthread_mutex_unlock(&arena_lock);
}

void pcpu_arena_fork_child(void)
{
	pthread_mutex_init(&arena_lock, NULL);
}

/*
 * The test hooks, in the test suite's internal library only (lib/meson.build:
 * PCPU_TEST_HOOKS); the installed libraries do not carry them.
 */
#ifdef PCPU_TEST_HOOKS

void pcpu_arena_fail_after(long successes)
{
	pthread_mutex_lock(&arena_lock);
	fail_after = successes < 0 ? -1 : successes;
	pthread_mutex_unlock(&arena_lock);
}

void pcpu_arena_fail_resource_after(long successes)
{
	pthread_mutex_lock(&arena_lock);
	fail_resource = successes < 0 ? -1 : successes;
	pthread_mutex_unlock(&arena_lock);
}

size_t pcpu_arena_debug_live_units(void)
{
	size_t n;

	pthread_mutex_lock(&arena_lock);
	n = live_units;
	pthread_mutex_unlock(&arena_lock);
	return n;
}

unsigned int pcpu_arena_debug_chunks(void)
{
	unsigned int n;

	pthread_mutex_lock(&arena_lock);
	n = nr_chunks;
	pthread_mutex_unlock(&arena_lock);
	return n;
}

#endif /* PCPU_TEST_HOOKS */
