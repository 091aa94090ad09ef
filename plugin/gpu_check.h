/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_check.h - the GPU a task finds against the one srun's estimate
 * assumed. srun runs on the submit host and never sees a compute node's
 * GPU; it hands the step LLMP_MODEL_PEAKS, each pipeline stage's GPU name
 * and peak MiB per rank. In task_init (the user's process) the plugin reads
 * the task's GPU through NVML (topology/discover) and: names both when they
 * differ (local task 0, once per node), fails the task when its memory is
 * below its stage's peak. Pure (no Slurm, no NVML), unit-tested in
 * tests/unit/test_plugin_gpu_check.c.
 */
#ifndef LLMP_PLUGIN_GPU_CHECK_H
#define LLMP_PLUGIN_GPU_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model_layout.h"
#include "topology/discover/discover.h"

#define PLUGIN_PEAK_MIB_MAX 999999999u

struct plugin_stage_peak {
	char gpu[32]; /* llmp's GPU name the estimate assumed for this stage ("h100", "custom") */
	uint32_t mib; /* its peak per rank, MiB rounded up */
};

/*
 * LLMP_MODEL_PEAKS ("h100:61234,h100:58000") for a pipeline of pp stages:
 * exactly pp items NAME:MIB, NAME 1 to 31 of [a-z0-9-], MIB 1 to
 * PLUGIN_PEAK_MIB_MAX in decimal, pp at most PLUGIN_STAGES_MAX. Returns 0,
 * or -1 with msg naming the stage at fault.
 */
int plugin_peaks_parse(const char *text, uint32_t pp, struct plugin_stage_peak *peaks, char *msg,
		       size_t msglen);

/*
 * The GPU a task uses among NVML's n devices: entry of visible (a
 * CUDA_VISIBLE_DEVICES list; NULL or "" for all of them): "GPU-<uuid>"
 * (or its prefix) matched by UUID, an index counted in PCI bus order (the
 * order Slurm numbers a node's GPUs in). When the entry names none, the
 * devices are still one answer if all have the same name and memory.
 * NULL: which GPU is unknown.
 */
const struct topo_nvml_device *plugin_task_device(const struct topo_nvml_device *devs, unsigned n,
						  const char *visible, uint32_t entry);

/*
 * The GPU entry `entry` of visible names, and only that: NULL where
 * plugin_task_device would fall back on a node whose GPUs are all alike.
 * What is on a GPU (its processes) is asked of the GPU the task will use,
 * never of one that only looks like it.
 */
const struct topo_nvml_device *plugin_task_device_named(const struct topo_nvml_device *devs, unsigned n,
							const char *visible, uint32_t entry);

/*
 * The index Slurm and CUDA give GPU i of devs (not a MIG instance): how
 * many GPUs come before it in PCI bus order.
 */
unsigned plugin_gpu_bus_index(const struct topo_nvml_device *devs, unsigned n, unsigned i);

/*
 * The verdict for a task of pipeline stage `stage` on device d. mismatch
 * gets one line when d's name is not the GPU the estimate assumed (""
 * otherwise, and always for a "custom" GPU, which has no NVML name);
 * returns -1 with fail filled when d's memory is below the stage's peak,
 * else 0.
 */
int plugin_gpu_check(const struct plugin_stage_peak *peak, uint32_t stage, const struct topo_nvml_device *d,
		     const char *host, char *mismatch, size_t mlen, char *fail, size_t flen);

/*
 * Whether d already runs another user's process: one a job left behind (a
 * zombie holding the GPU and its memory, which proctrack did not see), or a
 * GPU shared against Slurm's binding. owner(pid) is the process's uid as
 * this node's /proc shows it, (uid_t)-1 when it shows none (another PID
 * namespace, or a context NVML keeps for a process that is gone: both
 * count as another's). Processes of self are the job's user's own and pass.
 * Returns -1 with fail naming the GPU, the pids, their owners and their
 * memory, else 0 (also when NVML could not list processes).
 */
int plugin_gpu_busy(const struct topo_nvml_device *d, uid_t self, uid_t (*owner)(unsigned pid),
		    const char *host, char *fail, size_t flen);

#endif /* LLMP_PLUGIN_GPU_CHECK_H */
