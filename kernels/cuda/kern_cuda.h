/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kern_cuda.h - the CUDA kernels of llmp, called from C: reductions, casts,
 * the attention log-sum-exp merge and CRC-32C on device buffers.
 *
 * Every call enqueues work on the caller's CUDA stream and returns without
 * waiting. The stream is a cudaStream_t passed as void * (NULL: the legacy
 * default stream), so a C caller needs no CUDA header. Buffers are device
 * memory (or managed memory) that the stream's device can read and write.
 *
 * Each returns LLMP_OK once the work is enqueued; LLMP_ERR_ARG for a bad
 * argument (checked before anything is launched); LLMP_ERR_UNSUPPORTED for a
 * dtype or operator the device path does not reduce, or when CUDA finds no
 * driver or no device (cudaErrorInsufficientDriver, cudaErrorNoDevice, the
 * stub library); LLMP_ERR_STATE for any other launch failure. Where a CUDA
 * call failed, *cuda_error (when cuda_error is not NULL) receives its
 * cudaError_t, to be named with cudaGetErrorString; else 0. Errors of the
 * kernel itself show at the next synchronisation, as for any CUDA work.
 *
 * The element arithmetic lives in the element headers (kernels/cuda/, NAME_elem.h), shared with the
 * unit tests that run it on the CPU against the C kernels.
 */
#ifndef LLMP_KERNELS_CUDA_KERN_CUDA_H
#define LLMP_KERNELS_CUDA_KERN_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_dtype.h>
#include <llmp/llmp_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most inputs of one kern_cuda_reduce_k. */
#define KERN_CUDA_REDUCE_MAX_INPUTS 8

/* The segment length of kern_cuda_crc32c when it is given 0. */
#define KERN_CUDA_CRC32C_SEGMENT 1024

/*
 * dst[i] = a[i] op b[i], as kern_reduce() on the host, bit for bit (except
 * NaN payloads of sum and prod): LLMP_FLOAT32, LLMP_BFLOAT16, LLMP_FLOAT16;
 * LLMP_AVG sums, and the division comes at the end (kern_cuda_reduce_k with
 * avg_divisor). dst may be a or b exactly; no partial overlap.
 */
llmp_status kern_cuda_reduce(void *dst, const void *a, const void *b, size_t count, llmp_dtype dtype,
			     llmp_op op, void *stream, int *cuda_error);

/*
 * dst[i] = srcs[0][i] op srcs[1][i] op ... op srcs[k-1][i] for 1 <= k <=
 * KERN_CUDA_REDUCE_MAX_INPUTS: widened to float32, combined in input order,
 * rounded once (kernels/cuda/reduce_elem.h). For LLMP_AVG the float32 sum is
 * divided by avg_divisor (at least 1; the group size) before that rounding;
 * avg_divisor is ignored for the other operators. dst may be any input
 * exactly. srcs itself is host memory; the pointers in it are device memory.
 */
llmp_status kern_cuda_reduce_k(void *dst, const void *const *srcs, unsigned k, size_t count, llmp_dtype dtype,
			       llmp_op op, uint32_t avg_divisor, void *stream, int *cuda_error);

/*
 * count elements of src_dtype to dst_dtype, each of LLMP_FLOAT32,
 * LLMP_BFLOAT16, LLMP_FLOAT16: widening is exact, narrowing rounds to
 * nearest even as kernels/half.h does (NaN payloads kept). The same dtype
 * copies the bits. dst and src must not overlap unless they are the same
 * buffer with elements of the same size.
 */
llmp_status kern_cuda_cast(void *dst, llmp_dtype dst_dtype, const void *src, llmp_dtype src_dtype,
			   size_t count, void *stream, int *cuda_error);

/*
 * The log-sum-exp merge of kern_attn_merge() (kernels/attn_merge.h) on the
 * device: rows x dim float32 outputs, rows float32 log-sum-exps; in place
 * allowed (o == o1 or o2, lse == lse1 or lse2). Within a few ulp of the host
 * reference (the device's expf/log1pf differ from libm's).
 */
llmp_status kern_cuda_attn_merge(float *o, float *lse, const float *o1, const float *lse1, const float *o2,
				 const float *lse2, size_t rows, size_t dim, void *stream, int *cuda_error);

/*
 * *crc_out (device memory) = kern_crc32c(crc_in, buf, len), bit for bit:
 * the buffer is cut into segments of segment bytes (0: the default), each
 * checksummed by one thread, and the segment CRCs are combined
 * (kernels/cuda/crc32c_elem.h). *crc_out is written by the stream, so it
 * may be read after the stream is synchronised, or copied back on it.
 */
llmp_status kern_cuda_crc32c(uint32_t *crc_out, uint32_t crc_in, const void *buf, size_t len, size_t segment,
			     void *stream, int *cuda_error);

#ifdef __cplusplus
}
#endif

#endif /* LLMP_KERNELS_CUDA_KERN_CUDA_H */
