/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * node_place.h - the GPU and HCA of each task of this node, from the
 * topology (node_place.c). Needs no Slurm: the step's facts come in
 * plugin_node_inputs, so the unit tests and the plugin share it.
 */
#ifndef LLMP_NODE_PLACE_H
#define LLMP_NODE_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_plan.h>
#include "topology/topo.h"

/*
 * The most bytes of a topology file the plugin reads: a 16,384-GPU cluster
 * written node by node, its switches listed host by host, takes about
 * 1 MiB (tests/security.bats writes one); 16 times that leaves room for
 * larger clusters and keeps a parse's transient memory (about 36 bytes a
 * byte of JSON at worst, in the task) well below a GPU node's.
 */
#define PLUGIN_TOPOLOGY_MAX ((size_t)16 << 20)

struct plugin_node_inputs {
	const char *file; /* LLMP_TOPOLOGY_FILE, else the site's topology=; NULL: discover */
	const char *text; /* its bytes, read already (bounded.h); NULL: read file here */
	size_t textlen;
	const char *host;           /* this node as Slurm names it (SLURMD_NODENAME) */
	const char *addr, *pattern; /* SLURM_TOPOLOGY_ADDR and _PATTERN, for discovery */
	const char *sysfs;          /* NULL: "/" */
	const uint32_t *ranks;      /* the grid ranks of this node's tasks, by local task id */
	uint32_t ntasks;
};

struct plugin_node_place {
	struct topo topo;
	const struct topo_type *type; /* this node's, in topo */
	uint32_t n;
	int *gpu; /* by local task id: index among type's GPUs (PCI bus order), -1 none */
	int *hca; /* by local task id: index among type's HCAs, -1 none */
};

/*
 * Read or discover this node and place its tasks. Returns 0, or -1 with a
 * sentence for the job's output in warning (np then holds nothing).
 */
int plugin_node_place(struct plugin_node_place *np, const struct plugin_node_inputs *in,
		      const llmp_plan *plan, char *warning, size_t len);
void plugin_node_place_free(struct plugin_node_place *np);

/* NCCL_IB_HCA's value for the node: "=mlx5_0,mlx5_3,..." of the HCAs its tasks use; -1 when none. */
int plugin_node_hca_list(const struct plugin_node_place *np, char *buf, size_t len);

#endif /* LLMP_NODE_PLACE_H */
