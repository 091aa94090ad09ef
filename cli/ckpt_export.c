/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_export.c - `llmp ckpt export --format hf CKPT_DIR OUT_DIR --model M`:
 * a checkpoint's model as Hugging Face safetensors shards (doc/serving.md).
 *
 * The root and the step are found here, with the runtime's own code, as
 * `list`, `verify` and a load find them (the newest complete step, or
 * --step N named when it is not complete). The export itself is Python's
 * (`$LLMP_PYTHON -m llmp.export`, python3 when LLMP_PYTHON is unset; the
 * package llmp must be importable, as `make install` puts it): it maps
 * names, splits fused tensors, converts dtypes and writes JSON, which is
 * NumPy's and h5py's work more than C's. This process becomes the Python
 * one (exec), so its exit status is the export's.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llmp/llmp_env.h>

#include "ckpt_cli.h"

#define PROG "llmp ckpt export"

static void help(void)
{
	fputs("usage: llmp ckpt export [--format hf] CKPT_DIR OUT_DIR --model FILE|SPEC [--step N]\n"
	      "         [--dtype bf16|fp16|fp32] [--max-shard-size SIZE] [--prefix P] [--swiglu-tp N]\n"
	      "         [--quiet]\n"
	      "Writes the model tensors of a checkpoint's step (the newest complete one unless --step)\n"
	      "as Hugging Face safetensors into OUT_DIR, which must not exist: model-0000k-of-0000N\n"
	      ".safetensors, model.safetensors.index.json and config.json. tp shards are merged,\n"
	      "Megatron's fused QKV and SwiGLU fc1 split, the vocabulary padding trimmed; optimizer\n"
	      "state is left out. Everything is written into OUT_DIR.tmp-XXXXXX, then renamed.\n"
	      "  --model        the model, as llmp plan's --model: a config.json, a preset or keys\n"
	      "                 (layers=,hidden=,ffn=,heads=,kv-heads=,vocab=,seq=,rope-theta=,\n"
	      "                 norm-eps=,tied=,family=llama|mistral|qwen2); the checkpoint\n"
	      "                 records no model description\n"
	      "  --dtype        the exported tensors' type (default bf16)\n"
	      "  --max-shard-size  data bytes a file (default 5GB; 500MB, 2GiB, 1048576)\n"
	      "  --prefix       the model tensors' prefix (default: the embedding's)\n"
	      "  --swiglu-tp    the tp that split linear_fc1 (default: the saving layout's)\n"
	      "Runs $LLMP_PYTHON -m llmp.export (python3 when unset), which needs NumPy and h5py.\n"
	      "Exit status: 0 exported, 1 the work failed, 2 bad input (named).\n",
	      stdout);
}

/* The options llmp.export takes with a value, passed on as they are. */
static const struct option options[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "step", required_argument, NULL, 's' },
	{ "model", required_argument, NULL, 'm' },
	{ "dtype", required_argument, NULL, 'd' },
	{ "max-shard-size", required_argument, NULL, 'z' },
	{ "prefix", required_argument, NULL, 'p' },
	{ "swiglu-tp", required_argument, NULL, 't' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int cli_ckpt_export(int argc, char **argv)
{
	struct ckpt_args a = { .progress = -1 };
	/* python -m llmp.export DIR OUT --step N, then the options given, at most two words each. */
	char **args = calloc((size_t)argc * 2 + 12, sizeof *args);
	size_t n = 5;
	char step[32];
	int c, rc;
	if (!args) {
		fprintf(stderr, PROG ": out of memory\n");
		return CLI_EXIT_FAILURE;
	}
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "hf") != 0) {
				free(args);
				return cli_usage_error(PROG, "--format: the one format is hf, not", optarg);
			}
			break;
		case 's':
			if (cli_parse_count(PROG, "--step", optarg, 0, LLMP_CKPT_NEWEST - 1, &a.step)) {
				free(args);
				return CLI_EXIT_USAGE;
			}
			a.has_step = true;
			break;
		case 'q': args[n++] = "--quiet"; break;
		case 'h':
			help();
			free(args);
			return CLI_EXIT_OK;
		case ':': free(args); return cli_usage_error(PROG, "missing value for", cli_culprit(argv));
		case '?': free(args); return cli_usage_error(PROG, "unknown option", cli_culprit(argv));
		default:
			for (const struct option *o = options; o->name; o++)
				if (o->val == c) {
					char *flag = malloc(strlen(o->name) + 3);
					if (!flag) {
						free(args);
						return CLI_EXIT_FAILURE;
					}
					sprintf(flag, "--%s", o->name);
					args[n++] = flag; /* handed to exec: never freed */
					args[n++] = optarg;
				}
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, PROG ": give CKPT_DIR and OUT_DIR (see --help)\n");
		free(args);
		return CLI_EXIT_USAGE;
	}
	a.dir = argv[optind];
	struct ckpt_root root;
	uint64_t picked = 0;
	rc = ckpt_root_open(PROG, a.dir, &root);
	if (rc == CLI_EXIT_OK) {
		rc = ckpt_root_pick(PROG, &root, &a, &picked);
		ckpt_root_close(&root);
	}
	if (rc != CLI_EXIT_OK) {
		free(args);
		return rc;
	}
	const char *python = getenv(LLMP_ENV_PYTHON);
	python = python && *python ? python : "python3";
	snprintf(step, sizeof step, "%" PRIu64, picked);
	args[0] = (char *)python;
	args[1] = "-m";
	args[2] = "llmp.export";
	args[3] = "--step";
	args[4] = step;
	args[n++] = "--"; /* a directory named -x is still a directory */
	args[n++] = argv[optind];
	args[n++] = argv[optind + 1];
	args[n] = NULL;
	fflush(NULL);
	execvp(python, args);
	fprintf(stderr, PROG ": cannot run %s: %s (set LLMP_PYTHON to a Python with llmp, NumPy and h5py)\n",
		cli_printable(python), strerror(errno));
	free(args);
	return CLI_EXIT_FAILURE;
}
