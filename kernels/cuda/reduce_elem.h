/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce_elem.h - one element of a k-input reduction of float32, bfloat16
 * or float16 buffers, accumulated in float32: the body of the CUDA
 * reduction kernels (reduce.cu), and of their tests on the CPU.
 *
 * The inputs are widened to float32 and combined in input order, 0, 1, ...,
 * k-1, always the same order whatever the launch, so every rank computes the
 * same bits. 16-bit results are rounded once at the end (nearest even), not
 * after every input as a chain of two-input reductions would: that is k-1
 * roundings fewer, and a bfloat16 partial sum cannot lose the small terms. An
 * average divides the float32 sum before that one rounding.
 *
 * min and max follow IEEE 754-2019 minimum/maximum as kernels/reduce.c does:
 * a NaN operand gives a NaN (the first NaN in input order, quieted), and
 * -0 < +0, so the result does not depend on the order of the inputs. They
 * only select, so their results are bit-identical on host and device. A sum
 * or product with a NaN operand is a NaN on both, but its payload is what
 * the arithmetic unit makes of it (a GPU returns its canonical NaN).
 *
 * With k = 2 and no average, the result is kern_reduce()'s bit for bit.
 */
#ifndef LLMP_KERNELS_CUDA_REDUCE_ELEM_H
#define LLMP_KERNELS_CUDA_REDUCE_ELEM_H

#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_dtype.h>

#include "kernels/half.h"

/* The most inputs of one reduction (kern_cuda.h's KERN_CUDA_REDUCE_MAX_INPUTS). */
#define KERN_ELEM_REDUCE_MAX_INPUTS 8

/* IEEE 754-2019 minimum; on equal operands (zeros of two signs) the negative one. */
KERN_HD float kern_elem_min_f32(float x, float y)
{
	float r = x < y ? x : y; /* y if y is a NaN: the comparison is false */
	r = x == y ? kern_f32_from_bits(kern_f32_bits(x) | kern_f32_bits(y)) : r;
	return x != x ? x : r;
}

/* IEEE 754-2019 maximum; on equal operands the positive one. */
KERN_HD float kern_elem_max_f32(float x, float y)
{
	float r = x > y ? x : y;
	r = x == y ? kern_f32_from_bits(kern_f32_bits(x) & kern_f32_bits(y)) : r;
	return x != x ? x : r;
}

/* The value of an element stored as raw bits (a float32's, or a 16-bit pattern). */
KERN_HD float kern_elem_to_f32(uint32_t raw, llmp_dtype dtype)
{
	if (dtype == LLMP_BFLOAT16)
		return kern_bf16_to_f32((uint16_t)raw);
	if (dtype == LLMP_FLOAT16)
		return kern_f16_to_f32((uint16_t)raw);
	return kern_f32_from_bits(raw);
}

/* The bits that store v as dtype: the one rounding of a 16-bit result. */
KERN_HD uint32_t kern_elem_from_f32(float v, llmp_dtype dtype)
{
	if (dtype == LLMP_BFLOAT16)
		return kern_f32_to_bf16(v);
	if (dtype == LLMP_FLOAT16)
		return kern_f32_to_f16(v);
	return kern_f32_bits(v);
}

/* acc op x in float32. LLMP_AVG accumulates as a sum. */
KERN_HD float kern_elem_combine(llmp_op op, float acc, float x)
{
	switch (op) {
	case LLMP_PROD: return acc * x;
	case LLMP_MIN: return kern_elem_min_f32(acc, x);
	case LLMP_MAX: return kern_elem_max_f32(acc, x);
	default: return acc + x;
	}
}

/* The accumulator after the last input: an average is divided by avg_divisor (at least 1). */
KERN_HD float kern_elem_finish(llmp_op op, float acc, uint32_t avg_divisor)
{
	return op == LLMP_AVG ? acc / (float)avg_divisor : acc;
}

/* The raw bits of element i of a buffer of dtype (float32, bfloat16 or float16). */
KERN_HD uint32_t kern_elem_load(const void *buf, size_t i, llmp_dtype dtype)
{
	if (dtype == LLMP_FLOAT32) /* a load and a store move a NaN's bits unchanged */
		return kern_f32_bits(((const float *)buf)[i]);
	return ((const uint16_t *)buf)[i];
}

KERN_HD void kern_elem_store(void *buf, size_t i, llmp_dtype dtype, uint32_t raw)
{
	if (dtype == LLMP_FLOAT32)
		((float *)buf)[i] = kern_f32_from_bits(raw);
	else
		((uint16_t *)buf)[i] = (uint16_t)raw;
}

/*
 * Lane e of a 16-byte vector held as four 32-bit words (little-endian, as
 * the GPU and x86 store them): 4 float32 or 8 16-bit elements per vector.
 */
KERN_HD uint32_t kern_elem_lane(const uint32_t *words, unsigned e, llmp_dtype dtype)
{
	if (dtype == LLMP_FLOAT32)
		return words[e];
	return (words[e / 2] >> (16 * (e % 2))) & 0xffffu;
}

/* Sets lane e of a vector whose words start at 0 (the lanes are ORed in). */
KERN_HD void kern_elem_set_lane(uint32_t *words, unsigned e, llmp_dtype dtype, uint32_t raw)
{
	if (dtype == LLMP_FLOAT32)
		words[e] = raw;
	else
		words[e / 2] |= raw << (16 * (e % 2));
}

/*
 * Element i of the reduction of srcs[0..k-1] (1 <= k <= 8), as the bits to
 * store: widened, combined in input order in float32, finished, rounded once.
 * The loop's constant bound lets nvcc unroll it, so srcs[j] is a constant
 * index into the kernel's arguments rather than a copy in local memory.
 */
KERN_HD uint32_t kern_elem_reduce_k(const void *const *srcs, unsigned k, size_t i, llmp_dtype dtype,
				    llmp_op op, uint32_t avg_divisor)
{
	float acc = kern_elem_to_f32(kern_elem_load(srcs[0], i, dtype), dtype);
	for (unsigned j = 1; j < KERN_ELEM_REDUCE_MAX_INPUTS && j < k; j++)
		acc = kern_elem_combine(op, acc, kern_elem_to_f32(kern_elem_load(srcs[j], i, dtype), dtype));
	return kern_elem_from_f32(kern_elem_finish(op, acc, avg_divisor), dtype);
}

#endif /* LLMP_KERNELS_CUDA_REDUCE_ELEM_H */
