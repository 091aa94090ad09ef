/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_plugin_model.c - --llm-model at submission (plugin/model_layout.h):
 * the memory guard of a written layout, on the step's task count (srun) and
 * at any job size (sbatch), --llm-parallel=auto's choice within the site's
 * limits, the Megatron flags handed to the step, and the site's gpu=.
 *
 * The model below, "M", is worked out by hand: 4 layers of hidden h = 4096,
 * ffn 16384 (GeLU), vocabulary 32000 untied: 4 h^2 (attention) + 2 h ffn
 * (MLP) = 201M per layer, 805M for four, and 2 x 32000 h = 262M for the
 * embedding and the output layer, 1.07e9 parameters in all. Without
 * the distributed optimizer a rank keeps 2 + 4 + 12 = 18 bytes of each:
 * 19.3 GB = 18.0 GiB before any activation, more than a 16 GiB GPU holds,
 * whatever the job size; the largest term is the optimizer's 12 bytes. With
 * it, the optimizer's 12 bytes are shared by dp ranks: 6 + 12/dp bytes,
 * 6.0 GiB + 12/dp x 1.0 GiB, which fits 16 GiB only once dp is large.
 *
 * On a topology file (srun's machines, model_machines.h), the node types'
 * "gpu" win over LLMP_GPU, and on two kinds the pipeline's layers are split
 * by speed (worked out by hand below, where it is tested).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include <llmp/llmp_spec.h>
#include "plugin/model_layout.h"
#include "plugin/resolve.h"
#include "plugin/site.h"
#include "planner/mem_guard.h"

#define M "layers=4,hidden=4096,heads=32,seq=2048,vocab=32000,ffn=16384"
#define SMALL_GPU "mem=16,tflops=100"

static llmp_spec layout(const char *text)
{
	llmp_spec s;
	assert_int_equal(llmp_spec_parse(text, &s, NULL, 0), LLMP_OK);
	return s;
}

static int decide(const struct plugin_site *site, const char *model, const char *gpu, const llmp_spec *spec,
		  uint32_t world, struct plugin_model_answer *a, char *msg, size_t len)
{
	struct plugin_model_request rq = {
		.model = model,
		.model_source = "--llm-model",
		.gpu = gpu,
		.gpu_source = "LLMP_GPU",
		.choose_layout = spec == NULL,
		.spec = spec,
		.world = world,
	};
	msg[0] = '\0';
	return plugin_model_decide(site, &rq, a, msg, len);
}

static void no_site(struct plugin_site *site)
{
	memset(site, 0, sizeof *site);
	llmp_spec_init(&site->defaults);
}

/* 18 bytes a parameter cannot fit 16 GiB: refused by srun and by sbatch, naming the optimizer. */
static void layout_that_cannot_fit_is_refused(void **state)
{
	struct plugin_site site;
	struct plugin_model_answer a;
	char msg[1024];
	llmp_spec tp1 = layout("tp=1");
	(void)state;
	no_site(&site);

	assert_int_equal(decide(&site, M ",distopt=0", SMALL_GPU, &tp1, 8, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "does not fit"));
	assert_non_null(strstr(msg, "largest term: optimizer"));
	assert_non_null(strstr(msg, "16.0 GiB"));
	assert_false(a.decided);

	/* sbatch: no task count, and no data-parallel size helps without the distributed optimizer */
	assert_int_equal(decide(&site, M ",distopt=0", SMALL_GPU, &tp1, 0, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "at any job size"));
	assert_non_null(strstr(msg, "largest term: optimizer"));
}

/*
 * M without the distributed optimizer on tp=1 x 8 ranks (one stage), under
 * site, for the guard's tests; recompute given, so the estimate is the same
 * on every GPU (left to llmp, it would recompute more where it does not fit).
 */
static int decide_guarded(const struct plugin_site *site, const char *gpu, uint32_t world, bool override,
			  struct plugin_model_answer *a, char *msg, size_t len)
{
	llmp_spec tp1 = layout("tp=1");
	struct plugin_model_request rq = {
		.model = M ",distopt=0,recompute=selective",
		.model_source = "--llm-model",
		.gpu = gpu,
		.gpu_source = "LLMP_GPU",
		.spec = &tp1,
		.world = world,
		.guard_override = override,
	};
	msg[0] = '\0';
	return plugin_model_decide(site, &rq, a, msg, len);
}

/* A GPU of P / ratio GiB for a peak of P MiB. */
static void gpu_below(char *gpu, size_t len, unsigned long long peak_mib, double ratio)
{
	snprintf(gpu, len, "mem=%.4f,tflops=100", (double)peak_mib / 1024 / ratio);
}

/*
 * The guard knows its error: with a band of 0.15, a layout whose estimate P
 * exceeds a GPU of P / 1.10 is doubtful (P / 1.15 fits): run with a warning
 * naming both, and the tasks check the favourable end's peak, P / 1.15
 * rounded up; on a GPU of P / 1.20 it cannot fit even there: refused, the
 * largest term (the optimizer's 12 of 18 bytes) and what lowers it named,
 * unless the user passes --llm-guard=warn (and the site allows it) or the
 * site says guard=warn or off.
 */
static void guard_refuses_only_beyond_its_band(void **state)
{
	struct plugin_site site;
	struct plugin_model_answer a;
	char msg[1024], gpu[64], want[64];
	unsigned long long peak;
	(void)state;
	no_site(&site);
	site.guard_band = 0.15;

	/* P, the estimate's peak in MiB (rounded up), on a GPU that holds it */
	assert_int_equal(decide_guarded(&site, "mem=64,tflops=100", 8, false, &a, msg, sizeof msg), 0);
	assert_int_equal(sscanf(a.peaks, "custom:%llu", &peak), 1);
	assert_true(peak > 18 * 1024); /* 18 bytes of 1.07e9 parameters and more */
	assert_string_equal(a.guard, "");
	assert_string_equal(a.warning, "");

	gpu_below(gpu, sizeof gpu, peak, 1.10);
	assert_int_equal(decide_guarded(&site, gpu, 8, false, &a, msg, sizeof msg), 0);
	assert_true(a.decided);
	assert_string_equal(a.guard, "doubtful");
	assert_non_null(strstr(a.warning, "warning: custom may not fit: tp=1,"));
	assert_non_null(
		strstr(a.warning, "at the favourable end of the model's memory error (estimate / 1.150)"));
	assert_non_null(strstr(a.warning, "lower the optimizer states: the distributed optimizer (zero=1"));
	unsigned long long favourable = (unsigned long long)((double)peak / 1.15);
	favourable += (double)favourable < (double)peak / 1.15;
	snprintf(want, sizeof want, "custom:%llu", favourable);
	assert_string_equal(a.peaks, want);
	/* sbatch leaves it to srun */
	assert_int_equal(decide_guarded(&site, gpu, 0, false, &a, msg, sizeof msg), 0);
	assert_false(a.decided);

	gpu_below(gpu, sizeof gpu, peak, 1.20);
	assert_int_equal(decide_guarded(&site, gpu, 8, false, &a, msg, sizeof msg), -1);
	assert_false(a.decided);
	assert_non_null(strstr(msg, "custom does not fit: tp=1,"));
	assert_non_null(strstr(msg, "even with "));
	assert_non_null(strstr(msg, "lower the optimizer states: the distributed optimizer (zero=1"));
	assert_non_null(strstr(msg, "--llm-guard=warn runs it anyway"));
	assert_int_equal(decide_guarded(&site, gpu, 0, false, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "at any job size"));
	assert_non_null(strstr(msg, "favourable end"));

	/* the user's override: run, said, and no peaks for the tasks to refuse */
	assert_int_equal(decide_guarded(&site, gpu, 8, true, &a, msg, sizeof msg), 0);
	assert_true(a.decided);
	assert_string_equal(a.guard, "overridden");
	assert_non_null(
		strstr(a.warning, "warning: --llm-guard=warn overrides the memory guard: run although"));
	assert_string_equal(a.peaks, "");
	assert_int_equal(decide_guarded(&site, gpu, 0, true, &a, msg, sizeof msg), 0);

	/* a site that forbids it: refused, and the refusal does not offer it */
	site.guard_no_override = true;
	assert_int_equal(decide_guarded(&site, gpu, 8, true, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "--llm-guard=warn: this site does not let the memory guard be overridden "
				    "(guard_override=no in plugstack.conf)"));
	assert_int_equal(decide_guarded(&site, gpu, 8, false, &a, msg, sizeof msg), -1);
	assert_null(strstr(msg, "--llm-guard=warn"));
	site.guard_no_override = false;

	/* the site's guard=warn and guard=off */
	site.guard = MEM_GUARD_WARN;
	assert_int_equal(decide_guarded(&site, gpu, 8, false, &a, msg, sizeof msg), 0);
	assert_string_equal(a.guard, "warned");
	assert_non_null(
		strstr(a.warning, "warning: the site's guard=warn: run although custom does not fit"));
	assert_int_equal(decide_guarded(&site, gpu, 0, false, &a, msg, sizeof msg), 0);
	site.guard = MEM_GUARD_OFF;
	assert_int_equal(decide_guarded(&site, gpu, 8, false, &a, msg, sizeof msg), 0);
	assert_string_equal(a.guard, "off");
	assert_string_equal(a.warning, "");
	assert_string_equal(a.peaks, "");

	/* without guard_band=, the band measured for Megatron on an unknown GPU (15%): P / 1.10 doubtful */
	site.guard = MEM_GUARD_REFUSE;
	site.guard_band = -1;
	gpu_below(gpu, sizeof gpu, peak, 1.10);
	assert_int_equal(decide_guarded(&site, gpu, 8, false, &a, msg, sizeof msg), 0);
	assert_string_equal(a.guard, "doubtful");
	gpu_below(gpu, sizeof gpu, peak, 1.20);
	assert_int_equal(decide_guarded(&site, gpu, 8, false, &a, msg, sizeof msg), -1);
}

/*
 * Recompute left to llmp and nothing fits: the guard judges full recompute,
 * the least memory, and hands its flags on. On a GPU of P / 1.10, P being
 * M's peak with full recompute (taken from a decision that states it), the
 * layout is doubtful at full recompute and said so.
 */
static void guard_judges_the_least_memory_when_nothing_fits(void **state)
{
	struct plugin_site site;
	struct plugin_model_answer a;
	char msg[1024], gpu[64];
	unsigned long long full;
	llmp_spec tp1 = layout("tp=1");
	(void)state;
	no_site(&site);
	site.guard_band = 0.15;
	assert_int_equal(decide(&site, M ",distopt=0,recompute=full", "mem=64,tflops=100", &tp1, 8, &a, msg,
				sizeof msg),
			 0);
	assert_int_equal(sscanf(a.peaks, "custom:%llu", &full), 1);
	gpu_below(gpu, sizeof gpu, full, 1.10);
	assert_int_equal(decide(&site, M ",distopt=0", gpu, &tp1, 8, &a, msg, sizeof msg), 0);
	assert_string_equal(a.guard, "doubtful");
	assert_non_null(strstr(a.note, "; estimated with full recompute"));
	assert_non_null(strstr(a.megatron, "--recompute-granularity full"));
}

/* With the distributed optimizer, 2 ranks hold 6 + 6 bytes a parameter (too much), 1024 about 6. */
static void sbatch_refuses_only_what_no_size_fits(void **state)
{
	struct plugin_site site;
	struct plugin_model_answer a;
	char msg[1024];
	llmp_spec tp1 = layout("tp=1");
	(void)state;
	no_site(&site);

	assert_int_equal(decide(&site, M ",distopt=1,gbs=1024", SMALL_GPU, &tp1, 0, &a, msg, sizeof msg), 0);
	assert_false(a.decided); /* srun decides on its size */
	assert_int_equal(decide(&site, M ",distopt=1,gbs=1024", SMALL_GPU, &tp1, 2, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "dp=2"));
	assert_int_equal(decide(&site, M ",distopt=1,gbs=1024", SMALL_GPU, &tp1, 1024, &a, msg, sizeof msg),
			 0);
	assert_true(a.decided);
	assert_string_equal(a.megatron,
			    "--micro-batch-size 1 --global-batch-size 1024 --use-distributed-optimizer "
			    "--overlap-grad-reduce --overlap-param-gather --recompute-granularity selective");
}

/* The 30-layer model of the test below, with more keys after it, decided on spec. */
static int decide_30(const struct plugin_site *site, const char *keys, const llmp_spec *spec,
		     struct plugin_model_answer *a, char *msg, size_t len)
{
	char model[256];
	snprintf(model, sizeof model,
		 "layers=30,hidden=4096,heads=32,seq=2048,vocab=32000,ffn=16384,gbs=64,mbs=2,%s", keys);
	return decide(site, model, "h100", spec, 16, a, msg, len);
}

/*
 * The flags follow the model: sequence parallelism with tp, full
 * recompute when asked, and Megatron's uneven first and last stages for 30
 * layers on pp=4: 8 on each middle stage, (30 - 16) / 2 = 7 on the ends.
 */
static void megatron_flags_state_what_was_assumed(void **state)
{
	struct plugin_site site;
	struct plugin_model_answer a;
	char msg[1024];
	llmp_spec spec = layout("tp=2,pp=4");
	(void)state;
	no_site(&site);

	assert_int_equal(decide_30(&site, "recompute=full", &spec, &a, msg, sizeof msg), 0);
	assert_string_equal(a.megatron,
			    "--micro-batch-size 2 --global-batch-size 64 --sequence-parallel "
			    "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather "
			    "--recompute-granularity full --recompute-method uniform "
			    "--recompute-num-layers 1 --decoder-first-pipeline-num-layers 7 "
			    "--decoder-last-pipeline-num-layers 7");
	assert_true(plugin_model_args_valid(a.megatron));

	/* The estimate hides dp behind the backward only as Megatron-LM is told to: without the
	 * distributed optimizer there is no gather to overlap; overlap-grad=0 (Megatron-LM before
	 * 2023, or a run without the flags) says neither and the estimate exposes dp. */
	assert_int_equal(decide_30(&site, "recompute=full,distopt=0", &spec, &a, msg, sizeof msg), 0);
	assert_non_null(
		strstr(a.megatron, "--sequence-parallel --overlap-grad-reduce --recompute-granularity"));
	assert_int_equal(decide_30(&site, "recompute=full,overlap-param=0", &spec, &a, msg, sizeof msg), 0);
	assert_non_null(strstr(a.megatron,
			       "--use-distributed-optimizer --overlap-grad-reduce --recompute-granularity"));
	assert_int_equal(decide_30(&site, "recompute=full,overlap-grad=0", &spec, &a, msg, sizeof msg), 0);
	assert_null(strstr(a.megatron, "overlap"));
	assert_non_null(strstr(a.note, "about"));

	/* Megatron-DeepSpeed spells ZeRO-1 and full recompute its own way, and splits the
	 * stages itself: none of Megatron-LM's flags it would refuse. */
	assert_int_equal(decide_30(&site, "recompute=full,engine=deepspeed", &spec, &a, msg, sizeof msg), 0);
	assert_string_equal(
		a.megatron,
		"--micro-batch-size 2 --global-batch-size 64 --zero-stage 1 --checkpoint-activations");
	assert_true(plugin_model_args_valid(a.megatron));

	/* zero=2 and 3 are Megatron-FSDP's optim_grads and optim_grads_params; fp32 gradients
	 * (grad=4, the default) are said, as Megatron-FSDP's own default is the parameters' bf16.
	 * Its mesh is dp x cp x tp: with pp > 1 it would not start, so the step is refused. */
	assert_int_equal(decide_30(&site, "recompute=selective,zero=3", &spec, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "pp=4 with zero=3: Megatron-FSDP builds its mesh from dp, cp and tp"));
	llmp_spec flat = layout("tp=2");
	assert_int_equal(decide_30(&site, "recompute=selective,zero=3", &flat, &a, msg, sizeof msg), 0);
	assert_non_null(strstr(a.megatron,
			       "--use-distributed-optimizer --use-megatron-fsdp "
			       "--data-parallel-sharding-strategy optim_grads_params "
			       "--ckpt-format fsdp_dtensor --megatron-fsdp-main-grads-dtype fp32"));
	assert_true(plugin_model_args_valid(a.megatron));
	assert_int_equal(decide_30(&site, "recompute=selective,zero=2,grad=2", &flat, &a, msg, sizeof msg),
			 0);
	assert_non_null(strstr(a.megatron, "--data-parallel-sharding-strategy optim_grads "));
	assert_null(strstr(a.megatron, "main-grads-dtype"));

	/* DeepSpeed's pipeline engine refuses ZeRO-2 and 3 with pp > 1; at pp 1 the stage is said. */
	assert_int_equal(
		decide_30(&site, "recompute=full,engine=deepspeed,zero=2", &spec, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3"));
	assert_int_equal(
		decide_30(&site, "recompute=full,engine=deepspeed,zero=3", &flat, &a, msg, sizeof msg), 0);
	assert_string_equal(
		a.megatron,
		"--micro-batch-size 2 --global-batch-size 64 --zero-stage 3 --checkpoint-activations");

	/* A PyTorch-native stack pipelines under FSDP, and takes no Megatron flags: its
	 * script reads the layout; the uneven stages still reach the tasks' layout. */
	assert_int_equal(decide_30(&site, "recompute=full,engine=torch,zero=2", &spec, &a, msg, sizeof msg),
			 0);
	assert_string_equal(a.megatron, "");
}

/*
 * Megatron's block method: recompute-layers=N recomputes the first N layers of
 * each chunk and keeps the others' activations. Left to llmp (no recompute=),
 * a 20 GiB GPU holds the 30-layer model on tp=2,pp=4 with neither selective
 * recompute nor one layer of a chunk, but with two (llmp plan: 21.5, 20.7 and
 * 19.5 GiB); the guard takes the fewest that fit.
 */
static void block_recompute_is_said_and_chosen(void **state)
{
	struct plugin_site site;
	struct plugin_model_answer a;
	char msg[1024];
	llmp_spec spec = layout("tp=2,pp=4");
	(void)state;
	no_site(&site);

	assert_int_equal(decide_30(&site, "recompute=full,recompute-layers=3", &spec, &a, msg, sizeof msg),
			 0);
	assert_non_null(strstr(a.megatron, "--recompute-granularity full --recompute-method block "
					   "--recompute-num-layers 3 --decoder-first-pipeline-num-layers 7"));
	assert_true(plugin_model_args_valid(a.megatron));
	assert_int_equal(decide_30(&site, "recompute=full,recompute-layers=3,engine=deepspeed", &spec, &a,
				   msg, sizeof msg),
			 -1);
	assert_non_null(strstr(msg, "recompute-layers=3: Megatron-DeepSpeed checkpoints every layer"));
	assert_int_equal(
		decide_30(&site, "recompute=selective,recompute-layers=3", &spec, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "it needs recompute=full"));

	const char *model = "layers=30,hidden=4096,heads=32,seq=2048,vocab=32000,ffn=16384,gbs=64,mbs=2";
	assert_int_equal(decide(&site, model, "mem=20,tflops=989", &spec, 16, &a, msg, sizeof msg), 0);
	assert_true(a.decided);
	assert_non_null(strstr(a.megatron, "--recompute-method block --recompute-num-layers 2 "));
	assert_non_null(strstr(a.note, "it fits only with full recompute of 2 layers of each chunk"));
	/* 14.5 GiB: seven of a middle stage's eight layers do not fit (14.9 GiB), all of them do (14.1) */
	assert_int_equal(decide(&site, model, "mem=14.5,tflops=989", &spec, 16, &a, msg, sizeof msg), 0);
	assert_non_null(strstr(a.megatron, "--recompute-method uniform --recompute-num-layers 1 "));
	assert_non_null(strstr(a.note, "it fits only with full recompute"));
	assert_null(strstr(a.note, "layers of each chunk"));
}

/*
 * An MoE model's experts' activation recomputed (Megatron-Core's --recompute-modules
 * moe_act, which needs grouped GEMMs): left to llmp, a 14 GiB GPU holds this model on
 * tp=1,pp=2,ep=4 with it but not with selective recompute alone (llmp plan: 13.7 and
 * 14.8 GiB), and before full recompute is tried; said by the model, it is handed on.
 */
static void moe_act_recompute_is_said_and_chosen(void **state)
{
	struct plugin_site site;
	struct plugin_model_answer a;
	char msg[1024];
	llmp_spec spec = layout("tp=1,pp=2,ep=4");
	const char *moe = "layers=8,hidden=2048,heads=16,seq=4096,vocab=32000,experts=8,topk=2,moe-ffn=4096,"
			  "mlp=swiglu,gbs=64,mbs=2";
	char model[256];
	(void)state;
	no_site(&site);

	assert_int_equal(decide(&site, moe, "mem=14,tflops=989", &spec, 8, &a, msg, sizeof msg), 0);
	assert_non_null(strstr(a.megatron, "--recompute-granularity selective --recompute-modules moe_act "
					   "--moe-grouped-gemm"));
	assert_true(plugin_model_args_valid(a.megatron));
	assert_non_null(strstr(a.note, "it fits only with the experts' activation recomputed"));
	/* 13 GiB: neither, nor one layer of a chunk in full (14.1 GiB): full recompute */
	assert_int_equal(decide(&site, moe, "mem=13,tflops=989", &spec, 8, &a, msg, sizeof msg), 0);
	assert_null(strstr(a.megatron, "moe_act"));
	assert_non_null(strstr(a.megatron, "--recompute-granularity full"));

	/* Said by the model; without flash attention Megatron's default module, core_attn, is kept */
	snprintf(model, sizeof model, "%s,recompute=selective,recompute-moe-act=1,flash=0", moe);
	assert_int_equal(decide(&site, model, "h100", &spec, 8, &a, msg, sizeof msg), 0);
	assert_non_null(strstr(a.megatron, "--recompute-modules core_attn moe_act --moe-grouped-gemm"));
	snprintf(model, sizeof model, "%s,recompute=selective,recompute-moe-act=1,engine=deepspeed", moe);
	assert_int_equal(decide(&site, model, "h100", &spec, 8, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "recompute-moe-act=1 recomputes the routed experts' activation"));
}

/* A layout Megatron refuses for the model is refused with Megatron's rule. */
static void megatron_rule_is_named(void **state)
{
	struct plugin_site site;
	struct plugin_model_answer a;
	char msg[1024];
	llmp_spec tp3 = layout("tp=3");
	(void)state;
	no_site(&site);
	assert_int_equal(decide(&site, M, "h100", &tp3, 3, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "tp=3 does not divide heads=32"));
}

/* Without a GPU a written layout is let through, with a warning; auto is refused. */
static void gpu_is_needed_by_auto_only(void **state)
{
	struct plugin_site site;
	struct plugin_model_answer a;
	char msg[1024];
	llmp_spec tp1 = layout("tp=1");
	(void)state;
	no_site(&site);

	assert_int_equal(decide(&site, M ",distopt=0", NULL, &tp1, 8, &a, msg, sizeof msg), 0);
	assert_false(a.decided);
	assert_non_null(strstr(a.note, "warning"));
	assert_int_equal(decide(&site, M ",gbs=64", NULL, NULL, 8, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "LLMP_GPU"));
	assert_int_equal(decide(&site, NULL, "h100", NULL, 8, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "--llm-model"));
	assert_int_equal(decide(&site, M, "h100", NULL, 8, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "gbs="));
	assert_int_equal(decide(&site, "layers=x", "h100", NULL, 8, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "--llm-model: "));
	assert_int_equal(decide(&site, M ",gbs=64", "h100x", NULL, 8, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "LLMP_GPU: "));
	/* sbatch with auto: each srun chooses */
	assert_int_equal(decide(&site, M ",gbs=64", "h100", NULL, 0, &a, msg, sizeof msg), 0);
	assert_false(a.decided);
}

/*
 * A 2-layer model of 256 wide on 4 H100s: everything fits, and any model
 * parallelism only adds traffic or a bubble to GEMMs already too small, so
 * the choice is all data parallel.
 */
static void auto_picks_data_parallel_for_a_small_model(void **state)
{
	struct plugin_site site;
	struct plugin_model_answer a;
	char msg[1024], text[LLMP_SPEC_MAX_LEN + 1];
	(void)state;
	no_site(&site);

	assert_int_equal(decide(&site, "layers=2,hidden=256,heads=4,seq=256,vocab=1000,gbs=64", "h100", NULL,
				4, &a, msg, sizeof msg),
			 0);
	assert_true(a.decided);
	assert_int_equal(a.layout.size[LLMP_DIM_TP], 1);
	assert_int_equal(a.layout.size[LLMP_DIM_PP], 1);
	assert_int_equal(a.layout.size[LLMP_DIM_CP], 1);
	assert_int_equal(a.layout.size[LLMP_DIM_DP], 4);
	llmp_spec_format(&a.layout, text, sizeof text);
	llmp_spec back;
	assert_int_equal(llmp_spec_parse(text, &back, NULL, 0), LLMP_OK);
	assert_true(llmp_spec_equal(&back, &a.layout));
	assert_non_null(strstr(a.note, "--llm-parallel=auto chose tp=1,pp=1,cp=1"));
}

/*
 * zero=auto: the chooser's sharding reaches the flags and the note. Two 3.2 B-parameter
 * layers on 64 GPUs without NVLink (tp 1) in 22 GiB: the step model puts the least memory
 * of a zero=1 layout at 28.6 GiB, of zero=2 at 25.4 and of zero=3 at 19.8
 * (test_step_model's auto_chooses_the_sharding finds the same order), so only
 * Megatron-FSDP's optim_grads_params fits. A written layout cannot leave it to llmp.
 */
static void auto_chooses_the_sharding_and_says_it(void **state)
{
	struct plugin_site site;
	struct plugin_model_answer a;
	char msg[1024];
	const char *model =
		"layers=2,hidden=16384,heads=128,seq=1024,vocab=32000,gbs=64,recompute=full,zero=auto";
	(void)state;
	no_site(&site);
	assert_int_equal(decide(&site, model, "h100,domain=1,mem=22", NULL, 64, &a, msg, sizeof msg), 0);
	assert_true(a.decided);
	assert_int_equal(a.layout.size[LLMP_DIM_PP], 1);
	assert_non_null(strstr(a.megatron,
			       "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params"));
	assert_non_null(strstr(a.note, ",zero=3 for"));
	assert_true(a.peaks[0]); /* the tasks' check gets the chosen stages' peaks */
	/* One such layer on 16 GPUs in 28 GiB: zero=1 needs 33.9 GiB, zero=2 and 3 fit, and
	 * zero=2, with less traffic, is chosen: optim_grads, not optim_grads_params. */
	const char *one =
		"layers=1,hidden=16384,heads=128,seq=1024,vocab=32000,gbs=64,recompute=full,zero=auto";
	assert_int_equal(decide(&site, one, "h100,domain=1,mem=28", NULL, 16, &a, msg, sizeof msg), 0);
	assert_non_null(strstr(a.megatron, "--data-parallel-sharding-strategy optim_grads --ckpt-format"));
	assert_non_null(strstr(a.note, ",zero=2 for"));
	llmp_spec spec = layout("tp=1");
	assert_int_equal(decide(&site, model, "h100,domain=1,mem=22", &spec, 64, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "--llm-model: zero=auto: llmp chooses the sharding with the layout"));
	assert_int_equal(decide(&site, model, "h100,domain=1,mem=22", &spec, 0, &a, msg, sizeof msg), -1);
}

/*
 * 8 layers, 32 heads, 16 GiB, 8 GPUs without the distributed optimizer:
 * 18 bytes x 2.0e9 parameters needs the model cut in 4 or more, so the
 * unconstrained choice has tp x pp >= 4; with max_tp=1 it is pp alone.
 */
static void auto_stays_within_the_site_limits(void **state)
{
	struct plugin_site site;
	struct plugin_model_answer a;
	char msg[1024];
	const char *model = "layers=8,hidden=4096,heads=32,seq=2048,vocab=32000,ffn=16384,distopt=0,gbs=64";
	(void)state;
	no_site(&site);

	assert_int_equal(decide(&site, model, SMALL_GPU, NULL, 8, &a, msg, sizeof msg), 0);
	assert_true(a.layout.size[LLMP_DIM_TP] * a.layout.size[LLMP_DIM_PP] >= 4);
	site.max[LLMP_KEY_TP] = 1;
	assert_int_equal(decide(&site, model, SMALL_GPU, NULL, 8, &a, msg, sizeof msg), 0);
	assert_int_equal(a.layout.size[LLMP_DIM_TP], 1);
	assert_true(a.layout.size[LLMP_DIM_PP] >= 4);
	assert_int_equal(a.layout.size[LLMP_DIM_PP] * a.layout.size[LLMP_DIM_CP] * a.layout.size[LLMP_DIM_DP],
			 8);
	/* and nothing fits 1 GiB: refused, naming the smallest */
	assert_int_equal(decide(&site, model, "mem=1,tflops=100", NULL, 8, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "does not fit 8 GPUs"));
	assert_non_null(strstr(msg, "the smallest"));
}

static void model_args_are_flags_only(void **state)
{
	char long_text[PLUGIN_MODEL_ARGS_MAX + 1];
	(void)state;
	assert_true(plugin_model_args_valid(""));
	assert_true(plugin_model_args_valid("--micro-batch-size 2 --recompute-granularity full"));
	assert_false(plugin_model_args_valid("--micro-batch-size 2; rm -rf ~"));
	assert_false(plugin_model_args_valid("$(id)"));
	assert_false(plugin_model_args_valid("--Foo"));
	memset(long_text, 'a', sizeof long_text - 1);
	long_text[sizeof long_text - 1] = '\0';
	assert_false(plugin_model_args_valid(long_text));
}

static void auto_is_asked_by_the_option_first(void **state)
{
	(void)state;
	assert_true(plugin_choice_asked(NULL, "auto"));
	assert_true(plugin_choice_asked("tp=2", "auto"));
	assert_true(plugin_choice_asked("auto", NULL));
	assert_false(plugin_choice_asked("auto", "tp=2"));
	assert_false(plugin_choice_asked(NULL, "tp=2"));
	assert_false(plugin_choice_asked(NULL, NULL));
	assert_false(plugin_choice_asked("automatic", NULL));
}

static void site_gpu_is_checked(void **state)
{
	struct plugin_site site;
	char msg[512];
	char *good[] = { "gpu=h100" }, *keys[] = { "gpu=mem=80,tflops=989" }, *bad[] = { "gpu=h1000" };
	(void)state;
	no_site(&site);
	assert_int_equal(plugin_site_parse(&site, 1, good, msg, sizeof msg), 0);
	assert_string_equal(site.gpu, "h100");
	assert_int_equal(plugin_site_parse(&site, 1, keys, msg, sizeof msg), 0);
	assert_string_equal(site.gpu, "mem=80,tflops=989");
	assert_int_equal(plugin_site_parse(&site, 1, bad, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "plugstack argument 'gpu=h1000'"));
}

/* A topology of two 4-GPU hosts, n1 of type "fast" and n2 of type "slow", each saying its "gpu". */
static void write_topology(const char *path, const char *fast_gpu, const char *slow_gpu)
{
	static const char gpus[] = "\"gpus\": [{\"bus\": \"0000:01:00.0\", \"numa\": 0}, "
				   "{\"bus\": \"0000:02:00.0\", \"numa\": 0}, {\"bus\": \"0000:03:00.0\", "
				   "\"numa\": 0}, {\"bus\": \"0000:04:00.0\", \"numa\": 0}], \"hcas\": []";
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"{\"llmp_topology\": 1, \"source\": \"test_plugin_model.c\", \"node_types\": {"
		"\"fast\": {\"numa_nodes\": 1, \"gpu\": \"%s\", %s}, "
		"\"slow\": {\"numa_nodes\": 1, \"gpu\": \"%s\", %s}}, "
		"\"nodes\": [{\"hosts\": \"n1\", \"type\": \"fast\"}, {\"hosts\": \"n2\", \"type\": \"slow\"}]}\n",
		fast_gpu, gpus, slow_gpu, gpus);
	assert_int_equal(fclose(f), 0);
}

static int decide_on(const char *file, const char *nodelist, const char *per_node, uint32_t nnodes,
		     const char *gpu, const llmp_spec *spec, uint32_t world, struct plugin_model_answer *a,
		     char *msg, size_t len)
{
	struct plugin_site site;
	no_site(&site);
	struct plugin_machines_request machines = {
		.file = file, .nodelist = nodelist, .tasks_per_node = per_node, .nnodes = nnodes
	};
	struct plugin_model_request rq = {
		.model = "layers=8,hidden=4096,heads=32,seq=2048,vocab=32000,ffn=16384,gbs=64",
		.model_source = "--llm-model",
		.gpu = gpu,
		.gpu_source = "LLMP_GPU",
		.choose_layout = spec == NULL,
		.spec = spec,
		.world = world,
		.machines = &machines,
	};
	msg[0] = '\0';
	return plugin_model_decide(&site, &rq, a, msg, len);
}

/*
 * The node types' GPU comes first: a type of 1 GiB refuses the model
 * (1.9e9 parameters, far more than 1 GiB) though LLMP_GPU says an H100,
 * and with no LLMP_GPU at all the types' GPUs are enough to choose.
 */
static void topology_gpu_comes_first(void **state)
{
	char dir[] = "/tmp/test_plugin_model.XXXXXX", file[64], msg[1024];
	struct plugin_model_answer a;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof file, "%s/t.json", dir);
	write_topology(file, "mem=1,tflops=100", "mem=1,tflops=100");
	llmp_spec tp1 = layout("tp=1");
	assert_int_equal(decide_on(file, "n[1-2]", "4(x2)", 2, "h100", &tp1, 8, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "does not fit"));
	assert_non_null(strstr(msg, "1.0 GiB"));
	write_topology(file, "mem=80,tflops=400", "mem=80,tflops=400");
	assert_int_equal(decide_on(file, "n[1-2]", "4(x2)", 2, NULL, NULL, 8, &a, msg, sizeof msg), 0);
	assert_true(a.decided);
	assert_string_equal(a.warning, "");
	assert_non_null(strstr(a.note, "--llm-parallel=auto chose "));
	assert_non_null(strstr(a.note, "placed on the topology"));
	/* sbatch (no task count, no LLMP_GPU): left to each srun, which reads the types */
	assert_int_equal(decide_on(file, NULL, NULL, 0, NULL, NULL, 0, &a, msg, sizeof msg), 0);
	assert_false(a.decided);
	unlink(file);
	rmdir(dir);
}

/*
 * A pipeline over both kinds, tp=1,pp=2 on 8 tasks: stage 0 on n1 (400
 * TFLOP/s), stage 1 on n2 (100). By hand, in units of one layer's work on
 * the fast GPU: the output layer (2 h V = 262M parameters) is 0.65 of a
 * layer (12 h^2 + ... = 403M), the embedding nearly free. 7 + 1 layers:
 * stage 0 takes 7, stage 1 (1 + 0.65) x 4 = 6.6; 6 + 2: stage 1 takes
 * (2 + 0.65) x 4 = 10.6. So 7 and 1, which Megatron's first/last flags say.
 */
static void mixed_kinds_split_the_layers(void **state)
{
	char dir[] = "/tmp/test_plugin_model.XXXXXX", file[64], msg[1024];
	struct plugin_model_answer a;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof file, "%s/t.json", dir);
	write_topology(file, "mem=80,tflops=400", "mem=80,tflops=100");
	llmp_spec pp2 = layout("tp=1,pp=2");
	assert_int_equal(decide_on(file, "n[1-2]", "4(x2)", 2, NULL, &pp2, 8, &a, msg, sizeof msg), 0);
	assert_non_null(strstr(a.megatron,
			       "--decoder-first-pipeline-num-layers 7 --decoder-last-pipeline-num-layers 1"));
	assert_string_equal(a.stage_layers, "7,1");
	assert_true(a.flags_say_stages);
	assert_null(strstr(a.note, "LLMP_STAGE_LAYERS")); /* the flags say it all */
	/* the slow host first: the split turns round */
	assert_int_equal(decide_on(file, "n2,n1", "4(x2)", 2, NULL, &pp2, 8, &a, msg, sizeof msg), 0);
	assert_non_null(strstr(a.megatron,
			       "--decoder-first-pipeline-num-layers 1 --decoder-last-pipeline-num-layers 7"));
	unlink(file);
	rmdir(dir);
}

/* Machines that cannot be used: a warning naming why, and the decision on LLMP_GPU alone. */
static void unusable_topology_warns(void **state)
{
	char dir[] = "/tmp/test_plugin_model.XXXXXX", file[64], fifo[64], msg[1024];
	struct plugin_model_answer a;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof file, "%s/t.json", dir);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	write_topology(file, "mem=80,tflops=400", "mem=80,tflops=100");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	static const struct {
		const char *file, *nodes, *per_node, *why;
		uint32_t nnodes;
	} cases[] = {
		{ NULL, "n[1-3]", "4(x2)", "more than 2 hosts", 2 },
		{ NULL, "n1", "4(x2)", "are 1, Slurm says 2", 2 },
		{ NULL, "n[1-2]", "4,3", "add up to 7, not 8 tasks", 2 },
		{ NULL, "n1,n9", "4(x2)", "n9", 2 },
		{ NULL, NULL, NULL, "SLURM_STEP_NODELIST", 2 },
		{ "fifo", "n[1-2]", "4(x2)", "not a regular file", 2 },
		{ "none", "n[1-2]", "4(x2)", "none.json", 2 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char path[80];
		snprintf(path, sizeof path, "%s",
			 !cases[i].file                       ? file
			 : strcmp(cases[i].file, "fifo") == 0 ? fifo
							      : "/nonexistent/none.json");
		assert_int_equal(decide_on(path, cases[i].nodes, cases[i].per_node, cases[i].nnodes, "h100",
					   NULL, 8, &a, msg, sizeof msg),
				 0);
		if (!strstr(a.warning, cases[i].why))
			fail_msg("case %zu: warning '%s' does not say '%s'", i, a.warning, cases[i].why);
		assert_non_null(strstr(a.warning, "the topology not used"));
		assert_true(a.decided);
		assert_null(strstr(a.note, "placed on the topology"));
	}
	/* and with no GPU named anywhere, auto is refused as before */
	assert_int_equal(decide_on(file, "n[1-3]", "4(x2)", 2, NULL, NULL, 8, &a, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "--llm-parallel=auto needs the GPU"));
	unlink(fifo);
	unlink(file);
	rmdir(dir);
}

/* LLMP_STAGE_LAYERS as the step reads it: exactly pp counts of at least 1. */
static void stage_layers_are_checked(void **state)
{
	uint32_t layers[PLUGIN_STAGES_MAX];
	char msg[256];
	(void)state;
	assert_int_equal(plugin_stage_layers_parse("7,1", 2, layers, msg, sizeof msg), 0);
	assert_int_equal(layers[0], 7);
	assert_int_equal(layers[1], 1);
	assert_int_equal(plugin_stage_layers_parse("10,12,12,6", 4, layers, msg, sizeof msg), 0);
	assert_int_equal(layers[3], 6);
	static const struct {
		const char *text;
		uint32_t pp;
		const char *why;
	} bad[] = {
		{ "7,1", 3, "not 3 counts" },
		{ "7,1,2", 2, "not 2 counts" },
		{ "7,0", 2, "stage 1" },
		{ "7,,1", 3, "stage 1" },
		{ "", 1, "stage 0" },
		{ "7,1,", 2, "not 2 counts" },
		{ "1234567,1", 2, "stage 0" },
		{ "7;1", 2, "not 2 counts" },
		{ "-1,9", 2, "stage 0" },
		{ "1,1", 0, "0 pipeline stages" },
		{ "1", PLUGIN_STAGES_MAX + 1, "at most 128" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		msg[0] = '\0';
		assert_int_equal(plugin_stage_layers_parse(bad[i].text, bad[i].pp, layers, msg, sizeof msg),
				 -1);
		if (!strstr(msg, bad[i].why))
			fail_msg("'%s' on %u: '%s' does not say '%s'", bad[i].text, bad[i].pp, msg,
				 bad[i].why);
	}
}

/*
 * More pipeline stages than the step reads (PLUGIN_STAGES_MAX, 128): srun
 * hands no per-stage peaks rather than a list the step would refuse, which
 * failed every such step; at 128 each stage has its item.
 */
static void many_stages_hand_no_peaks(void **state)
{
	struct plugin_site site;
	struct plugin_model_answer a;
	char msg[1024];
	const char *model = "layers=256,hidden=1024,heads=16,seq=1024,vocab=32000,ffn=4096,gbs=256,mbs=1";
	(void)state;
	no_site(&site);
	llmp_spec spec = layout("pp=128");
	assert_int_equal(decide(&site, model, "h100", &spec, 128, &a, msg, sizeof msg), 0);
	assert_true(a.decided);
	size_t items = 1;
	for (const char *p = a.peaks; *p; p++)
		items += *p == ',';
	assert_true(a.peaks[0] != '\0');
	assert_int_equal(items, 128);
	assert_non_null(strstr(a.peaks, "h100:"));
	spec = layout("pp=256");
	assert_int_equal(decide(&site, model, "h100", &spec, 256, &a, msg, sizeof msg), 0);
	assert_true(a.decided);
	assert_string_equal(a.peaks, "");
	assert_string_equal(a.stage_layers, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(layout_that_cannot_fit_is_refused),
		cmocka_unit_test(guard_refuses_only_beyond_its_band),
		cmocka_unit_test(guard_judges_the_least_memory_when_nothing_fits),
		cmocka_unit_test(sbatch_refuses_only_what_no_size_fits),
		cmocka_unit_test(megatron_flags_state_what_was_assumed),
		cmocka_unit_test(block_recompute_is_said_and_chosen),
		cmocka_unit_test(moe_act_recompute_is_said_and_chosen),
		cmocka_unit_test(megatron_rule_is_named),
		cmocka_unit_test(gpu_is_needed_by_auto_only),
		cmocka_unit_test(auto_picks_data_parallel_for_a_small_model),
		cmocka_unit_test(auto_stays_within_the_site_limits),
		cmocka_unit_test(auto_chooses_the_sharding_and_says_it),
		cmocka_unit_test(model_args_are_flags_only),
		cmocka_unit_test(auto_is_asked_by_the_option_first),
		cmocka_unit_test(site_gpu_is_checked),
		cmocka_unit_test(topology_gpu_comes_first),
		cmocka_unit_test(mixed_kinds_split_the_layers),
		cmocka_unit_test(unusable_topology_warns),
		cmocka_unit_test(stage_layers_are_checked),
		cmocka_unit_test(many_stages_hand_no_peaks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
