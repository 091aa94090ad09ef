/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_train.c - a deterministic training program on libllmp: a tensor- and
 * data-parallel MLP trained with SGD on generated data, checkpointed and
 * resumed through the job API (llmp_job.h), so that a preempted, requeued
 * or crashed run continues exactly where its last checkpoint left off.
 *
 * Output of rank 0 on stdout, one line each (doc/example-mlp.md):
 *     mlp_train: ...                   what the run is (informational)
 *     step N loss X                    after every step; X exact (%.17g)
 *     final checksum 0xXXXXXXXX        FNV-1a of the global parameters
 *     final params sum X
 *     final rng 0xXXXXXXXXXXXXXXXX     the running RNG word after the last step
 * The exit code is llmp_job_finish()'s: 0 done, 75 requeue, 76 do not.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <llmp/llmp_job.h>
#include "mlp_checksum.h"
#include "mlp_data.h"
#include "mlp_fault.h"
#include "mlp_gradcheck.h"
#include "mlp_options.h"
#include "mlp_state.h"
#include "mlp_trainer.h"

/* Everything a run holds, so each phase is one short function. */
typedef struct run {
	const mlp_options *opts;
	llmp_ctx *ctx;
	llmp_job *job;
	mlp_trainer trainer;
	mlp_meta meta;
	uint64_t step; /* the next step to compute */
	uint64_t restart;
	bool stopped; /* a stop was agreed and checkpointed */
	bool rank0;
} run;

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	/* a stop signal cuts the sleep short: it is noticed at the step's end anyway */
	nanosleep(&ts, NULL);
}

static void say_start(const run *r)
{
	const mlp_shard *s = &r->trainer.shard;
	const mlp_dims *d = &r->opts->dims;
	llmp_job_info info;

	if (!r->rank0 || llmp_job_get_info(r->job, &info) != LLMP_OK)
		return;
	printf(MLP_PROG ": tp=%u dp=%u world=%u; hidden=%u in=%u out=%u batch=%u lr=%.9g "
			"seed=%" PRIu64 "; restart %" PRIu64 " (%s); from step %" PRIu64 " of %" PRIu64 "\n",
	       s->tp_size, s->dp_size, llmp_world_size(r->ctx), d->hidden, d->in, d->out, d->batch,
	       r->opts->lr, r->opts->seed, info.restart, info.restart_reason, r->step, r->opts->steps);
}

/* Register the state with the job and load the newest checkpoint, if any. */
static llmp_status prepare(run *r, char *why, size_t whylen)
{
	llmp_job_info info;
	llmp_status st;

	st = mlp_trainer_setup(&r->trainer, r->ctx, r->opts, why, whylen);
	if (st != LLMP_OK)
		return st;
	if ((st = mlp_state_register(llmp_job_ckpt(r->job), &r->trainer)) != LLMP_OK) {
		snprintf(why, whylen, "registering the parameters: %s", llmp_errmsg(r->ctx));
		return st;
	}
	if ((st = llmp_job_get_info(r->job, &info)) != LLMP_OK) {
		snprintf(why, whylen, "llmp_job_get_info: %s", llmp_job_errmsg(r->job));
		return st;
	}
	r->restart = info.restart;
	mlp_meta_init(&r->meta, r->opts);
	return mlp_state_resume(r->job, r->opts, &r->meta, &r->step, why, whylen);
}

/* A fault may only name a rank that exists. */
static bool faults_fit(const run *r, char *why, size_t whylen)
{
	const mlp_faults *f = &r->opts->faults;
	uint32_t world = llmp_world_size(r->ctx);

	if (f->hang_rank != MLP_NO_RANK && f->hang_rank >= world)
		snprintf(why, whylen, "--hang-rank %u: the world has %u ranks", f->hang_rank, world);
	else if (f->crash_rank != MLP_NO_RANK && f->crash_rank >= world)
		snprintf(why, whylen, "--crash-rank %u: the world has %u ranks", f->crash_rank, world);
	else
		return true;
	return false;
}

/* One step and its end; false when the run must leave the loop. */
static bool train_one(run *r, llmp_status *st)
{
	llmp_job_action action = LLMP_JOB_CONTINUE;
	double loss;

	mlp_fault_maybe(&r->opts->faults, llmp_rank(r->ctx), r->restart, r->step);
	if (r->opts->slow_rank == llmp_rank(r->ctx))
		sleep_ms(r->opts->slow_ms); /* a straggler: the others wait in the step's collectives */
	if ((*st = mlp_trainer_step(&r->trainer, r->step, r->meta.rng, &loss)) != LLMP_OK)
		return false;
	r->meta.rng = mlp_rng_next(r->meta.rng);
	r->meta.next_step = r->step + 1;
	if (r->rank0)
		printf("step %" PRIu64 " loss %.17g\n", r->step, loss);
	if (r->opts->sleep_ms)
		sleep_ms(r->opts->sleep_ms);
	*st = llmp_job_step_end(r->job, r->step, &r->meta, sizeof r->meta, &action);
	if (*st != LLMP_OK) {
		fprintf(stderr, MLP_PROG ": rank %u: step %" PRIu64 ": llmp_job_step_end: %s\n",
			llmp_rank(r->ctx), r->step, llmp_job_errmsg(r->job));
		return false;
	}
	r->step++;
	r->stopped = action == LLMP_JOB_STOP;
	return !r->stopped;
}

static llmp_status train(run *r)
{
	llmp_status st = LLMP_OK;

	while (r->step < r->opts->steps && train_one(r, &st))
		;
	return st;
}

/* After the last step: the checksum of the whole model, printed by rank 0. */
static llmp_status finish_training(run *r)
{
	uint32_t fnv;
	double sum;
	llmp_status st = mlp_checksum(&r->trainer, &fnv, &sum);

	if (st == LLMP_OK && r->rank0) {
		printf("final checksum 0x%08" PRIx32 "\n", fnv);
		printf("final params sum %.9g\n", sum);
		printf("final rng 0x%016" PRIx64 "\n", r->meta.rng);
	}
	return st;
}

/*
 * A layout, option or checkpoint that does not fit this program fails the
 * same way on every retry; an I/O error or a lost peer while loading may not.
 */
static bool permanent(llmp_status st)
{
	return st == LLMP_ERR_LAYOUT || st == LLMP_ERR_MISMATCH || st == LLMP_ERR_RANGE ||
	       st == LLMP_ERR_ARG || st == LLMP_ERR_SPEC;
}

/* The run with its job open: prepare, train, and the exit code. */
static int run_job(run *r)
{
	char why[512] = "";
	llmp_status st = faults_fit(r, why, sizeof why) ? prepare(r, why, sizeof why) : LLMP_ERR_RANGE;

	if (st != LLMP_OK) {
		fprintf(stderr, MLP_PROG ": rank %u: %s\n", llmp_rank(r->ctx), why);
		return permanent(st) ? llmp_job_give_up(r->job, why) : llmp_job_finish(r->job, st);
	}
	say_start(r);
	st = train(r);
	if (st == LLMP_OK && r->stopped && r->rank0)
		printf(MLP_PROG ": stopped after step %" PRIu64 ", checkpoint committed\n", r->step - 1);
	if (st == LLMP_OK && !r->stopped)
		st = finish_training(r);
	fflush(stdout);
	return llmp_job_finish(r->job, st);
}

/* --grad-check: no job, no checkpoint; exit 0 when the error is small. */
static int grad_check(run *r)
{
	char why[512] = "";
	double error = 0;
	uint64_t params = 0;
	llmp_status st = mlp_trainer_setup(&r->trainer, r->ctx, r->opts, why, sizeof why);

	if (st != LLMP_OK) {
		fprintf(stderr, MLP_PROG ": rank %u: %s\n", llmp_rank(r->ctx), why);
		return 1;
	}
	if ((st = mlp_grad_check(&r->trainer, &error, &params)) != LLMP_OK)
		return 1;
	if (r->rank0)
		printf("grad-check max relative error %.3e over %" PRIu64 " parameters (tolerance %.0e)\n",
		       error, params, MLP_GRADCHECK_TOLERANCE);
	return error <= MLP_GRADCHECK_TOLERANCE ? 0 : 1;
}

static int run_all(run *r)
{
	llmp_status st;

	if (r->opts->grad_check)
		return grad_check(r);
	if ((st = llmp_job_open(r->ctx, NULL, &r->job)) != LLMP_OK) {
		fprintf(stderr, MLP_PROG ": rank %u: %s\n", llmp_rank(r->ctx),
			r->job ? llmp_job_errmsg(r->job) : llmp_errmsg(r->ctx));
		return llmp_job_finish(r->job, st);
	}
	return run_job(r);
}

int main(int argc, char **argv)
{
	mlp_options opts;
	run r;
	llmp_status st;
	int rc;

	/* line-buffered even into a pipe: a crash must not eat the trace */
	setvbuf(stdout, NULL, _IOLBF, 0);
	switch (mlp_options_parse(argc, argv, &opts)) {
	case MLP_PARSE_HELP: return 0;
	case MLP_PARSE_ERROR: return LLMP_EXIT_NO_REQUEUE; /* no requeue fixes a typo */
	case MLP_PARSE_RUN: break;
	}
	memset(&r, 0, sizeof r);
	r.opts = &opts;
	if ((st = llmp_init(NULL, &r.ctx)) != LLMP_OK) {
		fprintf(stderr, MLP_PROG ": llmp_init: %s: %s\n", llmp_strerror(st),
			r.ctx ? llmp_errmsg(r.ctx) : "out of memory");
		llmp_finalize(r.ctx);
		return llmp_job_finish(NULL, st);
	}
	r.rank0 = llmp_rank(r.ctx) == 0;
	rc = run_all(&r);
	mlp_trainer_free(&r.trainer);
	llmp_finalize(r.ctx);
	return rc;
}
