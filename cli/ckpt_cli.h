/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_cli.h - what the `llmp ckpt` subcommands share (cli/cmd_ckpt.c):
 * their common options, the checkpoint root and the step they look at.
 *
 * They read checkpoints with the runtime's own code (runtime/ckpt/format/ckpt_format.h),
 * so the tool and a load agree on what is complete and what is corrupt.
 */
#ifndef LLMP_CKPT_CLI_H
#define LLMP_CKPT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/ckpt/format/ckpt_format.h"
#include "llmp_cli.h"

/* The options a subcommand accepts besides --json, --format and --help. */
enum {
	CKPT_OPT_STEP = 1 << 0,     /* --step N */
	CKPT_OPT_PROGRESS = 1 << 1, /* --progress, --no-progress */
};

struct ckpt_args {
	const char *dir;
	bool json;
	bool has_step;
	uint64_t step;
	int progress; /* -1: when stderr is a terminal; 0: never; 1: always */
};

/*
 * Parse argv (argv[0] is the subcommand): one DIR and the options in
 * `allowed`. Returns 0, -1 after --help was printed, or CLI_EXIT_USAGE
 * after a message naming the culprit.
 */
int ckpt_parse_args(const char *prog, int argc, char **argv, unsigned allowed, void (*help)(void),
		    struct ckpt_args *a);

/* A checkpoint root as the tool found it. */
struct ckpt_root {
	const char *path;
	struct ck_entry *entries; /* newest first (ck_list_entries) */
	size_t n;
	bool has_latest; /* `latest` exists and names a step */
	uint64_t latest;
	char latest_problem[LLMP_MSG_MAX]; /* `latest` exists but is unreadable or malformed */
};

/*
 * Open dir as a checkpoint root: a directory holding step-N directories
 * (complete, .tmp or .deleting) or a `latest` file. Returns CLI_EXIT_OK,
 * or the exit status after a message: CLI_EXIT_USAGE for a directory that
 * is missing or no checkpoint root (a step directory itself is named as
 * such), CLI_EXIT_FAILURE when it cannot be read.
 */
int ckpt_root_open(const char *prog, const char *dir, struct ckpt_root *root);
void ckpt_root_close(struct ckpt_root *root);

/* Whether root has the complete checkpoint `step`. */
bool ckpt_root_has(const struct ckpt_root *root, uint64_t step);

/*
 * The step a subcommand looks at: --step N if given (CLI_EXIT_USAGE and a
 * message when it is not complete there), else the newest complete one, as
 * llmp_ckpt_load picks it (CLI_EXIT_FAILURE and a message when there is none).
 */
int ckpt_root_pick(const char *prog, const struct ckpt_root *root, const struct ckpt_args *a, uint64_t *step);

/* ROOT/step-N: the directory of a complete step. */
void ckpt_step_dir(const struct ckpt_root *root, uint64_t step, char *buf, size_t len);

/* The subcommands; argv[0] is the subcommand's name. */
int cli_ckpt_list(int argc, char **argv);
int cli_ckpt_verify(int argc, char **argv);
int cli_ckpt_inspect(int argc, char **argv);
int cli_ckpt_export(int argc, char **argv); /* runs $LLMP_PYTHON -m llmp.export (ckpt_export.c) */
int cli_ckpt_bench(int argc, char **argv);

#endif /* LLMP_CKPT_CLI_H */
