/* SPDX-License-Identifier: BSD-3-Clause */
/* wireup.c - PMIx: who we are, and one exchange with every other rank. */
#include "wireup.h"
#include "node_gdr.h"
#include "node_topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llmp/llmp_env.h>

#include "liveness.h"

#define KEY_UCX_ADDR "llmp.ucx.addr"
#define KEY_LAYOUT "llmp.layout"
#define KEY_PROCESS "llmp.process"
#define KEY_RANK "llmp.rank"
#define KEY_HOST "llmp.host"

/* Values PMIx may return for a size or a rank, whatever integer type it uses. */
static bool value_to_u32(const pmix_value_t *v, uint32_t *out)
{
	switch (v->type) {
	case PMIX_UINT32: *out = v->data.uint32; return true;
	case PMIX_UINT16: *out = v->data.uint16; return true;
	case PMIX_PROC_RANK: *out = v->data.rank; return true;
	case PMIX_INT:
		if (v->data.integer < 0)
			return false;
		*out = (uint32_t)v->data.integer;
		return true;
	default: return false;
	}
}

/*
 * key's value into *out. alone: this process is a singleton (no server),
 * and a key PMIx does not hold is alone_value: OpenPMIx 4.2 gives a
 * singleton its local size, the PMIx of a PyTorch image (seen on a lent H200
 * machine) answers PMIX_ERR_NOT_FOUND.
 */
static llmp_status get_u32(llmp_ctx *ctx, const pmix_proc_t *proc, const char *key, bool alone,
			   uint32_t alone_value, uint32_t *out)
{
	pmix_value_t *v = NULL;
	pmix_status_t rc = PMIx_Get(proc, key, NULL, 0, &v);
	if (rc == PMIX_ERR_NOT_FOUND && alone) {
		*out = alone_value;
		return LLMP_OK;
	}
	if (rc != PMIX_SUCCESS)
		return rt_fail(ctx, LLMP_ERR_WIREUP, "PMIx_Get(%s): %s", key, PMIx_Error_string(rc));
	bool ok = value_to_u32(v, out);
	PMIX_VALUE_RELEASE(v);
	if (!ok)
		return rt_fail(ctx, LLMP_ERR_WIREUP, "PMIx_Get(%s): unexpected value type", key);
	return LLMP_OK;
}

llmp_status rt_wireup_init(llmp_ctx *ctx)
{
	pmix_status_t rc = PMIx_Init(&ctx->me, NULL, 0);
	/* No server to reach: PMIx makes this process a singleton and says so. */
	if (rc != PMIX_SUCCESS && rc != PMIX_ERR_UNREACH)
		return rt_fail(ctx, LLMP_ERR_WIREUP, "PMIx_Init: %s", PMIx_Error_string(rc));
	ctx->pmix_up = true;
	ctx->rank = ctx->me.rank;

	pmix_proc_t job;
	PMIX_LOAD_PROCID(&job, ctx->me.nspace, PMIX_RANK_WILDCARD);
	bool alone = rc == PMIX_ERR_UNREACH;
	llmp_status st = get_u32(ctx, &job, PMIX_JOB_SIZE, alone, 1, &ctx->world);
	/* A world of one is alone on its node too, whatever PMIx keeps. */
	alone = alone || (st == LLMP_OK && ctx->world == 1);
	if (st == LLMP_OK)
		st = get_u32(ctx, &ctx->me, PMIX_LOCAL_RANK, alone, 0, &ctx->local_rank);
	if (st == LLMP_OK)
		st = get_u32(ctx, &job, PMIX_LOCAL_SIZE, alone, 1, &ctx->local_size);
	if (st != LLMP_OK)
		return st;
	if (ctx->world == 0 || ctx->rank >= ctx->world)
		return rt_fail(ctx, LLMP_ERR_WIREUP, "PMIx says rank %u of a world of %u", ctx->rank,
			       ctx->world);
	return LLMP_OK;
}

llmp_status rt_wireup_put(llmp_ctx *ctx, const char *key, pmix_value_t *value)
{
	pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, value);
	if (rc != PMIX_SUCCESS)
		return rt_fail(ctx, LLMP_ERR_WIREUP, "PMIx_Put(%s): %s", key, PMIx_Error_string(rc));
	return LLMP_OK;
}

/*
 * What every rank must agree on: the layout, and the placement that gave
 * the ranks. A rank that failed before the exchange publishes its error
 * ("!..."), which no other rank's text equals.
 */
static void agreed_text(const llmp_ctx *ctx, char *buf, size_t len)
{
	if (ctx->layout[0] == '!')
		snprintf(buf, len, "%s", ctx->layout);
	else
		snprintf(buf, len, "%s placement=%s", ctx->layout, ctx->placement);
}

llmp_status rt_wireup_exchange(llmp_ctx *ctx, const void *addr, size_t addrlen)
{
	pmix_value_t value;
	value.type = PMIX_BYTE_OBJECT;
	value.data.bo.bytes = (char *)addr; /* PMIx_Put copies it */
	value.data.bo.size = addrlen;
	llmp_status st = rt_wireup_put(ctx, KEY_UCX_ADDR, &value);
	if (st != LLMP_OK)
		return st;
	char agreed[sizeof ctx->layout + sizeof ctx->placement + 16];
	agreed_text(ctx, agreed, sizeof agreed);
	value.type = PMIX_STRING;
	value.data.string = agreed;
	if ((st = rt_wireup_put(ctx, KEY_LAYOUT, &value)) != LLMP_OK)
		return st;
	char process[160];
	rt_process_id(process, sizeof process);
	value.data.string = process;
	if ((st = rt_wireup_put(ctx, KEY_PROCESS, &value)) != LLMP_OK)
		return st;
	char host[64] = "";
	const char *node = getenv("SLURMD_NODENAME");
	if (node && *node)
		snprintf(host, sizeof host, "%s", node);
	else if (gethostname(host, sizeof host - 1) != 0)
		host[0] = '\0';
	value.data.string = host;
	if ((st = rt_wireup_put(ctx, KEY_HOST, &value)) != LLMP_OK)
		return st;
	if ((st = rt_topology_publish(ctx)) != LLMP_OK || (st = rt_gdr_publish(ctx)) != LLMP_OK)
		return st;
	value.type = PMIX_UINT32;
	value.data.uint32 = ctx->rank;
	if ((st = rt_wireup_put(ctx, KEY_RANK, &value)) != LLMP_OK)
		return st;

	pmix_status_t rc = PMIx_Commit();
	if (rc != PMIX_SUCCESS)
		return rt_fail(ctx, LLMP_ERR_WIREUP, "PMIx_Commit: %s", PMIx_Error_string(rc));

	/*
	 * A fence without PMIX_COLLECT_DATA does not wait for the other nodes
	 * on Slurm's PMIx (seen on the test cluster), and every rank reads
	 * every layout next, so the data is collected.
	 */
	pmix_info_t info[2];
	bool collect = true;
	int timeout = ctx->timeout_s >= 1 ? (int)ctx->timeout_s : 1;
	PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
	PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
	rt_log(ctx, RT_LOG_COMM, RT_LOG_DEBUG,
	       "wire-up: in the fence, waiting for all %u ranks to publish theirs (PMIx_Fence, timeout %d s)",
	       ctx->world, timeout);
	double start = rt_now();
	rc = PMIx_Fence(NULL, 0, info, 2);
	PMIX_INFO_DESTRUCT(&info[0]);
	PMIX_INFO_DESTRUCT(&info[1]);
	ctx->stats.init_fences++;
	rt_log(ctx, RT_LOG_COMM, RT_LOG_DEBUG, "wire-up: fence %s after %.3f s",
	       rc == PMIX_SUCCESS ? "done" : PMIx_Error_string(rc), rt_now() - start);
	if (rc != PMIX_SUCCESS)
		return rt_fail(ctx, LLMP_ERR_WIREUP,
			       "PMIx_Fence across %u ranks: %s (a rank did not join within %d s?)",
			       ctx->world, PMIx_Error_string(rc), timeout);
	return LLMP_OK;
}

/*
 * After the collecting fence every value is on this node: ask for nothing
 * remote (PMIX_OPTIONAL: the client's own cache). PMIx 4 (Debian 12) keeps
 * the fence's data there; PMIx 5 under Slurm's mpi/pmix (Debian 13's 5.0.7
 * with Slurm 24.11.5, sid's with 26.05.5) leaves it with the node's server,
 * the local slurmstepd, and the optional lookup answers PMIX_ERR_NOT_FOUND:
 * then the server is asked, PMIX_IMMEDIATE, so that a key the rank never
 * published (the topology and GDR keys come from one rank per node) is
 * not found at once instead of waited for until the timeout.
 */
pmix_status_t rt_wireup_get(llmp_ctx *ctx, uint32_t rank, const char *key, pmix_value_t **value)
{
	pmix_proc_t peer;
	pmix_info_t info[2];
	bool yes = true;
	int timeout = ctx->timeout_s >= 1 ? (int)ctx->timeout_s : 1;
	PMIX_LOAD_PROCID(&peer, ctx->me.nspace,
			 ctx->proc_of_rank && rank < ctx->world ? ctx->proc_of_rank[rank] : rank);
	PMIX_INFO_LOAD(&info[0], PMIX_OPTIONAL, &yes, PMIX_BOOL);
	pmix_status_t rc = PMIx_Get(&peer, key, info, 1, value);
	PMIX_INFO_DESTRUCT(&info[0]);
	if (rc != PMIX_ERR_NOT_FOUND)
		return rc;
	PMIX_INFO_LOAD(&info[0], PMIX_IMMEDIATE, &yes, PMIX_BOOL);
	PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
	rc = PMIx_Get(&peer, key, info, 2, value);
	PMIX_INFO_DESTRUCT(&info[0]);
	PMIX_INFO_DESTRUCT(&info[1]);
	return rc;
}

llmp_status rt_wireup_check_layouts(llmp_ctx *ctx)
{
	/*
	 * Every rank looks at every layout, so that when one rank disagrees
	 * all of them fail (none is left waiting in a collective for it). The
	 * values are already local after the fence: this costs O(world) memory
	 * lookups, no messages.
	 */
	/* By PMIx rank, before ranks are mapped: "task" when that is not the rank. */
	const char *who = ctx->renumbered ? "task" : "rank";
	char agreed[sizeof ctx->layout + sizeof ctx->placement + 16];
	agreed_text(ctx, agreed, sizeof agreed);
	for (uint32_t r = 0; r < ctx->world; r++) {
		if (r == ctx->me.rank)
			continue;
		pmix_value_t *v = NULL;
		pmix_status_t rc = rt_wireup_get(ctx, r, KEY_LAYOUT, &v);
		if (rc != PMIX_SUCCESS)
			return rt_fail(ctx, LLMP_ERR_WIREUP, "layout of %s %u: PMIx_Get: %s", who, r,
				       PMIx_Error_string(rc));
		bool same = v->type == PMIX_STRING && strcmp(v->data.string, agreed) == 0;
		if (!same) {
			rt_fail(ctx, LLMP_ERR_MISMATCH,
				"ranks disagree on the layout: %s %u has '%s', %s %u has '%s'", who, r,
				v->type == PMIX_STRING ? v->data.string : "?", who, ctx->me.rank, agreed);
			PMIX_VALUE_RELEASE(v);
			return LLMP_ERR_MISMATCH;
		}
		PMIX_VALUE_RELEASE(v);
	}
	return LLMP_OK;
}

llmp_status rt_wireup_map_ranks(llmp_ctx *ctx)
{
	uint32_t *map = malloc(ctx->world * sizeof *map);
	if (!map)
		return rt_fail(ctx, LLMP_ERR_NOMEM, "the map of %u ranks", ctx->world);
	for (uint32_t r = 0; r < ctx->world; r++)
		map[r] = UINT32_MAX;
	/* Every process reads every claim, so all of them fail alike on a bad one. */
	for (uint32_t p = 0; p < ctx->world; p++) {
		pmix_value_t *v = NULL;
		uint32_t rank = UINT32_MAX;
		pmix_status_t rc = rt_wireup_get(ctx, p, KEY_RANK, &v);
		bool ok = rc == PMIX_SUCCESS && value_to_u32(v, &rank) && rank < ctx->world;
		if (v)
			PMIX_VALUE_RELEASE(v);
		if (!ok) {
			free(map);
			return rt_fail(ctx, LLMP_ERR_WIREUP, "the rank of task %u: %s", p,
				       rc != PMIX_SUCCESS ? PMIx_Error_string(rc) : "not a rank");
		}
		if (map[rank] != UINT32_MAX) {
			uint32_t other = map[rank];
			free(map);
			return rt_fail(ctx, LLMP_ERR_MISMATCH,
				       "tasks %u and %u both hold rank %u: the nodes computed different "
				       "placements (" LLMP_ENV_PLACEMENT ")",
				       other, p, rank);
		}
		map[rank] = p;
	}
	ctx->proc_of_rank = map;
	return LLMP_OK;
}

llmp_status rt_wireup_peer_address(llmp_ctx *ctx, uint32_t rank, pmix_value_t **value)
{
	*value = NULL;
	pmix_status_t rc = rt_wireup_get(ctx, rank, KEY_UCX_ADDR, value);
	if (rc != PMIX_SUCCESS || (*value)->type != PMIX_BYTE_OBJECT) {
		if (*value)
			PMIX_VALUE_RELEASE(*value);
		*value = NULL;
		return rt_fail(ctx, LLMP_ERR_WIREUP, "UCX address of rank %u: %s", rank,
			       rc != PMIX_SUCCESS ? PMIx_Error_string(rc) : "not a byte object");
	}
	return LLMP_OK;
}

llmp_status rt_wireup_peer_process(llmp_ctx *ctx, uint32_t rank, char *buf, size_t len)
{
	pmix_value_t *v = NULL;
	pmix_status_t rc = rt_wireup_get(ctx, rank, KEY_PROCESS, &v);
	if (rc != PMIX_SUCCESS || v->type != PMIX_STRING) {
		if (v)
			PMIX_VALUE_RELEASE(v);
		return rt_fail(ctx, LLMP_ERR_WIREUP, "process of rank %u: %s", rank,
			       rc != PMIX_SUCCESS ? PMIx_Error_string(rc) : "not a string");
	}
	snprintf(buf, len, "%s", v->data.string);
	PMIX_VALUE_RELEASE(v);
	return LLMP_OK;
}

bool rt_wireup_peer_host(llmp_ctx *ctx, uint32_t rank, char *buf, size_t len)
{
	pmix_value_t *v = NULL;
	buf[0] = '\0';
	if (!ctx->pmix_up || rt_wireup_get(ctx, rank, KEY_HOST, &v) != PMIX_SUCCESS || !v)
		return false;
	if (v->type == PMIX_STRING && v->data.string)
		snprintf(buf, len, "%s", v->data.string);
	PMIX_VALUE_RELEASE(v);
	return buf[0] != '\0';
}

void rt_wireup_release(pmix_value_t *value)
{
	if (value)
		PMIX_VALUE_RELEASE(value);
}

void rt_wireup_fini(llmp_ctx *ctx)
{
	if (ctx->pmix_up)
		PMIx_Finalize(NULL, 0);
	ctx->pmix_up = false;
}
