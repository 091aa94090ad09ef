/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_job.c - `llmp topo --job`, run as every task of an srun step (in
 * llmp-bench, which links the runtime): llmp_init with each node's own
 * topology published in its one fence (runtime/comm/node_topo.h), then
 * rank 0 prints the job's, merged, and in text whether every rail's HCA
 * ports agree across the nodes and each node's GPUDirect RDMA line. The other ranks print nothing.
 */
#define _GNU_SOURCE /* the PMIx headers want strncasecmp */

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <llmp/llmp.h>
#include <llmp/llmp_env.h>
#include "cli/llmp_cli.h"
#include "runtime/comm/node_gdr.h"
#include "runtime/comm/node_topo.h"

#define PROG "llmp topo --job"

int cli_topo_job(int argc, char **argv)
{
	static const struct option options[] = {
		{ "job", no_argument, NULL, 'j' },
		{ "format", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false;
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":jf:", options, NULL)) != -1) {
		switch (c) {
		case 'j': break;
		case 'f':
			if (cli_parse_format(PROG, optarg, &json))
				return CLI_EXIT_USAGE;
			break;
		case ':': return cli_usage_error(PROG, "a value is missing after", cli_culprit(argv));
		default: return cli_usage_error(PROG, "with --job, only --format; not", cli_culprit(argv));
		}
	}
	if (optind < argc)
		return cli_usage_error(PROG, "unexpected argument", argv[optind]);

	llmp_init_opts opts;
	llmp_ctx *ctx = NULL;
	llmp_init_opts_default(&opts);
	setenv(LLMP_ENV_TOPOLOGY_GATHER, "1", 1);
	llmp_status st = llmp_init(&opts, &ctx);
	if (st != LLMP_OK) {
		fprintf(stderr, PROG ": llmp_init: %s\n", ctx ? llmp_errmsg(ctx) : llmp_strerror(st));
		llmp_finalize(ctx);
		return CLI_EXIT_FAILURE;
	}
	int rc = CLI_EXIT_OK;
	if (llmp_rank(ctx) == 0) {
		struct topo job;
		char msg[LLMP_MSG_MAX];
		if (rt_topology_gather(ctx, &job, msg, sizeof msg) != LLMP_OK) {
			fprintf(stderr, PROG ": %s\n", msg);
			rc = CLI_EXIT_FAILURE;
		} else {
			if ((json ? topo_write_json(&job, stdout) : topo_write_text(&job, stdout)) != 0 ||
			    fflush(stdout) != 0)
				rc = CLI_EXIT_FAILURE;
			/* The fabric across the nodes (topo_rails.c): said, not an error of this tool. */
			if (!json && rc == CLI_EXIT_OK && cli_topo_rails(&job, stdout) != CLI_EXIT_OK)
				fflush(stdout);
			/* Each node's GPUDirect RDMA, judged on the node (runtime/comm/node_gdr.c). */
			if (!json && rc == CLI_EXIT_OK) {
				printf("GPUDirect RDMA, each GPU with its nearest usable HCA:\n");
				if (rt_gdr_gather(ctx, stdout, msg, sizeof msg) != LLMP_OK ||
				    fflush(stdout) != 0)
					rc = CLI_EXIT_FAILURE;
			}
			topo_free(&job);
		}
	}
	llmp_finalize(ctx);
	return rc;
}
