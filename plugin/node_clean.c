/* SPDX-License-Identifier: BSD-3-Clause */
/* node_clean.c - the verdict on a node a job has left (node_clean.h). */
#include "node_clean.h"
#include "gpu_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

const char *plugin_recovery_name(int action)
{
	/* NVML API reference, nvmlDeviceGetFieldValues: the values of NVML_FI_DEV_GET_GPU_RECOVERY_ACTION */
	static const char *const names[] = { "none", "a GPU reset", "a node reboot",
					     "a drain of peer-to-peer traffic", "a drain and a GPU reset" };
	return action >= 0 && action < (int)(sizeof names / sizeof names[0]) ? names[action]
									     : "an unknown action";
}

bool plugin_gpu_in_list(const struct topo_nvml_device *devs, unsigned n, unsigned i, const char *job_gpus)
{
	if (i >= n || devs[i].mig)
		return false;
	unsigned index = plugin_gpu_bus_index(devs, n, i);
	const char *p = job_gpus;
	bool hit = false;
	while (*p) {
		char *end;
		unsigned long lo = strtoul(p, &end, 10), hi = lo;
		if (end == p || *p < '0' || *p > '9')
			return false;
		p = end;
		if (*p == '-') {
			p++;
			if (*p < '0' || *p > '9')
				return false;
			hi = strtoul(p, &end, 10);
			p = end;
		}
		if (*p && (*p != ',' || !p[1]))
			return false; /* the whole list is read: a malformed one names no GPU */
		hit = hit || (index >= lo && index <= hi);
		if (*p == ',')
			p++;
	}
	return hit;
}

/* The reason being written: findings joined by "; ", those past the room counted. */
struct reason {
	char *buf;
	size_t len, used;
	unsigned findings, shown;
};

__attribute__((format(printf, 2, 3))) static void finding(struct reason *r, const char *fmt, ...)
{
	char one[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(one, sizeof one, fmt, ap);
	va_end(ap);
	r->findings++;
	/* keep room for "; and N more" */
	if (r->used + strlen(one) + 2 + 16 >= r->len)
		return;
	r->used += (size_t)snprintf(r->buf + r->used, r->len - r->used, "%s%s", r->shown ? "; " : "", one);
	r->shown++;
}

/* Was device k (a GPU, or a MIG instance of one) the job's? */
static bool jobs_gpu(const struct plugin_clean_facts *f, unsigned k)
{
	if (f->all_gpus)
		return true;
	if (!f->job_gpus)
		return false;
	for (unsigned i = 0; i < f->ndevs; i++)
		if (!f->devs[i].mig && strcmp(f->devs[i].bus, f->devs[k].bus) == 0)
			return plugin_gpu_in_list(f->devs, f->ndevs, i, f->job_gpus);
	return false;
}

static void check_gpu(const struct plugin_clean_facts *f, unsigned k, struct reason *r)
{
	const struct topo_nvml_device *d = &f->devs[k];
	const char *gpu = d->uuid[0] ? d->uuid : d->bus;
	bool ours = jobs_gpu(f, k);
	unsigned kept = d->nprocs < TOPO_NVML_PROCS_MAX ? d->nprocs : TOPO_NVML_PROCS_MAX;

	if (d->recovery > 0)
		finding(r, "GPU %s asks for %s (NVML recovery action %d)", gpu,
			plugin_recovery_name(d->recovery), d->recovery);
	for (unsigned i = 0; d->procs_known && i < kept; i++) {
		unsigned pid = d->procs[i].pid;
		if (!ours && !f->is_jobs(pid, f->arg))
			continue;
		uid_t uid = f->owner(pid, f->arg);
		char mem[32] = "";
		if (d->procs[i].used_bytes)
			snprintf(mem, sizeof mem, " %.0f MiB", (double)d->procs[i].used_bytes / MIB);
		if (uid == (uid_t)-1)
			finding(r, "GPU %s pid %u not visible on the node%s", gpu, pid, mem);
		else
			finding(r, "GPU %s pid %u uid %u%s", gpu, pid, (unsigned)uid, mem);
	}
	if (ours && d->procs_known && d->nprocs > kept)
		finding(r, "GPU %s %u more processes", gpu, d->nprocs - kept);
	if (ours && !d->mig_enabled && d->used_known && (!d->procs_known || d->nprocs == 0) &&
	    d->used_bytes > (unsigned long long)f->mem_tolerance_mib * 1024 * 1024)
		finding(r, "GPU %s %.0f MiB in use with no process (tolerance %u MiB)", gpu,
			(double)d->used_bytes / MIB, f->mem_tolerance_mib);
}

unsigned plugin_node_dirty(const struct plugin_clean_facts *f, char *reason, size_t len)
{
	struct reason r = { .buf = reason, .len = len };
	reason[0] = '\0';
	if (len < 64)
		return 0;
	r.used = (size_t)snprintf(reason, len, "llmp: ");
	for (unsigned k = 0; k < f->ndevs; k++)
		check_gpu(f, k, &r);
	for (unsigned i = 0; i < f->nleft; i++)
		finding(&r, "pid %u (%s) uid %u outlived the job", f->left[i].pid, f->left[i].comm,
			(unsigned)f->job_uid);
	if (r.findings > r.shown)
		snprintf(reason + r.used, len - r.used, "; and %u more", r.findings - r.shown);
	if (!r.findings)
		reason[0] = '\0';
	return r.findings;
}
