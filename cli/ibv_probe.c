/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_probe.c - NCCL's dma-buf probe (NVIDIA/nccl src/transport/net_ib.cc,
 * ncclIbDmaBufSupport), repeated for `llmp topo --gdr`: on an HCA's
 * protection domain, ibv_reg_dmabuf_mr with fd -1. EOPNOTSUPP or
 * EPROTONOSUPPORT: the kernel or driver cannot register dma-buf memory;
 * anything else (EBADF) means it can. libibverbs by dlopen
 * ($LLMP_IBVERBS_LIBRARY, else libibverbs.so.1), so the tool runs where it
 * is absent; no verbs header, the handles stay opaque.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmp_cli.h"
#include "topology/topo.h"
#include <llmp/llmp_env.h>

struct verbs {
	void **(*get_device_list)(int *);
	void (*free_device_list)(void **);
	const char *(*get_device_name)(void *);
	void *(*open_device)(void *);
	int (*close_device)(void *);
	void *(*alloc_pd)(void *);
	int (*dealloc_pd)(void *);
	void *(*reg_dmabuf_mr)(void *, uint64_t, size_t, uint64_t, int, int);
	int (*dereg_mr)(void *);
};

static bool load(void *lib, struct verbs *v)
{
	static const char *const names[] = { "ibv_get_device_list", "ibv_free_device_list",
					     "ibv_get_device_name", "ibv_open_device",
					     "ibv_close_device",    "ibv_alloc_pd",
					     "ibv_dealloc_pd",      "ibv_reg_dmabuf_mr",
					     "ibv_dereg_mr" };
	void **slots[] = { (void **)&v->get_device_list, (void **)&v->free_device_list,
			   (void **)&v->get_device_name, (void **)&v->open_device,
			   (void **)&v->close_device,    (void **)&v->alloc_pd,
			   (void **)&v->dealloc_pd,      (void **)&v->reg_dmabuf_mr,
			   (void **)&v->dereg_mr };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!(*slots[i] = dlsym(lib, names[i])))
			return false;
	return true;
}

/* 1 supported, 0 not, -1 not probed; the device probed in dev. */
int cli_dmabuf_probe(const struct topo_type *ty, char *dev, size_t len)
{
	const char *name = getenv(LLMP_ENV_IBVERBS_LIBRARY);
	void *lib = dlopen(name && *name ? name : "libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	struct verbs v;
	int result = -1, n = 0;
	dev[0] = '\0';
	if (!lib)
		return -1;
	void **list = load(lib, &v) ? v.get_device_list(&n) : NULL;
	for (int i = 0; list && i < n && result < 0; i++) {
		const char *dname = v.get_device_name(list[i]);
		bool ours = false;
		for (unsigned h = 0; dname && h < ty->nhcas; h++)
			ours |= strcmp(ty->hcas[h].name, dname) == 0;
		void *ctx = ours ? v.open_device(list[i]) : NULL;
		void *pd = ctx ? v.alloc_pd(ctx) : NULL;
		if (pd) {
			errno = 0;
			void *mr = v.reg_dmabuf_mr(pd, 0, 0, 0, -1, 0);
			int err = errno;
			if (mr)
				v.dereg_mr(mr);
			result = err == EOPNOTSUPP || err == EPROTONOSUPPORT ? 0 : 1;
			snprintf(dev, len, "%s", dname);
			v.dealloc_pd(pd);
		}
		if (ctx)
			v.close_device(ctx);
	}
	if (list)
		v.free_device_list(list);
	dlclose(lib);
	return result;
}
