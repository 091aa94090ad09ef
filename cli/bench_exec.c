/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_exec.c - `llmp bench` and `llmp ckpt bench` join a job: they run
 * in llmp-bench, a program of their own linked with the runtime (PMIx,
 * UCX), so that `llmp` itself links neither and `llmp ckpt verify` runs on
 * a login node with HDF5 alone.
 *
 * llmp-bench is installed in $(pkglibexecdir); in a build tree it sits in
 * bench/ beside llmp (cli/bench/), and is taken from there first, so a test
 * runs the program built with it, never an older installed one. The exec keeps the process (and
 * so its place in an srun step and its PMIx identity).
 */
#define _GNU_SOURCE /* memrchr */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llmp_cli.h"

#define BENCH_PROGRAM "llmp-bench"
#define BUILD_TREE_DIR "bench" /* cli/bench/llmp-bench, beside cli/llmp */

/* dir[/sub]/llmp-bench when it is there and executable. */
static bool candidate(const char *dir, size_t dirlen, const char *sub, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%.*s/%s%s" BENCH_PROGRAM, (int)dirlen, dir, sub, *sub ? "/" : "");
	return n > 0 && (size_t)n < len && access(buf, X_OK) == 0;
}

int cli_exec_bench(const char *what, int argc, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + sizeof BUILD_TREE_DIR + sizeof BENCH_PROGRAM + 1];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	const char *slash = n > 0 ? memrchr(self, '/', (size_t)n) : NULL;
	if (!(slash && candidate(self, (size_t)(slash - self), BUILD_TREE_DIR, path, sizeof path)) &&
	    !candidate(LLMP_PKGLIBEXECDIR, strlen(LLMP_PKGLIBEXECDIR), "", path, sizeof path)) {
		fprintf(stderr,
			"llmp %s: %s not found in " BUILD_TREE_DIR
			"/ beside llmp nor in %s: is llmp installed whole?\n",
			what, BENCH_PROGRAM, LLMP_PKGLIBEXECDIR);
		return CLI_EXIT_FAILURE;
	}
	/* llmp-bench WHAT ARGS...: argv[0] of the subcommand becomes WHAT. */
	char **args = calloc((size_t)argc + 2, sizeof *args);
	if (!args) {
		fprintf(stderr, "llmp %s: out of memory\n", what);
		return CLI_EXIT_FAILURE;
	}
	args[0] = (char *)BENCH_PROGRAM;
	args[1] = (char *)what;
	for (int i = 1; i < argc; i++)
		args[i + 1] = argv[i];
	execv(path, args);
	fprintf(stderr, "llmp %s: cannot run %s: %s\n", what, path, strerror(errno));
	free(args);
	return CLI_EXIT_FAILURE;
}
