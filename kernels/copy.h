/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * copy.h - a copy for bytes that this core will not read again soon: the
 * staging copy of an asynchronous checkpoint save, which a writer thread
 * reads later.
 *
 * glibc's memcpy chooses non-temporal stores only above a threshold it
 * derives from the cache size the CPU reports; a VM that reports a 480 MiB
 * L3 (this project's test machine) gets them for no copy of a tensor, and
 * each cache line is then read before it is written (an RFO): the staging
 * copy of 8 tensors took 1.6 to 2 times one memcpy of the same bytes.
 * kern_copy_stream always streams large copies on x86-64.
 */
#ifndef LLMP_KERNELS_COPY_H
#define LLMP_KERNELS_COPY_H

#include <stddef.h>

/* Below this many bytes a copy is memcpy's: streaming a few cache lines gains nothing. */
#define KERN_STREAM_MIN ((size_t)256 << 10)

/*
 * memcpy(dst, src, n) for non-overlapping buffers, with non-temporal
 * stores on x86-64 from KERN_STREAM_MIN bytes, memcpy otherwise. The stores
 * are fenced before it returns: another thread that synchronises with this
 * one afterwards (a mutex, pthread_create) sees every byte.
 */
void kern_copy_stream(void *restrict dst, const void *restrict src, size_t n);

#endif /* LLMP_KERNELS_COPY_H */
