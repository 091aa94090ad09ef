/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_values.c - inputs and expected results, independent of libllmp.
 *
 * Why the expected values are exact: sums of integers below the type's
 * last exact integer (256 for bfloat16, 2048 for float16, 2^24 for
 * float32) are exact whatever the order of the additions, and so are
 * products of +-1 and +-2 while at most 8 members contribute a 2. AVG is the
 * exact sum divided by n: computed here in double and rounded once more
 * to the type. Rounding twice (double, then 8 or 11 bits) could only differ
 * from rounding once if the double landed exactly on a midpoint, which
 * needs a run of more than 40 equal bits in s/n; a quotient by n <= 40 has
 * a binary period shorter than that.
 */
#include "rt_values.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ dtypes */

size_t chk_dtype_size(llmp_dtype dtype)
{
	switch (dtype) {
	case LLMP_FLOAT32: return 4;
	case LLMP_FLOAT64: return 8;
	case LLMP_BFLOAT16: return 2;
	case LLMP_FLOAT16: return 2;
	case LLMP_INT32: return 4;
	case LLMP_INT64: return 8;
	case LLMP_UINT8: return 1;
	default: return 0;
	}
}

bool chk_dtype_is_float(llmp_dtype dtype)
{
	return dtype == LLMP_FLOAT32 || dtype == LLMP_FLOAT64 || dtype == LLMP_BFLOAT16 ||
	       dtype == LLMP_FLOAT16;
}

const char *chk_dtype_name(int dtype)
{
	static const char *const names[] = { "float32", "float64", "bfloat16", "float16",
					     "int32",   "int64",   "uint8" };
	return dtype >= 0 && dtype < LLMP_NDTYPES ? names[dtype] : "-";
}

const char *chk_op_name(int op)
{
	static const char *const names[] = { "sum", "prod", "min", "max", "avg" };
	return op >= 0 && op < LLMP_NOPS ? names[op] : "-";
}

/* ------------------------------------------------- half precision */

/* x rounded to `bits` significant bits, ties to even (rint's default mode). */
static double round_significant(double x, int bits)
{
	int e;
	if (x == 0 || !isfinite(x))
		return x;
	(void)frexp(x, &e);
	return ldexp(rint(ldexp(x, bits - e)), e - bits);
}

uint16_t chk_to_bf16(double x)
{
	/* bfloat16 is the top half of a float32: 8 significant bits, float32's range. */
	double r;
	if (isnan(x))
		return 0x7fc0;
	if (fabs(x) < 0x1p-126) /* subnormal: a multiple of 2^-133 */
		r = ldexp(rint(ldexp(x, 133)), -133);
	else
		r = round_significant(x, 8);
	float f = (float)r; /* exact: 8 bits fit in 24 (or infinity past the range) */
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return (uint16_t)(u >> 16);
}

double chk_from_bf16(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

uint16_t chk_to_f16(double x)
{
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	double a = fabs(x);
	int e;

	if (isnan(x))
		return 0x7e00;
	if (a >= 65520.0) /* 65504 + half an ulp: ties go to even, i.e. infinity */
		return sign | 0x7c00;
	if (a < 0x1p-14) /* subnormal: a multiple of 2^-24; 1024 * 2^-24 is the smallest normal */
		return sign | (uint16_t)rint(ldexp(a, 24));
	a = round_significant(a, 11);
	if (a >= 65536.0)
		return sign | 0x7c00;
	(void)frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
	unsigned exponent = (unsigned)(e - 1 + 15);
	unsigned mantissa = (unsigned)(ldexp(a, 11 - e) - 1024.0);
	return sign | (uint16_t)(exponent << 10) | (uint16_t)mantissa;
}

double chk_from_f16(uint16_t h)
{
	unsigned e = (h >> 10) & 31, m = h & 1023;
	double v;
	if (e == 0)
		v = ldexp(m, -24);
	else if (e == 31)
		v = m ? NAN : INFINITY;
	else
		v = ldexp(m + 1024, (int)e - 25);
	return (h & 0x8000) ? -v : v;
}

/* ---------------------------------------------------- encode, decode */

static void encode_float(llmp_dtype dtype, double x, void *elem)
{
	switch (dtype) {
	case LLMP_FLOAT32: {
		float f = (float)x;
		memcpy(elem, &f, 4);
		break;
	}
	case LLMP_FLOAT64: memcpy(elem, &x, 8); break;
	case LLMP_BFLOAT16: {
		uint16_t h = chk_to_bf16(x);
		memcpy(elem, &h, 2);
		break;
	}
	case LLMP_FLOAT16: {
		uint16_t h = chk_to_f16(x);
		memcpy(elem, &h, 2);
		break;
	}
	default: break;
	}
}

static double decode_float(llmp_dtype dtype, const void *elem)
{
	uint16_t h;
	switch (dtype) {
	case LLMP_FLOAT32: {
		float f;
		memcpy(&f, elem, 4);
		return f;
	}
	case LLMP_FLOAT64: {
		double d;
		memcpy(&d, elem, 8);
		return d;
	}
	case LLMP_BFLOAT16: memcpy(&h, elem, 2); return chk_from_bf16(h);
	case LLMP_FLOAT16: memcpy(&h, elem, 2); return chk_from_f16(h);
	default: return NAN;
	}
}

/* Two's complement: the low bytes of v (little-endian host assumed, as x86/arm64). */
static void encode_int(llmp_dtype dtype, uint64_t v, void *elem)
{
	switch (dtype) {
	case LLMP_INT32: {
		uint32_t u = (uint32_t)v;
		memcpy(elem, &u, 4);
		break;
	}
	case LLMP_INT64: memcpy(elem, &v, 8); break;
	case LLMP_UINT8: {
		uint8_t u = (uint8_t)v;
		memcpy(elem, &u, 1);
		break;
	}
	default: break;
	}
}

/* Signed types sign-extended, uint8 zero-extended, so int64 order is the type's order. */
static int64_t decode_int(llmp_dtype dtype, const void *elem)
{
	switch (dtype) {
	case LLMP_INT32: {
		int32_t v;
		memcpy(&v, elem, 4);
		return v;
	}
	case LLMP_INT64: {
		int64_t v;
		memcpy(&v, elem, 8);
		return v;
	}
	case LLMP_UINT8: {
		uint8_t v;
		memcpy(&v, elem, 1);
		return v;
	}
	default: return 0;
	}
}

void chk_store_real(llmp_dtype dtype, void *elem, double x)
{
	encode_float(dtype, x, elem);
}

double chk_load_real(llmp_dtype dtype, const void *elem)
{
	return decode_float(dtype, elem);
}

/* -------------------------------------------------------------- inputs */

static uint64_t mix64(uint64_t x)
{
	/* splitmix64's finaliser */
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* What one member's inputs of one call share; element i then costs one mix. */
static uint64_t member_seed(uint64_t test, uint32_t wrank, int dtype)
{
	return mix64(mix64(test) ^ ((uint64_t)wrank << 8 | (uint64_t)dtype));
}

static uint64_t hash_elem(uint64_t seed, size_t index)
{
	return mix64(seed ^ (uint64_t)index);
}

/* An integer in [-m, m]. */
static int64_t spread(uint64_t h, int64_t m)
{
	return (int64_t)(h % (uint64_t)(2 * m + 1)) - m;
}

/* The largest integer up to which every integer is exact in the type. */
static double exact_limit(llmp_dtype dtype)
{
	switch (dtype) {
	case LLMP_BFLOAT16: return 256.0;
	case LLMP_FLOAT16: return 2048.0;
	case LLMP_FLOAT32: return 0x1p24;
	default: return 0x1p53;
	}
}

/* Arbitrary bits, but never NaN or infinity (an all-ones exponent loses a bit). */
static void finite_bits(llmp_dtype dtype, uint64_t h, void *elem)
{
	switch (dtype) {
	case LLMP_FLOAT64:
		if (((h >> 52) & 0x7ff) == 0x7ff)
			h &= ~(1ull << 62);
		memcpy(elem, &h, 8);
		break;
	case LLMP_FLOAT32: {
		uint32_t u = (uint32_t)h;
		if (((u >> 23) & 0xff) == 0xff)
			u &= ~(1u << 30);
		memcpy(elem, &u, 4);
		break;
	}
	case LLMP_BFLOAT16: {
		uint16_t u = (uint16_t)h;
		if (((u >> 7) & 0xff) == 0xff)
			u &= (uint16_t) ~(1u << 14);
		memcpy(elem, &u, 2);
		break;
	}
	case LLMP_FLOAT16: {
		uint16_t u = (uint16_t)h;
		if (((u >> 10) & 0x1f) == 0x1f)
			u &= (uint16_t) ~(1u << 14);
		memcpy(elem, &u, 2);
		break;
	}
	default: break;
	}
}

static double float_input(const chk_gen *g, uint32_t crank, size_t index, uint64_t h)
{
	double limit = exact_limit(g->dtype);
	int64_t m;

	switch (g->op) {
	case LLMP_SUM:
	case LLMP_AVG:
		/* n values of magnitude <= m sum to at most limit - 1 */
		m = (int64_t)((limit - 1) / (g->n ? g->n : 1));
		return (double)spread(h, m);
	case LLMP_PROD: {
		/* +-1 or +-2; only members 0..7 may give a 2, so |product| <= 256 */
		double mag = ((h & 1) && crank < 8) ? 2.0 : 1.0;
		return (h & 2) ? -mag : mag;
	}
	default: /* min, max; one member gives a NaN every 97 elements */
		if (index % 97 == 13 && g->n && crank == (index / 97) % g->n)
			return NAN;
		return (double)spread(h, limit > 1001 ? 1000 : (int64_t)limit - 1);
	}
}

static uint64_t int_input(const chk_gen *g, uint64_t h)
{
	if (g->op != LLMP_AVG)
		return h; /* any bits: sums and products wrap */
	/* avg: no overflow in the sum, so "sum then divide" has one meaning */
	switch (g->dtype) {
	case LLMP_INT32: return (uint64_t)spread(h, 1 << 20);
	case LLMP_INT64: return (uint64_t)spread(h, (int64_t)1 << 40);
	default: return h % (255u / (g->n ? g->n : 1) + 1);
	}
}

static void input_seeded(const chk_gen *g, uint64_t seed, uint32_t crank, size_t index, void *elem)
{
	uint64_t h = hash_elem(seed, index);

	if (!chk_dtype_is_float(g->dtype))
		encode_int(g->dtype, int_input(g, h), elem);
	else if (g->op == CHK_COPY)
		finite_bits(g->dtype, h, elem);
	else
		encode_float(g->dtype, float_input(g, crank, index, h), elem);
}

void chk_input(const chk_gen *g, uint32_t wrank, uint32_t crank, size_t index, void *elem)
{
	input_seeded(g, member_seed(g->test, wrank, (int)g->dtype), crank, index, elem);
}

void chk_input_fill(const chk_gen *g, uint32_t wrank, uint32_t crank, void *buf, size_t first, size_t count)
{
	size_t esz = chk_dtype_size(g->dtype);
	uint64_t seed = member_seed(g->test, wrank, (int)g->dtype);
	for (size_t j = 0; j < count; j++)
		input_seeded(g, seed, crank, first + j, (char *)buf + j * esz);
}

/* ------------------------------------------------------------ expected */

static void reduce_float(const chk_gen *g, const uint64_t *seeds, size_t index, void *elem)
{
	unsigned char in[8];
	double acc = 0;
	bool nan = false;

	for (uint32_t m = 0; m < g->n; m++) {
		input_seeded(g, seeds[m], m, index, in);
		double x = decode_float(g->dtype, in);
		if (isnan(x))
			nan = true;
		if (m == 0) {
			acc = x;
			continue;
		}
		switch (g->op) {
		case LLMP_SUM:
		case LLMP_AVG: acc += x; break;
		case LLMP_PROD: acc *= x; break;
		case LLMP_MIN: acc = x < acc ? x : acc; break;
		case LLMP_MAX: acc = x > acc ? x : acc; break;
		default: break;
		}
	}
	if (g->op == LLMP_AVG)
		acc /= g->n;
	encode_float(g->dtype, nan ? NAN : acc, elem);
}

static void reduce_int(const chk_gen *g, const uint64_t *seeds, size_t index, void *elem)
{
	unsigned char in[8];
	uint64_t acc = 0;  /* sum, prod: wrapping */
	int64_t best = 0;  /* min, max */
	int64_t exact = 0; /* avg: the true sum */

	for (uint32_t m = 0; m < g->n; m++) {
		input_seeded(g, seeds[m], m, index, in);
		int64_t x = decode_int(g->dtype, in);
		if (m == 0) {
			acc = (uint64_t)x;
			best = x;
			exact = x;
			continue;
		}
		acc = g->op == LLMP_PROD ? acc * (uint64_t)x : acc + (uint64_t)x;
		if (g->op == LLMP_MIN ? x < best : x > best)
			best = x;
		if (g->op == LLMP_AVG)
			exact += x; /* avg inputs are small: no overflow */
	}
	switch (g->op) {
	case LLMP_MIN:
	case LLMP_MAX: encode_int(g->dtype, (uint64_t)best, elem); break;
	case LLMP_AVG: encode_int(g->dtype, (uint64_t)(exact / (int64_t)g->n), elem); break;
	default: encode_int(g->dtype, acc, elem); break;
	}
}

void chk_expected_reduce(const chk_gen *g, const uint32_t *wranks, size_t first, size_t count, void *out)
{
	size_t esz = chk_dtype_size(g->dtype);
	uint64_t *seeds = malloc(g->n * sizeof *seeds);
	if (!seeds) {
		fprintf(stderr, "rt_check: out of memory\n");
		exit(2);
	}
	for (uint32_t m = 0; m < g->n; m++)
		seeds[m] = member_seed(g->test, wranks[m], (int)g->dtype);
	for (size_t j = 0; j < count; j++) {
		if (chk_dtype_is_float(g->dtype))
			reduce_float(g, seeds, first + j, (char *)out + j * esz);
		else
			reduce_int(g, seeds, first + j, (char *)out + j * esz);
	}
	free(seeds);
}

/* ------------------------------------------------------------ compare */

bool chk_elem_equal(llmp_dtype dtype, const void *got, const void *expected)
{
	if (chk_dtype_is_float(dtype) && isnan(decode_float(dtype, expected)))
		return isnan(decode_float(dtype, got));
	return memcmp(got, expected, chk_dtype_size(dtype)) == 0;
}

void chk_elem_format(llmp_dtype dtype, const void *elem, char *buf, size_t len)
{
	uint64_t bits = 0;
	size_t esz = chk_dtype_size(dtype);
	memcpy(&bits, elem, esz);
	if (chk_dtype_is_float(dtype))
		snprintf(buf, len, "%.17g (0x%0*" PRIx64 ")", decode_float(dtype, elem), (int)(2 * esz),
			 bits);
	else if (dtype == LLMP_UINT8)
		snprintf(buf, len, "%" PRId64 " (0x%02" PRIx64 ")", decode_int(dtype, elem), bits);
	else
		snprintf(buf, len, "%" PRId64 " (0x%0*" PRIx64 ")", decode_int(dtype, elem), (int)(2 * esz),
			 bits);
}

/* ---------------------------------------------------------- random pass */

double chk_random_input(llmp_dtype dtype, unsigned seed, uint64_t test, uint32_t wrank, size_t index, int op)
{
	uint64_t h = hash_elem(member_seed(test ^ mix64(seed), wrank, (int)dtype), index);
	int bits = dtype == LLMP_FLOAT32 ? 23 : 52;
	double u = ldexp((double)(h >> (64 - bits)), -bits); /* [0, 1), exact in dtype */

	if (op == LLMP_PROD)
		return (h & 1) ? -(1.0 + u) : 1.0 + u;
	return 2.0 * u - 1.0;
}
