/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_bind.h - which GPU a task uses, among the step's GPUs.
 *
 * Three modes (--llm-gpu-bind, doc/llm_parallel.8):
 *   node  every task sees the step's GPUs in one order and LOCAL_RANK
 *         indexes its own: torchrun's contract, which Megatron, NeMo,
 *         DeepSpeed, Lightning and DeviceMesh rely on (set_device(LOCAL_RANK))
 *   task  CUDA_VISIBLE_DEVICES cut to the task's GPU, LOCAL_RANK 0 (torchrun's
 *         --virtual-local-rank); the node-local index stays in LLMP_LOCAL_RANK
 *   none  CUDA_VISIBLE_DEVICES as Slurm set it, LOCAL_RANK Slurm's local id
 */
#ifndef LLMP_GPU_BIND_H
#define LLMP_GPU_BIND_H

#include <stddef.h>
#include <stdint.h>

enum plugin_gpus { PLUGIN_GPUS_NODE, PLUGIN_GPUS_TASK, PLUGIN_GPUS_NONE };

/* "node", "task" or "none" to its mode; -1 for anything else. */
int plugin_gpus_parse(const char *text);

/* The entries of a CUDA_VISIBLE_DEVICES value (0 for NULL or ""). */
uint32_t plugin_gpu_entries(const char *visible);

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
