/* SPDX-License-Identifier: BSD-3-Clause */
/* dtype.c - sizes and names of the element types and reduction operators. */
#include <llmp/llmp_dtype.h>

#include <string.h>

/* Indexed by the enums: the order there is the ABI, so these follow it. */
static const struct {
	const char *name;
	size_t size;
} dtypes[LLMP_NDTYPES] = {
	[LLMP_FLOAT32] = { "float32", 4 },   [LLMP_FLOAT64] = { "float64", 8 },
	[LLMP_BFLOAT16] = { "bfloat16", 2 }, [LLMP_FLOAT16] = { "float16", 2 },
	[LLMP_INT32] = { "int32", 4 },       [LLMP_INT64] = { "int64", 8 },
	[LLMP_UINT8] = { "uint8", 1 },
};

static const char *const ops[LLMP_NOPS] = {
	[LLMP_SUM] = "sum", [LLMP_PROD] = "prod", [LLMP_MIN] = "min", [LLMP_MAX] = "max", [LLMP_AVG] = "avg",
};

/* The casts to unsigned also turn a negative value (an enum is an int) away. */
size_t llmp_dtype_size(llmp_dtype dtype)
{
	return (unsigned)dtype < LLMP_NDTYPES ? dtypes[dtype].size : 0;
}

const char *llmp_dtype_name(llmp_dtype dtype)
{
	return (unsigned)dtype < LLMP_NDTYPES ? dtypes[dtype].name : "?";
}

const char *llmp_op_name(llmp_op op)
{
	return (unsigned)op < LLMP_NOPS ? ops[op] : "?";
}

int llmp_dtype_from_name(const char *name)
{
	if (name)
		for (int t = 0; t < LLMP_NDTYPES; t++)
			if (strcmp(name, dtypes[t].name) == 0)
				return t;
	return -1;
}

int llmp_op_from_name(const char *name)
{
	if (name)
		for (int o = 0; o < LLMP_NOPS; o++)
			if (strcmp(name, ops[o]) == 0)
				return o;
	return -1;
}
