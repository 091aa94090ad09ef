/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_leave.c - a program that ends without llmp_finalize, as most Python
 * programs and many C ones do: every rank agrees on one allreduce, then
 * rank r sleeps r * --sleep seconds and returns from main. The step must
 * still succeed: under Slurm's mpi/pmix a task that leaves without
 * PMIx_Finalize while others run makes slurmstepd kill the whole step.
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_check.h"

#include <stdio.h>

int chk_cmd_leave(const chk_args *args)
{
	llmp_ctx *ctx = NULL;
	llmp_comm *world = NULL;
	llmp_status st = chk_init(args, &ctx);
	float one = 1.0f;
	uint32_t me;

	if (!report_expect(st == LLMP_OK, "llmp_init: %s: %s", llmp_strerror(st),
			   ctx ? llmp_errmsg(ctx) : ""))
		return report_summary();
	me = llmp_rank(ctx);
	st = llmp_comm_world(ctx, &world);
	if (st == LLMP_OK)
		st = llmp_allreduce(world, &one, &one, 1, LLMP_FLOAT32, LLMP_SUM);
	report_expect(st == LLMP_OK && one == (float)llmp_world_size(ctx), "allreduce: %s, sum %g",
		      llmp_strerror(st), (double)one);
	chk_sleep(args->sleep_s * me);
	report_note("leaving without llmp_finalize");
	/* ctx is left as it is: the process ends with it */
	return report_summary();
}
