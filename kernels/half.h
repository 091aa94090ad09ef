/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * half.h - conversions between float32 and the two 16-bit floating types,
 * bfloat16 and IEEE binary16 (float16), each stored as a uint16_t.
 *
 * Portable C, no F16C: every path is computed and the right one selected, so
 * a loop over these has no branches and the vectoriser can take it. Bit casts
 * go through memcpy, which compilers turn into a register move.
 *
 * Narrowing rounds to nearest, ties to even, the way the FPU rounds; a value
 * too large becomes Inf; a NaN stays a NaN (made quiet, sign and the leading
 * payload bits kept), never Inf. Widening is exact, NaN payloads included.
 * float16 subnormals are exact both ways, and stay so with denormals flushed
 * (FTZ/DAZ): no float operand or result here is ever subnormal, except a
 * float32 input so small that it rounds to 0 anyway. The float16 narrowing
 * adds two floats to round subnormals, so it assumes the default rounding
 * mode (to nearest). NaNs are found with f != f, so nothing that includes
 * this may be built with -ffast-math or -ffinite-math-only.
 *
 * The CUDA kernels (kernels/cuda/) call these same functions on the device
 * (KERN_HD, hd.h): one body, so the device converts bit for bit as the host
 * does, NaN payloads included. Not the hardware conversions
 * (cvt.rn.bf16.f32, __float2bfloat16_rn): those make every NaN canonical.
 */
#ifndef LLMP_KERNELS_HALF_H
#define LLMP_KERNELS_HALF_H

#include <stdint.h>
#include <string.h>

#include "hd.h"

KERN_HD uint32_t kern_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

KERN_HD float kern_f32_from_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/*
 * cond ? x : y without a branch. Written as a ternary, the compiler moves the
 * float arithmetic that computes an operand under the condition, and then
 * may not vectorise the loop (float arithmetic can trap, so it will not run
 * it unconditionally); as a mask, both operands are always computed.
 */
KERN_HD uint32_t kern_select_u32(int cond, uint32_t x, uint32_t y)
{
	uint32_t mask = 0u - (uint32_t)(cond != 0);
	return (x & mask) | (y & ~mask);
}

/* ------------------------------------------------------------ bfloat16 */

/* bfloat16 is the top half of a float32: widening is a shift. */
KERN_HD float kern_bf16_to_f32(uint16_t h)
{
	return kern_f32_from_bits((uint32_t)h << 16);
}

KERN_HD uint16_t kern_f32_to_bf16(float f)
{
	uint32_t u = kern_f32_bits(f);
	/*
	 * Adding 0x7fff rounds the low half up when it is above one half; adding
	 * the lowest kept bit as well makes an exact half round up only when
	 * that bit is odd (ties to even). A carry out of the mantissa bumps the
	 * exponent, which is right, and carries the largest finite values into
	 * Inf. Only a NaN could carry into the sign (or turn into Inf), so a NaN
	 * instead gets its quiet bit set and is truncated. Selecting between the
	 * 32-bit values and shifting once vectorises better than selecting
	 * between 16-bit halves.
	 */
	uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
	uint32_t quiet_nan = u | 0x00400000u;

	return (uint16_t)((f != f ? quiet_nan : rounded) >> 16);
}

/* ------------------------------------------------------------- float16 */

/*
 * float16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
 * float32: 1 sign bit, 8 exponent bits (bias 127), 23 mantissa bits.
 */
KERN_HD float kern_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exponent = h & 0x7c00u;
	uint32_t mantissa = h & 0x03ffu;
	/* Normal: move the fields up and add the difference of biases, 112. */
	uint32_t normal = ((uint32_t)(h & 0x7fffu) << 13) + (112u << 23);
	/* Inf and NaN: exponent all ones, mantissa (NaN payload) kept. */
	uint32_t special = 0x7f800000u | (mantissa << 13);
	/*
	 * Subnormal or zero: mantissa * 2^-24, which float32 holds exactly. The
	 * conversion goes through int32_t because signed int-to-float is the one
	 * that vector units have.
	 */
	uint32_t subnormal = kern_f32_bits((float)(int32_t)mantissa * 0x1p-24f);
	uint32_t magnitude = kern_select_u32(exponent == 0, subnormal, normal);
	magnitude = kern_select_u32(exponent == 0x7c00u, special, magnitude);

	return kern_f32_from_bits(sign | magnitude);
}

KERN_HD uint16_t kern_f32_to_f16(float f)
{
	uint32_t u = kern_f32_bits(f);
	uint32_t sign = (u >> 16) & 0x8000u;
	uint32_t a = u & 0x7fffffffu; /* bits of |f| */
	/*
	 * Normal result (2^-14 <= |f| < 2^16): rebias the exponent (subtract
	 * 112) and round the 13 dropped bits as for bfloat16. Rounding up from
	 * 65520 carries into the exponent and gives Inf, as it should. For
	 * smaller |f| the subtraction wraps; that value is not selected.
	 */
	uint32_t normal = (a - (112u << 23) + 0x0fffu + ((a >> 13) & 1u)) >> 13;
	/*
	 * Subnormal result (|f| < 2^-14): 0.5f has an ulp of 2^-24, the float16
	 * subnormal step, so adding it makes the FPU round |f| to a multiple of
	 * 2^-24 (ties to even); the mantissa bits of the sum are the float16
	 * mantissa. A value that rounds up to 2^-14 yields 0x400, the smallest
	 * normal, which is again right.
	 */
	uint32_t subnormal = kern_f32_bits(kern_f32_from_bits(a) + 0.5f) - 0x3f000000u;
	uint32_t quiet_nan = 0x7e00u | ((a >> 13) & 0x03ffu);
	uint32_t h = kern_select_u32(a < 0x38800000u, subnormal, normal); /* 2^-14 */
	h = kern_select_u32(a >= 0x47800000u, 0x7c00u, h);                /* 2^16, Inf */
	h = kern_select_u32(a > 0x7f800000u, quiet_nan, h);

	return (uint16_t)(sign | h);
}

#endif /* LLMP_KERNELS_HALF_H */
