/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_state.c - the example's checkpointed state: the four parameter
 * tensors as global arrays (so a checkpoint reads back whole with h5py, and
 * loads into another tp/dp layout), and a small metadata struct with the
 * data position and the RNG.
 *
 * Gradients and activations are not state: they are recomputed every step.
 */
#define _POSIX_C_SOURCE 200809L

#include "mlp_state.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mlp_data.h"

void mlp_meta_init(mlp_meta *meta, const mlp_options *opts)
{
	memset(meta, 0, sizeof *meta);
	meta->version = MLP_META_VERSION;
	meta->in = opts->dims.in;
	meta->hidden = opts->dims.hidden;
	meta->out = opts->dims.out;
	meta->batch = opts->dims.batch;
	meta->seed = opts->seed;
	meta->next_step = 0;
	meta->rng = mlp_rng_first(opts->seed);
}

static llmp_status register_2d(llmp_ckpt *ckpt, const char *name, uint64_t rows, uint64_t cols, uint64_t row0,
			       uint64_t col0, uint64_t nrows, uint64_t ncols, float *data)
{
	uint64_t global[2] = { rows, cols }, offset[2] = { row0, col0 }, shape[2] = { nrows, ncols };
	return llmp_ckpt_register(ckpt, name, LLMP_FLOAT32, 2, global, offset, shape, data);
}

static llmp_status register_1d(llmp_ckpt *ckpt, const char *name, uint64_t len, uint64_t off, uint64_t n,
			       float *data)
{
	return llmp_ckpt_register(ckpt, name, LLMP_FLOAT32, 1, &len, &off, &n, data);
}

llmp_status mlp_state_register(llmp_ckpt *ckpt, mlp_trainer *tr)
{
	const mlp_dims *d = &tr->opts->dims;
	const mlp_shard *s = &tr->shard;
	mlp_params *p = &tr->params;
	llmp_status st;

	/* W1 and b1: rows h0..h0+hl; W2: columns h0..h0+hl; b2: whole, a replica */
	if ((st = register_2d(ckpt, "W1", d->hidden, d->in, s->h0, 0, s->hl, d->in, p->w1)) ||
	    (st = register_1d(ckpt, "b1", d->hidden, s->h0, s->hl, p->b1)) ||
	    (st = register_2d(ckpt, "W2", d->out, d->hidden, 0, s->h0, d->out, s->hl, p->w2)) ||
	    (st = register_1d(ckpt, "b2", d->out, 0, d->out, p->b2)))
		return st;
	return LLMP_OK;
}

/* The checkpoint's model and data must be this run's: name the first that differs. */
static bool meta_matches(const mlp_meta *m, const mlp_options *o, char *why, size_t whylen)
{
	const struct {
		const char *option;
		uint64_t saved, now;
	} fields[] = {
		{ "--in", m->in, o->dims.in },    { "--hidden", m->hidden, o->dims.hidden },
		{ "--out", m->out, o->dims.out }, { "--batch", m->batch, o->dims.batch },
		{ "--seed", m->seed, o->seed },
	};

	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		if (fields[i].saved != fields[i].now) {
			snprintf(why, whylen,
				 "the checkpoint was written with %s %" PRIu64 ", this run has %s %" PRIu64
				 ": use its options or another checkpoint directory",
				 fields[i].option, fields[i].saved, fields[i].option, fields[i].now);
			return false;
		}
	return true;
}

static bool meta_valid(const mlp_meta *m, size_t len, uint64_t next_step, char *why, size_t whylen)
{
	if (len != sizeof *m || m->version != MLP_META_VERSION) {
		snprintf(why, whylen,
			 "the checkpoint's metadata (%zu bytes, version %u) is not this program's "
			 "(%zu bytes, version %u)",
			 len, len >= sizeof m->version ? m->version : 0, sizeof *m, MLP_META_VERSION);
		return false;
	}
	if (m->next_step != next_step) {
		snprintf(why, whylen, "the checkpoint of step %" PRIu64 " says the next step is %" PRIu64,
			 next_step - 1, m->next_step);
		return false;
	}
	return true;
}

llmp_status mlp_state_resume(llmp_job *job, const mlp_options *opts, mlp_meta *meta, uint64_t *next_step,
			     char *why, size_t whylen)
{
	mlp_meta saved = *meta;
	size_t len = 0;
	llmp_status st;

	st = llmp_job_resume(job, next_step, &saved, sizeof saved, &len);
	if (st != LLMP_OK) {
		snprintf(why, whylen, "resume: %s", llmp_job_errmsg(job));
		return st;
	}
	if (*next_step == 0)
		return LLMP_OK; /* no checkpoint yet: a fresh start */
	if (!meta_valid(&saved, len, *next_step, why, whylen) || !meta_matches(&saved, opts, why, whylen))
		return LLMP_ERR_MISMATCH;
	*meta = saved;
	return LLMP_OK;
}
