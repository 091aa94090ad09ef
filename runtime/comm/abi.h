/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * abi.h - public structs of any version (doc/abi.md).
 *
 * A struct that will grow (llmp_init_opts, llmp_ckpt_opts, llmp_ckpt_stats)
 * starts with `size`: sizeof the struct as the program was built (set by
 * the program, or by llmp_init_opts_default), or 0, which reads as the
 * size of its first version (llmp 0.1's, so a program that zeroed it works).
 * Fields are only ever appended. A program built against an older header
 * passes fewer bytes: the fields it lacks read as 0, their default, and an
 * output struct is filled as far as it goes. A size larger than this
 * library's, or smaller than the first version's, is refused without a
 * byte beyond the program's struct being read or written: the program was
 * built against a newer header, or did not set the size.
 */
#ifndef LLMP_RT_ABI_H
#define LLMP_RT_ABI_H

#include <stddef.h>

#include "rt.h"

/* The end of a struct's last field of version 1: its size before any field was appended. */
#define RT_V1_SIZE(type, last_field) (offsetof(type, last_field) + sizeof(((type *)0)->last_field))

/*
 * Copy the program's struct `given` into *out (out_size bytes, this
 * library's sizeof): the bytes the program's version has, zeros after.
 * A bad size fails with LLMP_ERR_ARG naming `name` (rt_fail on ctx).
 */
llmp_status rt_struct_in(llmp_ctx *ctx, const char *name, void *out, size_t out_size, const void *given,
			 size_t v1_size);

/*
 * Write this library's struct `ours` (our_size bytes) into the program's
 * `dst`, as many bytes as its version has; dst's size field is left as the
 * program set it. A bad size fails as in rt_struct_in and writes nothing.
 */
llmp_status rt_struct_out(llmp_ctx *ctx, const char *name, void *dst, const void *ours, size_t our_size,
			  size_t v1_size);

#endif /* LLMP_RT_ABI_H */
