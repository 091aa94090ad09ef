/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_trainer.h - the distributed training step: the model's math
 * (mlp_model.h) joined by libllmp's collectives over the tp and dp groups.
 */
#ifndef MLP_TRAINER_H
#define MLP_TRAINER_H

#include <llmp/llmp.h>
#include "mlp_data.h"
#include "mlp_model.h"
#include "mlp_options.h"

typedef struct mlp_trainer {
	llmp_ctx *ctx;
	llmp_comm *tp, *dp, *world;
	const mlp_options *opts;
	mlp_shard shard;
	mlp_params params, grad;
	mlp_batch batch;
	mlp_acts acts;
	uint64_t step; /* the step being computed, for messages */
} mlp_trainer;

/*
 * Find this rank's shard from the layout and allocate it. The layout must
 * be tp x dp only, tp must divide --hidden and dp --batch: otherwise
 * LLMP_ERR_LAYOUT, with why (naming the option) written to why.
 */
llmp_status mlp_trainer_setup(mlp_trainer *tr, llmp_ctx *ctx, const mlp_options *opts, char *why,
			      size_t whylen);
void mlp_trainer_free(mlp_trainer *tr);

/* Collective: the global mean loss of the current parameters on step's
 * data, leaving the activations and dLoss/dy in tr->acts. */
llmp_status mlp_trainer_loss(mlp_trainer *tr, uint64_t step, uint64_t rng, double *loss);
/* Collective: tr->grad = the gradient of that loss (summed over dp). */
llmp_status mlp_trainer_gradient(mlp_trainer *tr);
/* Collective: one SGD step on step's data; *loss is the loss before it. */
llmp_status mlp_trainer_step(mlp_trainer *tr, uint64_t step, uint64_t rng, double *loss);

#endif /* MLP_TRAINER_H */
