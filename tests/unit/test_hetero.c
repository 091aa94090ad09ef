/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_hetero.c - pipelines on mixed GPU kinds (planner/hetero.h): the GPU
 * each stage gets from a topology's node types, layers split in proportion
 * to speed (worked out by hand: per-layer time is 1 / rate) and held back
 * by memory, each stage estimated on its own GPU, and the Megatron flags
 * or per-stage list that say the split. And the machines both `llmp plan
 * --topology` and srun score a layout on (planner/machines.h): the same
 * answer from the cache as placed anew, for each order of the hosts.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "planner/hetero.h"
#include "planner/machines.h"

/* A small dense model whose output layer costs next to nothing (vocab 8): a stage's time is its layers / rate. */
#define SMALL "layers=12,hidden=1024,ffn=4096,heads=8,seq=1024,vocab=8,gbs=16,mbs=1"

static struct model_desc model_of(const char *text)
{
	char msg[LLMP_MSG_MAX] = "";
	struct model_desc m;
	if (model_desc_parse(text, &m, msg, sizeof msg) != LLMP_OK)
		fail_msg("--model %s: %s", text, msg);
	return m;
}

static struct gpu_desc gpu_of(const char *text)
{
	char msg[LLMP_MSG_MAX] = "";
	struct gpu_desc g;
	if (gpu_desc_parse(text, &g, msg, sizeof msg) != LLMP_OK)
		fail_msg("--gpu %s: %s", text, msg);
	return g;
}

static struct step_layout checked(const struct model_desc *m, uint32_t world, struct step_layout l)
{
	char msg[LLMP_MSG_MAX] = "";
	if (step_layout_check(m, world, &l, msg, sizeof msg) != LLMP_OK)
		fail_msg("layout: %s", msg);
	return l;
}

static struct step_estimate on_stages(const struct model_desc *m, const struct gpu_desc *gpus, uint32_t world,
				      const struct step_layout *l)
{
	char msg[LLMP_MSG_MAX] = "";
	struct step_estimate e;
	if (step_estimate_stages(m, gpus, world, l, NULL, NULL, &e, msg, sizeof msg) != LLMP_OK)
		fail_msg("estimate: %s", msg);
	return e;
}

static void split_follows_speed(void **state)
{
	(void)state;
	struct model_desc m = model_of(SMALL);
	char msg[LLMP_MSG_MAX] = "";
	/* Rates 2:1 on two stages: n0 / 2 = n1 / 1 with n0 + n1 = 12 gives 8 and 4. */
	struct gpu_desc two[2] = { gpu_of("mem=1000,tflops=200,eff=0.5"),
				   gpu_of("mem=1000,tflops=100,eff=0.5") };
	struct step_layout l = checked(&m, 2,
				       (struct step_layout){ .tp = 1, .pp = 2, .cp = 1, .ep = 1, .mbs = 1 });
	unsigned layers[3];
	assert_int_equal(hetero_split(&m, two, &l, layers, msg, sizeof msg), LLMP_OK);
	assert_int_equal(layers[0], 8);
	assert_int_equal(layers[1], 4);
	/* Rates 3:2:1 on three: 6, 4, 2 (each 2 units of time). */
	struct gpu_desc three[3] = { gpu_of("mem=1000,tflops=300,eff=0.5"),
				     gpu_of("mem=1000,tflops=200,eff=0.5"),
				     gpu_of("mem=1000,tflops=100,eff=0.5") };
	l = checked(&m, 3, (struct step_layout){ .tp = 1, .pp = 3, .cp = 1, .ep = 1, .mbs = 1 });
	assert_int_equal(hetero_split(&m, three, &l, layers, msg, sizeof msg), LLMP_OK);
	assert_int_equal(layers[0], 6);
	assert_int_equal(layers[1], 4);
	assert_int_equal(layers[2], 2);
	/* Interleaved (vpp 2): layers go in pairs, 8 and 4 again. */
	l = checked(&m, 2, (struct step_layout){ .tp = 1, .pp = 2, .cp = 1, .ep = 1, .mbs = 1, .vpp = 2 });
	assert_int_equal(hetero_split(&m, two, &l, layers, msg, sizeof msg), LLMP_OK);
	assert_int_equal(layers[0], 8);
	assert_int_equal(layers[1], 4);
	/* 5 layers cannot give 2 stages an even number each. */
	struct model_desc m5 = model_of(
		"layers=5,hidden=1024,ffn=4096,heads=8,seq=1024,vocab=8,gbs=16,mbs=1");
	l = checked(&m5, 2, (struct step_layout){ .tp = 1, .pp = 2, .cp = 1, .ep = 1, .mbs = 1 });
	l.vpp = 2;
	assert_int_equal(hetero_split(&m5, two, &l, layers, msg, sizeof msg), LLMP_ERR_LAYOUT);
	assert_non_null(strstr(msg, "layers=5 cannot give each of pp=2 stages a multiple of vpp=2"));
}

static void split_is_held_back_by_memory(void **state)
{
	(void)state;
	struct model_desc m = model_of(SMALL);
	char msg[LLMP_MSG_MAX] = "";
	struct step_layout l = checked(&m, 2,
				       (struct step_layout){ .tp = 1, .pp = 2, .cp = 1, .ep = 1, .mbs = 1 });
	/* The fast GPU's memory: what stage 0 needs with 5 of the layers, so speed's 8 cannot be. */
	unsigned five[2] = { 5, 7 };
	struct step_layout at5 = l;
	at5.stage_layers = five;
	struct step_stage st[2];
	struct gpu_desc big = gpu_of("mem=1000,tflops=100,eff=0.5");
	struct step_estimate e;
	assert_int_equal(step_estimate(&m, &big, 2, &at5, st, &e, msg, sizeof msg), LLMP_OK);
	char fast[96];
	snprintf(fast, sizeof fast, "mem=%.6f,tflops=200,eff=0.5",
		 st[0].total / (1024.0 * 1024 * 1024) * 1.0001);
	struct gpu_desc gpus[2] = { gpu_of(fast), big };
	unsigned layers[2];
	assert_int_equal(hetero_split(&m, gpus, &l, layers, msg, sizeof msg), LLMP_OK);
	assert_int_equal(layers[0], 5);
	assert_int_equal(layers[1], 7);
	struct step_layout split = l;
	split.stage_layers = layers;
	assert_true(on_stages(&m, gpus, 2, &split).fits);
}

static void each_stage_runs_on_its_own_gpu(void **state)
{
	(void)state;
	struct model_desc m = model_of(SMALL);
	struct gpu_desc fast = gpu_of("mem=1000,tflops=200,eff=0.5"),
			slow = gpu_of("mem=1000,tflops=100,eff=0.5");
	struct step_layout l = checked(&m, 2,
				       (struct step_layout){ .tp = 1, .pp = 2, .cp = 1, .ep = 1, .mbs = 1 });
	/* Even split, the slow GPU last: the slowest stage is the last, as on slow GPUs alone. */
	struct gpu_desc mixed[2] = { fast, slow }, slows[2] = { slow, slow }, fasts[2] = { fast, fast };
	struct step_estimate e = on_stages(&m, mixed, 2, &l), s = on_stages(&m, slows, 2, &l),
			     f = on_stages(&m, fasts, 2, &l);
	assert_true(e.compute_s == s.compute_s);
	/* Twice the rate, half the time; and the same GPUs everywhere are step_estimate's answer. */
	assert_true(f.compute_s > 0.4999 * s.compute_s && f.compute_s < 0.5001 * s.compute_s);
	char msg[LLMP_MSG_MAX];
	struct step_estimate plain;
	assert_int_equal(step_estimate(&m, &slow, 2, &l, NULL, &plain, msg, sizeof msg), LLMP_OK);
	assert_true(plain.step_s == s.step_s && plain.peak_bytes == s.peak_bytes);
	/* A stage over its own GPU's memory does not fit, though the other GPU would hold it. */
	struct step_stage st[2];
	assert_int_equal(step_estimate(&m, &slow, 2, &l, st, &plain, msg, sizeof msg), LLMP_OK);
	char small[96];
	snprintf(small, sizeof small, "mem=%.6f,tflops=200,eff=0.5",
		 st[0].total / (1024.0 * 1024 * 1024) * 0.99);
	struct gpu_desc tight[2] = { gpu_of(small), slow };
	assert_false(on_stages(&m, tight, 2, &l).fits);
	tight[0] = slow, tight[1] = gpu_of(small);
	assert_true(st[1].total <= st[0].total * 0.99 ? on_stages(&m, tight, 2, &l).fits
						      : !on_stages(&m, tight, 2, &l).fits);
}

static void megatron_is_told_the_split(void **state)
{
	(void)state;
	char buf[160];
	assert_true(hetero_megatron_args((unsigned[]){ 10, 10, 10, 10 }, 4, buf, sizeof buf));
	assert_string_equal(buf, "");
	assert_true(hetero_megatron_args((unsigned[]){ 8, 4 }, 2, buf, sizeof buf));
	assert_string_equal(buf,
			    "--decoder-first-pipeline-num-layers 8 --decoder-last-pipeline-num-layers 4");
	assert_true(hetero_megatron_args((unsigned[]){ 9, 11, 11, 9 }, 4, buf, sizeof buf));
	assert_string_equal(buf,
			    "--decoder-first-pipeline-num-layers 9 --decoder-last-pipeline-num-layers 9");
	assert_false(hetero_megatron_args((unsigned[]){ 9, 10, 11, 10 }, 4, buf, sizeof buf));
	assert_string_equal(buf, "9,10,11,10");
}

static void stage_layers_are_checked(void **state)
{
	(void)state;
	struct model_desc m = model_of(SMALL);
	char msg[LLMP_MSG_MAX] = "";
	struct {
		unsigned layers[2], vpp;
		const char *says;
	} cases[] = {
		{ { 6, 5 }, 1, "the 2 stages' layers add up to 11, not layers=12" },
		{ { 12, 0 }, 1, "stage 1 has 0 layers" },
		{ { 7, 5 }, 2, "stage 0 has 7 layers: each stage needs a multiple of vpp=2" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct step_layout l = { .tp = 1, .pp = 2, .cp = 1, .ep = 1, .mbs = 1, .vpp = cases[i].vpp };
		l.stage_layers = cases[i].layers;
		assert_int_equal(step_layout_check(&m, 2, &l, msg, sizeof msg), LLMP_ERR_LAYOUT);
		if (!strstr(msg, cases[i].says))
			fail_msg("case %zu: got \"%s\", want \"%s\"", i, msg, cases[i].says);
	}
}

/* Two hosts of two GPUs each, of two types; type b's "gpu" given or not. */
static void read_two_kinds(const char *b_gpu, struct topo *t)
{
	char text[1024], msg[LLMP_MSG_MAX] = "";
	snprintf(
		text, sizeof text,
		"{\"llmp_topology\": 1, \"node_types\": {"
		"\"a\": {\"numa_nodes\": 1, \"gpu\": \"h100\", \"gpus\": [{\"bus\": \"0000:01:00.0\"}, {\"bus\": "
		"\"0000:02:00.0\"}]},"
		"\"b\": {\"numa_nodes\": 1%s%s%s, \"gpus\": [{\"bus\": \"0000:01:00.0\"}, {\"bus\": \"0000:02:00.0\"}]}},"
		"\"nodes\": [{\"hosts\": \"n1\", \"type\": \"a\"}, {\"hosts\": \"n2\", \"type\": \"b\"}]}",
		b_gpu ? ", \"gpu\": \"" : "", b_gpu ? b_gpu : "", b_gpu ? "\"" : "");
	if (topo_read_text(text, strlen(text), "two.json", t, msg, sizeof msg) != LLMP_OK)
		fail_msg("%s", msg);
}

static llmp_status stage_gpus(const struct topo *t, const char *spec_text, const struct gpu_desc *fallback,
			      struct gpu_desc *gpus, char *msg, size_t len)
{
	llmp_spec spec;
	llmp_plan *plan;
	assert_int_equal(llmp_spec_parse(spec_text, &spec, msg, len), LLMP_OK);
	assert_int_equal(llmp_plan_create(&spec, 4, 2, &plan, msg, len), LLMP_OK);
	char *hosts[2] = { "n1", "n2" };
	uint32_t tasks[2] = { 2, 2 };
	struct plan_placement p;
	assert_int_equal(plan_place(t, plan, hosts, 2, tasks, false, &p, msg, len), LLMP_OK);
	llmp_status st = hetero_stage_gpus(t, &p, plan, fallback, gpus, msg, len);
	plan_placement_free(&p);
	llmp_plan_destroy(plan);
	return st;
}

static void stages_take_their_hosts_gpus(void **state)
{
	(void)state;
	struct topo t;
	char msg[LLMP_MSG_MAX] = "";
	struct gpu_desc gpus[2], h100 = gpu_of("h100"), a100 = gpu_of("a100-40gb");
	read_two_kinds("a100-40gb", &t);
	assert_string_equal(t.types[1].gpu, "a100-40gb");
	/* pp=2 on two hosts: stage 0 on n1 (h100), stage 1 on n2. */
	assert_int_equal(stage_gpus(&t, "tp=2,pp=2", NULL, gpus, msg, sizeof msg), LLMP_OK);
	assert_true(gpus[0].mem_bytes == h100.mem_bytes && gpus[0].bf16_flops == h100.bf16_flops);
	assert_true(gpus[1].mem_bytes == a100.mem_bytes && gpus[1].bf16_flops == a100.bf16_flops);
	assert_true(hetero_mixed(gpus, 2));
	/* One stage over both hosts: the weaker of the two in each respect. */
	assert_int_equal(stage_gpus(&t, "tp=2", NULL, gpus, msg, sizeof msg), LLMP_OK);
	assert_true(gpus[0].mem_bytes == a100.mem_bytes && gpus[0].bf16_flops == a100.bf16_flops);
	assert_true(gpus[0].nvlink_gbps == a100.nvlink_gbps && gpus[0].net_gbps == a100.net_gbps);
	topo_free(&t);

	/* A type that does not say: --gpu stands in, or an error naming it. */
	read_two_kinds(NULL, &t);
	assert_int_equal(stage_gpus(&t, "tp=2,pp=2", NULL, gpus, msg, sizeof msg), LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "node type b (host n2) does not say its \"gpu\""));
	assert_int_equal(stage_gpus(&t, "tp=2,pp=2", &h100, gpus, msg, sizeof msg), LLMP_OK);
	assert_false(hetero_mixed(gpus, 2));
	topo_free(&t);

	/* A "gpu" the step model does not know: the file's line and the type named. */
	const char *bad = "{\"llmp_topology\": 1, \"node_types\": {\"a\": {\"numa_nodes\": 1,\n"
			  " \"gpu\": \"h900\"}}, \"nodes\": [{\"hosts\": \"n1\", \"type\": \"a\"}]}";
	assert_int_equal(topo_read_text(bad, strlen(bad), "bad.json", &t, msg, sizeof msg), LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "bad.json:2: node type a: \"gpu\": --gpu: unknown GPU 'h900'"));
}

static bool same_gpu(const struct gpu_desc *a, const struct gpu_desc *b)
{
	return strcmp(a->name, b->name) == 0 && a->mem_bytes == b->mem_bytes &&
	       a->bf16_flops == b->bf16_flops;
}

/*
 * planner/machines.h: a layout placed on two hosts of two kinds, from the
 * cache (one shared by both orders of the hosts) or placed anew, alike;
 * the stages turn round with the hosts; the weakest GPU of every rank.
 */
static void machines_place_alike_cached_or_not(void **state)
{
	(void)state;
	struct topo t;
	char msg[LLMP_MSG_MAX] = "";
	struct model_desc m = model_of(SMALL);
	struct plan_model tm = step_topo_model(&m, m.mbs);
	struct gpu_desc h100 = gpu_of("h100"), a100 = gpu_of("a100-40gb"), w, g1[2], g2[2];
	char *fwd[2] = { "n1", "n2" }, *back[2] = { "n2", "n1" };
	uint32_t tasks[2] = { 2, 2 };
	double n1[5], n2[5];
	read_two_kinds("a100-40gb", &t);
	struct machines_cache *cache = machines_cache_new();
	assert_non_null(cache);
	struct machines a = { .t = &t,
			      .hosts = fwd,
			      .nhosts = 2,
			      .tasks = tasks,
			      .world = 4,
			      .tasks_per_node = 2,
			      .model = &tm,
			      .cache = cache };
	struct machines b = a, plain = a;
	b.hosts = back, plain.cache = NULL;
	struct chooser_machines on = machines_chooser(&a);
	assert_ptr_equal(on.ctx, &a);
	struct step_layout l = checked(&m, 4,
				       (struct step_layout){ .tp = 2, .pp = 2, .cp = 1, .ep = 1, .mbs = 1 });
	for (unsigned mbs = 1; mbs <= 2; mbs++) {
		l.mbs = mbs;
		for (int again = 0; again < 2; again++) { /* the second time from the cache */
			assert_int_equal(on.place(on.ctx, &l, n1, g1, msg, sizeof msg), LLMP_OK);
			assert_int_equal(machines_place(&plain, &l, n2, g2, msg, sizeof msg), LLMP_OK);
			assert_memory_equal(n1, n2, sizeof n1);
			assert_true(same_gpu(&g1[0], &h100) && same_gpu(&g1[1], &a100));
			assert_true(same_gpu(&g2[0], &h100) && same_gpu(&g2[1], &a100));
			assert_true(n1[0] > 0); /* tp moves bytes */
			/* the other order on the same cache: placed anew, the stages turn round */
			assert_int_equal(machines_place(&b, &l, n2, g2, msg, sizeof msg), LLMP_OK);
			assert_true(same_gpu(&g2[0], &a100) && same_gpu(&g2[1], &h100));
		}
	}
	assert_int_equal(machines_weakest(&a, &w, msg, sizeof msg), LLMP_OK);
	assert_true(same_gpu(&w, &a100));
	machines_cache_free(cache);
	topo_free(&t);

	/* A type that does not say its "gpu": an error naming it, or the fallback stands in. */
	read_two_kinds(NULL, &t);
	a.t = &t, a.cache = NULL;
	assert_int_equal(machines_weakest(&a, &w, msg, sizeof msg), LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "node type b (host n2) does not say its \"gpu\""));
	assert_int_equal(machines_place(&a, &l, n1, g1, msg, sizeof msg), LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "node type b (host n2)"));
	a.fallback = &a100;
	assert_int_equal(machines_weakest(&a, &w, msg, sizeof msg), LLMP_OK);
	assert_true(same_gpu(&w, &a100));
	topo_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(split_follows_speed),
		cmocka_unit_test(split_is_held_back_by_memory),
		cmocka_unit_test(each_stage_runs_on_its_own_gpu),
		cmocka_unit_test(megatron_is_told_the_split),
		cmocka_unit_test(stage_layers_are_checked),
		cmocka_unit_test(stages_take_their_hosts_gpus),
		cmocka_unit_test(machines_place_alike_cached_or_not),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
