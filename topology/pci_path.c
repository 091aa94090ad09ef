/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pci_path.c - NCCL's reading of a node's PCIe tree (NVIDIA/nccl
 * src/graph/xml.cc, ncclTopoGetXmlFromSys). NCCL does not keep every bridge
 * of a sysfs path: it keeps every second one counted from the device up,
 * which turns a PCIe switch (an upstream port over one downstream port per
 * device) into one node holding both devices. Two devices behind one switch
 * are then PIX, where comparing whole chains would say PXB; and it keys
 * CPUs by NUMA node, so two root ports of one NUMA node, or an unknown NUMA
 * node on both, are PHB.
 *
 * Broadcom's Gen4/Gen5 switches that show up as two levels are merged
 * into one as NCCL does (src/graph/topo.cc, ncclTopoFlattenBcmSwitches),
 * where discovery read the bridges' ids (a file does not carry them).
 */
#define _POSIX_C_SOURCE 200809L
#include "pci_path.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * Broadcom PEX Gen4 and Gen5 switches in base mode show up as a switch
 * over switches of the same ids; NCCL fuses such a child into its parent
 * (topo.cc ncclTopoFlattenBcmSwitches; the masks as NCCL 2.28 writes them:
 * vendor 0x1000, device 0xc010 or 0xc030, subsystem vendor 0x1000).
 */
static bool bcm_switch(uint64_t id)
{
	return (id & 0xfffffffffffff000ull) == 0x1000c0101000a000ull ||
	       (id & 0xfffffffffffff000ull) == 0x1000c03010000000ull;
}

unsigned topo_nccl_parents(const struct topo_pci *pci, unsigned up[TOPO_PCIE_MAX])
{
	unsigned n = 0;
	/* Bridges pcie[npcie-2], pcie[npcie-4], ...: each walk of two levels from the last node. */
	for (unsigned left = pci->npcie; left >= 2; left -= 2) {
		unsigned i = left - 2;
		uint64_t id = pci->pcie_id[i];
		/* A Broadcom switch takes over its sub-switch of the same ids, nearer the device. */
		if (n && id && bcm_switch(id) && pci->pcie_id[up[n - 1]] == id)
			n--;
		up[n++] = i;
	}
	return n;
}

enum topo_path topo_nccl_path(const struct topo_pci *a, const struct topo_pci *b, int *common)
{
	if (common)
		*common = -1;
	if (a->bus[0] && strcmp(a->bus, b->bus) == 0)
		return TOPO_PATH_LOC;
	/* NCCL's <cpu> nodes are keyed by NUMA node; -1 is one node of its own. */
	if ((a->numa < 0 ? -1 : a->numa) != (b->numa < 0 ? -1 : b->numa))
		return TOPO_PATH_SYS;
	unsigned ua[TOPO_PCIE_MAX], ub[TOPO_PCIE_MAX];
	unsigned na = topo_nccl_parents(a, ua), nb = topo_nccl_parents(b, ub);
	/* The nearest node of a's that is also one of b's; a bus id sits at one place in the tree. */
	for (unsigned i = 0; i < na; i++)
		for (unsigned j = 0; j < nb; j++)
			if (strcmp(a->pcie[ua[i]], b->pcie[ub[j]]) == 0) {
				if (common)
					*common = (int)(na - 1 - i);
				return i == 0 && j == 0 ? TOPO_PATH_PIX : TOPO_PATH_PXB;
			}
	return TOPO_PATH_PHB;
}

static const char *const path_names[] = { "LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
					  "P2C", "PXN", "PHB", "SYS", "NET", "DIS" };

const char *topo_path_name(enum topo_path p)
{
	return (unsigned)p < sizeof path_names / sizeof path_names[0] ? path_names[p] : "?";
}

bool topo_path_parse_level(const char *text, enum topo_path *level)
{
	for (unsigned i = 0; i <= TOPO_PATH_SYS; i++)
		if (strcmp(text, path_names[i]) == 0) {
			*level = (enum topo_path)i;
			return true;
		}
	if (text[0] < '0' || text[0] > '9')
		return false;
	/* Before NCCL 2.12 the levels were numbered; NCCL maps them and clamps at 5. */
	static const enum topo_path old[] = { TOPO_PATH_LOC, TOPO_PATH_PIX, TOPO_PATH_PXB,
					      TOPO_PATH_PHB, TOPO_PATH_SYS, TOPO_PATH_SYS };
	long v = strtol(text, NULL, 0);
	*level = old[v > 5 || v < 0 ? 5 : v];
	return true;
}

enum topo_path topo_gdr_level_of(const char *text)
{
	enum topo_path level = TOPO_GDR_LEVEL_DEFAULT;
	if (text && *text && !topo_path_parse_level(text, &level))
		level = TOPO_GDR_LEVEL_DEFAULT; /* NCCL ignores it too */
	return level;
}

int topo_nccl_nearest_hca(const struct topo_type *ty, unsigned g, bool usable_only)
{
	int best = -1, best_common = -1;
	enum topo_path best_path = TOPO_PATH_DIS;
	for (unsigned h = 0; h < ty->nhcas; h++) {
		if (usable_only && !topo_hca_usable(&ty->hcas[h]))
			continue;
		int common;
		enum topo_path p = topo_nccl_path(&ty->gpus[g].pci, &ty->hcas[h].pci, &common);
		if (best < 0 || p < best_path || (p == best_path && common > best_common)) {
			best = (int)h;
			best_path = p;
			best_common = common;
		}
	}
	return best;
}
