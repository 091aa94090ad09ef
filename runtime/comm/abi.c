/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * abi.c - public structs of any version: copied in and out by the size they
 * carry (abi.h). The version a message names is LLMP_VERSION as this library
 * was built, what llmp_version() (init/version.c, above this folder) returns.
 */
#include "abi.h"

#include <string.h>

/* The size the program's struct says it has (0 reads as version 1's), if this library can use it. */
static llmp_status program_size(llmp_ctx *ctx, const char *name, const void *given, size_t our_size,
				size_t v1_size, size_t *size)
{
	memcpy(size, given, sizeof *size); /* `size` is every such struct's first field */
	if (*size == 0)
		*size = v1_size;
	if (*size < v1_size)
		return rt_fail(ctx, LLMP_ERR_ARG,
			       "%s.size is %zu, smaller than any version of it (%zu bytes or more): "
			       "set it to sizeof(%s), or to 0",
			       name, *size, v1_size, name);
	if (*size > our_size)
		return rt_fail(ctx, LLMP_ERR_ARG,
			       "%s.size is %zu, but this libllmp (version %u) knows %zu bytes of it: "
			       "was the program built against a newer llmp header, or was size not set?",
			       name, *size, (unsigned)LLMP_VERSION, our_size);
	return LLMP_OK;
}

llmp_status rt_struct_in(llmp_ctx *ctx, const char *name, void *out, size_t out_size, const void *given,
			 size_t v1_size)
{
	size_t size;
	llmp_status st = program_size(ctx, name, given, out_size, v1_size, &size);
	if (st != LLMP_OK)
		return st;
	memset(out, 0, out_size);
	memcpy(out, given, size);
	return LLMP_OK;
}

llmp_status rt_struct_out(llmp_ctx *ctx, const char *name, void *dst, const void *ours, size_t our_size,
			  size_t v1_size)
{
	size_t size;
	llmp_status st = program_size(ctx, name, dst, our_size, v1_size, &size);
	if (st != LLMP_OK)
		return st;
	/* The program's size field stays its own; the fields after it are ours. */
	memcpy((char *)dst + sizeof size, (const char *)ours + sizeof size, size - sizeof size);
	return LLMP_OK;
}
