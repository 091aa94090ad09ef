/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_drv.h - the few CUDA driver calls `llmp bench --memory device`
 * makes, with the driver loaded by dlopen (libcuda.so.1), so the tool
 * starts on a machine without one and says so when asked for a GPU.
 */
#ifndef LLMP_CLI_CUDA_DRV_H
#define LLMP_CLI_CUDA_DRV_H

#include <stdbool.h>
#include <stddef.h>

struct cli_cuda;

/*
 * Load the driver, make device `index` (among those visible) current in
 * this thread through its primary context, and create a stream. NULL with
 * msg naming the step that failed (no driver, no such device, ...).
 */
struct cli_cuda *cli_cuda_open(int index, char *msg, size_t len);
void cli_cuda_close(struct cli_cuda *c);

/* Device memory and copies; each -1 with msg on failure. */
int cli_cuda_alloc(struct cli_cuda *c, size_t bytes, void **ptr, char *msg, size_t len);
void cli_cuda_free(struct cli_cuda *c, void *ptr);
int cli_cuda_to_device(struct cli_cuda *c, void *dst, const void *src, size_t bytes, char *msg, size_t len);
int cli_cuda_to_host(struct cli_cuda *c, void *dst, const void *src, size_t bytes, char *msg, size_t len);
/* The stream (a CUstream, which is a cudaStream_t) and waiting for it. */
void *cli_cuda_stream(struct cli_cuda *c);
int cli_cuda_sync(struct cli_cuda *c, char *msg, size_t len);

#endif /* LLMP_CLI_CUDA_DRV_H */
