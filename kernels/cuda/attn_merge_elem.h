/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attn_merge_elem.h - the log-sum-exp merge of two partial attention
 * outputs, per row and per element: the body of the CUDA merge kernel
 * (attn_merge.cu) and of its tests on the CPU.
 *
 * Context parallelism computes attention for a query row against several
 * blocks of keys; block b yields an output O_b normalised within the block
 * and L_b, the log-sum-exp of the row's scores in it. Two merge into
 *
 *   L = max(L1, L2) + log1p(exp(min(L1, L2) - max(L1, L2)))
 *   O = exp(L1 - L) * O1 + exp(L2 - L) * O2
 *
 * all in float32. A row that sees no key of a block has L_b = -inf; when
 * both sides are -inf the naive formula computes -inf - -inf = NaN, so that
 * case gives L = -inf and both weights 0. A side whose weight is 0 (L_b is
 * -inf, or exp underflows) contributes nothing, whatever its O holds, so an
 * empty block's unwritten output cannot turn the row into NaN. A NaN L
 * gives NaN; +inf is not a log-sum-exp of finite scores and is not handled.
 *
 * The same formula as kern_attn_merge() (kernels/attn_merge.c), the host
 * reference; the device's expf and log1pf are not glibc's, and nvcc fuses
 * the multiply-add, so device results agree with it to a few ulp, not bit
 * for bit.
 */
#ifndef LLMP_KERNELS_CUDA_ATTN_MERGE_ELEM_H
#define LLMP_KERNELS_CUDA_ATTN_MERGE_ELEM_H

#include <math.h>

#include "kernels/hd.h"

struct kern_elem_lse_weights {
	float lse;    /* the merged log-sum-exp */
	float w1, w2; /* the weights of the two outputs */
};

KERN_HD struct kern_elem_lse_weights kern_elem_lse_merge(float l1, float l2)
{
	struct kern_elem_lse_weights w;
	float hi = l1 > l2 ? l1 : l2; /* a NaN in l2 goes to hi, one in l1 to lo */
	float lo = l1 > l2 ? l2 : l1;

	if (hi == -INFINITY) {
		w.lse = -INFINITY;
		w.w1 = 0.0f;
		w.w2 = 0.0f;
		return w;
	}
	w.lse = hi + log1pf(expf(lo - hi));
	w.w1 = expf(l1 - w.lse);
	w.w2 = expf(l2 - w.lse);
	return w;
}

/* One element of the merged output. */
KERN_HD float kern_elem_lse_apply(struct kern_elem_lse_weights w, float o1, float o2)
{
	float part1 = w.w1 != 0.0f ? w.w1 * o1 : 0.0f;
	float part2 = w.w2 != 0.0f ? w.w2 * o2 : 0.0f;
	return part1 + part2;
}

#endif /* LLMP_KERNELS_CUDA_ATTN_MERGE_ELEM_H */
