/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * agree.c - rt_agree: one verdict for a step every rank took on its own.
 *
 * Local work (opening files, checking arguments) can fail on some ranks
 * only; if each then went its own way, the others would wait in the next
 * collective until their timeout. Instead every rank reports its status,
 * and all return the same one, naming the first rank that failed and why.
 */
#include "coll.h"

#include <stdio.h>

llmp_status rt_agree(llmp_ctx *ctx, const char *doing, llmp_status local)
{
	llmp_comm *world;
	llmp_status st = llmp_comm_world(ctx, &world);
	if (st != LLMP_OK)
		return st;
	/* The first failing rank, by a min-reduction of "my rank if I failed". */
	int64_t first = local != LLMP_OK ? (int64_t)ctx->rank : INT64_MAX;
	if ((st = llmp_allreduce(world, &first, &first, 1, LLMP_INT64, LLMP_MIN)) != LLMP_OK)
		return st;
	if (first == INT64_MAX)
		return LLMP_OK;
	struct {
		int32_t status;
		char msg[LLMP_MSG_MAX];
	} why = { (int32_t)local, "" };
	if ((uint32_t)first == ctx->rank)
		snprintf(why.msg, sizeof why.msg, "%s", ctx->errmsg);
	if ((st = llmp_broadcast(world, &why, &why, sizeof why, LLMP_UINT8, (uint32_t)first)) != LLMP_OK)
		return st;
	why.msg[sizeof why.msg - 1] = '\0';
	return rt_fail(ctx, (llmp_status)why.status, "%s: rank %lld: %s", doing, (long long)first, why.msg);
}
