/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_fault.c - failures the runtime must report rather than hang on:
 * ranks given different layouts (init fails everywhere, naming a rank that
 * disagrees) and a rank killed in the middle of a collective (the others
 * fail within the timeout, naming it).
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_check.h"

#include <strings.h> /* pmix.h uses strncasecmp */
#include <pmix.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Launched so that rank --odd gets another layout than the rest (through
 * LLMP_TEST_SPEC set per task). The rank is only known from PMIx, and init
 * must fail, so it comes from the launcher's environment.
 */
int chk_cmd_mismatch(const chk_args *args)
{
	llmp_ctx *ctx = NULL;
	const char *procid = getenv("SLURM_PROCID") ? getenv("SLURM_PROCID") : getenv("PMIX_RANK");
	uint32_t me = procid ? (uint32_t)strtoul(procid, NULL, 10) : UINT32_MAX;
	llmp_status st;
	const char *msg;

	report_set_rank(me);
	report_note("layout %s", args->spec ? args->spec : "(none)");
	st = chk_init(args, &ctx);
	msg = ctx ? llmp_errmsg(ctx) : "";
	report_note("llmp_init: %s: %s", llmp_strerror(st), msg);
	report_expect(st == LLMP_ERR_MISMATCH, "llmp_init returned %s, not %s", llmp_strerror(st),
		      llmp_strerror(LLMP_ERR_MISMATCH));
	if (me == args->odd) {
		/* the odd one out: any other rank disagrees with it */
		bool named = false;
		for (uint32_t r = 0; r < 4096 && !named; r++)
			named = r != me && chk_names_rank(msg, r);
		report_expect(named, "the message names no other rank: '%s'", msg);
	} else {
		report_expect(chk_names_rank(msg, args->odd), "the message does not name rank %u: '%s'",
			      args->odd, msg);
	}
	llmp_finalize(ctx);
	return report_summary();
}

/*
 * Every rank loops on a world allreduce; the victim kills itself at
 * iteration 20 (or, with --hang, stops answering: the timeout path rather
 * than a dead process). A survivor passes if its failing call returned
 * LLMP_ERR_PEER or LLMP_ERR_TIMEOUT naming the victim within max_seconds.
 */
int chk_cmd_kill(const chk_args *args)
{
	enum { KILL_AT = 20, MAX_ITERS = 1000000 };
	llmp_ctx *ctx = NULL;
	llmp_comm *world = NULL;
	llmp_status st = chk_init(args, &ctx);
	double timeout, limit, t_start = 0, t_end = 0, t_begin;
	size_t count = args->count;
	static float *in, *out; /* the process ends with this function */
	uint32_t me, iter;

	if (st != LLMP_OK) {
		report_expect(false, "llmp_init: %s: %s", llmp_strerror(st), ctx ? llmp_errmsg(ctx) : "");
		llmp_finalize(ctx);
		return report_summary();
	}
	in = malloc(count * sizeof *in);
	out = malloc(count * sizeof *out);
	if (!report_expect(in && out, "out of memory for %zu elements", count)) {
		llmp_finalize(ctx);
		return report_summary();
	}
	me = llmp_rank(ctx);
	timeout = args->timeout_s > 0      ? args->timeout_s
		  : getenv("LLMP_TIMEOUT") ? strtod(getenv("LLMP_TIMEOUT"), NULL)
					   : 300;
	limit = args->max_seconds > 0 ? args->max_seconds : timeout + 0.5;
	if (!report_expect(llmp_comm_world(ctx, &world) == LLMP_OK, "llmp_comm_world: %s",
			   llmp_errmsg(ctx)) ||
	    !report_expect(args->victim < llmp_world_size(ctx) && llmp_world_size(ctx) >= 2,
			   "--victim %u in a world of %u", args->victim, llmp_world_size(ctx))) {
		llmp_finalize(ctx);
		return report_summary();
	}
	for (size_t i = 0; i < count; i++)
		in[i] = 1.0f;

	t_begin = chk_now();
	st = LLMP_OK;
	for (iter = 0; iter < MAX_ITERS && st == LLMP_OK; iter++) {
		if (me == args->victim && iter == KILL_AT) {
			if (args->hang) {
				/* alive but silent: the others can only time out on it */
				report_note("not answering for %.0f s from iteration %u", limit + 3, iter);
				chk_sleep(limit + 3);
				llmp_finalize(ctx);
				return report_summary();
			}
			/*
			 * Slurm's mpi/pmix kills the whole step (SIGKILL, through
			 * slurmctld) as soon as a PMIx client's connection drops
			 * without PMIx_Finalize. That raced with what this test
			 * measures, the survivors noticing the death through llmp
			 * (pid checks, UCX), and under load Slurm sometimes won: a
			 * survivor died before it could report. So the victim leaves
			 * PMIx first. llmp does not watch PMIx for failures; to it
			 * the death is the same, its process, endpoints and shared
			 * memory all still there until the signal.
			 */
			PMIx_Finalize(NULL, 0);
			report_note("killing myself at iteration %u", iter);
			raise(SIGKILL);
		}
		t_start = chk_now();
		st = llmp_allreduce(world, in, out, count, LLMP_FLOAT32, LLMP_SUM);
		t_end = chk_now();
		if (st == LLMP_OK && out[0] != (float)llmp_world_size(ctx)) {
			report_expect(false, "iteration %u: allreduce gave %g, not %u", iter, out[0],
				      llmp_world_size(ctx));
			break;
		}
		/* no victim death detected after many times the timeout: give up */
		if (t_end - t_begin > 4 * limit + 30)
			break;
	}
	if (report_expect(st != LLMP_OK,
			  "rank %u was killed, but allreduce kept returning OK (%u iterations, %.1f s)",
			  args->victim, iter, t_end - t_begin)) {
		const char *msg = llmp_errmsg(ctx);
		double took = t_end - t_start;
		report_note("error after %.3f s at iteration %u: %s (%s): %s", took, iter - 1,
			    st == LLMP_ERR_TIMEOUT ? "LLMP_ERR_TIMEOUT"
			    : st == LLMP_ERR_PEER  ? "LLMP_ERR_PEER"
						   : "other",
			    llmp_strerror(st), msg);
		report_expect(st == LLMP_ERR_PEER || st == LLMP_ERR_TIMEOUT, "status %s, expected %s or %s",
			      llmp_strerror(st), llmp_strerror(LLMP_ERR_PEER),
			      llmp_strerror(LLMP_ERR_TIMEOUT));
		report_expect(chk_names_rank(msg, args->victim), "the message does not name rank %u: '%s'",
			      args->victim, msg);
		report_expect(took <= limit,
			      "the failure took %.3f s to report; allowed %.1f s (timeout %.1f s)", took,
			      limit, timeout);
		/* the communicator is unusable now, and says so */
		st = llmp_barrier(world);
		report_expect(st != LLMP_OK, "a barrier after the failure returned OK");
		report_note("barrier after the failure: %s", llmp_strerror(st));
	}
	st = llmp_finalize(ctx);
	report_expect(st == LLMP_OK, "llmp_finalize: %s", llmp_strerror(st));
	report_note("finalized");
	free(in);
	free(out);
	return report_summary();
}

/*
 * Rank --odd calls a world allreduce with one element more than the
 * others (a program bug). Every rank must get an error within the timeout,
 * none may hang or return OK with a result; a rank that was told a length
 * differs names the rank it disagrees with.
 */
int chk_cmd_disagree(const chk_args *args)
{
	llmp_ctx *ctx = NULL;
	llmp_comm *world = NULL;
	llmp_status st = chk_init(args, &ctx);
	if (st != LLMP_OK || llmp_comm_world(ctx, &world) != LLMP_OK) {
		report_expect(false, "init: %s", ctx ? llmp_errmsg(ctx) : "no context");
		llmp_finalize(ctx);
		return report_summary();
	}
	uint32_t me = llmp_rank(ctx), n = llmp_world_size(ctx);
	size_t count = args->count + (me == args->odd);
	float *in = calloc(count, sizeof *in), *out = calloc(count, sizeof *out);
	double t0 = chk_now();
	if (report_expect(in && out && args->odd < n && n >= 2, "--odd %u in a world of %u", args->odd, n)) {
		st = llmp_allreduce(world, in, out, count, LLMP_FLOAT32, LLMP_SUM);
		const char *msg = llmp_errmsg(ctx);
		report_note("allreduce of %zu elements: %s after %.3f s: %s", count, llmp_strerror(st),
			    chk_now() - t0, st == LLMP_OK ? "" : msg);
		report_expect(st == LLMP_ERR_MISMATCH || st == LLMP_ERR_PEER || st == LLMP_ERR_TIMEOUT,
			      "status %s, expected an error", llmp_strerror(st));
		if (st == LLMP_ERR_MISMATCH) {
			bool named = false;
			for (uint32_t r = 0; r < n && !named; r++)
				named = r != me && chk_names_rank(msg, r);
			report_expect(named, "the message names no other rank: '%s'", msg);
		}
	}
	free(in);
	free(out);
	llmp_finalize(ctx);
	return report_summary();
}
