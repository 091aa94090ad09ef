/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_cuda.h - the few CUDA driver calls `llmp bench --memory device`
 * makes, through the runtime's own loader (runtime/device/cuda_api.h): the
 * driver is loaded by dlopen (LLMP_CUDA_LIBRARY, else libcuda.so.1), so
 * the tool starts on a machine without one and says so when asked for a GPU,
 * and the tests run it on the CUDA test double (tests/device/fake_cuda.c).
 */
#ifndef LLMP_CLI_BENCH_CUDA_H
#define LLMP_CLI_BENCH_CUDA_H

#include <stddef.h>

struct bench_cuda;

/*
 * Load the driver, make device `index` (among those visible) current in
 * this thread through its primary context, and create a stream. NULL with
 * msg naming the step that failed ("no GPU: ...", no such device, ...).
 */
struct bench_cuda *bench_cuda_open(int index, char *msg, size_t len);
void bench_cuda_close(struct bench_cuda *c);

/* Device memory and (synchronous) copies; each -1 with msg on failure. */
int bench_cuda_alloc(struct bench_cuda *c, size_t bytes, void **ptr, char *msg, size_t len);
void bench_cuda_free(struct bench_cuda *c, void *ptr);
int bench_cuda_to_device(struct bench_cuda *c, void *dst, const void *src, size_t bytes, char *msg,
			 size_t len);
int bench_cuda_to_host(struct bench_cuda *c, void *dst, const void *src, size_t bytes, char *msg, size_t len);
/* The stream (a CUstream, which is a cudaStream_t) and waiting for it. */
void *bench_cuda_stream(struct bench_cuda *c);
int bench_cuda_sync(struct bench_cuda *c, char *msg, size_t len);

#endif /* LLMP_CLI_BENCH_CUDA_H */
