/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bits.h - what several unit tests need to build their expected values:
 * a reproducible random stream, the bits of a float and back, exact powers
 * of two. Written in the common subset of C11 and C++ (test_cuda_elem.c is
 * also compiled by nvcc), and independent of the kernels under test.
 */
#ifndef LLMP_TESTS_UNIT_BITS_H
#define LLMP_TESTS_UNIT_BITS_H

#include <stdint.h>
#include <string.h>

/* splitmix64: a fixed seed, so a failure reproduces. */
static inline uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static inline uint32_t bits_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static inline float float_of(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static inline uint64_t bits_of_double(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof u);
	return u;
}

/* 2^e by repeated exact multiplication, for |e| well inside double's range. */
static inline double pow2(int e)
{
	double r = 1.0;
	for (; e > 0; e--)
		r *= 2.0;
	for (; e < 0; e++)
		r *= 0.5;
	return r;
}

#endif /* LLMP_TESTS_UNIT_BITS_H */
