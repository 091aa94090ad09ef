/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * discover.h - this node's topology, found where Linux and Slurm put it
 * (doc/topology-json.md, "A discovered node"). One file per source:
 * sysfs.c (PCI GPUs, InfiniBand/RoCE HCAs, NUMA), nvml.c (NVLink, through
 * the driver), slurm_addr.c (the switch tree from SLURM_TOPOLOGY_ADDR). Each source is optional: what it cannot
 * see is left out, never guessed.
 */
#ifndef LLMP_DISCOVER_H
#define LLMP_DISCOVER_H

#include <stdbool.h>
#include <stddef.h>

#include <llmp/llmp_status.h>
#include "topology/topo.h"

/*
 * This node as a topology of one node type and one node: sysfs under
 * sysfs_root ("" or "/" for the machine's; a test gives a tree of its
 * own), the host name from SLURMD_NODENAME or gethostname, and the switch
 * tree from addr and pattern (SLURM_TOPOLOGY_ADDR, _PATTERN; NULL: none).
 * With nvml false NVML is not loaded (its initialisation costs a GPU node a
 * good part of a second): NVLink stays unknown, which placing tasks on a
 * node's GPUs does not use.
 */
llmp_status topo_discover(const char *sysfs_root, const char *addr, const char *pattern, bool nvml,
			  struct topo *t, char *msg, size_t len);

/* sysfs.c: the node type's NUMA nodes, GPUs and HCAs. */
llmp_status topo_discover_sysfs(const char *sysfs_root, struct topo_type *type, char *msg, size_t len);

/*
 * nvml.c: each GPU's model, UUID, NVLink links and multi-node NVLink
 * domain from NVML (dlopen of libnvidia-ml.so.1, or LLMP_NVML_LIBRARY).
 * What it could not read is left unknown and said in why ("" when all
 * was read).
 */
void topo_discover_nvml(struct topo_type *type, char *why, size_t len);

/* One GPU as NVML shows it to a task. */
#define TOPO_NVML_PROCS_MAX 8 /* compute processes kept per device: enough to name the culprits */

struct topo_nvml_device {
	char name[96];                /* nvmlDeviceGetName, printable ASCII; "" unknown */
	char uuid[96];                /* "GPU-..."; "" unknown */
	char bus[TOPO_BUS_MAX];       /* "0000:1b:00.0" */
	unsigned long long mem_bytes; /* nvmlDeviceGetMemoryInfo's total; 0 unknown */
	bool mig_enabled;             /* a GPU in MIG mode: its memory is its instances' to share */
	bool mig;                     /* a MIG instance: its "MIG-" UUID, name and memory; its GPU's bus */
	/* Memory in use (nvmlDeviceGetMemoryInfo_v2's used, which leaves out what the driver
	 * reserves; version 1's used where v2 is missing); used_known false when NVML did not say. */
	bool used_known;
	unsigned long long used_bytes;
	/* The driver's recovery action (field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, 230): 0 none,
	 * 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and reset; -1 unknown (an older driver). */
	int recovery;
	/* The compute processes NVML lists on it (nvmlDeviceGetComputeRunningProcesses_v3), the
	 * first TOPO_NVML_PROCS_MAX of nprocs; procs_known false when NVML could not say. */
	bool procs_known;
	unsigned nprocs;
	struct topo_nvml_process {
		unsigned pid;                  /* in NVML's view: the node's PID namespace */
		unsigned long long used_bytes; /* its GPU memory; 0 when NVML does not say */
	} procs[TOPO_NVML_PROCS_MAX];
};

/*
 * Room for one node's list: 32 GPUs, each with up to 7 MIG instances
 * (the most NVML gives an A100, H100 or B200), and its own entry.
 */
#define TOPO_NVML_DEVICES_MAX 256

/*
 * The GPUs NVML lists, at most max of them, in NVML's order, each GPU in
 * MIG mode followed by its MIG instances (mig set); library NULL or "":
 * libnvidia-ml.so.1. Returns how many, or -1 with why (no driver). When
 * NVML lists more than max, the first max are returned and why says so.
 */
int topo_nvml_devices(const char *library, struct topo_nvml_device *out, unsigned max, char *why, size_t len);

/*
 * slurm_addr.c: the switches above host from a tree address ("s0.s4.tux1"
 * with pattern "switch.switch.node"), appended to t, host's leaf set.
 * An address whose last part is not a node is refused; a part that is a
 * range ("s[1-2]", a node under several switches) takes its first.
 */
llmp_status topo_discover_switches(const char *addr, const char *pattern, struct topo *t, size_t node,
				   char *msg, size_t len);

#endif /* LLMP_DISCOVER_H */
