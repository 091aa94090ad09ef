/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_gradcheck.h - the backward pass checked against finite differences.
 */
#ifndef MLP_GRADCHECK_H
#define MLP_GRADCHECK_H

#include "mlp_trainer.h"

#define MLP_GRADCHECK_TOLERANCE 1e-4

/*
 * Collective over the world, on the initial model and step 0's data: the
 * analytic gradient (the distributed backward, summed over dp) of every
 * global parameter against the central difference of the distributed loss.
 * *max_error gets the largest relative error over the world, *params the
 * number of parameters checked. The rank holding the worst one prints it on
 * stderr when it exceeds MLP_GRADCHECK_TOLERANCE.
 */
llmp_status mlp_grad_check(mlp_trainer *tr, double *max_error, uint64_t *params);

#endif /* MLP_GRADCHECK_H */
