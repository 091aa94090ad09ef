/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_checksum.h - one checksum of the whole model, whatever its layout.
 */
#ifndef MLP_CHECKSUM_H
#define MLP_CHECKSUM_H

#include "mlp_trainer.h"

/*
 * Collective over the world. Gathers the shards over tp and hashes the
 * global tensors in a fixed order: W1 (H x D), b1 (H), W2 (O x H), b2 (O),
 * each row-major. *fnv gets the 32-bit FNV-1a of the little-endian bytes of
 * those float32 values, *sum their sum (in double, in the same order).
 * LLMP_ERR_MISMATCH when the dp replicas hold different models.
 */
llmp_status mlp_checksum(mlp_trainer *tr, uint32_t *fnv, double *sum);

#endif /* MLP_CHECKSUM_H */
