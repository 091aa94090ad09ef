/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_drv.c - the CUDA driver, loaded with dlopen, for the device benchmark (cuda_drv.h). */
#include "cuda_drv.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The driver API's types, as its ABI has them (cuda.h): handles are pointers, results ints. */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;

struct cli_cuda {
	void *lib;
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	CUresult (*init)(unsigned);
	CUresult (*device_count)(int *);
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*retain)(CUcontext *, CUdevice);
	CUresult (*release)(CUdevice);
	CUresult (*set_current)(CUcontext);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*htod)(CUdeviceptr, const void *, size_t);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*stream_create)(CUstream *, unsigned);
	CUresult (*stream_destroy)(CUstream);
	CUresult (*stream_sync)(CUstream);
	CUresult (*error_string)(CUresult, const char **);
};

/* "cuMemAlloc: out of memory (2)" into msg; -1. */
static int fail(const struct cli_cuda *c, const char *call, CUresult r, char *msg, size_t len)
{
	const char *why = NULL;
	if (c->error_string)
		c->error_string(r, &why);
	snprintf(msg, len, "%s: %s (CUDA error %d)", call, why ? why : "failed", r);
	return -1;
}

struct cli_cuda *cli_cuda_open(int index, char *msg, size_t len)
{
	static const struct {
		const char *name;
		size_t offset;
	} symbols[] = {
		{ "cuInit", offsetof(struct cli_cuda, init) },
		{ "cuDeviceGetCount", offsetof(struct cli_cuda, device_count) },
		{ "cuDeviceGet", offsetof(struct cli_cuda, device_get) },
		{ "cuDevicePrimaryCtxRetain", offsetof(struct cli_cuda, retain) },
		{ "cuDevicePrimaryCtxRelease_v2", offsetof(struct cli_cuda, release) },
		{ "cuCtxSetCurrent", offsetof(struct cli_cuda, set_current) },
		{ "cuMemAlloc_v2", offsetof(struct cli_cuda, mem_alloc) },
		{ "cuMemFree_v2", offsetof(struct cli_cuda, mem_free) },
		{ "cuMemcpyHtoD_v2", offsetof(struct cli_cuda, htod) },
		{ "cuMemcpyDtoH_v2", offsetof(struct cli_cuda, dtoh) },
		{ "cuStreamCreate", offsetof(struct cli_cuda, stream_create) },
		{ "cuStreamDestroy_v2", offsetof(struct cli_cuda, stream_destroy) },
		{ "cuStreamSynchronize", offsetof(struct cli_cuda, stream_sync) },
		{ "cuGetErrorString", offsetof(struct cli_cuda, error_string) },
	};
	struct cli_cuda *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(msg, len, "out of memory");
		return NULL;
	}
	if (!(c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) {
		snprintf(msg, len, "no GPU: the CUDA driver (libcuda.so.1) is not installed");
		free(c);
		return NULL;
	}
	for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
		void *sym = dlsym(c->lib, symbols[i].name);
		if (!sym) {
			snprintf(msg, len, "the CUDA driver has no %s", symbols[i].name);
			free(c);
			return NULL;
		}
		memcpy((char *)c + symbols[i].offset, &sym, sizeof sym);
	}
	int n = 0;
	CUresult r;
	if ((r = c->init(0)) != 0 || (r = c->device_count(&n)) != 0) {
		fail(c, "cuInit", r, msg, len);
		free(c);
		return NULL;
	}
	if (index < 0 || index >= n) {
		snprintf(msg, len, "no GPU %d: the driver sees %d (LOCAL_RANK picks one)", index, n);
		free(c);
		return NULL;
	}
	if ((r = c->device_get(&c->dev, index)) != 0 || (r = c->retain(&c->ctx, c->dev)) != 0 ||
	    (r = c->set_current(c->ctx)) != 0 || (r = c->stream_create(&c->stream, 0)) != 0) {
		fail(c, "making the device current", r, msg, len);
		if (c->ctx)
			c->release(c->dev);
		free(c);
		return NULL;
	}
	return c;
}

void cli_cuda_close(struct cli_cuda *c)
{
	if (!c)
		return;
	c->stream_destroy(c->stream);
	c->release(c->dev);
	free(c); /* the driver stays loaded: NCCL may still hold it */
}

int cli_cuda_alloc(struct cli_cuda *c, size_t bytes, void **ptr, char *msg, size_t len)
{
	CUdeviceptr p = 0;
	CUresult r = c->mem_alloc(&p, bytes ? bytes : 1);
	*ptr = (void *)(uintptr_t)p;
	return r ? fail(c, "cuMemAlloc", r, msg, len) : 0;
}

void cli_cuda_free(struct cli_cuda *c, void *ptr)
{
	if (c && ptr)
		c->mem_free((CUdeviceptr)(uintptr_t)ptr);
}

int cli_cuda_to_device(struct cli_cuda *c, void *dst, const void *src, size_t bytes, char *msg, size_t len)
{
	CUresult r = c->htod((CUdeviceptr)(uintptr_t)dst, src, bytes);
	return r ? fail(c, "cuMemcpyHtoD", r, msg, len) : 0;
}

int cli_cuda_to_host(struct cli_cuda *c, void *dst, const void *src, size_t bytes, char *msg, size_t len)
{
	CUresult r = c->dtoh(dst, (CUdeviceptr)(uintptr_t)src, bytes);
	return r ? fail(c, "cuMemcpyDtoH", r, msg, len) : 0;
}

void *cli_cuda_stream(struct cli_cuda *c)
{
	return c->stream;
}

int cli_cuda_sync(struct cli_cuda *c, char *msg, size_t len)
{
	CUresult r = c->stream_sync(c->stream);
	return r ? fail(c, "cuStreamSynchronize", r, msg, len) : 0;
}
