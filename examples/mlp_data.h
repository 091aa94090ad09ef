/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_data.h - the generated training data: a teacher function of random
 * inputs, plus a little label noise.
 *
 * Sample i of step s depends only on (seed, s, i), so the data position of
 * a run is its step number and a dp rank generates exactly its share of the
 * global batch, whatever the layout. The label noise is drawn from a
 * running RNG word the program carries from step to step and checkpoints,
 * as a real program carries its dropout or sampling generator: a resume
 * that failed to restore it would change the loss trace.
 */
#ifndef MLP_DATA_H
#define MLP_DATA_H

#include <stdbool.h>
#include <stdint.h>

#include "mlp_options.h"

/* This rank's samples of one step, in double: the math of a step is double. */
typedef struct mlp_batch {
	uint32_t first, count; /* global sample indices [first, first + count) */
	double *x;             /* count x in */
	double *t;             /* count x out: the targets */
	double *teacher;       /* out x 2 x in: the teacher's two weight rows per output */
} mlp_batch;

/* Allocate the batch of samples [first, first + count); false: out of memory. */
bool mlp_batch_alloc(mlp_batch *b, const mlp_dims *d, uint64_t seed, uint32_t first, uint32_t count);
void mlp_batch_free(mlp_batch *b);

/* Fill the batch with the samples of `step`, with noise from the RNG word `rng`. */
void mlp_batch_generate(mlp_batch *b, const mlp_dims *d, uint64_t seed, uint64_t step, uint64_t rng);

/* The running RNG word before step 0, and its value for the next step. */
uint64_t mlp_rng_first(uint64_t seed);
uint64_t mlp_rng_next(uint64_t rng);

#endif /* MLP_DATA_H */
