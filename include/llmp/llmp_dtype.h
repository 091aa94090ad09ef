/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_dtype.h - element types and reduction operators of llmp's collectives.
 *
 * Shared by the kernels (which reduce buffers of these types) and the runtime
 * (whose collectives take them as arguments). The enum values are part of the
 * ABI: new types and operators are only ever appended.
 */
#ifndef LLMP_DTYPE_H
#define LLMP_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum llmp_dtype {
	LLMP_FLOAT32,
	LLMP_FLOAT64,
	LLMP_BFLOAT16, /* stored as uint16_t; reduced in float32, rounded once */
	LLMP_FLOAT16,  /* IEEE binary16, stored as uint16_t; reduced in float32 */
	LLMP_INT32,    /* sum and prod wrap around (two's complement) */
	LLMP_INT64,
	LLMP_UINT8,
	LLMP_NDTYPES
} llmp_dtype;

typedef enum llmp_op {
	LLMP_SUM,
	LLMP_PROD,
	LLMP_MIN, /* a NaN operand gives NaN */
	LLMP_MAX,
	LLMP_AVG, /* sum, then divided by the group size (integers: truncated) */
	LLMP_NOPS
} llmp_op;

/* Bytes per element; 0 for a value outside the enum. */
size_t llmp_dtype_size(llmp_dtype dtype);

/* "float32", "float64", "bfloat16", "float16", "int32", "int64", "uint8"; "?" if unknown. */
const char *llmp_dtype_name(llmp_dtype dtype);
/* "sum", "prod", "min", "max", "avg"; "?" if unknown. */
const char *llmp_op_name(llmp_op op);

/* The inverse of the two above: -1 for a name that is not one. */
int llmp_dtype_from_name(const char *name);
int llmp_op_from_name(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* LLMP_DTYPE_H */
