/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * settings.c - the one table of what llmp reads (settings.h), which
 * `llmp info --settings` prints. A variable or plugstack argument that code
 * starts reading gets its row here, or tests/info.bats fails naming it.
 * llmp's names are llmp_env.h's macros, spelled there alone (tests/surface.bats);
 * LLMP_<DIM>_SIZE and _RANK are made from the axis names (plugin/task_env.c).
 */
#include "settings.h"

#include <stdio.h>

#include <llmp/llmp_env.h>

#define RT SET_RUNTIME
#define PL SET_PLUGIN
#define CLI SET_CLI
#define PY SET_PYTHON
#define ENV SETTING_ENV
#define SITE SETTING_SITE

const struct cli_setting cli_settings[] = {
	/* llmp's own: what you may set */
	{ LLMP_ENV_DEBUG, ENV, RT, "you", "info",
	  "what libllmp says on stderr: LEVEL[,PART...] (none warn info debug trace; comm coll device ckpt job init)" },
	{ LLMP_ENV_TIMEOUT, ENV, RT, "you", "300", "seconds any wait of libllmp may last before it fails" },
	{ LLMP_ENV_STEP_DEADLINE, ENV, RT, "you", NULL,
	  "F (2 to 1000): the timeout becomes F x the slowest training step once 5 are timed" },
	{ LLMP_ENV_RING_THRESHOLD, ENV, RT, "you", "65536", "bytes from which an allreduce takes the ring" },
	{ LLMP_ENV_SHM_THRESHOLD, ENV, RT | CLI, "you", "8192",
	  "bytes from which a collective on one machine uses shared memory; off: never" },
	{ LLMP_ENV_SHM_CHUNK, ENV, RT, "you", "262144",
	  "bytes each round of a shared-memory collective moves" },
	{ LLMP_ENV_DEVICE, ENV, RT, "you", "auto", "the device path (NCCL): auto, nccl or off" },
	{ LLMP_ENV_DEVICE_TIMING, ENV, RT, "you", "on",
	  "device operations timed on the GPU: on, sampled or off" },
	{ LLMP_ENV_METRICS, ENV, RT | PL, "you", NULL,
	  "DIR[,every=Ns][,prom]: each rank's counters and step times (doc/metrics-json.md)" },
	{ LLMP_ENV_TOPOLOGY_FILE, ENV, PL | CLI, "you", NULL,
	  "a topology file (doc/topology-json.md) in place of discovering the nodes" },
	{ LLMP_ENV_TOPOLOGY_GATHER, ENV, RT | CLI, "you", NULL,
	  "1: llmp_init publishes each node's topology in its fence (llmp topo --job)" },
	{ LLMP_ENV_MODEL, ENV, RT | PL, "you", NULL, "the model, for --llm-model and --llm-parallel=auto" },
	{ LLMP_ENV_GPU, ENV, RT | PL, "you", NULL,
	  "the GPU the model runs on (a name, or mem=,tflops=); the site's gpu= else" },
	{ LLMP_ENV_REQUEUE, ENV, CLI, "you", "auto",
	  "how llmp job-end requeues: auto, exit, scontrol or none" },
	{ LLMP_ENV_STEP_WAIT, ENV, CLI, "you", "30",
	  "seconds llmp job-end waits for the run's steps to leave" },
	{ LLMP_ENV_CUDA_LIBRARY, ENV, RT | CLI, "you", "libcuda.so.1", "the CUDA driver library loaded" },
	{ LLMP_ENV_NCCL_LIBRARY, ENV, RT | CLI, "you", "libnccl.so.2", "the NCCL library loaded" },
	{ LLMP_ENV_NVML_LIBRARY, ENV, RT | CLI, "you", "libnvidia-ml.so.1",
	  "the NVML library llmp topo and the metrics' GPU memory load (the plugin takes the site's nvml= alone)" },
	{ LLMP_ENV_IBVERBS_LIBRARY, ENV, CLI, "you", "libibverbs.so.1",
	  "the libibverbs llmp topo --gdr loads" },
	{ LLMP_ENV_LUSTREAPI_LIBRARY, ENV, RT, "you", "liblustreapi.so.1",
	  "the liblustreapi a checkpoint's stripe= loads" },
	{ LLMP_ENV_PYTHON, ENV, CLI, "you", "python3", "the Python llmp ckpt export and llmp report run" },
	{ LLMP_ENV_CRC32C_PORTABLE, ENV, RT | CLI, "you", NULL,
	  "1: CRC-32C without the CPU's instructions (tests, benchmarks)" },
	{ LLMP_ENV_LIBRARY, ENV, PY, "you", NULL,
	  "the libllmp.so the Python package loads; else beside it, then the loader's path" },
	{ LLMP_ENV_TORCH_GROUPS, ENV, PY, "you", NULL,
	  "how llmp.torch makes process groups: local, split or all; else the cheapest that works" },

	/* llmp's own, set by the plugin in each task (llm_parallel(8), ENVIRONMENT OF EACH TASK);
	 * LLMP_PARALLEL and LLMP_CHECKPOINT are also yours, in a batch script */
	{ LLMP_ENV_PARALLEL, ENV, RT | PL, "you/plugin", NULL,
	  "the layout keys (tp=8,pp=4,...); in a task, those in force; libllmp's default dp=auto" },
	{ LLMP_ENV_ORDER, ENV, 0, "plugin", NULL, "the dimensions of the layout, fastest first" },
	{ LLMP_ENV_VPP_SIZE, ENV, 0, "plugin", NULL, "virtual pipeline stages per rank, when vpp was given" },
	{ LLMP_ENV_LAYOUT_FILE, ENV, PY, "plugin", NULL, "the JSON layout of the step (doc/layout-json.md)" },
	{ LLMP_ENV_MEGATRON_ARGS, ENV, 0, "plugin", NULL, "Megatron-LM's arguments for the layout" },
	{ LLMP_ENV_WORLD_SIZE, ENV, RT, "plugin", NULL, "the tasks of the step" },
	{ LLMP_ENV_RANK, ENV, RT | PY, "plugin", NULL, "this task's rank" },
	{ LLMP_ENV_LOCAL_RANK, ENV, 0, "plugin", NULL, "this task's rank on its node" },
	{ LLMP_ENV_LOCAL_WORLD_SIZE, ENV, 0, "plugin", NULL, "the tasks on this node" },
	{ LLMP_ENV_NODE_RANK, ENV, 0, "plugin", NULL, "this node's rank in the step" },
	{ LLMP_ENV_NNODES, ENV, 0, "plugin", NULL, "the nodes of the step" },
	{ LLMP_ENV_PLACEMENT, ENV, RT, "plugin", "block",
	  "block, or topology:DIGEST when ranks were renumbered" },
	{ LLMP_ENV_PREFIX "TP_SIZE", ENV, 0, "plugin", NULL, "the tensor-parallel size" },
	{ LLMP_ENV_PREFIX "TP_RANK", ENV, 0, "plugin", NULL, "this task's tensor-parallel coordinate" },
	{ LLMP_ENV_PREFIX "CP_SIZE", ENV, 0, "plugin", NULL, "the context-parallel size" },
	{ LLMP_ENV_PREFIX "CP_RANK", ENV, 0, "plugin", NULL, "this task's context-parallel coordinate" },
	{ LLMP_ENV_PREFIX "EP_SIZE", ENV, 0, "plugin", NULL, "the expert-parallel size" },
	{ LLMP_ENV_PREFIX "EP_RANK", ENV, 0, "plugin", NULL, "this task's expert-parallel coordinate" },
	{ LLMP_ENV_PREFIX "DP_SIZE", ENV, 0, "plugin", NULL, "the data-parallel size" },
	{ LLMP_ENV_PREFIX "DP_RANK", ENV, 0, "plugin", NULL, "this task's data-parallel coordinate" },
	{ LLMP_ENV_PREFIX "PP_SIZE", ENV, 0, "plugin", NULL, "the pipeline-parallel size" },
	{ LLMP_ENV_PREFIX "PP_RANK", ENV, 0, "plugin", NULL, "this task's pipeline stage" },
	{ LLMP_ENV_PREFIX "EXPERT_TP_SIZE", ENV, 0, "plugin", NULL, "the experts' tensor-parallel size" },
	{ LLMP_ENV_PREFIX "EXPERT_TP_RANK", ENV, 0, "plugin", NULL,
	  "this task's coordinate in the experts' tensor parallelism" },
	{ LLMP_ENV_PREFIX "EXPERT_DP_SIZE", ENV, 0, "plugin", NULL, "the experts' data-parallel size" },
	{ LLMP_ENV_PREFIX "EXPERT_DP_RANK", ENV, 0, "plugin", NULL,
	  "this task's coordinate in the experts' data parallelism" },
	{ LLMP_ENV_CHECKPOINT, ENV, RT | PL | CLI, "you/plugin", NULL,
	  "the checkpoint spec (DIR,every=N,keep=N,restarts=N); in a task, the one in force" },
	{ LLMP_ENV_CHECKPOINT_DIR, ENV, CLI, "plugin", NULL, "the checkpoint root" },
	{ LLMP_ENV_CHECKPOINT_EVERY, ENV, 0, "plugin", NULL, "steps (or minutes, Nmin) between checkpoints" },
	{ LLMP_ENV_CHECKPOINT_KEEP, ENV, 0, "plugin", NULL, "complete checkpoints kept" },
	{ LLMP_ENV_MAX_RESTARTS, ENV, 0, "plugin", NULL, "failed runs in a row tolerated" },
	{ LLMP_ENV_RESTART_COUNT, ENV, RT, "plugin", "0", "the job's requeues so far" },
	{ LLMP_ENV_AUTO_LAYOUT, ENV, PL, "plugin", NULL,
	  "srun -> step: the layout --llm-parallel=auto chose" },
	{ LLMP_ENV_MODEL_ARGS, ENV, PL, "plugin", NULL,
	  "srun -> step: Megatron-LM's flags for what the model assumed" },
	{ LLMP_ENV_STAGE_LAYERS, ENV, PL, "plugin", NULL,
	  "decoder layers of each pipeline stage, when uneven" },
	{ LLMP_ENV_MODEL_PEAKS, ENV, PL, "plugin", NULL,
	  "srun -> step: each stage's GPU and peak MiB per rank" },
	{ LLMP_ENV_MODEL_GUARD, ENV, PL, "plugin", NULL,
	  "srun -> step: what the memory guard made of the layout" },
	{ LLMP_ENV_PORT_SALT, ENV, PL, "plugin", NULL, "srun -> step: random bytes in MASTER_PORT's hash" },
	{ LLMP_ENV_SERVE_TOKEN, ENV, PL | SET_SECRET, "plugin", NULL,
	  "srun -> step: a serving step's secret (never printed)" },
	{ LLMP_ENV_SERVE_ENGINE, ENV, PL | CLI, "plugin", NULL,
	  "a serving node's engine: ray, vllm or sglang" },
	{ LLMP_ENV_SERVE_ROLE, ENV, PL | CLI, "plugin", NULL, "a serving node's role: head or worker" },
	{ LLMP_ENV_SERVE_NODE_RANK, ENV, PL, "plugin", NULL, "this node among the serving step's" },
	{ LLMP_ENV_SERVE_NNODES, ENV, PL, "plugin", NULL, "the serving step's nodes" },
	{ LLMP_ENV_SERVE_HEAD, ENV, PL | CLI, "plugin", NULL, "the serving head node's address" },
	{ LLMP_ENV_SERVE_PORT, ENV, PL | CLI, "plugin", NULL, "the engine's API port" },
	{ LLMP_ENV_SERVE_PORTS, ENV, PL | CLI, "plugin", NULL, "the serving step's port block, FIRST-LAST" },
	{ LLMP_ENV_SERVE_TOKEN_FILE, ENV, PL | CLI, "plugin", NULL, "the serving job's 0600 token file" },
	{ LLMP_ENV_VLLM_ARGS, ENV, PL | CLI, "plugin", NULL, "vLLM's arguments for this node" },
	{ LLMP_ENV_SGLANG_ARGS, ENV, PL | CLI, "plugin", NULL, "SGLang's arguments for this node" },
	{ LLMP_ENV_RAY_START_ARGS, ENV, PL | CLI, "plugin", NULL, "`ray start`'s arguments for this node" },

	/* not llmp's: read from Slurm, NCCL, PyTorch and the system */
	{ "SLURM_JOB_ID", ENV, RT | PL | CLI, "Slurm", NULL, "the job, in run records and file names" },
	{ "SLURM_STEP_ID", ENV, RT | CLI, "Slurm", NULL, "the step, in run records" },
	{ "SLURM_RESTART_COUNT", ENV, RT | PL | CLI, "Slurm", "0",
	  "the job's requeues so far (where LLMP_RESTART_COUNT is unset)" },
	{ "SLURMD_NODENAME", ENV, RT | PL | CLI, "Slurm", NULL, "this node's name in Slurm" },
	{ "GLOO_SOCKET_IFNAME", ENV, CLI, "plugin", NULL,
	  "gloo's interfaces; llmp serve checks each is up on the node (the plugin sets it unless you do)" },
	{ "TP_SOCKET_IFNAME", ENV, CLI, "plugin", NULL,
	  "TensorPipe's interface; llmp serve checks it is up on the node (the plugin sets it unless you do)" },
	{ "NCCL_SOCKET_IFNAME", ENV, CLI, "plugin", NULL,
	  "NCCL's interface prefixes; llmp serve checks one is up on the node (the plugin sets it unless you do)" },
	{ "SLURM_CONF", ENV, PL, "Slurm", NULL, "slurm.conf, for the plugin's checks" },
	{ "SLURM_NODELIST", ENV, PL, "Slurm", NULL, "the job's nodes, when the step's are unknown" },
	{ "SLURM_STEP_NODELIST", ENV, PL, "Slurm", NULL, "the step's nodes" },
	{ "SLURM_TASKS_PER_NODE", ENV, PL | CLI, "Slurm", NULL, "the job's tasks per node" },
	{ "SLURM_STEP_TASKS_PER_NODE", ENV, PL, "Slurm", NULL, "the step's tasks per node" },
	{ "SLURM_NTASKS_PER_NODE", ENV, CLI, "Slurm", NULL, "--ntasks-per-node, for llmp job run" },
	{ "SLURM_CPUS_PER_TASK", ENV, PL, "Slurm", NULL, "srun -c: OMP_NUM_THREADS where the task has none" },
	{ "SLURM_DISTRIBUTION", ENV, PL, "Slurm", NULL, "the task distribution (block, cyclic, arbitrary)" },
	{ "SLURM_HOSTFILE", ENV, PL, "Slurm", NULL, "an arbitrary distribution's host file" },
	{ "SLURM_PMIX_MAPPING_SERV", ENV, PL, "Slurm", NULL, "PMIx's map of tasks to nodes" },
	{ "SLURM_GPUS_PER_NODE", ENV, PL, "Slurm", NULL, "--gpus-per-node, for --llm-parallel=auto" },
	{ "SLURM_JOB_GPUS", ENV, PL, "Slurm", NULL, "the job's GPUs, for the node check after it" },
	{ "SLURM_LAUNCH_NODE_IPADDR", ENV, PL, "Slurm", NULL,
	  "srun's address: the route to it names the interface" },
	{ "SLURM_STEP_RESV_PORTS", ENV, PL, "Slurm", NULL,
	  "ports Slurm reserved for the step (MASTER_PORT)" },
	{ "SLURM_TOPOLOGY_ADDR", ENV, RT | PL | CLI, "Slurm", NULL, "this node's place in the switch tree" },
	{ "SLURM_TOPOLOGY_ADDR_PATTERN", ENV, RT | PL | CLI, "Slurm", NULL,
	  "what SLURM_TOPOLOGY_ADDR's levels are" },
	{ "CUDA_VISIBLE_DEVICES", ENV, PL | PY, "Slurm/plugin", NULL, "the GPUs a task sees" },
	{ "NCCL_NET_GDR_LEVEL", ENV, RT | PL | CLI, "you/plugin", NULL,
	  "NCCL's GPUDirect RDMA distance; the plugin sets the site's gdr_level= where unset" },
	{ "NCCL_TOPO_FILE", ENV, PL, "you/plugin", NULL,
	  "NCCL's topology; the plugin writes one where unset" },
	{ "NCCL_DEBUG", ENV, RT | CLI, "you", NULL,
	  "NCCL's log level (llmp topo --job reads its GPUDirect lines)" },
	{ "NCCL_DEBUG_FILE", ENV, RT | CLI, "you", NULL, "where NCCL's log goes" },
	{ "NCCL_DEBUG_SUBSYS", ENV, RT, "you", NULL, "NCCL's log subsystems" },
	{ "UCX_TLS", ENV, CLI, "you", NULL, "UCX's transports (llmp bench names them; UCX itself reads it)" },
	{ "RANK", ENV, PY, "plugin", NULL, "torchrun's rank, which llmp.torch checks" },
	{ "WORLD_SIZE", ENV, PY, "plugin", NULL, "torchrun's world size" },
	{ "LOCAL_RANK", ENV, CLI | PY, "plugin", NULL, "the task's GPU index in CUDA_VISIBLE_DEVICES" },
	{ "MASTER_ADDR", ENV, PY, "plugin", NULL, "rank 0's host, for env:// rendezvous" },
	{ "MASTER_PORT", ENV, PY, "plugin", NULL, "the rendezvous port" },
	{ "TORCH_FR_DUMP_TEMP_FILE", ENV, PY, "plugin", NULL,
	  "where PyTorch's flight recorder dumps (llmp report)" },
	{ "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", ENV, PY, "plugin", NULL, "the same, its older name" },
	{ "TMPDIR", ENV, PL | CLI, "you/Slurm", "/tmp", "where layout files and llmp bench's NCCL logs go" },

	/* plugstack.conf arguments of llm_parallel.so (llm_parallel(8), PLUGSTACK ARGUMENTS) */
	{ "defaults", SITE, PL, "site", NULL, "layout keys that apply unless the user gives them" },
	{ "checkpoint", SITE, PL, "site", NULL, "checkpoint keys that apply unless the user gives them" },
	{ "max_tp", SITE, PL, "site", NULL, "the largest tp a job may ask for" },
	{ "max_pp", SITE, PL, "site", NULL, "the largest pp" },
	{ "max_cp", SITE, PL, "site", NULL, "the largest cp" },
	{ "max_ep", SITE, PL, "site", NULL, "the largest ep" },
	{ "max_etp", SITE, PL, "site", NULL, "the largest etp (else max_tp bounds it)" },
	{ "max_requeues", SITE, PL, "site", NULL, "requeues after which a batch job is not run again" },
	{ "gpu_bind", SITE, PL, "site", "node", "the default of --llm-gpu-bind: node, task or none" },
	{ "placement", SITE, PL, "site", "block", "the default of --llm-placement: block or topology" },
	{ "port_base", SITE, PL, "site", "20000", "the first MASTER_PORT" },
	{ "port_range", SITE, PL, "site", "10000", "how many MASTER_PORTs" },
	{ "layout_dir", SITE, PL, "site", NULL, "where layout files go (else the job's TMPDIR, else /tmp)" },
	{ "gpu", SITE, PL, "site", NULL, "the nodes' GPU for --llm-model (a user's LLMP_GPU wins)" },
	{ "topology", SITE, PL, "site", NULL, "the site's topology file" },
	{ "gdr_level", SITE, PL, "site", NULL, "NCCL_NET_GDR_LEVEL for tasks that set none" },
	{ "nvml", SITE, PL, "site", "libnvidia-ml.so.1", "the NVML library the task check loads" },
	{ "clean", SITE, PL, "site", "epilog,check",
	  "when a node is checked for leftovers: off, or of prolog, epilog, check (--llm-node-check)" },
	{ "clean_wait", SITE, PL, "site", "10", "seconds the check waits for a leftover to go" },
	{ "clean_mem", SITE, PL, "site", "1024", "MiB a job's GPU may keep in use with no process" },
	{ "clean_gpus", SITE, PL, "site", "job", "which GPUs were the job's: job or all" },
	{ "drain", SITE, PL, "site", "yes", "whether a dirty node is drained" },
	{ "scontrol", SITE, PL, "site", "/usr/bin/scontrol", "the scontrol that drains" },
	{ "guard", SITE, PL, "site", "refuse", "the memory guard of --llm-model: refuse, warn or off" },
	{ "guard_band", SITE, PL, "site", NULL,
	  "the model's memory error (0 to 1); else the bands measured" },
	{ "guard_override", SITE, PL, "site", "yes",
	  "whether --llm-guard=warn may run what the guard refuses" },
	{ "calibration", SITE, PL, "site", NULL, "a file of gpu= and guard_band= from llmp calibrate -o" },
};
const size_t cli_nsettings = sizeof cli_settings / sizeof cli_settings[0];

const char *cli_setting_readers(unsigned readers, char *buf, size_t len)
{
	static const char *const names[] = { "runtime", "plugin", "llmp", "python" };
	size_t used = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
		if (readers & (1u << i) && used < len) /* SET_SECRET is no reader: not shown */
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "", names[i]);
	if (!buf[0])
		snprintf(buf, len, "program");
	return buf;
}
