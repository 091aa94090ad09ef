/* SPDX-License-Identifier: BSD-3-Clause */
/* hetero.c - pipeline stages on mixed GPU kinds and the layers of each (hetero.h). */
#define _POSIX_C_SOURCE 200809L
#include "hetero.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"

static double rate(const struct gpu_desc *g)
{
	return g->bf16_flops * g->efficiency;
}

void hetero_weakest(struct gpu_desc *acc, const struct gpu_desc *g)
{
	if (rate(g) < rate(acc)) {
		acc->bf16_flops = g->bf16_flops, acc->efficiency = g->efficiency;
		snprintf(acc->name, sizeof acc->name, "%s", g->name);
	}
	if (g->mem_bytes < acc->mem_bytes)
		acc->mem_bytes = g->mem_bytes;
	if (g->hbm_gbps < acc->hbm_gbps)
		acc->hbm_gbps = g->hbm_gbps;
	if (g->layer_overhead_s > acc->layer_overhead_s)
		acc->layer_overhead_s = g->layer_overhead_s;
	if (g->nvlink_gbps < acc->nvlink_gbps)
		acc->nvlink_gbps = g->nvlink_gbps;
	if (g->net_gbps < acc->net_gbps)
		acc->net_gbps = g->net_gbps;
	if (g->domain < acc->domain)
		acc->domain = g->domain;
	/* The larger memory allowance of the two, part by part; an unset fixed part is the default's. */
	if (acc->alloc_fixed_given || g->alloc_fixed_given) {
		double a = step_alloc_fixed(acc), b = step_alloc_fixed(g);
		acc->alloc_fixed_bytes = a > b ? a : b, acc->alloc_fixed_given = true;
	}
	if (g->alloc_share_given && (!acc->alloc_share_given || g->alloc_share > acc->alloc_share))
		acc->alloc_share = g->alloc_share, acc->alloc_share_given = true;
}

bool hetero_mixed(const struct gpu_desc *stage_gpus, unsigned pp)
{
	for (unsigned k = 1; k < pp; k++)
		if (stage_gpus[k].mem_bytes != stage_gpus[0].mem_bytes ||
		    rate(&stage_gpus[k]) != rate(&stage_gpus[0]))
			return true;
	return false;
}

llmp_status hetero_stage_gpus(const struct topo *t, const struct plan_placement *p, const llmp_plan *plan,
			      const struct gpu_desc *fallback, struct gpu_desc *stage_gpus, char *msg,
			      size_t len)
{
	unsigned pp = llmp_plan_size(plan, LLMP_AXIS_PP);
	struct gpu_desc *types = calloc(t->ntypes ? t->ntypes : 1, sizeof *types);
	bool *seen = calloc(pp, sizeof *seen);
	llmp_status st = types && seen ? LLMP_OK : llmp_fail(LLMP_ERR_NOMEM, msg, len, "out of memory");
	/* Each type's GPU parsed once (the file reader checked the text). */
	for (unsigned k = 0; st == LLMP_OK && k < t->ntypes; k++) {
		const struct topo_type *ty = &t->types[k];
		char why[LLMP_MSG_MAX];
		if (ty->gpu[0] && gpu_desc_parse(ty->gpu, &types[k], why, sizeof why) != LLMP_OK)
			st = llmp_fail(LLMP_ERR_ARG, msg, len, "node type %s: \"gpu\": %s", ty->name, why);
		else if (!ty->gpu[0] && fallback)
			types[k] = *fallback;
		else if (!ty->gpu[0])
			types[k].mem_bytes = -1; /* asked for only if a rank runs there */
	}
	for (uint32_t r = 0; st == LLMP_OK && r < p->world; r++) {
		uint32_t c[LLMP_NAXES];
		st = llmp_plan_coords(plan, r, c);
		if (st != LLMP_OK) {
			st = llmp_fail(st, msg, len, "rank %u has no coordinates", r);
			break;
		}
		const struct topo_node *node = &t->nodes[p->rank[r].node];
		const struct gpu_desc *g = &types[node->type];
		if (g->mem_bytes < 0) {
			st = llmp_fail(LLMP_ERR_ARG, msg, len,
				       "node type %s (host %s) does not say its \"gpu\": add it to the "
				       "topology file, or give --gpu",
				       t->types[node->type].name, node->host);
			break;
		}
		unsigned k = c[LLMP_AXIS_PP];
		if (!seen[k])
			stage_gpus[k] = *g, seen[k] = true;
		else
			hetero_weakest(&stage_gpus[k], g);
	}
	free(types);
	free(seen);
	return st;
}

llmp_status hetero_split(const struct model_desc *m, const struct gpu_desc *stage_gpus,
			 const struct step_layout *l, unsigned *layers, char *msg, size_t len)
{
	unsigned pp = l->pp, vpp = l->vpp ? l->vpp : 1, total = (unsigned)m->layers;
	if (total % vpp || total < pp * vpp)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len,
				 "layers=%u cannot give each of pp=%u stages a multiple of vpp=%u layers",
				 total, pp, vpp);
	struct step_layout trial = *l;
	trial.stage_layers = layers;
	for (unsigned k = 0; k < pp; k++)
		layers[k] = vpp;
	for (unsigned left = total - pp * vpp; left; left -= vpp) {
		unsigned best = 0;
		bool best_fits = false;
		double best_s = 0, best_over = 0;
		for (unsigned k = 0; k < pp; k++) {
			double seconds;
			struct step_stage st;
			layers[k] += vpp;
			step_stage_eval(m, &stage_gpus[k], &trial, k, &seconds, &st);
			layers[k] -= vpp;
			bool fits = st.total <= stage_gpus[k].mem_bytes;
			double over = st.total / stage_gpus[k].mem_bytes;
			bool better = k == 0 || (fits && !best_fits) ||
				      (fits == best_fits && (fits ? seconds < best_s : over < best_over));
			if (better)
				best = k, best_fits = fits, best_s = seconds, best_over = over;
		}
		layers[best] += vpp;
	}
	return LLMP_OK;
}

bool hetero_megatron_args(const unsigned *layers, unsigned pp, char *buf, size_t len)
{
	bool even = true, middle_even = true;
	for (unsigned k = 1; k < pp; k++)
		even &= layers[k] == layers[0];
	for (unsigned k = 2; k + 1 < pp; k++)
		middle_even &= layers[k] == layers[1];
	if (even) {
		snprintf(buf, len, "%s", "");
		return true;
	}
	if (middle_even) {
		snprintf(buf, len,
			 "--decoder-first-pipeline-num-layers %u --decoder-last-pipeline-num-layers %u",
			 layers[0], layers[pp - 1]);
		return true;
	}
	size_t used = 0;
	buf[0] = '\0';
	for (unsigned k = 0; k < pp && used < len; k++) {
		int n = snprintf(buf + used, len - used, "%s%u", k ? "," : "", layers[k]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	return false;
}
