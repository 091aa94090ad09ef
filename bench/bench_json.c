/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_json.c - the JSON reader on objects of 10k, 100k and 1M distinct
 * keys (the shape that made the old duplicate-key check quadratic in
 * slurmstepd, tests/security.bats H2): time per key at each size, and the
 * ratio of the largest's to the smallest's. Linear reading keeps the
 * ratio near 1 (sorting adds a log factor: about 1.5 from 10k to 1M);
 * the old reader's grew with n, 100x over that range.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json_read.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* {"k0000000":0,...} of n keys. */
static char *object_of(size_t n, size_t *len)
{
	char *text = malloc(n * 13 + 2), *p = text;
	if (!text)
		return NULL;
	*p++ = '{';
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s\"k%07zu\":0", i ? "," : "", i);
	*p++ = '}';
	*len = (size_t)(p - text);
	return text;
}

/* The best of a few parses, in seconds. */
static double parse_seconds(const char *text, size_t len, int rounds)
{
	char msg[256];
	double best = 1e30;
	for (int r = 0; r < rounds; r++) {
		struct json_value v;
		double t0 = now();
		if (json_parse(text, len, &v, msg, sizeof msg) != LLMP_OK) {
			fprintf(stderr, "bench_json: %s\n", msg);
			exit(1);
		}
		double t = now() - t0;
		json_free(&v);
		if (t < best)
			best = t;
	}
	return best;
}

int main(void)
{
	static const size_t sizes[] = { 10000, 100000, 1000000 };
	double per_key[3];
	printf("%10s %12s %12s %12s\n", "keys", "bytes", "parse_ms", "ns_per_key");
	for (int i = 0; i < 3; i++) {
		size_t len;
		char *text = object_of(sizes[i], &len);
		if (!text)
			return 1;
		double s = parse_seconds(text, len, sizes[i] >= 1000000 ? 3 : 10);
		per_key[i] = s / (double)sizes[i] * 1e9;
		printf("%10zu %12zu %12.2f %12.1f\n", sizes[i], len, s * 1e3, per_key[i]);
		free(text);
	}
	printf("time per key, 1M keys / 10k keys: %.2f (linear: about 1; quadratic: 100)\n",
	       per_key[2] / per_key[0]);
	return 0;
}
