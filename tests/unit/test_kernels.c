/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_kernels.c - the host reduction kernels (kernels/reduce.h), the 16-bit
 * float conversions under them (kernels/half.h) and the dtype names.
 *
 * Every expected value comes from a reference written here another way: a
 * 16-bit pattern's value is computed from its fields in double arithmetic,
 * rounding to 16 bits searches the table of those values for the nearest one
 * (ties to the even pattern), wrapping integers go through wider or split
 * arithmetic, truncating division through magnitudes. Nothing is taken from
 * the code under test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h> /* macros only (NAN, INFINITY, signbit): no -lm needed */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/copy.h"
#include "kernels/half.h"
#include <llmp/llmp_dtype.h>
#include "kernels/reduce.h"
#include "tests/unit/bits.h"

#define ARRAY_LEN(a) (sizeof a / sizeof((a)[0]))

/* Bytes per element, written out from the types' definitions. */
static const size_t elem_size[LLMP_NDTYPES] = { 4, 8, 2, 2, 4, 8, 1 };

/* ------------------------------------------------- the 16-bit references */

struct half_format {
	const char *name;
	int exponent_bits, mantissa_bits;
	uint16_t inf;              /* the pattern of +Inf: exponent all ones, mantissa 0 */
	float (*widen)(uint16_t);  /* under test */
	uint16_t (*narrow)(float); /* under test */
	double *values;            /* value of each pattern 0..inf, built once */
};

static float widen_bf16(uint16_t h)
{
	return kern_bf16_to_f32(h);
}
static uint16_t narrow_bf16(float f)
{
	return kern_f32_to_bf16(f);
}
static float widen_f16(uint16_t h)
{
	return kern_f16_to_f32(h);
}
static uint16_t narrow_f16(float f)
{
	return kern_f32_to_f16(f);
}

static struct half_format bf16 = { "bfloat16", 8, 7, 0x7f80, widen_bf16, narrow_bf16, NULL };
static struct half_format f16 = { "float16", 5, 10, 0x7c00, widen_f16, narrow_f16, NULL };

static bool half_is_nan(const struct half_format *f, uint16_t h)
{
	return (h & 0x7fff) > f->inf;
}

/* The value of a pattern from its fields, by the IEEE rules; exact in double. */
static double half_value(const struct half_format *f, uint16_t h)
{
	int bias = (1 << (f->exponent_bits - 1)) - 1;
	int exponent = (h >> f->mantissa_bits) & ((1 << f->exponent_bits) - 1);
	int mantissa = h & ((1 << f->mantissa_bits) - 1);
	double sign = (h & 0x8000) ? -1.0 : 1.0;

	if (exponent == (1 << f->exponent_bits) - 1)
		return mantissa ? (double)NAN : sign * (double)INFINITY;
	if (exponent == 0) /* subnormal: no hidden bit, exponent of 1 */
		return sign * mantissa * pow2(1 - bias - f->mantissa_bits);
	return sign * (mantissa + (1 << f->mantissa_bits)) * pow2(exponent - bias - f->mantissa_bits);
}

/*
 * Values of the non-negative patterns 0..inf in increasing order, with Inf
 * standing for the power of two just past the largest finite value: that is
 * where rounding with an unbounded exponent would land, so the search below
 * overflows exactly when IEEE says it does.
 */
static const double *half_values(struct half_format *f)
{
	if (!f->values) {
		f->values = malloc(((size_t)f->inf + 1) * sizeof(double));
		assert_non_null(f->values);
		for (uint32_t p = 0; p < f->inf; p++)
			f->values[p] = half_value(f, (uint16_t)p);
		f->values[f->inf] = pow2(1 << (f->exponent_bits - 1));
	}
	return f->values;
}

/* Round a float to the nearest pattern, ties to the even pattern, by search. */
static uint16_t half_round(struct half_format *f, float x)
{
	const double *v = half_values(f);
	uint16_t sign = (bits_of(x) >> 31) ? 0x8000 : 0;
	double ax = x < 0 ? -(double)x : (double)x;

	if (x != x)
		return 0x7fff; /* some NaN; callers compare NaNs as NaNs */
	if (ax >= v[f->inf])
		return sign | f->inf;
	/* v[lo] <= ax < v[hi] */
	uint32_t lo = 0, hi = f->inf;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (v[mid] <= ax)
			lo = mid;
		else
			hi = mid;
	}
	/* Both differences are exact in double: the operands are floats and close. */
	double below = ax - v[lo], above = v[hi] - ax;
	uint32_t p = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
	return (uint16_t)(sign | p);
}

/* The 16-bit results agree: the same pattern, or both NaN. */
static bool half_same(const struct half_format *f, uint16_t expected, uint16_t got)
{
	return half_is_nan(f, expected) ? half_is_nan(f, got) : expected == got;
}

/* ------------------------------------------------- element references */

/* IEEE 754-2019 minimum/maximum: NaN wins, -0 below +0. Exact for floats too. */
static double ref_min(double x, double y)
{
	if (isnan(x) || isnan(y))
		return (double)NAN;
	if (x == y)
		return signbit(x) ? x : y;
	return x < y ? x : y;
}

static double ref_max(double x, double y)
{
	if (isnan(x) || isnan(y))
		return (double)NAN;
	if (x == y)
		return signbit(x) ? y : x;
	return x > y ? x : y;
}

static float ref_f32(llmp_op op, float x, float y)
{
	switch (op) {
	case LLMP_SUM:
	case LLMP_AVG: return x + y;
	case LLMP_PROD: return x * y;
	case LLMP_MIN: return (float)ref_min(x, y);
	default: return (float)ref_max(x, y);
	}
}

static double ref_f64(llmp_op op, double x, double y)
{
	switch (op) {
	case LLMP_SUM:
	case LLMP_AVG: return x + y;
	case LLMP_PROD: return x * y;
	case LLMP_MIN: return ref_min(x, y);
	default: return ref_max(x, y);
	}
}

/* Reduce v modulo 2^32 into [INT32_MIN, INT32_MAX]. */
static int32_t wrap_i32(int64_t v)
{
	const int64_t m = INT64_C(4294967296);
	int64_t r = v % m;
	if (r < 0)
		r += m;
	if (r > INT32_MAX)
		r -= m;
	return (int32_t)r;
}

static int32_t ref_i32(llmp_op op, int32_t x, int32_t y)
{
	switch (op) {
	case LLMP_SUM:
	case LLMP_AVG: return wrap_i32((int64_t)x + y);
	case LLMP_PROD: return wrap_i32((int64_t)x * y); /* |x * y| <= 2^62 */
	case LLMP_MIN: return x < y ? x : y;
	default: return x > y ? x : y;
	}
}

static int64_t int64_of_bits(uint64_t u)
{
	int64_t v;
	memcpy(&v, &u, sizeof v);
	return v;
}

static uint64_t bits_of_int64(int64_t v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof u);
	return u;
}

/* Low 64 bits of the product, from 32-bit halves (schoolbook). */
static uint64_t low_product(uint64_t x, uint64_t y)
{
	uint64_t xl = x & 0xffffffffu, xh = x >> 32, yl = y & 0xffffffffu, yh = y >> 32;
	return xl * yl + ((xl * yh + xh * yl) << 32);
}

static int64_t ref_i64(llmp_op op, int64_t x, int64_t y)
{
	switch (op) {
	case LLMP_SUM:
	case LLMP_AVG: return int64_of_bits(bits_of_int64(x) + bits_of_int64(y));
	case LLMP_PROD: return int64_of_bits(low_product(bits_of_int64(x), bits_of_int64(y)));
	case LLMP_MIN: return x < y ? x : y;
	default: return x > y ? x : y;
	}
}

static uint8_t ref_u8(llmp_op op, unsigned x, unsigned y)
{
	switch (op) {
	case LLMP_SUM:
	case LLMP_AVG: return (uint8_t)((x + y) % 256);
	case LLMP_PROD: return (uint8_t)((x * y) % 256);
	case LLMP_MIN: return (uint8_t)(x < y ? x : y);
	default: return (uint8_t)(x > y ? x : y);
	}
}

/* 16-bit floats: widen by the reference, combine in float32, round by search. */
static uint16_t ref_half(struct half_format *f, llmp_op op, uint16_t x, uint16_t y)
{
	return half_round(f, ref_f32(op, (float)half_value(f, x), (float)half_value(f, y)));
}

/* out = x op y for one element of type t. */
static void ref_element(llmp_dtype t, llmp_op op, const void *x, const void *y, void *out)
{
	switch (t) {
	case LLMP_FLOAT32: {
		float a, b, r;
		memcpy(&a, x, 4), memcpy(&b, y, 4);
		r = ref_f32(op, a, b);
		memcpy(out, &r, 4);
		break;
	}
	case LLMP_FLOAT64: {
		double a, b, r;
		memcpy(&a, x, 8), memcpy(&b, y, 8);
		r = ref_f64(op, a, b);
		memcpy(out, &r, 8);
		break;
	}
	case LLMP_BFLOAT16:
	case LLMP_FLOAT16: {
		uint16_t a, b, r;
		memcpy(&a, x, 2), memcpy(&b, y, 2);
		r = ref_half(t == LLMP_BFLOAT16 ? &bf16 : &f16, op, a, b);
		memcpy(out, &r, 2);
		break;
	}
	case LLMP_INT32: {
		int32_t a, b, r;
		memcpy(&a, x, 4), memcpy(&b, y, 4);
		r = ref_i32(op, a, b);
		memcpy(out, &r, 4);
		break;
	}
	case LLMP_INT64: {
		int64_t a, b, r;
		memcpy(&a, x, 8), memcpy(&b, y, 8);
		r = ref_i64(op, a, b);
		memcpy(out, &r, 8);
		break;
	}
	default: *(uint8_t *)out = ref_u8(op, *(const uint8_t *)x, *(const uint8_t *)y); break;
	}
}

/* The elements agree: same bits, or both NaN (payloads may differ). */
static bool same_element(llmp_dtype t, const void *expected, const void *got)
{
	switch (t) {
	case LLMP_FLOAT32: {
		float e, g;
		memcpy(&e, expected, 4), memcpy(&g, got, 4);
		return isnan(e) ? isnan(g) : bits_of(e) == bits_of(g);
	}
	case LLMP_FLOAT64: {
		double e, g;
		memcpy(&e, expected, 8), memcpy(&g, got, 8);
		return isnan(e) ? isnan(g) : bits_of_double(e) == bits_of_double(g);
	}
	case LLMP_BFLOAT16:
	case LLMP_FLOAT16: {
		uint16_t e, g;
		memcpy(&e, expected, 2), memcpy(&g, got, 2);
		return half_same(t == LLMP_BFLOAT16 ? &bf16 : &f16, e, g);
	}
	default: return memcmp(expected, got, elem_size[t]) == 0;
	}
}

static void hex_of(const void *p, size_t size, char *out)
{
	const unsigned char *b = p;
	for (size_t i = size; i-- > 0;) /* little-endian bytes, most significant first */
		out += sprintf(out, "%02x", b[i]);
}

/* --------------------------------------------------- random elements */

/*
 * Mostly ordinary values (so sums and products are meaningful), sometimes
 * raw bit patterns (subnormals, NaN payloads, huge values) and sometimes the
 * edge values of the type.
 */
static void random_element(llmp_dtype t, uint64_t *rng, void *out)
{
	uint64_t r = next_random(rng);
	unsigned kind = (unsigned)(r >> 60); /* 0..15 */
	uint64_t bits = next_random(rng);

	switch (t) {
	case LLMP_FLOAT32: {
		static const uint32_t edge[] = { 0x00000000, 0x80000000, 0x7f800000, 0xff800000,
						 0x7fc00000, 0xffc00001, 0x7f800001, 0x7f7fffff,
						 0x00000001, 0x00800000, 0x3f800000, 0xbf800000 };
		uint32_t u = (uint32_t)bits;
		if (kind == 0)
			u = edge[bits % ARRAY_LEN(edge)];
		else if (kind > 3) /* |x| in [2^-8, 2^8) */
			u = (u & 0x807fffffu) | ((119u + (uint32_t)(r % 16)) << 23);
		memcpy(out, &u, 4);
		break;
	}
	case LLMP_FLOAT64: {
		static const uint64_t edge[] = { 0,
						 0x8000000000000000u,
						 0x7ff0000000000000u,
						 0xfff0000000000000u,
						 0x7ff8000000000000u,
						 0x7ff0000000000001u,
						 0x7fefffffffffffffu,
						 1,
						 0x3ff0000000000000u };
		uint64_t u = bits;
		if (kind == 0)
			u = edge[bits % ARRAY_LEN(edge)];
		else if (kind > 3)
			u = (u & 0x800fffffffffffffu) | ((uint64_t)(1016u + r % 16) << 52);
		memcpy(out, &u, 8);
		break;
	}
	case LLMP_BFLOAT16:
	case LLMP_FLOAT16: {
		static const uint16_t edge_bf16[] = { 0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0,
						      0x7f81, 0x7f7f, 0xff7f, 0x0001, 0x3f80 };
		static const uint16_t edge_f16[] = { 0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01,
						     0x7bff, 0xfbff, 0x0001, 0x03ff, 0x3c00 };
		bool is_bf16 = t == LLMP_BFLOAT16;
		uint16_t u = (uint16_t)bits;
		if (kind == 0)
			u = is_bf16 ? edge_bf16[bits % ARRAY_LEN(edge_bf16)]
				    : edge_f16[bits % ARRAY_LEN(edge_f16)];
		else if (kind > 3 && is_bf16)
			u = (uint16_t)((u & 0x807f) | ((119u + r % 16) << 7));
		else if (kind > 3)
			u = (uint16_t)((u & 0x83ff) | ((7u + r % 16) << 10));
		memcpy(out, &u, 2);
		break;
	}
	case LLMP_INT32: {
		static const int32_t edge[] = { 0, 1, -1, INT32_MAX, INT32_MIN, 65536, -65536 };
		uint32_t u = (uint32_t)bits; /* any bit pattern */
		int32_t v;
		memcpy(&v, &u, 4);
		if (kind == 0)
			v = edge[bits % ARRAY_LEN(edge)];
		else if (kind > 3) /* small values, so products do not always wrap */
			v = (int32_t)(bits % 2001) - 1000;
		memcpy(out, &v, 4);
		break;
	}
	case LLMP_INT64: {
		static const int64_t edge[] = { 0, 1, -1, INT64_MAX, INT64_MIN, INT64_C(1) << 32 };
		int64_t v = kind == 0  ? edge[bits % ARRAY_LEN(edge)]
			    : kind > 3 ? (int64_t)(bits % 2000001) - 1000000
				       : int64_of_bits(bits);
		memcpy(out, &v, 8);
		break;
	}
	default: *(uint8_t *)out = (uint8_t)bits; break;
	}
}

/* ------------------------------------------------- one checked reduction */

#define GUARD 32 /* bytes of poison before and after each buffer */
#define POISON 0xa5

enum placement { APART, INTO_A, INTO_B, SELF };
static const char *const placement_name[] = { "apart", "dst==a", "dst==b", "dst==a==b" };

/* A poisoned byte buffer holding `bytes` at byte offset GUARD + offset. */
struct region {
	unsigned char *raw;
	size_t total;
	unsigned char *data;
};

static void region_init(struct region *r, size_t bytes, size_t offset, const void *content)
{
	r->total = GUARD + offset + bytes + GUARD;
	r->raw = malloc(r->total);
	assert_non_null(r->raw);
	memset(r->raw, POISON, r->total);
	r->data = r->raw + GUARD + offset;
	if (content && bytes)
		memcpy(r->data, content, bytes);
}

/* Everything outside data still poison, and data equal to content if given. */
static void region_check_untouched(const struct region *r, size_t bytes, const void *content,
				   const char *what)
{
	for (size_t i = 0; i < r->total; i++) {
		const unsigned char *p = r->raw + i;
		if (p >= r->data && p < r->data + bytes) {
			if (content && *p != ((const unsigned char *)content)[p - r->data])
				fail_msg("%s: input byte %zu was changed", what, (size_t)(p - r->data));
		} else if (*p != POISON) {
			fail_msg("%s: byte %td %s the buffer was written", what,
				 p < r->data ? r->data - p : p - (r->data + bytes) + 1,
				 p < r->data ? "before" : "after");
		}
	}
}

struct reduction {
	llmp_dtype t;
	llmp_op op;
	size_t n;
	const unsigned char *a, *b, *expected; /* n elements each */
};

/*
 * Run one reduction with dst placed as `where`, each buffer at its own byte
 * offset from a malloc'd start, and check the result, the guards and that the
 * inputs are unchanged.
 */
static void check_placement(const struct reduction *r, enum placement where, size_t off_dst, size_t off_a,
			    size_t off_b)
{
	size_t es = elem_size[r->t], bytes = r->n * es;
	struct region d, a = { 0 }, b = { 0 };
	char what[160];
	void *pa, *pb;

	snprintf(what, sizeof what, "%s %s n=%zu %s offsets %zu/%zu/%zu", llmp_dtype_name(r->t),
		 llmp_op_name(r->op), r->n, placement_name[where], off_dst, off_a, off_b);
	switch (where) {
	case APART:
		region_init(&d, bytes, off_dst, NULL);
		region_init(&a, bytes, off_a, r->a);
		region_init(&b, bytes, off_b, r->b);
		pa = a.data, pb = b.data;
		break;
	case INTO_A:
		region_init(&d, bytes, off_dst, r->a);
		region_init(&b, bytes, off_b, r->b);
		pa = d.data, pb = b.data;
		break;
	case INTO_B:
		region_init(&d, bytes, off_dst, r->b);
		region_init(&a, bytes, off_a, r->a);
		pa = a.data, pb = d.data;
		break;
	default:
		region_init(&d, bytes, off_dst, r->a);
		pa = pb = d.data;
		break;
	}

	llmp_status st = kern_reduce(d.data, pa, pb, r->n, r->t, r->op);
	if (st != LLMP_OK)
		fail_msg("%s: status %d (%s)", what, st, llmp_strerror(st));
	for (size_t i = 0; i < r->n; i++) {
		const unsigned char *e = r->expected + i * es, *g = d.data + i * es;
		if (!same_element(r->t, e, g)) {
			char ha[20], hb[20], he[20], hg[20];
			hex_of(r->a + i * es, es, ha), hex_of(r->b + i * es, es, hb);
			hex_of(e, es, he), hex_of(g, es, hg);
			fail_msg("%s: element %zu: %s op %s gave %s, expected %s", what, i, ha, hb, hg, he);
		}
	}
	region_check_untouched(&d, bytes, NULL, what);
	if (a.raw)
		region_check_untouched(&a, bytes, r->a, what);
	if (b.raw)
		region_check_untouched(&b, bytes, r->b, what);
	free(d.raw), free(a.raw), free(b.raw);
}

/* Lengths around vector widths, so every tail length is met. */
static const size_t lengths[] = { 0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 1000, 4099 };

/*
 * For each length: random a and b, the expected result from the reference,
 * then every placement of dst, with buffers at an offset of 0 or 1 element
 * (1 byte for uint8) from malloc's alignment, mutually misaligned too.
 */
static void check_all_placements(llmp_dtype t, llmp_op op, uint64_t *rng)
{
	static const size_t offsets[][3] = {
		/* dst, a, b, in elements */
		{ 0, 0, 0 }, { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 }, { 1, 1, 1 },
	};
	size_t es = elem_size[t];

	for (size_t l = 0; l < ARRAY_LEN(lengths); l++) {
		size_t n = lengths[l];
		unsigned char *a = malloc(n * es + 1), *b = malloc(n * es + 1);
		unsigned char *expected = malloc(n * es + 1);
		assert_true(a && b && expected);
		for (size_t i = 0; i < n; i++) {
			random_element(t, rng, a + i * es);
			random_element(t, rng, b + i * es);
		}
		/* Equal operands now and then: signed zeros and x op x. */
		for (size_t i = 0; i + 5 < n; i += 7)
			memcpy(b + i * es, a + i * es, es);

		struct reduction r = { t, op, n, a, b, expected };
		for (size_t i = 0; i < n; i++)
			ref_element(t, op, a + i * es, b + i * es, expected + i * es);
		for (size_t o = 0; o < ARRAY_LEN(offsets); o++)
			check_placement(&r, APART, offsets[o][0] * es, offsets[o][1] * es,
					offsets[o][2] * es);
		for (size_t off = 0; off <= 1; off++) {
			check_placement(&r, INTO_A, off * es, 0, (1 - off) * es);
			check_placement(&r, INTO_B, off * es, (1 - off) * es, 0);
		}

		/* dst == a == b reduces a with itself. */
		for (size_t i = 0; i < n; i++)
			ref_element(t, op, a + i * es, a + i * es, expected + i * es);
		struct reduction self = { t, op, n, a, a, expected };
		check_placement(&self, SELF, 0, 0, 0);
		check_placement(&self, SELF, es, 0, 0);
		free(a), free(b), free(expected);
	}
}

/* ======================================================= names and sizes */

static void dtype_sizes_and_names_follow_the_enum(void **state)
{
	(void)state;
	static const char *const dtypes[] = { "float32", "float64", "bfloat16", "float16",
					      "int32",   "int64",   "uint8" };
	static const char *const ops[] = { "sum", "prod", "min", "max", "avg" };

	assert_int_equal(ARRAY_LEN(dtypes), LLMP_NDTYPES);
	assert_int_equal(ARRAY_LEN(ops), LLMP_NOPS);
	for (int t = 0; t < LLMP_NDTYPES; t++) {
		assert_int_equal(llmp_dtype_size((llmp_dtype)t), elem_size[t]);
		assert_string_equal(llmp_dtype_name((llmp_dtype)t), dtypes[t]);
		assert_int_equal(llmp_dtype_from_name(dtypes[t]), t);
	}
	for (int o = 0; o < LLMP_NOPS; o++) {
		assert_string_equal(llmp_op_name((llmp_op)o), ops[o]);
		assert_int_equal(llmp_op_from_name(ops[o]), o);
	}
}

static void unknown_dtypes_and_ops_have_no_size_and_a_question_mark(void **state)
{
	(void)state;
	assert_int_equal(llmp_dtype_size(LLMP_NDTYPES), 0);
	assert_int_equal(llmp_dtype_size((llmp_dtype)-1), 0);
	assert_string_equal(llmp_dtype_name(LLMP_NDTYPES), "?");
	assert_string_equal(llmp_dtype_name((llmp_dtype)-1), "?");
	assert_string_equal(llmp_op_name(LLMP_NOPS), "?");
	assert_string_equal(llmp_op_name((llmp_op)-1), "?");
	assert_int_equal(llmp_dtype_from_name("float"), -1);
	assert_int_equal(llmp_dtype_from_name("Float32"), -1);
	assert_int_equal(llmp_dtype_from_name("float32 "), -1);
	assert_int_equal(llmp_dtype_from_name(""), -1);
	assert_int_equal(llmp_dtype_from_name("?"), -1);
	assert_int_equal(llmp_dtype_from_name(NULL), -1);
	assert_int_equal(llmp_op_from_name("average"), -1);
	assert_int_equal(llmp_op_from_name("SUM"), -1);
	assert_int_equal(llmp_op_from_name(NULL), -1);
}

/* ============================================== 16-bit conversions */

static void check_widening_is_exact(struct half_format *f)
{
	for (uint32_t p = 0; p <= 0xffff; p++) {
		uint16_t h = (uint16_t)p;
		float got = f->widen(h);
		double want = half_value(f, h);
		if (half_is_nan(f, h)) {
			if (!isnan(got))
				fail_msg("%s 0x%04x (NaN) widened to %a", f->name, p, (double)got);
			if (!signbit(got) != !(h & 0x8000))
				fail_msg("%s 0x%04x (NaN) lost its sign", f->name, p);
		} else if (bits_of(got) != bits_of((float)want)) {
			fail_msg("%s 0x%04x widened to %a (0x%08x), expected %a", f->name, p, (double)got,
				 bits_of(got), want);
		}
	}
}

static void check_round_trip(struct half_format *f)
{
	for (uint32_t p = 0; p <= 0xffff; p++) {
		uint16_t h = (uint16_t)p, back = f->narrow(f->widen(h));
		if (half_is_nan(f, h)) {
			if (!half_is_nan(f, back) || (back & 0x8000) != (h & 0x8000))
				fail_msg("%s NaN 0x%04x came back as 0x%04x", f->name, p, back);
		} else if (back != h) {
			fail_msg("%s 0x%04x came back as 0x%04x", f->name, p, back);
		}
	}
}

static void check_narrowing_of(struct half_format *f, float x)
{
	uint16_t got = f->narrow(x), want = half_round(f, x);
	if (isnan(x)) {
		if (!half_is_nan(f, got) || (got >> 15) != (bits_of(x) >> 31))
			fail_msg("%s: NaN 0x%08x narrowed to 0x%04x", f->name, bits_of(x), got);
	} else if (got != want) {
		fail_msg("%s: %a (0x%08x) narrowed to 0x%04x, nearest-even is 0x%04x", f->name, (double)x,
			 bits_of(x), got, want);
	}
}

/* x and its float neighbours, both signs. */
static void check_narrowing_near(struct half_format *f, float x)
{
	uint32_t u = bits_of(x);
	for (int s = 0; s < 2; s++, u ^= 0x80000000u) {
		check_narrowing_of(f, float_of(u));
		check_narrowing_of(f, float_of(u + 1));
		if (u & 0x7fffffffu)
			check_narrowing_of(f, float_of(u - 1));
	}
}

/*
 * Every representable value, every midpoint between neighbours (the ties)
 * and the floats right beside each, the midpoint past the largest finite
 * value (overflow), specials, and random bit patterns.
 */
static void check_narrowing(struct half_format *f)
{
	const double *v = half_values(f);
	static const uint32_t specials[] = {
		0x00000000, 0x80000000, 0x7f800000, 0xff800000, /* zeros, infinities */
		0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, /* quiet and signaling NaNs */
		0x7fbfffff, 0x7fffffff, 0xffffffff, 0x7f802000,
		0x7f7fffff, 0xff7fffff, 0x00000001, 0x80000001, /* float extremes */
		0x00800000, 0x007fffff, 0x3f800000, 0x477fefff,
		0x477ff000, 0x477fffff, 0x47800000, 0x33000000, /* 65519.99 .. 2^16, 2^-25 */
		0x33000001, 0x337fffff, 0x33c00000, 0x7f7f8000, /* bf16 overflow tie */
		0x7f7f7fff, 0x7f7f8001,
	};
	uint64_t rng = 42;

	for (uint32_t p = 0; p < f->inf; p++) {
		check_narrowing_near(f, (float)v[p]);
		check_narrowing_near(f, (float)((v[p] + v[p + 1]) / 2)); /* exact */
	}
	for (size_t i = 0; i < ARRAY_LEN(specials); i++)
		check_narrowing_of(f, float_of(specials[i]));
	for (int i = 0; i < 200000; i++)
		check_narrowing_of(f, float_of((uint32_t)next_random(&rng)));
}

static void bfloat16_widens_every_pattern_exactly(void **state)
{
	(void)state;
	check_widening_is_exact(&bf16);
}

static void bfloat16_every_pattern_round_trips_through_float32(void **state)
{
	(void)state;
	check_round_trip(&bf16);
}

static void float32_to_bfloat16_rounds_to_nearest_even_overflows_to_inf_keeps_nan(void **state)
{
	(void)state;
	check_narrowing(&bf16);
	/* A few by hand, to be sure the reference itself is right. */
	assert_int_equal(kern_f32_to_bf16(1.0f), 0x3f80);
	assert_int_equal(kern_f32_to_bf16(float_of(0x3f808000)), 0x3f80); /* tie, even down */
	assert_int_equal(kern_f32_to_bf16(float_of(0x3f818000)), 0x3f82); /* tie, even up */
	assert_int_equal(kern_f32_to_bf16(float_of(0x3f808001)), 0x3f81);
	assert_int_equal(kern_f32_to_bf16(float_of(0x7f7f8000)), 0x7f80); /* to Inf */
	assert_int_equal(kern_f32_to_bf16(float_of(0x7f7f7fff)), 0x7f7f);
	assert_int_equal(kern_f32_to_bf16(-0.0f), 0x8000);
	assert_true(half_is_nan(&bf16, kern_f32_to_bf16(float_of(0x7fffffff))));
	assert_true(half_is_nan(&bf16, kern_f32_to_bf16(float_of(0x7f800001))));
}

static void float16_widens_every_pattern_exactly(void **state)
{
	(void)state;
	check_widening_is_exact(&f16);
}

static void float16_every_pattern_round_trips_through_float32(void **state)
{
	(void)state;
	check_round_trip(&f16);
}

static void float32_to_float16_rounds_to_nearest_even_with_subnormals_and_overflow(void **state)
{
	(void)state;
	check_narrowing(&f16);
	assert_int_equal(kern_f32_to_f16(1.0f), 0x3c00);
	assert_int_equal(kern_f32_to_f16(65504.0f), 0x7bff);
	assert_int_equal(kern_f32_to_f16(65519.99f), 0x7bff);
	assert_int_equal(kern_f32_to_f16(65520.0f), 0x7c00); /* tie past the largest: Inf */
	assert_int_equal(kern_f32_to_f16(1e9f), 0x7c00);
	assert_int_equal(kern_f32_to_f16(0x1p-24f), 0x0001); /* smallest subnormal */
	assert_int_equal(kern_f32_to_f16(0x1p-25f), 0x0000); /* tie, even down to 0 */
	assert_int_equal(kern_f32_to_f16(0x1.000002p-25f), 0x0001);
	assert_int_equal(kern_f32_to_f16(0x3p-25f), 0x0002);     /* tie, even up */
	assert_int_equal(kern_f32_to_f16(0x1.ff8p-15f), 0x03ff); /* largest subnormal */
	assert_int_equal(kern_f32_to_f16(0x1.ffcp-15f), 0x0400); /* tie: up to the smallest normal */
	assert_int_equal(kern_f32_to_f16(-0x1p-14f), 0x8400);
	assert_int_equal(kern_f32_to_f16(0x1p-30f), 0x0000);
	assert_int_equal(kern_f32_to_f16(-0x1p-30f), 0x8000);
	assert_true(half_is_nan(&f16, kern_f32_to_f16(float_of(0x7f800001))));
	assert_true(half_is_nan(&f16, kern_f32_to_f16(float_of(0xffc00000))));
}

/* ============================================= reductions, in general */

static void every_reduction_matches_a_scalar_reference(llmp_dtype t)
{
	uint64_t rng = 0x1234 + (uint64_t)t;
	for (int op = 0; op < LLMP_NOPS; op++)
		check_all_placements(t, (llmp_op)op, &rng);
}

/*
 * One test per type: every operator, every length, out of place and in place
 * (dst == a, dst == b, dst == a == b), aligned and not, guards untouched.
 */
static void float32_every_op_every_length_every_placement_matches_reference(void **state)
{
	(void)state;
	every_reduction_matches_a_scalar_reference(LLMP_FLOAT32);
}

static void float64_every_op_every_length_every_placement_matches_reference(void **state)
{
	(void)state;
	every_reduction_matches_a_scalar_reference(LLMP_FLOAT64);
}

static void bfloat16_every_op_every_length_every_placement_matches_reference(void **state)
{
	(void)state;
	every_reduction_matches_a_scalar_reference(LLMP_BFLOAT16);
}

static void float16_every_op_every_length_every_placement_matches_reference(void **state)
{
	(void)state;
	every_reduction_matches_a_scalar_reference(LLMP_FLOAT16);
}

static void int32_every_op_every_length_every_placement_matches_reference(void **state)
{
	(void)state;
	every_reduction_matches_a_scalar_reference(LLMP_INT32);
}

static void int64_every_op_every_length_every_placement_matches_reference(void **state)
{
	(void)state;
	every_reduction_matches_a_scalar_reference(LLMP_INT64);
}

static void uint8_every_op_every_length_every_placement_matches_reference(void **state)
{
	(void)state;
	every_reduction_matches_a_scalar_reference(LLMP_UINT8);
}

/* ============================================= reductions, by hand */

static void int32_sum_and_prod_wrap_around(void **state)
{
	(void)state;
	int32_t a[] = { INT32_MAX, INT32_MIN, -1, 65536, INT32_MIN, 46341 };
	int32_t b[] = { 1, -1, INT32_MIN, 65536, -1, 46341 };
	int32_t d[ARRAY_LEN(a)];

	assert_int_equal(kern_reduce(d, a, b, 2, LLMP_INT32, LLMP_SUM), LLMP_OK);
	assert_int_equal(d[0], INT32_MIN);
	assert_int_equal(d[1], INT32_MAX);
	assert_int_equal(kern_reduce(d, a, b, ARRAY_LEN(a), LLMP_INT32, LLMP_PROD), LLMP_OK);
	assert_int_equal(d[0], INT32_MAX);
	assert_int_equal(d[1], INT32_MIN); /* -2^31 * -1 = 2^31, wraps */
	assert_int_equal(d[2], INT32_MIN); /* -1 * -2^31 */
	assert_int_equal(d[3], 0);         /* 2^32 */
	assert_int_equal(d[4], INT32_MIN);
	assert_int_equal(d[5], -2147479015); /* 46341^2 = 2147488281 - 2^32 */
}

static void int64_sum_and_prod_wrap_around(void **state)
{
	(void)state;
	int64_t a[] = { INT64_MAX, INT64_MIN, INT64_C(4294967297), INT64_MIN, INT64_MAX };
	int64_t b[] = { 1, -1, INT64_C(4294967297), -1, INT64_MAX };
	int64_t d[ARRAY_LEN(a)];

	assert_int_equal(kern_reduce(d, a, b, 2, LLMP_INT64, LLMP_SUM), LLMP_OK);
	assert_true(d[0] == INT64_MIN);
	assert_true(d[1] == INT64_MAX);
	assert_int_equal(kern_reduce(d, a, b, ARRAY_LEN(a), LLMP_INT64, LLMP_PROD), LLMP_OK);
	assert_true(d[0] == INT64_MAX);
	assert_true(d[1] == INT64_MIN);
	assert_true(d[2] == INT64_C(8589934593)); /* (2^32+1)^2 = 2^64 + 2^33 + 1 */
	assert_true(d[3] == INT64_MIN);
	assert_true(d[4] == 1); /* (2^63-1)^2 = 2^126 - 2^64 + 1 */
}

static void uint8_sum_and_prod_wrap_around(void **state)
{
	(void)state;
	uint8_t a[] = { 255, 200, 16, 255, 128 };
	uint8_t b[] = { 1, 100, 16, 255, 2 };
	uint8_t d[ARRAY_LEN(a)];

	assert_int_equal(kern_reduce(d, a, b, ARRAY_LEN(a), LLMP_UINT8, LLMP_SUM), LLMP_OK);
	assert_memory_equal(d, ((uint8_t[]){ 0, 44, 32, 254, 130 }), sizeof d);
	assert_int_equal(kern_reduce(d, a, b, ARRAY_LEN(a), LLMP_UINT8, LLMP_PROD), LLMP_OK);
	assert_memory_equal(d, ((uint8_t[]){ 255, 32, 0, 1, 0 }), sizeof d);
}

static void avg_combines_as_a_sum(void **state)
{
	(void)state;
	float a[] = { 1.5f, -2.0f, 3.0f }, b[] = { 2.5f, 4.0f, 0.25f }, d[3];
	int32_t ia[] = { INT32_MAX, 7 }, ib[] = { 1, -9 }, id[2];

	assert_int_equal(kern_reduce(d, a, b, 3, LLMP_FLOAT32, LLMP_AVG), LLMP_OK);
	assert_true(d[0] == 4.0f && d[1] == 2.0f && d[2] == 3.25f);
	assert_int_equal(kern_reduce(id, ia, ib, 2, LLMP_INT32, LLMP_AVG), LLMP_OK);
	assert_int_equal(id[0], INT32_MIN);
	assert_int_equal(id[1], -2);
}

/* Each row: a, b, then the expected min, max and sum (NaN compares as NaN). */
static void float_min_max_sum_propagate_nan_and_inf(void **state)
{
	(void)state;
	static const struct {
		float a, b, min, max, sum;
	} rows[] = {
		{ NAN, 1.0f, NAN, NAN, NAN },
		{ 1.0f, NAN, NAN, NAN, NAN },
		{ NAN, NAN, NAN, NAN, NAN },
		{ NAN, INFINITY, NAN, NAN, NAN },
		{ -INFINITY, NAN, NAN, NAN, NAN },
		{ INFINITY, 1.0f, 1.0f, INFINITY, INFINITY },
		{ -INFINITY, 1.0f, -INFINITY, 1.0f, -INFINITY },
		{ INFINITY, -INFINITY, -INFINITY, INFINITY, NAN },
		{ 3.4e38f, 3.4e38f, 3.4e38f, 3.4e38f, INFINITY },
		{ -0.0f, 0.0f, -0.0f, 0.0f, 0.0f },
		{ 0.0f, -0.0f, -0.0f, 0.0f, 0.0f },
		{ -0.0f, -0.0f, -0.0f, -0.0f, -0.0f },
		{ -1.0f, 2.0f, -1.0f, 2.0f, 1.0f },
	};
	const llmp_op ops[] = { LLMP_MIN, LLMP_MAX, LLMP_SUM };
	struct half_format *fmts[] = { &bf16, &f16 };

	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		const float want32[] = { rows[i].min, rows[i].max, rows[i].sum };
		for (size_t k = 0; k < ARRAY_LEN(ops); k++) {
			float d32;
			double a64 = rows[i].a, b64 = rows[i].b, d64, w64 = want32[k];
			char row[64];
			snprintf(row, sizeof row, "row %zu %s", i, llmp_op_name(ops[k]));

			assert_int_equal(kern_reduce(&d32, &rows[i].a, &rows[i].b, 1, LLMP_FLOAT32, ops[k]),
					 LLMP_OK);
			if (!same_element(LLMP_FLOAT32, &want32[k], &d32))
				fail_msg("float32 %s: got %a, want %a", row, (double)d32, (double)want32[k]);

			bool overflows_float32 = i == 8;
			if (overflows_float32 && ops[k] == LLMP_SUM) /* but not float64 */
				w64 = (double)3.4e38f * 2;
			assert_int_equal(kern_reduce(&d64, &a64, &b64, 1, LLMP_FLOAT64, ops[k]), LLMP_OK);
			if (!same_element(LLMP_FLOAT64, &w64, &d64))
				fail_msg("float64 %s: got %a, want %a", row, d64, w64);

			/* The 16-bit types hold every other row's values exactly. */
			for (int h = 0; h < 2 && !overflows_float32; h++) {
				llmp_dtype t = h == 0 ? LLMP_BFLOAT16 : LLMP_FLOAT16;
				/* NaNs as patterns of the format: +NaN for a, -NaN for b. */
				uint16_t ah = isnan(rows[i].a) ? (uint16_t)(fmts[h]->inf | 1)
							       : half_round(fmts[h], rows[i].a);
				uint16_t bh = isnan(rows[i].b) ? (uint16_t)(fmts[h]->inf | 0x8001)
							       : half_round(fmts[h], rows[i].b);
				uint16_t wh = half_round(fmts[h], want32[k]), dh;
				assert_int_equal(kern_reduce(&dh, &ah, &bh, 1, t, ops[k]), LLMP_OK);
				if (!half_same(fmts[h], wh, dh))
					fail_msg("%s %s: got 0x%04x, want 0x%04x", fmts[h]->name, row, dh,
						 wh);
			}
		}
	}
}

static void half_sums_overflow_to_inf(void **state)
{
	(void)state;
	uint16_t a[] = { 0x7f7f, 0xff7f }, b[] = { 0x7f7f, 0xff7f }, d[2];
	uint16_t fa[] = { 0x7bff, 0xfbff }, fb[] = { 0x4000, 0xfbff }, fd[2]; /* 0x4000: 2 */

	assert_int_equal(kern_reduce(d, a, b, 2, LLMP_BFLOAT16, LLMP_SUM), LLMP_OK);
	assert_int_equal(d[0], 0x7f80);
	assert_int_equal(d[1], 0xff80);
	/* 65504 + 2 = 65506 rounds back to 65504; -65504 - 65504 is -Inf. */
	assert_int_equal(kern_reduce(fd, fa, fb, 2, LLMP_FLOAT16, LLMP_SUM), LLMP_OK);
	assert_int_equal(fd[0], 0x7bff);
	assert_int_equal(fd[1], 0xfc00);
}

/*
 * The sum is computed once in float32 and rounded once: 1 + 2^-8 (a tie in
 * bfloat16) goes to even, 1.0, while 1 + 2^-8 + 2^-9 rounds up.
 */
static void half_sums_round_the_float32_result_once_to_nearest_even(void **state)
{
	(void)state;
	uint16_t a[] = { 0x3f80, 0x3f80, 0x3f81 }, b[] = { 0x3b80, 0x3bc0, 0x3b80 }, d[3];

	assert_int_equal(kern_reduce(d, a, b, 3, LLMP_BFLOAT16, LLMP_SUM), LLMP_OK);
	assert_int_equal(d[0], 0x3f80); /* 1 + 2^-8: tie, even */
	assert_int_equal(d[1], 0x3f81); /* 1 + 2^-8 + 2^-9: above the tie */
	assert_int_equal(d[2], 0x3f82); /* (1 + 2^-7) + 2^-8: tie, even up */

	/* float16: 1 + 2^-11 is a tie (to 1.0); 1 + 3 * 2^-11 ties up to 1 + 2^-9. */
	uint16_t fa[] = { 0x3c00, 0x3c01 }, fb[] = { 0x1000, 0x1000 }, fd[2];
	assert_int_equal(kern_reduce(fd, fa, fb, 2, LLMP_FLOAT16, LLMP_SUM), LLMP_OK);
	assert_int_equal(fd[0], 0x3c00);
	assert_int_equal(fd[1], 0x3c02);
}

/* ================================================================ divide */

static void divide_floats_in_their_own_type(void **state)
{
	(void)state;
	float f[] = { 1.0f, -7.0f, 0.0f, INFINITY, 16777216.0f };
	double g[] = { 1.0, -7.0, 1e308 };
	uint16_t b[] = { 0x3f80, 0xc0e0, 0x7f80 }; /* bf16 1, -7, Inf */
	uint16_t h[] = { 0x3c00, 0x0001, 0x7bff }; /* f16 1, 2^-24, 65504 */

	assert_int_equal(kern_reduce_divide(f, ARRAY_LEN(f), LLMP_FLOAT32, 3), LLMP_OK);
	assert_true(f[0] == 1.0f / 3.0f && f[1] == -7.0f / 3.0f && f[2] == 0.0f);
	assert_true(f[3] == INFINITY && f[4] == 16777216.0f / 3.0f);
	assert_int_equal(kern_reduce_divide(g, ARRAY_LEN(g), LLMP_FLOAT64, 3), LLMP_OK);
	assert_true(g[0] == 1.0 / 3.0 && g[1] == -7.0 / 3.0 && g[2] == 1e308 / 3.0);
	assert_int_equal(kern_reduce_divide(b, ARRAY_LEN(b), LLMP_BFLOAT16, 3), LLMP_OK);
	assert_int_equal(b[0], half_round(&bf16, 1.0f / 3.0f));
	assert_int_equal(b[1], half_round(&bf16, -7.0f / 3.0f));
	assert_int_equal(b[2], 0x7f80);
	assert_int_equal(kern_reduce_divide(h, ARRAY_LEN(h), LLMP_FLOAT16, 2), LLMP_OK);
	assert_int_equal(h[0], 0x3800);                            /* 0.5 */
	assert_int_equal(h[1], 0x0000);                            /* 2^-25: tie to 0 */
	assert_int_equal(h[2], half_round(&f16, 65504.0f / 2.0f)); /* 32752 */

	/*
	 * Every pattern, by several group sizes: the quotient of the values,
	 * computed in float32, rounded once by the reference.
	 */
	static const uint32_t sizes[] = { 1, 2, 3, 5, 6, 7, 10, 24, 1000, 3000000000u };
	uint16_t *all = malloc(65536 * sizeof(uint16_t));
	assert_non_null(all);
	for (size_t s = 0; s < ARRAY_LEN(sizes); s++) {
		for (int is_f16 = 0; is_f16 < 2; is_f16++) {
			struct half_format *fmt = is_f16 ? &f16 : &bf16;
			uint32_t n = sizes[s];
			for (uint32_t p = 0; p <= 0xffff; p++)
				all[p] = (uint16_t)p;
			assert_int_equal(
				kern_reduce_divide(all, 65536, is_f16 ? LLMP_FLOAT16 : LLMP_BFLOAT16, n),
				LLMP_OK);
			for (uint32_t p = 0; p <= 0xffff; p++) {
				float q = (float)half_value(fmt, (uint16_t)p) / (float)n;
				uint16_t want = half_round(fmt, q);
				if (!half_same(fmt, want, all[p]))
					fail_msg("%s 0x%04x / %u gave 0x%04x, expected 0x%04x", fmt->name, p,
						 n, all[p], want);
			}
		}
	}
	free(all);
}

/* Truncation toward zero from magnitudes, not from C's signed division. */
static int64_t ref_truncating_divide(int64_t x, uint32_t n)
{
	uint64_t mag = x < 0 ? 0u - bits_of_int64(x) : (uint64_t)x;
	uint64_t q = mag / n;
	return x < 0 ? int64_of_bits(0u - q) : (int64_t)q;
}

static void divide_integers_truncates_toward_zero(void **state)
{
	(void)state;
	int32_t i[] = { -7, 7, -1, INT32_MIN, INT32_MAX, 6, -6 };
	int32_t j[] = { INT32_MIN, INT32_MAX, -5 };
	int64_t k[] = { -7, 7, INT64_MIN, INT64_MAX, -1 };
	uint8_t u[] = { 255, 7, 1, 0 };

	assert_int_equal(kern_reduce_divide(i, ARRAY_LEN(i), LLMP_INT32, 2), LLMP_OK);
	assert_memory_equal(i, ((int32_t[]){ -3, 3, 0, -1073741824, 1073741823, 3, -3 }), sizeof i);
	/* A divisor above INT32_MAX stays positive. */
	assert_int_equal(kern_reduce_divide(j, ARRAY_LEN(j), LLMP_INT32, 3000000000u), LLMP_OK);
	assert_memory_equal(j, ((int32_t[]){ 0, 0, 0 }), sizeof j);
	assert_int_equal(kern_reduce_divide(k, ARRAY_LEN(k), LLMP_INT64, 2), LLMP_OK);
	assert_true(k[0] == -3 && k[1] == 3 && k[2] == INT64_MIN / 2 && k[3] == INT64_MAX / 2);
	assert_true(k[4] == 0);
	assert_int_equal(kern_reduce_divide(u, ARRAY_LEN(u), LLMP_UINT8, 2), LLMP_OK);
	assert_memory_equal(u, ((uint8_t[]){ 127, 3, 0, 0 }), sizeof u);

	int32_t one[] = { INT32_MIN, -1 };
	assert_int_equal(kern_reduce_divide(one, 2, LLMP_INT32, 1), LLMP_OK);
	assert_true(one[0] == INT32_MIN && one[1] == -1);

	uint64_t rng = 99;
	for (int r = 0; r < 4096; r++) {
		int64_t x64 = int64_of_bits(next_random(&rng)), y64 = x64;
		int32_t x32 = (int32_t)(x64 % 2147483648), y32 = x32;
		uint32_t n = (uint32_t)next_random(&rng) >> (next_random(&rng) % 32);
		n += n == 0;
		assert_int_equal(kern_reduce_divide(&y64, 1, LLMP_INT64, n), LLMP_OK);
		assert_true(y64 == ref_truncating_divide(x64, n));
		assert_int_equal(kern_reduce_divide(&y32, 1, LLMP_INT32, n), LLMP_OK);
		assert_true(y32 == ref_truncating_divide(x32, n));
	}
}

static void divide_by_zero_or_an_unknown_dtype_is_rejected(void **state)
{
	(void)state;
	float f[] = { 1.0f };

	for (int t = 0; t < LLMP_NDTYPES; t++)
		assert_int_equal(kern_reduce_divide(f, 1, (llmp_dtype)t, 0), LLMP_ERR_ARG);
	assert_true(f[0] == 1.0f);
	assert_int_equal(kern_reduce_divide(f, 1, LLMP_NDTYPES, 2), LLMP_ERR_ARG);
	assert_int_equal(kern_reduce_divide(f, 1, (llmp_dtype)-1, 2), LLMP_ERR_ARG);
	assert_int_equal(kern_reduce_divide(NULL, 1, LLMP_FLOAT32, 2), LLMP_ERR_ARG);
	assert_int_equal(kern_reduce_divide(NULL, 0, LLMP_FLOAT32, 2), LLMP_OK);
	assert_int_equal(kern_reduce_divide(f, 0, LLMP_FLOAT32, 2), LLMP_OK);
	assert_true(f[0] == 1.0f);
}

/* ============================================================ rejections */

static void unknown_dtype_or_op_is_rejected(void **state)
{
	(void)state;
	float a[] = { 1.0f }, b[] = { 2.0f }, d[] = { 7.0f };

	assert_int_equal(kern_reduce(d, a, b, 1, LLMP_NDTYPES, LLMP_SUM), LLMP_ERR_ARG);
	assert_int_equal(kern_reduce(d, a, b, 1, (llmp_dtype)-1, LLMP_SUM), LLMP_ERR_ARG);
	assert_int_equal(kern_reduce(d, a, b, 1, LLMP_FLOAT32, LLMP_NOPS), LLMP_ERR_ARG);
	assert_int_equal(kern_reduce(d, a, b, 1, LLMP_FLOAT32, (llmp_op)-1), LLMP_ERR_ARG);
	assert_int_equal(kern_reduce(d, a, b, 0, LLMP_FLOAT32, LLMP_NOPS), LLMP_ERR_ARG);
	assert_true(d[0] == 7.0f);
}

static void null_pointers_are_rejected_unless_count_is_zero(void **state)
{
	(void)state;
	float a[] = { 1.0f }, b[] = { 2.0f }, d[] = { 7.0f };

	assert_int_equal(kern_reduce(NULL, a, b, 1, LLMP_FLOAT32, LLMP_SUM), LLMP_ERR_ARG);
	assert_int_equal(kern_reduce(d, NULL, b, 1, LLMP_FLOAT32, LLMP_SUM), LLMP_ERR_ARG);
	assert_int_equal(kern_reduce(d, a, NULL, 1, LLMP_FLOAT32, LLMP_SUM), LLMP_ERR_ARG);
	assert_true(d[0] == 7.0f);
	for (int t = 0; t < LLMP_NDTYPES; t++)
		for (int o = 0; o < LLMP_NOPS; o++)
			assert_int_equal(kern_reduce(NULL, NULL, NULL, 0, (llmp_dtype)t, (llmp_op)o),
					 LLMP_OK);
}

static void a_count_no_buffer_can_hold_is_rejected(void **state)
{
	(void)state;
	double a[] = { 1.0 }, b[] = { 2.0 }, d[] = { 7.0 };

	assert_int_equal(kern_reduce(d, a, b, SIZE_MAX / 4, LLMP_FLOAT64, LLMP_SUM), LLMP_ERR_ARG);
	assert_true(d[0] == 7.0);
}

static void dst_partly_overlapping_an_input_is_rejected(void **state)
{
	(void)state;
	int32_t buf[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, other[4] = { 0 };
	const int32_t orig[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };

	assert_int_equal(kern_reduce(buf + 1, buf, other, 4, LLMP_INT32, LLMP_SUM), LLMP_ERR_ARG);
	assert_int_equal(kern_reduce(buf, buf + 3, other, 4, LLMP_INT32, LLMP_SUM), LLMP_ERR_ARG);
	assert_int_equal(kern_reduce(buf + 2, other, buf, 4, LLMP_INT32, LLMP_SUM), LLMP_ERR_ARG);
	assert_int_equal(kern_reduce((char *)buf + 1, buf, other, 4, LLMP_INT32, LLMP_SUM), LLMP_ERR_ARG);
	assert_memory_equal(buf, orig, sizeof buf);
	/* Touching ends are apart, and a and b may overlap each other freely. */
	assert_int_equal(kern_reduce(buf + 5, buf + 1, buf, 4, LLMP_INT32, LLMP_SUM), LLMP_OK);
	assert_memory_equal(buf, orig, 5 * sizeof(int32_t));
	assert_memory_equal(buf + 5, ((int32_t[]){ 3, 5, 7, 9 }), 4 * sizeof(int32_t));
}

/*
 * kern_copy_stream: every byte as memcpy would leave it, around the
 * threshold where it starts to stream, at every alignment of both buffers
 * within a 16-byte line, and the bytes around dst untouched.
 */
static void stream_copy_equals_the_source_at_every_alignment_and_length(void **state)
{
	(void)state;
	const size_t m = KERN_STREAM_MIN;
	const size_t copy_lengths[] = { 0, 1, 15, 16, 63, 64, m - 1, m, m + 1, m + 63, 3 * m + 17 };
	size_t cap = 3 * m + 17 + 64;
	unsigned char *src = malloc(cap), *dst = malloc(cap), *want = malloc(cap);
	assert_non_null(src);
	assert_non_null(dst);
	assert_non_null(want);
	for (size_t i = 0; i < cap; i++)
		src[i] = (unsigned char)(i * 131 + 7);
	for (size_t l = 0; l < sizeof copy_lengths / sizeof copy_lengths[0]; l++)
		for (size_t sa = 0; sa < 16; sa += 5)
			for (size_t da = 0; da < 16; da += 3) {
				size_t n = copy_lengths[l];
				memset(dst, 0xa5, cap);
				memset(want, 0xa5, cap);
				for (size_t i = 0; i < n; i++) /* byte by byte: not the function under test */
					want[da + i] = src[sa + i];
				kern_copy_stream(dst + da, src + sa, n);
				assert_memory_equal(dst, want, cap);
			}
	free(src);
	free(dst);
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dtype_sizes_and_names_follow_the_enum),
		cmocka_unit_test(stream_copy_equals_the_source_at_every_alignment_and_length),
		cmocka_unit_test(unknown_dtypes_and_ops_have_no_size_and_a_question_mark),
		cmocka_unit_test(bfloat16_widens_every_pattern_exactly),
		cmocka_unit_test(bfloat16_every_pattern_round_trips_through_float32),
		cmocka_unit_test(float32_to_bfloat16_rounds_to_nearest_even_overflows_to_inf_keeps_nan),
		cmocka_unit_test(float16_widens_every_pattern_exactly),
		cmocka_unit_test(float16_every_pattern_round_trips_through_float32),
		cmocka_unit_test(float32_to_float16_rounds_to_nearest_even_with_subnormals_and_overflow),
		cmocka_unit_test(float32_every_op_every_length_every_placement_matches_reference),
		cmocka_unit_test(float64_every_op_every_length_every_placement_matches_reference),
		cmocka_unit_test(bfloat16_every_op_every_length_every_placement_matches_reference),
		cmocka_unit_test(float16_every_op_every_length_every_placement_matches_reference),
		cmocka_unit_test(int32_every_op_every_length_every_placement_matches_reference),
		cmocka_unit_test(int64_every_op_every_length_every_placement_matches_reference),
		cmocka_unit_test(uint8_every_op_every_length_every_placement_matches_reference),
		cmocka_unit_test(int32_sum_and_prod_wrap_around),
		cmocka_unit_test(int64_sum_and_prod_wrap_around),
		cmocka_unit_test(uint8_sum_and_prod_wrap_around),
		cmocka_unit_test(avg_combines_as_a_sum),
		cmocka_unit_test(float_min_max_sum_propagate_nan_and_inf),
		cmocka_unit_test(half_sums_overflow_to_inf),
		cmocka_unit_test(half_sums_round_the_float32_result_once_to_nearest_even),
		cmocka_unit_test(divide_floats_in_their_own_type),
		cmocka_unit_test(divide_integers_truncates_toward_zero),
		cmocka_unit_test(divide_by_zero_or_an_unknown_dtype_is_rejected),
		cmocka_unit_test(unknown_dtype_or_op_is_rejected),
		cmocka_unit_test(null_pointers_are_rejected_unless_count_is_zero),
		cmocka_unit_test(a_count_no_buffer_can_hold_is_rejected),
		cmocka_unit_test(dst_partly_overlapping_an_input_is_rejected),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	free(bf16.values), free(f16.values);
	return failed;
}
