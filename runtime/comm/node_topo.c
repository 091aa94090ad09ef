/* SPDX-License-Identifier: BSD-3-Clause */
/* node_topo.c - each node's topology published in the init fence, and merged (node_topo.h); open_memstream needs the _GNU_SOURCE the runtime is built with. */
#include "node_topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llmp/llmp_env.h>
#include "topology/discover/discover.h"
#include "common/fail.h"
#include "wireup.h"

#define KEY_TOPOLOGY "llmp.topology"
#define FAILED_MARK '!' /* a value that starts with it is the reason discovery failed */

static bool asked(void)
{
	const char *v = getenv(LLMP_ENV_TOPOLOGY_GATHER);
	return v && strcmp(v, "1") == 0;
}

llmp_status rt_topology_publish(llmp_ctx *ctx)
{
	if (!asked() || ctx->local_rank != 0)
		return LLMP_OK;
	struct topo t;
	char why[LLMP_MSG_MAX], *text = NULL;
	size_t n = 0;
	llmp_status st = topo_discover("/", getenv("SLURM_TOPOLOGY_ADDR"),
				       getenv("SLURM_TOPOLOGY_ADDR_PATTERN"), true, &t, why + 1,
				       sizeof why - 1);
	if (st == LLMP_OK) {
		FILE *mem = open_memstream(&text, &n);
		if (!mem || topo_write_json(&t, mem) != 0 || fclose(mem) != 0) {
			free(text);
			text = NULL;
		}
		topo_free(&t);
	}
	if (!text) {
		/* The others learn why rather than find nothing. */
		why[0] = FAILED_MARK;
		if (st == LLMP_OK)
			snprintf(why + 1, sizeof why - 1, "out of memory writing its topology");
	}
	pmix_value_t value = { .type = PMIX_STRING };
	value.data.string = text ? text : why;
	st = rt_wireup_put(ctx, KEY_TOPOLOGY, &value);
	free(text);
	return st;
}

llmp_status rt_topology_gather(llmp_ctx *ctx, struct topo *job, char *msg, size_t len)
{
	llmp_status st = LLMP_OK;
	memset(job, 0, sizeof *job);
	if (!asked())
		return llmp_fail(LLMP_ERR_STATE, msg, len,
				 "the job's topology is gathered only when " LLMP_ENV_TOPOLOGY_GATHER
				 "=1 at llmp_init");
	for (uint32_t r = 0; st == LLMP_OK && r < ctx->world; r++) {
		pmix_value_t *v = NULL;
		if (rt_wireup_get(ctx, r, KEY_TOPOLOGY, &v) != PMIX_SUCCESS) {
			if (v)
				PMIX_VALUE_RELEASE(v);
			continue; /* not a node's first rank */
		}
		if (v->type != PMIX_STRING || !v->data.string) {
			st = llmp_fail(LLMP_ERR_WIREUP, msg, len,
				       "rank %u published a topology that is not text", r);
		} else if (v->data.string[0] == FAILED_MARK) {
			st = llmp_fail(LLMP_ERR_IO, msg, len, "rank %u could not discover its node: %s", r,
				       v->data.string + 1);
		} else {
			struct topo node;
			char name[32], why[LLMP_MSG_MAX];
			snprintf(name, sizeof name, "rank %u", r);
			st = topo_read_text(v->data.string, strlen(v->data.string), name, &node, why,
					    sizeof why);
			if (st == LLMP_OK) {
				st = topo_merge(job, &node, why, sizeof why);
				topo_free(&node);
			}
			if (st != LLMP_OK)
				llmp_fail(st, msg, len, "%s", why);
		}
		PMIX_VALUE_RELEASE(v);
	}
	if (st != LLMP_OK)
		topo_free(job);
	return st;
}
