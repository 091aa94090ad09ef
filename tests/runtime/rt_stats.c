/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_stats.c - what init and the communicators cost, as llmp_get_stats
 * reports it: one PMIx fence for init whatever the world size and however
 * many groups are made later; one communicator per kind obtained; no
 * endpoint for a group of one; never more endpoints than other ranks.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_check.h"

#include <stdio.h>
#include <string.h>

static bool get_stats(llmp_ctx *ctx, llmp_stats *s, const char *when)
{
	memset(s, 0, sizeof *s);
	llmp_status st = llmp_get_stats(ctx, s);
	if (!report_expect(st == LLMP_OK, "llmp_get_stats %s: %s: %s", when, llmp_strerror(st),
			   llmp_errmsg(ctx)))
		return false;
	report_note("stats %s: init_fences=%u comms=%u endpoints=%u init_seconds=%.3f", when, s->init_fences,
		    s->comms, s->endpoints, s->init_seconds);
	return true;
}

/* Every collective once on comm, with a few elements; true if all returned OK. */
static bool touch(llmp_ctx *ctx, llmp_comm *comm)
{
	uint32_t n = llmp_comm_size(comm), me = llmp_comm_rank(comm);
	float in[16], out[16 * 64];
	const char *name = llmp_comm_name(comm);
	bool ok = true;
	llmp_status st;

	if (n > 64)
		return report_expect(false, "%s: more than 64 members, not supported by this test", name);
	for (int i = 0; i < 16; i++)
		in[i] = (float)(i + 1);
	st = llmp_allreduce(comm, in, out, 16, LLMP_FLOAT32, LLMP_SUM);
	ok &= report_expect(st == LLMP_OK && out[15] == 16.0f * (float)n, "allreduce on %s: %s: %s", name,
			    llmp_strerror(st), llmp_errmsg(ctx));
	st = llmp_reduce_scatter(comm, out, in, 1, LLMP_FLOAT32, LLMP_MAX);
	ok &= report_expect(st == LLMP_OK, "reduce_scatter on %s: %s: %s", name, llmp_strerror(st),
			    llmp_errmsg(ctx));
	st = llmp_allgather(comm, in, out, 16, LLMP_FLOAT32);
	ok &= report_expect(st == LLMP_OK, "allgather on %s: %s: %s", name, llmp_strerror(st),
			    llmp_errmsg(ctx));
	st = llmp_broadcast(comm, in, out, 16, LLMP_FLOAT32, n - 1);
	ok &= report_expect(st == LLMP_OK, "broadcast on %s: %s: %s", name, llmp_strerror(st),
			    llmp_errmsg(ctx));
	st = llmp_barrier(comm);
	ok &= report_expect(st == LLMP_OK, "barrier on %s: %s: %s", name, llmp_strerror(st),
			    llmp_errmsg(ctx));
	(void)me;
	return ok;
}

int chk_cmd_stats(const chk_args *args)
{
	llmp_ctx *ctx = NULL;
	llmp_stats s0, s1, s2;
	llmp_comm *single = NULL, *world = NULL;
	llmp_status st = chk_init(args, &ctx);
	uint32_t made = 0;

	if (st != LLMP_OK) {
		report_expect(false, "llmp_init: %s: %s", llmp_strerror(st), ctx ? llmp_errmsg(ctx) : "");
		llmp_finalize(ctx);
		return report_summary();
	}
	if (!get_stats(ctx, &s0, "after init"))
		goto out;
	report_expect(s0.init_fences == 1, "init used %u PMIx fences, not 1", s0.init_fences);
	report_expect(s0.init_seconds > 0 && s0.init_seconds < 120, "init_seconds = %g", s0.init_seconds);

	/* Every group kind once, then again: the second get makes nothing. */
	for (int kind = 0; kind < LLMP_NGROUPS; kind++) {
		llmp_comm *c = NULL, *again = NULL;
		llmp_stats before;
		if (llmp_get_stats(ctx, &before) != LLMP_OK)
			break;
		st = llmp_comm_get(ctx, (enum llmp_group)kind, &c);
		if (st == LLMP_ERR_RANGE)
			continue;
		if (!report_expect(st == LLMP_OK && c, "llmp_comm_get(%s): %s",
				   llmp_group_name((enum llmp_group)kind), llmp_strerror(st)))
			continue;
		made++;
		llmp_get_stats(ctx, &s1);
		report_expect(s1.comms == before.comms + 1, "getting %s: comms went %u -> %u, not +1",
			      llmp_group_name((enum llmp_group)kind), before.comms, s1.comms);
		llmp_comm_get(ctx, (enum llmp_group)kind, &again);
		llmp_get_stats(ctx, &s2);
		report_expect(again == c && s2.comms == s1.comms,
			      "getting %s again: another handle or comms went %u -> %u",
			      llmp_group_name((enum llmp_group)kind), s1.comms, s2.comms);
		if (!single && llmp_comm_size(c) == 1)
			single = c;
	}
	if (!get_stats(ctx, &s1, "after every group"))
		goto out;
	report_expect(s1.init_fences == 1, "after making %u groups: init_fences = %u, not 1", made,
		      s1.init_fences);
	report_note("made %u groups", made);

	/* A group of one talks to nobody. */
	if (report_expect(single != NULL,
			  "this layout gives the rank no group of size 1 (use one with tp=1)")) {
		touch(ctx, single);
		if (get_stats(ctx, &s2, "after collectives on a group of one"))
			report_expect(s2.endpoints == s1.endpoints,
				      "collectives on %s (1 member) opened endpoints: %u -> %u",
				      llmp_comm_name(single), s1.endpoints, s2.endpoints);
	}

	/* The world: endpoints to distinct peers only. */
	st = llmp_comm_world(ctx, &world);
	if (report_expect(st == LLMP_OK && world, "llmp_comm_world: %s", llmp_strerror(st))) {
		uint32_t w = llmp_world_size(ctx);
		touch(ctx, world);
		touch(ctx, world);
		if (get_stats(ctx, &s2, "after collectives on the world")) {
			report_expect(s2.endpoints <= w - 1,
				      "%u endpoints in a world of %u: more than the other ranks",
				      s2.endpoints, w);
			report_expect(w == 1 || s2.endpoints >= 1,
				      "collectives in a world of %u opened no endpoint", w);
			report_expect(s2.init_fences == 1, "init_fences = %u after collectives",
				      s2.init_fences);
		}
	}
out:
	st = llmp_finalize(ctx);
	report_expect(st == LLMP_OK, "llmp_finalize: %s", llmp_strerror(st));
	return report_summary();
}
