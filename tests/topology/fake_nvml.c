/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake_nvml.c - a stand-in for libnvidia-ml.so.1 with the calls
 * topology/discover/nvml.c makes, answering from the file FAKE_NVML_FILE
 * that tests/topology/fake_sysfs.py writes (one GPU per line, tab-separated):
 *
 *   BUS  NAME  UUID  CLUSTER  CLIQUE  TARGETS  [MEM  [MIG  [PROCS  [USED  [RECOVERY]]]]]
 *
 * BUS in NVML's form ("00000000:1B:00.0"), CLUSTER 32 hex digits (zeros:
 * none), TARGETS the bus ids its active links reach, comma-separated, or
 * "-", MEM the total memory in MiB (none: nvmlDeviceGetMemoryInfo is not
 * supported), MIG "-" or the GPU in MIG mode with its instances, comma-
 * separated UUID:PROFILE:MIB ("MIG-a1:3g.20gb:19968"), each named as NVML
 * names one ("NAME MIG PROFILE"); slot 0 of its MIG slots is left empty,
 * as a destroyed instance leaves one. PROCS "-" or the compute processes
 * on the GPU, comma-separated PID:MIB (nvmlDeviceGetComputeRunningProcesses_v3;
 * PID "self": the process that loaded this library),
 * USED "-" or the memory in use in MiB (nvmlDeviceGetMemoryInfo_v2's used;
 * none: 0), RECOVERY "-" or the driver's recovery action (the field
 * NVML_FI_DEV_GET_GPU_RECOVERY_ACTION; none: the field is not supported).
 * The GPUs are listed in an order of their own, not by bus: NVML's index is
 * not CUDA's. Loaded by `llmp topo` and by the plugin's tasks and job
 * epilog through the site's plugstack argument nvml=. Without
 * FAKE_NVML_FILE (a task's environment is not yet its process's in
 * task_init) the file is the library's own path with ".NODE.tsv" added,
 * NODE the SLURMD_NODENAME of the process when it has one and that file
 * exists (one table per node of a cluster on one host), else ".tsv".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_GPUS 64
#define MAX_LINKS 18

struct pci_info {
	char bus_id_legacy[16];
	unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

struct fabric_info_v2 {
	unsigned version;
	unsigned char cluster_uuid[16];
	int status;
	unsigned clique_id;
	unsigned char state;
	unsigned health_mask;
};

struct gpu {
	char bus[32], name[96], uuid[96];
	unsigned char cluster[16];
	unsigned clique;
	char targets[MAX_LINKS][32];
	unsigned ntargets;
	unsigned long long mem_mib; /* 0: not supported */
	int mig_mode;               /* 1: MIG enabled; -1: this is a MIG instance */
	unsigned mig_first, nmig;   /* its instances in migs[] */
	unsigned procs[8][2];       /* pid, MiB */
	unsigned nprocs;
	unsigned long long used_mib;
	int recovery; /* -1: not supported */
};

struct process_info {
	unsigned pid;
	unsigned long long used;
	unsigned gpu_instance, compute_instance;
};

struct memory {
	unsigned long long total, free, used;
};

struct memory_v2 {
	unsigned version;
	unsigned long long total, reserved, free, used;
};

struct field_value {
	unsigned field_id, scope_id;
	long long timestamp, latency_usec;
	int value_type, nvml_return;
	union {
		unsigned ui;
		unsigned long long ull;
	} value;
};

/* The calls, as libnvidia-ml.so.1 exports them (the device handle is a struct gpu here). */
int nvmlInit_v2(void);
int nvmlDeviceGetCount_v2(unsigned *count);
int nvmlDeviceGetHandleByIndex_v2(unsigned i, struct gpu **dev);
int nvmlDeviceGetPciInfo_v3(struct gpu *dev, struct pci_info *pci);
int nvmlDeviceGetName(struct gpu *dev, char *name, unsigned len);
int nvmlDeviceGetUUID(struct gpu *dev, char *uuid, unsigned len);
int nvmlDeviceGetNvLinkState(struct gpu *dev, unsigned link, int *active);
int nvmlDeviceGetNvLinkRemotePciInfo_v2(struct gpu *dev, unsigned link, struct pci_info *pci);
int nvmlDeviceGetGpuFabricInfoV(struct gpu *dev, struct fabric_info_v2 *info);
int nvmlDeviceGetMemoryInfo(struct gpu *dev, struct memory *mem);
int nvmlDeviceGetMemoryInfo_v2(struct gpu *dev, struct memory_v2 *mem);
int nvmlDeviceGetFieldValues(struct gpu *dev, int count, struct field_value *values);
int nvmlDeviceGetMigMode(struct gpu *dev, unsigned *current, unsigned *pending);
int nvmlDeviceGetMaxMigDeviceCount(struct gpu *dev, unsigned *count);
int nvmlDeviceGetMigDeviceHandleByIndex(struct gpu *dev, unsigned i, struct gpu **mig);
int nvmlDeviceGetComputeRunningProcesses_v3(struct gpu *dev, unsigned *count, struct process_info *infos);

#define MAX_MIGS (7 * MAX_GPUS)
static struct gpu gpus[MAX_GPUS], migs[MAX_MIGS];
static unsigned ngpus, nmigs;

/* "UUID:PROFILE:MIB,..." into migs[], after parent g. */
static void read_migs(struct gpu *g, char *list)
{
	char *save = NULL;
	g->mig_mode = 1;
	g->mig_first = nmigs;
	for (char *p = strtok_r(list, ",", &save); p && nmigs < MAX_MIGS; p = strtok_r(NULL, ",", &save)) {
		char *profile = strchr(p, ':'), *mib = profile ? strchr(profile + 1, ':') : NULL;
		if (!mib)
			continue;
		*profile++ = '\0', *mib++ = '\0';
		struct gpu *m = &migs[nmigs++];
		memset(m, 0, sizeof *m);
		snprintf(m->bus, sizeof m->bus, "%s", g->bus);
		snprintf(m->name, sizeof m->name, "%.60s MIG %.20s", g->name, profile);
		snprintf(m->uuid, sizeof m->uuid, "%s", p);
		m->mem_mib = strtoull(mib, NULL, 10);
		m->mig_mode = -1;
		g->nmig++;
	}
}

int nvmlInit_v2(void)
{
	const char *path = getenv("FAKE_NVML_FILE"), *node = getenv("SLURMD_NODENAME");
	char beside[4096];
	Dl_info self;
	if (!path && dladdr((void *)nvmlInit_v2, &self) && self.dli_fname) {
		if (node &&
		    (size_t)snprintf(beside, sizeof beside, "%s.%s.tsv", self.dli_fname, node) <
			    sizeof beside &&
		    access(beside, F_OK) == 0)
			path = beside;
		else if ((size_t)snprintf(beside, sizeof beside, "%s.tsv", self.dli_fname) < sizeof beside)
			path = beside;
	}
	FILE *f = path ? fopen(path, "r") : NULL;
	char line[4096];
	if (!f)
		return 9; /* NVML_ERROR_DRIVER_NOT_LOADED */
	ngpus = nmigs = 0;
	while (ngpus < MAX_GPUS && fgets(line, sizeof line, f)) {
		struct gpu *g = &gpus[ngpus];
		char *save = NULL, *field[11];
		int n = 0;
		line[strcspn(line, "\n")] = '\0';
		for (char *p = strtok_r(line, "\t", &save); p && n < 11; p = strtok_r(NULL, "\t", &save))
			field[n++] = p;
		if (n < 6)
			continue;
		memset(g, 0, sizeof *g);
		snprintf(g->bus, sizeof g->bus, "%s", field[0]);
		snprintf(g->name, sizeof g->name, "%s", field[1]);
		snprintf(g->uuid, sizeof g->uuid, "%s", field[2]);
		for (int i = 0; i < 16; i++)
			sscanf(field[3] + 2 * i, "%2hhx", &g->cluster[i]);
		g->clique = (unsigned)strtoul(field[4], NULL, 10);
		g->mem_mib = n >= 7 ? strtoull(field[6], NULL, 10) : 0;
		if (n >= 8 && strcmp(field[7], "-") != 0)
			read_migs(g, field[7]);
		g->used_mib = n >= 10 && strcmp(field[9], "-") != 0 ? strtoull(field[9], NULL, 10) : 0;
		g->recovery = n >= 11 && strcmp(field[10], "-") != 0 ? atoi(field[10]) : -1;
		for (char *p = n >= 9 && strcmp(field[8], "-") != 0 ? strtok_r(field[8], ",", &save) : NULL;
		     p && g->nprocs < 8; p = strtok_r(NULL, ",", &save))
			if (sscanf(p, "%u:%u", &g->procs[g->nprocs][0], &g->procs[g->nprocs][1]) == 2 ||
			    (sscanf(p, "self:%u", &g->procs[g->nprocs][1]) == 1 &&
			     (g->procs[g->nprocs][0] = (unsigned)getpid())))
				g->nprocs++;
		if (strcmp(field[5], "-") != 0)
			for (char *p = strtok_r(field[5], ",", &save); p && g->ntargets < MAX_LINKS;
			     p = strtok_r(NULL, ",", &save))
				snprintf(g->targets[g->ntargets++], sizeof g->targets[0], "%s", p);
		ngpus++;
	}
	fclose(f);
	return 0;
}

int nvmlDeviceGetCount_v2(unsigned *count)
{
	*count = ngpus;
	return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned i, struct gpu **dev)
{
	if (i >= ngpus)
		return 2; /* NVML_ERROR_INVALID_ARGUMENT */
	*dev = &gpus[i];
	return 0;
}

int nvmlDeviceGetPciInfo_v3(struct gpu *dev, struct pci_info *pci)
{
	memset(pci, 0, sizeof *pci);
	snprintf(pci->bus_id, sizeof pci->bus_id, "%s", dev->bus);
	return 0;
}

int nvmlDeviceGetName(struct gpu *dev, char *name, unsigned len)
{
	snprintf(name, len, "%s", dev->name);
	return 0;
}

int nvmlDeviceGetUUID(struct gpu *dev, char *uuid, unsigned len)
{
	snprintf(uuid, len, "%s", dev->uuid);
	return 0;
}

int nvmlDeviceGetNvLinkState(struct gpu *dev, unsigned link, int *active)
{
	if (link >= MAX_LINKS)
		return 2;
	*active = link < dev->ntargets;
	return 0;
}

int nvmlDeviceGetNvLinkRemotePciInfo_v2(struct gpu *dev, unsigned link, struct pci_info *pci)
{
	if (link >= dev->ntargets)
		return 2;
	memset(pci, 0, sizeof *pci);
	snprintf(pci->bus_id, sizeof pci->bus_id, "%s", dev->targets[link]);
	return 0;
}

int nvmlDeviceGetGpuFabricInfoV(struct gpu *dev, struct fabric_info_v2 *info)
{
	if (info->version != (sizeof *info | 2u << 24))
		return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
	memcpy(info->cluster_uuid, dev->cluster, sizeof info->cluster_uuid);
	info->status = 0;
	info->clique_id = dev->clique;
	info->state = 3; /* completed */
	return 0;
}

int nvmlDeviceGetMemoryInfo(struct gpu *dev, struct memory *mem)
{
	if (!dev->mem_mib)
		return 3; /* NVML_ERROR_NOT_SUPPORTED */
	mem->total = dev->mem_mib << 20;
	mem->used = dev->used_mib << 20;
	mem->free = mem->total - mem->used;
	return 0;
}

int nvmlDeviceGetMemoryInfo_v2(struct gpu *dev, struct memory_v2 *mem)
{
	if (mem->version != (sizeof *mem | 2u << 24))
		return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
	if (!dev->mem_mib)
		return 3;
	mem->total = dev->mem_mib << 20;
	mem->reserved = 0;
	mem->used = dev->used_mib << 20;
	mem->free = mem->total - mem->used;
	return 0;
}

int nvmlDeviceGetFieldValues(struct gpu *dev, int count, struct field_value *values)
{
	for (int i = 0; i < count; i++) {
		if (values[i].field_id != 230 || dev->recovery < 0) {
			values[i].nvml_return = 3; /* NVML_ERROR_NOT_SUPPORTED */
			continue;
		}
		values[i].nvml_return = 0;
		values[i].value_type = 1; /* NVML_VALUE_TYPE_UNSIGNED_INT */
		values[i].value.ui = (unsigned)dev->recovery;
	}
	return 0;
}

int nvmlDeviceGetMigMode(struct gpu *dev, unsigned *current, unsigned *pending)
{
	if (dev->mig_mode < 0)
		return 3; /* NVML_ERROR_NOT_SUPPORTED: an instance has no mode of its own */
	*current = *pending = (unsigned)dev->mig_mode;
	return 0;
}

int nvmlDeviceGetMaxMigDeviceCount(struct gpu *dev, unsigned *count)
{
	*count = dev->mig_mode == 1 ? dev->nmig + 1 : 0;
	return 0;
}

int nvmlDeviceGetMigDeviceHandleByIndex(struct gpu *dev, unsigned i, struct gpu **mig)
{
	if (dev->mig_mode != 1 || i > dev->nmig)
		return 2; /* NVML_ERROR_INVALID_ARGUMENT */
	if (i == 0)
		return 6; /* NVML_ERROR_NOT_FOUND: the empty slot */
	*mig = &migs[dev->mig_first + i - 1];
	return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(struct gpu *dev, unsigned *count, struct process_info *infos)
{
	if (*count < dev->nprocs) {
		*count = dev->nprocs;
		return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
	}
	for (unsigned i = 0; i < dev->nprocs; i++) {
		memset(&infos[i], 0, sizeof infos[i]);
		infos[i].pid = dev->procs[i][0];
		infos[i].used = (unsigned long long)dev->procs[i][1] << 20;
	}
	*count = dev->nprocs;
	return 0;
}
