/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_state.h - what a checkpoint of the example holds, and its resume.
 */
#ifndef MLP_STATE_H
#define MLP_STATE_H

#include <stdint.h>

#include <llmp/llmp_job.h>
#include "mlp_trainer.h"

#define MLP_META_VERSION 1

/*
 * The program state beside the tensors, saved as the checkpoint's metadata.
 * Fixed-width fields only, so the bytes mean the same on every rank.
 */
typedef struct mlp_meta {
	uint32_t version; /* MLP_META_VERSION */
	uint32_t in, hidden, out, batch;
	uint32_t reserved; /* zero */
	uint64_t seed;
	uint64_t next_step; /* the data position: the step to compute next */
	uint64_t rng;       /* the running RNG word for that step's noise */
} mlp_meta;

/* The state of a fresh run, before step 0. */
void mlp_meta_init(mlp_meta *meta, const mlp_options *opts);

/* Register W1, b1, W2 and b2 with their global shapes and this rank's slice. */
llmp_status mlp_state_register(llmp_ckpt *ckpt, mlp_trainer *tr);

/*
 * Collective: fill the parameters and *meta from the newest checkpoint (or
 * leave them, with no checkpoint) and set *next_step. A checkpoint of
 * another model or data set (--hidden, --seed, ... differ) is refused with
 * LLMP_ERR_MISMATCH and why, naming the option, in why.
 */
llmp_status mlp_state_resume(llmp_job *job, const mlp_options *opts, mlp_meta *meta, uint64_t *next_step,
			     char *why, size_t whylen);

#endif /* MLP_STATE_H */
