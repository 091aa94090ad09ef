/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gdr_read.c - the facts NCCL's GPUDirect RDMA decision depends on, read
 * where Linux puts them under a root ("" for the machine's; a test gives a
 * tree of its own) (doc/gpudirect.md's reasons, where each is read from):
 *
 *   sys/module/nvidia_peermem/version                  nvidia_peermem loaded
 *   sys/kernel/mm/memory_peers/nv_mem{,_nc}/version    nv_peer_mem loaded
 *   proc/sys/kernel/osrelease                          the kernel (dma-buf: 5.12)
 *   proc/driver/nvidia/version                         "Open Kernel Module" or not
 *   dev/infiniband/uverbs*                             RDMA devices visible
 *   sys/bus/pci/devices/B/iommu_group/type             "DMA", "DMA-FQ": translating
 *   sys/bus/pci/devices/B/config                       ACS control (extended
 *                                                      capability 0x0d, +6):
 *                                                      beyond byte 64 only for root
 *
 * The NCCL version, the memlock limit and the dma-buf probe are the
 * caller's: they belong to the process that will run NCCL.
 */
#define _GNU_SOURCE
#include "gdr_read.h"
#include "read_line.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fail.h"

#define PATH_LEN 4096
#define ACS_CAP_ID 0x0d
#define EXT_CAP_START 0x100

static bool exists(const char *root, const char *path)
{
	char buf[PATH_LEN];
	int k = snprintf(buf, sizeof buf, "%s%s", root, path);
	return k > 0 && k < (int)sizeof buf && access(buf, F_OK) == 0;
}

/* ACS from a config file: GDR_ACS_UNREAD when only the first 64 (or 256) bytes can be read. */
static void read_acs(const char *path, struct gdr_pcidev *d)
{
	unsigned char cfg[4096];
	d->acs = GDR_ACS_UNREAD;
	FILE *f = fopen(path, "rbe");
	if (!f)
		return;
	size_t n = fread(cfg, 1, sizeof cfg, f);
	fclose(f);
	if (n < EXT_CAP_START + 8)
		return;
	d->acs = GDR_ACS_NONE;
	unsigned at = EXT_CAP_START;
	/* Each header: id (16 bits), version (4), next offset (12); a loop is cut at 64 capabilities. */
	for (unsigned hops = 0; hops < 64 && at + 8 <= n; hops++) {
		uint32_t head = (uint32_t)cfg[at] | (uint32_t)cfg[at + 1] << 8 | (uint32_t)cfg[at + 2] << 16 |
				(uint32_t)cfg[at + 3] << 24;
		if (head == 0 || head == 0xffffffffu)
			return;
		if ((head & 0xffffu) == ACS_CAP_ID) {
			d->acs = GDR_ACS_READ;
			d->acs_ctrl = (unsigned)cfg[at + 6] | (unsigned)cfg[at + 7] << 8;
			return;
		}
		unsigned next = (head >> 20) & 0xffcu;
		if (next < EXT_CAP_START || next <= at)
			return;
		at = next;
	}
}

static llmp_status add_dev(const char *root, struct gdr_node *n, const char *bus, char *msg, size_t len)
{
	if (!bus[0] || gdr_node_dev(n, bus))
		return LLMP_OK;
	struct gdr_pcidev *grown = realloc(n->devs, (n->ndevs + 1) * sizeof *grown);
	if (!grown)
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "reading PCI functions: out of memory");
	n->devs = grown;
	struct gdr_pcidev *d = &n->devs[n->ndevs++];
	memset(d, 0, sizeof *d);
	snprintf(d->bus, sizeof d->bus, "%s", bus);
	char path[PATH_LEN + 64], text[32];
	snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s/iommu_group/type", root, bus);
	if (discover_read_line(path, text, sizeof text) && strlen(text) < sizeof d->iommu)
		memcpy(d->iommu, text, strlen(text) + 1);
	snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s/config", root, bus);
	read_acs(path, d);
	return LLMP_OK;
}

static llmp_status add_pci(const char *root, struct gdr_node *n, const struct topo_pci *p, char *msg,
			   size_t len)
{
	llmp_status st = add_dev(root, n, p->bus, msg, len);
	for (unsigned i = 0; st == LLMP_OK && i < p->npcie; i++)
		st = add_dev(root, n, p->pcie[i], msg, len);
	return st;
}

static int has_uverbs(const char *root)
{
	char path[PATH_LEN];
	snprintf(path, sizeof path, "%s/dev/infiniband", root);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int found = 0;
	for (struct dirent *e; !found && (e = readdir(d));)
		found = strncmp(e->d_name, "uverbs", 6) == 0;
	closedir(d);
	return found;
}

llmp_status gdr_read_node(const char *root_dir, const struct topo_type *ty, struct gdr_node *n, char *msg,
			  size_t len)
{
	const char *root = root_dir && strcmp(root_dir, "/") ? root_dir : "";
	char path[PATH_LEN], text[256];
	memset(n, 0, sizeof *n);
	n->dmabuf_probe = -1;
	n->nvidia_peermem = exists(root, "/sys/module/nvidia_peermem/version");
	n->nv_peer_mem = exists(root, "/sys/kernel/mm/memory_peers/nv_mem/version") ||
			 exists(root, "/sys/kernel/mm/memory_peers/nv_mem_nc/version");
	snprintf(path, sizeof path, "%s/proc/sys/kernel/osrelease", root);
	if (discover_read_line(path, text, sizeof text) && strlen(text) < sizeof n->kernel)
		memcpy(n->kernel, text, strlen(text) + 1);
	snprintf(path, sizeof path, "%s/proc/driver/nvidia/version", root);
	if (discover_read_line(path, text, sizeof text))
		n->driver = strstr(text, "Open Kernel Module") ? GDR_DRIVER_OPEN : GDR_DRIVER_PROPRIETARY;
	/* Only where HCAs exist does a missing /dev/infiniband matter. */
	n->ib_devices = ty->nhcas ? has_uverbs(root) : -1;
	llmp_status st = LLMP_OK;
	for (unsigned g = 0; st == LLMP_OK && g < ty->ngpus; g++)
		st = add_pci(root, n, &ty->gpus[g].pci, msg, len);
	for (unsigned h = 0; st == LLMP_OK && h < ty->nhcas; h++)
		st = add_pci(root, n, &ty->hcas[h].pci, msg, len);
	if (st != LLMP_OK)
		gdr_node_free(n);
	return st;
}

llmp_status gdr_read_bridges_acs(const char *root_dir, struct gdr_pcidev **devs, unsigned *n, char *msg,
				 size_t len)
{
	const char *root = root_dir && strcmp(root_dir, "/") ? root_dir : "";
	char dir[PATH_LEN], path[PATH_LEN + 300], text[32];
	*devs = NULL;
	*n = 0;
	snprintf(dir, sizeof dir, "%s/sys/bus/pci/devices", root);
	DIR *d = opendir(dir);
	if (!d)
		return LLMP_OK;
	llmp_status st = LLMP_OK;
	for (struct dirent *e; st == LLMP_OK && (e = readdir(d));) {
		if (!topo_bus_id(e->d_name))
			continue;
		snprintf(path, sizeof path, "%s/%s/class", dir, e->d_name);
		if (!discover_read_line(path, text, sizeof text) || (strtoul(text, NULL, 16) >> 8) != 0x0604)
			continue;
		struct gdr_pcidev probe = { 0 };
		snprintf(path, sizeof path, "%s/%s/config", dir, e->d_name);
		read_acs(path, &probe);
		if (probe.acs == GDR_ACS_UNREAD)
			continue;
		struct gdr_pcidev *grown = realloc(*devs, (*n + 1) * sizeof *grown);
		if (!grown) {
			st = llmp_fail(LLMP_ERR_NOMEM, msg, len, "reading ACS: out of memory");
			break;
		}
		*devs = grown;
		probe.iommu[0] = '\0';
		memcpy(probe.bus, e->d_name, strlen(e->d_name) + 1); /* a bus id: 12 characters */
		(*devs)[(*n)++] = probe;
	}
	closedir(d);
	if (st != LLMP_OK) {
		free(*devs);
		*devs = NULL;
		*n = 0;
	}
	return st;
}
