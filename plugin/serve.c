/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * serve.c - a serving step's checks, port block and each node's engine
 * arguments (serve.h).
 *
 * The flags are the engines' own, as their argument parsers define them
 * (doc/serving.md says which were checked how):
 *  - vLLM, multi-node without Ray (vllm-project/vllm vllm/config/parallel.py,
 *    docs/serving/parallelism_scaling.md): --tensor-parallel-size
 *    --pipeline-parallel-size --nnodes --node-rank --master-addr
 *    --master-port, --headless off the head, --port for the API.
 *  - SGLang (sgl-project/sglang python/sglang/srt/server_args.py): --tp-size
 *    --pp-size --dp-size --nnodes --node-rank --dist-init-addr HOST:PORT
 *    --port.
 *  - Ray (ray-project/ray python/ray/scripts/scripts.py, `ray start`): every
 *    port it would otherwise take at random or by default, pinned to the
 *    block, so two jobs on one node never meet.
 */
#include "serve.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llmp/llmp_env.h>
#include "planner/model_desc.h"
#include "topology/gpu_desc.h"

static const char *const engine_names[] = { "", "ray", "vllm", "sglang" };

int plugin_serve_engine_parse(const char *text)
{
	for (int e = PLUGIN_SERVE_RAY; e <= PLUGIN_SERVE_SGLANG; e++)
		if (text && strcmp(text, engine_names[e]) == 0)
			return e;
	return -1;
}

const char *plugin_serve_engine_name(int engine)
{
	return engine >= PLUGIN_SERVE_RAY && engine <= PLUGIN_SERVE_SGLANG ? engine_names[engine] : "";
}

/* splitmix64's finalizer: every bit of the job, step and salt moves the block. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint32_t plugin_serve_port_block(const struct plugin_site *site, uint32_t job_id, uint32_t step_id,
				 uint64_t salt, const char *resv_ports)
{
	if (resv_ports && resv_ports[0] >= '1' && resv_ports[0] <= '9') {
		char *end;
		unsigned long first = strtoul(resv_ports, &end, 10), last = first;
		if (*end == '-')
			last = strtoul(end + 1, &end, 10);
		if ((*end == '\0' || *end == ',') && last <= 65535 && last >= first &&
		    last - first + 1 >= PLUGIN_SERVE_PORTS)
			return (uint32_t)first;
	}
	uint32_t blocks = site->port_range / PLUGIN_SERVE_PORTS;
	if (!blocks)
		return 0;
	uint64_t slot = mix(mix(((uint64_t)job_id << 32) | step_id) ^ salt);
	return site->port_base + (uint32_t)(slot % blocks) * PLUGIN_SERVE_PORTS;
}

int plugin_serve_check(const llmp_spec *spec, uint32_t nodes, uint32_t tasks, uint32_t gpus_per_node,
		       const struct model_desc *m, const struct gpu_desc *g, char *warning, size_t wlen,
		       char *msg, size_t msglen)
{
	uint32_t tp = spec->size[LLMP_DIM_TP], pp = spec->size[LLMP_DIM_PP], dp = spec->size[LLMP_DIM_DP];
	warning[0] = '\0';
	if (spec->size[LLMP_DIM_CP] > 1 || spec->size[LLMP_DIM_EP] > 1) {
		snprintf(msg, msglen,
			 "--llm-serve: cp and ep are training dimensions; a serving layout is "
			 "tp=,pp=[,dp=]");
		return -1;
	}
	if (tasks && nodes && tasks != nodes) {
		snprintf(msg, msglen,
			 "--llm-serve runs one task per node, which sees all the node's GPUs: %u tasks on %u "
			 "node%s (use --ntasks-per-node=1)",
			 tasks, nodes, nodes == 1 ? "" : "s");
		return -1;
	}
	if (gpus_per_node && nodes) {
		uint64_t gpus = (uint64_t)gpus_per_node * nodes, model = (uint64_t)tp * pp;
		if (gpus % model) {
			snprintf(
				msg, msglen,
				"--llm-serve: tp*pp = %u*%u = %llu does not divide the step's %llu GPUs (%u node%s x "
				"%u)",
				tp, pp, (unsigned long long)model, (unsigned long long)gpus, nodes,
				nodes == 1 ? "" : "s", gpus_per_node);
			return -1;
		}
		if (dp && model * dp != gpus) {
			snprintf(
				msg, msglen,
				"--llm-serve: tp*pp*dp = %u*%u*%u = %llu is not the step's %llu GPUs (%u node%s x %u)",
				tp, pp, dp, (unsigned long long)(model * dp), (unsigned long long)gpus, nodes,
				nodes == 1 ? "" : "s", gpus_per_node);
			return -1;
		}
		if (tp > gpus_per_node)
			snprintf(
				warning, wlen,
				"warning: --llm-serve: tp=%u spans nodes of %u GPUs: each token's all-reduce crosses "
				"the network (pp across nodes, tp within, is faster without RDMA)",
				tp, gpus_per_node);
	}
	if (!m)
		return 0;
	if (m->heads > 0 && (uint64_t)m->heads % tp) {
		snprintf(msg, msglen, "--llm-serve: tp=%u does not divide the model's %.0f attention heads",
			 tp, m->heads);
		return -1;
	}
	if (m->kv_heads > 0 && (uint64_t)m->kv_heads % tp && tp % (uint64_t)m->kv_heads) {
		snprintf(msg, msglen,
			 "--llm-serve: tp=%u and the model's %.0f kv-heads: neither divides the other", tp,
			 m->kv_heads);
		return -1;
	}
	if (m->layers > 0 && (uint64_t)m->layers < pp) {
		snprintf(msg, msglen, "--llm-serve: pp=%u is more stages than the model's %.0f layers", pp,
			 m->layers);
		return -1;
	}
	if (!g || g->mem_bytes <= 0)
		return 0;
	double weights = 2.0 * model_desc_params(m) / ((double)tp * pp);
	double kv_heads = m->kv_heads > 0 ? m->kv_heads : m->heads;
	double head_dim = m->heads > 0 ? m->hidden / m->heads : 0;
	double kv_per_gpu = kv_heads >= tp ? kv_heads / tp : 1; /* replicated when tp exceeds kv-heads */
	double kv = 2.0 * 2.0 * (m->layers / pp) * kv_per_gpu * head_dim * m->seq;
	double room = 0.9 * g->mem_bytes;
	if (weights + kv > room) {
		snprintf(
			msg, msglen,
			"--llm-serve: %s needs %.1f GiB of weights per GPU at tp=%u pp=%u (bf16) and %.2f GiB of "
			"KV cache for one %.0f-token sequence, more than 90%% of %s's %.1f GiB",
			m->name[0] ? m->name : "the model", weights / (1u << 30), tp, pp, kv / (1u << 30),
			m->seq, g->name[0] ? g->name : "the GPU", g->mem_bytes / (1u << 30));
		return -1;
	}
	return 0;
}

/* vLLM's multi-node flags (its own executor, no Ray): every node runs `vllm serve` with them. */
static int vllm_args(const struct plugin_serve_node *n, uint32_t dp, struct llmp_env *env)
{
	char dpflags[64] = "";
	if (dp > 1)
		snprintf(dpflags, sizeof dpflags, " --data-parallel-size %u", dp);
	return plugin_env_add(
		env, LLMP_ENV_VLLM_ARGS,
		"--tensor-parallel-size %u --pipeline-parallel-size %u%s --nnodes %u --node-rank %u "
		"--master-addr %s --master-port %u --port %u%s",
		n->tp, n->pp, dpflags, n->nnodes, n->node_rank, n->head,
		n->port + PLUGIN_SERVE_PORT_RENDEZVOUS, n->port + PLUGIN_SERVE_PORT_API,
		n->node_rank ? " --headless" : "");
}

static int sglang_args(const struct plugin_serve_node *n, uint32_t dp, struct llmp_env *env)
{
	return plugin_env_add(
		env, LLMP_ENV_SGLANG_ARGS,
		"--tp-size %u --pp-size %u --dp-size %u --nnodes %u --node-rank %u --dist-init-addr %s:%u "
		"--port %u",
		n->tp, n->pp, dp, n->nnodes, n->node_rank, n->head, n->port + PLUGIN_SERVE_PORT_RENDEZVOUS,
		n->port + PLUGIN_SERVE_PORT_API);
}

/* `ray start`: the head or a worker, every port in the block, a temp dir of the node's own. */
static int ray_args(const struct plugin_serve_node *n, struct llmp_env *env)
{
	char where[320], ip[96] = "";
	uint32_t p = n->port;
	/* --port and --include-dashboard are the head's only: ray start refuses them on a worker. */
	if (n->node_rank == 0)
		snprintf(where, sizeof where, "--head --port=%u --include-dashboard=false",
			 p + PLUGIN_SERVE_PORT_RENDEZVOUS);
	else
		snprintf(where, sizeof where, "--address=%s:%u", n->head, p + PLUGIN_SERVE_PORT_RENDEZVOUS);
	if (n->node_addr && n->node_addr[0])
		snprintf(ip, sizeof ip, " --node-ip-address=%s", n->node_addr);
	int rc = plugin_env_add(
		env, LLMP_ENV_RAY_START_ARGS,
		"%s%s --node-manager-port=%u --object-manager-port=%u --ray-client-server-port=%u "
		"--metrics-export-port=%u --dashboard-agent-listen-port=%u --dashboard-agent-grpc-port=%u "
		"--runtime-env-agent-port=%u --min-worker-port=%u "
		"--max-worker-port=%u --temp-dir=%s --num-gpus=%u --resources={\"llmp_node_%u\":1} --block",
		where, ip, p + PLUGIN_SERVE_PORT_NODE_MANAGER, p + PLUGIN_SERVE_PORT_OBJECT_MANAGER,
		p + PLUGIN_SERVE_PORT_RAY_CLIENT, p + PLUGIN_SERVE_PORT_METRICS,
		p + PLUGIN_SERVE_PORT_AGENT_HTTP, p + PLUGIN_SERVE_PORT_AGENT_GRPC,
		p + PLUGIN_SERVE_PORT_RUNTIME_ENV, p + PLUGIN_SERVE_PORT_WORKERS, p + PLUGIN_SERVE_PORTS - 1,
		n->temp_dir, n->gpus, n->node_rank);
	rc |= plugin_env_add(env, "RAY_ADDRESS", "%s:%u", n->head, p + PLUGIN_SERVE_PORT_RENDEZVOUS);
	if (n->token_file && n->token_file[0]) {
		rc |= plugin_env_add(env, "RAY_AUTH_MODE", "token");
		rc |= plugin_env_add(env, "RAY_AUTH_TOKEN_PATH", "%s", n->token_file);
	}
	return rc;
}

int plugin_serve_env(const struct plugin_serve_node *n, struct llmp_env *env)
{
	uint32_t model = n->tp * n->pp, gpus = n->gpus * n->nnodes;
	uint32_t dp = n->dp ? n->dp : model && gpus >= model ? gpus / model : 1;
	int rc = 0;
	rc |= plugin_env_add(env, LLMP_ENV_SERVE_ENGINE, "%s", plugin_serve_engine_name(n->engine));
	rc |= plugin_env_add(env, LLMP_ENV_SERVE_ROLE, "%s", n->node_rank ? "worker" : "head");
	rc |= plugin_env_add(env, LLMP_ENV_SERVE_NODE_RANK, "%u", n->node_rank);
	rc |= plugin_env_add(env, LLMP_ENV_SERVE_NNODES, "%u", n->nnodes);
	rc |= plugin_env_add(env, LLMP_ENV_SERVE_HEAD, "%s", n->head);
	rc |= plugin_env_add(env, LLMP_ENV_SERVE_PORT, "%u", n->port + PLUGIN_SERVE_PORT_API);
	rc |= plugin_env_add(env, LLMP_ENV_SERVE_PORTS, "%u-%u", n->port, n->port + PLUGIN_SERVE_PORTS - 1);
	if (n->token_file && n->token_file[0])
		rc |= plugin_env_add(env, LLMP_ENV_SERVE_TOKEN_FILE, "%s", n->token_file);
	switch (n->engine) {
	case PLUGIN_SERVE_VLLM:
		rc |= vllm_args(n, dp, env);
		rc |= plugin_env_add(env, "VLLM_PORT", "%u", n->port + PLUGIN_SERVE_PORT_ENGINE_BASE);
		if (n->node_addr && n->node_addr[0])
			rc |= plugin_env_add(env, "VLLM_HOST_IP", "%s", n->node_addr);
		break;
	case PLUGIN_SERVE_SGLANG: rc |= sglang_args(n, dp, env); break;
	case PLUGIN_SERVE_RAY: rc |= ray_args(n, env); break;
	default: return -1;
	}
	return rc ? -1 : 0;
}
