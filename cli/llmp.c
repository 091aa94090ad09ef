/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp.c - entry point of the `llmp` tool: picks the subcommand. The tool
 * links the planner, the checkpoint reader and HDF5, never PMIx or UCX: the
 * subcommands that join a job run in llmp-bench (bench_exec.c).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "llmp_cli.h"

static void usage(FILE *out)
{
	fputs("usage: llmp plan (--world W | --nodes N --tasks-per-node T)\n"
	      "                 [--parallel SPEC] [--rank R] [--format text|json]\n"
	      "       llmp calibrate [-o FILE] RUNS...   (the step model fitted to a site's runs)\n"
	      "       llmp topo [--file FILE] [--format text|json]\n"
	      "       llmp bench [options]   (run under srun --mpi=pmix like a job)\n"
	      "       llmp top DIR [--format text|json]   (a job's LLMP_METRICS files)\n"
	      "       llmp report DIR [-o FILE]   (the same as an HTML page with pictures)\n"
	      "       llmp job run [options] -- PROG   (a batch script's run, lost nodes recovered)\n"
	      "       llmp job-end [options] [RC]   (last line of a batch script)\n"
	      "       llmp ckpt list|verify|inspect DIR [options]\n"
	      "       llmp ckpt bench [options]   (run under srun --mpi=pmix like a job)\n"
	      "       llmp serve [options] -- CMD   (a --llm-serve step's engine, srun llmp serve)\n"
	      "       llmp info --settings [--format text|json]   (every setting llmp reads, and its value)\n"
	      "       llmp --version\n"
	      "Run 'llmp plan --help', 'llmp bench --help' or 'llmp ckpt --help' for details, and\n"
	      "'llmp plan --parallel help' for the layout grammar.\n",
	      out);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "plan") == 0)
		return cli_plan(argc - 1, argv + 1);
	if (strcmp(argv[1], "calibrate") == 0)
		return cli_calibrate(argc - 1, argv + 1);
	if (strcmp(argv[1], "topo") == 0)
		return cli_topo(argc - 1, argv + 1);
	if (strcmp(argv[1], "top") == 0)
		return cli_top(argc - 1, argv + 1);
	if (strcmp(argv[1], "serve") == 0)
		return cli_serve(argc - 1, argv + 1);
	if (strcmp(argv[1], "info") == 0)
		return cli_info(argc - 1, argv + 1);
	if (strcmp(argv[1], "report") == 0)
		return cli_report(argc - 1, argv + 1);
	if (strcmp(argv[1], "bench") == 0) {
#ifdef LLMP_HAVE_RUNTIME
		return cli_exec_bench("bench", argc - 1, argv + 1);
#else
		fputs("llmp bench: not built: configure found no PMIx or UCX for the runtime\n", stderr);
		return CLI_EXIT_FAILURE;
#endif
	}
	if (strcmp(argv[1], "job") == 0 && argc > 2 && strcmp(argv[2], "run") == 0) {
#ifdef LLMP_HAVE_RUNTIME
		return cli_job_run(argc - 2, argv + 2);
#else
		fputs("llmp job run: not built: configure found no PMIx or UCX for the runtime\n", stderr);
		return CLI_EXIT_FAILURE;
#endif
	}
	if (strcmp(argv[1], "job-end") == 0) {
#ifdef LLMP_HAVE_RUNTIME
		return cli_job_end(argc - 1, argv + 1);
#else
		fputs("llmp job-end: not built: configure found no PMIx or UCX for the runtime\n", stderr);
		return CLI_EXIT_FAILURE;
#endif
	}
	if (strcmp(argv[1], "ckpt") == 0) {
#ifdef LLMP_HAVE_RUNTIME
		return cli_ckpt(argc - 1, argv + 1);
#else
		fputs("llmp ckpt: not built: configure found no PMIx, UCX or HDF5 for the runtime\n", stderr);
		return CLI_EXIT_FAILURE;
#endif
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		puts("llmp " PACKAGE_VERSION);
#ifdef LLMP_SLURM_VERSION
		/* Slurm loads the plugin only under the release it was built for */
		puts("SPANK plugin llm_parallel.so built for Slurm " LLMP_SLURM_VERSION
		     " (Slurm loads it only under that major release: rebuild llmp for every other)");
#else
		puts("SPANK plugin llm_parallel.so not built (configure found no slurm/spank.h)");
#endif
		return CLI_EXIT_OK;
	}
	fprintf(stderr, "llmp: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return CLI_EXIT_USAGE;
}
