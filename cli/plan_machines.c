/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan_machines.c - the hosts of a topology file as the step model's
 * machines (planner/auto_layout.h): a layout placed there, each
 * dimension's network seconds from cost.c, and the GPU of each pipeline
 * stage from the node types' "gpu" (planner/hetero.h). Used for a given
 * layout and for every candidate of --parallel auto alike.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "llmp_cli.h"
#include "common/fail.h"
#include "planner/cost.h"
#include "planner/hetero.h"
#include "planner/placement.h"

/* The grid of l, as the option grammar would say it. */
static void spec_of(const struct step_layout *l, llmp_spec *spec)
{
	llmp_spec_init(spec);
	spec->size[LLMP_DIM_TP] = l->tp, spec->size[LLMP_DIM_PP] = l->pp, spec->size[LLMP_DIM_CP] = l->cp;
	spec->size[LLMP_DIM_EP] = l->ep, spec->etp = l->etp, spec->vpp = l->vpp > 1 ? l->vpp : 0;
	spec->given = 1u << LLMP_KEY_TP | 1u << LLMP_KEY_PP | 1u << LLMP_KEY_CP | 1u << LLMP_KEY_EP |
		      1u << LLMP_KEY_ETP | (l->vpp > 1 ? 1u << LLMP_KEY_VPP : 0);
}

static bool same_grid(const struct step_layout *a, const struct step_layout *b)
{
	return a->tp == b->tp && a->pp == b->pp && a->cp == b->cp && a->ep == b->ep && a->etp == b->etp &&
	       a->vpp == b->vpp;
}

struct cli_machines_cache {
	bool valid;
	const struct cli_machines *owner; /* the machines (an order of the hosts) it was placed on */
	struct step_layout key;
	llmp_plan *plan;
	struct topo_placement p;
	struct gpu_desc *stage_gpus;
	llmp_status st;
	char msg[LLMP_MSG_MAX];
	unsigned mbs; /* network_s is this micro-batch size's; 0: none yet */
	double network_s[5];
};

static void forget(struct cli_machines_cache *c)
{
	topo_placement_free(&c->p);
	llmp_plan_destroy(c->plan);
	free(c->stage_gpus);
	memset(c, 0, sizeof *c);
}

struct cli_machines_cache *cli_machines_cache_new(void)
{
	return calloc(1, sizeof(struct cli_machines_cache));
}

void cli_machines_cache_free(struct cli_machines_cache *c)
{
	if (c)
		forget(c);
	free(c);
}

/*
 * The plan of l's grid placed on the machines and each stage's GPU: kept
 * for the next call, since --parallel auto asks for one grid with every
 * micro-batch size and recompute in a row (the placement is most of the
 * time, not the cost).
 */
static llmp_status placed(const struct cli_machines *on, const struct step_layout *l,
			  struct cli_machines_cache *c, char *msg, size_t len)
{
	if (c->valid && c->owner == on && same_grid(&c->key, l))
		return c->st == LLMP_OK ? LLMP_OK : llmp_fail(c->st, msg, len, "%s", c->msg);
	forget(c);
	c->key = *l, c->valid = true, c->owner = on;
	llmp_spec spec;
	spec_of(l, &spec);
	c->stage_gpus = calloc(l->pp, sizeof *c->stage_gpus);
	c->st = c->stage_gpus ? llmp_plan_create(&spec, on->world, on->tasks_per_node, &c->plan, c->msg,
						 sizeof c->msg)
			      : llmp_fail(LLMP_ERR_NOMEM, c->msg, sizeof c->msg, "out of memory");
	if (c->st == LLMP_OK)
		c->st = topo_place(on->t, c->plan, on->hosts, on->nhosts, on->tasks, on->renumber, &c->p,
				   c->msg, sizeof c->msg);
	if (c->st == LLMP_OK)
		c->st = hetero_stage_gpus(on->t, &c->p, c->plan, on->fallback, c->stage_gpus, c->msg,
					  sizeof c->msg);
	return c->st == LLMP_OK ? LLMP_OK : llmp_fail(c->st, msg, len, "%s", c->msg);
}

llmp_status cli_machines_place(void *ctx, const struct step_layout *l, double network_s[5],
			       struct gpu_desc *stage_gpus, char *msg, size_t len)
{
	const struct cli_machines *on = ctx;
	struct cli_machines_cache own = { 0 }, *c = on->cache ? on->cache : &own;
	struct topo_cost cost;
	struct topo_model model = *on->model;
	model.mbs = l->mbs;
	llmp_status st = placed(on, l, c, msg, len);
	if (st == LLMP_OK && c->mbs == l->mbs) { /* the same but for recompute, which moves no bytes */
		memcpy(network_s, c->network_s, sizeof c->network_s);
		memcpy(stage_gpus, c->stage_gpus, l->pp * sizeof *stage_gpus);
		forget(&own);
		return LLMP_OK;
	}
	if (st == LLMP_OK)
		st = topo_cost(on->t, c->plan, &c->p, &model, &cost, msg, len);
	if (st == LLMP_OK) {
		static const enum llmp_axis axes[5] = { LLMP_AXIS_TP, LLMP_AXIS_CP, LLMP_AXIS_EP,
							LLMP_AXIS_DP, LLMP_AXIS_PP };
		for (int k = 0; k < 5; k++)
			network_s[k] = 0;
		for (size_t d = 0; d < cost.ndims; d++)
			for (int k = 0; k < 5; k++)
				if (cost.dim[d].axis == axes[k])
					network_s[k] = cost.dim[d].seconds;
		memcpy(stage_gpus, c->stage_gpus, l->pp * sizeof *stage_gpus);
		memcpy(c->network_s, network_s, sizeof c->network_s);
		c->mbs = l->mbs;
	}
	forget(&own);
	return st;
}
