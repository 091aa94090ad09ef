/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memtype.h - whether a pointer is device memory, asked of a CUDA driver
 * the process has already loaded (memtype.c): the host path's check of its
 * buffers, and the device checkpoints' (runtime/device/cuda_api.c) choice
 * of staging, share it.
 */
#ifndef LLMP_RT_MEMTYPE_H
#define LLMP_RT_MEMTYPE_H

#include <stdbool.h>

/*
 * The CUDA driver's pointer query, written out so that building needs no
 * CUDA header (runtime/device/cuda_api.h, which has the rest of the driver,
 * includes these; tests/device/cuda_abi_check.c checks them against cuda.h).
 */
typedef unsigned long long rt_cu_devptr; /* CUdeviceptr on 64-bit hosts */
#define RT_CUDA_SUCCESS 0
#define RT_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define RT_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define RT_CU_MEMORYTYPE_HOST 1
#define RT_CU_MEMORYTYPE_DEVICE 2
#define RT_CU_MEMORYTYPE_ARRAY 3
#define RT_CU_MEMORYTYPE_UNIFIED 4

/* cuPointerGetAttribute(data, attribute, CUdeviceptr) */
typedef int (*rt_pointer_attr_fn)(void *data, int attribute, rt_cu_devptr ptr);

/*
 * The driver library `driver`'s cuPointerGetAttribute if the process has
 * loaded that library (dlopen with RTLD_NOLOAD: never loaded here), else
 * NULL: a driver nobody loaded allocated no device memory.
 */
rt_pointer_attr_fn rt_memtype_driver(const char *driver);

/* Whether get (NULL: no driver) says p is device memory; *ordinal its device then, else 0. */
bool rt_memtype_device(rt_pointer_attr_fn get, const void *p, int *ordinal);

#endif /* LLMP_RT_MEMTYPE_H */
