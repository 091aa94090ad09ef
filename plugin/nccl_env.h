/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_env.h - what the plugin tells NCCL about GPUDirect RDMA on this
 * node (nccl_env.c): NCCL_NET_GDR_LEVEL=LOC where a task's GPU/HCA path
 * is known to break GDR (ACS redirect, a translating IOMMU: a slower job
 * instead of a hang), and one line for the job's output naming a pair
 * that will not use it and why. Needs no Slurm; step.c sets the values.
 */
#ifndef LLMP_PLUGIN_NCCL_ENV_H
#define LLMP_PLUGIN_NCCL_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin/node_place.h"
#include "topology/gdr.h"

struct plugin_gdr {
	bool loc;                /* set NCCL_NET_GDR_LEVEL=LOC (the user set none) */
	char level[4];           /* NCCL_NET_GDR_LEVEL to set (the user set none); "" nothing */
	unsigned pairs;          /* the node's tasks with a GPU and an HCA */
	unsigned used;           /* of which NCCL will use GPUDirect RDMA */
	char line[LLMP_MSG_MAX]; /* for the job's output; "" when every pair uses it */
};

/*
 * Judge each task's GPU and HCA of np on facts. user_level is the task's
 * NCCL_NET_GDR_LEVEL (NULL or "" when unset: the site's site_level, else
 * NCCL's PXB; LOC may be set, and wins over the site's). host names the node in the line. -1 with the line saying why when
 * user_level is not a value NCCL reads.
 */
int plugin_gdr_judge(const struct plugin_node_place *np, const struct gdr_node *facts, const char *user_level,
		     const char *site_level, const char *host, struct plugin_gdr *out);

/*
 * Whether this node's sysfs hides the PCIe tree the topology file gives
 * its node type (a VM's flat bus, a host that shows less): some GPU of
 * file_type hangs under a PCI node in NCCL's reading (pci_path.h) but
 * seen, the node discovered from sysfs, has it under fewer or not at all.
 * Then NCCL_TOPO_FILE is worth writing; otherwise NCCL's own reading of
 * sysfs is as good and knows the links' real speeds.
 */
bool plugin_sysfs_hides(const struct topo_type *file_type, const struct topo_type *seen);

/*
 * Where the node's NCCL_TOPO_FILE goes: beside the layout file, with a
 * random token of its own (user_init draws it once for the node's tasks),
 * so that another user who sees the layout file's name cannot take this one
 * first; "" and -1 when there is no layout file.
 */
int plugin_nccl_topo_path(const char *layout_path, uint64_t token, char *buf, size_t len);

#endif /* LLMP_PLUGIN_NCCL_ENV_H */
