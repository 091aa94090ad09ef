/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * serve.h - serving jobs (--llm-serve=ray|vllm|sglang): one task per node
 * sees all its GPUs and runs an inference engine; the plugin checks the
 * layout at submission, gives the step a block of job-unique ports, and
 * hands each node its role and the engine's arguments (doc/serving.md).
 *
 * Pure: no Slurm, so the unit tests check every value (test_plugin_serve.c).
 */
#ifndef LLMP_PLUGIN_SERVE_H
#define LLMP_PLUGIN_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_spec.h>
#include "site.h"
#include "task_env.h"

struct model_desc;
struct gpu_desc;

enum plugin_serve_engine { PLUGIN_SERVE_NONE, PLUGIN_SERVE_RAY, PLUGIN_SERVE_VLLM, PLUGIN_SERVE_SGLANG };

/* "ray", "vllm", "sglang"; -1 for anything else. */
int plugin_serve_engine_parse(const char *text);
const char *plugin_serve_engine_name(int engine);

/*
 * The block of ports a serving step owns on each of its nodes, from its
 * first port: what each one is for (the engines' flags, serve.c).
 */
enum {
	PLUGIN_SERVE_PORT_API,            /* the engine's HTTP API: vLLM/SGLang --port, Ray Serve */
	PLUGIN_SERVE_PORT_RENDEZVOUS,     /* vLLM --master-port, SGLang --dist-init-addr, Ray's GCS */
	PLUGIN_SERVE_PORT_NODE_MANAGER,   /* Ray --node-manager-port */
	PLUGIN_SERVE_PORT_OBJECT_MANAGER, /* Ray --object-manager-port */
	PLUGIN_SERVE_PORT_RAY_CLIENT,     /* Ray --ray-client-server-port */
	PLUGIN_SERVE_PORT_METRICS,        /* Ray --metrics-export-port */
	PLUGIN_SERVE_PORT_AGENT_HTTP,     /* Ray --dashboard-agent-listen-port */
	PLUGIN_SERVE_PORT_AGENT_GRPC,     /* Ray --dashboard-agent-grpc-port */
	PLUGIN_SERVE_PORT_RUNTIME_ENV,    /* Ray --runtime-env-agent-port */
	PLUGIN_SERVE_PORT_ENGINE_BASE,    /* vLLM's VLLM_PORT: the base of its own internal ports */
	PLUGIN_SERVE_PORT_WORKERS = 16,   /* Ray --min-worker-port .. --max-worker-port, 16 ports */
	PLUGIN_SERVE_PORTS = 32
};

/*
 * The first port of the step's block, the same on every node: the first of
 * Slurm's reserved ports when it reserved a whole block for the step
 * (SLURM_STEP_RESV_PORTS "A-B" with B-A+1 >= PLUGIN_SERVE_PORTS: srun
 * --resv-ports=32 with MpiParams=ports=), else one of the site's
 * port_range / PLUGIN_SERVE_PORTS aligned blocks above port_base, chosen by a
 * hash of the job, the step and the salt (site.h). 0 when the site's range
 * holds no block.
 */
uint32_t plugin_serve_port_block(const struct plugin_site *site, uint32_t job_id, uint32_t step_id,
				 uint64_t salt, const char *resv_ports);

/*
 * The serving layout against the step: tp x pp x dp must be the GPUs
 * (nodes x gpus_per_node; gpus_per_node 0: not known, not checked), tp must
 * divide the model's heads and kv-heads (m NULL: no model), and with a GPU
 * g the weights of one GPU, bf16, plus a KV cache for one sequence of the
 * model's length must fit 90% of its memory. tasks must equal nodes (one
 * task per node; 0: not known). Returns 0, or -1 with msg naming the
 * culprit; warning says tp crossing nodes.
 */
int plugin_serve_check(const llmp_spec *spec, uint32_t nodes, uint32_t tasks, uint32_t gpus_per_node,
		       const struct model_desc *m, const struct gpu_desc *g, char *warning, size_t wlen,
		       char *msg, size_t msglen);

/* One node of a serving step. */
struct plugin_serve_node {
	int engine;                       /* enum plugin_serve_engine */
	uint32_t tp, pp, dp;              /* dp 0: the GPUs left over */
	uint32_t nnodes, node_rank, gpus; /* gpus: this node's (CUDA_VISIBLE_DEVICES entries) */
	const char *head;                 /* the head node's address, as the other nodes reach it */
	const char *node_addr;            /* this node's address toward them ("" when unknown) */
	uint32_t port;                    /* the block's first port */
	const char *temp_dir;             /* Ray's --temp-dir for this node */
	const char *token_file;           /* the job's 0600 token file ("" when none) */
};

/*
 * The node's variables (doc/llm_parallel.8): LLMP_SERVE_* (engine, role,
 * node rank, nodes, head, API port, the block, the token file), and the
 * engine's: LLMP_VLLM_ARGS, LLMP_SGLANG_ARGS or LLMP_RAY_START_ARGS with
 * RAY_ADDRESS and Ray's token variables. Appended to env; 0 or -1 when a
 * value does not fit.
 */
int plugin_serve_env(const struct plugin_serve_node *n, struct llmp_env *env);

#endif /* LLMP_PLUGIN_SERVE_H */
