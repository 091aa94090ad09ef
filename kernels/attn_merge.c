/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attn_merge.c - the log-sum-exp merge of two partial attention outputs,
 * in float32 (attn_merge.h).
 *
 * Row by row: the two log-sum-exps give the merged one and a weight for each
 * side, then the row's dim elements are combined with them. Computing
 * log(e^L1 + e^L2) as max + log1p(e^(min - max)) never overflows (the
 * exponent is at most 0) and loses nothing when the two are far apart.
 * -inf - -inf is NaN, so a row with no visible key on either side is
 * handled first. A zero weight skips its side instead of multiplying:
 * 0 * NaN or 0 * Inf in an empty block's output would make NaN.
 */
#include "attn_merge.h"

#include <math.h>
#include <stdint.h>

/* The merged log-sum-exp of a row and the two weights. */
static float merge_row_weights(float l1, float l2, float *w1, float *w2)
{
	float hi = l1 > l2 ? l1 : l2;
	float lo = l1 > l2 ? l2 : l1;

	if (hi == -INFINITY) { /* both -inf: nothing visible in either block */
		*w1 = 0.0f;
		*w2 = 0.0f;
		return -INFINITY;
	}
	float lse = hi + log1pf(expf(lo - hi));
	*w1 = expf(l1 - lse);
	*w2 = expf(l2 - lse);
	return lse;
}

static float weighted(float w, float x)
{
	return w != 0.0f ? w * x : 0.0f;
}

llmp_status kern_attn_merge(float *o, float *lse, const float *o1, const float *lse1, const float *o2,
			    const float *lse2, size_t rows, size_t dim)
{
	if (rows == 0)
		return LLMP_OK;
	if (!o || !lse || !o1 || !lse1 || !o2 || !lse2 || dim == 0 || rows > SIZE_MAX / dim)
		return LLMP_ERR_ARG;

	for (size_t r = 0; r < rows; r++) {
		float w1, w2;
		/* Read both inputs of the row before writing: lse may be lse1 or lse2. */
		float merged = merge_row_weights(lse1[r], lse2[r], &w1, &w2);
		lse[r] = merged;
		for (size_t j = r * dim; j < (r + 1) * dim; j++)
			o[j] = weighted(w1, o1[j]) + weighted(w2, o2[j]);
	}
	return LLMP_OK;
}
