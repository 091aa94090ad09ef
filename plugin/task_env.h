/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * task_env.h - the environment a task gets (doc/llm_parallel.8):
 * LLMP_* for the layout and this task's place in it, the variables
 * PyTorch's env:// rendezvous reads, so scripts run unchanged, and the
 * checkpoint settings with the job's restart count.
 */
#ifndef LLMP_TASK_ENV_H
#define LLMP_TASK_ENV_H

#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_ckpt_spec.h>
#include <llmp/llmp_plan.h>

/* Where a task sits in its step, as Slurm describes it. */
struct plugin_task {
	uint32_t rank, local_rank, local_tasks, node_rank, nnodes;
	uint32_t torch_local_rank; /* LOCAL_RANK: the task's GPU entry, or 0 with one GPU (gpu_bind.h) */
	const char *master_addr;   /* the host of rank 0: the step's first node unless renumbered */
	const char *placement;     /* LLMP_PLACEMENT: "block", or "topology:<digest>" when renumbered */
	uint32_t master_port;
	const char *layout_file;    /* path of the per-node JSON layout */
	const llmp_ckpt_spec *ckpt; /* checked; NULL when checkpointing is off */
	uint32_t restart_count;     /* SLURM_RESTART_COUNT, 0 when unset */
	const char *model_args;     /* Megatron flags of --llm-model (LLMP_MODEL_ARGS), or NULL */
};

#define PLUGIN_ENV_MAX 64
#define PLUGIN_ENV_VALUE_MAX (LLMP_CKPT_SPEC_MAX_LEN + 1) /* LLMP_CHECKPOINT is the longest */

struct llmp_env {
	size_t n;
	struct {
		char name[32];
		char value[PLUGIN_ENV_VALUE_MAX];
	} var[PLUGIN_ENV_MAX];
};

/* Append NAME=value (printf-style) to env; -1 when env is full or the value too long. */
int plugin_env_add(struct llmp_env *env, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Fill env for one task. Returns 0, or -1 if a value does not fit. */
int plugin_task_env(const llmp_plan *plan, const struct plugin_task *task, struct llmp_env *env);

/*
 * Append the checkpoint variables of a checked spec (none when ckpt is NULL)
 * and LLMP_RESTART_COUNT to env: part of every task's environment, and all
 * that the batch script's own step gets. Returns 0, or -1 if they do not fit.
 */
int plugin_ckpt_env(const llmp_ckpt_spec *ckpt, uint32_t restart_count, struct llmp_env *env);

#endif /* LLMP_TASK_ENV_H */
