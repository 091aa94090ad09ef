/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_bind.h - one GPU per local task, chosen from the step's GPUs.
 */
#ifndef LLMP_GPU_BIND_H
#define LLMP_GPU_BIND_H

#include <stddef.h>
#include <stdint.h>

enum plugin_gpu_choice {
	PLUGIN_GPU_NONE,          /* the step has no GPUs: nothing to do */
	PLUGIN_GPU_ALREADY_BOUND, /* the task sees one GPU already (--gpus-per-task, --gpu-bind) */
	PLUGIN_GPU_BOUND,         /* *gpu holds this task's GPU */
	PLUGIN_GPU_TOO_FEW        /* fewer GPUs than local tasks: left unbound */
};

/*
 * From the step's CUDA_VISIBLE_DEVICES ("0,1,2,3", or UUIDs), pick entry
 * number local_rank for a node running local_tasks tasks. gpu receives the
 * entry as written; *ngpus the number of entries.
 */
enum plugin_gpu_choice plugin_gpu_pick(const char *visible, uint32_t local_rank, uint32_t local_tasks,
				       char *gpu, size_t gpulen, uint32_t *ngpus);

#endif /* LLMP_GPU_BIND_H */
