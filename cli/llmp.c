/*
 * llmp.c - entry point of the `llmp` tool: picks the subcommand.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "llmp_cli.h"

static void usage(FILE *out)
{
	fputs("usage: llmp plan (--world W | --nodes N --tasks-per-node T)\n"
	      "                 [--parallel SPEC] [--rank R] [--format text|json]\n"
	      "       llmp --version\n"
	      "Run 'llmp plan --help' for details, 'llmp plan --parallel help' for the\n"
	      "layout grammar.\n",
	      out);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return LLMP_EXIT_USAGE;
	}
	if (strcmp(argv[1], "plan") == 0)
		return llmp_cmd_plan(argc - 1, argv + 1);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return LLMP_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		puts("llmp " PACKAGE_VERSION);
		return LLMP_EXIT_OK;
	}
	fprintf(stderr, "llmp: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return LLMP_EXIT_USAGE;
}
