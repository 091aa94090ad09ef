/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_topo_write.c - a node type written as NCCL_TOPO_FILE XML, the tree
 * NCCL itself builds from sysfs (pci_path.c: every second bridge from a
 * device up is a node, CPUs keyed by NUMA node). Written from the rules of
 * NCCL's parser (nccl_topo_check.c, doc/gpudirect.md): spaces, one element
 * per line, no declaration, nothing NCCL detects itself (gdr, dev, rank,
 * sm).
 */
#define _POSIX_C_SOURCE 200809L
#include "nccl_topo.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "pci_path.h"

/* A <pci> element: a bridge NCCL keeps, or a GPU or HCA. */
struct item {
	char bus[TOPO_BUS_MAX];
	char parent[TOPO_BUS_MAX]; /* "" under the CPU */
	int numa;
	const char *cls; /* NULL: a bridge */
};

struct out {
	char *buf;
	size_t cap, used;
	bool full;
};

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = o->used < o->cap ? vsnprintf(o->buf + o->used, o->cap - o->used, fmt, ap) : -1;
	va_end(ap);
	if (k < 0 || (size_t)k >= o->cap - o->used)
		o->full = true;
	else
		o->used += (size_t)k;
}

static int by_bus(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->bus, ((const struct item *)b)->bus);
}

/* Add bus under parent; the same bus twice must agree. */
static llmp_status add(struct item *v, unsigned *n, const char *bus, const char *parent, int numa,
		       const char *cls, char *msg, size_t len)
{
	for (unsigned i = 0; i < *n; i++) {
		if (strcmp(v[i].bus, bus) != 0)
			continue;
		if (strcmp(v[i].parent, parent) != 0 || v[i].numa != numa)
			return llmp_fail(
				LLMP_ERR_ARG, msg, len,
				"NCCL topology: %s sits under %s (NUMA %d) for one device and under %s "
				"(NUMA %d) for another",
				bus, v[i].parent[0] ? v[i].parent : "the CPU", v[i].numa,
				parent[0] ? parent : "the CPU", numa);
		return LLMP_OK;
	}
	if (*n >= NCCL_XML_MAX_NODES)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "NCCL topology: more than NCCL's %d XML nodes",
				 NCCL_XML_MAX_NODES);
	struct item *it = &v[(*n)++];
	snprintf(it->bus, sizeof it->bus, "%s", bus);
	snprintf(it->parent, sizeof it->parent, "%s", parent);
	it->numa = numa;
	it->cls = cls;
	return LLMP_OK;
}

static llmp_status add_device(struct item *v, unsigned *n, const struct topo_pci *p, const char *cls,
			      const char *what, char *msg, size_t len)
{
	if (!topo_bus_id(p->bus))
		return llmp_fail(LLMP_ERR_ARG, msg, len, "NCCL topology: %s has no PCI address", what);
	unsigned up[TOPO_PCIE_MAX];
	unsigned k = topo_nccl_parents(p, up);
	int numa = p->numa < 0 ? -1 : p->numa;
	llmp_status st = add(v, n, p->bus, k ? p->pcie[up[0]] : "", numa, cls, msg, len);
	for (unsigned i = 0; st == LLMP_OK && i < k; i++)
		st = add(v, n, p->pcie[up[i]], i + 1 < k ? p->pcie[up[i + 1]] : "", numa, NULL, msg, len);
	return st;
}

static const char *hca_class(const struct topo_hca *h)
{
	for (unsigned p = 0; p < h->nports; p++)
		if (strcmp(h->ports[p].link, "Ethernet") == 0)
			return "0x020000";
	return "0x020700";
}

/* The children of parent (and, at the top, of NUMA node numa), depth levels in. */
static llmp_status put_children(struct out *o, const struct item *v, unsigned n, const char *parent, int numa,
				unsigned depth, const char *link_speed, unsigned link_width, char *msg,
				size_t len)
{
	unsigned children = 0;
	for (unsigned i = 0; i < n; i++) {
		if (strcmp(v[i].parent, parent) != 0 || (!parent[0] && v[i].numa != numa))
			continue;
		if (++children > NCCL_XML_MAX_CHILDREN)
			return llmp_fail(LLMP_ERR_ARG, msg, len,
					 "NCCL topology: more than NCCL's %d children under %s",
					 NCCL_XML_MAX_CHILDREN, parent[0] ? parent : "a CPU");
		put(o, "%*s<pci busid=\"%s\" class=\"%s\"", (int)(2 * depth), "", v[i].bus,
		    v[i].cls ? v[i].cls : "0x060400");
		if (!v[i].cls) {
			put(o, " link_speed=\"%s\" link_width=\"%u\">\n", link_speed, link_width);
			llmp_status st = put_children(o, v, n, v[i].bus, numa, depth + 1, link_speed,
						      link_width, msg, len);
			if (st != LLMP_OK)
				return st;
			put(o, "%*s</pci>\n", (int)(2 * depth), "");
		} else {
			put(o, "/>\n");
		}
	}
	return LLMP_OK;
}

llmp_status nccl_topo_write(const struct topo_type *ty, const char *link_speed, unsigned link_width,
			    char *buf, size_t cap, size_t *used, char *msg, size_t len)
{
	if (!link_speed[0] || strlen(link_speed) > NCCL_XML_MAX_STR || strpbrk(link_speed, "\"<>&\t\n"))
		return llmp_fail(LLMP_ERR_ARG, msg, len, "NCCL topology: bad link speed");
	struct item *v = calloc(NCCL_XML_MAX_NODES, sizeof *v);
	if (!v)
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "NCCL topology: out of memory");
	unsigned n = 0;
	llmp_status st = LLMP_OK;
	char what[TOPO_NAME_MAX + 16];
	for (unsigned g = 0; st == LLMP_OK && g < ty->ngpus; g++) {
		snprintf(what, sizeof what, "GPU %u", g);
		st = add_device(v, &n, &ty->gpus[g].pci, "0x030200", what, msg, len);
	}
	for (unsigned h = 0; st == LLMP_OK && h < ty->nhcas; h++)
		st = add_device(v, &n, &ty->hcas[h].pci, hca_class(&ty->hcas[h]), ty->hcas[h].name, msg, len);
	/* NCCL's system node and one per CPU count too. */
	if (st == LLMP_OK && n + 1 + ty->numa_nodes + 1 > NCCL_XML_MAX_NODES)
		st = llmp_fail(LLMP_ERR_ARG, msg, len, "NCCL topology: more than NCCL's %d XML nodes",
			       NCCL_XML_MAX_NODES);
	struct out o = { .buf = buf, .cap = cap };
	if (st == LLMP_OK) {
		qsort(v, n, sizeof *v, by_bus);
		put(&o, "<system version=\"1\">\n");
		/* NUMA -1 (unknown) first, as a CPU of its own, then 0, 1, ... */
		for (int numa = -1; st == LLMP_OK && numa < (int)ty->numa_nodes; numa++) {
			bool any = false;
			for (unsigned i = 0; i < n; i++)
				any |= !v[i].parent[0] && v[i].numa == numa;
			if (!any)
				continue;
			put(&o, "  <cpu numaid=\"%d\">\n", numa);
			st = put_children(&o, v, n, "", numa, 2, link_speed, link_width, msg, len);
			put(&o, "  </cpu>\n");
		}
		put(&o, "</system>\n");
	}
	free(v);
	if (st == LLMP_OK && o.full)
		st = llmp_fail(LLMP_ERR_ARG, msg, len, "NCCL topology: more than %zu bytes", cap);
	*used = st == LLMP_OK ? o.used : 0;
	return st;
}
