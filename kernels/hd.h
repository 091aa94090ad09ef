/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hd.h - KERN_HD, the qualifier of an element function: the one body that
 * the host kernels, a CUDA kernel on the device and a unit test on the CPU
 * all run.
 *
 * Under nvcc an element function is __host__ __device__, so the device code
 * and the host code of the same translation unit share it; under a C
 * compiler it is a plain static inline function. The element headers
 * (NAME_elem.h, and ../half.h) are therefore written in the common subset of C11 and CUDA C++:
 * no references, templates or overloads, casts written out, memcpy for bit
 * casts. The unit tests compile them both ways (tests/unit/local.mk).
 *
 * Nothing that includes them may be built with fast-math options: NaNs are
 * found with x != x, and the 16-bit conversions round with a float addition
 * (nvcc: --use_fast_math, -ftz=true, --prec-div=false are all refused).
 */
#ifndef LLMP_KERNELS_HD_H
#define LLMP_KERNELS_HD_H

#ifdef __CUDACC__
#define KERN_HD static inline __host__ __device__
#else
#define KERN_HD static inline
#endif

#endif /* LLMP_KERNELS_HD_H */
