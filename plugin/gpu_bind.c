/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_bind.c - the GPU modes and the task's entry of CUDA_VISIBLE_DEVICES.
 *
 * Slurm's gres plugin gives every task of a step all GPUs of its node in
 * CUDA_VISIBLE_DEVICES, numbered in PCI bus order.
 */
#include "gpu_bind.h"

#include <string.h>

int plugin_gpus_parse(const char *text)
{
	static const char *const names[] = {
		[PLUGIN_GPUS_NODE] = "node", [PLUGIN_GPUS_TASK] = "task", [PLUGIN_GPUS_NONE] = "none"
	};
	for (int m = 0; text && m < (int)(sizeof names / sizeof names[0]); m++)
		if (strcmp(text, names[m]) == 0)
			return m;
	return -1;
}

uint32_t plugin_gpu_entries(const char *visible)
{
	uint32_t n = 0;
	for (const char *p = visible; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		n += len > 0;
		p = end ? end + 1 : p + len;
	}
	return n;
}

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
