/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce.cu - k-input reductions of float32, bfloat16 and float16 device
 * buffers with float32 accumulation (kern_cuda.h); the element arithmetic is
 * kernels/cuda/reduce_elem.h.
 *
 * One kernel per (dtype, operator): the operator is a template argument, so
 * the switch in kern_elem_combine folds away. Where every buffer is aligned
 * to 16 bytes, each thread reads 16-byte vectors of every input (4 float32
 * or 8 16-bit elements), combines them lane by lane in input order and
 * writes one vector; the elements after the last whole vector, or all of
 * them when a buffer is not aligned, go through the element kernel.
 */
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/kern_cuda.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/reduce_elem.h"

static_assert(KERN_CUDA_REDUCE_MAX_INPUTS == KERN_ELEM_REDUCE_MAX_INPUTS, "one limit of inputs");

namespace
{

struct reduce_args {
	const void *src[KERN_CUDA_REDUCE_MAX_INPUTS];
	void *dst;
	size_t count;
	unsigned k;
	uint32_t avg_divisor;
};

__host__ __device__ constexpr unsigned per_vector(llmp_dtype dtype)
{
	return dtype == LLMP_FLOAT32 ? 4 : 8;
}

template <llmp_dtype D, llmp_op OP>
__global__ void __launch_bounds__(KERN_CUDA_THREADS) reduce_vectors(reduce_args a, size_t vectors)
{
	constexpr unsigned per = per_vector(D);
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x; v < vectors; v += stride) {
		float acc[per];
		uint4 in = static_cast<const uint4 *>(a.src[0])[v];
		uint32_t w[4] = { in.x, in.y, in.z, in.w };
#pragma unroll
		for (unsigned e = 0; e < per; e++)
			acc[e] = kern_elem_to_f32(kern_elem_lane(w, e, D), D);
#pragma unroll
		for (unsigned j = 1; j < KERN_ELEM_REDUCE_MAX_INPUTS && j < a.k; j++) {
			in = static_cast<const uint4 *>(a.src[j])[v];
			uint32_t x[4] = { in.x, in.y, in.z, in.w };
#pragma unroll
			for (unsigned e = 0; e < per; e++)
				acc[e] = kern_elem_combine(OP, acc[e],
							   kern_elem_to_f32(kern_elem_lane(x, e, D), D));
		}
		uint32_t out[4] = { 0, 0, 0, 0 };
#pragma unroll
		for (unsigned e = 0; e < per; e++)
			kern_elem_set_lane(
				out, e, D,
				kern_elem_from_f32(kern_elem_finish(OP, acc[e], a.avg_divisor), D));
		static_cast<uint4 *>(a.dst)[v] = make_uint4(out[0], out[1], out[2], out[3]);
	}
}

/* Elements first..count-1, one at a time. */
template <llmp_dtype D, llmp_op OP>
__global__ void __launch_bounds__(KERN_CUDA_THREADS) reduce_elements(reduce_args a, size_t first)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (size_t i = first + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.count; i += stride)
		kern_elem_store(a.dst, i, D, kern_elem_reduce_k(a.src, a.k, i, D, OP, a.avg_divisor));
}

bool aligned16(const void *p)
{
	return ((uintptr_t)p & 15u) == 0;
}

template <llmp_dtype D, llmp_op OP> void launch(const reduce_args &a, cudaStream_t stream)
{
	bool vectorised = aligned16(a.dst);
	for (unsigned j = 0; j < a.k; j++)
		vectorised = vectorised && aligned16(a.src[j]);

	size_t vectors = vectorised ? a.count / per_vector(D) : 0;
	size_t first = vectors * per_vector(D);
	if (vectors > 0)
		reduce_vectors<D, OP>
			<<<kern_cuda_blocks(vectors, KERN_CUDA_THREADS), KERN_CUDA_THREADS, 0, stream>>>(
				a, vectors);
	if (first < a.count)
		reduce_elements<D, OP><<<kern_cuda_blocks(a.count - first, KERN_CUDA_THREADS),
					 KERN_CUDA_THREADS, 0, stream>>>(a, first);
}

template <llmp_dtype D> void launch_op(llmp_op op, const reduce_args &a, cudaStream_t stream)
{
	switch (op) {
	case LLMP_SUM: launch<D, LLMP_SUM>(a, stream); break;
	case LLMP_PROD: launch<D, LLMP_PROD>(a, stream); break;
	case LLMP_MIN: launch<D, LLMP_MIN>(a, stream); break;
	case LLMP_MAX: launch<D, LLMP_MAX>(a, stream); break;
	default: launch<D, LLMP_AVG>(a, stream); break;
	}
}

} // namespace

extern "C" llmp_status kern_cuda_reduce_k(void *dst, const void *const *srcs, unsigned k, size_t count,
					  llmp_dtype dtype, llmp_op op, uint32_t avg_divisor, void *stream,
					  int *cuda_error)
{
	if (cuda_error)
		*cuda_error = 0;
	if ((unsigned)dtype >= LLMP_NDTYPES || (unsigned)op >= LLMP_NOPS || k == 0 ||
	    k > KERN_CUDA_REDUCE_MAX_INPUTS || (op == LLMP_AVG && avg_divisor == 0))
		return LLMP_ERR_ARG;
	if (!kern_cuda_float_dtype(dtype))
		return LLMP_ERR_UNSUPPORTED;
	if (count == 0)
		return LLMP_OK;

	size_t size = llmp_dtype_size(dtype);
	if (!dst || !srcs || count > SIZE_MAX / size)
		return LLMP_ERR_ARG;
	reduce_args a = {};
	for (unsigned j = 0; j < k; j++) {
		if (!srcs[j] || kern_cuda_overlap_partially(dst, srcs[j], count * size))
			return LLMP_ERR_ARG;
		a.src[j] = srcs[j];
	}
	a.dst = dst;
	a.count = count;
	a.k = k;
	a.avg_divisor = op == LLMP_AVG ? avg_divisor : 1;

	cudaStream_t s = kern_cuda_stream(stream);
	if (dtype == LLMP_FLOAT32)
		launch_op<LLMP_FLOAT32>(op, a, s);
	else if (dtype == LLMP_BFLOAT16)
		launch_op<LLMP_BFLOAT16>(op, a, s);
	else
		launch_op<LLMP_FLOAT16>(op, a, s);
	return kern_cuda_launched(cuda_error);
}

/* Two inputs, and an average only summed, as kern_reduce() does on the host. */
extern "C" llmp_status kern_cuda_reduce(void *dst, const void *a, const void *b, size_t count,
					llmp_dtype dtype, llmp_op op, void *stream, int *cuda_error)
{
	const void *srcs[2] = { a, b };
	if ((unsigned)op >= LLMP_NOPS) {
		if (cuda_error)
			*cuda_error = 0;
		return LLMP_ERR_ARG;
	}
	return kern_cuda_reduce_k(dst, srcs, 2, count, dtype, op == LLMP_AVG ? LLMP_SUM : op, 1, stream,
				  cuda_error);
}
