/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_cuda.c - the device benchmark's CUDA calls, over the runtime's driver table (bench_cuda.h). */
#include "bench_cuda.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/device/cuda_api.h"

struct bench_cuda {
	struct rt_cuda cu;
	rt_cu_device dev;
	rt_cu_ctx ctx;
	rt_cu_stream stream;
	int pushed; /* the context was made current here */
};

/* "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY: out of memory" into msg; -1. */
static int fail(const struct bench_cuda *c, const char *call, rt_cu_result r, char *msg, size_t len)
{
	char why[160];
	snprintf(msg, len, "%s: %s", call, rt_cuda_why(&c->cu, r, why, sizeof why));
	return -1;
}

struct bench_cuda *bench_cuda_open(int index, char *msg, size_t len)
{
	struct bench_cuda *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(msg, len, "out of memory");
		return NULL;
	}
	char why[512];
	if (rt_cuda_load(&c->cu, why, sizeof why) != LLMP_OK) {
		snprintf(msg, len, "no GPU: %s", why);
		free(c);
		return NULL;
	}
	/* No cuDeviceGetCount: LLMP_DEVICE=auto's probe (runtime/device/device.c) keys on it. */
	rt_cu_result r = c->cu.device_get(&c->dev, index);
	if (r != RT_CUDA_SUCCESS) {
		snprintf(msg, len, "no GPU %d (LOCAL_RANK picks one): %s", index,
			 rt_cuda_why(&c->cu, r, why, sizeof why));
		goto out;
	}
	if ((r = c->cu.primary_ctx_retain(&c->ctx, c->dev)) != RT_CUDA_SUCCESS) {
		fail(c, "retaining the device's primary context", r, msg, len);
		c->ctx = NULL;
		goto out;
	}
	if ((r = c->cu.ctx_push_current(c->ctx)) != RT_CUDA_SUCCESS) {
		fail(c, "cuCtxPushCurrent", r, msg, len);
		goto out;
	}
	c->pushed = 1;
	if ((r = c->cu.stream_create(&c->stream, 0)) != RT_CUDA_SUCCESS) {
		fail(c, "cuStreamCreate", r, msg, len);
		c->stream = NULL;
		goto out;
	}
	return c;
out:
	bench_cuda_close(c);
	return NULL;
}

void bench_cuda_close(struct bench_cuda *c)
{
	if (!c)
		return;
	if (c->stream)
		c->cu.stream_destroy(c->stream);
	if (c->pushed) {
		rt_cu_ctx popped;
		c->cu.ctx_pop_current(&popped);
	}
	if (c->ctx)
		c->cu.primary_ctx_release(c->dev);
	/* The driver stays mapped while NCCL holds it: dlclose drops only this reference. */
	rt_cuda_unload(&c->cu);
	free(c);
}

int bench_cuda_alloc(struct bench_cuda *c, size_t bytes, void **ptr, char *msg, size_t len)
{
	rt_cu_devptr p = 0;
	rt_cu_result r = c->cu.mem_alloc(&p, bytes ? bytes : 1);
	*ptr = r == RT_CUDA_SUCCESS ? (void *)(uintptr_t)p : NULL;
	return r != RT_CUDA_SUCCESS ? fail(c, "cuMemAlloc", r, msg, len) : 0;
}

void bench_cuda_free(struct bench_cuda *c, void *ptr)
{
	if (c && ptr)
		c->cu.mem_free((rt_cu_devptr)(uintptr_t)ptr);
}

int bench_cuda_to_device(struct bench_cuda *c, void *dst, const void *src, size_t bytes, char *msg,
			 size_t len)
{
	rt_cu_result r = c->cu.memcpy_htod((rt_cu_devptr)(uintptr_t)dst, src, bytes);
	return r != RT_CUDA_SUCCESS ? fail(c, "cuMemcpyHtoD", r, msg, len) : 0;
}

int bench_cuda_to_host(struct bench_cuda *c, void *dst, const void *src, size_t bytes, char *msg, size_t len)
{
	rt_cu_result r = c->cu.memcpy_dtoh(dst, (rt_cu_devptr)(uintptr_t)src, bytes);
	return r != RT_CUDA_SUCCESS ? fail(c, "cuMemcpyDtoH", r, msg, len) : 0;
}

void *bench_cuda_stream(struct bench_cuda *c)
{
	return c->stream;
}

int bench_cuda_sync(struct bench_cuda *c, char *msg, size_t len)
{
	rt_cu_result r = c->cu.stream_synchronize(c->stream);
	return r != RT_CUDA_SUCCESS ? fail(c, "cuStreamSynchronize", r, msg, len) : 0;
}
