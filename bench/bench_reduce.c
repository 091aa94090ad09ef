/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_reduce.c - how fast the host reduction runs, next to memcpy.
 *
 * Figures, not a test: float32, bfloat16 and int32 sums of 64 MiB buffers,
 * out of place (dst apart from a and b) and in place (dst == a), in GB/s of
 * dst bytes written, beside a memcpy of the same 64 MiB. A reduction reads
 * two buffers and writes one, memcpy reads one: on a memory-bound machine the
 * reduction should reach about two thirds of memcpy's figure. Each figure is
 * the best of several repetitions, so a noisy neighbour inflates it less.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llmp/llmp_dtype.h>
#include "kernels/reduce.h"

#define BYTES ((size_t)64 << 20)
#define REPEATS 5

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile unsigned char sink; /* keeps the compiler from dropping the work */

/* Fill with bytes that are a valid, finite value of every type (no NaNs). */
static void fill(unsigned char *p, size_t bytes, unsigned char seed)
{
	for (size_t i = 0; i < bytes; i++)
		p[i] = (unsigned char)(((i * 7 + seed) & 0x3f) | 0x01);
}

static double gbps(double seconds)
{
	return (double)BYTES / seconds * 1e-9;
}

/* Best time of REPEATS reductions of BYTES; in place when dst is a. */
static double time_reduce(void *dst, const void *a, const void *b, llmp_dtype t)
{
	size_t count = BYTES / llmp_dtype_size(t);
	double best = 1e30;

	for (int r = 0; r < REPEATS; r++) {
		double start = now();
		llmp_status st = kern_reduce(dst, a, b, count, t, LLMP_SUM);
		double elapsed = now() - start;
		if (st != LLMP_OK) {
			fprintf(stderr, "bench_reduce: kern_reduce: %s\n", llmp_strerror(st));
			exit(1);
		}
		if (elapsed < best)
			best = elapsed;
		sink ^= ((const unsigned char *)dst)[r];
	}
	return best;
}

static double time_memcpy(void *dst, const void *src)
{
	double best = 1e30;

	for (int r = 0; r < REPEATS; r++) {
		double start = now();
		memcpy(dst, src, BYTES);
		double elapsed = now() - start;
		if (elapsed < best)
			best = elapsed;
		sink ^= ((const unsigned char *)dst)[r];
	}
	return best;
}

int main(void)
{
	static const llmp_dtype types[] = { LLMP_FLOAT32, LLMP_BFLOAT16, LLMP_INT32 };
	unsigned char *a = malloc(BYTES), *b = malloc(BYTES), *dst = malloc(BYTES);

	if (!a || !b || !dst) {
		fprintf(stderr, "bench_reduce: out of memory\n");
		return 1;
	}
	/* Touch every page first, so page faults stay out of the timings. */
	fill(a, BYTES, 1), fill(b, BYTES, 2), fill(dst, BYTES, 3);

	double copy = gbps(time_memcpy(dst, a));
	printf("kern_reduce sum of 64 MiB, best of %d, GB/s of dst written\n", REPEATS);
	printf("%-10s %12s %12s %12s\n", "dtype", "out-of-place", "in-place", "memcpy");
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
		double apart = gbps(time_reduce(dst, a, b, types[i]));
		fill(dst, BYTES, 3); /* in place: keep the values from growing for ever */
		double inplace = gbps(time_reduce(dst, dst, b, types[i]));
		printf("%-10s %12.2f %12.2f %12.2f\n", llmp_dtype_name(types[i]), apart, inplace, copy);
	}
	free(a), free(b), free(dst);
	return 0;
}
