/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nvml.c - what only NVIDIA's driver knows: each GPU's name and UUID, its
 * active NVLink links and where they go (another GPU of the node, or an
 * NVSwitch), and its multi-node NVLink domain (GB200 NVL72).
 *
 * libnvidia-ml.so.1 is opened with dlopen, never linked: a CPU node has
 * none, and the plugin runs inside slurmstepd. Every symbol is optional (an
 * old driver lacks nvmlDeviceGetGpuFabricInfoV); the structures are our own
 * copies of the documented layouts (NVML API reference, nvmlPciInfo_t and
 * nvmlGpuFabricInfo_v2_t), versioned as NVML asks. GPUs are matched by PCI
 * bus id, never by NVML's index, which need not be CUDA's (NVML API
 * reference, nvmlDeviceGetHandleByIndex: look devices up by PCI bus id or
 * UUID, as NVIDIA/nccl src/graph/xml.cc does). The library is never closed:
 * NVML does not promise that unloading is safe. LLMP_NVML_LIBRARY names
 * another library (a site's path, or the tests' fake).
 *
 * topo_nvml_devices: each GPU's name, UUID, bus and total memory, for a
 * task checking the GPU it will use (plugin/gpu_check.h); a GPU in MIG mode
 * is followed by its MIG instances (nvmlDeviceGetMigDeviceHandleByIndex
 * over nvmlDeviceGetMaxMigDeviceCount's slots), whose "MIG-" UUIDs are what
 * CUDA_VISIBLE_DEVICES names and whose memory is the task's.
 */
#define _GNU_SOURCE
#include "discover.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <llmp/llmp_env.h>

#define NVML_MAX_LINKS 18 /* NVLink 4 and 5 give a GPU 18 links */
#define NVML_FABRIC_STATE_COMPLETED 3

typedef int nvml_return;
typedef struct nvml_device *nvml_device;

struct nvml_pci_info {
	char bus_id_legacy[16];
	unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

struct nvml_fabric_info_v2 {
	unsigned version;
	unsigned char cluster_uuid[16];
	nvml_return status;
	unsigned clique_id;
	unsigned char state;
	unsigned health_mask;
};

/* nvmlMemory_t (version 1): bytes */
/* nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 fills it. */
struct nvml_process {
	unsigned pid;
	unsigned long long used; /* NVML_VALUE_NOT_AVAILABLE (all ones) when unknown */
	unsigned gpu_instance, compute_instance;
};

struct nvml_memory {
	unsigned long long total, free, used;
};

/* nvmlMemory_v2_t: used no longer counts what the driver reserves. */
struct nvml_memory_v2 {
	unsigned version;
	unsigned long long total, reserved, free, used;
};

/* nvmlFieldValue_t, for one field read with nvmlDeviceGetFieldValues. */
struct nvml_field_value {
	unsigned field_id, scope_id;
	long long timestamp, latency_usec;
	int value_type;
	nvml_return nvml_return;
	union {
		double d;
		unsigned ui;
		unsigned long ul;
		unsigned long long ull;
		long long sll;
		int si;
	} value;
};

#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION 230
#define NVML_VALUE_TYPE_UNSIGNED_INT 1

struct nvml {
	nvml_return (*init)(void);
	nvml_return (*count)(unsigned *);
	nvml_return (*handle)(unsigned, nvml_device *);
	nvml_return (*pci)(nvml_device, struct nvml_pci_info *);
	nvml_return (*name)(nvml_device, char *, unsigned);
	nvml_return (*uuid)(nvml_device, char *, unsigned);
	nvml_return (*link_state)(nvml_device, unsigned, int *);
	nvml_return (*link_remote)(nvml_device, unsigned, struct nvml_pci_info *);
	nvml_return (*fabric)(nvml_device, struct nvml_fabric_info_v2 *);
	nvml_return (*memory)(nvml_device, struct nvml_memory *);
	nvml_return (*memory_v2)(nvml_device, struct nvml_memory_v2 *);
	nvml_return (*fields)(nvml_device, int, struct nvml_field_value *);
	nvml_return (*procs)(nvml_device, unsigned *, struct nvml_process *);
	/* MIG (R470 and later; absent: no GPU is taken to be in MIG mode) */
	nvml_return (*mig_mode)(nvml_device, unsigned *, unsigned *);
	nvml_return (*mig_count)(nvml_device, unsigned *);
	nvml_return (*mig_handle)(nvml_device, unsigned, nvml_device *);
};

#define NVML_DEVICE_MIG_ENABLE 1

/* "00000000:1B:00.0" (NVML) as "0000:1b:00.0" (sysfs); false when it is not one. */
static bool normal_bus(const char *nvml, char out[TOPO_BUS_MAX])
{
	unsigned dom, bus, dev, fn;
	char tail;
	if (sscanf(nvml, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4 || dom > 0xffff || bus > 0xff ||
	    dev > 0x1f || fn > 7)
		return false;
	snprintf(out, TOPO_BUS_MAX, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return true;
}

/* Printable ASCII only: a name goes to JSON and to terminals. */
static void printable(char *s)
{
	for (; *s; s++)
		if (!isprint((unsigned char)*s) || *s == '"' || *s == '\\')
			*s = '?';
}

static bool load(struct nvml *n, const char *path, char *why, size_t len)
{
	if (!path || !*path)
		path = "libnvidia-ml.so.1";
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(why, len, "%s not loaded", path);
		return false;
	}
	*(void **)&n->init = dlsym(lib, "nvmlInit_v2");
	*(void **)&n->count = dlsym(lib, "nvmlDeviceGetCount_v2");
	*(void **)&n->handle = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&n->pci = dlsym(lib, "nvmlDeviceGetPciInfo_v3");
	*(void **)&n->name = dlsym(lib, "nvmlDeviceGetName");
	*(void **)&n->uuid = dlsym(lib, "nvmlDeviceGetUUID");
	*(void **)&n->link_state = dlsym(lib, "nvmlDeviceGetNvLinkState");
	*(void **)&n->link_remote = dlsym(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
	*(void **)&n->fabric = dlsym(lib, "nvmlDeviceGetGpuFabricInfoV");
	*(void **)&n->memory = dlsym(lib, "nvmlDeviceGetMemoryInfo");
	*(void **)&n->memory_v2 = dlsym(lib, "nvmlDeviceGetMemoryInfo_v2");
	*(void **)&n->fields = dlsym(lib, "nvmlDeviceGetFieldValues");
	*(void **)&n->procs = dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
	*(void **)&n->mig_mode = dlsym(lib, "nvmlDeviceGetMigMode");
	*(void **)&n->mig_count = dlsym(lib, "nvmlDeviceGetMaxMigDeviceCount");
	*(void **)&n->mig_handle = dlsym(lib, "nvmlDeviceGetMigDeviceHandleByIndex");
	if (!n->init || !n->count || !n->handle || !n->pci) {
		snprintf(why, len, "%s lacks nvmlInit_v2 or the device calls", path);
		return false;
	}
	nvml_return rc = n->init();
	if (rc != 0) {
		snprintf(why, len, "nvmlInit_v2 failed (NVML error %d)", rc);
		return false;
	}
	return true;
}

static struct topo_gpu *gpu_at(struct topo_type *type, const char *bus)
{
	for (unsigned g = 0; g < type->ngpus; g++)
		if (strcmp(type->gpus[g].pci.bus, bus) == 0)
			return &type->gpus[g];
	return NULL;
}

/* Active links: to GPUs of the node (peers) or to anything else (an NVSwitch). */
static void read_links(const struct nvml *n, nvml_device dev, struct topo_type *type, struct topo_gpu *g)
{
	char peers[NVML_MAX_LINKS][TOPO_BUS_MAX];
	unsigned npeers = 0, links = 0;
	bool to_switch = false, known = n->link_state != NULL;
	for (unsigned l = 0; known && l < NVML_MAX_LINKS; l++) {
		int active = 0;
		struct nvml_pci_info remote = { 0 };
		char bus[TOPO_BUS_MAX];
		if (n->link_state(dev, l, &active) != 0 || !active)
			continue;
		links++;
		if (!n->link_remote || n->link_remote(dev, l, &remote) != 0 ||
		    !normal_bus(remote.bus_id, bus) || !gpu_at(type, bus) || strcmp(bus, g->pci.bus) == 0) {
			to_switch = true; /* NCCL's rule: a target that is no GPU here is an NVSwitch */
			continue;
		}
		bool seen = false;
		for (unsigned k = 0; k < npeers && !seen; k++)
			seen = strcmp(peers[k], bus) == 0;
		if (!seen)
			snprintf(peers[npeers++], TOPO_BUS_MAX, "%s", bus);
	}
	if (!known)
		return;
	g->nvlinks = links;
	if (links == 0) {
		g->nvlink = TOPO_NVLINK_NONE;
	} else if (to_switch || npeers == 0) {
		g->nvlink = TOPO_NVLINK_SWITCH;
	} else if ((g->peers = calloc(npeers, sizeof *g->peers))) {
		g->nvlink = TOPO_NVLINK_PEERS;
		memcpy(g->peers, peers, npeers * sizeof *peers);
		g->npeers = npeers;
	}
}

/* The multi-node NVLink domain: cluster UUID and clique, when the fabric says it is set up. */
static void read_fabric(const struct nvml *n, nvml_device dev, struct topo_gpu *g)
{
	struct nvml_fabric_info_v2 f = { .version = (unsigned)sizeof f | 2u << 24 };
	bool zero = true;
	if (!n->fabric || n->fabric(dev, &f) != 0 || f.status != 0 || f.state != NVML_FABRIC_STATE_COMPLETED)
		return;
	for (size_t i = 0; i < sizeof f.cluster_uuid; i++)
		zero &= f.cluster_uuid[i] == 0;
	if (zero)
		return; /* HGX nodes report a completed fabric with no cluster: no multi-node NVLink */
	char *w = g->domain;
	for (size_t i = 0; i < sizeof f.cluster_uuid; i++)
		w += sprintf(w, "%02x", f.cluster_uuid[i]);
	snprintf(w, sizeof g->domain - (size_t)(w - g->domain), "-%u", f.clique_id);
}

void topo_discover_nvml(struct topo_type *type, char *why, size_t len)
{
	struct nvml n = { 0 };
	unsigned count = 0, matched = 0;
	why[0] = '\0';
	if (type->ngpus == 0)
		return;
	if (!load(&n, getenv(LLMP_ENV_NVML_LIBRARY), why, len))
		return;
	if (n.count(&count) != 0) {
		snprintf(why, len, "nvmlDeviceGetCount_v2 failed");
		return;
	}
	for (unsigned i = 0; i < count; i++) {
		nvml_device dev;
		struct nvml_pci_info pci = { 0 };
		char bus[TOPO_BUS_MAX];
		struct topo_gpu *g;
		if (n.handle(i, &dev) != 0 || n.pci(dev, &pci) != 0 || !normal_bus(pci.bus_id, bus) ||
		    !(g = gpu_at(type, bus)))
			continue; /* a GPU this process's sysfs does not show */
		matched++;
		if (n.name && n.name(dev, g->model, sizeof g->model) == 0)
			printable(g->model);
		else
			g->model[0] = '\0';
		if (!n.uuid || n.uuid(dev, g->uuid, sizeof g->uuid) != 0 || !topo_name_ok(g->uuid))
			g->uuid[0] = '\0';
		read_links(&n, dev, type, g);
		read_fabric(&n, dev, g);
	}
	if (matched < type->ngpus)
		snprintf(why, len, "NVML showed %u of the %u GPUs sysfs shows", matched, type->ngpus);
}

#define NVML_ERROR_INSUFFICIENT_SIZE 7

/* The compute processes on dev into d: all of them counted, the first TOPO_NVML_PROCS_MAX kept. */
static void processes(const struct nvml *n, nvml_device dev, struct topo_nvml_device *d)
{
	struct nvml_process list[64];
	unsigned count = 64;
	if (!n->procs)
		return;
	nvml_return rc = n->procs(dev, &count, list);
	if (rc == NVML_ERROR_INSUFFICIENT_SIZE) { /* more than 64: the count is all we keep of the rest */
		d->procs_known = true;
		d->nprocs = count;
		count = 0;
	} else if (rc != 0)
		return;
	else {
		d->procs_known = true;
		d->nprocs = count;
	}
	for (unsigned i = 0; i < count && i < TOPO_NVML_PROCS_MAX; i++) {
		d->procs[i].pid = list[i].pid;
		d->procs[i].used_bytes = list[i].used == ~0ull ? 0 : list[i].used;
	}
}

/* The driver's recovery action for dev; -1 when it cannot say. */
static int recovery_action(const struct nvml *n, nvml_device dev)
{
	struct nvml_field_value v = { .field_id = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION };
	if (!n->fields || n->fields(dev, 1, &v) != 0 || v.nvml_return != 0 ||
	    v.value_type != NVML_VALUE_TYPE_UNSIGNED_INT || v.value.ui > 1000)
		return -1;
	return (int)v.value.ui;
}

/* The name, UUID, memory, recovery action and compute processes NVML gives for a GPU or a MIG instance, into d. */
static void describe(const struct nvml *n, nvml_device dev, struct topo_nvml_device *d)
{
	struct nvml_memory mem = { 0 };
	struct nvml_memory_v2 mem2 = { .version = (unsigned)sizeof mem2 | 2u << 24 };
	if (n->name && n->name(dev, d->name, sizeof d->name) == 0)
		printable(d->name);
	else
		d->name[0] = '\0';
	if (!n->uuid || n->uuid(dev, d->uuid, sizeof d->uuid) != 0 || !topo_name_ok(d->uuid))
		d->uuid[0] = '\0';
	if (n->memory && n->memory(dev, &mem) == 0 && mem.total > 0) {
		d->mem_bytes = mem.total;
		d->used_known = true;
		d->used_bytes = mem.used;
	}
	if (n->memory_v2 && n->memory_v2(dev, &mem2) == 0 && mem2.total > 0) {
		d->mem_bytes = mem2.total;
		d->used_known = true;
		d->used_bytes = mem2.used;
	}
	d->recovery = recovery_action(n, dev);
	processes(n, dev, d);
}

/*
 * The MIG instances of gpu (in MIG mode), after it in out[*found..max): each
 * with its own memory. False when an instance found no room.
 */
static bool mig_instances(const struct nvml *n, nvml_device dev, const struct topo_nvml_device *gpu,
			  struct topo_nvml_device *out, unsigned max, unsigned *found)
{
	unsigned slots = 0;
	if (!n->mig_count || !n->mig_handle || n->mig_count(dev, &slots) != 0)
		return true;
	for (unsigned s = 0; s < slots; s++) {
		nvml_device mig;
		if (n->mig_handle(dev, s, &mig) != 0)
			continue; /* an empty slot: NVML_ERROR_NOT_FOUND */
		if (*found == max)
			return false;
		struct topo_nvml_device *d = &out[*found];
		memset(d, 0, sizeof *d);
		memcpy(d->bus, gpu->bus, sizeof d->bus);
		d->mig = true;
		describe(n, mig, d);
		(*found)++;
	}
	return true;
}

/* The list is full at max entries with GPU i's (or an instance of it) left out: say so. */
static int cut(char *why, size_t len, unsigned max, unsigned i)
{
	snprintf(why, len, "NVML lists more than %u GPUs and MIG instances: GPU %u's and later ones not read",
		 max, i);
	return (int)max;
}

int topo_nvml_devices(const char *library, struct topo_nvml_device *out, unsigned max, char *why, size_t len)
{
	struct nvml n = { 0 };
	unsigned count = 0, found = 0;
	why[0] = '\0';
	if (!load(&n, library, why, len))
		return -1;
	if (n.count(&count) != 0) {
		snprintf(why, len, "nvmlDeviceGetCount_v2 failed");
		return -1;
	}
	for (unsigned i = 0; i < count; i++) {
		nvml_device dev;
		struct nvml_pci_info pci = { 0 };
		char bus[TOPO_BUS_MAX];
		unsigned mode = 0, pending = 0;
		if (n.handle(i, &dev) != 0 || n.pci(dev, &pci) != 0 || !normal_bus(pci.bus_id, bus))
			continue;
		if (found == max)
			return cut(why, len, max, i);
		struct topo_nvml_device *d = &out[found];
		memset(d, 0, sizeof *d);
		memcpy(d->bus, bus, sizeof d->bus);
		describe(&n, dev, d);
		d->mig_enabled = n.mig_mode && n.mig_mode(dev, &mode, &pending) == 0 &&
				 mode == NVML_DEVICE_MIG_ENABLE;
		found++;
		if (d->mig_enabled && !mig_instances(&n, dev, d, out, max, &found))
			return cut(why, len, max, i);
	}
	return (int)found;
}
