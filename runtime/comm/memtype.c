/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memtype.c - is a buffer host or device memory?
 *
 * Only the CUDA driver knows. The runtime never loads it: if the program
 * has (it allocated device memory through CUDA), dlopen with RTLD_NOLOAD
 * finds it and cuPointerGetAttribute answers; if it has not, no pointer of
 * the process can be device memory. The driver's constants are written out
 * in memtype.h, so that building needs no CUDA headers.
 */
#include "memtype.h"

#include <dlfcn.h>
#include <stdint.h>

#include "rt.h"

rt_pointer_attr_fn rt_memtype_driver(const char *driver)
{
	rt_pointer_attr_fn get = NULL;
	void *lib = dlopen(driver, RTLD_NOW | RTLD_NOLOAD);
	if (!lib)
		return NULL;
	/* POSIX allows converting dlsym's object pointer to a function pointer. */
	*(void **)&get = dlsym(lib, "cuPointerGetAttribute");
	dlclose(lib); /* RTLD_NOLOAD took a reference; the program keeps its own */
	return get;
}

bool rt_memtype_device(rt_pointer_attr_fn get, const void *p, int *ordinal)
{
	unsigned type = 0;
	*ordinal = 0;
	/* Host memory CUDA never saw is an error to the driver: that means host. */
	if (!get || !p ||
	    get(&type, RT_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (rt_cu_devptr)(uintptr_t)p) != RT_CUDA_SUCCESS ||
	    (type != RT_CU_MEMORYTYPE_DEVICE && type != RT_CU_MEMORYTYPE_ARRAY))
		return false;
	if (get(ordinal, RT_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (rt_cu_devptr)(uintptr_t)p) !=
	    RT_CUDA_SUCCESS)
		*ordinal = 0;
	return true;
}

void rt_memtype_init(llmp_ctx *ctx)
{
	ctx->cu_pointer_get_attribute = rt_memtype_driver("libcuda.so.1");
}

llmp_status rt_check_host(llmp_ctx *ctx, const void *buf, const char *what)
{
	int ordinal;
	if (rt_memtype_device(ctx->cu_pointer_get_attribute, buf, &ordinal))
		return rt_fail(ctx, LLMP_ERR_UNSUPPORTED,
			       "%s is device memory: this build moves host memory only "
			       "(device buffers come with the NCCL back end)",
			       what);
	return LLMP_OK;
}
