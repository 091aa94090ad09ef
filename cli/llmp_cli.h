/* llmp_cli.h - the subcommands of the `llmp` tool. */
#ifndef LLMP_CLI_H
#define LLMP_CLI_H

#include <stdint.h>
#include <stdio.h>

#include <stdbool.h>

#include <llmp/llmp_plan.h>

/* Exit statuses of every subcommand. */
enum {
	LLMP_EXIT_OK = 0,
	LLMP_EXIT_FAILURE = 1, /* the work itself failed, e.g. a write error */
	LLMP_EXIT_USAGE = 2    /* bad input: arguments, layout, sizes */
};

/* Up to 60 bytes of user input with control and non-ASCII bytes as '?',
 * so an argument cannot put escape sequences on the terminal. Returns a
 * static buffer: one use per statement. */
const char *llmp_cli_printable(const char *s);

/* The option getopt_long complained about (call right after it returned
 * '?' or ':'): a short one by its letter, a long one by its text. */
const char *llmp_cli_culprit(char **argv);

/* A decimal count min <= value <= max; else a message "PROG: OPT ..." and -1. */
int llmp_cli_parse_count(const char *prog, const char *opt, const char *text,
			 uint64_t min, uint64_t max, uint64_t *out);

/* A byte size: decimal with an optional K, M or G suffix (powers of 1024). */
int llmp_cli_parse_size(const char *prog, const char *opt, const char *text,
			uint64_t min, uint64_t max, uint64_t *out);

/* `llmp plan ...`; argv[0] is "plan". */
int llmp_cmd_plan(int argc, char **argv);

/* Human-readable plan: a summary and every group, or one rank's view. */
int llmp_plan_write_text(const llmp_plan *plan, uint32_t nodes, int64_t rank,
			 FILE *out);

/* `llmp bench ...` (built with the runtime); argv[0] is "bench". */
int llmp_cmd_bench(int argc, char **argv);

/* `llmp job-end [RC]` (built with the runtime): requeue the job, or not. */
int llmp_cmd_job_end(int argc, char **argv);

/* `llmp ckpt list|verify|inspect|bench ...` (built with the runtime); argv[0] is "ckpt". */
int llmp_cmd_ckpt(int argc, char **argv);

#endif /* LLMP_CLI_H */
