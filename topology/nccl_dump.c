/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_dump.c - NCCL's topology dump against llmp's prediction. In the dump
 * (NCCL_TOPO_DUMP_FILE, NVIDIA/nccl src/graph/topo.cc) each device is a
 * <pci busid> under the <pci> nodes NCCL kept and a <cpu numaid>; a GPU's
 * <gpu> child carries gdr (CUDA attribute 116), a NIC's <nic><net name gdr>
 * whether the NIC can register GPU memory (peer memory or dma-buf). llmp
 * predicts the first from the chains (pci_path.h) and the second from the
 * node's facts (gdr.h); every difference is a line.
 */
#define _POSIX_C_SOURCE 200809L
#include "nccl_dump.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct out {
	char *buf;
	size_t len, at;
	unsigned differ;
};

static void differ(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void differ(struct out *o, const char *fmt, ...)
{
	o->differ++;
	if (o->at + 1 >= o->len)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(o->buf + o->at, o->len - o->at, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k + 1 >= o->len - o->at) {
		o->at = o->len;
		return;
	}
	o->at += (size_t)k;
	o->buf[o->at++] = '\n';
	o->buf[o->at] = '\0';
}

/* The <pci> node of bus in x, or -1. */
static int find_pci(const struct nccl_xml *x, const char *bus)
{
	for (unsigned i = 0; i < x->n; i++) {
		const char *b = nccl_xml_attr(x, i, "busid");
		if (strcmp(x->nodes[i].name, "pci") == 0 && b && strcmp(b, bus) == 0)
			return (int)i;
	}
	return -1;
}

/* "0000:16:00.0 < cpu 0": the PCI nodes above node i in x, then its CPU. */
static void dump_chain(const struct nccl_xml *x, int i, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (int p = x->nodes[i].parent; p >= 0 && at < len; p = x->nodes[p].parent) {
		const char *v = strcmp(x->nodes[p].name, "pci") == 0   ? nccl_xml_attr(x, p, "busid")
				: strcmp(x->nodes[p].name, "cpu") == 0 ? nccl_xml_attr(x, p, "numaid")
								       : NULL;
		if (!v)
			continue;
		int k = snprintf(buf + at, len - at, "%s%s%s", at ? " < " : "",
				 strcmp(x->nodes[p].name, "cpu") == 0 ? "cpu " : "", v);
		at = k < 0 ? len : at + (size_t)k;
	}
}

static void predicted_chain(const struct topo_pci *p, char *buf, size_t len)
{
	unsigned up[TOPO_PCIE_MAX];
	unsigned k = topo_nccl_parents(p, up);
	size_t at = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < k && at < len; i++) {
		int w = snprintf(buf + at, len - at, "%s%s", i ? " < " : "", p->pcie[up[i]]);
		at = w < 0 ? len : at + (size_t)w;
	}
	if (at < len)
		snprintf(buf + at, len - at, "%scpu %d", k ? " < " : "", p->numa < 0 ? -1 : p->numa);
}

static void compare_place(const struct nccl_xml *x, const struct topo_pci *p, const char *what, struct out *o,
			  unsigned *compared)
{
	int i = find_pci(x, p->bus);
	if (i < 0)
		return; /* not on this rank's node, or not detected: NCCL trims what it does not see */
	char got[512], want[512];
	dump_chain(x, i, got, sizeof got);
	predicted_chain(p, want, sizeof want);
	(*compared)++;
	if (strcmp(got, want) != 0)
		differ(o, "%s %s: NCCL put it under %s, llmp predicted %s", what, p->bus, got, want);
}

void nccl_dump_compare(const struct nccl_xml *x, const struct topo_type *ty, const struct gdr_node *facts,
		       char *report, size_t len, unsigned *compared, unsigned *ndiffer)
{
	struct out o = { .buf = report, .len = len };
	if (len)
		report[0] = '\0';
	*compared = 0;
	for (unsigned g = 0; g < ty->ngpus; g++)
		compare_place(x, &ty->gpus[g].pci, "GPU", &o, compared);
	for (unsigned h = 0; h < ty->nhcas; h++)
		compare_place(x, &ty->hcas[h].pci, ty->hcas[h].name, &o, compared);
	bool capable = gdr_nic_capable(facts);
	for (unsigned i = 0; i < x->n; i++) {
		const char *gdr = nccl_xml_attr(x, i, "gdr");
		if (!gdr)
			continue;
		if (strcmp(x->nodes[i].name, "net") == 0) {
			const char *name = nccl_xml_attr(x, i, "name");
			bool ours = false;
			for (unsigned h = 0; name && h < ty->nhcas; h++)
				ours |= strcmp(ty->hcas[h].name, name) == 0;
			if (!ours)
				continue;
			(*compared)++;
			if ((strcmp(gdr, "1") == 0) != capable)
				differ(&o, "%s: NCCL set gdr=%s, llmp predicted %s", name, gdr,
				       capable ? "GPUDirect RDMA capable" : "not capable");
		} else if (strcmp(x->nodes[i].name, "gpu") == 0) {
			int p = x->nodes[i].parent;
			const char *bus = p >= 0 ? nccl_xml_attr(x, (unsigned)p, "busid") : NULL;
			(*compared)++;
			/* llmp's prediction: the CUDA driver's attribute 116 where it was read, else yes. */
			const struct gdr_pcidev *d = bus ? gdr_node_dev(facts, bus) : NULL;
			bool said = d && d->gpu_gdr != GDR_ATTR_UNKNOWN,
			     predicted = !said || d->gpu_gdr == GDR_ATTR_YES;
			if ((strcmp(gdr, "1") == 0) != predicted)
				differ(&o, "GPU %s: NCCL set gdr=%s, %s", bus ? bus : "?", gdr,
				       said ? (predicted
						       ? "but the CUDA driver reports GPUDirect RDMA supported (attribute 116)"
						       : "but the CUDA driver reports no GPUDirect RDMA (attribute 116)")
					    : "so the GPU reports no GPUDirect RDMA (CUDA attribute 116)");
		}
	}
	*ndiffer = o.differ;
}
