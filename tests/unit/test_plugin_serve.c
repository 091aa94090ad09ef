/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_plugin_serve.c - serving steps (plugin/serve.h, serve_token.h): the
 * engine names, the port block, the layout checks at submission and each
 * node's engine arguments.
 *
 * The memory case is worked out by hand: the model "M" has 4 layers of
 * hidden h = 4096, 32 heads (head dim 128, no grouped KV), ffn 16384 (GeLU),
 * vocabulary 32000 untied: 4 x (4 h^2 + 2 h ffn) + 2 x 32000 h = 1.0674e9
 * parameters, 2.1349e9 bytes in bf16 = 1.988 GiB on one GPU. One 2048-token
 * sequence's KV cache: K and V, 2 bytes, 4 layers, 32 heads x 128, 2048
 * tokens = 2 x 2 x 4 x 4096 x 2048 = 128 MiB. 2.113 GiB in all: above 90% of
 * 2.3 GiB (2.07), below 90% of 2.4 GiB (2.16).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <llmp/llmp_spec.h>
#include "plugin/serve.h"
#include "plugin/serve_token.h"
#include "plugin/site.h"
#include "planner/model_desc.h"
#include "topology/gpu_desc.h"

#define M "layers=4,hidden=4096,heads=32,seq=2048,vocab=32000,ffn=16384"

static llmp_spec spec_of(const char *text)
{
	llmp_spec s;
	char msg[256];
	assert_int_equal(llmp_spec_parse(text, &s, msg, sizeof msg), LLMP_OK);
	return s;
}

static struct plugin_site default_site(void)
{
	struct plugin_site site;
	char msg[256];
	assert_int_equal(plugin_site_parse(&site, 0, NULL, msg, sizeof msg), 0);
	return site;
}

static const char *value_of(const struct llmp_env *env, const char *name)
{
	for (size_t i = 0; i < env->n; i++)
		if (strcmp(env->var[i].name, name) == 0)
			return env->var[i].value;
	return NULL;
}

static void engines(void **state)
{
	(void)state;
	assert_int_equal(plugin_serve_engine_parse("ray"), PLUGIN_SERVE_RAY);
	assert_int_equal(plugin_serve_engine_parse("vllm"), PLUGIN_SERVE_VLLM);
	assert_int_equal(plugin_serve_engine_parse("sglang"), PLUGIN_SERVE_SGLANG);
	assert_int_equal(plugin_serve_engine_parse("vLLM"), -1);
	assert_int_equal(plugin_serve_engine_parse("tgi"), -1);
	assert_int_equal(plugin_serve_engine_parse(""), -1);
	assert_int_equal(plugin_serve_engine_parse(NULL), -1);
	assert_string_equal(plugin_serve_engine_name(PLUGIN_SERVE_SGLANG), "sglang");
}

/* Blocks: 32 ports, aligned on port_base, inside the range; Slurm's block when it reserved one. */
static void port_block(void **state)
{
	(void)state;
	struct plugin_site site = default_site(); /* port_base=20000 port_range=10000: 312 blocks */
	unsigned seen[312] = { 0 }, distinct = 0;
	for (uint32_t job = 1; job <= 2000; job++) {
		uint32_t p = plugin_serve_port_block(&site, job, 0, 0x1234, NULL);
		assert_true(p >= 20000);
		assert_int_equal((p - 20000) % 32, 0);
		assert_true(p + 31 <= 20000 + 10000 - 1);
		distinct += !seen[(p - 20000) / 32]++;
	}
	assert_true(distinct > 280); /* 2000 draws over 312 blocks leave about 0.6 empty */
	/* The salt moves the block: another user cannot tell it from the job id. */
	unsigned moved = 0;
	for (uint64_t salt = 1; salt <= 100; salt++)
		moved += plugin_serve_port_block(&site, 7, 0, salt, NULL) !=
			 plugin_serve_port_block(&site, 7, 0, 0, NULL);
	assert_true(moved > 90);
	assert_int_equal(plugin_serve_port_block(&site, 7, 0, 1, "30000-30031"), 30000);
	assert_int_equal(plugin_serve_port_block(&site, 7, 0, 1, "30000-30040,31000"), 30000);
	/* Too few reserved ports for a block: the site's range. */
	uint32_t p = plugin_serve_port_block(&site, 7, 0, 1, "30000-30010");
	assert_true(p >= 20000 && p < 30000);
	site.port_range = 31;
	assert_int_equal(plugin_serve_port_block(&site, 7, 0, 1, NULL), 0);
}

static int check(const char *layout, uint32_t nodes, uint32_t tasks, uint32_t gpus, const char *model,
		 const char *gpu, char *warning, char *msg)
{
	llmp_spec s = spec_of(layout);
	struct model_desc m;
	struct gpu_desc g;
	char why[256];
	if (model)
		if (model_desc_parse(model, &m, why, sizeof why) != LLMP_OK)
			fail_msg("%s: %s", model, why);
	if (gpu)
		assert_int_equal(gpu_desc_parse(gpu, &g, why, sizeof why), LLMP_OK);
	return plugin_serve_check(&s, nodes, tasks, gpus, model ? &m : NULL, gpu ? &g : NULL, warning, 512,
				  msg, 512);
}

static void layout_checks(void **state)
{
	char w[512], msg[512];
	(void)state;
	assert_int_equal(check("tp=4,pp=2", 2, 2, 4, NULL, NULL, w, msg), 0);
	assert_string_equal(w, "");
	/* dp left out: whatever GPUs remain are replicas. */
	assert_int_equal(check("tp=2,pp=2", 2, 2, 4, NULL, NULL, w, msg), 0);
	assert_int_equal(check("tp=4,pp=2,dp=2", 2, 2, 4, NULL, NULL, w, msg), -1);
	assert_non_null(strstr(msg, "tp*pp*dp = 4*2*2 = 16 is not the step's 8 GPUs"));
	assert_int_equal(check("tp=3", 2, 2, 4, NULL, NULL, w, msg), -1);
	assert_non_null(strstr(msg, "tp*pp = 3*1 = 3 does not divide the step's 8 GPUs"));
	assert_int_equal(check("tp=4,pp=2", 2, 4, 4, NULL, NULL, w, msg), -1);
	assert_non_null(strstr(msg, "one task per node"));
	assert_non_null(strstr(msg, "4 tasks on 2 nodes"));
	assert_int_equal(check("tp=2,cp=2", 2, 2, 4, NULL, NULL, w, msg), -1);
	assert_non_null(strstr(msg, "cp and ep"));
	/* tp over two nodes of 4: allowed, said. */
	assert_int_equal(check("tp=8", 2, 2, 4, NULL, NULL, w, msg), 0);
	assert_non_null(strstr(w, "tp=8 spans nodes of 4 GPUs"));
	/* Unknown GPUs (sbatch): only the model is checked. */
	assert_int_equal(check("tp=3", 0, 0, 0, NULL, NULL, w, msg), 0);
	assert_int_equal(check("tp=3", 0, 0, 0, M, NULL, w, msg), -1);
	assert_non_null(strstr(msg, "tp=3 does not divide the model's 32 attention heads"));
	/* Grouped KV: tp may divide kv-heads, or be a multiple of them (each replicated). */
	assert_int_equal(check("tp=16", 0, 0, 0, M ",kv-heads=8", NULL, w, msg), 0);
	assert_int_equal(check("tp=4", 0, 0, 0, M ",kv-heads=8", NULL, w, msg), 0);
	assert_int_equal(
		check("tp=4", 0, 0, 0, "layers=4,hidden=3072,heads=24,kv-heads=6,seq=2048", NULL, w, msg),
		-1);
	assert_non_null(strstr(msg, "tp=4 and the model's 6 kv-heads"));
	assert_int_equal(check("pp=8", 0, 0, 0, M, NULL, w, msg), -1);
	assert_non_null(strstr(msg, "pp=8 is more stages than the model's 4 layers"));
	/* Memory, worked out in the header. */
	assert_int_equal(check("tp=1", 0, 0, 0, M, "mem=2.3,tflops=100", w, msg), -1);
	assert_non_null(strstr(msg, "2.0 GiB of weights per GPU at tp=1 pp=1"));
	assert_non_null(strstr(msg, "0.12 GiB of KV cache for one 2048-token sequence"));
	assert_int_equal(check("tp=1", 0, 0, 0, M, "mem=2.4,tflops=100", w, msg), 0);
	assert_int_equal(check("tp=2", 0, 0, 0, M, "mem=1.2,tflops=100", w, msg), 0);
	assert_int_equal(check("tp=2", 0, 0, 0, M, "mem=1.1,tflops=100", w, msg), -1);
}

static struct plugin_serve_node node_of(int engine, uint32_t rank)
{
	struct plugin_serve_node n = {
		.engine = engine,
		.tp = 4,
		.pp = 2,
		.nnodes = 2,
		.node_rank = rank,
		.gpus = 4,
		.head = "node1",
		.node_addr = rank ? "10.0.0.2" : "10.0.0.1",
		.port = 20064,
		.temp_dir = "/tmp/llmp-ray-5.0.1.abcd",
		.token_file = "/tmp/llmp-serve-token.5.0.1.x",
	};
	return n;
}

static void vllm_env(void **state)
{
	static struct llmp_env env;
	(void)state;
	struct plugin_serve_node n = node_of(PLUGIN_SERVE_VLLM, 1);
	env.n = 0;
	assert_int_equal(plugin_serve_env(&n, &env), 0);
	assert_string_equal(value_of(&env, "LLMP_VLLM_ARGS"),
			    "--tensor-parallel-size 4 --pipeline-parallel-size 2 --nnodes 2 --node-rank 1 "
			    "--master-addr node1 --master-port 20065 --port 20064 --headless");
	assert_string_equal(value_of(&env, "LLMP_SERVE_ROLE"), "worker");
	assert_string_equal(value_of(&env, "LLMP_SERVE_ENGINE"), "vllm");
	assert_string_equal(value_of(&env, "LLMP_SERVE_PORT"), "20064");
	assert_string_equal(value_of(&env, "LLMP_SERVE_PORTS"), "20064-20095");
	assert_string_equal(value_of(&env, "LLMP_SERVE_HEAD"), "node1");
	assert_string_equal(value_of(&env, "VLLM_HOST_IP"), "10.0.0.2");
	assert_string_equal(value_of(&env, "VLLM_PORT"), "20073");
	assert_string_equal(value_of(&env, "LLMP_SERVE_TOKEN_FILE"), "/tmp/llmp-serve-token.5.0.1.x");
	assert_null(value_of(&env, "LLMP_SGLANG_ARGS"));
	n = node_of(PLUGIN_SERVE_VLLM, 0);
	n.tp = 2; /* 8 GPUs, tp*pp = 4: two replicas */
	env.n = 0;
	assert_int_equal(plugin_serve_env(&n, &env), 0);
	assert_string_equal(
		value_of(&env, "LLMP_VLLM_ARGS"),
		"--tensor-parallel-size 2 --pipeline-parallel-size 2 --data-parallel-size 2 --nnodes 2 "
		"--node-rank 0 --master-addr node1 --master-port 20065 --port 20064");
	assert_string_equal(value_of(&env, "LLMP_SERVE_ROLE"), "head");
}

static void sglang_env(void **state)
{
	static struct llmp_env env;
	(void)state;
	struct plugin_serve_node n = node_of(PLUGIN_SERVE_SGLANG, 1);
	env.n = 0;
	assert_int_equal(plugin_serve_env(&n, &env), 0);
	assert_string_equal(
		value_of(&env, "LLMP_SGLANG_ARGS"),
		"--tp-size 4 --pp-size 2 --dp-size 1 --nnodes 2 --node-rank 1 --dist-init-addr node1:20065 "
		"--port 20064");
}

/* Every Ray port flag: a port of the block, no two the same, and the workers' range inside it. */
static void ray_env(void **state)
{
	static struct llmp_env env;
	static const char *const flags[] = { "--port=",
					     "--node-manager-port=",
					     "--object-manager-port=",
					     "--ray-client-server-port=",
					     "--metrics-export-port=",
					     "--dashboard-agent-listen-port=",
					     "--dashboard-agent-grpc-port=",
					     "--runtime-env-agent-port=",
					     "--min-worker-port=",
					     "--max-worker-port=" };
	(void)state;
	for (uint32_t rank = 0; rank < 2; rank++) {
		struct plugin_serve_node n = node_of(PLUGIN_SERVE_RAY, rank);
		env.n = 0;
		assert_int_equal(plugin_serve_env(&n, &env), 0);
		const char *args = value_of(&env, "LLMP_RAY_START_ARGS");
		assert_non_null(args);
		unsigned used[32] = { 0 }, min = 0, max = 0;
		for (size_t i = rank ? 1 : 0; i < sizeof flags / sizeof flags[0]; i++) {
			char pattern[64];
			snprintf(pattern, sizeof pattern, " %s", flags[i]);
			const char *at = strstr(args, pattern);
			if (!at && i == 0)
				at = strstr(args, flags[i]);
			assert_non_null(at);
			unsigned port = (unsigned)strtoul(strchr(at, '=') + 1, NULL, 10);
			assert_true(port >= 20064 && port <= 20095);
			if (i == 8)
				min = port;
			else if (i == 9)
				max = port;
			else
				assert_int_equal(used[port - 20064]++, 0);
		}
		assert_true(min > 20064 && max == 20095 && max - min + 1 == 16);
		for (unsigned p = min; p <= max; p++)
			assert_int_equal(used[p - 20064], 0);
		/* ray start refuses --include-dashboard (and --port) off the head. */
		if (rank)
			assert_null(strstr(args, "--include-dashboard"));
		else
			assert_non_null(strstr(args, "--include-dashboard=false"));
		assert_non_null(strstr(args, "--temp-dir=/tmp/llmp-ray-5.0.1.abcd"));
		assert_non_null(strstr(args, "--num-gpus=4"));
		assert_non_null(strstr(args, "--block"));
		char res[64];
		snprintf(res, sizeof res, "--resources={\"llmp_node_%u\":1}", rank);
		assert_non_null(strstr(args, res));
		assert_non_null(
			strstr(args, rank ? "--node-ip-address=10.0.0.2" : "--node-ip-address=10.0.0.1"));
		if (rank)
			assert_non_null(strstr(args, "--address=node1:20065"));
		else
			assert_true(strncmp(args, "--head --port=20065 ", 20) == 0);
		assert_string_equal(value_of(&env, "RAY_ADDRESS"), "node1:20065");
		assert_string_equal(value_of(&env, "RAY_AUTH_MODE"), "token");
		assert_string_equal(value_of(&env, "RAY_AUTH_TOKEN_PATH"), "/tmp/llmp-serve-token.5.0.1.x");
	}
}

static void token_text(void **state)
{
	char good[65];
	(void)state;
	memset(good, 'a', 64);
	good[64] = '\0';
	assert_true(plugin_serve_token_valid(good));
	good[3] = 'A';
	assert_false(plugin_serve_token_valid(good));
	good[3] = '\n';
	assert_false(plugin_serve_token_valid(good));
	good[63] = '\0';
	assert_false(plugin_serve_token_valid(good));
	assert_false(plugin_serve_token_valid(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(engines),    cmocka_unit_test(port_block), cmocka_unit_test(layout_checks),
		cmocka_unit_test(vllm_env),   cmocka_unit_test(sglang_env), cmocka_unit_test(ray_env),
		cmocka_unit_test(token_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
