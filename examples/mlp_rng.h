/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_rng.h - counter-based random numbers for the example MLP.
 *
 * Every random value the program uses (initial weights, samples, the
 * teacher, the label noise) is a pure function of a key and a few counters,
 * never of how many values were drawn before. That is what makes a run
 * independent of the layout (a tp or dp rank draws exactly the values of
 * its share, by their global indices) and of restarts (the data position is
 * just the step number).
 */
#ifndef MLP_RNG_H
#define MLP_RNG_H

#include <stdint.h>

/* SplitMix64's output function: a bijection of 64-bit words that mixes well. */
static inline uint64_t mlp_splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* A random word for the counters (a, b) under key; mixing between the
 * counters keeps (a, b) and (b, a) apart. */
static inline uint64_t mlp_hash(uint64_t key, uint64_t a, uint64_t b)
{
	return mlp_splitmix64(mlp_splitmix64(mlp_splitmix64(key) ^ a) ^ b);
}

/* Uniform in [-1, 1), from the top 53 bits: exact in double. */
static inline double mlp_uniform(uint64_t word)
{
	return (double)(word >> 11) * 0x1.0p-52 - 1.0;
}

/* Keys that keep the streams of one seed apart. */
enum mlp_stream {
	MLP_STREAM_W1 = 1,
	MLP_STREAM_B1,
	MLP_STREAM_W2,
	MLP_STREAM_B2,
	MLP_STREAM_TEACHER,
	MLP_STREAM_SAMPLE,
	MLP_STREAM_RNG,
};

/* The key of one stream of a seed. */
static inline uint64_t mlp_stream_key(uint64_t seed, enum mlp_stream stream)
{
	return mlp_hash(seed, (uint64_t)stream, 0x6d6c70u /* "mlp" */);
}

#endif /* MLP_RNG_H */
