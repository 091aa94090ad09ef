/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attn_merge.h - the log-sum-exp merge of two partial attention outputs,
 * the step that combines context-parallel blocks (host reference).
 *
 * For each of rows query rows, block outputs o1, o2 (rows x dim floats, row
 * after row, each normalised within its block) and their log-sum-exps lse1,
 * lse2 (rows floats) become
 *
 *   lse = max + log1p(exp(min - max)),   o = exp(lse1 - lse) o1 + exp(lse2 - lse) o2
 *
 * in float32. A row whose lse is -inf on both sides (no visible key) gives
 * lse = -inf and o = 0, never NaN; a side with weight 0 contributes nothing,
 * whatever its o holds. o may be o1 or o2 and lse may be lse1 or lse2
 * (exactly, to merge in place); other overlaps are not allowed.
 * kernels/cuda/attn_merge.cu is the device version, tested against this.
 */
#ifndef LLMP_KERNELS_ATTN_MERGE_H
#define LLMP_KERNELS_ATTN_MERGE_H

#include <stddef.h>

#include <llmp/llmp_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* LLMP_ERR_ARG for a NULL buffer when rows > 0, or dim 0 when rows > 0. */
llmp_status kern_attn_merge(float *o, float *lse, const float *o1, const float *lse1, const float *o2,
			    const float *lse2, size_t rows, size_t dim);

#ifdef __cplusplus
}
#endif

#endif /* LLMP_KERNELS_ATTN_MERGE_H */
