/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_trainer.c - one training step over the tp x dp layout:
 *
 *   forward   each tp rank: partial y from its hidden units
 *             allreduce(sum) of y over tp, then + b2
 *   loss      allreduce(sum) of the squared errors over dp
 *   backward  local (see mlp_model.h)
 *   gradient  allreduce(sum) over dp of all gradients at once; b2's is
 *             identical on the tp ranks (they hold the same y), so it is
 *             summed over dp only, like the rest
 *   update    SGD, identical on the dp replicas since their inputs are
 */
#define _POSIX_C_SOURCE 200809L

#include "mlp_trainer.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Print which collective failed on which rank at which step, and pass st on. */
static llmp_status failed(const mlp_trainer *tr, llmp_status st, const char *what)
{
	fprintf(stderr, MLP_PROG ": rank %u: step %" PRIu64 ": %s: %s: %s\n", llmp_rank(tr->ctx), tr->step,
		what, llmp_strerror(st), llmp_errmsg(tr->ctx));
	return st;
}

/* The layout is tp x dp: no pipeline, context or expert parallelism here. */
static bool layout_supported(const llmp_plan *plan, char *why, size_t whylen)
{
	static const struct {
		enum llmp_axis axis;
		const char *name;
	} unsupported[] = { { LLMP_AXIS_PP, "pp" }, { LLMP_AXIS_CP, "cp" }, { LLMP_AXIS_EP, "ep" } };

	for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
		uint32_t n = llmp_plan_size(plan, unsupported[i].axis);
		if (n != 1) {
			snprintf(why, whylen, "layout %s=%u: this example splits over tp and dp only",
				 unsupported[i].name, n);
			return false;
		}
	}
	return true;
}

static llmp_status find_shard(mlp_trainer *tr, char *why, size_t whylen)
{
	const mlp_dims *d = &tr->opts->dims;
	mlp_shard *s = &tr->shard;

	s->tp_rank = llmp_comm_rank(tr->tp);
	s->tp_size = llmp_comm_size(tr->tp);
	s->dp_rank = llmp_comm_rank(tr->dp);
	s->dp_size = llmp_comm_size(tr->dp);
	if (d->hidden % s->tp_size) {
		snprintf(why, whylen, "--hidden %u is not divisible by tp=%u", d->hidden, s->tp_size);
		return LLMP_ERR_LAYOUT;
	}
	if (d->batch % s->dp_size) {
		snprintf(why, whylen, "--batch %u is not divisible by dp=%u", d->batch, s->dp_size);
		return LLMP_ERR_LAYOUT;
	}
	s->hl = d->hidden / s->tp_size;
	s->h0 = s->tp_rank * s->hl;
	s->sl = d->batch / s->dp_size;
	s->s0 = s->dp_rank * s->sl;
	return LLMP_OK;
}

static llmp_status get_comms(mlp_trainer *tr, char *why, size_t whylen)
{
	llmp_status st;

	if ((st = llmp_comm_get(tr->ctx, LLMP_GROUP_TP, &tr->tp)) != LLMP_OK ||
	    (st = llmp_comm_get(tr->ctx, LLMP_GROUP_DP, &tr->dp)) != LLMP_OK ||
	    (st = llmp_comm_world(tr->ctx, &tr->world)) != LLMP_OK)
		snprintf(why, whylen, "communicators: %s", llmp_errmsg(tr->ctx));
	return st;
}

llmp_status mlp_trainer_setup(mlp_trainer *tr, llmp_ctx *ctx, const mlp_options *opts, char *why,
			      size_t whylen)
{
	const mlp_dims *d = &opts->dims;
	llmp_status st;

	memset(tr, 0, sizeof *tr);
	tr->ctx = ctx;
	tr->opts = opts;
	if (!layout_supported(llmp_layout(ctx), why, whylen))
		return LLMP_ERR_LAYOUT;
	if ((st = get_comms(tr, why, whylen)) != LLMP_OK || (st = find_shard(tr, why, whylen)) != LLMP_OK)
		return st;
	if (!mlp_params_alloc(&tr->params, d, &tr->shard) || !mlp_params_alloc(&tr->grad, d, &tr->shard) ||
	    !mlp_acts_alloc(&tr->acts, d, &tr->shard) ||
	    !mlp_batch_alloc(&tr->batch, d, opts->seed, tr->shard.s0, tr->shard.sl)) {
		snprintf(why, whylen, "out of memory for a shard of %u hidden units and %u samples",
			 tr->shard.hl, tr->shard.sl);
		mlp_trainer_free(tr);
		return LLMP_ERR_NOMEM;
	}
	mlp_params_init(&tr->params, d, &tr->shard, opts->seed);
	return LLMP_OK;
}

void mlp_trainer_free(mlp_trainer *tr)
{
	mlp_params_free(&tr->params);
	mlp_params_free(&tr->grad);
	mlp_acts_free(&tr->acts);
	mlp_batch_free(&tr->batch);
}

llmp_status mlp_trainer_loss(mlp_trainer *tr, uint64_t step, uint64_t rng, double *loss)
{
	const mlp_dims *d = &tr->opts->dims;
	mlp_acts *a = &tr->acts;
	llmp_status st;
	double sse;

	tr->step = step;
	mlp_batch_generate(&tr->batch, d, tr->opts->seed, step, rng);
	mlp_forward_partial(&tr->params, d, &tr->shard, &tr->batch, a);
	st = llmp_allreduce(tr->tp, a->y, a->y, (size_t)tr->shard.sl * d->out, LLMP_FLOAT64, LLMP_SUM);
	if (st != LLMP_OK)
		return failed(tr, st, "allreduce of the outputs over tp");
	sse = mlp_forward_finish(&tr->params, d, &tr->shard, &tr->batch, a);
	st = llmp_allreduce(tr->dp, &sse, &sse, 1, LLMP_FLOAT64, LLMP_SUM);
	if (st != LLMP_OK)
		return failed(tr, st, "allreduce of the loss over dp");
	*loss = sse / ((double)d->batch * d->out);
	return LLMP_OK;
}

llmp_status mlp_trainer_gradient(mlp_trainer *tr)
{
	mlp_params *g = &tr->grad;
	llmp_status st;

	mlp_backward(&tr->params, &tr->opts->dims, &tr->shard, &tr->batch, &tr->acts, g);
	st = llmp_allreduce(tr->dp, g->block, g->block, g->count, LLMP_FLOAT32, LLMP_SUM);
	if (st != LLMP_OK)
		return failed(tr, st, "allreduce of the gradients over dp");
	return LLMP_OK;
}

llmp_status mlp_trainer_step(mlp_trainer *tr, uint64_t step, uint64_t rng, double *loss)
{
	llmp_status st;

	if ((st = mlp_trainer_loss(tr, step, rng, loss)) != LLMP_OK ||
	    (st = mlp_trainer_gradient(tr)) != LLMP_OK)
		return st;
	mlp_sgd(&tr->params, &tr->grad, tr->opts->lr);
	return LLMP_OK;
}
