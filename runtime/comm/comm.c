/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm.c - communicators: the rank's own groups of the layout.
 *
 * A communicator is made from the plan alone (the members of this rank's
 * group of a kind, in O(group size)), with no message and no fence: every
 * member computes the same list. A group of one member costs one small
 * allocation and never touches the network.
 */
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "failure.h"
#include "transport.h"

uint32_t rt_world_rank(const llmp_comm *comm, uint32_t comm_rank)
{
	return comm->members ? comm->members[comm_rank] : comm_rank;
}

uint32_t rt_comm_rank_of(const llmp_comm *comm, uint32_t world_rank)
{
	if (!comm->members)
		return world_rank < comm->size ? world_rank : UINT32_MAX;
	for (uint32_t m = 0; m < comm->size; m++)
		if (comm->members[m] == world_rank)
			return m;
	return UINT32_MAX;
}

const char *rt_member_name(const llmp_comm *comm, uint32_t comm_rank, char *buf, size_t len)
{
	if (comm->kind == RT_COMM_WORLD)
		snprintf(buf, len, "rank %u", comm_rank);
	else
		snprintf(buf, len, "rank %u (%s rank %u)", rt_world_rank(comm, comm_rank),
			 llmp_comm_name(comm), comm_rank);
	return buf;
}

static llmp_status comm_new(llmp_ctx *ctx, int kind, uint32_t *members, uint32_t size, llmp_comm **out)
{
	llmp_comm *comm = calloc(1, sizeof *comm);
	if (!comm) {
		free(members);
		return rt_fail(ctx, LLMP_ERR_NOMEM, "communicator");
	}
	comm->ctx = ctx;
	comm->kind = kind;
	comm->members = members;
	comm->size = size;
	comm->rank = rt_comm_rank_of(comm, ctx->rank);
	if (!rt_metrics_init(&comm->metrics, size)) {
		rt_comm_free(comm);
		return rt_fail(ctx, LLMP_ERR_NOMEM, "counters of the %s communicator (%u members)",
			       kind == RT_COMM_WORLD ? "world" : llmp_group_name((enum llmp_group)kind),
			       size);
	}
	if (size > 1) {
		llmp_status st = rt_listen_reports(comm);
		if (st != LLMP_OK) {
			rt_comm_free(comm);
			return st;
		}
	}
	ctx->comms[kind] = comm;
	ctx->stats.comms++;
	if (rt_log_on(ctx, RT_LOG_COMM, RT_LOG_DEBUG)) {
		char list[128];
		size_t used = 0;
		for (uint32_t i = 0; i < size && used < sizeof list; i++)
			used += (size_t)snprintf(list + used, sizeof list - used, "%s%u", i ? "," : "",
						 rt_world_rank(comm, i));
		if (used >= sizeof list)
			memcpy(list + sizeof list - 4, "...", 4);
		rt_log(ctx, RT_LOG_COMM, RT_LOG_DEBUG,
		       "communicator %s: %u members (ranks %s), this rank is %u", llmp_comm_name(comm), size,
		       list, comm->rank);
	}
	*out = comm;
	return LLMP_OK;
}

llmp_status llmp_comm_get(llmp_ctx *ctx, enum llmp_group group, llmp_comm **out)
{
	if (!ctx || !out)
		return LLMP_ERR_ARG;
	*out = NULL;
	if (!ctx->plan || !ctx->worker)
		return rt_fail(ctx, LLMP_ERR_STATE, "llmp_comm_get: the context did not initialise");
	if ((unsigned)group >= LLMP_NGROUPS)
		return rt_fail(ctx, LLMP_ERR_ARG, "llmp_comm_get: group %d is not a group kind (0..%d)",
			       (int)group, LLMP_NGROUPS - 1);
	if (ctx->comms[group]) {
		*out = ctx->comms[group];
		return LLMP_OK;
	}
	uint32_t cap = llmp_plan_group_size(ctx->plan, group);
	uint32_t *members = malloc((cap ? cap : 1) * sizeof *members);
	if (!members)
		return rt_fail(ctx, LLMP_ERR_NOMEM, "members of the %s group (%u)", llmp_group_name(group),
			       cap);
	uint32_t n = 0, index;
	char msg[LLMP_MSG_MAX];
	llmp_status st = llmp_plan_group_of(ctx->plan, group, ctx->rank, members, cap, &n, &index);
	if (st != LLMP_OK || n == 0) {
		free(members);
		if (st != LLMP_OK)
			return rt_fail(ctx, st, "members of the %s group: %s", llmp_group_name(group),
				       llmp_strerror(st));
		snprintf(msg, sizeof msg, "rank %u is in no %s group (a middle pipeline stage)", ctx->rank,
			 llmp_group_name(group));
		return rt_fail(ctx, LLMP_ERR_RANGE, "%s", msg);
	}
	return comm_new(ctx, (int)group, members, n, out);
}

llmp_status llmp_comm_world(llmp_ctx *ctx, llmp_comm **out)
{
	if (!ctx || !out)
		return LLMP_ERR_ARG;
	*out = NULL;
	if (!ctx->plan || !ctx->worker)
		return rt_fail(ctx, LLMP_ERR_STATE, "llmp_comm_world: the context did not initialise");
	if (ctx->comms[RT_COMM_WORLD]) {
		*out = ctx->comms[RT_COMM_WORLD];
		return LLMP_OK;
	}
	return comm_new(ctx, RT_COMM_WORLD, NULL, ctx->world, out);
}

void rt_comm_free(llmp_comm *comm)
{
	if (!comm)
		return;
	rt_unlisten_reports(comm);
	if (comm->shm_free)
		comm->shm_free(comm);
	free(comm->members);
	free(comm->p2p_sent);
	free(comm->p2p_recvd);
	free(comm->scratch);
	rt_metrics_free(&comm->metrics);
	free(comm);
}

llmp_status rt_scratch(llmp_comm *comm, size_t bytes, void **buf)
{
	if (bytes > comm->scratch_bytes) {
		void *grown = realloc(comm->scratch, bytes);
		if (!grown)
			return rt_fail(comm->ctx, LLMP_ERR_NOMEM, "%zu bytes of scratch space", bytes);
		comm->scratch = grown;
		comm->scratch_bytes = bytes;
	}
	*buf = comm->scratch;
	return LLMP_OK;
}

uint32_t llmp_comm_size(const llmp_comm *comm)
{
	return comm ? comm->size : 0;
}
uint32_t llmp_comm_rank(const llmp_comm *comm)
{
	return comm ? comm->rank : 0;
}

uint32_t llmp_comm_world_rank(const llmp_comm *comm, uint32_t comm_rank)
{
	if (!comm || comm_rank >= comm->size)
		return UINT32_MAX;
	return rt_world_rank(comm, comm_rank);
}

const char *llmp_comm_name(const llmp_comm *comm)
{
	if (!comm)
		return "?";
	return comm->kind == RT_COMM_WORLD ? "world" : llmp_group_name((enum llmp_group)comm->kind);
}
