/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_place.h - the whole step placed on a topology that describes every
 * node of it (job_place.c): each task's grid rank, GPU and HCA, the host of
 * grid rank 0, a digest every task can compare, and advice when a tensor-,
 * context- or expert-parallel group leaves its node. Every node computes it
 * from the same inputs and gets the same answer, with no message sent.
 *
 * Needs no Slurm: the step's facts come in plugin_job_inputs, so the unit
 * tests and the plugin share it.
 */
#ifndef LLMP_JOB_PLACE_H
#define LLMP_JOB_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_plan.h>
#include "node_place.h"
#include "planner/placement.h"

struct plugin_job_inputs {
	const char *file; /* a topology naming every host of the step */
	const char *text; /* its bytes, read already (bounded.h); NULL: read file here */
	size_t textlen;
	size_t max_hosts;           /* SLURM_STEP_NODELIST names at most this many (0: 2^20) */
	const char *nodelist;       /* SLURM_STEP_NODELIST */
	const char *tasks_per_node; /* SLURM_STEP_TASKS_PER_NODE */
	uint32_t node_id;           /* this node's index in nodelist */
	const uint32_t *tasks;      /* Slurm task ids of this node's tasks, by local task id */
	uint32_t ntasks;
	bool renumber; /* grid ranks in topology order (--llm-placement=topology) */
};

struct plugin_job_place {
	uint32_t *rank;            /* by local task id: the task's grid rank */
	char master[64];           /* the host of grid rank 0 (MASTER_ADDR) */
	uint64_t digest;           /* plan_placement_digest of the whole step */
	char advice[LLMP_MSG_MAX]; /* plan_span_advice; "" when none */
};

/*
 * Place the step. On success np holds this node's GPUs and HCAs as
 * plugin_node_place gives them, and jp the rest; returns 0. Returns -1
 * with msg saying why (a file that cannot be read, a host it does not
 * name, tasks not in block order): np and jp then hold nothing.
 */
int plugin_job_place(struct plugin_node_place *np, struct plugin_job_place *jp,
		     const struct plugin_job_inputs *in, const llmp_plan *plan, char *msg, size_t len);
void plugin_job_place_free(struct plugin_job_place *jp);

#endif /* LLMP_JOB_PLACE_H */
