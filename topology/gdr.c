/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gdr.c - NCCL 2.28's decision on GPUDirect RDMA for one GPU and one HCA,
 * with the reasons NCCL's log leaves out (doc/gpudirect.md):
 *
 *   the HCA side (NVIDIA/nccl src/transport/net_ib.cc): a peer-memory
 *     module NCCL looks for (nv_peer_mem's memory_peers files;
 *     nvidia_peermem's module file only from NCCL 2.23.4 on,
 *     NVIDIA/nccl#1676), or dma-buf registration
 *     (kernel >= 5.12, NVIDIA's open kernel module, NCCL >= 2.13, and the
 *     HCA driver accepting ibv_reg_dmabuf_mr);
 *   the distance (paths.cc ncclTopoCheckGdr): NCCL's path type at most
 *     NCCL_NET_GDR_LEVEL (default PXB);
 *   no RDMA device in the task's /dev: NCCL's IB transport is absent.
 *
 * And what makes NCCL's choice fail rather than slow: ACS redirect or
 * egress control on a bridge between the two (hangs, IB error 4:
 * NVIDIA/nccl#304, NVIDIA/nccl#928), an IOMMU that translates (CUDA's
 * GPUDirect RDMA guide §3.4), a locked-memory limit too small to register
 * NCCL's buffers.
 *
 * The GPU's own flag (CUDA attribute 116) is not known here: it needs the
 * driver, and is 1 on every datacenter GPU NCCL supports.
 */
#define _POSIX_C_SOURCE 200809L
#include "gdr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NCCL's version codes: 2.23.4 and 2.13.0 as ncclGetVersion gives them. */
#define NCCL_SEES_NVIDIA_PEERMEM 22304
#define NCCL_HAS_DMABUF 21300

const struct gdr_pcidev *gdr_node_dev(const struct gdr_node *n, const char *bus)
{
	for (unsigned i = 0; bus[0] && i < n->ndevs; i++)
		if (strcmp(n->devs[i].bus, bus) == 0)
			return &n->devs[i];
	return NULL;
}

unsigned gdr_path_bridges(const struct topo_pci *a, const struct topo_pci *b, unsigned (*out)[2],
			  unsigned max)
{
	unsigned common = 0, n = 0;
	while (common < a->npcie && common < b->npcie && strcmp(a->pcie[common], b->pcie[common]) == 0)
		common++;
	unsigned from = common ? common - 1 : 0;
	for (unsigned i = from; i < a->npcie && n < max; i++)
		out[n][0] = 0, out[n++][1] = i;
	for (unsigned i = common; i < b->npcie && n < max; i++)
		out[n][0] = 1, out[n++][1] = i;
	return n;
}

bool gdr_kernel_version(const char *release, unsigned *major, unsigned *minor)
{
	char *end;
	unsigned long ma = strtoul(release, &end, 10);
	if (end == release || *end != '.')
		return false;
	const char *m = end + 1;
	unsigned long mi = strtoul(m, &end, 10);
	if (end == m || ma > 1000 || mi > 1000)
		return false;
	*major = (unsigned)ma;
	*minor = (unsigned)mi;
	return true;
}

/* The dma-buf path's missing pieces as reason bits; 0 when it is there. */
static unsigned dmabuf_missing(const struct gdr_node *n)
{
	unsigned r = 0, ma, mi;
	if (!gdr_kernel_version(n->kernel, &ma, &mi) || ma < 5 || (ma == 5 && mi < 12))
		r |= GDR_R_DMABUF_KERNEL;
	if (n->driver != GDR_DRIVER_OPEN)
		r |= GDR_R_DMABUF_DRIVER;
	if (n->nccl_version && n->nccl_version < NCCL_HAS_DMABUF)
		r |= GDR_R_DMABUF_NCCL;
	if (n->dmabuf_probe == 0)
		r |= GDR_R_DMABUF_IBV;
	return r;
}

static void check_bridges(const struct gdr_node *n, const struct topo_pci *gpu, const struct topo_pci *hca,
			  struct gdr_verdict *v)
{
	unsigned idx[2 * TOPO_PCIE_MAX][2];
	unsigned k = gdr_path_bridges(gpu, hca, idx, 2 * TOPO_PCIE_MAX);
	for (unsigned i = 0; i < k; i++) {
		const char *bus = (idx[i][0] ? hca : gpu)->pcie[idx[i][1]];
		const struct gdr_pcidev *d = gdr_node_dev(n, bus);
		if (!d || d->acs == GDR_ACS_UNREAD)
			v->acs_unchecked = true;
		else if (d->acs == GDR_ACS_READ && (d->acs_ctrl & GDR_ACS_REDIRECTS) &&
			 !(v->reasons & GDR_R_ACS)) {
			v->reasons |= GDR_R_ACS;
			snprintf(v->acs_bus, sizeof v->acs_bus, "%s", bus);
			v->acs_ctrl = d->acs_ctrl;
		}
	}
	const struct topo_pci *ends[2] = { gpu, hca };
	for (unsigned i = 0; i < 2 && !(v->reasons & GDR_R_IOMMU); i++) {
		const struct gdr_pcidev *d = gdr_node_dev(n, ends[i]->bus);
		/* "DMA" and "DMA-FQ" translate; "identity" (iommu=pt) and "blocked"/"unmanaged" do not. */
		if (d && (strcmp(d->iommu, "DMA") == 0 || strcmp(d->iommu, "DMA-FQ") == 0)) {
			v->reasons |= GDR_R_IOMMU;
			snprintf(v->iommu_bus, sizeof v->iommu_bus, "%s", d->bus);
			snprintf(v->iommu_type, sizeof v->iommu_type, "%s", d->iommu);
		}
	}
}

bool gdr_nic_capable(const struct gdr_node *n)
{
	bool old_nccl = n->nccl_version && n->nccl_version < NCCL_SEES_NVIDIA_PEERMEM;
	return n->nv_peer_mem || (n->nvidia_peermem && !old_nccl) || !dmabuf_missing(n);
}

void gdr_pair_verdict(const struct gdr_node *n, const struct topo_pci *gpu, const struct topo_pci *hca,
		      enum topo_path level, struct gdr_verdict *v)
{
	memset(v, 0, sizeof *v);
	v->path = topo_nccl_path(gpu, hca, NULL);
	bool old_nccl = n->nccl_version && n->nccl_version < NCCL_SEES_NVIDIA_PEERMEM;
	bool peermem = n->nv_peer_mem || (n->nvidia_peermem && !old_nccl);
	const struct gdr_pcidev *g = gdr_node_dev(n, gpu->bus);
	unsigned dmabuf = dmabuf_missing(n) | (g && g->gpu_dmabuf == GDR_ATTR_NO ? GDR_R_DMABUF_GPU : 0);
	if (g && g->gpu_gdr == GDR_ATTR_NO)
		v->reasons |= GDR_R_GPU;
	if (!peermem && dmabuf)
		v->reasons |= (n->nvidia_peermem ? GDR_R_NCCL_PEERMEM : GDR_R_NO_PEERMEM) | dmabuf;
	if (v->path > level)
		v->reasons |= GDR_R_LEVEL;
	if (n->ib_devices == 0)
		v->reasons |= GDR_R_NO_IBDEV;
	/* NCCL registers NCCL_BUFFSIZE (4 MiB) buffers per channel and peer: distributions' 64 KiB-8 MiB fail. */
	if (n->memlock && n->memlock < GDR_MEMLOCK_MIN)
		v->reasons |= GDR_R_MEMLOCK;
	check_bridges(n, gpu, hca, v);
	v->outcome = (v->reasons & GDR_R_NOT_USED) ? GDR_NOT_USED : v->reasons ? GDR_BROKEN : GDR_USED;
}

/* Append "; " and text to buf. */
static void add(char *buf, size_t len, size_t *at, const char *text)
{
	if (*at >= len)
		return;
	bool sep = *at && buf[*at - 1] != ' ' && text[0] != ' ';
	int k = snprintf(buf + *at, len - *at, "%s%s", sep ? "; " : "", text);
	*at = k < 0 ? len : *at + (size_t)k;
}

void gdr_verdict_text(const struct gdr_node *n, const struct gdr_verdict *v, enum topo_path level, char *buf,
		      size_t len)
{
	char part[256];
	size_t at = 0;
	buf[0] = '\0';
	add(buf, len, &at, v->outcome == GDR_USED ? "yes" : v->outcome == GDR_NOT_USED ? "no: " : "broken: ");
	if (v->reasons & GDR_R_GPU)
		add(buf, len, &at,
		    "the GPU reports no GPUDirect RDMA (CUDA attribute GPU_DIRECT_RDMA_SUPPORTED 0)");
	if (v->reasons & GDR_R_NO_PEERMEM)
		add(buf, len, &at, "no nvidia_peermem or nv_peer_mem loaded");
	if (v->reasons & GDR_R_NCCL_PEERMEM) {
		snprintf(part, sizeof part,
			 "NCCL %d.%d.%d does not see nvidia_peermem (it looks for nv_peer_mem; 2.23.4 "
			 "and later do, NVIDIA/nccl#1676)",
			 n->nccl_version / 10000, n->nccl_version / 100 % 100, n->nccl_version % 100);
		add(buf, len, &at, part);
	}
	if (v->reasons & GDR_R_DMABUF_KERNEL) {
		snprintf(part, sizeof part, "no dma-buf: kernel %s (5.12 needed)",
			 n->kernel[0] ? n->kernel : "unknown");
		add(buf, len, &at, part);
	}
	if (v->reasons & GDR_R_DMABUF_DRIVER)
		add(buf, len, &at,
		    n->driver == GDR_DRIVER_ABSENT ? "no dma-buf: no NVIDIA kernel module loaded"
						   : "no dma-buf: NVIDIA's proprietary kernel module (the "
						     "open one exports dma-buf)");
	if (v->reasons & GDR_R_DMABUF_NCCL)
		add(buf, len, &at, "no dma-buf: NCCL before 2.13");
	if (v->reasons & GDR_R_DMABUF_IBV)
		add(buf, len, &at, "no dma-buf: the HCA driver refuses ibv_reg_dmabuf_mr");
	if (v->reasons & GDR_R_DMABUF_GPU)
		add(buf, len, &at, "no dma-buf: the GPU reports none (CUDA attribute DMA_BUF_SUPPORTED 0)");
	if (v->reasons & GDR_R_LEVEL) {
		snprintf(part, sizeof part, "path %s beyond NCCL_NET_GDR_LEVEL=%s", topo_path_name(v->path),
			 topo_path_name(level));
		add(buf, len, &at, part);
	}
	if (v->reasons & GDR_R_NO_IBDEV)
		add(buf, len, &at, "no /dev/infiniband/uverbs* visible: NCCL falls back to sockets");
	if (v->reasons & GDR_R_ACS) {
		snprintf(part, sizeof part, "ACS%s%s%s on bridge %s (NCCL_NET_GDR_LEVEL=LOC avoids a hang)",
			 v->acs_ctrl & GDR_ACS_RR ? " ReqRedir" : "",
			 v->acs_ctrl & GDR_ACS_CR ? " CmpltRedir" : "",
			 v->acs_ctrl & GDR_ACS_EC ? " EgressCtrl" : "", v->acs_bus);
		add(buf, len, &at, part);
	}
	if (v->reasons & GDR_R_IOMMU) {
		snprintf(part, sizeof part, "IOMMU translates for %s (group type %s; iommu=pt needed)",
			 v->iommu_bus, v->iommu_type);
		add(buf, len, &at, part);
	}
	if (v->reasons & GDR_R_MEMLOCK) {
		snprintf(part, sizeof part, "locked-memory limit %llu KiB (ulimit -l; unlimited advised)",
			 n->memlock >> 10);
		add(buf, len, &at, part);
	}
	if (v->acs_unchecked && v->outcome == GDR_USED)
		add(buf, len, &at, " (ACS not checked: needs root)");
	else if (v->acs_unchecked)
		add(buf, len, &at, "ACS not checked (needs root)");
}

void gdr_node_merge_acs(struct gdr_node *n, const struct gdr_pcidev *acs, unsigned nacs)
{
	for (unsigned i = 0; i < n->ndevs; i++)
		for (unsigned j = 0; n->devs[i].acs == GDR_ACS_UNREAD && j < nacs; j++)
			if (strcmp(n->devs[i].bus, acs[j].bus) == 0) {
				n->devs[i].acs = acs[j].acs;
				n->devs[i].acs_ctrl = acs[j].acs_ctrl;
			}
}

void gdr_node_free(struct gdr_node *n)
{
	free(n->devs);
	n->devs = NULL;
	n->ndevs = 0;
}
