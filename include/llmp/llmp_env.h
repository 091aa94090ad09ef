/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_env.h - the environment variables between the plugin and the tasks.
 *
 * The SPANK plugin sets them in each task of a step (doc/llm_parallel.8);
 * libllmp, the llmp tool and a training program read them. Declared once,
 * here, so that both sides name the same variable. The variables PyTorch's
 * env:// rendezvous reads (RANK, WORLD_SIZE, ...) are not llmp's and are
 * not listed.
 */
#ifndef LLMP_ENV_H
#define LLMP_ENV_H

/* The layout: the user's spec, and the order and sizes it resolved to. */
#define LLMP_ENV_PARALLEL "LLMP_PARALLEL"       /* the layout keys in force, canonically */
#define LLMP_ENV_ORDER "LLMP_ORDER"             /* the dimensions, fastest first */
#define LLMP_ENV_VPP_SIZE "LLMP_VPP_SIZE"       /* virtual pipeline stages per rank */
#define LLMP_ENV_LAYOUT_FILE "LLMP_LAYOUT_FILE" /* the JSON layout (doc/layout-json.md) */
/* Megatron-LM's arguments for the layout ("--tensor-model-parallel-size 2 ..."),
 * set when Megatron can state the order. */
#define LLMP_ENV_MEGATRON_ARGS "LLMP_MEGATRON_ARGS"
/* The model and GPU, for --llm-parallel=auto and the memory guard
 * (planner/model_desc.h, topology/gpu_desc.h): what --llm-model and the
 * site's gpu= give. */
#define LLMP_ENV_MODEL "LLMP_MODEL"
#define LLMP_ENV_GPU "LLMP_GPU"
/* srun's plugin -> the step: the layout --llm-parallel=auto chose, as
 * layout keys, and Megatron-LM's flags for what the model assumed
 * (micro-batch, recompute, uneven stages), added to LLMP_MEGATRON_ARGS. */
#define LLMP_ENV_AUTO_LAYOUT "LLMP_AUTO_LAYOUT"
#define LLMP_ENV_MODEL_ARGS "LLMP_MODEL_ARGS"
/* srun's plugin -> the step and its tasks: the decoder layers of each
 * pipeline stage ("10,12,12,6") when a pipeline over GPUs of different
 * kinds splits them unevenly; the layout file's "stage_layers". */
#define LLMP_ENV_STAGE_LAYERS "LLMP_STAGE_LAYERS"
/* srun's plugin -> the step: with --llm-model, each pipeline stage's GPU as
 * the estimate assumed it and its peak MiB per rank ("h100:61234,h100:58000");
 * each task compares them with the GPU NVML shows it. */
#define LLMP_ENV_MODEL_PEAKS "LLMP_MODEL_PEAKS"
/* srun's plugin -> the step: with --llm-model, what the memory guard made of
 * a written layout beyond the estimate (doubtful, overridden, warned, off),
 * which slurmstepd logs; unset when the estimate fits. */
#define LLMP_ENV_MODEL_GUARD "LLMP_MODEL_GUARD"
/* LLMP_<DIM>_SIZE and LLMP_<DIM>_RANK for each dimension: plugin/task_env.c. */
#define LLMP_ENV_PREFIX "LLMP_"

/* This task's place in the job. */
#define LLMP_ENV_WORLD_SIZE "LLMP_WORLD_SIZE"
#define LLMP_ENV_RANK "LLMP_RANK"
#define LLMP_ENV_LOCAL_RANK "LLMP_LOCAL_RANK"
#define LLMP_ENV_LOCAL_WORLD_SIZE "LLMP_LOCAL_WORLD_SIZE"
#define LLMP_ENV_NODE_RANK "LLMP_NODE_RANK"
#define LLMP_ENV_NNODES "LLMP_NNODES"
/* "block": LLMP_RANK is SLURM_PROCID; "topology:<16 hex digits>": ranks were
 * renumbered in topology order (--llm-placement=topology), the digits a
 * fingerprint of the placement, which libllmp compares across ranks. */
#define LLMP_ENV_PLACEMENT "LLMP_PLACEMENT"

/* Checkpoints and requeue (--llm-checkpoint, doc/fault-tolerance.md). */
#define LLMP_ENV_CHECKPOINT "LLMP_CHECKPOINT" /* the checkpoint spec in force */
#define LLMP_ENV_CHECKPOINT_DIR "LLMP_CHECKPOINT_DIR"
#define LLMP_ENV_CHECKPOINT_EVERY "LLMP_CHECKPOINT_EVERY"
#define LLMP_ENV_CHECKPOINT_KEEP "LLMP_CHECKPOINT_KEEP"
#define LLMP_ENV_MAX_RESTARTS "LLMP_MAX_RESTARTS"
#define LLMP_ENV_RESTART_COUNT "LLMP_RESTART_COUNT"
#define LLMP_ENV_REQUEUE "LLMP_REQUEUE"     /* how llmp job-end requeues (llmp-job-end) */
#define LLMP_ENV_STEP_WAIT "LLMP_STEP_WAIT" /* s llmp job-end waits for a run's steps to leave */

/* The runtime's tunables, read by libllmp alone (doc/llmp.3). */
/* What libllmp says on stderr: LEVEL[,PART...] (runtime/comm/log.h, doc/llmp.3). */
#define LLMP_ENV_DEBUG "LLMP_DEBUG"
#define LLMP_ENV_TIMEOUT "LLMP_TIMEOUT"
#define LLMP_ENV_STEP_DEADLINE "LLMP_STEP_DEADLINE" /* F: the timeout from F x the slowest step */
#define LLMP_ENV_RING_THRESHOLD "LLMP_RING_THRESHOLD"
#define LLMP_ENV_SHM_THRESHOLD "LLMP_SHM_THRESHOLD"
#define LLMP_ENV_SHM_CHUNK "LLMP_SHM_CHUNK"

/* The topology (doc/topology-json.md): a file in place of discovery, and
 * whether llmp_init publishes each node's own in its fence (llmp topo --job). */
#define LLMP_ENV_TOPOLOGY_FILE "LLMP_TOPOLOGY_FILE"
/* srun's plugin -> the step: random bytes (16 hex digits) in MASTER_PORT's hash */
#define LLMP_ENV_PORT_SALT "LLMP_PORT_SALT"
/* A serving step's secret, drawn by srun's plugin for the step (--llm-serve); each node writes it to
 * the file LLMP_SERVE_TOKEN_FILE names, and the task's environment does not keep it. */
#define LLMP_ENV_SERVE_TOKEN "LLMP_SERVE_TOKEN"
/* A serving job's node (--llm-serve; plugin/serve.c writes them, `llmp serve` reads them). */
#define LLMP_ENV_SERVE_ENGINE "LLMP_SERVE_ENGINE"         /* ray, vllm or sglang */
#define LLMP_ENV_SERVE_ROLE "LLMP_SERVE_ROLE"             /* head or worker */
#define LLMP_ENV_SERVE_NODE_RANK "LLMP_SERVE_NODE_RANK"   /* this node among the step's */
#define LLMP_ENV_SERVE_NNODES "LLMP_SERVE_NNODES"         /* the step's nodes */
#define LLMP_ENV_SERVE_HEAD "LLMP_SERVE_HEAD"             /* the head node's address */
#define LLMP_ENV_SERVE_PORT "LLMP_SERVE_PORT"             /* the engine's API port */
#define LLMP_ENV_SERVE_PORTS "LLMP_SERVE_PORTS"           /* the step's port block, FIRST-LAST */
#define LLMP_ENV_SERVE_TOKEN_FILE "LLMP_SERVE_TOKEN_FILE" /* the job's 0600 token file */
#define LLMP_ENV_VLLM_ARGS "LLMP_VLLM_ARGS"               /* vLLM's arguments for this node */
#define LLMP_ENV_SGLANG_ARGS "LLMP_SGLANG_ARGS"           /* SGLang's arguments for this node */
#define LLMP_ENV_RAY_START_ARGS "LLMP_RAY_START_ARGS"     /* `ray start`'s arguments for this node */
#define LLMP_ENV_TOPOLOGY_GATHER "LLMP_TOPOLOGY_GATHER"

/* Observability and the device path (doc/metrics-json.md, doc/llmp.3). */
#define LLMP_ENV_METRICS "LLMP_METRICS" /* where each rank writes its counters */
#define LLMP_ENV_DEVICE "LLMP_DEVICE"   /* the device path: on, off or auto */
/* Device operations' GPU time: on (every one), sampled or off; each keeps its deadline. */
#define LLMP_ENV_DEVICE_TIMING "LLMP_DEVICE_TIMING"

/* Libraries loaded with dlopen, by path in place of the system's (test doubles, sites). */
#define LLMP_ENV_CUDA_LIBRARY "LLMP_CUDA_LIBRARY"
#define LLMP_ENV_NCCL_LIBRARY "LLMP_NCCL_LIBRARY"
#define LLMP_ENV_NVML_LIBRARY "LLMP_NVML_LIBRARY"
#define LLMP_ENV_IBVERBS_LIBRARY "LLMP_IBVERBS_LIBRARY"
#define LLMP_ENV_LUSTREAPI_LIBRARY "LLMP_LUSTREAPI_LIBRARY"

/* The Python package's (python/llmp): the libllmp.so it loads, how llmp.torch makes groups. */
#define LLMP_ENV_LIBRARY "LLMP_LIBRARY"
#define LLMP_ENV_TORCH_GROUPS "LLMP_TORCH_GROUPS"

/* The tools: the Python `llmp report` runs, and CRC-32C without CPU instructions (tests). */
#define LLMP_ENV_PYTHON "LLMP_PYTHON"
#define LLMP_ENV_CRC32C_PORTABLE "LLMP_CRC32C_PORTABLE"

#endif /* LLMP_ENV_H */
