/* SPDX-License-Identifier: MIT */
/*
 * What every fuzz target shares: the entry point libFuzzer calls (also
 * called by replay_main.c in ordinary builds), a reader that takes typed
 * values off the front of the input (zeros once it runs out, so that every
 * input is a valid program), and FUZZ_CHECK, which aborts with a message so
 * that libFuzzer keeps the input and the replay test fails.
 */
#ifndef PCPU_FUZZ_H
#define PCPU_FUZZ_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                   \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__,  \
				__LINE__, #cond);                               \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			abort();                                                \
		}                                                               \
	} while (0)

/*
 * Whether @p (@n bytes, n > 0) is a delimited protobuf stream of
 * MetricFamily messages: each a varint length and that many bytes, the
 * lengths covering the body exactly, each message starting with field 1
 * (the family's name, length-delimited: byte 0x0a).
 */
static inline bool fuzz_protobuf_families(const uint8_t *p, size_t n)
{
	while (n) {
		uint64_t len = 0;
		unsigned int shift = 0;

		do {
			if (!n || shift > 63)
				return false;
			len |= (uint64_t)(*p & 0x7f) << shift;
			shift += 7;
			n--;
		} while (*p++ & 0x80);
		if (len == 0 || len > n || p[0] != 0x0a)
			return false;
		p += len;
		n -= len;
	}
	return true;
}

struct fuzz_in {
	const uint8_t *p;
	size_t left;
};

static inline uint64_t fuzz_bytes(struct fuzz_in *in, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++) {
		v |= (uint64_t)(in->left ? *in->p : 0) << (8 * i);
		if (in->left)
			in->p++, in->left--;
	}
	return v;
}

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	return (uint8_t)fuzz_bytes(in, 1);
}

static inline uint32_t fuzz_u32(struct fuzz_in *in)
{
	return (uint32_t)fuzz_bytes(in, 4);
}

static inline int64_t fuzz_i64(struct fuzz_in *in)
{
	return (int64_t)fuzz_bytes(in, 8);
}

/*
 * A string of the input into @buf (of @cap bytes, NUL-terminated): one
 * length byte, then that many bytes (embedded NULs cut it short, as C
 * callers would).
 */
static inline char *fuzz_str(struct fuzz_in *in, char *buf, size_t cap)
{
	size_t n = fuzz_u8(in);

	if (n > in->left)
		n = in->left;
	if (n > cap - 1)
		n = cap - 1;
	memcpy(buf, in->p, n);
	buf[n] = '\0';
	in->p += n;
	in->left -= n;
	return buf;
}

#endif /* PCPU_FUZZ_H */
