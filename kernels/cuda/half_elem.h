/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * half_elem.h - bfloat16 and float16 to and from float32 as element
 * functions, for CUDA kernels and their tests on the CPU.
 *
 * The same algorithm as kernels/half.h, written again for the device (a
 * static inline C function cannot be called from device code): round to
 * nearest even; a value too large becomes Inf; a NaN stays a NaN, made quiet
 * with its sign and leading payload bits kept. Bit for bit equal to half.h
 * for every input, NaN payloads included (tests/unit/test_cuda_elem.c checks
 * all 65536 patterns each way).
 *
 * Not the hardware conversions (cvt.rn.bf16.f32, __float2bfloat16_rn): those
 * turn every NaN into one canonical NaN, and the host path keeps payloads.
 * These are integer operations, a few per element, in kernels bound by
 * memory bandwidth.
 */
#ifndef LLMP_KERNELS_CUDA_HALF_ELEM_H
#define LLMP_KERNELS_CUDA_HALF_ELEM_H

#include <stdint.h>
#include <string.h>

#include "kernels/cuda/hd.h"

KERN_HD uint32_t kern_elem_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

KERN_HD float kern_elem_f32_from_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* cond ? x : y on bits; both operands are always computed. */
KERN_HD uint32_t kern_elem_select_u32(int cond, uint32_t x, uint32_t y)
{
	uint32_t mask = 0u - (uint32_t)(cond != 0);
	return (x & mask) | (y & ~mask);
}

/* bfloat16 is the top half of a float32. */
KERN_HD float kern_elem_bf16_to_f32(uint16_t h)
{
	return kern_elem_f32_from_bits((uint32_t)h << 16);
}

/*
 * Add 0x7fff plus the lowest kept bit, then truncate: rounds to nearest,
 * ties to even, and carries the largest finite values into Inf. A NaN gets
 * its quiet bit set and is truncated instead (the addition could carry it
 * into Inf or the sign).
 */
KERN_HD uint16_t kern_elem_f32_to_bf16(float f)
{
	uint32_t u = kern_elem_f32_bits(f);
	uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
	uint32_t quiet_nan = u | 0x00400000u;

	return (uint16_t)(kern_elem_select_u32(f != f, quiet_nan, rounded) >> 16);
}

/* float16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits. */
KERN_HD float kern_elem_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exponent = h & 0x7c00u;
	uint32_t mantissa = h & 0x03ffu;
	/* Normal: fields moved up, exponent rebiased by 127 - 15 = 112. */
	uint32_t normal = ((uint32_t)(h & 0x7fffu) << 13) + (112u << 23);
	/* Inf and NaN: exponent all ones, the payload kept. */
	uint32_t special = 0x7f800000u | (mantissa << 13);
	/* Subnormal or zero: mantissa * 2^-24, exact in float32. */
	uint32_t subnormal = kern_elem_f32_bits((float)(int32_t)mantissa * 0x1p-24f);
	uint32_t magnitude = kern_elem_select_u32(exponent == 0, subnormal, normal);
	magnitude = kern_elem_select_u32(exponent == 0x7c00u, special, magnitude);

	return kern_elem_f32_from_bits(sign | magnitude);
}

/*
 * Normal results (2^-14 <= |f| < 2^16) rebias and round the 13 dropped bits
 * as bfloat16 does. Subnormal results: |f| + 0.5f makes the FPU round |f| to
 * a multiple of 2^-24 (the ulp of 0.5f, and float16's subnormal step), ties
 * to even; the low bits of the sum are the float16 mantissa. That addition
 * needs the default rounding mode and no flush to zero of its operand; a
 * float32 subnormal would round to 0 anyway, so FTZ does not change it.
 */
KERN_HD uint16_t kern_elem_f32_to_f16(float f)
{
	uint32_t u = kern_elem_f32_bits(f);
	uint32_t sign = (u >> 16) & 0x8000u;
	uint32_t a = u & 0x7fffffffu;
	uint32_t normal = (a - (112u << 23) + 0x0fffu + ((a >> 13) & 1u)) >> 13;
	uint32_t subnormal = kern_elem_f32_bits(kern_elem_f32_from_bits(a) + 0.5f) - 0x3f000000u;
	uint32_t quiet_nan = 0x7e00u | ((a >> 13) & 0x03ffu);
	uint32_t h = kern_elem_select_u32(a < 0x38800000u, subnormal, normal); /* below 2^-14 */
	h = kern_elem_select_u32(a >= 0x47800000u, 0x7c00u, h);                /* 2^16 and up: Inf */
	h = kern_elem_select_u32(a > 0x7f800000u, quiet_nan, h);

	return (uint16_t)(sign | h);
}

#endif /* LLMP_KERNELS_CUDA_HALF_ELEM_H */
