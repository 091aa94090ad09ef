/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * launch.cuh - what every C wrapper of a kernel does around its launch: the
 * grid size, the stream from the C caller's void *, and the status of the
 * launch (kern_cuda.h says how CUDA errors map to llmp_status).
 */
#ifndef LLMP_KERNELS_CUDA_LAUNCH_CUH
#define LLMP_KERNELS_CUDA_LAUNCH_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_dtype.h>
#include <llmp/llmp_status.h>

/* Threads per block of the element-wise kernels. */
#define KERN_CUDA_THREADS 256
/* The grid stops growing here; each thread then loops over more work (grid-stride). */
#define KERN_CUDA_MAX_BLOCKS 16384

static inline cudaStream_t kern_cuda_stream(void *stream)
{
	return (cudaStream_t)stream;
}

/* Blocks of threads for work items, at least 1. */
static inline unsigned kern_cuda_blocks(size_t work, unsigned threads)
{
	size_t blocks = (work + threads - 1) / threads;
	if (blocks == 0)
		return 1;
	return blocks > KERN_CUDA_MAX_BLOCKS ? KERN_CUDA_MAX_BLOCKS : (unsigned)blocks;
}

/* The status of the launches just made, and the CUDA error behind a failure. */
static inline llmp_status kern_cuda_launched(int *cuda_error)
{
	cudaError_t e = cudaGetLastError();
	if (cuda_error)
		*cuda_error = (int)e;
	if (e == cudaSuccess)
		return LLMP_OK;
	if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || e == cudaErrorStubLibrary)
		return LLMP_ERR_UNSUPPORTED;
	return LLMP_ERR_STATE;
}

/* Neither the same buffer nor apart (compared as integers). */
static inline bool kern_cuda_overlap_partially(const void *p, const void *q, size_t bytes)
{
	uintptr_t x = (uintptr_t)p, y = (uintptr_t)q;
	return x != y && x < y + bytes && y < x + bytes;
}

/* The element types the device kernels take. */
static inline bool kern_cuda_float_dtype(llmp_dtype dtype)
{
	return dtype == LLMP_FLOAT32 || dtype == LLMP_BFLOAT16 || dtype == LLMP_FLOAT16;
}

#endif /* LLMP_KERNELS_CUDA_LAUNCH_CUH */
