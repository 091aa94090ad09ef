/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_crc32c.c - how fast CRC-32C runs, next to memcpy.
 *
 * Figures, not a test: GB/s of kern_crc32c over a 64 MiB buffer, with the
 * implementation the library picks for this CPU and with the portable one,
 * beside a memcpy of the same 64 MiB. Each figure is the best of several
 * repetitions, so a noisy neighbour inflates it less.
 *
 * The library reads LLMP_CRC32C_PORTABLE once, at its first call, and keeps
 * its choice for the life of the process; so the portable figure comes from
 * a child forked before this process first calls it, which sets the variable
 * and prints its line while the parent waits.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernels/crc32c.h"

#define BYTES ((size_t)64 << 20)
#define REPEATS 5

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile uint32_t sink; /* keeps the compiler from dropping the work */

static double gbps(double seconds)
{
	return (double)BYTES / seconds * 1e-9;
}

static double time_crc32c(const unsigned char *buf)
{
	double best = 1e30;

	for (int r = 0; r < REPEATS; r++) {
		double start = now();
		uint32_t crc = kern_crc32c(0, buf, BYTES);
		double elapsed = now() - start;
		if (elapsed < best)
			best = elapsed;
		sink ^= crc;
	}
	return best;
}

static double time_memcpy(unsigned char *dst, const unsigned char *src)
{
	double best = 1e30;

	for (int r = 0; r < REPEATS; r++) {
		double start = now();
		memcpy(dst, src, BYTES);
		double elapsed = now() - start;
		if (elapsed < best)
			best = elapsed;
		sink ^= dst[r];
	}
	return best;
}

/* Print one line of the table: name, CRC GB/s, memcpy GB/s. */
static void report(const char *name, const unsigned char *buf, double copy)
{
	printf("%-10s %12.2f %12.2f\n", name, gbps(time_crc32c(buf)), copy);
	fflush(stdout);
}

int main(void)
{
	unsigned char *buf = malloc(BYTES), *dst = malloc(BYTES);

	if (!buf || !dst) {
		fprintf(stderr, "bench_crc32c: out of memory\n");
		return 1;
	}
	/* Touch every page first, so page faults stay out of the timings. */
	for (size_t i = 0; i < BYTES; i++)
		buf[i] = (unsigned char)(i * 131 + (i >> 13));
	memset(dst, 0, BYTES);

	double copy = gbps(time_memcpy(dst, buf));
	printf("kern_crc32c of 64 MiB, best of %d, GB/s\n", REPEATS);
	printf("%-10s %12s %12s\n", "code", "crc32c", "memcpy");
	fflush(stdout);

	pid_t pid = fork();
	if (pid == 0) {
		if (setenv("LLMP_CRC32C_PORTABLE", "1", 1) != 0)
			_exit(1);
		report("portable", buf, copy);
		_exit(0);
	}
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(stderr, "bench_crc32c: the portable run failed\n");

	report("default", buf, copy); /* the crc32 instruction where the CPU has it */
	free(buf), free(dst);
	return 0;
}
