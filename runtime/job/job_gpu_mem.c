/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * job_gpu_mem.c - this process's GPU memory as NVML lists it, for the
 * metrics records' peak_gib when the program gives none of its own
 * (llmp_job_note_memory; llmp.Job gives PyTorch's allocator peak).
 *
 * NVML lists the compute processes of each GPU with the memory each holds
 * (nvmlDeviceGetComputeRunningProcesses_v3, through topology/discover):
 * this process's entries, summed over the GPUs it uses. It is a sample,
 * not the peak between samples; with PyTorch's caching allocator, which
 * keeps what it reserved, the two are close. NVML names processes by the
 * node's PID namespace: in a container with a namespace of its own this
 * process is not found, and nothing is said rather than a wrong figure.
 * The library is libnvidia-ml.so.1, or $LLMP_NVML_LIBRARY: this is the
 * user's own process, not the plugin.
 */
#include "job_internal.h"

#include <stdlib.h>
#include <unistd.h>

#include <llmp/llmp_env.h>
#include "topology/discover/discover.h"

bool job_gpu_mem_self(uint64_t *bytes, char *why, size_t len)
{
	struct topo_nvml_device *devs = calloc(TOPO_NVML_DEVICES_MAX, sizeof *devs);
	if (!devs) {
		snprintf(why, len, "out of memory");
		return false;
	}
	int n = topo_nvml_devices(getenv(LLMP_ENV_NVML_LIBRARY), devs, TOPO_NVML_DEVICES_MAX, why, len);
	unsigned self = (unsigned)getpid();
	*bytes = 0;
	for (int d = 0; d < n; d++) {
		if (devs[d].mig_enabled || !devs[d].procs_known)
			continue; /* a GPU in MIG mode: its memory is its instances', listed after it */
		for (unsigned p = 0; p < devs[d].nprocs && p < TOPO_NVML_PROCS_MAX; p++)
			if (devs[d].procs[p].pid == self)
				*bytes += devs[d].procs[p].used_bytes;
	}
	free(devs);
	return n >= 0;
}
