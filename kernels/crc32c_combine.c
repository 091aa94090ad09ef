/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crc32c_combine.c - the CRC-32C of a concatenation, from the CRCs of its
 * parts and the length of the second.
 *
 * A checkpoint shard is checksummed whole without reading its tensors'
 * bytes twice: their CRCs are known (taken from memory when saved, checked
 * as they are read when loaded), so only the bytes between them (HDF5's
 * metadata) are read, and the pieces are joined here.
 *
 * A CRC is a remainder modulo the polynomial P. For A followed by B,
 * crc(AB) = crc(A) * x^(8 |B|) + crc(B) mod P: the initial and final XOR of
 * 0xFFFFFFFF cancel out (zlib's crc32_combine rests on the same identity).
 * Polynomials are in the reflected representation of crc32c.c: bit 31 is
 * x^0, bit 0 is x^31. x^(8n) comes from repeated squaring, so a combine costs
 * O(log n) products of 32 steps each, whatever n.
 */
#include "crc32c.h"

#define POLY 0x82F63B78u /* CRC-32C's polynomial, reflected */

/* a * b mod P. A fixed 32 steps: no early exit that a zero operand could turn into a loop. */
static uint32_t multiply_mod_p(uint32_t a, uint32_t b)
{
	uint32_t product = 0;
	for (uint32_t bit = 1u << 31; bit != 0; bit >>= 1) {
		if (a & bit)
			product ^= b;
		b = (b & 1) ? (b >> 1) ^ POLY : b >> 1; /* b *= x */
	}
	return product;
}

/* x^(8n) mod P. */
static uint32_t x_to_8n_mod_p(uint64_t n)
{
	uint32_t result = 1u << 31; /* x^0 */
	uint32_t square = 1u << 23; /* x^8: one byte */
	for (; n != 0; n >>= 1) {
		if (n & 1)
			result = multiply_mod_p(square, result);
		square = multiply_mod_p(square, square);
	}
	return result;
}

uint32_t kern_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
	return multiply_mod_p(x_to_8n_mod_p(len_b), crc_a) ^ crc_b;
}
