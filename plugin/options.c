/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * options.c - the plugin's options and the one context they fill.
 *
 *   --llm-parallel=SPEC   the layout (grammar: llmp_spec.h); "help" prints it
 *   --llm-checkpoint=SPEC checkpoint root and policy (llmp_ckpt_spec.h); "help"
 *   --llm-gpu-bind=MODE   node: the step's GPUs, LOCAL_RANK the task's (default);
 *                         task: one GPU per task; none (gpu_bind.h)
 *   --llm-placement=MODE  block: ranks are Slurm's task ids (default);
 *                         topology: ranks in topology order (job_place.h)
 *   --llm-model=MODEL     the model to train (planner/model_desc.h), for
 *                         --llm-parallel=auto and the memory guard
 *                         (model_layout.h); "help" lists the presets
 *   --llm-guard=warn|refuse  warn: run a written layout the memory guard
 *                         refuses, with a warning, logged (site.h guard_override=);
 *                         refuse: the guard's verdict (the default)
 *   --llm-serve=ENGINE    a serving job: ray, vllm or sglang, one task per
 *                         node (serve.h); "help" explains
 *   --llm-node-check      a step that checks its node (job_script.c): its task
 *                         fails where node_clean.h finds the node unfit; the
 *                         node check of `llmp job run`
 *
 * Values are stored as given; they are checked in init_post_opt, once the
 * environment and site defaults are known. A later value replaces an earlier
 * one: srun processes an sbatch option (through SLURM_SPANK_* variables)
 * before its own command line, which must win.
 */
#include "plugin.h"
#include "gpu_bind.h"
#include "serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llmp/llmp_spec.h>
#include "planner/model_desc.h"

enum {
	OPT_PARALLEL = 1,
	OPT_CHECKPOINT,
	OPT_GPU_BIND,
	OPT_PLACEMENT,
	OPT_MODEL,
	OPT_GUARD,
	OPT_SERVE,
	OPT_NODE_CHECK
};

static struct plugin_ctx ctx = { .gpu_bind = -1, .placement = -1 };

struct plugin_ctx *plugin_ctx(void)
{
	return &ctx;
}

bool plugin_renumber_asked(void)
{
	return ctx.placement >= 0 ? ctx.placement == 1 : ctx.site.placement_topology;
}

/* The grammar of the option val, for OPTION=help; ends the process. */
static void print_grammar_and_exit(int val)
{
	if (val == OPT_SERVE) {
		fputs("--llm-serve=ray|vllm|sglang: a serving job. One task per node\n"
		      "(--ntasks-per-node=1) sees all the node's GPUs; --llm-parallel=tp=N,pp=N[,dp=N]\n"
		      "lays the model over them (tp*pp*dp = the GPUs), checked against --llm-model's\n"
		      "heads and memory at submission. Each node gets its role, a block of the job's\n"
		      "own ports, a 0600 token file and the engine's arguments (LLMP_VLLM_ARGS,\n"
		      "LLMP_SGLANG_ARGS, LLMP_RAY_START_ARGS); run the engine with\n"
		      "  srun llmp serve -- vllm serve MODEL\n"
		      "See llm_parallel(8) and doc/serving.md.\n",
		      stdout);
	} else if (val == OPT_MODEL) {
		printf("--llm-model=MODEL: the model the job trains, for --llm-parallel=auto (the\n"
		       "fastest layout that fits, chosen by srun for its task count) and for the\n"
		       "memory guard of a layout you write (refused at submission when it cannot\n"
		       "fit). MODEL is a preset, a Hugging Face config.json path, or keys:\n"
		       "  presets: %s\n"
		       "  keys:    layers=,hidden=,seq=[,ffn=,heads=,kv-heads=,vocab=,experts=,topk=,\n"
		       "           gbs=,mbs=,recompute=none|selective|full,...] (llmp-plan(1))\n"
		       "  e.g.     --llm-model=llama3-70b,gbs=512,seq=8192\n"
		       "The GPU comes from LLMP_GPU (h100, a100-40gb, ..., or mem=GiB,tflops=N),\n"
		       "else from the site's gpu= setting. LLMP_MODEL gives a model too; the\n"
		       "option wins. See llm_parallel(8).\n",
		       model_desc_preset_names());
	} else if (val == OPT_CHECKPOINT) {
		fputs(llmp_ckpt_spec_grammar(), stdout);
		fputs("The environment variable LLMP_CHECKPOINT gives a spec too; the option\n"
		      "wins key by key. Use with sbatch --requeue. See llm_parallel(8).\n",
		      stdout);
	} else {
		fputs(llmp_spec_grammar(), stdout);
		fputs("--llm-parallel=auto: the fastest layout that fits the model of --llm-model\n"
		      "(--llm-model=help), chosen by srun for the step's task count.\n",
		      stdout);
		fputs("Other options: --llm-gpu-bind=node|task|none (every task sees the step's\n"
		      "GPUs and LOCAL_RANK indexes its own, the default; one GPU per task; as Slurm\n"
		      "set them), --llm-placement=block|topology (ranks as Slurm's task ids, the\n"
		      "default, or in the topology's order), --llm-checkpoint=DIR[,...]\n"
		      "(--llm-checkpoint=help explains), --llm-guard=warn (run a layout the\n"
		      "memory guard of --llm-model refuses, with a warning, logged)\n"
		      "The environment variable LLMP_PARALLEL gives a layout too; the option wins\n"
		      "key by key. See llm_parallel(8).\n",
		      stdout);
	}
	exit(0);
}

static int option_cb(int val, const char *optarg, int remote)
{
	if (val == OPT_GPU_BIND) {
		int mode = plugin_gpus_parse(optarg);
		if (mode < 0) {
			plugin_user_message("--llm-gpu-bind: expected 'node', 'task' or 'none'");
			return -1;
		}
		ctx.gpu_bind = mode;
		return 0;
	}
	if (val == OPT_PLACEMENT) {
		if (!optarg || (strcmp(optarg, "block") != 0 && strcmp(optarg, "topology") != 0)) {
			plugin_user_message("--llm-placement: expected 'block' or 'topology'");
			return -1;
		}
		ctx.placement = strcmp(optarg, "topology") == 0;
		return 0;
	}
	if (val == OPT_NODE_CHECK) {
		ctx.node_check = true;
		return 0;
	}
	if (val == OPT_GUARD) {
		if (!optarg || (strcmp(optarg, "warn") != 0 && strcmp(optarg, "refuse") != 0)) {
			plugin_user_message("--llm-guard: expected 'warn' (run a layout the memory guard "
					    "refuses, with a warning) or 'refuse'");
			return -1;
		}
		ctx.guard_override = strcmp(optarg, "warn") == 0;
		return 0;
	}
	/* "help" answers at once, on the submitting side, and submits nothing. */
	if (!remote && optarg && strcmp(optarg, "help") == 0)
		print_grammar_and_exit(val);
	if (val == OPT_SERVE && !remote && plugin_serve_engine_parse(optarg) < 0) {
		plugin_user_message("--llm-serve: expected 'ray', 'vllm' or 'sglang'");
		return -1;
	}
	char *copy = strdup(optarg ? optarg : "");
	if (!copy)
		return -1;
	char **slot = val == OPT_CHECKPOINT ? &ctx.ckpt_option
		      : val == OPT_MODEL    ? &ctx.model_option
		      : val == OPT_SERVE    ? &ctx.serve_option
					    : &ctx.option;
	free(*slot);
	*slot = copy;
	return 0;
}

static struct spank_option options[] = {
	{ "llm-parallel", "SPEC",
	  "[llm_parallel] 4D layout tp=N,pp=N,cp=N,ep=N,etp=N,dp=N|auto,"
	  "order=tp-cp-ep-dp-pp,vpp=N, or auto (with --llm-model); 'help' explains",
	  1, OPT_PARALLEL, option_cb },
	{ "llm-checkpoint", "SPEC",
	  "[llm_parallel] checkpoints of a requeued job "
	  "DIR[,every=N|Nmin][,keep=N][,restarts=N][,files=rank|node]"
	  "[,stripe=COUNT[:SIZE][:POOL]]; 'help' explains",
	  1, OPT_CHECKPOINT, option_cb },
	{ "llm-model", "MODEL",
	  "[llm_parallel] the model trained, for --llm-parallel=auto and the memory "
	  "guard: a preset, a config.json or keys; 'help' explains",
	  1, OPT_MODEL, option_cb },
	{ "llm-guard", "warn|refuse",
	  "[llm_parallel] with --llm-model and a written layout: warn runs one the memory "
	  "guard refuses (it cannot fit even allowing for the model's error), with a "
	  "warning, logged; refuse, the default, does not",
	  1, OPT_GUARD, option_cb },
	{ "llm-gpu-bind", "node|task|none",
	  "[llm_parallel] with --llm-parallel: every task sees the step's GPUs and "
	  "LOCAL_RANK indexes its own (node, the default), one GPU per task with "
	  "LOCAL_RANK=0 (task), or GPUs and LOCAL_RANK as Slurm set them (none)",
	  1, OPT_GPU_BIND, option_cb },
	{ "llm-placement", "block|topology",
	  "[llm_parallel] with --llm-parallel: ranks are Slurm's task ids (block, "
	  "the default) or follow the topology (LLMP_TOPOLOGY_FILE), NVLink "
	  "domains and switches first",
	  1, OPT_PLACEMENT, option_cb },
	{ "llm-serve", "ray|vllm|sglang",
	  "[llm_parallel] a serving job: one task per node runs the engine with "
	  "its arguments, ports and token (llmp serve); 'help' explains",
	  1, OPT_SERVE, option_cb },
	{ "llm-node-check", NULL,
	  "[llm_parallel] check the step's nodes before work: its task fails on a node "
	  "whose GPUs hold a process or memory of an earlier step or another user, or ask "
	  "for a reset (the node check of llmp job run)",
	  0, OPT_NODE_CHECK, option_cb },
};

int plugin_options_register(spank_t sp)
{
	for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
		spank_err_t rc = spank_option_register(sp, &options[i]);
		if (rc != ESPANK_SUCCESS) {
			slurm_error(PLUGIN_NAME ": cannot register --%s: %s", options[i].name,
				    spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

void plugin_ctx_release(void)
{
	free(ctx.option);
	ctx.option = NULL;
	free(ctx.ckpt_option);
	ctx.ckpt_option = NULL;
	free(ctx.model_option);
	ctx.model_option = NULL;
	free(ctx.serve_option);
	ctx.serve_option = NULL;
	llmp_plan_destroy(ctx.plan);
	ctx.plan = NULL;
	plugin_node_place_free(&ctx.place);
	ctx.placed = false;
	plugin_job_place_free(&ctx.job);
	ctx.job_placed = ctx.renumbered = false;
	free(ctx.owner_groups);
	ctx.owner_groups = NULL;
	ctx.owner.groups = NULL;
	ctx.owner.ngroups = 0;
}
