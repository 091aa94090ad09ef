/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan_machines.c - the hosts of a topology file as the step model's
 * machines (topology/auto_layout.h): a layout placed there, each
 * dimension's network seconds from cost.c, and the GPU of each pipeline
 * stage from the node types' "gpu" (topology/hetero.h). Used for a given
 * layout and for every candidate of --parallel auto alike.
 */
#define _POSIX_C_SOURCE 200809L

#include "llmp_cli.h"
#include "topology/cost.h"
#include "topology/hetero.h"
#include "topology/placement.h"

/* The grid of l, as the option grammar would say it. */
static void spec_of(const struct step_layout *l, llmp_spec *spec)
{
	llmp_spec_init(spec);
	spec->size[LLMP_DIM_TP] = l->tp, spec->size[LLMP_DIM_PP] = l->pp, spec->size[LLMP_DIM_CP] = l->cp;
	spec->size[LLMP_DIM_EP] = l->ep, spec->etp = l->etp, spec->vpp = l->vpp > 1 ? l->vpp : 0;
	spec->given = 1u << LLMP_KEY_TP | 1u << LLMP_KEY_PP | 1u << LLMP_KEY_CP | 1u << LLMP_KEY_EP |
		      1u << LLMP_KEY_ETP | (l->vpp > 1 ? 1u << LLMP_KEY_VPP : 0);
}

llmp_status cli_machines_place(void *ctx, const struct step_layout *l, double network_s[5],
			       struct gpu_desc *stage_gpus, char *msg, size_t len)
{
	const struct cli_machines *on = ctx;
	llmp_spec spec;
	spec_of(l, &spec);
	llmp_plan *plan = NULL;
	struct topo_placement p = { 0 };
	struct topo_cost cost;
	struct topo_model model = *on->model;
	model.mbs = l->mbs;
	llmp_status st = llmp_plan_create(&spec, on->world, on->tasks_per_node, &plan, msg, len);
	if (st == LLMP_OK)
		st = topo_place(on->t, plan, on->hosts, on->nhosts, on->tasks, on->renumber, &p, msg, len);
	if (st == LLMP_OK)
		st = topo_cost(on->t, plan, &p, &model, &cost, msg, len);
	if (st == LLMP_OK)
		st = hetero_stage_gpus(on->t, &p, plan, on->fallback, stage_gpus, msg, len);
	if (st == LLMP_OK) {
		static const enum llmp_axis axes[5] = { LLMP_AXIS_TP, LLMP_AXIS_CP, LLMP_AXIS_EP,
							LLMP_AXIS_DP, LLMP_AXIS_PP };
		for (int k = 0; k < 5; k++)
			network_s[k] = 0;
		for (size_t d = 0; d < cost.ndims; d++)
			for (int k = 0; k < 5; k++)
				if (cost.dim[d].axis == axes[k])
					network_s[k] = cost.dim[d].seconds;
	}
	topo_placement_free(&p);
	llmp_plan_destroy(plan);
	return st;
}
