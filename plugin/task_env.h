/*
 * task_env.h - the environment a task gets (doc/llm_parallel.8):
 * LLMP_* for the layout and this task's place in it, and the variables
 * PyTorch's env:// rendezvous reads, so scripts run unchanged.
 */
#ifndef LLMP_TASK_ENV_H
#define LLMP_TASK_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "llmp_plan.h"

/* Where a task sits in its step, as Slurm describes it. */
struct llmp_task {
	uint32_t rank, local_rank, local_tasks, node_rank, nnodes;
	const char *master_addr; /* first node of the step */
	uint32_t master_port;
	const char *layout_file; /* path of the per-node JSON layout */
};

#define LLMP_ENV_MAX 48
#define LLMP_ENV_VALUE_MAX 512

struct llmp_env {
	size_t n;
	struct {
		char name[32];
		char value[LLMP_ENV_VALUE_MAX];
	} var[LLMP_ENV_MAX];
};

/* Fill env for one task. Returns 0, or -1 if a value does not fit. */
int llmp_task_env(const llmp_plan *plan, const struct llmp_task *task,
		  struct llmp_env *env);

#endif /* LLMP_TASK_ENV_H */
