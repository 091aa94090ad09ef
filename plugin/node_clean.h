/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * node_clean.h - is a node fit for the next job once a job has left it?
 *
 * A job can leave a node unfit without any step failing: a process that
 * escaped the job's cleanup still runs and holds a GPU's memory (a
 * "zombie": Slurm's proctrack did not see it, or it waits in the kernel
 * past UnkillableStepTimeout), a GPU's memory stays in use after its
 * processes are gone, or the driver asks for a reset or a reboot after an
 * error (NVML's recovery action). The next job would land there and fail,
 * or run slowly, and every retry would land there again: an idle broken
 * node attracts work.
 *
 * The plugin's job epilog (and, where the site asks, its job prolog) runs
 * as root in slurmd and reads nothing the job wrote: NVML from the site's
 * library, /proc, and what slurmd gives every epilog (the job's id, user
 * and GPUs). This file is the verdict alone: pure, unit-tested in
 * tests/unit/test_plugin_node_clean.c. plugin/job_script.c gathers the
 * facts, waits a bounded time for them to clear, and drains a node that
 * stays dirty with the reason made here.
 */
#ifndef LLMP_PLUGIN_NODE_CLEAN_H
#define LLMP_PLUGIN_NODE_CLEAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "topology/discover/discover.h"

/* A process of the job's user that outlived the job (it carries the job's id). */
struct plugin_leftover {
	unsigned pid;
	char comm[16]; /* /proc/PID/comm, made printable */
};

/* What the verdict is made from. */
struct plugin_clean_facts {
	const struct topo_nvml_device *devs; /* NVML's list (topo_nvml_devices); ndevs 0: no NVML */
	unsigned ndevs;
	/*
	 * Which GPUs were the job's: SLURM_JOB_GPUS (Slurm's indices, the GPUs
	 * counted in PCI bus order), or NULL when slurmd gave none (no GPU
	 * gres). all_gpus: the site's nodes are never shared between jobs
	 * (clean_gpus=all), so every GPU was the job's.
	 */
	const char *job_gpus;
	bool all_gpus;
	uid_t job_uid;
	/* Whether pid is the job's (its user's, carrying the job's id); used for GPUs not known to be the job's. */
	bool (*is_jobs)(unsigned pid, void *arg);
	void *arg;
	/* The owner of pid as /proc shows it; (uid_t)-1 when it shows none. */
	uid_t (*owner)(unsigned pid, void *arg);
	uint32_t mem_tolerance_mib; /* memory in use a GPU may keep with no process on it */
	const struct plugin_leftover *left;
	unsigned nleft;
};

/* The driver's recovery action by NVML's number; "unknown action" past the table. */
const char *plugin_recovery_name(int action);

/*
 * The verdict: 0 when the node is clean, else how many findings, with
 * reason a one-line drain reason starting "llmp: " that names the first
 * findings (GPU, pid, uid, MiB; the recovery action; a leftover process)
 * and counts the rest. A GPU that is the job's (job_gpus, or all_gpus)
 * is dirty with any compute process or with memory in use above the
 * tolerance; any GPU is dirty with a process of the job's, and with a
 * recovery action other than none. Leftover processes are dirty.
 */
unsigned plugin_node_dirty(const struct plugin_clean_facts *f, char *reason, size_t len);

/*
 * Whether GPU i of devs (not a MIG instance) is in the list of Slurm
 * indices job_gpus ("0,2" or ranges "0-3"); false for a malformed list.
 */
bool plugin_gpu_in_list(const struct topo_nvml_device *devs, unsigned n, unsigned i, const char *job_gpus);

#endif /* LLMP_PLUGIN_NODE_CLEAN_H */
