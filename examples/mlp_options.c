/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mlp_options.c - the command line of mlp_train: getopt_long, and a refusal
 * naming the option for every value that cannot work.
 */
#define _POSIX_C_SOURCE 200809L

#include "mlp_options.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Large enough for any test, small enough that no size product overflows. */
#define MLP_MAX_DIM (1u << 16)
#define MLP_MAX_SLEEP_MS (3600u * 1000u)

enum {
	OPT_STEPS = 256,
	OPT_HIDDEN,
	OPT_IN,
	OPT_OUT,
	OPT_BATCH,
	OPT_LR,
	OPT_SEED,
	OPT_SLEEP_MS,
	OPT_SLOW_RANK,
	OPT_SLOW_MS,
	OPT_HANG_RANK,
	OPT_HANG_STEP,
	OPT_CRASH_RANK,
	OPT_CRASH_STEP,
	OPT_FAULT_ALWAYS,
	OPT_GRAD_CHECK,
};

static const struct option long_options[] = {
	{ "steps", required_argument, NULL, OPT_STEPS },
	{ "hidden", required_argument, NULL, OPT_HIDDEN },
	{ "in", required_argument, NULL, OPT_IN },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "lr", required_argument, NULL, OPT_LR },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "sleep-ms", required_argument, NULL, OPT_SLEEP_MS },
	{ "slow-rank", required_argument, NULL, OPT_SLOW_RANK },
	{ "slow-ms", required_argument, NULL, OPT_SLOW_MS },
	{ "hang-rank", required_argument, NULL, OPT_HANG_RANK },
	{ "hang-step", required_argument, NULL, OPT_HANG_STEP },
	{ "crash-rank", required_argument, NULL, OPT_CRASH_RANK },
	{ "crash-step", required_argument, NULL, OPT_CRASH_STEP },
	{ "fault-always", no_argument, NULL, OPT_FAULT_ALWAYS },
	{ "fail-always", no_argument, NULL, OPT_FAULT_ALWAYS }, /* the crash-loop test's name */
	{ "grad-check", no_argument, NULL, OPT_GRAD_CHECK },    /* hidden: not in --help */
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *to)
{
	fprintf(to, "usage: " MLP_PROG " [--steps N] [--hidden H] [--in D] [--out O] [--batch B]\n"
		    "                 [--lr F] [--seed S] [--sleep-ms MS] [--slow-rank R --slow-ms MS]\n"
		    "                 [--hang-rank R --hang-step N] [--crash-rank R --crash-step N]\n"
		    "                 [--fault-always]\n\n"
		    "Train a tensor- and data-parallel MLP y = W2 relu(W1 x + b1) + b2 with SGD on\n"
		    "generated data, checkpointing and resuming through libllmp's job API. The layout\n"
		    "comes from LLMP_PARALLEL (tp and dp only), the checkpoints from LLMP_CHECKPOINT\n"
		    "(both set by the plugin's --llm-parallel and --llm-checkpoint).\n\n"
		    "  --steps N        steps of the whole training, over all runs (default 100)\n"
		    "  --hidden H       hidden units, split over tp (default 64)\n"
		    "  --in D           inputs per sample (default 16)\n"
		    "  --out O          outputs per sample (default 4)\n"
		    "  --batch B        samples per step, split over dp (default 64)\n"
		    "  --lr F           learning rate (default 0.1)\n"
		    "  --seed S         seed of the weights, the data and the noise (default 1)\n"
		    "  --sleep-ms MS    sleep after each step, so a test can interrupt mid-way\n"
		    "  --slow-rank R, --slow-ms MS\n"
		    "                   world rank R sleeps MS before each step's work: a straggler\n"
		    "                   for LLMP_METRICS and `llmp top` to find\n"
		    "  --hang-rank R, --hang-step N\n"
		    "                   world rank R stops answering at the start of step N\n"
		    "  --crash-rank R, --crash-step N\n"
		    "                   world rank R calls abort() at the start of step N\n"
		    "  --fault-always   faults fire on every run, not only on the first\n"
		    "                   (restart count 0); also spelled --fail-always\n\n"
		    "Rank 0 prints 'step N loss X' after every step and, at the end,\n"
		    "'final checksum 0xXXXXXXXX', 'final params sum X' and 'final rng 0xX'.\n");
}

static bool parse_u64(const char *name, const char *text, uint64_t max, uint64_t *out)
{
	char *end;

	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	/* strtoull accepts "-1" as a huge value: refuse any sign outright */
	if (!*text || *end || errno || strchr(text, '-') || v > max) {
		fprintf(stderr, MLP_PROG ": --%s '%s': expected an integer from 0 to %" PRIu64 "\n", name,
			text, max);
		return false;
	}
	*out = v;
	return true;
}

static bool parse_u32(const char *name, const char *text, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (!parse_u64(name, text, max, &v))
		return false;
	if (v < min) {
		fprintf(stderr, MLP_PROG ": --%s %s: must be at least %u\n", name, text, min);
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

static bool parse_lr(const char *text, double *out)
{
	char *end;

	errno = 0;
	double v = strtod(text, &end);
	if (!*text || *end || errno || !isfinite(v) || v <= 0) {
		fprintf(stderr, MLP_PROG ": --lr '%s': expected a finite number above 0\n", text);
		return false;
	}
	*out = v;
	return true;
}

static void set_defaults(mlp_options *o)
{
	memset(o, 0, sizeof *o);
	o->dims = (mlp_dims){ .in = 16, .hidden = 64, .out = 4, .batch = 64 };
	o->steps = 100;
	o->seed = 1;
	o->lr = 0.1;
	o->faults.hang_rank = MLP_NO_RANK;
	o->slow_rank = MLP_NO_RANK;
	o->faults.crash_rank = MLP_NO_RANK;
	o->faults.hang_step = UINT64_MAX;
	o->faults.crash_step = UINT64_MAX;
}

/* One option with its value; false (message printed) if the value is bad. */
static bool apply(mlp_options *o, int opt, const char *arg)
{
	mlp_dims *d = &o->dims;
	mlp_faults *f = &o->faults;

	switch (opt) {
	case OPT_STEPS: return parse_u64("steps", arg, UINT64_MAX - 1, &o->steps);
	case OPT_HIDDEN: return parse_u32("hidden", arg, 1, MLP_MAX_DIM, &d->hidden);
	case OPT_IN: return parse_u32("in", arg, 1, MLP_MAX_DIM, &d->in);
	case OPT_OUT: return parse_u32("out", arg, 1, MLP_MAX_DIM, &d->out);
	case OPT_BATCH: return parse_u32("batch", arg, 1, MLP_MAX_DIM, &d->batch);
	case OPT_LR: return parse_lr(arg, &o->lr);
	case OPT_SEED: return parse_u64("seed", arg, UINT64_MAX, &o->seed);
	case OPT_SLEEP_MS: return parse_u32("sleep-ms", arg, 0, MLP_MAX_SLEEP_MS, &o->sleep_ms);
	case OPT_SLOW_RANK: return parse_u32("slow-rank", arg, 0, MLP_NO_RANK - 1, &o->slow_rank);
	case OPT_SLOW_MS: return parse_u32("slow-ms", arg, 0, MLP_MAX_SLEEP_MS, &o->slow_ms);
	case OPT_HANG_RANK: return parse_u32("hang-rank", arg, 0, MLP_NO_RANK - 1, &f->hang_rank);
	case OPT_HANG_STEP: return parse_u64("hang-step", arg, UINT64_MAX - 1, &f->hang_step);
	case OPT_CRASH_RANK: return parse_u32("crash-rank", arg, 0, MLP_NO_RANK - 1, &f->crash_rank);
	case OPT_CRASH_STEP: return parse_u64("crash-step", arg, UINT64_MAX - 1, &f->crash_step);
	case OPT_FAULT_ALWAYS: f->always = true; return true;
	case OPT_GRAD_CHECK: o->grad_check = true; return true;
	}
	return false;
}

/* A fault needs both its rank and its step, and a step the run reaches. */
static bool check_fault(const char *what, uint32_t rank, uint64_t step, uint64_t steps)
{
	bool has_rank = rank != MLP_NO_RANK, has_step = step != UINT64_MAX;

	if (has_rank != has_step) {
		fprintf(stderr, MLP_PROG ": --%s-%s given without --%s-%s\n", what,
			has_rank ? "rank" : "step", what, has_rank ? "step" : "rank");
		return false;
	}
	if (has_step && step >= steps) {
		fprintf(stderr,
			MLP_PROG ": --%s-step %" PRIu64 " is not below --steps %" PRIu64
				 ": the fault would never fire\n",
			what, step, steps);
		return false;
	}
	return true;
}

static bool check_options(const mlp_options *o)
{
	const mlp_faults *f = &o->faults;

	if (!check_fault("hang", f->hang_rank, f->hang_step, o->steps) ||
	    !check_fault("crash", f->crash_rank, f->crash_step, o->steps))
		return false;
	if ((o->slow_rank == MLP_NO_RANK) != (o->slow_ms == 0)) {
		fprintf(stderr, MLP_PROG ": --slow-%s given without --slow-%s\n", o->slow_ms ? "ms" : "rank",
			o->slow_ms ? "rank" : "ms");
		return false;
	}
	if (f->always && f->hang_rank == MLP_NO_RANK && f->crash_rank == MLP_NO_RANK) {
		fprintf(stderr, MLP_PROG ": --fault-always needs --hang-rank/--hang-step or "
					 "--crash-rank/--crash-step\n");
		return false;
	}
	return true;
}

/* The option getopt_long refused, as the user wrote it. */
static void report_getopt_error(int c, char **argv)
{
	const char *text = argv[optind - 1];

	if (c == ':')
		fprintf(stderr, MLP_PROG ": %s needs a value\n", text);
	else if (optopt > 0 && optopt < 256) /* a short option, perhaps inside a group like -hx */
		fprintf(stderr, MLP_PROG ": unknown option '-%c' (see --help)\n", optopt);
	else
		fprintf(stderr, MLP_PROG ": unknown option '%s' (see --help)\n", text);
}

enum mlp_parse_result mlp_options_parse(int argc, char **argv, mlp_options *opts)
{
	int c;

	set_defaults(opts);
	opterr = 0; /* our own messages, which name the program as users know it */
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return MLP_PARSE_HELP;
		}
		if (c == '?' || c == ':') {
			report_getopt_error(c, argv);
			return MLP_PARSE_ERROR;
		}
		if (!apply(opts, c, optarg))
			return MLP_PARSE_ERROR;
	}
	if (optind < argc) {
		fprintf(stderr, MLP_PROG ": unexpected argument '%s' (see --help)\n", argv[optind]);
		return MLP_PARSE_ERROR;
	}
	return check_options(opts) ? MLP_PARSE_RUN : MLP_PARSE_ERROR;
}
