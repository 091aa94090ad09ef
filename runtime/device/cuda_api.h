/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_api.h - the CUDA driver, loaded with dlopen: the calls libllmp makes
 * to move checkpoint slices between device memory and pinned host memory,
 * and to watch and time device operations (runtime/device/inflight.c), as a
 * table.
 *
 * The driver API (libcuda), not the runtime (libcudart): nothing of the
 * toolkit is needed at run time, and libllmp never links libcuda, so a
 * node without a GPU loads libllmp and runs the host path. LLMP_CUDA_LIBRARY
 * names another library (the test double in tests/device/); the default is
 * libcuda.so.1 on the loader's path. The few types and constants are
 * written out here (those of the pointer query in runtime/comm/memtype.h), so that building needs no
 * CUDA header; tests/device/cuda_abi_check.c checks them against cuda.h
 * where the toolkit is installed.
 */
#ifndef LLMP_RT_CUDA_API_H
#define LLMP_RT_CUDA_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_status.h>

/* The pointer query's types and constants, which comm/ needs too, are there. */
#include "runtime/comm/memtype.h"

typedef int rt_cu_result; /* CUresult */
typedef int rt_cu_device; /* CUdevice */
typedef struct rt_cu_ctx_st *rt_cu_ctx;
typedef struct rt_cu_stream_st *rt_cu_stream;
typedef struct rt_cu_event_st *rt_cu_event;

#define RT_CUDA_ERROR_NOT_READY 600
#define RT_CU_STREAM_NON_BLOCKING 1
/* A handle that names the calling thread's own default stream: a different stream in each thread. */
#define RT_CU_STREAM_PER_THREAD ((rt_cu_stream)0x2)
#define RT_CU_EVENT_DEFAULT 0 /* timing enabled: cuEventElapsedTime works on it */
#define RT_CU_EVENT_DISABLE_TIMING 2
#define RT_CU_MEMHOSTALLOC_PORTABLE 1

/* CUDA_MEMCPY2D, field for field. */
struct rt_cu_memcpy2d {
	size_t src_x_bytes, src_y;
	int src_memory_type;
	const void *src_host;
	rt_cu_devptr src_device;
	void *src_array;
	size_t src_pitch;
	size_t dst_x_bytes, dst_y;
	int dst_memory_type;
	void *dst_host;
	rt_cu_devptr dst_device;
	void *dst_array;
	size_t dst_pitch;
	size_t width_bytes, height;
};

struct rt_cuda {
	void *lib;
	char path[256];
	rt_cu_result (*init)(unsigned flags);
	rt_cu_result (*get_error_name)(rt_cu_result r, const char **s);
	rt_cu_result (*get_error_string)(rt_cu_result r, const char **s);
	rt_cu_result (*pointer_get_attribute)(void *data, int attribute, rt_cu_devptr ptr);
	rt_cu_result (*device_get)(rt_cu_device *dev, int ordinal);
	rt_cu_result (*primary_ctx_retain)(rt_cu_ctx *ctx, rt_cu_device dev);
	rt_cu_result (*primary_ctx_release)(rt_cu_device dev);
	rt_cu_result (*ctx_get_current)(rt_cu_ctx *ctx);
	rt_cu_result (*ctx_push_current)(rt_cu_ctx ctx);
	rt_cu_result (*ctx_pop_current)(rt_cu_ctx *ctx);
	rt_cu_result (*ctx_synchronize)(void);
	rt_cu_result (*mem_host_alloc)(void **p, size_t bytes, unsigned flags);
	rt_cu_result (*mem_free_host)(void *p);
	/* Device memory: what `llmp bench --memory device` measures with (cli/bench/). */
	rt_cu_result (*mem_alloc)(rt_cu_devptr *p, size_t bytes);
	rt_cu_result (*mem_free)(rt_cu_devptr p);
	rt_cu_result (*memcpy_htod)(rt_cu_devptr dst, const void *src,
				    size_t bytes); /* pageable host memory */
	rt_cu_result (*memcpy_dtoh)(void *dst, rt_cu_devptr src, size_t bytes);
	rt_cu_result (*stream_create)(rt_cu_stream *s, unsigned flags);
	rt_cu_result (*stream_destroy)(rt_cu_stream s);
	rt_cu_result (*stream_synchronize)(rt_cu_stream s);
	rt_cu_result (*memcpy_dtoh_async)(void *dst, rt_cu_devptr src, size_t bytes, rt_cu_stream s);
	rt_cu_result (*memcpy_htod_async)(rt_cu_devptr dst, const void *src, size_t bytes, rt_cu_stream s);
	rt_cu_result (*memcpy_2d_async)(const struct rt_cu_memcpy2d *copy, rt_cu_stream s);
	rt_cu_result (*event_create)(rt_cu_event *e, unsigned flags);
	rt_cu_result (*event_destroy)(rt_cu_event e);
	rt_cu_result (*event_record)(rt_cu_event e, rt_cu_stream s);
	rt_cu_result (*event_synchronize)(rt_cu_event e);
	rt_cu_result (*event_query)(rt_cu_event e);
	/* Milliseconds between two passed events made with timing (the device path's time per operation). */
	rt_cu_result (*event_elapsed_time)(float *ms, rt_cu_event start, rt_cu_event end);
};

/*
 * Load the driver (LLMP_CUDA_LIBRARY, else libcuda.so.1), resolve every
 * call of the table and cuInit it. LLMP_ERR_UNSUPPORTED with msg naming the
 * library and why it cannot be loaded or the missing symbol;
 * LLMP_ERR_DEVICE with cuInit's error in the driver's words.
 */
llmp_status rt_cuda_load(struct rt_cuda *cu, char *msg, size_t len);
void rt_cuda_unload(struct rt_cuda *cu);

/* "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered", for messages. */
const char *rt_cuda_why(const struct rt_cuda *cu, rt_cu_result r, char *buf, size_t len);

/*
 * Whether p is device memory, asked of a driver the program already loaded
 * (dlopen RTLD_NOLOAD of LLMP_CUDA_LIBRARY and of libcuda.so.1: libllmp
 * loads none to ask). A program that loaded no driver holds no device
 * memory. *ordinal: the device it is on.
 */
bool rt_cuda_is_device_memory(const void *p, int *ordinal);

#endif /* LLMP_RT_CUDA_API_H */
