/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cast.cu - float32, bfloat16 and float16 device buffers from one type to
 * another (kern_cuda.h), with the host's own conversions (kernels/half.h,
 * compiled for the device): bit for bit, NaN payloads included.
 *
 * Through float32: widening is exact, so a 16-bit to 16-bit cast rounds
 * once. A cast to the same type is a copy.
 */
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/kern_cuda.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/reduce_elem.h"

namespace
{

template <llmp_dtype TO, llmp_dtype FROM>
__global__ void __launch_bounds__(KERN_CUDA_THREADS) cast_elements(void *dst, const void *src, size_t count)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
		kern_elem_store(dst, i, TO,
				kern_elem_from_f32(kern_elem_to_f32(kern_elem_load(src, i, FROM), FROM), TO));
}

template <llmp_dtype TO, llmp_dtype FROM>
void launch(void *dst, const void *src, size_t count, cudaStream_t stream)
{
	cast_elements<TO, FROM><<<kern_cuda_blocks(count, KERN_CUDA_THREADS), KERN_CUDA_THREADS, 0, stream>>>(
		dst, src, count);
}

template <llmp_dtype TO>
void launch_from(llmp_dtype from, void *dst, const void *src, size_t count, cudaStream_t s)
{
	if (from == LLMP_FLOAT32)
		launch<TO, LLMP_FLOAT32>(dst, src, count, s);
	else if (from == LLMP_BFLOAT16)
		launch<TO, LLMP_BFLOAT16>(dst, src, count, s);
	else
		launch<TO, LLMP_FLOAT16>(dst, src, count, s);
}

} // namespace

extern "C" llmp_status kern_cuda_cast(void *dst, llmp_dtype dst_dtype, const void *src, llmp_dtype src_dtype,
				      size_t count, void *stream, int *cuda_error)
{
	if (cuda_error)
		*cuda_error = 0;
	if ((unsigned)dst_dtype >= LLMP_NDTYPES || (unsigned)src_dtype >= LLMP_NDTYPES)
		return LLMP_ERR_ARG;
	if (!kern_cuda_float_dtype(dst_dtype) || !kern_cuda_float_dtype(src_dtype))
		return LLMP_ERR_UNSUPPORTED;
	if (count == 0)
		return LLMP_OK;

	size_t dst_size = llmp_dtype_size(dst_dtype), src_size = llmp_dtype_size(src_dtype);
	if (!dst || !src || count > SIZE_MAX / 4)
		return LLMP_ERR_ARG;
	/* In place only where every element stays where it is. */
	uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
	if ((d != s || dst_size != src_size) && d < s + count * src_size && s < d + count * dst_size)
		return LLMP_ERR_ARG;

	cudaStream_t st = kern_cuda_stream(stream);
	if (dst_dtype == src_dtype) {
		if (dst != src)
			cudaMemcpyAsync(dst, src, count * dst_size, cudaMemcpyDefault, st);
	} else if (dst_dtype == LLMP_FLOAT32) {
		launch_from<LLMP_FLOAT32>(src_dtype, dst, src, count, st);
	} else if (dst_dtype == LLMP_BFLOAT16) {
		launch_from<LLMP_BFLOAT16>(src_dtype, dst, src, count, st);
	} else {
		launch_from<LLMP_FLOAT16>(src_dtype, dst, src, count, st);
	}
	return kern_cuda_launched(cuda_error);
}
