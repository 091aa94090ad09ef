/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_probe.c - what the CUDA driver says of each GPU of this node for
 * `llmp topo --gdr`: CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED (116),
 * which NCCL 2.28 takes as the GPU's gdr flag (ncclGpuGdrSupport), and
 * _DMA_BUF_SUPPORTED (124), which its dma-buf path needs (NVIDIA/nccl
 * src/plugin/net.cc, src/init.cc dmaBufSupported; doc/gpudirect.md). The
 * driver by dlopen ($LLMP_CUDA_LIBRARY, else libcuda.so.1), so the tool
 * runs where there is none; each GPU is found by its PCI bus id. Nothing is
 * read when the driver cannot be loaded or initialised, and the verdicts
 * then leave the GPU's side out, as before.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmp_cli.h"
#include "topology/gdr.h"
#include <llmp/llmp_env.h>

#define ATTR_GDR 116    /* CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED */
#define ATTR_DMABUF 124 /* CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED */

static enum gdr_gpu_attr attr(int (*get)(int *, int, int), int which, int dev)
{
	int v = 0;
	return get(&v, which, dev) != 0 ? GDR_ATTR_UNKNOWN : v ? GDR_ATTR_YES : GDR_ATTR_NO;
}

unsigned cli_cuda_gdr_attrs(const struct topo_type *ty, struct gdr_node *n, char *why, size_t len)
{
	const char *name = getenv(LLMP_ENV_CUDA_LIBRARY);
	name = name && *name ? name : "libcuda.so.1";
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(why, len, "no CUDA driver (%s)", name);
		return 0;
	}
	int (*init)(unsigned) = NULL, (*by_bus)(int *, const char *) = NULL, (*get)(int *, int, int) = NULL;
	*(void **)&init = dlsym(lib, "cuInit");
	*(void **)&by_bus = dlsym(lib, "cuDeviceGetByPCIBusId");
	*(void **)&get = dlsym(lib, "cuDeviceGetAttribute");
	unsigned read = 0;
	int rc = init && by_bus && get ? init(0) : -1;
	if (rc != 0)
		snprintf(why, len, "%s: %s", name, rc < 0 ? "not a CUDA driver" : "cuInit failed (no GPU?)");
	for (unsigned g = 0; rc == 0 && g < ty->ngpus; g++) {
		struct gdr_pcidev *d = NULL;
		for (unsigned i = 0; i < n->ndevs && !d; i++)
			if (strcmp(n->devs[i].bus, ty->gpus[g].pci.bus) == 0)
				d = &n->devs[i];
		int dev = 0;
		if (!d || by_bus(&dev, ty->gpus[g].pci.bus) != 0)
			continue;
		d->gpu_gdr = attr(get, ATTR_GDR, dev);
		d->gpu_dmabuf = attr(get, ATTR_DMABUF, dev);
		read += d->gpu_gdr != GDR_ATTR_UNKNOWN;
	}
	if (rc == 0 && !read)
		snprintf(why, len, "%s knows none of these GPUs", name);
	dlclose(lib);
	return read;
}
