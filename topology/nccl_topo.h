/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_topo.h - a node type as an NCCL_TOPO_FILE, and the grammar NCCL
 * 2.28's parser accepts, checked before a file is handed to NCCL
 * (NVIDIA/nccl src/graph/xml.cc and xml.h; doc/gpudirect.md). A file NCCL
 * cannot parse fails every communicator's init, so none is ever given to it
 * unchecked.
 */
#ifndef LLMP_NCCL_TOPO_H
#define LLMP_NCCL_TOPO_H

#include <stdbool.h>
#include <stddef.h>

#include <llmp/llmp_status.h>
#include "topo.h"

/* NCCL's limits (src/graph/xml.h, topo.h). */
#define NCCL_XML_MAX_NODES 256
#define NCCL_XML_MAX_CHILDREN 128
#define NCCL_XML_MAX_ATTRS 16
#define NCCL_XML_MAX_STR 255

/*
 * The link written on bridges when the site does not say: PCIe Gen4 x16.
 * It only matters for a bridge NCCL cannot find in sysfs (a VM's
 * re-created switch); NCCL reads a real one's from sysfs.
 */
#define NCCL_TOPO_LINK_SPEED "16.0 GT/s PCIe"
#define NCCL_TOPO_LINK_WIDTH 16u

/*
 * Write ty as NCCL's topology XML into buf: <system version="1">, one
 * <cpu numaid> per NUMA node, the PCI nodes NCCL would build from each
 * GPU's and HCA's chain (topology/pci_path.h), each device a leaf <pci>
 * with its class. Bridges carry link_speed and link_width (NCCL cannot
 * read them for a bridge that exists only in the file, as in a VM);
 * devices leave them to NCCL, which reads sysfs. Never gdr, dev, rank or
 * sm: NCCL would take them over its own detection. One element per line,
 * spaces, no declaration. A bridge shared by devices of two NUMA nodes,
 * or more than NCCL's 256 nodes: an error naming it.
 */
llmp_status nccl_topo_write(const struct topo_type *ty, const char *link_speed, unsigned link_width,
			    char *buf, size_t cap, size_t *used, char *msg, size_t len);

/* One element of a parsed file. */
struct nccl_xml_node {
	char name[NCCL_XML_MAX_STR + 1];
	int parent; /* index; -1 for the root */
	unsigned nattrs;
	char attr[NCCL_XML_MAX_ATTRS][2][NCCL_XML_MAX_STR + 1];
};

struct nccl_xml {
	struct nccl_xml_node *nodes;
	unsigned n;
};

/*
 * Check text as NCCL 2.28's parser reads it, and parse it: comments
 * allowed; an XML declaration, a tab, a tag split across lines, a
 * <system> other than version="1", more than 256 nodes, 128 children, 16
 * attributes or 255-character names and values, unbalanced tags: an
 * error saying "line N: what". With generated, also any gdr, dev, rank or
 * sm attribute (NCCL would trust them over its detection).
 */
llmp_status nccl_topo_check(const char *text, size_t n, bool generated, struct nccl_xml *x, char *msg,
			    size_t len);
void nccl_xml_free(struct nccl_xml *x);
/* The value of attribute key of node i, or NULL. */
const char *nccl_xml_attr(const struct nccl_xml *x, unsigned i, const char *key);

#endif /* LLMP_NCCL_TOPO_H */
