/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_abi_check.c - the driver's constants and CUDA_MEMCPY2D that
 * runtime/device/cuda_api.h writes out (so that libllmp builds without
 * CUDA headers) are cuda.h's: checked when this file compiles, where the
 * toolkit is installed. Speaks TAP.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cuda.h>

#include "runtime/device/cuda_api.h"

#define SAME(ours, theirs) _Static_assert((ours) == (theirs), #ours " is not " #theirs)
SAME(RT_CUDA_SUCCESS, CUDA_SUCCESS);
SAME(RT_CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_READY);
SAME(RT_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
SAME(RT_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
SAME(RT_CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_HOST);
SAME(RT_CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_DEVICE);
SAME(RT_CU_MEMORYTYPE_ARRAY, CU_MEMORYTYPE_ARRAY);
SAME(RT_CU_MEMORYTYPE_UNIFIED, CU_MEMORYTYPE_UNIFIED);
SAME(RT_CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING);
SAME(RT_CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING);
SAME(RT_CU_EVENT_DEFAULT, CU_EVENT_DEFAULT);
SAME(RT_CU_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_PORTABLE);
SAME(sizeof(rt_cu_result), sizeof(CUresult));
SAME(sizeof(rt_cu_device), sizeof(CUdevice));
SAME(sizeof(rt_cu_devptr), sizeof(CUdeviceptr));

#define FIELD(ours, theirs)                                                           \
	SAME(offsetof(struct rt_cu_memcpy2d, ours), offsetof(CUDA_MEMCPY2D, theirs)); \
	SAME(sizeof(((struct rt_cu_memcpy2d *)0)->ours), sizeof(((CUDA_MEMCPY2D *)0)->theirs))
FIELD(src_x_bytes, srcXInBytes);
FIELD(src_y, srcY);
FIELD(src_memory_type, srcMemoryType);
FIELD(src_host, srcHost);
FIELD(src_device, srcDevice);
FIELD(src_array, srcArray);
FIELD(src_pitch, srcPitch);
FIELD(dst_x_bytes, dstXInBytes);
FIELD(dst_y, dstY);
FIELD(dst_memory_type, dstMemoryType);
FIELD(dst_host, dstHost);
FIELD(dst_device, dstDevice);
FIELD(dst_array, dstArray);
FIELD(dst_pitch, dstPitch);
FIELD(width_bytes, WidthInBytes);
FIELD(height, Height);
SAME(sizeof(struct rt_cu_memcpy2d), sizeof(CUDA_MEMCPY2D));

int main(void)
{
	printf("1..2\nok 1 - cuda_api.h's constants and CUDA_MEMCPY2D layout are cuda.h's (CUDA %d)\n",
	       CUDA_VERSION);
	/* A pointer constant: not one _Static_assert can compare. */
	bool same = (void *)RT_CU_STREAM_PER_THREAD == (void *)CU_STREAM_PER_THREAD;
	printf("%s 2 - RT_CU_STREAM_PER_THREAD is CU_STREAM_PER_THREAD\n", same ? "ok" : "not ok");
	return same ? 0 : 1;
}
