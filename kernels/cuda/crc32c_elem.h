/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crc32c_elem.h - CRC-32C by segment and combine: the arithmetic of the
 * CUDA checksum kernel (crc32c.cu), and of its emulation on the CPU.
 *
 * The buffer is cut into segments of a fixed length; each thread takes the
 * CRC of its segments, each one alone (initial value and final XOR of
 * 0xFFFFFFFF, as kern_crc32c(0, ...)), with slice-by-8 tables. A CRC is
 * linear over GF(2): the CRC of A followed by B is crc(A) * x^(8|B|) + crc(B)
 * mod P, the identity of kernels/crc32c_combine.c (the inversions cancel).
 * Unrolled over all segments:
 *
 *   crc(S_0 S_1 ... S_n-1) = XOR over i of crc(S_i) * x^(8 * bytes after S_i)
 *
 * so each segment contributes one term and the terms are XORed, in any order
 * (XOR is exact, associative and commutative: no tree, no fixed order, the
 * same bits every run). Continuing a CRC c over the buffer adds the term
 * c * x^(8 len). x^(8n) is the product of the powers x^(8 * 2^j) of n's set
 * bits, from a table of 64 (kern_elem_crc32c_powers).
 *
 * Polynomials are reflected, as in kernels/crc32c.c: bit 31 is x^0.
 */
#ifndef LLMP_KERNELS_CUDA_CRC32C_ELEM_H
#define LLMP_KERNELS_CUDA_CRC32C_ELEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/hd.h"

#define KERN_CRC32C_POLY 0x82F63B78u      /* 0x1EDC6F41, reflected */
#define KERN_CRC32C_TABLE_WORDS (8 * 256) /* slice-by-8: table s at [256 * s] */
#define KERN_CRC32C_POWERS 64

/* a * b mod P: 32 fixed steps. */
KERN_HD uint32_t kern_elem_crc32c_mul(uint32_t a, uint32_t b)
{
	uint32_t product = 0;
	for (int i = 0; i < 32; i++) {
		product ^= (0u - ((a >> (31 - i)) & 1u)) & b;        /* + b if a has x^i */
		b = (b >> 1) ^ ((0u - (b & 1u)) & KERN_CRC32C_POLY); /* b *= x */
	}
	return product;
}

/* powers[j] = x^(8 * 2^j) mod P for j < 64. */
KERN_HD void kern_elem_crc32c_powers(uint32_t *powers)
{
	uint32_t p = 1u << 23; /* x^8: one byte */
	for (int j = 0; j < KERN_CRC32C_POWERS; j++) {
		powers[j] = p;
		p = kern_elem_crc32c_mul(p, p);
	}
}

/* x^(8n) mod P. */
KERN_HD uint32_t kern_elem_crc32c_x8n(uint64_t n, const uint32_t *powers)
{
	uint32_t result = 1u << 31; /* x^0 */
	for (int j = 0; n != 0; j++, n >>= 1)
		if (n & 1u)
			result = kern_elem_crc32c_mul(powers[j], result);
	return result;
}

/* Entry b of the byte table: the register after byte b, bit by bit. */
KERN_HD uint32_t kern_elem_crc32c_table_entry(uint32_t b)
{
	uint32_t r = b;
	for (int i = 0; i < 8; i++)
		r = (r >> 1) ^ ((0u - (r & 1u)) & KERN_CRC32C_POLY);
	return r;
}

/*
 * Entry b of table s from entry b of table s-1: one more zero byte.
 * table = KERN_CRC32C_TABLE_WORDS words, table 0 filled.
 */
KERN_HD uint32_t kern_elem_crc32c_table_next(const uint32_t *table, uint32_t previous)
{
	return (previous >> 8) ^ table[previous & 0xffu];
}

/* The register (no inversions) after n bytes, one at a time. */
KERN_HD uint32_t kern_elem_crc32c_bytes(uint32_t r, const uint32_t *table, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		r = (r >> 8) ^ table[(r ^ p[i]) & 0xffu];
	return r;
}

/* The register after n 8-byte words (little-endian), p aligned to 8. */
KERN_HD uint32_t kern_elem_crc32c_words(uint32_t r, const uint32_t *table, const unsigned char *p, size_t n)
{
	const unsigned char *q = (const unsigned char *)__builtin_assume_aligned(p, 8);
	for (size_t i = 0; i < n; i++, q += 8) {
		uint64_t w;
		memcpy(&w, q, sizeof w);
		uint32_t lo = (uint32_t)w ^ r, hi = (uint32_t)(w >> 32);
		r = table[7 * 256 + (lo & 0xffu)] ^ table[6 * 256 + ((lo >> 8) & 0xffu)] ^
		    table[5 * 256 + ((lo >> 16) & 0xffu)] ^ table[4 * 256 + (lo >> 24)] ^
		    table[3 * 256 + (hi & 0xffu)] ^ table[2 * 256 + ((hi >> 8) & 0xffu)] ^
		    table[1 * 256 + ((hi >> 16) & 0xffu)] ^ table[hi >> 24];
	}
	return r;
}

/* The CRC-32C of n bytes alone: kern_crc32c(0, p, n). */
KERN_HD uint32_t kern_elem_crc32c_segment(const uint32_t *table, const unsigned char *p, size_t n)
{
	size_t head = (size_t)((8u - ((uintptr_t)p & 7u)) & 7u);
	if (head > n)
		head = n;
	uint32_t r = kern_elem_crc32c_bytes(0xffffffffu, table, p, head);
	size_t words = (n - head) / 8;
	r = kern_elem_crc32c_words(r, table, p + head, words);
	r = kern_elem_crc32c_bytes(r, table, p + head + 8 * words, n - head - 8 * words);
	return ~r;
}

/*
 * The term of segment i of a buffer of len bytes cut into segments of seg
 * bytes (the last one may be shorter): its CRC times x^(8 * bytes after it).
 */
KERN_HD uint32_t kern_elem_crc32c_term(const uint32_t *table, const uint32_t *powers,
				       const unsigned char *buf, size_t len, size_t seg, size_t i)
{
	size_t start = i * seg;
	size_t n = len - start < seg ? len - start : seg;
	uint32_t crc = kern_elem_crc32c_segment(table, buf + start, n);
	return kern_elem_crc32c_mul(crc, kern_elem_crc32c_x8n(len - start - n, powers));
}

/* The term of the CRC continued over len bytes: crc_in * x^(8 len). */
KERN_HD uint32_t kern_elem_crc32c_prefix_term(uint32_t crc_in, const uint32_t *powers, size_t len)
{
	return kern_elem_crc32c_mul(crc_in, kern_elem_crc32c_x8n(len, powers));
}

#endif /* LLMP_KERNELS_CUDA_CRC32C_ELEM_H */
