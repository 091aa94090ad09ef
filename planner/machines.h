/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * machines.h - these layouts on these machines: the hosts of a topology
 * (topology/topo.h) with the tasks each runs, as the step model's machines
 * (auto_layout.h's struct chooser_machines). A layout is placed there
 * (placement.h), each dimension's network seconds come from cost.c, and
 * each pipeline stage's GPU from the node types' "gpu" (hetero.h). One
 * function for `llmp plan --topology` (cli/plan_place.c) and for srun's
 * --llm-parallel=auto and memory guard (plugin/model_machines.c), so both
 * score a layout alike. Not installed.
 */
#ifndef LLMP_MACHINES_H
#define LLMP_MACHINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_status.h>
#include "auto_layout.h"
#include "cost.h"
#include "step_model.h"
#include "topology/gpu_desc.h"
#include "topology/topo.h"

struct machines_cache; /* opaque: the last grid placed */

struct machines {
	const struct topo *t;
	char *const *hosts; /* in the order ranks are numbered (Slurm's) */
	size_t nhosts;
	const uint32_t *tasks;           /* on each host */
	uint32_t world, tasks_per_node;  /* tasks_per_node 0: uneven */
	bool renumber;                   /* --placement topology */
	const struct plan_model *model;  /* cost.c's view of the model; mbs from each layout */
	const struct gpu_desc *fallback; /* for node types without "gpu"; NULL: none (an error) */
	struct machines_cache *cache;    /* the last grid placed, reused; NULL: each placed anew */
};

/*
 * A cache of the last grid placed and its stages' GPUs, and of its network
 * at the last micro-batch size: --parallel auto asks for one grid with
 * every micro-batch size and recompute in a row, and placing is most of
 * the time. One cache may serve several machines (orders of the same
 * hosts): it knows which it was placed on. NULL when out of memory.
 */
struct machines_cache *machines_cache_new(void);
void machines_cache_free(struct machines_cache *c);

/*
 * chooser_machines' place with ctx a struct machines: checked layout l placed
 * on the machines, network_s its network seconds (tp, cp, ep, dp, pp) and
 * stage_gpus the GPU of each of its l->pp stages. msg may be NULL.
 */
llmp_status machines_place(void *ctx, const struct step_layout *l, double network_s[5],
			   struct gpu_desc *stage_gpus, char *msg, size_t len);

/* The machines as chooser_run_on's callback; valid while on is. */
struct chooser_machines machines_chooser(struct machines *on);

/*
 * The weakest GPU of the machines (hetero_weakest over every rank's, in
 * rank order), what bounds --parallel auto's search: a layout without
 * parallelism placed there, its one stage's GPU. An error when a rank's
 * node type says no "gpu" and there is no fallback.
 */
llmp_status machines_weakest(const struct machines *on, struct gpu_desc *weakest, char *msg, size_t len);

#endif /* LLMP_MACHINES_H */
