/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dl_table.h - a table of a dlopen'ed library's calls, filled by name: how
 * the device path reaches NCCL (nccl_api.c) and the CUDA driver
 * (cuda_api.c) without linking either.
 */
#ifndef LLMP_RT_DL_TABLE_H
#define LLMP_RT_DL_TABLE_H

#include <stddef.h>

#include <llmp/llmp_status.h>

/* One call: its exported name and where its pointer goes in the table. */
struct rt_dl_symbol {
	const char *name;
	size_t offset;
};

/*
 * Resolve every symbol of syms in lib (loaded from path) into table.
 * LLMP_ERR_UNSUPPORTED with msg "PATH has no NAME" for the first missing
 * one; the table may then hold some of the others.
 */
llmp_status rt_dl_resolve(void *lib, const char *path, const struct rt_dl_symbol *syms, size_t n, void *table,
			  char *msg, size_t len);

#endif /* LLMP_RT_DL_TABLE_H */
