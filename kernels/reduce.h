/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce.h - elementwise reduction of two buffers, the inner loop of every
 * reducing collective (allreduce, reduce-scatter).
 *
 * Portable C written so that compilers vectorise it: one loop per
 * (type, operator) pair, restrict-free aliasing rules stated below, no calls
 * in the loop body. 16-bit floating types are widened to float32, combined,
 * and rounded once back (round to nearest even), as NCCL does.
 */
#ifndef LLMP_KERNELS_REDUCE_H
#define LLMP_KERNELS_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_dtype.h>
#include <llmp/llmp_status.h>

/*
 * dst[i] = a[i] op b[i] for i < count. dst may be the same buffer as a or b
 * (exactly, not partially overlapping). LLMP_AVG combines as LLMP_SUM; the
 * division comes once at the end, with kern_reduce_divide().
 * LLMP_ERR_ARG for a dtype or op outside the enums; count 0 does nothing.
 */
llmp_status kern_reduce(void *dst, const void *a, const void *b, size_t count, llmp_dtype dtype, llmp_op op);

/* buf[i] = buf[i] / n: the last step of LLMP_AVG. n must be at least 1. */
llmp_status kern_reduce_divide(void *buf, size_t count, llmp_dtype dtype, uint32_t n);

#endif /* LLMP_KERNELS_REDUCE_H */
