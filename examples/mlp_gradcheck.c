/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_gradcheck.c - finite differences of the loss, in double precision.
 *
 * Each global parameter is perturbed by +-eps wherever it is held (on its
 * tp rank, on every dp replica; b2 on every rank) and the loss evaluated by
 * the same distributed forward a training step uses, so the check covers
 * the tp split and the dp sums too, not only the local math. The loss is
 * computed in double from float32 parameters; the difference quotient is
 * divided by the perturbation as it landed in float32, which is exact, so
 * the quotient's error is the double rounding of the loss over eps.
 *
 * The loss is piecewise quadratic in any one parameter (a ReLU network
 * with a squared error), so the central difference is exact but where a
 * ReLU changes side within eps: eps is small to make that unlikely.
 */
#define _POSIX_C_SOURCE 200809L

#include "mlp_gradcheck.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "mlp_data.h"

#define EPS 1e-4f
/* Below this, a gradient is compared absolutely: its relative error is noise. */
#define GRAD_FLOOR 1e-7

enum tensor { T_W1, T_B1, T_W2, T_B2, NTENSORS };
static const char *const tensor_names[NTENSORS] = { "W1", "b1", "W2", "b2" };

/* The worst parameter this rank checked. */
typedef struct worst {
	double error, analytic, numeric;
	enum tensor tensor;
	uint64_t index;
} worst;

static uint64_t tensor_size(const mlp_dims *d, enum tensor t)
{
	switch (t) {
	case T_W1: return (uint64_t)d->hidden * d->in;
	case T_B1: return d->hidden;
	case T_W2: return (uint64_t)d->out * d->hidden;
	default: return d->out;
	}
}

/* This rank's copy of global element `index` of tensor t, or NULL. */
static float *locate(const mlp_trainer *tr, enum tensor t, uint64_t index)
{
	const mlp_dims *d = &tr->opts->dims;
	const mlp_shard *s = &tr->shard;
	const mlp_params *p = &tr->params;
	uint64_t unit = t == T_W1 ? index / d->in : t == T_B1 ? index : index % d->hidden;

	if (t == T_B2)
		return p->b2 + index;
	if (unit < s->h0 || unit >= (uint64_t)s->h0 + s->hl)
		return NULL;
	unit -= s->h0;
	if (t == T_W1)
		return p->w1 + unit * d->in + index % d->in;
	if (t == T_B1)
		return p->b1 + unit;
	return p->w2 + (index / d->hidden) * s->hl + unit;
}

/* Collective: the loss with *param (NULL: not held here) set to value. */
static llmp_status loss_at(mlp_trainer *tr, float *param, float value, uint64_t rng, double *loss)
{
	if (param)
		*param = value;
	return mlp_trainer_loss(tr, 0, rng, loss);
}

/* Collective: the central difference for one parameter; *numeric only where held. */
static llmp_status difference(mlp_trainer *tr, float *param, uint64_t rng, double *numeric)
{
	float orig = param ? *param : 0, plus = orig + EPS, minus = orig - EPS;
	double lp, lm;
	llmp_status st;

	if ((st = loss_at(tr, param, plus, rng, &lp)) != LLMP_OK ||
	    (st = loss_at(tr, param, minus, rng, &lm)) != LLMP_OK)
		return st;
	if (param) {
		*param = orig;
		*numeric = (lp - lm) / ((double)plus - (double)minus);
	}
	return LLMP_OK;
}

static void compare(worst *w, enum tensor t, uint64_t index, double analytic, double numeric)
{
	double scale = fmax(fmax(fabs(analytic), fabs(numeric)), GRAD_FLOOR);
	double error = fabs(analytic - numeric) / scale;

	if (error >= w->error)
		*w = (worst){ error, analytic, numeric, t, index };
}

static llmp_status check_tensor(mlp_trainer *tr, enum tensor t, uint64_t rng, worst *w)
{
	for (uint64_t i = 0; i < tensor_size(&tr->opts->dims, t); i++) {
		float *param = locate(tr, t, i);
		double numeric = 0;
		llmp_status st = difference(tr, param, rng, &numeric);
		if (st != LLMP_OK)
			return st;
		if (param)
			compare(w, t, i, tr->grad.block[param - tr->params.block], numeric);
	}
	return LLMP_OK;
}

static void report_worst(const mlp_trainer *tr, const worst *w, double max_error)
{
	if (w->error < max_error || max_error <= MLP_GRADCHECK_TOLERANCE)
		return;
	fprintf(stderr,
		MLP_PROG ": rank %u: grad-check: worst %s[%" PRIu64 "]: analytic %.9g, numeric %.9g, "
			 "relative error %.3e\n",
		llmp_rank(tr->ctx), tensor_names[w->tensor], w->index, w->analytic, w->numeric, w->error);
}

llmp_status mlp_grad_check(mlp_trainer *tr, double *max_error, uint64_t *params)
{
	uint64_t rng = mlp_rng_first(tr->opts->seed);
	worst w = { 0, 0, 0, T_W1, 0 };
	double loss;
	llmp_status st;

	*params = 0;
	if ((st = mlp_trainer_loss(tr, 0, rng, &loss)) != LLMP_OK ||
	    (st = mlp_trainer_gradient(tr)) != LLMP_OK)
		return st;
	for (int t = 0; t < NTENSORS; t++) {
		if ((st = check_tensor(tr, (enum tensor)t, rng, &w)) != LLMP_OK)
			return st;
		*params += tensor_size(&tr->opts->dims, (enum tensor)t);
	}
	*max_error = w.error;
	st = llmp_allreduce(tr->world, max_error, max_error, 1, LLMP_FLOAT64, LLMP_MAX);
	if (st != LLMP_OK) {
		fprintf(stderr, MLP_PROG ": rank %u: grad-check: allreduce over the world: %s\n",
			llmp_rank(tr->ctx), llmp_errmsg(tr->ctx));
		return st;
	}
	report_worst(tr, &w, *max_error);
	return LLMP_OK;
}
