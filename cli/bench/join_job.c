/* SPDX-License-Identifier: BSD-3-Clause */
/* join_job.c - a command of llmp-bench joining the job as one of its ranks (llmp_init). */
#include <stdio.h>

#include "cli/llmp_cli.h"
#include <llmp/llmp.h>

int cli_join_job(const char *prog, const char *spec, llmp_ctx **ctx)
{
	llmp_init_opts opts;
	llmp_init_opts_default(&opts);
	opts.spec = spec;
	*ctx = NULL;
	llmp_status st = llmp_init(&opts, ctx);
	if (st == LLMP_OK)
		return CLI_EXIT_OK;
	fprintf(stderr, "%s: %s: %s\n", prog, llmp_strerror(st), llmp_errmsg(*ctx));
	llmp_finalize(*ctx);
	*ctx = NULL;
	/* a layout the user gave that cannot be is a usage error, as everywhere in llmp */
	return st == LLMP_ERR_SPEC || st == LLMP_ERR_LAYOUT ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
}
