/* SPDX-License-Identifier: MIT */
/*
 * main() for a fuzz target built without libFuzzer (any compiler): feeds
 * every file named, and every file in every directory named, to
 * LLVMFuzzerTestOneInput() once, so that the ordinary suite replays the
 * seed corpus and the regressions. A missing directory is skipped (an empty
 * one has no place in git). A check that fails aborts, as under libFuzzer.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return 1;
	}
	do {
		if (len == cap) {
			uint8_t *more = realloc(buf, cap = cap ? 2 * cap : 4096);

			if (!more) {
				free(buf);
				fclose(f);
				return 1;
			}
			buf = more;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n);
	fclose(f);
	/* a copy of exactly its size, so that ASan sees a read past its end */
	uint8_t *exact = malloc(len ? len : 1);

	if (!exact) {
		free(buf);
		return 1;
	}
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
	int err = 0, files = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		struct dirent **ents;
		int n;

		if (stat(argv[i], &st) != 0)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			err |= run_file(argv[i]);
			files++;
			continue;
		}
		n = scandir(argv[i], &ents, NULL, by_name);
		for (int k = 0; k < n; k++) {
			char path[4096];

			if (ents[k]->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", argv[i], ents[k]->d_name);
				err |= run_file(path);
				files++;
			}
			free(ents[k]);
		}
		if (n >= 0)
			free(ents);
	}
	fprintf(stderr, "replayed %d inputs\n", files);
	return err;
}
