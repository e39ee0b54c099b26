/* SPDX-License-Identifier: MIT */
/*
 * Every concurrent charge operation at once, for ThreadSanitizer (a plain
 * program: exit status 0 or the number of the failed check). Chargers try
 * and uncharge random amounts (inline and above the inline window) and keep
 * shadow tallies; a drainer takes the stocks back and moves the limit up
 * and down (mostly above what the chargers may hold, sometimes below it:
 * the stocks close, and open again once usage is back under it); a
 * watcher samples reserved() against the limit. At the end: exact usage,
 * the limit never passed, and no false failure.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <percpu/charge.h>

#define PCPU_CHECK_PROGRAM "charge-race"
#include "check.h"

enum { CHARGERS = 4, HELD = 8 };
#define LIMIT (INT64_C(1) << 22)
#define LOW_LIMIT (LIMIT / 2) /* the drainer's other limits */
#define TIGHT_LIMIT (INT64_C(1) << 16)

static struct pcpu_charge ch;
static atomic_bool stop;
static atomic_llong worst; /* the largest reserved() - limit the watcher saw */
static long ops_per_charger = 200000;

static uint64_t next(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return *state >> 33;
}

static void *charger(void *arg)
{
	uint64_t state = (uintptr_t)arg * 2654435761u + 1;
	int64_t held[HELD] = { 0 }, *tally = calloc(1, sizeof(*tally));
	unsigned int n = 0;

	CHECK(1, tally != NULL);
	for (long i = 0; i < ops_per_charger; i++) {
		uint64_t r = next(&state);
		/* at most HELD x 64 KiB held: always under LOW_LIMIT */
		int64_t a = r % 32 ? (int64_t)(r >> 5) % 4096 : (int64_t)(r >> 5) % 65536;

		if (n == HELD || (n && r % 2)) {
			n--;
			pcpu_charge_uncharge(&ch, held[n]);
			*tally -= held[n];
		} else if (pcpu_charge_try(&ch, a)) {
			held[n++] = a;
			*tally += a;
		}
	}
	return tally;
}

static void *drainer(void *arg)
{
	(void)arg;
	for (unsigned int i = 0; !atomic_load(&stop); i++) {
		int64_t limit = i % 8 ? LIMIT : i % 32 ? LOW_LIMIT : TIGHT_LIMIT;

		if (i % 4 == 0)
			CHECK(2, pcpu_charge_set_limit(&ch, limit) == 0);
		else
			pcpu_charge_drain(&ch);
	}
	CHECK(3, pcpu_charge_set_limit(&ch, LIMIT) == 0);
	return NULL;
}

static void *watcher(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		/* LIMIT is the highest limit ever set: nothing may pass it */
		long long over = pcpu_charge_reserved(&ch) - LIMIT;

		if (over > atomic_load(&worst))
			atomic_store(&worst, over);
		/* usage() beside charges may count any subset of them: not checked */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct pcpu_charge_options o = { .limit = LIMIT, .stock_cap = 1 << 16 };
	pthread_t c[CHARGERS], d, w;
	int64_t exact = 0;

	if (argc > 1)
		ops_per_charger = atol(argv[1]);
	atomic_store(&worst, LLONG_MIN);
	CHECK(5, pcpu_charge_init(&ch, &o) == 0);
	CHECK(6, pthread_create(&d, NULL, drainer, NULL) == 0);
	CHECK(7, pthread_create(&w, NULL, watcher, NULL) == 0);
	for (uintptr_t i = 0; i < CHARGERS; i++)
		CHECK(8, pthread_create(&c[i], NULL, charger, (void *)(i + 1)) == 0);
	for (int i = 0; i < CHARGERS; i++) {
		void *tally;

		CHECK(9, pthread_join(c[i], &tally) == 0);
		exact += *(int64_t *)tally;
		free(tally);
	}
	atomic_store(&stop, true);
	CHECK(10, pthread_join(d, NULL) == 0);
	CHECK(11, pthread_join(w, NULL) == 0);

	CHECK(12, pcpu_charge_usage(&ch) == exact);
	CHECK(13, pcpu_charge_reserved(&ch) <= LIMIT);
	CHECK(14, atomic_load(&worst) <= 0);
	/* no false failure at quiescence */
	CHECK(15, pcpu_charge_try(&ch, LIMIT - exact));
	CHECK(16, !pcpu_charge_try(&ch, 1));
	pcpu_charge_uncharge(&ch, LIMIT - exact);
	pcpu_charge_drain(&ch);
	CHECK(17, pcpu_charge_reserved(&ch) == exact);
	pcpu_charge_destroy(&ch);
	printf("charge-race: ok (usage %lld)\n", (long long)exact);
	return 0;
}
