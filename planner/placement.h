/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * placement.h - where each rank of a plan runs: its host, its GPU and its
 * HCA, chosen from the topology (topo.h). A pure function: every task
 * computes it from the same inputs and gets the same answer, with no
 * message and no RPC.
 *
 * Within a node, the tasks Slurm put there are ordered by the dimensions
 * that move the most bytes, tp first, then cp, ep, dp, pp (a tp group's
 * ranks side by side), and given the node's GPUs in locality order (NUMA
 * node, then PCIe bridges, then bus id), so a tp group shares a PCIe switch
 * or an NVLink pair where the node has them; each task's HCA is a usable one
 * nearest its GPU, the least used among equally near ones.
 *
 * Across nodes, ranks follow Slurm's task ids (RANK = SLURM_PROCID, which
 * Lightning, ColossalAI and enroot read) unless renumbering is asked for:
 * then the nodes are taken in topology order, NVLink domain first, then
 * the switch tree from the top (siblings together), so consecutive ranks
 * (tp, then cp, ep, dp, pp in Megatron's order) stay in one NVLink domain,
 * one node, under one leaf as far as the job's nodes allow.
 */
#ifndef LLMP_PLACEMENT_H
#define LLMP_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_plan.h>
#include <llmp/llmp_status.h>
#include "topology/topo.h"

/* Where one rank runs. */
struct plan_slot {
	uint32_t task;  /* Slurm's task id (SLURM_PROCID) */
	uint32_t host;  /* index in the job's host list */
	size_t node;    /* index in the topology's nodes */
	uint32_t local; /* Slurm's local task id on the host */
	int gpu;        /* index among the node type's GPUs (PCI bus order); -1: none left */
	int hca;        /* index among its HCAs; -1: none usable */
};

struct plan_placement {
	uint32_t world;
	struct plan_slot *rank; /* by grid rank */
	uint32_t *rank_of_task; /* by task id */
};

/*
 * Place plan on the job: hosts[0..nhosts) in Slurm's order, with
 * tasks[i] tasks on hosts[i] in block order (task ids counted host by
 * host), summing to the plan's world. Every host must be a node of t.
 * renumber: grid ranks follow topology order instead of task ids.
 */
llmp_status plan_place(const struct topo *t, const llmp_plan *plan, char *const *hosts, size_t nhosts,
		       const uint32_t *tasks, bool renumber, struct plan_placement *out, char *msg,
		       size_t len);
void plan_placement_free(struct plan_placement *p);

/*
 * A fingerprint of the placement (which task holds which grid rank): equal
 * placements give equal values, so tasks that computed theirs apart can
 * compare them (FNV-1a, 64 bits, over the world and rank_of_task).
 */
uint64_t plan_placement_digest(const struct plan_placement *p);

/*
 * One node's share: the GPU (index among ty's, PCI bus order; -1 none
 * left) and HCA (-1 none usable) of each of the n tasks whose grid ranks
 * are ranks[] (in the node's own order), as plan_place gives them. The
 * plugin calls it for the tasks of its node alone.
 */
llmp_status plan_place_node(const struct topo_type *ty, const llmp_plan *plan, const uint32_t *ranks,
			    uint32_t n, int *gpu, int *hca, char *msg, size_t len);

/* How far a group's members are from one another: the smallest thing holding them all. */
enum plan_span {
	PLAN_SPAN_GPU,
	PLAN_SPAN_NODE,
	PLAN_SPAN_NVLINK_DOMAIN,
	PLAN_SPAN_LEAF,
	PLAN_SPAN_TREE,
	PLAN_SPAN_NONE
};
const char *plan_span_name(enum plan_span s);
enum plan_span plan_group_span(const struct topo *t, const struct plan_placement *p, const uint32_t *members,
			       size_t n);

#endif /* LLMP_PLACEMENT_H */
