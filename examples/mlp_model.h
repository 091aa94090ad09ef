/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_model.h - the math of the MLP y = W2 relu(W1 x + b1) + b2 on one
 * rank's shard: initial weights, forward, loss, backward, SGD. No
 * communication here (mlp_trainer.c does it between these steps).
 *
 * Tensor parallelism splits the hidden units: tp rank r holds hidden units
 * [h0, h0 + hl) with hl = H / tp, i.e. rows h0.. of W1 (H x D) and of b1
 * (column-parallel), and columns h0.. of W2 (O x H) (row-parallel). Its
 * forward gives a partial output W2[:, h0:h0+hl] relu(...); the sum of the
 * partials over tp is W2 relu(W1 x + b1), to which b2 (replicated) is added
 * once. The backward needs no tp communication: every gradient of a rank's
 * shard depends only on its hidden units and on dy, which all tp ranks
 * hold whole.
 *
 * Parameters and gradients are float32; activations, sums and the loss are
 * double, so the loss is a smooth double function of the float parameters
 * and the gradient check's finite differences see it exactly.
 */
#ifndef MLP_MODEL_H
#define MLP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mlp_data.h"
#include "mlp_options.h"

/* Which part of the model and of the batch this rank holds. */
typedef struct mlp_shard {
	uint32_t tp_rank, tp_size, dp_rank, dp_size;
	uint32_t h0, hl; /* hidden units [h0, h0 + hl) */
	uint32_t s0, sl; /* samples [s0, s0 + sl) of each step's global batch */
} mlp_shard;

/* One rank's shard of the parameters (or of their gradients), in one block
 * so that one allreduce moves every gradient. */
typedef struct mlp_params {
	float *block;
	size_t count; /* floats in block */
	float *w1;    /* hl x in: rows h0.. of W1 */
	float *b1;    /* hl: entries h0.. of b1 */
	float *w2;    /* out x hl: columns h0.. of W2, row-major */
	float *b2;    /* out: b2 whole (replicated over tp and dp) */
} mlp_params;

/* The activations of one step on this rank. */
typedef struct mlp_acts {
	double *pre; /* sl x hl: W1 x + b1 before the ReLU */
	double *y;   /* sl x out: the tp-partial output, then (after the sum) the output */
	double *dy;  /* sl x out: dLoss/dy */
	double *dh;  /* sl x hl: dLoss/dpre */
} mlp_acts;

bool mlp_params_alloc(mlp_params *p, const mlp_dims *d, const mlp_shard *s);
void mlp_params_free(mlp_params *p);
/* Each element from its global index: every layout starts from one model. */
void mlp_params_init(mlp_params *p, const mlp_dims *d, const mlp_shard *s, uint64_t seed);

bool mlp_acts_alloc(mlp_acts *a, const mlp_dims *d, const mlp_shard *s);
void mlp_acts_free(mlp_acts *a);

/* a->pre and a->y: the tp-partial output, without b2. */
void mlp_forward_partial(const mlp_params *p, const mlp_dims *d, const mlp_shard *s, const mlp_batch *b,
			 mlp_acts *a);
/* After the tp sum of a->y: add b2; set a->dy and return this rank's sum of
 * squared errors (the loss is their global sum / (B * O)). */
double mlp_forward_finish(const mlp_params *p, const mlp_dims *d, const mlp_shard *s, const mlp_batch *b,
			  mlp_acts *a);
/* This rank's share of the gradients (their dp sum is the gradient of the loss). */
void mlp_backward(const mlp_params *p, const mlp_dims *d, const mlp_shard *s, const mlp_batch *b, mlp_acts *a,
		  mlp_params *grad);
/* p -= lr * grad */
void mlp_sgd(mlp_params *p, const mlp_params *grad, double lr);

#endif /* MLP_MODEL_H */
