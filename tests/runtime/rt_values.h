/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_values.h - inputs and expected results of the runtime's tests,
 * computed without libllmp and without kernels/.
 *
 * Every element a member contributes is a pure function of (test id, the
 * member's world rank and comm rank, the element's index, dtype, op, group
 * size), so every rank can recompute every other member's input and reduce
 * them itself, one after another, in plain C.
 *
 * The exact pass chooses values whose reduction is exact in any order:
 * small integers whose sum stays below the type's last exact integer, and
 * powers of two for products. Results are then compared bit for bit. AVG is
 * the exact sum divided by n, rounded once to the type (by our own
 * round-to-nearest-even for bfloat16 and float16).
 */
#ifndef RT_VALUES_H
#define RT_VALUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_dtype.h>

#define CHK_COPY (-1) /* op of data that is only moved (allgather, broadcast, p2p) */

/* What the inputs of one operation depend on, besides the member and index. */
typedef struct chk_gen {
	llmp_dtype dtype;
	int op;        /* an llmp_op, or CHK_COPY */
	uint32_t n;    /* members of the communicator */
	uint64_t test; /* the same on every member for the same call */
} chk_gen;

/* Bytes per element, by our own table (not llmp_dtype_size). */
size_t chk_dtype_size(llmp_dtype dtype);
bool chk_dtype_is_float(llmp_dtype dtype);
const char *chk_dtype_name(int dtype);
const char *chk_op_name(int op);

/* IEEE binary16 and bfloat16, round to nearest, ties to even. */
uint16_t chk_to_f16(double x);
uint16_t chk_to_bf16(double x);
double chk_from_f16(uint16_t h);
double chk_from_bf16(uint16_t h);

/* Member (wrank, crank)'s element `index`, encoded as dtype, into elem. */
void chk_input(const chk_gen *g, uint32_t wrank, uint32_t crank, size_t index, void *elem);
/* buf[j] = chk_input(first + j) for j < count. */
void chk_input_fill(const chk_gen *g, uint32_t wrank, uint32_t crank, void *buf, size_t first, size_t count);

/*
 * out[j] = the op over members 0..g->n-1 (world ranks wranks[m], comm rank
 * m) of element first + j, for j < count: reduced one after another here.
 */
void chk_expected_reduce(const chk_gen *g, const uint32_t *wranks, size_t first, size_t count, void *out);

/* Bitwise equal, except that any NaN matches an expected NaN. */
bool chk_elem_equal(llmp_dtype dtype, const void *got, const void *expected);
/* "1.5 (0x3fc0)" or "-7 (0xfffffff9)". */
void chk_elem_format(llmp_dtype dtype, const void *elem, char *buf, size_t len);

/*
 * The random pass (float32, float64): seeded values in [-1, 1) (sum, avg,
 * min, max) or +-[1, 2) (prod), exactly representable in dtype.
 */
double chk_random_input(llmp_dtype dtype, unsigned seed, uint64_t test, uint32_t wrank, size_t index, int op);
/* Store/load a float32 or float64 element as double. */
void chk_store_real(llmp_dtype dtype, void *elem, double x);
double chk_load_real(llmp_dtype dtype, const void *elem);

#endif /* RT_VALUES_H */
