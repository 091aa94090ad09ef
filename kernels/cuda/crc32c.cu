/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crc32c.cu - CRC-32C of a device buffer, bit for bit kern_crc32c()'s
 * (kern_cuda.h), by segment and combine (kernels/cuda/crc32c_elem.h).
 *
 * A first kernel of one thread writes the term of the CRC being continued,
 * crc_in * x^(8 len). Then each block builds the slice-by-8 tables (8 KiB)
 * and the 64 powers x^(8 * 2^j) in shared memory; each thread takes the
 * terms of its segments (grid-stride), XORs them, the warp XORs its lanes'
 * with shuffles and one lane XORs the warp's into the result with an
 * atomic. XOR is exact and commutative, so the order in which warps land
 * does not change a bit. The powers come from the host, computed there with
 * the same element function, as a kernel argument.
 */
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/crc32c_elem.h"
#include "kernels/cuda/kern_cuda.h"
#include "kernels/cuda/launch.cuh"

namespace
{

struct crc_powers {
	uint32_t p[KERN_CRC32C_POWERS];
};

__global__ void crc_prefix(uint32_t *crc_out, uint32_t crc_in, size_t len, crc_powers powers)
{
	*crc_out = kern_elem_crc32c_prefix_term(crc_in, powers.p, len);
}

__global__ void __launch_bounds__(KERN_CUDA_THREADS)
	crc_segments(uint32_t *crc_out, const unsigned char *buf, size_t len, size_t seg, crc_powers powers)
{
	__shared__ uint32_t table[KERN_CRC32C_TABLE_WORDS];
	__shared__ uint32_t power[KERN_CRC32C_POWERS];

	for (unsigned b = threadIdx.x; b < 256; b += blockDim.x)
		table[b] = kern_elem_crc32c_table_entry(b);
	for (unsigned j = threadIdx.x; j < KERN_CRC32C_POWERS; j += blockDim.x)
		power[j] = powers.p[j];
	__syncthreads();
	for (unsigned s = 1; s < 8; s++) {
		for (unsigned b = threadIdx.x; b < 256; b += blockDim.x)
			table[256 * s + b] = kern_elem_crc32c_table_next(table, table[256 * (s - 1) + b]);
		__syncthreads();
	}

	size_t segments = (len + seg - 1) / seg;
	size_t stride = (size_t)gridDim.x * blockDim.x;
	uint32_t x = 0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < segments; i += stride)
		x ^= kern_elem_crc32c_term(table, power, buf, len, seg, i);
	for (unsigned d = 16; d > 0; d /= 2)
		x ^= __shfl_xor_sync(0xffffffffu, x, d);
	if (threadIdx.x % 32 == 0 && x != 0)
		atomicXor(crc_out, x);
}

} // namespace

extern "C" llmp_status kern_cuda_crc32c(uint32_t *crc_out, uint32_t crc_in, const void *buf, size_t len,
					size_t segment, void *stream, int *cuda_error)
{
	if (cuda_error)
		*cuda_error = 0;
	if (!crc_out || (len > 0 && !buf))
		return LLMP_ERR_ARG;
	if (segment == 0)
		segment = KERN_CUDA_CRC32C_SEGMENT;

	crc_powers powers;
	kern_elem_crc32c_powers(powers.p);
	cudaStream_t s = kern_cuda_stream(stream);
	crc_prefix<<<1, 1, 0, s>>>(crc_out, crc_in, len, powers);
	if (len > 0) {
		size_t segments = (len + segment - 1) / segment;
		crc_segments<<<kern_cuda_blocks(segments, KERN_CUDA_THREADS), KERN_CUDA_THREADS, 0, s>>>(
			crc_out, static_cast<const unsigned char *>(buf), len, segment, powers);
	}
	return kern_cuda_launched(cuda_error);
}
