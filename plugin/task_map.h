/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * task_map.h - where the step's tasks really run (task_map.c): the host of
 * task 0 (MASTER_ADDR) and this node's rank among the step's nodes
 * (NODE_RANK), whatever the distribution.
 *
 * Slurm numbers a step's nodes in node order (SLURM_NODEID, the order of
 * SLURM_STEP_NODELIST), but lays its tasks out as asked: block, cyclic,
 * plane, an arbitrary host list (-m arbitrary with -w or SLURM_HOSTFILE),
 * or, from 26.05 with a topology plugin, in topology order. Task 0 is then
 * not always on the first listed node. NODE_RANK here is the node's place
 * when the step's nodes are ordered by their lowest task id, so the node of
 * task 0 is NODE_RANK 0 (as torchrun counts: rank = node rank x tasks per
 * node + local rank, for an even layout).
 *
 * The whole map comes from the first of: mpi/pmix's SLURM_PMIX_MAPPING_SERV
 * (any distribution), SLURM_HOSTFILE under -m arbitrary. Without either,
 * node order is assumed and checked against this node's own tasks and
 * SLURM_DISTRIBUTION; when they contradict it, the step cannot know where
 * task 0 runs and this says so. Needs no Slurm: unit-tested.
 */
#ifndef LLMP_TASK_MAP_H
#define LLMP_TASK_MAP_H

#include <stddef.h>
#include <stdint.h>

struct plugin_task_map_inputs {
	const char *pmix_map;      /* SLURM_PMIX_MAPPING_SERV, or NULL */
	const char *hostfile;      /* SLURM_HOSTFILE's path (messages only), or NULL */
	const char *hostfile_text; /* its bytes, read already (bounded.h), or NULL */
	size_t hostfile_len;
	const char *distribution;   /* SLURM_DISTRIBUTION ("block", "cyclic:block", "arbitrary"), or NULL */
	const char *nodelist;       /* SLURM_STEP_NODELIST */
	const char *tasks_per_node; /* SLURM_STEP_TASKS_PER_NODE, or NULL */
	uint32_t nnodes;            /* S_JOB_NNODES */
	uint32_t node_id;           /* S_JOB_NODEID */
	uint32_t world;             /* S_JOB_TOTAL_TASK_COUNT */
	const uint32_t *tasks;      /* this node's task ids, by local id (S_JOB_LOCAL_TO_GLOBAL_ID) */
	uint32_t ntasks;
};

struct plugin_task_map {
	char master[256];     /* host of task 0: MASTER_ADDR */
	uint32_t master_node; /* its index in SLURM_STEP_NODELIST */
	uint32_t node_rank;   /* this node's NODE_RANK */
	const char *source;   /* what told: "SLURM_PMIX_MAPPING_SERV", "SLURM_HOSTFILE", "node order" */
};

/*
 * Fill map; 0, or -1 with msg naming the variable or the fact at fault
 * (a malformed map, one that puts this node's tasks elsewhere, task 0 not
 * where node order puts it and nothing to say where it is).
 */
int plugin_task_map(const struct plugin_task_map_inputs *in, struct plugin_task_map *map, char *msg,
		    size_t len);

#endif /* LLMP_TASK_MAP_H */
