/* SPDX-License-Identifier: BSD-3-Clause */
/* node_gdr.c - each node's GPUDirect RDMA line published in the init fence, and gathered (node_gdr.h). */
#include "node_gdr.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <llmp/llmp_env.h>
#include "topology/discover/discover.h"
#include "topology/discover/gdr_read.h"
#include "common/fail.h"
#include "topology/gdr.h"
#include "wireup.h"

#define KEY_GDR "llmp.gdr"

static bool asked(void)
{
	const char *v = getenv(LLMP_ENV_TOPOLOGY_GATHER);
	return v && strcmp(v, "1") == 0;
}

/* "HOST: GPUDirect RDMA on U of P GPU/HCA pairs[; GPU B / HCA: why]". */
static void judge_node(const struct topo *t, char *line, size_t len)
{
	const struct topo_type *ty = &t->types[0];
	struct gdr_node facts;
	char why[LLMP_MSG_MAX];
	enum topo_path level = TOPO_GDR_LEVEL_DEFAULT;
	const char *env = getenv("NCCL_NET_GDR_LEVEL");
	if (env && *env && !topo_path_parse_level(env, &level))
		level = TOPO_GDR_LEVEL_DEFAULT; /* NCCL ignores it too */
	if (gdr_read_node("/", ty, &facts, why, sizeof why) != LLMP_OK) {
		snprintf(line, len, "%s: GPUDirect RDMA not judged: %s", t->nodes[0].host, why);
		return;
	}
	struct rlimit lim;
	if (getrlimit(RLIMIT_MEMLOCK, &lim) == 0)
		facts.memlock = lim.rlim_cur == RLIM_INFINITY ? GDR_MEMLOCK_UNLIMITED
							      : (unsigned long long)lim.rlim_cur;
	unsigned pairs = 0, used = 0;
	char first[LLMP_MSG_MAX] = "";
	for (unsigned g = 0; g < ty->ngpus; g++) {
		int h = topo_nccl_nearest_hca(ty, g, true);
		if (h < 0)
			continue;
		struct gdr_verdict v;
		gdr_pair_verdict(&facts, &ty->gpus[g].pci, &ty->hcas[h].pci, level, &v);
		pairs++;
		used += v.outcome == GDR_USED;
		if (v.outcome != GDR_USED && !first[0]) {
			char text[320];
			gdr_verdict_text(&facts, &v, level, text, sizeof text);
			snprintf(first, sizeof first, "; GPU %.15s / %.31s: %s", ty->gpus[g].pci.bus,
				 ty->hcas[h].name, text);
		}
	}
	gdr_node_free(&facts);
	if (!pairs)
		snprintf(line, len, "%.64s: no GPU with a usable HCA", t->nodes[0].host);
	else
		snprintf(line, len, "%.64s: GPUDirect RDMA on %u of %u GPU/HCA pairs%s", t->nodes[0].host,
			 used, pairs, first);
}

llmp_status rt_gdr_publish(llmp_ctx *ctx)
{
	if (!asked() || ctx->local_rank != 0)
		return LLMP_OK;
	struct topo t;
	char line[2 * LLMP_MSG_MAX], why[LLMP_MSG_MAX];
	if (topo_discover("/", NULL, NULL, false, &t, why, sizeof why) == LLMP_OK) {
		judge_node(&t, line, sizeof line);
		topo_free(&t);
	} else {
		snprintf(line, sizeof line, "a node: GPUDirect RDMA not judged: %s", why);
	}
	pmix_value_t value = { .type = PMIX_STRING };
	value.data.string = line;
	return rt_wireup_put(ctx, KEY_GDR, &value);
}

llmp_status rt_gdr_gather(llmp_ctx *ctx, FILE *out, char *msg, size_t len)
{
	if (!asked())
		return llmp_fail(LLMP_ERR_STATE, msg, len,
				 "GPUDirect RDMA is gathered only when " LLMP_ENV_TOPOLOGY_GATHER
				 "=1 at llmp_init");
	for (uint32_t r = 0; r < ctx->world; r++) {
		pmix_value_t *v = NULL;
		if (rt_wireup_get(ctx, r, KEY_GDR, &v) == PMIX_SUCCESS && v->type == PMIX_STRING &&
		    v->data.string)
			fprintf(out, "  %s\n", v->data.string);
		if (v)
			PMIX_VALUE_RELEASE(v);
	}
	return LLMP_OK;
}
