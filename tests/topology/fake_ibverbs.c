/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake_ibverbs.c - a stand-in for libibverbs.so.1 with the calls NCCL's
 * dma-buf probe makes and `llmp topo --gdr` repeats (cli/ibv_probe.c):
 * the devices named in FAKE_IBV_DEVICES ("mlx5_0,mlx5_1"), and
 * ibv_reg_dmabuf_mr with fd -1 failing with FAKE_IBV_DMABUF: "EBADF" (the
 * kernel and driver support dma-buf, the fd is bad) or "EOPNOTSUPP" (they
 * do not). Loaded through LLMP_IBVERBS_LIBRARY.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct ibv_device {
	char name[64];
};
struct ibv_context {
	struct ibv_device *dev;
};
struct ibv_pd {
	struct ibv_context *ctx;
};
struct ibv_mr;

static struct ibv_device devices[8];

struct ibv_device **ibv_get_device_list(int *num);
void ibv_free_device_list(struct ibv_device **list);
const char *ibv_get_device_name(struct ibv_device *dev);
struct ibv_context *ibv_open_device(struct ibv_device *dev);
int ibv_close_device(struct ibv_context *ctx);
struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx);
int ibv_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd,
				 int access);
int ibv_dereg_mr(struct ibv_mr *mr);

struct ibv_device **ibv_get_device_list(int *num)
{
	const char *names = getenv("FAKE_IBV_DEVICES");
	struct ibv_device **list = calloc(9, sizeof *list);
	int n = 0;
	if (!list)
		return NULL;
	for (const char *p = names ? names : ""; *p && n < 8;) {
		size_t k = strcspn(p, ",");
		if (k && k < sizeof devices[n].name) {
			memcpy(devices[n].name, p, k);
			devices[n].name[k] = '\0';
			list[n] = &devices[n];
			n++;
		}
		p += k + (p[k] == ',');
	}
	if (num)
		*num = n;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *dev)
{
	return dev->name;
}

struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
	struct ibv_context *c = malloc(sizeof *c);
	if (c)
		c->dev = dev;
	return c;
}

int ibv_close_device(struct ibv_context *ctx)
{
	free(ctx);
	return 0;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = malloc(sizeof *pd);
	if (pd)
		pd->ctx = ctx;
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	return 0;
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd,
				 int access)
{
	(void)pd, (void)offset, (void)length, (void)iova, (void)access;
	const char *how = getenv("FAKE_IBV_DMABUF");
	errno = fd < 0 && how && strcmp(how, "EOPNOTSUPP") == 0 ? EOPNOTSUPP : EBADF;
	return NULL;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	(void)mr;
	return 0;
}
