/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ck_stripe.c - the stripe layout of checkpoints (stripe= of
 * --llm-checkpoint), as a PMIx singleton, for tests/ckpt_stripe.bats:
 *
 *   ck_stripe job ROOT EXTRA STEPS
 *       runs STEPS training steps under llmp_job with the checkpoint spec
 *       "ROOT,every=1,EXTRA" (a save after every step, so the spec's
 *       stripe= goes through the job layer into llmp_ckpt_opts), then
 *       loads the newest checkpoint through a fresh handle and checks that
 *       it is step STEPS-1 and holds every value the program wrote.
 *   ck_stripe open ROOT COUNT SIZE POOL
 *       llmp_ckpt_open with those llmp_ckpt_opts.stripe_* ("-": no pool);
 *       prints the status and message, exits 0 only when it opened.
 *
 * What the layout did is for the bats file to see: the test double's log
 * (tests/ckpt/fake_lustreapi.c) and libllmp's messages on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llmp/llmp.h>
#include <llmp/llmp_ckpt.h>
#include <llmp/llmp_job.h>

#define N 1000 /* float32 elements of the one tensor */

/* What step s holds at element i: exact in a float (below 2^24). */
static float value(uint64_t step, size_t i)
{
	return (float)(step * 4096 + i);
}

static int say(llmp_ctx *ctx, const char *what, llmp_status st)
{
	fprintf(stderr, "ck_stripe: %s: %s: %s\n", what, llmp_strerror(st), ctx ? llmp_errmsg(ctx) : "");
	return 1;
}

/* The newest checkpoint under root must be step `want` with value(want, i) everywhere. */
static int check_newest(llmp_ctx *ctx, const char *root, uint64_t want)
{
	static float got[N];
	uint64_t shape = N, offset = 0, loaded = 0;
	llmp_ckpt_opts o = { .root = root };
	llmp_ckpt *ck = NULL;
	llmp_status st = llmp_ckpt_open(ctx, &o, &ck);
	if (st == LLMP_OK)
		st = llmp_ckpt_register(ck, "w", LLMP_FLOAT32, 1, &shape, &offset, &shape, got);
	if (st == LLMP_OK)
		st = llmp_ckpt_load(ck, LLMP_CKPT_NEWEST, &loaded, NULL, 0, NULL);
	llmp_ckpt_close(ck);
	if (st != LLMP_OK)
		return say(ctx, "loading the newest checkpoint", st);
	if (loaded != want) {
		fprintf(stderr, "ck_stripe: loaded step %" PRIu64 ", expected %" PRIu64 "\n", loaded, want);
		return 1;
	}
	for (size_t i = 0; i < N; i++)
		if (got[i] != value(want, i)) {
			fprintf(stderr, "ck_stripe: w[%zu] = %g, expected %g\n", i, got[i], value(want, i));
			return 1;
		}
	printf("ck_stripe: step %" PRIu64 " loaded, %d values right\n", loaded, N);
	return 0;
}

static int run_job(llmp_ctx *ctx, const char *root, const char *extra, uint64_t steps)
{
	static float w[N];
	char spec[2048];
	uint64_t shape = N, offset = 0, next = 0;
	snprintf(spec, sizeof spec, "%s,every=1%s%s", root, *extra ? "," : "", extra);
	llmp_job_opts jo = { .checkpoint = spec };
	llmp_job *job = NULL;
	llmp_status st = llmp_job_open(ctx, &jo, &job);
	if (st == LLMP_OK)
		st = llmp_ckpt_register(llmp_job_ckpt(job), "w", LLMP_FLOAT32, 1, &shape, &offset, &shape, w);
	if (st == LLMP_OK)
		st = llmp_job_resume(job, &next, NULL, 0, NULL);
	for (uint64_t step = next; st == LLMP_OK && step < steps; step++) {
		llmp_job_action action;
		for (size_t i = 0; i < N; i++)
			w[i] = value(step, i);
		st = llmp_job_step_end(job, step, NULL, 0, &action);
	}
	if (st != LLMP_OK)
		fprintf(stderr, "ck_stripe: job: %s\n", job ? llmp_job_errmsg(job) : llmp_errmsg(ctx));
	int code = llmp_job_finish(job, st);
	if (code != LLMP_EXIT_DONE) {
		fprintf(stderr, "ck_stripe: llmp_job_finish: exit code %d\n", code);
		return 1;
	}
	return check_newest(ctx, root, steps - 1);
}

static int run_open(llmp_ctx *ctx, const char *root, const char *count, const char *size, const char *pool)
{
	llmp_ckpt_opts o = { .root = root,
			     .stripe_count = atoi(count),
			     .stripe_size = (size_t)strtoull(size, NULL, 10),
			     .stripe_pool = strcmp(pool, "-") ? pool : NULL };
	llmp_ckpt *ck = NULL;
	llmp_status st = llmp_ckpt_open(ctx, &o, &ck);
	llmp_ckpt_close(ck);
	if (st != LLMP_OK)
		return say(ctx, "llmp_ckpt_open", st);
	printf("ck_stripe: opened\n");
	return 0;
}

int main(int argc, char **argv)
{
	bool job = argc == 5 && strcmp(argv[1], "job") == 0, open = argc == 6 && strcmp(argv[1], "open") == 0;
	if (!job && !open) {
		fprintf(stderr, "usage: ck_stripe job ROOT EXTRA STEPS | open ROOT COUNT SIZE POOL\n");
		return 2;
	}
	llmp_init_opts io;
	llmp_init_opts_default(&io);
	llmp_ctx *ctx = NULL;
	llmp_status st = llmp_init(&io, &ctx);
	if (st != LLMP_OK)
		return say(ctx, "llmp_init", st);
	int rc = job ? run_job(ctx, argv[2], argv[3], strtoull(argv[4], NULL, 10))
		     : run_open(ctx, argv[2], argv[3], argv[4], argv[5]);
	llmp_finalize(ctx);
	return rc;
}
