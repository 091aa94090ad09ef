/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin.h - state and entry points shared by the files of llm_parallel.so.
 *
 * SPANK calls option callbacks without a handle, so the plugin keeps one
 * context per process (srun, sbatch, salloc or one slurmstepd); every file
 * reaches it through plugin_ctx().
 */
#ifndef LLMP_PLUGIN_H
#define LLMP_PLUGIN_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <slurm/spank.h>

#include <llmp/llmp_ckpt_spec.h>
#include <llmp/llmp_plan.h>
#include "bounded.h"
#include "gpu_check.h"
#include "job_place.h"
#include "model_layout.h"
#include "node_place.h"
#include "site.h"

#define PLUGIN_NAME "llm_parallel"

struct plugin_ctx {
	struct plugin_site site;
	char *option;                  /* --llm-parallel value, NULL if not given */
	char *ckpt_option;             /* --llm-checkpoint value, NULL if not given */
	char *model_option;            /* --llm-model value, NULL if not given */
	int gpu_bind;                  /* --llm-gpu-bind: -1 not given, else enum plugin_gpus */
	int placement;                 /* --llm-placement: -1 not given, 0 block, 1 topology */
	char *serve_option;            /* --llm-serve value, NULL if not given (serve.h) */
	bool guard_override;           /* --llm-guard=warn */
	bool node_check;               /* --llm-node-check (job_script.c) */
	char node_unfit[LLMP_MSG_MAX]; /* its verdict in task_init_privileged, said in task_init */

	/*
	 * slurmstepd only: prepared once per step in user_init, which touches
	 * no path the user chose but through a bounded child (bounded.h);
	 * the placement is each task's own, made in task_init
	 */
	bool batch; /* the batch script's step: checkpoint variables only */
	bool active;
	bool ckpt_active; /* ckpt holds the checked checkpoint spec */
	llmp_ckpt_spec ckpt;
	uint32_t restart_count;                   /* SLURM_RESTART_COUNT of the step */
	char model_args[PLUGIN_MODEL_ARGS_MAX];   /* LLMP_MODEL_ARGS from srun, checked; "" for none */
	char stage_text[PLUGIN_MODEL_ARGS_MAX];   /* LLMP_STAGE_LAYERS from srun; "" for none */
	uint32_t stage_layers[PLUGIN_STAGES_MAX]; /* its counts, checked against the plan's pp */
	bool has_stage_layers;
	char peaks_text[PLUGIN_PEAKS_MAX];                 /* LLMP_MODEL_PEAKS from srun; "" for none */
	struct plugin_stage_peak peaks[PLUGIN_STAGES_MAX]; /* checked against the plan's pp */
	bool has_peaks;
	bool failed;              /* task_init must fail every task */
	char error[LLMP_MSG_MAX]; /* why, for the job's output */
	llmp_plan *plan;
	char layout_path[PATH_MAX];     /* "" when no file was written */
	uint64_t nccl_topo_token;       /* the random part of NCCL_TOPO_FILE's name (nccl_env.h) */
	char layout_note[LLMP_MSG_MAX]; /* the TMPDIR the file could not go to, for local task 0 */
	struct plugin_identity owner;   /* the job's user and groups, for work on their paths */
	gid_t *owner_groups;            /* owner.groups, ours to free */
	uint32_t job_id, step_id, nnodes, node_id;
	bool placed; /* place holds this node's tasks' GPUs and HCAs */
	struct plugin_node_place place;
	bool job_placed; /* job holds the whole step's placement (job_place.h) */
	bool renumbered; /* and its grid ranks are not Slurm's task ids */
	struct plugin_job_place job;
	char place_warning[LLMP_MSG_MAX]; /* why not, when a description was given but unusable */
	/* The task only, from task_init_privileged (root) to task_init: ACS of the node's bridges. */
	struct gdr_pcidev *acs;
	unsigned nacs;
	/* A serving step (serve.h): the engine, its layout and this node's token file. */
	int serve_engine; /* enum plugin_serve_engine; 0: a training step */
	llmp_spec serve_spec;
	char serve_token_path[PATH_MAX]; /* "" when none was written */
};

struct plugin_ctx *plugin_ctx(void);

/* options.c */
int plugin_options_register(spank_t sp);
void plugin_ctx_release(void);
/* --llm-placement=topology, or the site's placement=topology when not given. */
bool plugin_renumber_asked(void);

/* submit.c: srun, sbatch and salloc */
int plugin_submit_check(spank_t sp);
int plugin_submit_check_tasks(spank_t sp);

/* step.c: slurmstepd */
int plugin_step_prepare(spank_t sp);
int plugin_step_task(spank_t sp);
int plugin_step_finish(spank_t sp);

/*
 * job_script.c: the job prolog (prolog true) and epilog, as root in slurmd,
 * with the plugstack arguments; never fails the job.
 */
int plugin_job_script(spank_t sp, int argc, char **argv, bool prolog);

/*
 * job_script.c: a step of --llm-node-check, in task_init_privileged (root,
 * before the task's exec; site clean= has check): the epilog's verdict on
 * the node's GPUs now, with no wait and no look for leftover processes
 * (the job still runs). Anything found goes to ctx's node_unfit, for
 * task_init to fail the task with. Nothing is drained here: the job's
 * epilog judges the node again once the job has left it.
 */
void plugin_node_check(spank_t sp);

/* log.c: messages for users start with the plugin's name */
void plugin_user_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void plugin_task_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An error of slurmstepd's own (as root, outside any task): slurmd's log only. */
void plugin_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* step_gdr.c: NCCL_NET_GDR_LEVEL and the GPUDirect RDMA line, in task_init after placement. */
void plugin_step_gdr(spank_t sp, uint32_t local_rank);
/* As root, before task_init: ACS of the node's bridges, for plugin_step_gdr. */
void plugin_step_gdr_privileged(void);
/* And NCCL_TOPO_FILE where sysfs hides the file's PCIe tree; removed at the step's end. */
void plugin_step_nccl_topo_remove(void);

#endif /* LLMP_PLUGIN_H */
