/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_api.c - the CUDA driver loaded with dlopen, its calls resolved into a table. */
#include "cuda_api.h"
#include "dl_table.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/comm/memtype.h"
#include "common/fail.h"
#include <llmp/llmp_env.h>

#define DEFAULT_DRIVER "libcuda.so.1"

/*
 * The exported names: cuda.h maps several calls to a versioned symbol
 * (#define cuMemcpyDtoHAsync cuMemcpyDtoHAsync_v2), and dlsym needs that one.
 */
static const struct rt_dl_symbol symbols[] = {
	{ "cuInit", offsetof(struct rt_cuda, init) },
	{ "cuGetErrorName", offsetof(struct rt_cuda, get_error_name) },
	{ "cuGetErrorString", offsetof(struct rt_cuda, get_error_string) },
	{ "cuPointerGetAttribute", offsetof(struct rt_cuda, pointer_get_attribute) },
	{ "cuDeviceGet", offsetof(struct rt_cuda, device_get) },
	{ "cuDevicePrimaryCtxRetain", offsetof(struct rt_cuda, primary_ctx_retain) },
	{ "cuDevicePrimaryCtxRelease_v2", offsetof(struct rt_cuda, primary_ctx_release) },
	{ "cuCtxGetCurrent", offsetof(struct rt_cuda, ctx_get_current) },
	{ "cuCtxPushCurrent_v2", offsetof(struct rt_cuda, ctx_push_current) },
	{ "cuCtxPopCurrent_v2", offsetof(struct rt_cuda, ctx_pop_current) },
	{ "cuCtxSynchronize", offsetof(struct rt_cuda, ctx_synchronize) },
	{ "cuMemHostAlloc", offsetof(struct rt_cuda, mem_host_alloc) },
	{ "cuMemFreeHost", offsetof(struct rt_cuda, mem_free_host) },
	{ "cuMemAlloc_v2", offsetof(struct rt_cuda, mem_alloc) },
	{ "cuMemFree_v2", offsetof(struct rt_cuda, mem_free) },
	{ "cuMemcpyHtoD_v2", offsetof(struct rt_cuda, memcpy_htod) },
	{ "cuMemcpyDtoH_v2", offsetof(struct rt_cuda, memcpy_dtoh) },
	{ "cuStreamCreate", offsetof(struct rt_cuda, stream_create) },
	{ "cuStreamDestroy_v2", offsetof(struct rt_cuda, stream_destroy) },
	{ "cuStreamSynchronize", offsetof(struct rt_cuda, stream_synchronize) },
	{ "cuMemcpyDtoHAsync_v2", offsetof(struct rt_cuda, memcpy_dtoh_async) },
	{ "cuMemcpyHtoDAsync_v2", offsetof(struct rt_cuda, memcpy_htod_async) },
	{ "cuMemcpy2DAsync_v2", offsetof(struct rt_cuda, memcpy_2d_async) },
	{ "cuEventCreate", offsetof(struct rt_cuda, event_create) },
	{ "cuEventDestroy_v2", offsetof(struct rt_cuda, event_destroy) },
	{ "cuEventRecord", offsetof(struct rt_cuda, event_record) },
	{ "cuEventSynchronize", offsetof(struct rt_cuda, event_synchronize) },
	{ "cuEventQuery", offsetof(struct rt_cuda, event_query) },
	/* The first version, which every driver exports; cuda.h 12.8+ maps the name to _v2. */
	{ "cuEventElapsedTime", offsetof(struct rt_cuda, event_elapsed_time) },
};

static const char *driver_path(void)
{
	const char *path = getenv(LLMP_ENV_CUDA_LIBRARY);
	return path && *path ? path : DEFAULT_DRIVER;
}

llmp_status rt_cuda_load(struct rt_cuda *cu, char *msg, size_t len)
{
	memset(cu, 0, sizeof *cu);
	snprintf(cu->path, sizeof cu->path, "%s", driver_path());
	/* RTLD_LOCAL: the driver's symbols stay out of the program's namespace. */
	cu->lib = dlopen(cu->path, RTLD_NOW | RTLD_LOCAL);
	if (!cu->lib) {
		const char *why = dlerror();
		return llmp_fail(LLMP_ERR_UNSUPPORTED, msg, len, "cannot load the CUDA driver (%s): %s",
				 cu->path, why ? why : "dlopen failed");
	}
	llmp_status st = rt_dl_resolve(cu->lib, cu->path, symbols, sizeof symbols / sizeof symbols[0], cu,
				       msg, len);
	if (st != LLMP_OK) {
		rt_cuda_unload(cu);
		return st;
	}
	rt_cu_result r = cu->init(0);
	if (r != RT_CUDA_SUCCESS) {
		char why[160];
		st = llmp_fail(LLMP_ERR_DEVICE, msg, len, "%s: cuInit: %s", cu->path,
			       rt_cuda_why(cu, r, why, sizeof why));
		rt_cuda_unload(cu);
		return st;
	}
	return LLMP_OK;
}

void rt_cuda_unload(struct rt_cuda *cu)
{
	if (cu->lib)
		dlclose(cu->lib); /* the program's own reference, if any, keeps it mapped */
	memset(cu, 0, sizeof *cu);
}

const char *rt_cuda_why(const struct rt_cuda *cu, rt_cu_result r, char *buf, size_t len)
{
	const char *name = NULL, *words = NULL;
	/* Both fail on a driver that cannot even describe its errors (the toolkit's stub). */
	if (cu->get_error_name && cu->get_error_name(r, &name) != RT_CUDA_SUCCESS)
		name = NULL;
	if (cu->get_error_string && cu->get_error_string(r, &words) != RT_CUDA_SUCCESS)
		words = NULL;
	if (name && words)
		snprintf(buf, len, "%s: %s", name, words);
	else
		snprintf(buf, len, "CUDA error %d", r);
	return buf;
}

bool rt_cuda_is_device_memory(const void *p, int *ordinal)
{
	const char *path = driver_path();
	return rt_memtype_device(rt_memtype_driver(DEFAULT_DRIVER), p, ordinal) ||
	       (strcmp(path, DEFAULT_DRIVER) != 0 && rt_memtype_device(rt_memtype_driver(path), p, ordinal));
}
