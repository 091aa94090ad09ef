/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memtype.c - is a buffer host or device memory?
 *
 * Only the CUDA driver knows. The runtime never loads it: if the program
 * has (it allocated device memory through CUDA), dlopen with RTLD_NOLOAD
 * finds it and cuPointerGetAttribute answers; if it has not, no pointer of
 * the process can be device memory. The few driver constants used are
 * written here so that building needs no CUDA headers.
 */
#include "rt.h"

#include <dlfcn.h>

#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define CU_MEMORYTYPE_DEVICE 2
#define CU_MEMORYTYPE_ARRAY 3
#define CUDA_SUCCESS 0

void rt_memtype_init(llmp_ctx *ctx)
{
	ctx->cu_pointer_get_attribute = NULL;
	void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!driver)
		return;
	/* POSIX allows converting dlsym's object pointer to a function pointer. */
	void *sym = dlsym(driver, "cuPointerGetAttribute");
	if (sym)
		*(void **)&ctx->cu_pointer_get_attribute = sym;
	dlclose(driver); /* RTLD_NOLOAD took a reference; the program keeps its own */
}

llmp_status rt_check_host(llmp_ctx *ctx, const void *buf, const char *what)
{
	if (!ctx->cu_pointer_get_attribute || !buf)
		return LLMP_OK;
	unsigned int type = 0;
	/* Host memory CUDA never saw is an error to the driver: that means host. */
	if (ctx->cu_pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (uintptr_t)buf) !=
	    CUDA_SUCCESS)
		return LLMP_OK;
	if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_ARRAY)
		return rt_fail(ctx, LLMP_ERR_UNSUPPORTED,
			       "%s is device memory: this build moves host memory only "
			       "(device buffers come with the NCCL back end)",
			       what);
	return LLMP_OK;
}
