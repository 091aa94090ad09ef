/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_data.c - samples of the generated data set and the teacher that
 * labels them.
 *
 * The teacher is t_o = |a_o . x| + (c_o . x)^2 / 4 - 1/2 + noise: smooth
 * and kinked parts a ReLU network can fit, made only of + and *, so the
 * data are bit-identical on every machine (no libm function whose last bit
 * may differ between versions).
 */
#define _POSIX_C_SOURCE 200809L

#include "mlp_data.h"

#include <math.h>
#include <stdlib.h>

#include "mlp_rng.h"

#define NOISE_SCALE 0.01

static void teacher_init(double *teacher, const mlp_dims *d, uint64_t seed)
{
	uint64_t key = mlp_stream_key(seed, MLP_STREAM_TEACHER);
	double scale = 1.0 / sqrt((double)d->in); /* sqrt is correctly rounded */

	for (uint64_t k = 0; k < 2ull * d->out * d->in; k++)
		teacher[k] = scale * mlp_uniform(mlp_hash(key, k, 0));
}

bool mlp_batch_alloc(mlp_batch *b, const mlp_dims *d, uint64_t seed, uint32_t first, uint32_t count)
{
	b->first = first;
	b->count = count;
	b->x = malloc(sizeof(double) * count * d->in);
	b->t = malloc(sizeof(double) * count * d->out);
	b->teacher = malloc(sizeof(double) * 2 * d->out * d->in);
	if (!b->x || !b->t || !b->teacher) {
		mlp_batch_free(b);
		return false;
	}
	teacher_init(b->teacher, d, seed);
	return true;
}

void mlp_batch_free(mlp_batch *b)
{
	free(b->x);
	free(b->t);
	free(b->teacher);
	b->x = b->t = b->teacher = NULL;
}

static double dot(const double *a, const double *x, uint32_t n)
{
	double s = 0;
	for (uint32_t j = 0; j < n; j++)
		s += a[j] * x[j];
	return s;
}

/* The teacher's outputs for one input, plus the noise of global sample `sample`. */
static void label(const mlp_batch *b, const mlp_dims *d, const double *x, uint64_t sample, uint64_t rng,
		  double *t)
{
	for (uint32_t o = 0; o < d->out; o++) {
		const double *a = b->teacher + (size_t)2 * o * d->in, *c = a + d->in;
		double ax = dot(a, x, d->in), cx = dot(c, x, d->in);
		double noise = NOISE_SCALE * mlp_uniform(mlp_hash(rng, sample, o));
		t[o] = fabs(ax) + 0.25 * cx * cx - 0.5 + noise;
	}
}

void mlp_batch_generate(mlp_batch *b, const mlp_dims *d, uint64_t seed, uint64_t step, uint64_t rng)
{
	uint64_t key = mlp_stream_key(seed, MLP_STREAM_SAMPLE);

	for (uint32_t i = 0; i < b->count; i++) {
		uint64_t sample = (uint64_t)b->first + i; /* the global index decides */
		uint64_t sample_key = mlp_hash(key, step, sample);
		double *x = b->x + (size_t)i * d->in;
		for (uint32_t j = 0; j < d->in; j++)
			x[j] = mlp_uniform(mlp_hash(sample_key, j, 0));
		label(b, d, x, sample, rng, b->t + (size_t)i * d->out);
	}
}

uint64_t mlp_rng_first(uint64_t seed)
{
	return mlp_stream_key(seed, MLP_STREAM_RNG);
}

uint64_t mlp_rng_next(uint64_t rng)
{
	return mlp_splitmix64(rng);
}
