/* llmp_cli.h - the subcommands of the `llmp` tool. */
#ifndef LLMP_CLI_H
#define LLMP_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "llmp_plan.h"

/* Exit statuses of every subcommand. */
enum {
	LLMP_EXIT_OK = 0,
	LLMP_EXIT_FAILURE = 1, /* the work itself failed, e.g. a write error */
	LLMP_EXIT_USAGE = 2    /* bad input: arguments, layout, sizes */
};

/* `llmp plan ...`; argv[0] is "plan". */
int llmp_cmd_plan(int argc, char **argv);

/* Human-readable plan: a summary and every group, or one rank's view. */
int llmp_plan_write_text(const llmp_plan *plan, uint32_t nodes, int64_t rank,
			 FILE *out);

#endif /* LLMP_CLI_H */
