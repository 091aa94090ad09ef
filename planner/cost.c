/* SPDX-License-Identifier: BSD-3-Clause */
/* cost.c - the network cost of a placed layout per training step (cost.h). */
#define _POSIX_C_SOURCE 200809L
#include "cost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"

#define BYTES_ACT 2.0  /* bf16 activations and parameters */
#define BYTES_GRAD 4.0 /* fp32 gradient reduction */

llmp_status plan_model_parse(const char *text, struct plan_model *m, char *msg, size_t len)
{
	static const struct {
		const char *key;
		size_t offset;
		bool required;
	} keys[] = {
		{ "hidden", offsetof(struct plan_model, hidden), true },
		{ "layers", offsetof(struct plan_model, layers), true },
		{ "seq", offsetof(struct plan_model, seq), true },
		{ "mbs", offsetof(struct plan_model, mbs), true },
		{ "heads", offsetof(struct plan_model, heads), false },
		{ "kv-heads", offsetof(struct plan_model, kv_heads), false },
		{ "experts", offsetof(struct plan_model, experts), false },
		{ "topk", offsetof(struct plan_model, topk), false },
		{ "gbs", offsetof(struct plan_model, gbs), false },
	};
	char buf[512], shown[LLMP_SHOW_MAX];
	bool seen[sizeof keys / sizeof keys[0]] = { false };
	memset(m, 0, sizeof *m);
	if (strlen(text) >= sizeof buf)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: longer than %zu characters",
				 sizeof buf - 1);
	snprintf(buf, sizeof buf, "%s", text);
	char *save = NULL;
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		size_t k = 0;
		if (eq)
			*eq = '\0';
		while (k < sizeof keys / sizeof keys[0] && strcmp(keys[k].key, item) != 0)
			k++;
		if (k == sizeof keys / sizeof keys[0])
			return llmp_fail(
				LLMP_ERR_ARG, msg, len,
				"--model: unknown key '%s' (hidden, layers, seq, mbs, heads, kv-heads, experts, "
				"topk, gbs)",
				llmp_show(shown, item, strlen(item)));
		char *end = NULL;
		unsigned long long v = eq ? strtoull(eq + 1, &end, 10) : 0;
		if (!eq || !eq[1] || *end || v == 0 || v > (1ULL << 40) || eq[1] == '-' || eq[1] == '+')
			return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: %s= needs a positive integer",
					 keys[k].key);
		if (seen[k])
			return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: %s given twice", keys[k].key);
		seen[k] = true;
		*(double *)((char *)m + keys[k].offset) = (double)v;
	}
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
		if (keys[k].required && !seen[k])
			return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: %s= is missing", keys[k].key);
	if (m->kv_heads && !m->heads)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: kv-heads= needs heads=");
	if (m->heads && m->kv_heads > m->heads)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: kv-heads= is more than heads=");
	if (m->topk && !m->experts)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: topk= needs experts=");
	if (m->experts && !m->topk)
		m->topk = 2;
	return LLMP_OK;
}

/* ------------------------------------------------------------ bandwidth */

/*
 * GB/s a group of the given span gets between its members: the slowest
 * member's link, an HCA's rate divided among the ranks of its node that use
 * it (share[rank]).
 */
static double group_gbps(const struct topo *t, const struct plan_placement *p, const unsigned *share,
			 const uint32_t *members, size_t n, enum plan_span span)
{
	double gbps = 0;
	for (size_t i = 0; i < n; i++) {
		const struct plan_slot *s = &p->rank[members[i]];
		const struct topo_type *ty = &t->types[t->nodes[s->node].type];
		double here = 0;
		if (span == PLAN_SPAN_NODE || span == PLAN_SPAN_NVLINK_DOMAIN) {
			const struct topo_gpu *g = s->gpu >= 0 ? &ty->gpus[s->gpu] : NULL;
			bool nvlink = g &&
				      (g->nvlink == TOPO_NVLINK_SWITCH || g->nvlink == TOPO_NVLINK_PEERS);
			unsigned links = g && g->nvlinks ? g->nvlinks : 18;
			here = nvlink ? links * PLAN_GBPS_NVLINK_LINK : PLAN_GBPS_PCIE;
		} else if (s->hca >= 0) {
			const struct topo_hca *h = &ty->hcas[s->hca];
			for (unsigned k = 0; k < h->nports; k++)
				if (topo_port_usable(&h->ports[k]) && h->ports[k].gbps / 8.0 > here)
					here = h->ports[k].gbps / 8.0;
			here /= share[members[i]];
		}
		if (i == 0 || here < gbps)
			gbps = here;
	}
	return gbps;
}

/*
 * How many ranks of its host use each rank's HCA, by grid rank (malloc'd;
 * NULL when out of memory). A host's ranks are consecutive in p->rank
 * (placement.c).
 */
static unsigned *hca_share(const struct plan_placement *p)
{
	uint32_t world = p->world;
	unsigned *share = calloc(world ? world : 1, sizeof *share);
	for (uint32_t first = 0, last; share && first < world; first = last + 1) {
		for (last = first; last + 1 < world && p->rank[last + 1].host == p->rank[first].host;)
			last++;
		for (uint32_t r = first; r <= last; r++)
			for (uint32_t q = first; q <= last; q++)
				share[r] += p->rank[q].hca == p->rank[r].hca;
	}
	return share;
}

const char *plan_link_name(enum plan_link l)
{
	static const char *const names[] = { "NVLink", "PCIe", "IB leaf", "IB spine" };
	return (unsigned)l < PLAN_NLINKS ? names[l] : "?";
}

/* The link class a group of the given span crosses: inside a node, NVLink when all its GPUs have it. */
static enum plan_link link_of(const struct topo *t, const struct plan_placement *p, const uint32_t *members,
			      size_t n, enum plan_span span)
{
	switch (span) {
	case PLAN_SPAN_NVLINK_DOMAIN: return PLAN_LINK_NVLINK;
	case PLAN_SPAN_LEAF: return PLAN_LINK_IB_LEAF;
	case PLAN_SPAN_TREE:
	case PLAN_SPAN_NONE: return PLAN_LINK_IB_SPINE;
	default: break;
	}
	for (size_t i = 0; i < n; i++) {
		const struct plan_slot *s = &p->rank[members[i]];
		const struct topo_type *ty = &t->types[t->nodes[s->node].type];
		const struct topo_gpu *g = s->gpu >= 0 ? &ty->gpus[s->gpu] : NULL;
		if (!g || (g->nvlink != TOPO_NVLINK_SWITCH && g->nvlink != TOPO_NVLINK_PEERS))
			return PLAN_LINK_PCIE;
	}
	return PLAN_LINK_NVLINK;
}

/* --------------------------------------------------------------- bytes */

/* Bytes per rank and step that each dimension moves (cost.h). */
double plan_cost_bytes(enum llmp_axis axis, const llmp_plan *plan, const struct plan_model *m, double micro)
{
	double t = llmp_plan_size(plan, LLMP_AXIS_TP), c = llmp_plan_size(plan, LLMP_AXIS_CP),
	       e = llmp_plan_size(plan, LLMP_AXIS_EP), d = llmp_plan_size(plan, LLMP_AXIS_DP),
	       p = llmp_plan_size(plan, LLMP_AXIS_PP), te = llmp_plan_size(plan, LLMP_AXIS_ETP);
	double h = m->hidden, layers = m->layers / p, b = m->mbs, s = m->seq;
	double h_kv = m->heads ? h * (m->kv_heads ? m->kv_heads : m->heads) / m->heads : h;
	double act = b * (s / c) * h * BYTES_ACT;
	switch (axis) {
	case LLMP_AXIS_TP: return micro * layers * 8 * (t - 1) / t * act;
	case LLMP_AXIS_CP: return micro * layers * 3 * (c - 1) * 2 * b * (s / c) * (h_kv / t) * BYTES_ACT;
	case LLMP_AXIS_EP:
		return m->experts ? micro * layers * 4 * (b * s / (c * t)) * m->topk * h * BYTES_ACT *
					    (e - 1) / e
				  : 0;
	case LLMP_AXIS_PP: return 2 * micro * act / t;
	case LLMP_AXIS_DP: {
		/* Attention (Q, O; K, V), and the MLP (4h wide, two matrices) unless experts hold it. */
		double attention = m->layers * (2 * h * h + 2 * h * h_kv), mlp = m->layers * 8 * h * h;
		double n = d * c, dense = (attention + (m->experts ? 0 : mlp)) / (t * p);
		double bytes = (n - 1) / n * dense * (BYTES_GRAD + BYTES_ACT);
		double edp = llmp_plan_size(plan, LLMP_AXIS_EDP);
		if (m->experts && edp > 1)
			bytes += (edp - 1) / edp * (mlp * m->experts / (e * te * p)) *
				 (BYTES_GRAD + BYTES_ACT);
		return bytes;
	}
	default: return 0;
	}
}

static enum llmp_group group_of(enum llmp_axis axis, const llmp_plan *plan)
{
	switch (axis) {
	case LLMP_AXIS_TP: return LLMP_GROUP_TP;
	case LLMP_AXIS_CP: return LLMP_GROUP_CP;
	case LLMP_AXIS_EP: return LLMP_GROUP_EP;
	case LLMP_AXIS_PP: return LLMP_GROUP_PP;
	default: /* Megatron reduces gradients over dp and cp together */
		return llmp_plan_size(plan, LLMP_AXIS_CP) > 1 ? LLMP_GROUP_DP_CP : LLMP_GROUP_DP;
	}
}

llmp_status plan_cost(const struct topo *t, const llmp_plan *plan, const struct plan_placement *p,
		      const struct plan_model *m, struct plan_cost *out, char *msg, size_t len)
{
	static const enum llmp_axis axes[] = { LLMP_AXIS_TP, LLMP_AXIS_CP, LLMP_AXIS_EP, LLMP_AXIS_DP,
					       LLMP_AXIS_PP };
	uint32_t world = llmp_plan_world(plan);
	double d = llmp_plan_size(plan, LLMP_AXIS_DP), pp = llmp_plan_size(plan, LLMP_AXIS_PP);
	memset(out, 0, sizeof *out);
	out->microbatches = m->gbs ? m->gbs / (m->mbs * d) : 4 * pp;
	if (out->microbatches < 1)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: gbs=%.0f is less than mbs x dp = %.0f",
				 m->gbs, m->mbs * d);
	uint32_t *members = malloc((world ? world : 1) * sizeof *members);
	unsigned *share = hca_share(p);
	if (!members || !share) {
		free(members);
		free(share);
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "cost: out of memory");
	}
	for (size_t a = 0; a < sizeof axes / sizeof axes[0]; a++) {
		enum llmp_group kind = group_of(axes[a], plan);
		uint32_t groups = llmp_plan_group_count(plan, kind), size = llmp_plan_group_size(plan, kind);
		double bytes = plan_cost_bytes(axes[a], plan, m, out->microbatches);
		if (size <= 1 || bytes <= 0)
			continue;
		struct plan_cost_dim *dim = &out->dim[out->ndims++];
		*dim = (struct plan_cost_dim){ .axis = axes[a], .bytes = bytes, .span = PLAN_SPAN_GPU };
		for (uint32_t g = 0; g < groups; g++) {
			uint32_t n = 0;
			if (llmp_plan_group(plan, kind, g, members, world, &n) != LLMP_OK)
				continue;
			enum plan_span span = plan_group_span(t, p, members, n);
			double gbps = group_gbps(t, p, share, members, n, span);
			double seconds = gbps > 0 ? bytes / (gbps * 1e9) : 0;
			if (span >= PLAN_SPAN_TREE)
				dim->switch_bytes += bytes * n;
			if (span > PLAN_SPAN_NODE)
				dim->node_bytes += bytes * n;
			dim->link_bytes[link_of(t, p, members, n, span)] += bytes * n;
			if (g == 0 || seconds > dim->seconds || (gbps <= 0 && dim->gbps > 0)) {
				dim->seconds = seconds;
				dim->gbps = gbps;
				dim->span = span;
			}
		}
		out->seconds += dim->seconds;
		out->switch_bytes += dim->switch_bytes;
		out->node_bytes += dim->node_bytes;
	}
	free(members);
	free(share);
	return LLMP_OK;
}

/* ------------------------------------------------------------- advice */

static const char *span_words(enum plan_span s)
{
	switch (s) {
	case PLAN_SPAN_LEAF: return "under one leaf switch";
	case PLAN_SPAN_TREE: return "across leaf switches";
	default: return "with no switch between them in the topology";
	}
}

int plan_span_advice(const struct topo *t, const llmp_plan *plan, const struct plan_placement *p, char *buf,
		     size_t len)
{
	static const struct {
		enum llmp_group group;
		const char *what;
	} dims[] = { { LLMP_GROUP_TP, "tensor-parallel" },
		     { LLMP_GROUP_CP, "context-parallel" },
		     { LLMP_GROUP_EP, "expert-parallel" } };
	uint32_t world = p->world;
	uint32_t *members = malloc((world ? world : 1) * sizeof *members);
	unsigned *share = hca_share(p);
	int found = members && share ? 0 : -1;
	for (size_t d = 0; found == 0 && d < sizeof dims / sizeof dims[0]; d++) {
		uint32_t groups = llmp_plan_group_count(plan, dims[d].group);
		for (uint32_t g = 0, n = 0; found == 0 && g < groups; g++) {
			if (llmp_plan_group(plan, dims[d].group, g, members, world, &n) != LLMP_OK || n < 2)
				continue;
			enum plan_span span = plan_group_span(t, p, members, n);
			if (span <= PLAN_SPAN_NVLINK_DOMAIN)
				continue;
			double out = group_gbps(t, p, share, members, n, span);
			double in = group_gbps(t, p, share, members, n, PLAN_SPAN_NODE);
			char cost[160];
			if (out > 0)
				snprintf(cost, sizeof cost,
					 "%.1f GB/s per GPU over the network instead of %.1f GB/s inside a "
					 "node, %.0fx the time per byte",
					 out, in, in / out);
			else
				snprintf(cost, sizeof cost,
					 "the network, where the topology shows no usable HCA for some of "
					 "them (%.1f GB/s inside a node)",
					 in);
			char ranks[96];
			size_t off = 0;
			for (uint32_t i = 0; i < n && off < sizeof ranks; i++)
				off += (size_t)snprintf(ranks + off, sizeof ranks - off, "%s%u", i ? "," : "",
							members[i]);
			if (off >= sizeof ranks)
				strcpy(ranks + sizeof ranks - 5, ",...");
			snprintf(buf, len, "%s groups leave their node (%s group %u: ranks %s, %s): %s",
				 dims[d].what, llmp_group_name(dims[d].group), g, ranks, span_words(span),
				 cost);
			found = 1;
		}
	}
	free(members);
	free(share);
	return found;
}
