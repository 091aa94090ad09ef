/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pci_path.h - how far apart two devices of one node are, in NCCL's own
 * path types, and NCCL_NET_GDR_LEVEL's values (NVIDIA/nccl src/graph/topo.h,
 * paths.cc, xml.cc; doc/gpudirect.md). topo_pci_distance (topo.h) stays the
 * nvidia-smi reading for people; this one decides HCAs and GPUDirect RDMA.
 */
#ifndef LLMP_PCI_PATH_H
#define LLMP_PCI_PATH_H

#include <stdbool.h>

#include "topo.h"

/* NCCL's path types, with NCCL's values (src/graph/topo.h): order matters, farther is larger. */
enum topo_path {
	TOPO_PATH_LOC = 0,
	TOPO_PATH_NVL,
	TOPO_PATH_NVB,
	TOPO_PATH_C2C,
	TOPO_PATH_PIX,
	TOPO_PATH_PXB,
	TOPO_PATH_P2C,
	TOPO_PATH_PXN,
	TOPO_PATH_PHB,
	TOPO_PATH_SYS,
	TOPO_PATH_NET,
	TOPO_PATH_DIS,
};

/* NCCL's default NCCL_NET_GDR_LEVEL. */
#define TOPO_GDR_LEVEL_DEFAULT TOPO_PATH_PXB

/*
 * The PCI nodes NCCL builds above a device from its sysfs chain (pcie[],
 * root port first): NCCL walks up two components at a time, so the bridge
 * right above a device (a switch's downstream port) is skipped and the one
 * above it (the switch's upstream port) is the node; the walk ends at the
 * host bridge, under the CPU of the device's NUMA node. Writes the indices
 * into pci->pcie of those nodes, nearest first, into up[] and returns how
 * many (0: the device hangs on the CPU).
 */
unsigned topo_nccl_parents(const struct topo_pci *pci, unsigned up[TOPO_PCIE_MAX]);

/*
 * NCCL's path type between two PCI devices of a node: LOC (one device),
 * PIX (both right under one PCI node), PXB (they meet at a PCI node
 * higher up), PHB (only at the CPU: one NUMA node, unknown on both
 * counting as one), SYS (across CPUs). When common is not NULL, it
 * receives how many PCI nodes lie above the one where they meet (the
 * deeper, the nearer within one type; -1 when they meet at the CPU or
 * beyond).
 */
enum topo_path topo_nccl_path(const struct topo_pci *a, const struct topo_pci *b, int *common);

/*
 * The HCA of ty nearest GPU g in NCCL's path types, deeper meeting point
 * first on a tie, the lowest index after that; usable_only leaves out the
 * HCAs topo_hca_usable refuses. -1 when there is none.
 */
int topo_nccl_nearest_hca(const struct topo_type *ty, unsigned g, bool usable_only);

/* "PIX" ... as NCCL prints them; "?" out of range. */
const char *topo_path_name(enum topo_path p);

/*
 * NCCL_NET_GDR_LEVEL's value as NCCL 2.28 reads it: a name LOC..SYS, or a
 * legacy integer 0-5 (LOC PIX PXB PHB SYS SYS; larger counts as 5). False
 * for anything else (NCCL would then silently keep its default).
 */
bool topo_path_parse_level(const char *text, enum topo_path *level);

/*
 * The level NCCL uses for NCCL_NET_GDR_LEVEL=text (NULL or "": unset): its
 * default, text's level, or the default again where NCCL would ignore text.
 */
enum topo_path topo_gdr_level_of(const char *text);

#endif /* LLMP_PCI_PATH_H */
