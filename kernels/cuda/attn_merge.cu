/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attn_merge.cu - the log-sum-exp merge of two partial attention outputs on
 * the device (kern_cuda.h; the host reference is kernels/attn_merge.c, the
 * element arithmetic kernels/cuda/attn_merge_elem.h).
 *
 * One warp per row: every lane computes the row's weights from the two
 * log-sum-exps (the same few instructions, no shuffles), the warp
 * synchronises, and only then lane 0 writes the merged one, so lse may be
 * lse1 or lse2 without a lane reading a value already overwritten. The lanes
 * then walk the row's dim elements 32 apart, coalesced.
 */
#include <stddef.h>
#include <stdint.h>

#include "kernels/attn_merge.h"
#include "kernels/cuda/attn_merge_elem.h"
#include "kernels/cuda/kern_cuda.h"
#include "kernels/cuda/launch.cuh"

namespace
{

constexpr unsigned warp = 32;

__global__ void __launch_bounds__(KERN_CUDA_THREADS)
	merge_rows(float *o, float *lse, const float *o1, const float *lse1, const float *o2,
		   const float *lse2, size_t rows, size_t dim)
{
	unsigned lane = threadIdx.x % warp;
	size_t warps = (size_t)gridDim.x * (blockDim.x / warp);

	/* Every lane of a warp takes the same rows, so the whole warp reaches __syncwarp. */
	for (size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / warp; r < rows; r += warps) {
		struct kern_elem_lse_weights w = kern_elem_lse_merge(lse1[r], lse2[r]);
		__syncwarp();
		if (lane == 0)
			lse[r] = w.lse;
		const float *a = o1 + r * dim, *b = o2 + r * dim;
		float *out = o + r * dim;
		for (size_t j = lane; j < dim; j += warp)
			out[j] = kern_elem_lse_apply(w, a[j], b[j]);
	}
}

} // namespace

extern "C" llmp_status kern_cuda_attn_merge(float *o, float *lse, const float *o1, const float *lse1,
					    const float *o2, const float *lse2, size_t rows, size_t dim,
					    void *stream, int *cuda_error)
{
	if (cuda_error)
		*cuda_error = 0;
	if (rows == 0)
		return LLMP_OK;
	if (!o || !lse || !o1 || !lse1 || !o2 || !lse2 || dim == 0 || rows > SIZE_MAX / sizeof(float) / dim)
		return LLMP_ERR_ARG;
	size_t out_bytes = rows * dim * sizeof(float), lse_bytes = rows * sizeof(float);
	if (kern_cuda_overlap_partially(o, o1, out_bytes) || kern_cuda_overlap_partially(o, o2, out_bytes) ||
	    kern_cuda_overlap_partially(lse, lse1, lse_bytes) ||
	    kern_cuda_overlap_partially(lse, lse2, lse_bytes))
		return LLMP_ERR_ARG;

	unsigned rows_per_block = KERN_CUDA_THREADS / warp;
	merge_rows<<<kern_cuda_blocks(rows, rows_per_block), KERN_CUDA_THREADS, 0,
		     kern_cuda_stream(stream)>>>(o, lse, o1, lse1, o2, lse2, rows, dim);
	return kern_cuda_launched(cuda_error);
}
