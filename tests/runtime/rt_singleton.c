/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_singleton.c - no launcher at all: the process is a PMIx singleton,
 * rank 0 of a world of 1, every group has one member, no endpoint is ever
 * opened, and every collective still works (the full sweep).
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_check.h"

#include <stdio.h>
#include <stdlib.h>

int chk_cmd_singleton(const chk_args *args)
{
	llmp_ctx *ctx = NULL;
	llmp_stats s;
	llmp_status st;

	/* a stray launcher variable would make this another test */
	if (!report_expect(!getenv("PMIX_RANK") && !getenv("PMIX_NAMESPACE"),
			   "singleton must run without a launcher, but PMIX_RANK/PMIX_NAMESPACE is set"))
		return report_summary();
	st = chk_init(args, &ctx);
	if (!report_expect(st == LLMP_OK, "llmp_init without a launcher: %s: %s", llmp_strerror(st),
			   ctx ? llmp_errmsg(ctx) : "")) {
		llmp_finalize(ctx);
		return report_summary();
	}
	report_expect(llmp_rank(ctx) == 0 && llmp_world_size(ctx) == 1, "rank %u of %u, expected 0 of 1",
		      llmp_rank(ctx), llmp_world_size(ctx));
	report_expect(llmp_local_rank(ctx) == 0 && llmp_local_size(ctx) == 1,
		      "local rank %u of %u, expected 0 of 1", llmp_local_rank(ctx), llmp_local_size(ctx));
	for (int kind = 0; kind < LLMP_NGROUPS; kind++) {
		llmp_comm *c = NULL;
		st = llmp_comm_get(ctx, (enum llmp_group)kind, &c);
		report_expect(st == LLMP_OK && c && llmp_comm_size(c) == 1 && llmp_comm_rank(c) == 0,
			      "group %s in a world of one: %s, size %u",
			      llmp_group_name((enum llmp_group)kind), llmp_strerror(st),
			      c ? llmp_comm_size(c) : 0);
	}
	chk_sweep_all(ctx, args);
	if (report_expect(llmp_get_stats(ctx, &s) == LLMP_OK, "llmp_get_stats: %s", llmp_errmsg(ctx))) {
		report_note("stats: init_fences=%u comms=%u endpoints=%u init_seconds=%.3f", s.init_fences,
			    s.comms, s.endpoints, s.init_seconds);
		report_expect(s.endpoints == 0, "a world of one opened %u endpoints", s.endpoints);
		report_expect(s.init_fences == 1, "init_fences = %u, not 1", s.init_fences);
	}
	st = llmp_finalize(ctx);
	report_expect(st == LLMP_OK, "llmp_finalize: %s", llmp_strerror(st));
	return report_summary();
}
