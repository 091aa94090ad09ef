/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_model.c - the MLP's math on one rank's shard (see mlp_model.h for
 * the split). Loops run in one fixed order, so a rank's results depend only
 * on its inputs: the same layout gives the same bits on every run.
 */
#define _POSIX_C_SOURCE 200809L

#include "mlp_model.h"

#include <math.h>
#include <stdlib.h>

#include "mlp_rng.h"

bool mlp_params_alloc(mlp_params *p, const mlp_dims *d, const mlp_shard *s)
{
	size_t w1 = (size_t)s->hl * d->in, b1 = s->hl, w2 = (size_t)d->out * s->hl;

	p->count = w1 + b1 + w2 + d->out;
	p->block = calloc(p->count, sizeof(float));
	if (!p->block)
		return false;
	p->w1 = p->block;
	p->b1 = p->w1 + w1;
	p->w2 = p->b1 + b1;
	p->b2 = p->w2 + w2;
	return true;
}

void mlp_params_free(mlp_params *p)
{
	free(p->block);
	p->block = NULL;
}

/* Uniform in [-bound, bound), from the element's global index in its tensor. */
static float init_value(uint64_t seed, enum mlp_stream tensor, uint64_t global, double bound)
{
	return (float)(bound * mlp_uniform(mlp_hash(mlp_stream_key(seed, tensor), global, 0)));
}

void mlp_params_init(mlp_params *p, const mlp_dims *d, const mlp_shard *s, uint64_t seed)
{
	/* variance 1/fan_in, as is usual for a ReLU layer; small random biases */
	double w1_bound = sqrt(3.0 / d->in), w2_bound = sqrt(3.0 / d->hidden), b_bound = 0.1;

	for (uint32_t k = 0; k < s->hl; k++) {
		uint64_t row = (uint64_t)s->h0 + k;
		for (uint32_t j = 0; j < d->in; j++)
			p->w1[(size_t)k * d->in + j] = init_value(seed, MLP_STREAM_W1, row * d->in + j,
								  w1_bound);
		p->b1[k] = init_value(seed, MLP_STREAM_B1, row, b_bound);
	}
	for (uint32_t o = 0; o < d->out; o++) {
		for (uint32_t k = 0; k < s->hl; k++)
			p->w2[(size_t)o * s->hl + k] = init_value(
				seed, MLP_STREAM_W2, (uint64_t)o * d->hidden + s->h0 + k, w2_bound);
		p->b2[o] = init_value(seed, MLP_STREAM_B2, o, b_bound);
	}
}

bool mlp_acts_alloc(mlp_acts *a, const mlp_dims *d, const mlp_shard *s)
{
	size_t hidden = (size_t)s->sl * s->hl, out = (size_t)s->sl * d->out;

	a->pre = malloc(sizeof(double) * hidden);
	a->dh = malloc(sizeof(double) * hidden);
	a->y = malloc(sizeof(double) * out);
	a->dy = malloc(sizeof(double) * out);
	if (!a->pre || !a->dh || !a->y || !a->dy) {
		mlp_acts_free(a);
		return false;
	}
	return true;
}

void mlp_acts_free(mlp_acts *a)
{
	free(a->pre);
	free(a->dh);
	free(a->y);
	free(a->dy);
	a->pre = a->dh = a->y = a->dy = NULL;
}

static double relu(double v)
{
	return v > 0 ? v : 0;
}

void mlp_forward_partial(const mlp_params *p, const mlp_dims *d, const mlp_shard *s, const mlp_batch *b,
			 mlp_acts *a)
{
	for (uint32_t i = 0; i < s->sl; i++) {
		const double *x = b->x + (size_t)i * d->in;
		double *pre = a->pre + (size_t)i * s->hl, *y = a->y + (size_t)i * d->out;
		for (uint32_t k = 0; k < s->hl; k++) {
			const float *w = p->w1 + (size_t)k * d->in;
			double v = p->b1[k];
			for (uint32_t j = 0; j < d->in; j++)
				v += (double)w[j] * x[j];
			pre[k] = v;
		}
		for (uint32_t o = 0; o < d->out; o++) {
			const float *w = p->w2 + (size_t)o * s->hl;
			double v = 0;
			for (uint32_t k = 0; k < s->hl; k++)
				v += (double)w[k] * relu(pre[k]);
			y[o] = v;
		}
	}
}

double mlp_forward_finish(const mlp_params *p, const mlp_dims *d, const mlp_shard *s, const mlp_batch *b,
			  mlp_acts *a)
{
	/* loss = sum of squared errors / (B * O) over the global batch */
	double scale = 2.0 / ((double)d->batch * d->out), sse = 0;

	for (size_t n = 0; n < (size_t)s->sl * d->out; n++) {
		double y = a->y[n] + p->b2[n % d->out], err = y - b->t[n];
		a->y[n] = y;
		a->dy[n] = scale * err;
		sse += err * err;
	}
	return sse;
}

/* dh = (W2_shard^T dy) masked by the ReLU's derivative. */
static void backward_hidden(const mlp_params *p, const mlp_dims *d, const mlp_shard *s, mlp_acts *a)
{
	for (uint32_t i = 0; i < s->sl; i++) {
		const double *dy = a->dy + (size_t)i * d->out, *pre = a->pre + (size_t)i * s->hl;
		double *dh = a->dh + (size_t)i * s->hl;
		for (uint32_t k = 0; k < s->hl; k++) {
			double v = 0;
			if (pre[k] > 0)
				for (uint32_t o = 0; o < d->out; o++)
					v += (double)p->w2[(size_t)o * s->hl + k] * dy[o];
			dh[k] = v;
		}
	}
}

/* grad[r][c] = sum over samples of left[i][r] * right[i][c] (right NULL: 1). */
static void outer_sum(const double *left, uint32_t rows, const double *right, uint32_t cols, uint32_t samples,
		      bool relu_right, float *grad)
{
	for (uint32_t r = 0; r < rows; r++)
		for (uint32_t c = 0; c < cols; c++) {
			double v = 0;
			for (uint32_t i = 0; i < samples; i++) {
				double rv = right ? right[(size_t)i * cols + c] : 1.0;
				v += left[(size_t)i * rows + r] * (relu_right ? relu(rv) : rv);
			}
			grad[(size_t)r * cols + c] = (float)v;
		}
}

void mlp_backward(const mlp_params *p, const mlp_dims *d, const mlp_shard *s, const mlp_batch *b, mlp_acts *a,
		  mlp_params *grad)
{
	backward_hidden(p, d, s, a);
	/* dW2[o][k] = sum_i dy[i][o] relu(pre[i][k]);  db2[o] = sum_i dy[i][o] */
	outer_sum(a->dy, d->out, a->pre, s->hl, s->sl, true, grad->w2);
	outer_sum(a->dy, d->out, NULL, 1, s->sl, false, grad->b2);
	/* dW1[k][j] = sum_i dh[i][k] x[i][j];  db1[k] = sum_i dh[i][k] */
	outer_sum(a->dh, s->hl, b->x, d->in, s->sl, false, grad->w1);
	outer_sum(a->dh, s->hl, NULL, 1, s->sl, false, grad->b1);
}

void mlp_sgd(mlp_params *p, const mlp_params *grad, double lr)
{
	for (size_t n = 0; n < p->count; n++)
		p->block[n] = (float)((double)p->block[n] - lr * (double)grad->block[n]);
}
