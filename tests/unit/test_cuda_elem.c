/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_cuda_elem.c - the element functions of the CUDA kernels
 * (kernels/cuda/NAME_elem.h) on the CPU, against the host kernels and
 * against references written here.
 *
 * Built twice from this one file (tests/unit/local.mk): by the C compiler as
 * test_cuda_elem, always, and by nvcc as CUDA C++ host code as
 * test_cuda_elem_nvcc when configure finds nvcc, where KERN_HD is
 * __host__ __device__ as in the kernels. So it is written in the common
 * subset of C11 and C++ (casts from void * written out, no designated
 * initialisers).
 *
 * What each test compares with: the 16-bit conversions the kernels use
 * (kernels/half.h, compiled by nvcc as the device compiles it) with the
 * value of every pattern's fields and a rounding by search written here
 * (all 65536 patterns, and float32 values around every rounding boundary); the two-input
 * reductions with kern_reduce(); the k-input ones with float32 arithmetic
 * in input order done here and the rounding by search; segment-and-combine
 * CRC-32C with kern_crc32c(); the log-sum-exp merge with a float64
 * reference, and kern_attn_merge() with it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" { /* cmocka.h and the host kernels' headers declare C functions without saying so */
#endif
#include <cmocka.h>

#include "kernels/attn_merge.h"
#include "kernels/crc32c.h"
#include "kernels/reduce.h"
#ifdef __cplusplus
}
#endif
#include "kernels/half.h"
#include "kernels/cuda/attn_merge_elem.h"
#include "kernels/cuda/crc32c_elem.h"
#include "kernels/cuda/reduce_elem.h"
#include "tests/unit/bits.h"

#define ARRAY_LEN(a) (sizeof a / sizeof((a)[0]))

/* ---------------------------------------------------------------- helpers */

static void *checked_malloc(size_t bytes)
{
	void *p = malloc(bytes);
	assert_non_null(p);
	return p;
}

/* ------------------------------------------- 16-bit formats, independently */

struct format {
	llmp_dtype dtype;
	int exponent_bits, mantissa_bits;
	uint32_t inf;   /* the pattern of +Inf */
	uint32_t quiet; /* the quiet bit of a NaN */
	double *values; /* value of the patterns 0..inf (inf: the first power of 2 past the largest) */
};

static struct format bf16_format = { LLMP_BFLOAT16, 8, 7, 0x7f80, 0x0040, NULL };
static struct format f16_format = { LLMP_FLOAT16, 5, 10, 0x7c00, 0x0200, NULL };

static struct format *format_of(llmp_dtype dtype)
{
	return dtype == LLMP_BFLOAT16 ? &bf16_format : &f16_format;
}

/* The value of a non-NaN, non-negative pattern below inf from its fields. */
static double pattern_value(const struct format *f, uint32_t p)
{
	int bias = (1 << (f->exponent_bits - 1)) - 1;
	int exponent = (int)(p >> f->mantissa_bits);
	int mantissa = (int)(p & ((1u << f->mantissa_bits) - 1));
	if (exponent == 0)
		return mantissa * pow2(1 - bias - f->mantissa_bits);
	return (mantissa + (1 << f->mantissa_bits)) * pow2(exponent - bias - f->mantissa_bits);
}

static const double *format_values(struct format *f)
{
	if (!f->values) {
		f->values = (double *)checked_malloc((f->inf + 1) * sizeof(double));
		for (uint32_t p = 0; p < f->inf; p++)
			f->values[p] = pattern_value(f, p);
		f->values[f->inf] = pow2(1 << (f->exponent_bits - 1));
	}
	return f->values;
}

static bool is_nan_pattern(const struct format *f, uint32_t p)
{
	return (p & 0x7fffu) > f->inf;
}

/* The value of any pattern, as a float (exact). */
static float ref_widen(struct format *f, uint32_t p)
{
	if (is_nan_pattern(f, p))
		return NAN;
	double v = (p & 0x7fffu) == f->inf ? (double)INFINITY : format_values(f)[p & 0x7fffu];
	return (float)((p & 0x8000u) ? -v : v);
}

/* Round x to the nearest pattern, ties to the even one, by binary search; 0x7fff for a NaN. */
static uint32_t ref_round(struct format *f, float x)
{
	const double *v = format_values(f);
	uint32_t sign = (bits_of(x) >> 31) ? 0x8000u : 0u;
	double ax = x < 0 ? -(double)x : (double)x;

	if (x != x)
		return 0x7fffu;
	if (ax >= v[f->inf])
		return sign | f->inf;
	uint32_t lo = 0, hi = f->inf;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (v[mid] <= ax)
			lo = mid;
		else
			hi = mid;
	}
	double below = ax - v[lo], above = v[hi] - ax;
	uint32_t p = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
	return sign | p;
}

/*
 * The conversions the kernels run (kernels/half.h, KERN_HD), by dtype:
 * compiled by nvcc for test_cuda_elem_nvcc, as on the device.
 */
static float widen(llmp_dtype dtype, uint32_t p)
{
	return dtype == LLMP_BFLOAT16 ? kern_bf16_to_f32((uint16_t)p) : kern_f16_to_f32((uint16_t)p);
}

static uint32_t narrow(llmp_dtype dtype, float x)
{
	return dtype == LLMP_BFLOAT16 ? kern_f32_to_bf16(x) : kern_f32_to_f16(x);
}

/* ------------------------------------------------------------ conversions */

static void check_widen_all(llmp_dtype dtype)
{
	struct format *f = format_of(dtype);
	for (uint32_t p = 0; p < 65536; p++) {
		float got = widen(dtype, p);
		float ref = ref_widen(f, p);
		if (ref == ref ? bits_of(got) != bits_of(ref) : got == got)
			fail_msg("widen 0x%04x: 0x%08x, value from the fields 0x%08x", p, bits_of(got),
				 bits_of(ref));
	}
}

static void test_bf16_widen_all(void **state)
{
	(void)state;
	check_widen_all(LLMP_BFLOAT16);
}

static void test_f16_widen_all(void **state)
{
	(void)state;
	check_widen_all(LLMP_FLOAT16);
}

/* One float32 through the narrowing and the search. */
static void check_narrow(llmp_dtype dtype, uint32_t x_bits)
{
	float x = float_of(x_bits);
	uint32_t got = narrow(dtype, x);
	struct format *f = format_of(dtype);
	uint32_t ref = ref_round(f, x);
	if (x != x) {
		/* A quiet NaN of the same sign, its leading payload bits kept. */
		uint32_t kept = dtype == LLMP_BFLOAT16
					? (x_bits >> 16) | f->quiet
					: ((x_bits >> 16) & 0x8000u) | 0x7e00u | ((x_bits >> 13) & 0x3ffu);
		if (got != kept)
			fail_msg("narrow NaN 0x%08x: 0x%04x, expected 0x%04x", x_bits, got, kept);
	} else if (got != ref) {
		fail_msg("narrow 0x%08x: 0x%04x, nearest even 0x%04x", x_bits, got, ref);
	}
}

/*
 * Every pattern's value and the float32 values on and next to the midpoint
 * between it and the next pattern (where ties to even decide), both signs;
 * then float32 patterns 65521 apart from several starting points (about
 * 330000 more, spread over all exponents and NaN payloads).
 */
static void check_narrow_all(llmp_dtype dtype)
{
	struct format *f = format_of(dtype);
	const double *v = format_values(f);
	for (uint32_t p = 0; p < f->inf; p++) {
		uint32_t mid = bits_of((float)((v[p] + v[p + 1]) / 2)); /* exact in float32 */
		uint32_t probes[] = { bits_of((float)v[p]), mid - 1, mid, mid + 1 };
		for (size_t i = 0; i < ARRAY_LEN(probes); i++) {
			check_narrow(dtype, probes[i]);
			check_narrow(dtype, probes[i] | 0x80000000u);
		}
	}
	for (uint32_t start = 0; start < 5; start++)
		for (uint64_t u = start * 13107u; u <= 0xffffffffu; u += 65521u)
			check_narrow(dtype, (uint32_t)u);
}

static void test_bf16_narrow(void **state)
{
	(void)state;
	check_narrow_all(LLMP_BFLOAT16);
}

static void test_f16_narrow(void **state)
{
	(void)state;
	check_narrow_all(LLMP_FLOAT16);
}

/* ------------------------------------------------------------- reductions */

static const llmp_dtype float_dtypes[] = { LLMP_FLOAT32, LLMP_BFLOAT16, LLMP_FLOAT16 };

static size_t size_of(llmp_dtype dtype)
{
	return dtype == LLMP_FLOAT32 ? 4 : 2;
}

static uint32_t raw_at(const void *buf, size_t i, llmp_dtype dtype)
{
	if (dtype == LLMP_FLOAT32) {
		uint32_t u;
		memcpy(&u, (const unsigned char *)buf + 4 * i, 4);
		return u;
	}
	uint16_t h;
	memcpy(&h, (const unsigned char *)buf + 2 * i, 2);
	return h;
}

static void set_raw(void *buf, size_t i, llmp_dtype dtype, uint32_t raw)
{
	if (dtype == LLMP_FLOAT32) {
		memcpy((unsigned char *)buf + 4 * i, &raw, 4);
	} else {
		uint16_t h = (uint16_t)raw;
		memcpy((unsigned char *)buf + 2 * i, &h, 2);
	}
}

/* The value of raw bits of dtype, by the test's own widening. */
static float value_of(llmp_dtype dtype, uint32_t raw)
{
	return dtype == LLMP_FLOAT32 ? float_of(raw) : ref_widen(format_of(dtype), raw);
}

static bool is_nan_raw(llmp_dtype dtype, uint32_t raw)
{
	return dtype == LLMP_FLOAT32 ? (raw & 0x7fffffffu) > 0x7f800000u
				     : is_nan_pattern(format_of(dtype), raw);
}

/* Special values of each type: zeros, Inf, NaNs (two payloads, both signs), subnormals, extremes, 1. */
static const uint32_t specials_f32[] = { 0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
					 0xffc00001, 0x7f800001, 0x00000001, 0x80000001, 0x007fffff,
					 0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000 };
static const uint32_t specials_bf16[] = { 0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x0001,
					  0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x3f80, 0xbf80 };
static const uint32_t specials_f16[] = { 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x7c01, 0x0001,
					 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x3c00, 0xbc00 };
#define NSPECIALS 15

static const uint32_t *specials_of(llmp_dtype dtype)
{
	return dtype == LLMP_FLOAT32 ? specials_f32 : dtype == LLMP_BFLOAT16 ? specials_bf16 : specials_f16;
}

/* A value of moderate size (|x| in [2^-6, 2^6)), random sign and mantissa, exactly of dtype. */
static uint32_t moderate_raw(llmp_dtype dtype, uint64_t *rng)
{
	uint64_t r = next_random(rng);
	float x = float_of((uint32_t)((r & 0x80000000u) | ((uint32_t)(121 + (r >> 32) % 12) << 23) |
				      ((uint32_t)(r >> 8) & 0x7fffffu)));
	return dtype == LLMP_FLOAT32 ? bits_of(x) : ref_round(format_of(dtype), x);
}

/*
 * Input j of n elements: a mix of special values (one in 8), raw random bit
 * patterns (one in 8: NaNs, Infs and subnormals of all payloads) and
 * moderate values (the rest, so sums and products stay mostly finite).
 */
static void *make_input(llmp_dtype dtype, size_t n, uint64_t *rng)
{
	void *buf = checked_malloc(n * size_of(dtype));
	for (size_t i = 0; i < n; i++) {
		uint64_t kind = next_random(rng) % 8;
		uint32_t raw;
		if (kind == 0)
			raw = specials_of(dtype)[next_random(rng) % NSPECIALS];
		else if (kind == 1)
			raw = (uint32_t)next_random(rng) & (dtype == LLMP_FLOAT32 ? 0xffffffffu : 0xffffu);
		else
			raw = moderate_raw(dtype, rng);
		set_raw(buf, i, dtype, raw);
	}
	return buf;
}

/* A NaN as min and max return it: float32 bits as they were, a 16-bit one quieted by the narrowing. */
static uint32_t nan_result(llmp_dtype dtype, uint32_t raw)
{
	return dtype == LLMP_FLOAT32 ? raw : raw | format_of(dtype)->quiet;
}

/*
 * The expected bits of a k-input reduction: float32 arithmetic in input
 * order here, then the one rounding by search. min and max select exactly:
 * the first NaN, else the extreme value with -0 below +0.
 */
static uint32_t expected_reduce(const void *const *srcs, unsigned k, size_t i, llmp_dtype dtype, llmp_op op,
				uint32_t divisor)
{
	if (op == LLMP_MIN || op == LLMP_MAX) {
		size_t best = 0;
		for (unsigned j = 0; j < k; j++) {
			uint32_t raw = raw_at(srcs[j], i, dtype);
			if (is_nan_raw(dtype, raw))
				return nan_result(dtype, raw);
			float x = value_of(dtype, raw), b = value_of(dtype, raw_at(srcs[best], i, dtype));
			bool x_first = op == LLMP_MIN ? (x < b || (x == b && signbit(x) && !signbit(b)))
						      : (x > b || (x == b && !signbit(x) && signbit(b)));
			if (x_first)
				best = j;
		}
		uint32_t raw = raw_at(srcs[best], i, dtype);
		return raw;
	}
	volatile float acc = value_of(dtype, raw_at(srcs[0], i, dtype));
	for (unsigned j = 1; j < k; j++) {
		float x = value_of(dtype, raw_at(srcs[j], i, dtype));
		acc = op == LLMP_PROD ? acc * x : acc + x;
	}
	if (op == LLMP_AVG)
		acc = acc / (float)divisor;
	return dtype == LLMP_FLOAT32 ? bits_of(acc) : ref_round(format_of(dtype), acc);
}

/* NaN against NaN counts as equal for sums and products (payloads are the arithmetic unit's). */
static bool same_result(llmp_dtype dtype, llmp_op op, uint32_t expected, uint32_t got)
{
	if ((op == LLMP_SUM || op == LLMP_PROD || op == LLMP_AVG) && is_nan_raw(dtype, expected))
		return is_nan_raw(dtype, got);
	return expected == got;
}

/* The vector path of reduce.cu: 16-byte vectors through kern_elem_lane and kern_elem_set_lane. */
static void reduce_vector(void *dst, const void *const *srcs, unsigned k, size_t v, llmp_dtype dtype,
			  llmp_op op, uint32_t divisor)
{
	unsigned per = (unsigned)(16 / size_of(dtype));
	float acc[8];
	uint32_t w[4], out[4] = { 0, 0, 0, 0 };
	memcpy(w, (const unsigned char *)srcs[0] + 16 * v, 16);
	for (unsigned e = 0; e < per; e++)
		acc[e] = kern_elem_to_f32(kern_elem_lane(w, e, dtype), dtype);
	for (unsigned j = 1; j < k; j++) {
		memcpy(w, (const unsigned char *)srcs[j] + 16 * v, 16);
		for (unsigned e = 0; e < per; e++)
			acc[e] = kern_elem_combine(op, acc[e],
						   kern_elem_to_f32(kern_elem_lane(w, e, dtype), dtype));
	}
	for (unsigned e = 0; e < per; e++)
		kern_elem_set_lane(out, e, dtype,
				   kern_elem_from_f32(kern_elem_finish(op, acc[e], divisor), dtype));
	memcpy((unsigned char *)dst + 16 * v, out, 16);
}

#define PAIRS (NSPECIALS * NSPECIALS)
#define RANDOM_N 4000

/* Two inputs: every pair of specials, then random ones; as kern_cuda_reduce maps them. */
static void test_reduce2_vs_host(void **state)
{
	(void)state;
	uint64_t rng = 1;
	size_t n = PAIRS + RANDOM_N;
	for (size_t t = 0; t < ARRAY_LEN(float_dtypes); t++) {
		llmp_dtype dtype = float_dtypes[t];
		size_t size = size_of(dtype);
		unsigned char *a = (unsigned char *)make_input(dtype, n, &rng);
		unsigned char *b = (unsigned char *)make_input(dtype, n, &rng);
		for (size_t i = 0; i < PAIRS; i++) {
			set_raw(a, i, dtype, specials_of(dtype)[i / NSPECIALS]);
			set_raw(b, i, dtype, specials_of(dtype)[i % NSPECIALS]);
		}
		unsigned char *host = (unsigned char *)checked_malloc(n * size);
		unsigned char *got = (unsigned char *)checked_malloc(n * size);
		unsigned char *vec = (unsigned char *)checked_malloc(n * size);
		const void *srcs[2] = { a, b };
		for (int o = 0; o < LLMP_NOPS; o++) {
			llmp_op op = (llmp_op)o, device_op = op == LLMP_AVG ? LLMP_SUM : op;
			assert_int_equal(kern_reduce(host, a, b, n, dtype, op), LLMP_OK);
			for (size_t i = 0; i < n; i++)
				set_raw(got, i, dtype, kern_elem_reduce_k(srcs, 2, i, dtype, device_op, 1));
			for (size_t v = 0; v < n * size / 16; v++)
				reduce_vector(vec, srcs, 2, v, dtype, device_op, 1);
			size_t in_vectors = n * size / 16 * 16 / size;
			for (size_t i = 0; i < n; i++) {
				uint32_t e = raw_at(host, i, dtype), g = raw_at(got, i, dtype);
				uint32_t w = i < in_vectors ? raw_at(vec, i, dtype) : g;
				if (!same_result(dtype, op, e, g) || !same_result(dtype, op, g, w))
					fail_msg(
						"%s %s element %zu: 0x%x op 0x%x = 0x%x, vector 0x%x, kern_reduce 0x%x",
						llmp_dtype_name(dtype), llmp_op_name(op), i,
						raw_at(a, i, dtype), raw_at(b, i, dtype), g, w, e);
			}
		}
		free(a);
		free(b);
		free(host);
		free(got);
		free(vec);
	}
}

/* One reduction of n elements, element by element and by vectors, against expected_reduce. */
static void check_reduce_k(const void *const *srcs, unsigned k, size_t n, llmp_dtype dtype, llmp_op op,
			   uint32_t divisor, unsigned char *vec)
{
	for (size_t v = 0; v < n * size_of(dtype) / 16; v++)
		reduce_vector(vec, srcs, k, v, dtype, op, divisor);
	for (size_t i = 0; i < n; i++) {
		uint32_t e = expected_reduce(srcs, k, i, dtype, op, divisor);
		uint32_t g = kern_elem_reduce_k(srcs, k, i, dtype, op, divisor), w = raw_at(vec, i, dtype);
		if (!same_result(dtype, op, e, g) || !same_result(dtype, op, g, w))
			fail_msg("%s %s k=%u /%u element %zu: 0x%x, vector 0x%x, expected 0x%x",
				 llmp_dtype_name(dtype), llmp_op_name(op), k, divisor, i, g, w, e);
	}
}

/* k = 1..8 inputs, every operator, averages by k and by 3. n is a whole number of vectors. */
static void test_reduce_k_accumulation(void **state)
{
	(void)state;
	uint64_t rng = 2;
	size_t n = 2048;
	for (size_t t = 0; t < ARRAY_LEN(float_dtypes); t++) {
		llmp_dtype dtype = float_dtypes[t];
		void *srcs[KERN_ELEM_REDUCE_MAX_INPUTS];
		for (unsigned j = 0; j < KERN_ELEM_REDUCE_MAX_INPUTS; j++)
			srcs[j] = make_input(dtype, n, &rng);
		unsigned char *vec = (unsigned char *)checked_malloc(n * size_of(dtype));
		for (unsigned k = 1; k <= KERN_ELEM_REDUCE_MAX_INPUTS; k++) {
			for (int o = 0; o < LLMP_NOPS; o++)
				check_reduce_k((const void *const *)srcs, k, n, dtype, (llmp_op)o, k, vec);
			check_reduce_k((const void *const *)srcs, k, n, dtype, LLMP_AVG, 3, vec);
		}
		for (unsigned j = 0; j < KERN_ELEM_REDUCE_MAX_INPUTS; j++)
			free(srcs[j]);
		free(vec);
	}
}

/*
 * One rounding, not k-1: bfloat16 1 + seven times 2^-8. Each two-input sum
 * is a tie that rounds back to 1; accumulated in float32 the sum is
 * 1 + 7/256, which rounds (a tie again) to the even 1 + 4/128.
 */
static void test_reduce_k_rounds_once(void **state)
{
	(void)state;
	uint16_t in[8][1];
	const void *srcs[8];
	in[0][0] = 0x3f80; /* 1 */
	for (int j = 1; j < 8; j++)
		in[j][0] = 0x3b80; /* 2^-8 */
	for (int j = 0; j < 8; j++)
		srcs[j] = in[j];
	assert_int_equal(kern_elem_reduce_k(srcs, 8, 0, LLMP_BFLOAT16, LLMP_SUM, 1), 0x3f84); /* 1.03125 */

	uint16_t chain = in[0][0];
	for (int j = 1; j < 8; j++)
		assert_int_equal(kern_reduce(&chain, &chain, in[j], 1, LLMP_BFLOAT16, LLMP_SUM), LLMP_OK);
	assert_int_equal(chain, 0x3f80);
}

/* min and max: the first NaN in input order wins, -0 below +0 in either order. */
static void test_min_max_ieee(void **state)
{
	(void)state;
	float zero = 0.0f, minus_zero = -0.0f;
	assert_int_equal(bits_of(kern_elem_min_f32(zero, minus_zero)), 0x80000000u);
	assert_int_equal(bits_of(kern_elem_min_f32(minus_zero, zero)), 0x80000000u);
	assert_int_equal(bits_of(kern_elem_max_f32(zero, minus_zero)), 0u);
	assert_int_equal(bits_of(kern_elem_max_f32(minus_zero, zero)), 0u);
	float nan_a = float_of(0x7fc00001u), nan_b = float_of(0xffc00002u);
	assert_int_equal(bits_of(kern_elem_min_f32(nan_a, nan_b)), 0x7fc00001u);
	assert_int_equal(bits_of(kern_elem_max_f32(nan_b, nan_a)), 0xffc00002u);
	assert_int_equal(bits_of(kern_elem_min_f32(1.0f, nan_b)), 0xffc00002u);
	assert_int_equal(bits_of(kern_elem_max_f32(nan_a, (float)INFINITY)), 0x7fc00001u);
	assert_true(kern_elem_min_f32(-(float)INFINITY, 3.0f) == -(float)INFINITY);
	assert_true(kern_elem_max_f32(float_of(1), 0.0f) == float_of(1)); /* subnormal */
}

/* ------------------------------------------------------------------- CRC */

/* The byte table bit by bit, here: reflected CRC-32C. */
static uint32_t ref_table_entry(uint32_t b)
{
	uint32_t r = b;
	for (int i = 0; i < 8; i++)
		r = (r & 1) ? (r >> 1) ^ 0x82F63B78u : r >> 1;
	return r;
}

struct crc_tables {
	uint32_t table[KERN_CRC32C_TABLE_WORDS];
	uint32_t powers[KERN_CRC32C_POWERS];
};

/* As a block of crc32c.cu fills its shared memory. */
static void build_tables(struct crc_tables *t)
{
	for (uint32_t b = 0; b < 256; b++)
		t->table[b] = kern_elem_crc32c_table_entry(b);
	for (uint32_t s = 1; s < 8; s++)
		for (uint32_t b = 0; b < 256; b++)
			t->table[256 * s + b] = kern_elem_crc32c_table_next(t->table,
									    t->table[256 * (s - 1) + b]);
	kern_elem_crc32c_powers(t->powers);
}

/* The kernel's arithmetic: the prefix term, then every segment's term, XORed (here last to first). */
static uint32_t crc_by_segments(const struct crc_tables *t, uint32_t crc_in, const unsigned char *p,
				size_t len, size_t seg)
{
	uint32_t x = kern_elem_crc32c_prefix_term(crc_in, t->powers, len);
	size_t segments = (len + seg - 1) / seg;
	for (size_t i = segments; i-- > 0;)
		x ^= kern_elem_crc32c_term(t->table, t->powers, p, len, seg, i);
	return x;
}

static void test_crc_tables(void **state)
{
	(void)state;
	struct crc_tables *t = (struct crc_tables *)checked_malloc(sizeof *t);
	build_tables(t);
	for (uint32_t b = 0; b < 256; b++) {
		assert_int_equal(t->table[b], ref_table_entry(b));
		/* Table s: byte b followed by s zero bytes. */
		for (uint32_t s = 1; s < 8; s++) {
			uint32_t r = ref_table_entry(b);
			for (uint32_t z = 0; z < s; z++)
				r = (r >> 8) ^ ref_table_entry(r & 0xff);
			assert_int_equal(t->table[256 * s + b], r);
		}
	}
	/* "123456789" -> 0xE3069283 whatever the segments. */
	const unsigned char check[] = "123456789";
	for (size_t seg = 1; seg <= 10; seg++)
		assert_int_equal(crc_by_segments(t, 0, check, 9, seg), 0xE3069283u);
	free(t);
}

/* Every length 0..300 at every alignment 0..7, many segment lengths, continued or not. */
static void test_crc_segments_small(void **state)
{
	(void)state;
	struct crc_tables *t = (struct crc_tables *)checked_malloc(sizeof *t);
	build_tables(t);
	uint64_t rng = 3;
	unsigned char buf[320];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (unsigned char)next_random(&rng);
	const size_t segs[] = { 1, 2, 3, 5, 7, 8, 9, 16, 31, 64, 100, 1024 };
	const uint32_t crc_ins[] = { 0, 0xdeadbeefu };
	for (size_t align = 0; align < 8; align++)
		for (size_t len = 0; len <= 300; len++)
			for (size_t s = 0; s < ARRAY_LEN(segs); s++)
				for (size_t c = 0; c < ARRAY_LEN(crc_ins); c++) {
					uint32_t got = crc_by_segments(t, crc_ins[c], buf + align, len,
								       segs[s]);
					uint32_t want = kern_crc32c(crc_ins[c], buf + align, len);
					if (got != want)
						fail_msg(
							"len %zu align %zu seg %zu crc_in 0x%x: 0x%08x, kern_crc32c 0x%08x",
							len, align, segs[s], crc_ins[c], got, want);
				}
	free(t);
}

/* Larger buffers, segments from 1 byte to the whole. */
static void test_crc_segments_large(void **state)
{
	(void)state;
	struct crc_tables *t = (struct crc_tables *)checked_malloc(sizeof *t);
	build_tables(t);
	uint64_t rng = 4;
	size_t cap = (1u << 18) + 64;
	unsigned char *buf = (unsigned char *)checked_malloc(cap);
	for (size_t i = 0; i < cap; i++)
		buf[i] = (unsigned char)next_random(&rng);
	const size_t lens[] = { 4095, 4096, 4097, 65536 + 13, 1u << 18 };
	const size_t segs[] = { 1, 8, 13, 1000, 1024, 4096, 65536, 1u << 20 };
	for (size_t l = 0; l < ARRAY_LEN(lens); l++)
		for (size_t s = 0; s < ARRAY_LEN(segs); s++) {
			if (segs[s] == 1 && lens[l] > 70000)
				continue; /* 2^18 one-byte segments: slow, and nothing new */
			size_t align = (l + s) % 8;
			uint32_t got = crc_by_segments(t, 0x12345678u, buf + align, lens[l], segs[s]);
			uint32_t want = kern_crc32c(0x12345678u, buf + align, lens[l]);
			if (got != want)
				fail_msg("len %zu seg %zu: 0x%08x, kern_crc32c 0x%08x", lens[l], segs[s], got,
					 want);
		}
	free(buf);
	free(t);
}

/* x^(8n) from the powers, as kern_crc32c_combine uses it, for n up to 2^40. */
static void test_crc_shift_vs_combine(void **state)
{
	(void)state;
	uint32_t powers[KERN_CRC32C_POWERS];
	kern_elem_crc32c_powers(powers);
	uint64_t rng = 5;
	for (int i = 0; i < 2000; i++) {
		uint32_t a = (uint32_t)next_random(&rng), b = (uint32_t)next_random(&rng);
		uint64_t n = next_random(&rng) >> (24 + i % 40);
		uint32_t got = kern_elem_crc32c_mul(a, kern_elem_crc32c_x8n(n, powers)) ^ b;
		assert_int_equal(got, kern_crc32c_combine(a, b, n));
	}
}

/* --------------------------------------------------------- log-sum-exp merge */

#define ROWS 3000

/* Log-sum-exps covering the cases: ordinary, equal, far apart, large, one or both -inf. */
static void make_lse(uint64_t *rng, float *l1, float *l2, size_t rows)
{
	for (size_t r = 0; r < rows; r++) {
		float a = (float)((double)(next_random(rng) % 60000) / 1000.0 - 30.0);
		float b = (float)((double)(next_random(rng) % 60000) / 1000.0 - 30.0);
		switch (r % 10) {
		case 0: b = a; break;
		case 1: a = -(float)INFINITY; break;
		case 2: b = -(float)INFINITY; break;
		case 3:
			a = -(float)INFINITY;
			b = -(float)INFINITY;
			break;
		case 4: b = a - 200.0f; break;               /* exp underflows */
		case 5: b = a + 40.0f; break;                /* tiny but not zero weight */
		case 6: a = a * 400.0f, b = a + 0.5f; break; /* |L| ~ 10^4 */
		default: break;
		}
		l1[r] = a;
		l2[r] = b;
	}
}

/* The float64 reference of one row, and the error it allows a float32 result. */
static void ref_merge_row(float l1, float l2, const float *o1, const float *o2, size_t dim, double *lse,
			  double *o, double *o_tolerance, double *lse_tolerance)
{
	double a = l1, b = l2;
	if (a == -INFINITY && b == -INFINITY) {
		*lse = -INFINITY;
		for (size_t j = 0; j < dim; j++)
			o[j] = 0.0, o_tolerance[j] = 0.0;
		*lse_tolerance = 0.0;
		return;
	}
	double m = a > b ? a : b;
	double l = m + log(exp(a - m) + exp(b - m));
	double w1 = exp(a - l), w2 = exp(b - l);
	*lse = l;
	/* float32 unit roundoff 2^-24: a few for the arithmetic, and the error of L carried into exp(L_b - L). */
	double eps = pow2(-24);
	*lse_tolerance = 8 * eps * (fabs(l) + 1);
	double scale = 16 * eps +
		       4 * eps * (fabs(l) + fabs(a == -INFINITY ? 0 : a) + fabs(b == -INFINITY ? 0 : b));
	for (size_t j = 0; j < dim; j++) {
		double p1 = a == -INFINITY ? 0 : w1 * o1[j], p2 = b == -INFINITY ? 0 : w2 * o2[j];
		o[j] = p1 + p2;
		o_tolerance[j] = (fabs(p1) + fabs(p2)) * scale + 1e-37;
	}
}

/* The merge's outputs within tolerance of float64; exact where a side is -inf. */
static void check_merge(const char *what, const float *l1, const float *l2, const float *o1, const float *o2,
			const float *lse, const float *o, size_t rows, size_t dim)
{
	double *ref = (double *)checked_malloc(dim * sizeof(double));
	double *tol = (double *)checked_malloc(dim * sizeof(double));
	for (size_t r = 0; r < rows; r++) {
		double ref_lse, lse_tol;
		const float *a = o1 + r * dim, *b = o2 + r * dim, *out = o + r * dim;
		ref_merge_row(l1[r], l2[r], a, b, dim, &ref_lse, ref, tol, &lse_tol);
		if (ref_lse == -INFINITY ? lse[r] != -(float)INFINITY : !(fabs(lse[r] - ref_lse) <= lse_tol))
			fail_msg("%s row %zu: L1 %a L2 %a: L %a, float64 %a", what, r, (double)l1[r],
				 (double)l2[r], (double)lse[r], ref_lse);
		for (size_t j = 0; j < dim; j++) {
			bool exact = l1[r] == -(float)INFINITY || l2[r] == -(float)INFINITY;
			/* One side empty: the other side's values (and 0 when both are). */
			double want = l1[r] == -(float)INFINITY
					      ? (l2[r] == -(float)INFINITY ? 0.0 : (double)b[j])
					      : (double)a[j];
			if (exact ? (double)out[j] != want : !(fabs(out[j] - ref[j]) <= tol[j]))
				fail_msg("%s row %zu elem %zu: L1 %a L2 %a O1 %a O2 %a: %a, float64 %a", what,
					 r, j, (double)l1[r], (double)l2[r], (double)a[j], (double)b[j],
					 (double)out[j], exact ? want : ref[j]);
		}
	}
	free(ref);
	free(tol);
}

/* As merge_rows in attn_merge.cu computes each row. */
static void merge_by_elements(float *o, float *lse, const float *o1, const float *lse1, const float *o2,
			      const float *lse2, size_t rows, size_t dim)
{
	for (size_t r = 0; r < rows; r++) {
		struct kern_elem_lse_weights w = kern_elem_lse_merge(lse1[r], lse2[r]);
		lse[r] = w.lse;
		for (size_t j = 0; j < dim; j++)
			o[r * dim + j] = kern_elem_lse_apply(w, o1[r * dim + j], o2[r * dim + j]);
	}
}

static void test_lse_merge(void **state)
{
	(void)state;
	const size_t dims[] = { 1, 3, 64 };
	uint64_t rng = 6;
	float *l1 = (float *)checked_malloc(ROWS * sizeof(float)),
	      *l2 = (float *)checked_malloc(ROWS * sizeof(float));
	float *lse = (float *)checked_malloc(ROWS * sizeof(float)),
	      *lse_c = (float *)checked_malloc(ROWS * sizeof(float));
	for (size_t d = 0; d < ARRAY_LEN(dims); d++) {
		size_t dim = dims[d], n = ROWS * dim;
		float *o1 = (float *)checked_malloc(n * sizeof(float)),
		      *o2 = (float *)checked_malloc(n * sizeof(float));
		float *o = (float *)checked_malloc(n * sizeof(float)),
		      *o_c = (float *)checked_malloc(n * sizeof(float));
		make_lse(&rng, l1, l2, ROWS);
		for (size_t i = 0; i < n; i++) {
			o1[i] = (float)((double)(next_random(&rng) % 80000) / 10000.0 - 4.0);
			o2[i] = (float)((double)(next_random(&rng) % 80000) / 10000.0 - 4.0);
			/* An empty block's output may be anything: it must not be read into the result. */
			if (l1[i / dim] == -(float)INFINITY)
				o1[i] = (i % 2) ? NAN : (float)INFINITY;
			if (l2[i / dim] == -(float)INFINITY)
				o2[i] = NAN;
		}
		merge_by_elements(o, lse, o1, l1, o2, l2, ROWS, dim);
		check_merge("elements", l1, l2, o1, o2, lse, o, ROWS, dim);
		assert_int_equal(kern_attn_merge(o_c, lse_c, o1, l1, o2, l2, ROWS, dim), LLMP_OK);
		check_merge("kern_attn_merge", l1, l2, o1, o2, lse_c, o_c, ROWS, dim);

		/* In place into the first side: the same bits as apart. */
		float *l1_copy = (float *)checked_malloc(ROWS * sizeof(float));
		memcpy(l1_copy, l1, ROWS * sizeof(float));
		assert_int_equal(kern_attn_merge(o1, l1_copy, o1, l1_copy, o2, l2, ROWS, dim), LLMP_OK);
		assert_memory_equal(o1, o_c, n * sizeof(float));
		assert_memory_equal(l1_copy, lse_c, ROWS * sizeof(float));
		free(l1_copy);
		free(o1);
		free(o2);
		free(o);
		free(o_c);
	}
	assert_int_equal(kern_attn_merge(NULL, lse, NULL, l1, NULL, l2, 0, 4), LLMP_OK);
	assert_int_equal(kern_attn_merge(NULL, lse, lse, l1, lse, l2, 1, 1), LLMP_ERR_ARG);
	assert_int_equal(kern_attn_merge(lse, lse_c, lse, l1, lse, l2, 1, 0), LLMP_ERR_ARG);
	free(l1);
	free(l2);
	free(lse);
	free(lse_c);
}

/* Both -inf: L = -inf, weights 0, never NaN (-inf - -inf would be). */
static void test_lse_merge_empty_rows(void **state)
{
	(void)state;
	struct kern_elem_lse_weights w = kern_elem_lse_merge(-(float)INFINITY, -(float)INFINITY);
	assert_true(w.lse == -(float)INFINITY);
	assert_true(w.w1 == 0.0f && w.w2 == 0.0f);
	assert_true(kern_elem_lse_apply(w, NAN, (float)INFINITY) == 0.0f);
	w = kern_elem_lse_merge(2.5f, -(float)INFINITY);
	assert_true(w.lse == 2.5f && w.w1 == 1.0f && w.w2 == 0.0f);
	assert_true(kern_elem_lse_apply(w, -1.25f, NAN) == -1.25f);
	/* A NaN log-sum-exp is not hidden. */
	w = kern_elem_lse_merge(NAN, 1.0f);
	assert_true(w.lse != w.lse);
	w = kern_elem_lse_merge(1.0f, NAN);
	assert_true(w.lse != w.lse);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bf16_widen_all),
		cmocka_unit_test(test_f16_widen_all),
		cmocka_unit_test(test_bf16_narrow),
		cmocka_unit_test(test_f16_narrow),
		cmocka_unit_test(test_reduce2_vs_host),
		cmocka_unit_test(test_reduce_k_accumulation),
		cmocka_unit_test(test_reduce_k_rounds_once),
		cmocka_unit_test(test_min_max_ieee),
		cmocka_unit_test(test_crc_tables),
		cmocka_unit_test(test_crc_segments_small),
		cmocka_unit_test(test_crc_segments_large),
		cmocka_unit_test(test_crc_shift_vs_combine),
		cmocka_unit_test(test_lse_merge),
		cmocka_unit_test(test_lse_merge_empty_rows),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	free(bf16_format.values);
	free(f16_format.values);
	return failed;
}
