/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_replay.c - run the fuzz target over the stored corpus, so every
 * `make check` (and its sanitizer build) exercises the inputs the fuzzer
 * found interesting. Prints TAP.
 */
#define _DEFAULT_SOURCE /* DT_REG, d_type */

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The whole file, however large: a corpus may hold inputs bigger than the fuzzer makes. */
static int replay(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n == cap) {
			uint8_t *grown = realloc(buf, cap = cap ? 2 * cap : 4096);
			if (!grown) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = grown;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		if (got == 0)
			break;
		n += got;
	}
	int err = ferror(f);
	fclose(f);
	if (!err)
		LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return err ? -1 : 0;
}

int main(void)
{
	const char *dir = LLMP_FUZZ_CORPUS;
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];
	int count = 0;

	printf("1..1\n");
	if (!d) {
		printf("not ok 1 - cannot open corpus %s\n", dir);
		return 1;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (replay(path) != 0) {
			printf("not ok 1 - cannot read %s\n", path);
			closedir(d);
			return 1;
		}
		count++;
	}
	closedir(d);
	printf("%s 1 - replayed %d corpus inputs through the fuzz target\n", count > 0 ? "ok" : "not ok",
	       count);
	return count > 0 ? 0 : 1;
}
