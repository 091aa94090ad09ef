/* SPDX-License-Identifier: BSD-3-Clause */
/* gpu_check.c - the task's GPU against the estimate's (gpu_check.h). */
#define _POSIX_C_SOURCE 200809L
#include "gpu_check.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "topology/gpu_desc.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * 1024.0 * 1024.0)

int plugin_peaks_parse(const char *text, uint32_t pp, struct plugin_stage_peak *peaks, char *msg,
		       size_t msglen)
{
	const char *p = text;
	uint32_t k = 0;
	if (pp == 0 || pp > PLUGIN_STAGES_MAX) {
		llmp_fail(LLMP_ERR_ARG, msg, msglen, "%u pipeline stages: at most %u can be listed", pp,
			  PLUGIN_STAGES_MAX);
		return -1;
	}
	while (k < pp) {
		size_t n = 0;
		while (n < sizeof peaks[k].gpu - 1 &&
		       ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= '0' && p[n] <= '9') || p[n] == '-'))
			n++;
		if (n == 0 || p[n] != ':') {
			llmp_fail(LLMP_ERR_ARG, msg, msglen,
				  "stage %u: expected a GPU name of 1 to %zu of [a-z0-9-] and ':'", k,
				  sizeof peaks[k].gpu - 1);
			return -1;
		}
		memcpy(peaks[k].gpu, p, n);
		peaks[k].gpu[n] = '\0';
		p += n + 1;
		unsigned long long v = 0;
		const char *start = p;
		while (*p >= '0' && *p <= '9' && p - start < 10)
			v = v * 10 + (unsigned long long)(*p++ - '0');
		if (p == start || v == 0 || v > PLUGIN_PEAK_MIB_MAX) {
			llmp_fail(LLMP_ERR_ARG, msg, msglen, "stage %u: expected a peak of 1 to %u MiB", k,
				  PLUGIN_PEAK_MIB_MAX);
			return -1;
		}
		peaks[k++].mib = (uint32_t)v;
		if (*p != ',' || k == pp)
			break;
		p++;
	}
	if (k != pp || *p) {
		llmp_fail(LLMP_ERR_ARG, msg, msglen, "not %u stages NAME:MIB separated by commas", pp);
		return -1;
	}
	return 0;
}

/* Entry k of a comma-separated list into buf; false when there is none. */
static bool list_entry(const char *list, uint32_t k, char *buf, size_t len)
{
	const char *p = list;
	for (uint32_t i = 0; i < k; i++) {
		p = strchr(p, ',');
		if (!p)
			return false;
		p++;
	}
	size_t n = strcspn(p, ",");
	if (n == 0 || n >= len)
		return false;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return true;
}

/*
 * Entry `entry` of CUDA_VISIBLE_DEVICES: a UUID (or its prefix) names a GPU or a MIG
 * instance; an index counts the GPUs alone, in bus order as CUDA does by default. A GPU in
 * MIG mode named by index answers nothing: which of its instances the task has is unknown,
 * and its memory is not the task's.
 */
static const struct topo_nvml_device *named(const struct topo_nvml_device *devs, unsigned n,
					    const char *visible, uint32_t entry)
{
	char item[128];
	if (!visible || !*visible) {
		if (entry >= n)
			return NULL;
		snprintf(item, sizeof item, "%u", entry);
	} else if (!list_entry(visible, entry, item, sizeof item)) {
		return NULL;
	}
	if (!strncmp(item, "GPU-", 4) || !strncmp(item, "MIG-", 4)) {
		const struct topo_nvml_device *hit = NULL;
		for (unsigned i = 0; i < n; i++) {
			if (!devs[i].uuid[0] || strncmp(devs[i].uuid, item, strlen(item)) != 0)
				continue;
			if (hit)
				return NULL; /* an ambiguous prefix */
			hit = &devs[i];
		}
		return hit && !hit->mig_enabled ? hit : NULL;
	}
	char *end = NULL;
	unsigned long idx = strtoul(item, &end, 10);
	if (*end || item[0] < '0' || item[0] > '9')
		return NULL;
	/* the GPU with idx GPUs before it in bus order (MIG instances are no GPU of their own) */
	for (unsigned i = 0; i < n; i++)
		if (!devs[i].mig && plugin_gpu_bus_index(devs, n, i) == idx)
			return devs[i].mig_enabled ? NULL : &devs[i];
	return NULL;
}

unsigned plugin_gpu_bus_index(const struct topo_nvml_device *devs, unsigned n, unsigned i)
{
	unsigned before = 0;
	for (unsigned j = 0; j < n; j++)
		before += !devs[j].mig && strcmp(devs[j].bus, devs[i].bus) < 0;
	return before;
}

const struct topo_nvml_device *plugin_task_device_named(const struct topo_nvml_device *devs, unsigned n,
							const char *visible, uint32_t entry)
{
	return n ? named(devs, n, visible, entry) : NULL;
}

const struct topo_nvml_device *plugin_task_device(const struct topo_nvml_device *devs, unsigned n,
						  const char *visible, uint32_t entry)
{
	if (n == 0)
		return NULL;
	const struct topo_nvml_device *d = named(devs, n, visible, entry);
	if (d)
		return d;
	/* a node whose GPUs are all alike, none in MIG mode: any of them answers */
	for (unsigned i = 0; i < n; i++)
		if (devs[i].mig || devs[i].mig_enabled || strcmp(devs[i].name, devs[0].name) != 0 ||
		    devs[i].mem_bytes != devs[0].mem_bytes)
			return NULL;
	return &devs[0];
}

int plugin_gpu_check(const struct plugin_stage_peak *peak, uint32_t stage, const struct topo_nvml_device *d,
		     const char *host, char *mismatch, size_t mlen, char *fail, size_t flen)
{
	const char *ours = gpu_desc_of_nvml(d->name);
	const char *shown = d->name[0] ? d->name : "a GPU NVML does not name";
	mismatch[0] = '\0';
	fail[0] = '\0';
	if (strcmp(peak->gpu, "custom") != 0 && (!ours || strcmp(ours, peak->gpu) != 0))
		snprintf(
			mismatch, mlen,
			"warning: %s has %s (%s%s%.1f GiB) but the layout was estimated for %s (LLMP_GPU, the "
			"site's gpu= or the topology file's node type)",
			host, shown, ours ? ours : "not in llmp's table", ", ", d->mem_bytes / GIB,
			peak->gpu);
	if (d->mem_bytes && (double)d->mem_bytes < peak->mib * MIB) {
		llmp_fail(LLMP_ERR_ARG, fail, flen,
			  "%s on %s has %.1f GiB but pipeline stage %u needs %.1f GiB per GPU (estimated for "
			  "%s): the step would run out of GPU memory; set LLMP_GPU to this node's GPU and "
			  "choose again (--llm-parallel=auto), or use more GPUs",
			  shown, host, d->mem_bytes / GIB, stage, peak->mib * MIB / GIB, peak->gpu);
		return -1;
	}
	return 0;
}

/* One process of the list, as the message names it: "pid 4242 of uid 1002 (812 MiB)". */
static size_t show_process(char *out, size_t len, const struct topo_nvml_process *p, uid_t uid)
{
	char mem[32] = "";
	if (p->used_bytes)
		snprintf(mem, sizeof mem, " (%.0f MiB)", (double)p->used_bytes / MIB);
	int n = uid == (uid_t)-1 ? snprintf(out, len, "pid %u, not visible on this node%s", p->pid, mem)
				 : snprintf(out, len, "pid %u of uid %u%s", p->pid, (unsigned)uid, mem);
	return n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n;
}

int plugin_gpu_busy(const struct topo_nvml_device *d, uid_t self, uid_t (*owner)(unsigned pid),
		    const char *host, char *fail, size_t flen)
{
	char list[512];
	size_t used = 0;
	unsigned others = 0, kept = d->nprocs < TOPO_NVML_PROCS_MAX ? d->nprocs : TOPO_NVML_PROCS_MAX;
	fail[0] = list[0] = '\0';
	if (!d->procs_known)
		return 0;
	for (unsigned i = 0; i < kept; i++) {
		uid_t uid = owner(d->procs[i].pid);
		if (uid == self)
			continue;
		if (others++)
			used += (size_t)snprintf(list + used, sizeof list - used, ", ");
		if (used < sizeof list)
			used += show_process(list + used, sizeof list - used, &d->procs[i], uid);
	}
	if (d->nprocs > kept) /* NVML listed more than were kept: none of them is known to be ours */
		others += d->nprocs - kept;
	if (!others)
		return 0;
	const char *gpu = d->uuid[0] ? d->uuid : d->bus;
	llmp_fail(LLMP_ERR_ARG, fail, flen,
		  "GPU %s on %s already runs %u process%s of another user or job%s%s: left behind by an "
		  "earlier job, or a GPU shared against Slurm's binding; this task would share its memory "
		  "and time. The node needs cleaning (its administrator can drain it)",
		  gpu, host, others, others == 1 ? "" : "es", list[0] ? ": " : "", list);
	return -1;
}
