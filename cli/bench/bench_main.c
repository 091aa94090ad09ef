/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_main.c - llmp-bench, the subcommands of `llmp` that join a job
 * (bench_exec.c): `llmp-bench bench ARGS` is `llmp bench ARGS`, and
 * `llmp-bench ckpt-bench ARGS` is `llmp ckpt bench ARGS`, `llmp-bench
 * topo-job ARGS` is `llmp topo --job ARGS`. Linked with the
 * runtime; not meant to be called by hand.
 */
#include <stdio.h>
#include <string.h>

#include "cli/ckpt_cli.h"
#include "cli/llmp_cli.h"

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "bench") == 0)
		return cli_bench(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "ckpt-bench") == 0)
		return cli_ckpt_bench(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "topo-job") == 0)
		return cli_topo_job(argc - 1, argv + 1);
	fputs("usage: llmp-bench bench|ckpt-bench|topo-job [options]\n"
	      "This is the part of llmp that joins a job: run 'llmp bench' or 'llmp ckpt bench'.\n",
	      stderr);
	return CLI_EXIT_USAGE;
}
