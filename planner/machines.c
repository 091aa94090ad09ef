/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * machines.c - these layouts on these machines (machines.h): a layout's
 * grid placed on the hosts, its network seconds from cost.c and each
 * pipeline stage's GPU from the node types' "gpu" (hetero.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "machines.h"

#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "hetero.h"
#include "placement.h"

static bool same_grid(const struct step_layout *a, const struct step_layout *b)
{
	return a->tp == b->tp && a->pp == b->pp && a->cp == b->cp && a->ep == b->ep && a->etp == b->etp &&
	       a->vpp == b->vpp;
}

struct machines_cache {
	bool valid;
	const struct machines *owner; /* the machines (an order of the hosts) it was placed on */
	struct step_layout key;
	llmp_plan *plan;
	struct plan_placement p;
	struct gpu_desc *stage_gpus;
	llmp_status st;
	char msg[LLMP_MSG_MAX];
	unsigned mbs; /* network_s is this micro-batch size's; 0: none yet */
	double network_s[5];
};

static void forget(struct machines_cache *c)
{
	plan_placement_free(&c->p);
	llmp_plan_destroy(c->plan);
	free(c->stage_gpus);
	memset(c, 0, sizeof *c);
}

struct machines_cache *machines_cache_new(void)
{
	return calloc(1, sizeof(struct machines_cache));
}

void machines_cache_free(struct machines_cache *c)
{
	if (c)
		forget(c);
	free(c);
}

/* The plan of spec placed on the machines, and the GPU of each of its pp stages into c. */
static llmp_status place_spec(const struct machines *on, const llmp_spec *spec, unsigned pp,
			      struct machines_cache *c)
{
	c->stage_gpus = calloc(pp, sizeof *c->stage_gpus);
	c->st = c->stage_gpus ? llmp_plan_create(spec, on->world, on->tasks_per_node, &c->plan, c->msg,
						 sizeof c->msg)
			      : llmp_fail(LLMP_ERR_NOMEM, c->msg, sizeof c->msg, "out of memory");
	if (c->st == LLMP_OK)
		c->st = plan_place(on->t, c->plan, on->hosts, on->nhosts, on->tasks, on->renumber, &c->p,
				   c->msg, sizeof c->msg);
	if (c->st == LLMP_OK)
		c->st = hetero_stage_gpus(on->t, &c->p, c->plan, on->fallback, c->stage_gpus, c->msg,
					  sizeof c->msg);
	return c->st;
}

/* l's grid placed on the machines, from the cache when it is the last one placed there. */
static llmp_status placed(const struct machines *on, const struct step_layout *l, struct machines_cache *c,
			  char *msg, size_t len)
{
	if (!(c->valid && c->owner == on && same_grid(&c->key, l))) {
		forget(c);
		c->key = *l, c->valid = true, c->owner = on;
		llmp_spec spec;
		step_layout_spec(l, NULL, false, &spec);
		place_spec(on, &spec, l->pp, c);
	}
	return c->st == LLMP_OK ? LLMP_OK : llmp_fail(c->st, msg, len, "%s", c->msg);
}

llmp_status machines_place(void *ctx, const struct step_layout *l, double network_s[5],
			   struct gpu_desc *stage_gpus, char *msg, size_t len)
{
	const struct machines *on = ctx;
	struct machines_cache own = { 0 }, *c = on->cache ? on->cache : &own;
	struct plan_cost cost;
	struct plan_model model = *on->model;
	model.mbs = l->mbs;
	llmp_status st = placed(on, l, c, msg, len);
	if (st == LLMP_OK && c->mbs == l->mbs) { /* the same but for recompute, which moves no bytes */
		memcpy(network_s, c->network_s, sizeof c->network_s);
		memcpy(stage_gpus, c->stage_gpus, l->pp * sizeof *stage_gpus);
		forget(&own);
		return LLMP_OK;
	}
	if (st == LLMP_OK)
		st = plan_cost(on->t, c->plan, &c->p, &model, &cost, msg, len);
	if (st == LLMP_OK) {
		static const enum llmp_axis axes[5] = { LLMP_AXIS_TP, LLMP_AXIS_CP, LLMP_AXIS_EP,
							LLMP_AXIS_DP, LLMP_AXIS_PP };
		for (int k = 0; k < 5; k++) {
			network_s[k] = 0;
			for (size_t d = 0; d < cost.ndims; d++)
				if (cost.dim[d].axis == axes[k])
					network_s[k] = cost.dim[d].seconds;
		}
		memcpy(stage_gpus, c->stage_gpus, l->pp * sizeof *stage_gpus);
		memcpy(c->network_s, network_s, sizeof c->network_s);
		c->mbs = l->mbs;
	}
	forget(&own);
	return st;
}

struct chooser_machines machines_chooser(struct machines *on)
{
	return (struct chooser_machines){ .place = machines_place, .ctx = on };
}

llmp_status machines_weakest(const struct machines *on, struct gpu_desc *weakest, char *msg, size_t len)
{
	struct machines_cache c = { 0 };
	llmp_spec spec;
	llmp_spec_init(&spec); /* tp = pp = 1: one stage, every rank in it */
	llmp_status st = place_spec(on, &spec, 1, &c);
	if (st == LLMP_OK)
		*weakest = c.stage_gpus[0];
	else
		llmp_fail(st, msg, len, "%s", c.msg);
	forget(&c);
	return st;
}
