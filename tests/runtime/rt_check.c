/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_check.c - the runtime's test program: command line and dispatch.
 *
 *   rt_check SUBCOMMAND [OPTION...]
 *
 * Run it under `srun --mpi=pmix` (every subcommand but singleton), or
 * alone as a PMIx singleton. Each rank prints "rank R: N checks, M wrong"
 * last, with the first wrong elements named before it, and exits 1 if
 * anything was wrong (2 for a usage error).
 */
#define _POSIX_C_SOURCE 200809L

#include "rt_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	int (*run)(const chk_args *args);
	const char *what;
} commands[] = {
	{ "coll", chk_cmd_coll, "every collective, op, dtype and count on the world and each group" },
	{ "p2p", chk_cmd_p2p, "send/recv/sendrecv along a group (--group, default pp)" },
	{ "stats", chk_cmd_stats, "llmp_get_stats: one init fence; no endpoint for a group of one" },
	{ "mismatch", chk_cmd_mismatch, "ranks given different layouts: init must fail everywhere" },
	{ "kill", chk_cmd_kill, "--victim R kills itself (or --hang: stops answering) mid-allreduce" },
	{ "disagree", chk_cmd_disagree, "--odd R allreduces one element more: every rank fails, none hangs" },
	{ "singleton", chk_cmd_singleton, "no launcher: a world of one, every collective" },
	{ "badargs", chk_cmd_badargs, "every call with bad arguments fails cleanly" },
	{ "leave", chk_cmd_leave, "rank r leaves r * --sleep s after init, without llmp_finalize" },
	{ "metrics", chk_cmd_metrics,
	  "llmp_comm_get_stats: bytes as computed here; --sleep S slows --victim" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: rt_check SUBCOMMAND [OPTION...]\n\nsubcommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].what);
	fprintf(out,
		"\noptions:\n"
		"  --parallel SPEC        layout (else $LLMP_TEST_SPEC, else the plugin's LLMP_PARALLEL)\n"
		"  --timeout S            llmp_init_opts.timeout_s\n"
		"  --ring-threshold B     llmp_init_opts.ring_threshold, in bytes\n"
		"  --shm-threshold B      llmp_init_opts.shm_threshold, in bytes\n"
		"  --large N              the large element count (default 300007)\n"
		"  --quick                counts 0, 1, 7 and the large one only\n"
		"  --group NAME           p2p: the group to use (default pp; or world)\n"
		"  --victim R             kill: the rank that kills itself (default 1)\n"
		"  --hang                 kill: the victim stops answering for a while, then leaves\n"
		"  --max-seconds S        kill: longest allowed detection (default timeout + 0.5)\n"
		"  --count N              kill, disagree: elements of the float32 allreduce (default 4096)\n"
		"  --odd R                mismatch, disagree: the rank that differs (default 1)\n"
		"  --skip-bad-init        badargs: leave out the failing llmp_init calls\n"
		"  --seed N               seed of the random pass (default 1)\n"
		"  --sleep S              metrics: the victim sleeps S seconds before each allreduce;\n"
		"                         leave: rank r sleeps r * S seconds before it leaves\n");
}

static bool parse_number(const char *text, double *out)
{
	char *end;
	*out = strtod(text, &end);
	return end != text && *end == '\0' && *out >= 0;
}

static int parse_args(int argc, char **argv, chk_args *a)
{
	double v;
	memset(a, 0, sizeof *a);
	a->spec = getenv("LLMP_TEST_SPEC");
	if (a->spec && !*a->spec)
		a->spec = NULL;
	a->large = 300007; /* prime; 1.2 MB of float32, well above the 64 KiB ring threshold */
	a->group = "pp";
	a->victim = 1;
	a->odd = 1;
	a->count = 4096;
	a->seed = 1;
	for (int i = 2; i < argc; i++) {
		const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(o, "--quick") == 0) {
			a->quick = true;
			continue;
		}
		if (strcmp(o, "--hang") == 0) {
			a->hang = true;
			continue;
		}
		if (strcmp(o, "--skip-bad-init") == 0) {
			a->skip_bad_init = true;
			continue;
		}
		if (!val) {
			fprintf(stderr, "rt_check: %s: unknown option or missing value\n", o);
			return -1;
		}
		i++;
		if (strcmp(o, "--parallel") == 0) {
			a->spec = val;
			continue;
		}
		if (strcmp(o, "--group") == 0) {
			a->group = val;
			continue;
		}
		if (!parse_number(val, &v)) {
			fprintf(stderr, "rt_check: %s %s: not a number\n", o, val);
			return -1;
		}
		if (strcmp(o, "--timeout") == 0)
			a->timeout_s = v;
		else if (strcmp(o, "--ring-threshold") == 0)
			a->ring_threshold = (size_t)v;
		else if (strcmp(o, "--shm-threshold") == 0)
			a->shm_threshold = (size_t)v;
		else if (strcmp(o, "--count") == 0 && v >= 1)
			a->count = (size_t)v;
		else if (strcmp(o, "--large") == 0 && v >= 8)
			a->large = (size_t)v;
		else if (strcmp(o, "--victim") == 0)
			a->victim = (uint32_t)v;
		else if (strcmp(o, "--odd") == 0)
			a->odd = (uint32_t)v;
		else if (strcmp(o, "--max-seconds") == 0)
			a->max_seconds = v;
		else if (strcmp(o, "--seed") == 0)
			a->seed = (unsigned)v;
		else if (strcmp(o, "--sleep") == 0)
			a->sleep_s = v;
		else {
			fprintf(stderr,
				"rt_check: %s: unknown option (or --large below 8, --count below 1)\n", o);
			return -1;
		}
	}
	return 0;
}

llmp_status chk_init(const chk_args *args, llmp_ctx **ctx)
{
	llmp_init_opts opts;
	llmp_status st;

	llmp_init_opts_default(&opts);
	opts.spec = args->spec;
	opts.timeout_s = args->timeout_s;
	opts.ring_threshold = args->ring_threshold;
	opts.shm_threshold = args->shm_threshold;
	*ctx = NULL;
	st = llmp_init(&opts, ctx);
	if (st == LLMP_OK && *ctx)
		report_set_rank(llmp_rank(*ctx));
	return st;
}

int main(int argc, char **argv)
{
	chk_args args;

	/* srun interleaves the tasks' output by line */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (parse_args(argc, argv, &args) != 0)
		return 2;
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(&args);
	fprintf(stderr, "rt_check: %s: unknown subcommand\n", argv[1]);
	usage(stderr);
	return 2;
}
