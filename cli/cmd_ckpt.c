/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_ckpt.c - `llmp ckpt`: picks the subcommand (list, verify, inspect,
 * export, bench), and what list, verify, inspect and export share: their options, the
 * checkpoint root, the step they look at.
 *
 * Exit statuses as every llmp subcommand: 0 success, 1 the work failed
 * (a damaged checkpoint, an unreadable file), 2 bad input (an option, a
 * directory that is no checkpoint root, a step that is not there).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt_cli.h"

static void usage(FILE *out)
{
	fputs("usage: llmp ckpt list DIR [--json]\n"
	      "       llmp ckpt verify DIR [--step N] [--json] [--progress | --no-progress]\n"
	      "       llmp ckpt inspect DIR [--step N] [--json]\n"
	      "       llmp ckpt export [--format hf] DIR OUT_DIR --model FILE|SPEC [--step N] [--dtype T]\n"
	      "       llmp ckpt bench [options]   (run under srun --mpi=pmix like a job)\n"
	      "DIR is a checkpoint root, the directory given to llmp_ckpt_open (it holds\n"
	      "step-N directories). Run 'llmp ckpt SUBCOMMAND --help' for details.\n",
	      out);
}

/* `llmp ckpt bench` joins a job: llmp-bench runs it. */
static int run_ckpt_bench(int argc, char **argv)
{
	return cli_exec_bench("ckpt-bench", argc, argv);
}

int cli_ckpt(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int, char **);
	} subcommands[] = {
		{ "list", cli_ckpt_list },     { "verify", cli_ckpt_verify }, { "inspect", cli_ckpt_inspect },
		{ "export", cli_ckpt_export }, { "bench", run_ckpt_bench },
	};
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
		if (strcmp(argv[1], subcommands[i].name) == 0)
			return subcommands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "llmp ckpt: unknown subcommand '%s'\n", cli_printable(argv[1]));
	usage(stderr);
	return CLI_EXIT_USAGE;
}

/* ------------------------------------------------------------- options */

int ckpt_parse_args(const char *prog, int argc, char **argv, unsigned allowed, void (*help)(void),
		    struct ckpt_args *a)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "format", required_argument, NULL, 'f' },
		{ "step", required_argument, NULL, 's' },
		{ "progress", no_argument, NULL, 'P' },
		{ "no-progress", no_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	*a = (struct ckpt_args){ .progress = -1 };
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":f:s:h", options, NULL)) != -1) {
		if (c == 's' && !(allowed & CKPT_OPT_STEP))
			return cli_usage_error(prog, "unknown option for this subcommand:", "--step");
		if ((c == 'P' || c == 'Q') && !(allowed & CKPT_OPT_PROGRESS))
			return cli_usage_error(prog, "unknown option for this subcommand:",
					       c == 'P' ? "--progress" : "--no-progress");
		switch (c) {
		case 'j': a->json = true; break;
		case 'f':
			if (cli_parse_format(prog, optarg, &a->json))
				return CLI_EXIT_USAGE;
			break;
		case 's':
			if (cli_parse_count(prog, "--step", optarg, 0, LLMP_CKPT_NEWEST - 1, &a->step))
				return CLI_EXIT_USAGE;
			a->has_step = true;
			break;
		case 'P':
		case 'Q': a->progress = c == 'P'; break;
		case 'h': help(); return -1;
		case ':': return cli_usage_error(prog, "missing value for", cli_culprit(argv));
		default: return cli_usage_error(prog, "unknown option", cli_culprit(argv));
		}
	}
	if (optind == argc) {
		fprintf(stderr, "%s: give the checkpoint root directory (see --help)\n", prog);
		return CLI_EXIT_USAGE;
	}
	if (optind + 1 < argc)
		return cli_usage_error(prog, "unexpected argument", argv[optind + 1]);
	a->dir = argv[optind];
	return 0;
}

/* ---------------------------------------------------------------- root */

/* Why dir, which holds no checkpoint, is no root: a step directory itself, or anything else. */
static int not_a_root(const char *prog, const char *dir)
{
	char manifest[4200];
	struct stat sb;
	snprintf(manifest, sizeof manifest, "%s/" CK_MANIFEST, dir);
	if (stat(manifest, &sb) == 0)
		fprintf(stderr,
			"%s: %s is one checkpoint, not a checkpoint root: give the directory that "
			"holds it (and --step N)\n",
			prog, dir);
	else
		fprintf(stderr,
			"%s: %s is not a checkpoint root: it holds no step-N directory and no '" CK_LATEST
			"'\n",
			prog, dir);
	return CLI_EXIT_USAGE;
}

int ckpt_root_open(const char *prog, const char *dir, struct ckpt_root *root)
{
	char msg[LLMP_MSG_MAX], latest[4200];
	struct stat sb;
	memset(root, 0, sizeof *root);
	root->path = dir;
	if (stat(dir, &sb) != 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, dir, strerror(errno));
		return errno == ENOENT || errno == ENOTDIR ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
	}
	if (!S_ISDIR(sb.st_mode)) {
		fprintf(stderr, "%s: %s is not a directory\n", prog, dir);
		return CLI_EXIT_USAGE;
	}
	if (ck_list_entries(dir, &root->entries, &root->n, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, "%s: %s\n", prog, msg);
		return CLI_EXIT_FAILURE;
	}
	snprintf(latest, sizeof latest, "%s/" CK_LATEST, dir);
	bool latest_there = lstat(latest, &sb) == 0;
	if (root->n == 0 && !latest_there)
		return not_a_root(prog, dir);
	if (latest_there)
		root->has_latest = ck_read_latest(dir, &root->latest, root->latest_problem,
						  sizeof root->latest_problem) == LLMP_OK;
	return CLI_EXIT_OK;
}

void ckpt_root_close(struct ckpt_root *root)
{
	free(root->entries);
	root->entries = NULL;
	root->n = 0;
}

bool ckpt_root_has(const struct ckpt_root *root, uint64_t step)
{
	for (size_t i = 0; i < root->n; i++)
		if (root->entries[i].step == step && root->entries[i].kind == CK_ENTRY_COMPLETE)
			return true;
	return false;
}

/* Why step is not complete under root, when a directory of it is there: "; step-7.tmp is ...", or "". */
static const char *why_incomplete(const struct ckpt_root *root, uint64_t step, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < root->n && !buf[0]; i++) {
		if (root->entries[i].step != step)
			continue;
		if (root->entries[i].kind == CK_ENTRY_TMP)
			snprintf(buf, len,
				 ": step-%" PRIu64 CK_SUFFIX_TMP " is a save in progress, or one that was "
				 "killed",
				 step);
		else if (root->entries[i].kind == CK_ENTRY_DELETING)
			snprintf(buf, len, ": step-%" PRIu64 CK_SUFFIX_DELETING " is being removed", step);
		else if (root->entries[i].kind == CK_ENTRY_DAMAGED)
			snprintf(buf, len,
				 ": step-%" PRIu64 CK_SUFFIX_DAMAGED " failed its checks when a job "
				 "loaded it",
				 step);
	}
	return buf;
}

int ckpt_root_pick(const char *prog, const struct ckpt_root *root, const struct ckpt_args *a, uint64_t *step)
{
	char why[128];
	if (a->has_step) {
		if (ckpt_root_has(root, a->step)) {
			*step = a->step;
			return CLI_EXIT_OK;
		}
		fprintf(stderr, "%s: %s has no complete step-%" PRIu64 "%s\n", prog, root->path, a->step,
			why_incomplete(root, a->step, why, sizeof why));
		return CLI_EXIT_USAGE;
	}
	for (size_t i = 0; i < root->n; i++)
		if (root->entries[i].kind == CK_ENTRY_COMPLETE) {
			*step = root->entries[i].step;
			return CLI_EXIT_OK;
		}
	fprintf(stderr, "%s: %s holds no complete checkpoint\n", prog, root->path);
	return CLI_EXIT_FAILURE;
}

void ckpt_step_dir(const struct ckpt_root *root, uint64_t step, char *buf, size_t len)
{
	ck_step_path(root->path, step, "", buf, len);
}
