/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_bind.c - pick one GPU for a task.
 *
 * Slurm's gres plugin gives every task of a step all GPUs of its node in
 * CUDA_VISIBLE_DEVICES. Training wants one GPU per rank, the one at the
 * rank's local index; NCCL still finds its peers' GPUs through NVML.
 */
#include "gpu_bind.h"

#include <string.h>

enum plugin_gpu_choice plugin_gpu_pick(const char *visible, uint32_t local_rank, uint32_t local_tasks,
				       char *gpu, size_t gpulen, uint32_t *ngpus)
{
	const char *p = visible, *pick = NULL;
	size_t picklen = 0;
	uint32_t n = 0;

	*ngpus = 0;
	if (!visible || !*visible)
		return PLUGIN_GPU_NONE;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len && n++ == local_rank) {
			pick = p;
			picklen = len;
		}
		if (!end)
			break;
		p = end + 1;
	}
	*ngpus = n;
	if (n == 0)
		return PLUGIN_GPU_NONE;
	if (n == 1)
		return PLUGIN_GPU_ALREADY_BOUND;
	if (n < local_tasks || !pick || picklen >= gpulen)
		return PLUGIN_GPU_TOO_FEW;
	memcpy(gpu, pick, picklen);
	gpu[picklen] = '\0';
	return PLUGIN_GPU_BOUND;
}
