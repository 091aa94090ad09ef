/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nvml_probe.c - what the plugin's task check reads of this node's GPUs
 * through NVML (topology/discover/nvml.c: topo_nvml_devices), and the GPU
 * name llmp gives each (topology/gpu_desc.c: gpu_desc_of_nvml), for a real
 * driver (scripts/gpu-run.sh): one line per GPU, "gpu N BUS MEM_MIB NAME ->
 * LLMP_NAME" (" (MIG mode)" after a GPU in MIG mode), and one per MIG
 * instance, "mig N ...", then "nvml_probe: WHY" when the list was cut short.
 * Exit 0 when NVML answered, 1 with its reason when not.
 *
 *   nvml_probe [LIBRARY]
 */
#include <stdio.h>

#include "topology/discover/discover.h"
#include "topology/gpu_desc.h"

int main(int argc, char **argv)
{
	static struct topo_nvml_device gpus[TOPO_NVML_DEVICES_MAX];
	char why[256] = "";
	int n = topo_nvml_devices(argc > 1 ? argv[1] : NULL, gpus, TOPO_NVML_DEVICES_MAX, why, sizeof why);
	if (n < 0) {
		printf("nvml_probe: %s\n", why);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		const char *ours = gpu_desc_of_nvml(gpus[i].name);
		printf("%s %d %s %llu MiB '%s' -> %s%s\n", gpus[i].mig ? "mig" : "gpu", i, gpus[i].bus,
		       gpus[i].mem_bytes >> 20, gpus[i].name, ours ? ours : "(not in llmp's table)",
		       gpus[i].mig_enabled ? " (MIG mode)" : "");
	}
	if (why[0])
		printf("nvml_probe: %s\n", why);
	return 0;
}
