/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * site.h - the site's settings, given as plugstack.conf arguments:
 *
 *   required /usr/lib/llmp/llm_parallel.so defaults=order=tp-cp-ep-pp-dp max_tp=8
 *
 *   defaults=SPEC     layout keys that apply unless the user gives them
 *   checkpoint=SPEC   --llm-checkpoint keys that apply unless the user gives
 *                     them (e.g. every=30min,keep=3,restarts=5); they do not
 *                     turn checkpointing on by themselves
 *   max_tp=N max_pp=N max_cp=N max_ep=N max_etp=N
 *                     ceilings on sizes (e.g. tp no wider than a node's NVLink domain;
 *                     max_tp bounds etp too unless max_etp is given)
 *   max_requeues=N    a batch job requeued more than N times is not run again
 *                     (RequeueExit=75 lets any script requeue itself by exiting 75)
 *   gpu_bind=node|task|none  default of --llm-gpu-bind (node, gpu_bind.h)
 *   placement=block|topology  default of --llm-placement (block: ranks are
 *                     Slurm's task ids)
 *   port_base=N port_range=N
 *                     MASTER_PORT is port_base + (job, step) mod port_range
 *   layout_dir=DIR    where the per-node JSON layout file goes (default: the
 *                     job's TMPDIR, else /tmp)
 *   gpu=GPU           the GPU of the nodes, for --llm-model's memory guard and
 *                     --llm-parallel=auto: a name (h100, a100-40gb, ...) or
 *                     mem=GiB,tflops=N[,...] (planner/model_desc.h); LLMP_GPU
 *                     overrides it
 *   guard=refuse|warn|off  what --llm-model's memory guard does with a written
 *                     layout (planner/mem_guard.h): refuse one that cannot fit even at
 *                     the favourable end of the model's measured memory error and
 *                     warn on one that may not (refuse, the default); warn on both;
 *                     or check no memory
 *   guard_band=F      that error as a fraction (0 to 1, e.g. 0.15) for every engine
 *                     and GPU, instead of the bands bench/bench_validate measured
 *   guard_override=yes|no  whether a user may pass --llm-guard=warn to run a layout
 *                     the guard refuses (yes, the default; logged either way)
 *   calibration=FILE  the gpu= and guard_band= that `llmp calibrate -o FILE` fitted to
 *                     the site's own runs, taken as if given at this place
 *   gdr_level=LOC|PIX|PXB|PHB|SYS
 *                     NCCL_NET_GDR_LEVEL for tasks that set none (NCCL's default
 *                     is PXB; e.g. PHB where GPUDirect RDMA through the CPU is
 *                     wanted); LOC still wins on a path known to break it
 *   topology=FILE     the site's description of its nodes (doc/topology-json.md),
 *                     used when the job gives no LLMP_TOPOLOGY_FILE; read at each
 *                     step, a file that cannot be used is a warning there
 *   nvml=LIB          the NVML library tasks load for --llm-model's GPU check
 *                     (gpu_check.h; default libnvidia-ml.so.1 through the dynamic
 *                     linker's search, with slurmd's environment). Only the site
 *                     names it: task_init runs before exec, with slurmstepd's
 *                     descriptors open and its limits, so a library the job named
 *                     would be the user's code running there
 *   clean=LIST|off    when the node is checked (node_clean.h), a list of: epilog
 *                     (after each job: what it left), prolog (before each job),
 *                     check (in the node check of `llmp job run`, a step of
 *                     --llm-node-check); default epilog,check; off: never
 *   clean_wait=S      how long the check waits for a leftover to go (default 10)
 *   clean_mem=MiB     memory a GPU of the job's may keep in use with no process on it
 *                     (default 1024: above what a driver keeps for itself)
 *   clean_gpus=job|all  which GPUs were the job's: those slurmd names (SLURM_JOB_GPUS;
 *                     default), or all of the node's (nodes never shared between jobs)
 *   drain=yes|no      drain a node the check finds dirty, with a reason that starts
 *                     "llmp:" (default yes); no: only log it
 *   scontrol=PATH     the scontrol that drains (default /usr/bin/scontrol)
 */
#ifndef LLMP_SITE_H
#define LLMP_SITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_ckpt_spec.h>
#include <llmp/llmp_spec.h>

struct plugin_site {
	llmp_spec defaults;
	llmp_ckpt_spec ckpt_defaults;
	/* guard=: enum mem_guard_policy (planner/mem_guard.h); guard_band=, < 0 for the bands
	 * measured per engine and GPU; guard_override=no: --llm-guard=warn is refused */
	int guard;
	double guard_band;
	bool guard_no_override;
	uint32_t max[LLMP_NKEYS]; /* ceiling per size key; 0 = none */
	int gpu_bind;             /* enum plugin_gpus */
	bool placement_topology;
	uint32_t port_base, port_range;
	uint32_t max_requeues; /* a batch job requeued more often is not run again; 0 = no ceiling */
	char layout_dir[256];  /* "" = the job's TMPDIR, else /tmp */
	char topology[1024];   /* "" = discover each node */
	char gpu[128];         /* "" = none: the user must set LLMP_GPU for --llm-parallel=auto */
	char gdr_level[4];     /* NCCL_NET_GDR_LEVEL for tasks; "" = NCCL's default */
	char nvml[1024];       /* "" = libnvidia-ml.so.1 */
	bool clean_prolog, clean_epilog; /* node_clean.h's check, before and after a job */
	bool clean_check;                /* the same in a step of --llm-node-check */
	uint32_t clean_wait_s, clean_mem_mib;
	bool clean_all_gpus; /* every GPU of a node is the job's */
	bool drain;
	char scontrol[1024];
};

/* Parse plugstack arguments; on error msg names the argument. Returns 0 or -1. */
int plugin_site_parse(struct plugin_site *site, int argc, char **argv, char *msg, size_t msglen);

/* Check a resolved layout against the site's ceilings. Returns 0 or -1. */
int plugin_site_check(const struct plugin_site *site, const llmp_spec *spec, char *msg, size_t msglen);

/*
 * MASTER_PORT for a job step, the same on every node: the first of the
 * ports Slurm reserved for the step (resv_ports, SLURM_STEP_RESV_PORTS, with
 * MpiParams=ports=...), which no other step on these nodes holds; else
 * port_base plus a hash of the job, the step and salt (LLMP_PORT_SALT,
 * random bytes srun's plugin gives the step) modulo port_range, which
 * another user cannot tell in advance from the job id. A salt of 0 (a
 * step launched without the plugin on the submitting side) leaves the hash
 * of the job and step alone.
 */
uint32_t plugin_site_port(const struct plugin_site *site, uint32_t job_id, uint32_t step_id, uint64_t salt,
			  const char *resv_ports);

#endif /* LLMP_SITE_H */
