/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_step_model.c - the step model and the chooser against numbers worked
 * out by hand: Megatron's 18 and 6 + 12/d bytes per parameter, Korthikanti
 * et al.'s 34 s b h / t activations and Figure 1, Megatron's in-flight
 * micro-batches (1F1B and interleaved), Narayanan et al.'s FLOP count, the
 * uneven first/last stages, the layouts `--parallel auto` enumerates, and
 * the descriptions a user types (keys, presets, config.json, GPUs).
 */
#define _POSIX_C_SOURCE 200809L
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

#include "planner/auto_layout.h"
#include "planner/megatron_args.h"

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

/* Check and estimate, expecting both to succeed; stages needs l.pp entries. */
static struct step_estimate estimate(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
				     struct step_layout *l, struct step_stage *stages)
{
	char msg[LLMP_MSG_MAX] = "";
	struct step_estimate e;
	if (step_layout_check(m, world, l, msg, sizeof msg) != LLMP_OK ||
	    step_estimate(m, g, world, l, stages, &e, msg, sizeof msg) != LLMP_OK)
		fail_msg("layout on %u: %s", world, msg);
	return e;
}

static void assert_near(double got, double want, double rel)
{
	double d = got - want;
	if (d < 0)
		d = -d;
	if (d > rel * (want < 0 ? -want : want))
		fail_msg("got %.6g, want %.6g (relative tolerance %g)", got, want, rel);
}

/*
 * GPT-3 175B (h = 12288, 96 layers, GeLU, no GQA) on tp=8, pp=8: a middle
 * stage holds 12 layers of 4h^2 + 2h (attention, two norms) + 8h^2 (MLP)
 * parameters, over 8 tp ranks. Megatron's bf16 row: 18 bytes a parameter
 * (2 weights + 4 fp32 grads + 12 fp32 master and Adam) without the
 * distributed optimizer; 6 + 12/d with it.
 */
static void weights_and_optimizer_are_megatrons_bytes_per_parameter(void **state)
{
	(void)state;
	struct gpu_desc g = gpu_of("a100");
	double h = 12288, params = 12 * (12 * h * h + 2 * h) / 8; /* 2,717,945,856 */
	struct step_stage st[8];

	struct model_desc m = model_of("gpt3-175b,gbs=64,distopt=0");
	struct step_layout l = {
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	estimate(&m, &g, 64, &l, st);
	assert_near(st[3].weights + st[3].grads + st[3].optimizer, 18 * params, 1e-12);
	assert_near(st[3].weights, 2 * params, 1e-12);
	/* Korthikanti Figure 1's "parameters + optimizer" for 175B: 12 h^2 L/(p t) x 18 bytes,
	 * 48.92 GB; ours adds the norms (2h a layer), 0.001% more. */
	assert_near(st[3].weights + st[3].grads + st[3].optimizer, 12 * h * h * 12 / 8 * 18, 2e-5);

	/* dp = 256 / 64 = 4: 6 + 12/4 = 9 bytes a parameter. */
	m = model_of("gpt3-175b,gbs=256");
	l = (struct step_layout){
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	estimate(&m, &g, 256, &l, st);
	assert_int_equal(l.dp, 4);
	assert_near(st[3].weights + st[3].grads + st[3].optimizer, 9 * params, 1e-12);

	/* cp shards the distributed optimizer too (Megatron's dp-cp group): dp 2 x cp 2 = 4 again. */
	l = (struct step_layout){
		.tp = 8, .pp = 8, .cp = 2, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	estimate(&m, &g, 256, &l, st);
	assert_int_equal(l.dp, 2);
	assert_near(st[3].weights + st[3].grads + st[3].optimizer, 9 * params, 1e-12);

	/* bf16 gradient buffers (grad=2) halve the gradients; overhead=0 leaves the 3 GiB alone. */
	m = model_of("gpt3-175b,gbs=256,grad=2,overhead=0");
	l = (struct step_layout){
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	estimate(&m, &g, 256, &l, st);
	assert_near(st[3].grads, 2 * params, 1e-12);
	/* ... and the optimizer then steps its shard from an fp32 copy of the shard's gradients
	 * (DeepSpeed ZeRO-1/2: flatten(averaged_gradients).to(fp32); Megatron: main_grad.float()):
	 * (12 + 4) / d = 16 / 4 = 4 bytes a parameter on dp = 4. */
	assert_near(st[3].optimizer, 4 * params, 1e-12);
	assert_near(st[3].allowance, 3.0 * 1024 * 1024 * 1024, 1e-15);
	m = model_of("gpt3-175b,gbs=256,overhead=0.5");
	estimate(&m, &g, 256, &l, st);
	assert_near(st[3].allowance - 3.0 * 1024 * 1024 * 1024,
		    0.5 * (st[3].weights + st[3].grads + st[3].optimizer + st[3].activations), 1e-12);
	/* A site's allowance in the GPU text (llmp calibrate's alloc=, or alloc-gib= by hand):
	 * used where the model says no overhead=; the model's own wins. */
	double rest = st[3].weights + st[3].grads + st[3].optimizer + st[3].activations;
	struct gpu_desc site = gpu_of("a100,alloc-gib=1.5,alloc=0.02");
	assert_true(site.alloc_fixed_given && site.alloc_share_given);
	estimate(&m, &site, 256, &l, st);
	assert_near(st[3].allowance, 1.5 * 1024 * 1024 * 1024 + 0.5 * rest, 1e-12);
	m = model_of("gpt3-175b,gbs=256,grad=2");
	estimate(&m, &site, 256, &l, st);
	rest = st[3].weights + st[3].grads + st[3].optimizer + st[3].activations;
	assert_near(st[3].allowance, 1.5 * 1024 * 1024 * 1024 + 0.02 * rest, 1e-12);
	struct gpu_desc share_only = gpu_of("a100,alloc=0");
	estimate(&m, &share_only, 256, &l, st);
	assert_near(st[3].allowance, 3.0 * 1024 * 1024 * 1024, 1e-15);
	m = model_of("gpt3-175b,gbs=256,overhead=0.5");
	m = model_of("gpt3-175b,gbs=256");
	l = (struct step_layout){
		.tp = 8, .pp = 8, .cp = 2, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	estimate(&m, &g, 256, &l, st);

	/* Stage 0 adds the embedding V h / t = 51200 x 12288 / 8 parameters; the last stage the
	 * tied copy Megatron keeps there for the output layer. */
	assert_near(st[0].weights, 2 * (params + 51200 * h / 8), 1e-12);
	assert_near(st[7].weights, 2 * (params + 51200 * h / 8), 1e-12);
}

/*
 * Korthikanti Table 2, sequence parallel + selective recompute: 34 s b h / t
 * bytes a layer. GPT-3 175B, s = 2048, b = 1, t = 8: 106,954,752 bytes.
 * 1F1B keeps pp - k micro-batches on stage k: stage 3 of 8 holds 5 x 12
 * layers; stage 0 holds 8 x 12 = L layers' worth (Megatron's stage-0
 * figure, Korthikanti Figure 1's 10.27 GB for 175B) plus the embedding's
 * output, 2 s b h / t bytes for each of its 8 micro-batches; the last stage
 * one micro-batch of 12 layers plus the output layer's 4 s b h (1 + V/h) / t.
 */
static void activations_are_korthikantis_34sbh_over_t(void **state)
{
	(void)state;
	struct gpu_desc g = gpu_of("a100");
	struct model_desc m = model_of("gpt3-175b,gbs=64");
	struct step_layout l = {
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	struct step_stage st[8];
	estimate(&m, &g, 64, &l, st);
	double s = 2048, h = 12288, layer = 34 * s * h / 8;
	assert_near(layer, 106954752, 1e-15);
	assert_near(st[3].activations, 5 * 12 * layer, 1e-12);
	assert_near(st[0].activations, 96 * layer + 8 * 2 * s * h / 8, 1e-12);
	assert_near(96 * layer, 10.27e9, 1e-3);
	assert_near(st[7].activations, 12 * layer + 4 * s * h * (1 + 51200 / h) / 8, 1e-12);

	/* Context parallelism halves s: cp = 2 halves a layer's activations. */
	l = (struct step_layout){
		.tp = 8, .pp = 8, .cp = 2, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	estimate(&m, &g, 128, &l, st);
	assert_near(st[3].activations, 5 * 12 * layer / 2, 1e-12);

	/* Full recompute: 2 s b h / t a layer kept, and one layer rebuilt whole. */
	l = (struct step_layout){
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_FULL
	};
	estimate(&m, &g, 64, &l, st);
	assert_near(st[3].activations, 5 * 12 * 2 * s * h / 8 + layer, 1e-12);

	/* Interleaved, vpp = 2: Megatron's 1 + (p - 1)/(p m) on stage 0: 96 x (1 + 7/16) = 138 layers. */
	l = (struct step_layout){
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .vpp = 2, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	estimate(&m, &g, 64, &l, st);
	/* The embedding's output: 23 chunks in flight on stage 0 (2 x 7 + 1 x 8 + 1), 11.5 micro-batches. */
	assert_near(st[0].activations, 138 * layer + 11.5 * 2 * s * h / 8, 1e-12);

	/* Without sequence parallelism (Korthikanti's "TP + selective" row): s b h (10 + 24/t), 13 s b h
	 * at t = 8; without flash attention and without recompute, + 5 a s / (h t) = 10 more. */
	m = model_of("gpt3-175b,gbs=64,sp=0,flash=0");
	l = (struct step_layout){
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	estimate(&m, &g, 64, &l, st);
	assert_near(st[3].activations, 5 * 12 * 13 * s * h, 1e-12);
	l.recompute = MODEL_RECOMPUTE_NONE;
	estimate(&m, &g, 64, &l, st);
	assert_near(st[3].activations, 5 * 12 * 23 * s * h, 1e-12);

	/*
	 * Korthikanti Figure 1, GPT-3 175B on tp 8, pp 8 with 3 virtual stages (as Calculon's
	 * validation restates it): stage 0 holds 96 (1 + 7/24) = 124 layers; "present work" (SP +
	 * selective) 12.3515625 GiB, the baseline (no SP, no recompute, no flash attention)
	 * 66.84375 GiB. The embedding's output (31 chunks / 3 micro-batches of 2 s b h, over t with SP)
	 * is ours, not the figure's.
	 */
	double gib = 1024.0 * 1024 * 1024;
	m = model_of("gpt3-175b,gbs=64");
	l = (struct step_layout){
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .vpp = 3, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	estimate(&m, &g, 64, &l, st);
	assert_near((st[0].activations - 31.0 / 3 * 2 * s * h / 8) / gib, 12.3515625, 1e-6);
	m = model_of("gpt3-175b,gbs=64,sp=0,flash=0");
	l.recompute = MODEL_RECOMPUTE_NONE;
	estimate(&m, &g, 64, &l, st);
	assert_near((st[0].activations - 31.0 / 3 * 2 * s * h) / gib, 66.84375, 1e-6);

	/* Grouped-query attention and SwiGLU: s b (14h + 4 h_kv + 6 ffn) / t. Llama 3 70B,
	 * h 8192, h_kv 1024, ffn 28672, tp 8, pp 4 (20 layers a stage); stage 2 holds 2.
	 * Llama has no dropout: the two 1-byte masks of the 14h are not kept (12h). */
	m = model_of("llama3-70b,gbs=64");
	assert_false(m.dropout);
	l = (struct step_layout){
		.tp = 8, .pp = 4, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	struct step_stage st4[4];
	estimate(&m, &g, 32, &l, st4);
	assert_near(st4[2].activations, 2 * 20 * 8192.0 * (12 * 8192 + 4 * 1024 + 6 * 28672) / 8, 1e-12);
	m = model_of("llama3-70b,gbs=64,dropout=1");
	estimate(&m, &g, 32, &l, st4);
	assert_near(st4[2].activations, 2 * 20 * 8192.0 * (14 * 8192 + 4 * 1024 + 6 * 28672) / 8, 1e-12);

	/* GPT-3 without dropout, sp, flash or recompute: Korthikanti's 34 s b h + 5 a s^2 b less
	 * the masks, (8 + 24/t) s b h whole and split and 2 a s^2 b / t of softmax output kept:
	 * 11 s b h + 2 x 96 x 2048 / 8 s b = 11 + 4 = 15 s b h at t = 8, h = 12288. */
	m = model_of("gpt3-175b,gbs=64,sp=0,flash=0,dropout=0");
	l = (struct step_layout){
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_NONE
	};
	estimate(&m, &g, 64, &l, st);
	assert_near(st[3].activations, 5 * 12 * (11 + 2.0 * 96 * 2048 / (8 * 12288)) * s * h, 1e-12);
}

/*
 * Narayanan et al. 2021 count 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) FLOPs
 * an iteration without recompute, with non-causal attention (4 s h a token
 * and layer forward); causal attention does half of that: s/(12h).
 */
static void flops_are_narayanans_count_with_causal_attention(void **state)
{
	(void)state;
	struct gpu_desc g = gpu_of("a100");
	struct model_desc m = model_of("gpt3-175b");
	struct step_layout l = {
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	struct step_stage st[8];
	struct step_estimate e = estimate(&m, &g, 1024, &l, st); /* dp 16, gbs 1536: 96 micro-batches */
	double B = 1536, s = 2048, L = 96, h = 12288, V = 51200;
	assert_near(e.microbatches, 96, 1e-15);
	assert_near(e.flops, 72 * B * s * L * h * h * (1 + s / (12 * h) + V / (12 * L * h)), 1e-12);
	/* 1F1B: compute is 96 micro-batches of the slowest stage, the last (it has the logits);
	 * the bubble one micro-batch through each of the seven others, at their own pace. */
	double t[8], others = 0;
	for (unsigned k = 0; k < 8; k++) {
		struct step_stage one;
		step_stage_eval(&m, &g, &l, k, &t[k], &one);
		others += k < 7 ? t[k] : 0;
	}
	assert_true(t[0] < t[7]);
	assert_near(e.compute_s, 96 * t[7], 1e-12);
	assert_near(e.bubble_s, others, 1e-12);
	assert_near(others, 7 * t[0], 1e-12); /* the seven are alike: 12 layers each */
	double sum = e.compute_s + e.bubble_s;
	for (int a = 0; a < 5; a++)
		sum += e.net_s[a];
	assert_near(e.step_s, sum, 1e-12);
	/* Network seconds given (a placement's, cost.c): tp, ep and pp exposed whole (pp once per
	 * chunk edge: vpp 1 here), dp hidden behind one micro-batch of compute. */
	const double given[5] = { 1.5, 0, 0.25, e.compute_s / 96 + 2, 0.125 };
	struct step_estimate p;
	char msg[LLMP_MSG_MAX];
	assert_int_equal(step_estimate_placed(&m, &g, 1024, &l, given, st, &p, msg, sizeof msg), LLMP_OK);
	assert_near(p.net_s[0], 1.5, 1e-15);
	assert_near(p.net_s[2], 0.25, 1e-15);
	assert_near(p.net_s[3], 2, 1e-9);
	assert_near(p.net_s[4], 0.125, 1e-15);
	assert_near(p.step_s, e.compute_s + e.bubble_s + 1.5 + 0.25 + 2 + 0.125, 1e-9);
	assert_near(p.peak_bytes, e.peak_bytes, 1e-15);
	/* Full recompute adds one forward of the transformer layers, not of the output layer
	 * (Narayanan's 96 B s l h^2 (1 + s/(6h) + V/(16lh)): the layers 4 times, the logits 3).
	 * The slowest stage is the last: 12 layers of s b (24 h^2 + 2 s h) forward each, Ly, and
	 * the logits' 2 s b h V, Lg; its micro-batch goes from 3 (Ly + Lg) to 4 Ly + 3 Lg. */
	struct step_layout full = l;
	full.recompute = MODEL_RECOMPUTE_FULL;
	struct step_estimate f = estimate(&m, &g, 1024, &full, st);
	double Ly = 12 * s * (24 * h * h + 2 * s * h), Lg = 2 * s * h * V;
	assert_near(f.compute_s - f.elementwise_s,
		    (e.compute_s - e.elementwise_s) * (4 * Ly + 3 * Lg) / (3 * (Ly + Lg)), 1e-12);
	/* ... and that forward's tensor-parallel collectives: 2 forward + 2 backward + 2 again,
	 * 6/4 of the tp seconds the placement gives. */
	struct step_estimate fp;
	assert_int_equal(step_estimate_placed(&m, &g, 1024, &full, given, st, &fp, msg, sizeof msg), LLMP_OK);
	assert_near(fp.net_s[0], 1.5 * 6 / 4, 1e-15);
	/* 16-bit gradient buffers reduce in 16 bits: dp's 4 + 2 bytes (fp32 reduce-scatter, bf16
	 * all-gather) become 2 + 2, then one micro-batch of compute hides what it can. */
	struct model_desc m2 = model_of("gpt3-175b,grad=2");
	struct step_estimate h16;
	assert_int_equal(step_estimate_placed(&m2, &g, 1024, &l, given, st, &h16, msg, sizeof msg), LLMP_OK);
	assert_near(h16.net_s[3], given[3] * 4 / 6 - e.compute_s / 96, 1e-9);
}

/*
 * fp8=1 keeps the inputs of the linear GEMMs in FP8 for the backward, one byte
 * an element (Transformer Engine): of Korthikanti's count a token keeps h bytes
 * less for the QKV input, h less for FC1's, ffn less for FC2's, and h more for
 * the projection's FP8 copy beside the bf16 attention output the flash kernels
 * keep. Llama 3 8B (h 4096, ffn 14336), seq 8192, mbs 1, pp 1 (every layer in
 * flight, once): with sequence parallelism on tp=2 all of it splits, 32 s (h +
 * ffn) / 2 bytes less; without it the QKV and FC1 inputs are whole on each rank,
 * 32 s (2h - h / 2 + ffn / 2) less. The embedding and the logits are unchanged.
 */
static void fp8_keeps_linear_inputs_in_one_byte(void **state)
{
	(void)state;
	struct gpu_desc g = gpu_of("h100,mem=1000");
	double s = 8192, h = 4096, ffn = 14336;
	for (int sp = 1; sp >= 0; sp--) {
		char bf[64], f8[128];
		snprintf(bf, sizeof bf, "llama3-8b,gbs=16,recompute=none,sp=%d", sp);
		snprintf(f8, sizeof f8, "%s,fp8=1", bf);
		struct model_desc m = model_of(bf), m8 = model_of(f8);
		struct step_layout l = { .tp = 2, .pp = 1, .cp = 1, .ep = 1, .mbs = 1 }, l8 = l;
		l.recompute = l8.recompute = MODEL_RECOMPUTE_NONE;
		struct step_stage st[1], st8[1];
		estimate(&m, &g, 16, &l, st);
		estimate(&m8, &g, 16, &l8, st8);
		double less = sp ? 32 * s * (h + ffn) / 2 : 32 * s * (2 * h - h / 2 + ffn / 2);
		assert_near(st[0].activations - st8[0].activations, less, 1e-12);
	}
}

/*
 * offload-layers=N (Megatron-Core's --cpu-offloading-num-layers): the first N
 * layers' activations go to the host; the GPU keeps the others and one
 * offloaded layer on its way. Llama 3 8B without recompute on one GPU, mbs 1:
 * a layer keeps s (12h + 4 kv + 6 ffn) bytes (SwiGLU, GQA kv = 1024, no
 * dropout), so offloading 30 of 32 keeps 29 layers' fewer; Megatron-LM is
 * told --cpu-offloading --cpu-offloading-num-layers 30. Megatron-Core refuses
 * it with pp > 1.
 */
static void offload_layers_leave_the_gpu(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX] = "";
	struct gpu_desc g = gpu_of("h100,mem=1000");
	struct model_desc m = model_of("llama3-8b,gbs=8,recompute=none"),
			  off = model_of("llama3-8b,gbs=8,recompute=none,offload-layers=30");
	struct step_layout l = { .tp = 1, .pp = 1, .cp = 1, .ep = 1, .mbs = 1 }, lo = l;
	l.recompute = lo.recompute = MODEL_RECOMPUTE_NONE;
	struct step_stage st[1], sto[1];
	estimate(&m, &g, 8, &l, st);
	estimate(&off, &g, 8, &lo, sto);
	double s = 8192, h = 4096, kv = 1024, ffn = 14336;
	assert_near(st[0].activations - sto[0].activations, 29 * s * (12 * h + 4 * kv + 6 * ffn), 1e-12);
	char flags[1024];
	assert_true(megatron_model_args(&off, &lo, flags, sizeof flags, NULL));
	if (!strstr(flags, " --cpu-offloading --cpu-offloading-num-layers 30"))
		fail_msg("Megatron's flags do not say the offload: %s", flags);
	struct step_layout p2 = lo;
	p2.pp = 2, p2.dp = 0;
	assert_int_equal(step_layout_check(&off, 8, &p2, msg, sizeof msg), LLMP_ERR_LAYOUT);
	if (!strstr(msg, "pp=2 with offload-layers=30: Megatron-Core offloads activations only"))
		fail_msg("%s", msg);
}

/*
 * fp8=1 (step_model.h): the layers' linear GEMMs at twice the bf16 rate, the
 * attention core and the output layer not. GPT-3 175B on tp=8, pp=8: the
 * last stage (the slowest, with the logits) runs per micro-batch 3 (Ly + Lg)
 * FLOPs, Ly = 12 s (24 h^2 + 2 s h) of layers of which 12 s 24 h^2 linear, Lg
 * = 2 s h V the logits': its GEMM seconds scale by (12 s 12 h^2 + 12 s 2 s h +
 * Lg) / (Ly + Lg). A middle stage holds its layers' bf16 weights (2 bytes a
 * parameter) and Transformer Engine's FP8 copy (1 more): 1.5 times the weights.
 */
static void fp8_runs_linear_gemms_twice_as_fast(void **state)
{
	(void)state;
	struct gpu_desc g = gpu_of("h100");
	struct model_desc m = model_of("gpt3-175b"), m8 = model_of("gpt3-175b,fp8=1");
	struct step_layout l = {
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_NONE
	};
	struct step_layout l8 = l;
	struct step_stage st[8], st8[8];
	struct step_estimate e = estimate(&m, &g, 1024, &l, st), e8 = estimate(&m8, &g, 1024, &l8, st8);
	double s = 2048, h = 12288, V = 51200;
	double Ly = 12 * s * (24 * h * h + 2 * s * h), Lg = 2 * s * h * V;
	double fp8 = 12 * s * 12 * h * h + 12 * s * 2 * s * h + Lg;
	assert_near(e8.compute_s - e8.elementwise_s - e8.overhead_s,
		    (e.compute_s - e.elementwise_s - e.overhead_s) * fp8 / (Ly + Lg), 1e-12);
	assert_near(e8.elementwise_s, e.elementwise_s, 1e-12); /* bf16 elementwise kernels alike */
	assert_near(e8.flops, e.flops, 1e-15);                 /* the model's FLOPs do not change */
	assert_near(st8[3].weights, 1.5 * st[3].weights, 1e-12);
	/* its 12 layers in flight for 5 micro-batches (1F1B on stage 3 of 8), each keeping
	 * s (h + ffn) / t bytes less (fp8_keeps_linear_inputs_in_one_byte) */
	assert_near(st[3].activations - st8[3].activations, 5 * 12 * s * (h + 4 * h) / 8, 1e-12);
	assert_near(st8[3].optimizer, st[3].optimizer, 1e-15);
}

/*
 * The elementwise kernels' bytes, counted by hand for GPT-3 175B on 8 stages of 12 layers
 * (s 2048, b 1, h 12288, ffn 49152, 96 heads, vocab 51200, tp 8) at 0.8 of the A100's
 * 2039 GB/s. Per layer, forward / backward: two LayerNorms 4 / 6 s b h, two bias-dropout-
 * adds 7 / 7 s b h (over t with sequence parallelism, whole without), GeLU 4 / 6 s b ffn / t,
 * and without flash attention softmax + dropout 9 / 11 bytes of each of a s^2 b / t scores.
 * The last stage (the slowest: it has the logits) adds 20 bytes a logit, s b V / t.
 */
static void elementwise_bytes_and_per_layer_overhead(void **state)
{
	(void)state;
	double s = 2048, h = 12288, ffn = 49152, a = 96, V = 51200, t = 8, layers = 12, micro = 96;
	double rate = 2039e9 * 0.8, logits = 20 * s * V / t;
	struct gpu_desc g = gpu_of("a100");
	struct step_stage st[8];

	/* sequence parallelism, flash attention, selective recompute: forward and backward once */
	struct model_desc m = model_of("gpt3-175b,gbs=1536");
	struct step_layout l = {
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	struct step_estimate e = estimate(&m, &g, 1024, &l, st);
	double fwd = 22 * s * h / t + 4 * s * ffn / t, bwd = 26 * s * h / t + 6 * s * ffn / t;
	assert_near(e.elementwise_s, micro * (layers * (fwd + bwd) + logits) / rate, 1e-12);

	/* no sequence parallelism, no flash attention, full recompute: the forward twice */
	m = model_of("gpt3-175b,gbs=1536,sp=0,flash=0");
	l.recompute = MODEL_RECOMPUTE_FULL, l.dp = 0;
	e = estimate(&m, &g, 1024, &l, st);
	double scores = a * s * s / t;
	fwd = 22 * s * h + 4 * s * ffn / t + 9 * scores, bwd = 26 * s * h + 6 * s * ffn / t + 11 * scores;
	assert_near(e.elementwise_s, micro * (layers * (2 * fwd + bwd) + logits) / rate, 1e-12);

	/* selective recompute without flash attention runs the softmax and its dropout again */
	l.recompute = MODEL_RECOMPUTE_SELECTIVE, l.dp = 0;
	e = estimate(&m, &g, 1024, &l, st);
	assert_near(e.elementwise_s, micro * (layers * (fwd + bwd + 9 * scores) + logits) / rate, 1e-12);

	/* without dropout: no masks (6 / 6 s b h a bias-add instead of 7 / 7), the softmax alone
	 * (4 / 6 bytes a score instead of 9 / 11) */
	struct model_desc nodrop = model_of("gpt3-175b,gbs=1536,sp=0,flash=0,dropout=0");
	struct step_estimate d = estimate(&nodrop, &g, 1024, &l, st);
	double dfwd = 20 * s * h + 4 * s * ffn / t + 4 * scores,
	       dbwd = 24 * s * h + 6 * s * ffn / t + 6 * scores;
	assert_near(d.elementwise_s, micro * (layers * (dfwd + dbwd + 4 * scores) + logits) / rate, 1e-12);

	/* layer-ms=: the framework's time a layer and micro-batch, 12 layers a stage, 96 micro-batches;
	 * on every stage alike, so the bubble takes it 7 times too */
	struct gpu_desc slowed = gpu_of("a100,layer-ms=2.5");
	assert_near(slowed.layer_overhead_s, 2.5e-3, 1e-12);
	struct step_estimate o = estimate(&m, &slowed, 1024, &l, st);
	assert_near(o.overhead_s, 96 * 12 * 2.5e-3, 1e-12);
	assert_near(o.compute_s - e.compute_s, 96 * 12 * 2.5e-3, 1e-9);
	assert_near(o.bubble_s - e.bubble_s, 7 * 12 * 2.5e-3, 1e-9);
	assert_near(e.overhead_s, 0, 0);

	/* hbm= replaces the data sheet's bandwidth; the part is in compute_s */
	struct gpu_desc slow = gpu_of("a100,hbm=1019.5");
	struct step_estimate half = estimate(&m, &slow, 1024, &l, st);
	assert_near(half.elementwise_s, 2 * e.elementwise_s, 1e-12);
	assert_near(half.compute_s - e.compute_s, e.elementwise_s, 1e-9);
}

/*
 * engine=deepspeed: dp's collectives after the last micro-batch (DeepSpeed's TrainSchedule),
 * none of them hidden; Megatron's hide one micro-batch's worth. And no interleaving.
 */
static void deepspeed_engine_exposes_dp_and_never_interleaves(void **state)
{
	(void)state;
	struct gpu_desc g = gpu_of("a100");
	struct step_stage st[8];
	struct model_desc m = model_of("gpt3-175b,gbs=1536"),
			  off = model_of("gpt3-175b,gbs=1536,engine=deepspeed");
	struct step_layout l = { .tp = 8, .pp = 8, .cp = 1, .ep = 1, .mbs = 1 };
	struct step_estimate e = estimate(&m, &g, 1024, &l, st);
	const double given[5] = { 0, 0, 0, e.compute_s / 96 + 2, 0 };
	char msg[LLMP_MSG_MAX];
	struct step_estimate on, exposed;
	assert_int_equal(step_estimate_placed(&m, &g, 1024, &l, given, st, &on, msg, sizeof msg), LLMP_OK);
	assert_int_equal(step_estimate_placed(&off, &g, 1024, &l, given, st, &exposed, msg, sizeof msg),
			 LLMP_OK);
	assert_near(on.net_s[3], 2, 1e-9);
	assert_near(exposed.net_s[3], given[3], 1e-12);
	assert_near(exposed.step_s - on.step_s, e.compute_s / 96, 1e-9);
	struct step_layout v = { .tp = 8, .pp = 8, .cp = 1, .ep = 1, .vpp = 2, .mbs = 1 };
	assert_int_equal(step_layout_check(&m, 1024, &v, msg, sizeof msg), LLMP_OK);
	v.dp = 0;
	assert_int_equal(step_layout_check(&off, 1024, &v, msg, sizeof msg), LLMP_ERR_LAYOUT);
	assert_non_null(strstr(msg, "vpp=2: DeepSpeed's pipeline engine runs 1F1B"));
}

/* The efficiency a measured step calls for: the one that made that step, found again. */
static void a_measured_step_gives_back_its_efficiency(void **state)
{
	(void)state;
	struct gpu_desc g = gpu_of("a100,eff=0.4321");
	struct model_desc m = model_of("gpt3-175b,gbs=1536,sp=0,flash=0,engine=deepspeed");
	struct step_layout l = {
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .mbs = 2, .recompute = MODEL_RECOMPUTE_FULL
	};
	struct step_stage st[8];
	struct step_estimate e = estimate(&m, &g, 1024, &l, st);
	struct gpu_desc stated = gpu_of("a100");
	char msg[LLMP_MSG_MAX];
	double eff = 0;
	assert_int_equal(step_fit_efficiency(&m, &stated, 1024, &l, e.step_s, &eff, msg, sizeof msg),
			 LLMP_OK);
	assert_near(eff, 0.4321, 1e-9);
	/* Faster than the whole peak allows, or slower than 1% of it: the bounds are named. */
	assert_int_equal(step_fit_efficiency(&m, &stated, 1024, &l, e.step_s / 10, &eff, msg, sizeof msg),
			 LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "is outside what a100 can give this layout"));
	assert_int_equal(step_fit_efficiency(&m, &stated, 1024, &l, e.step_s * 1000, &eff, msg, sizeof msg),
			 LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "at 1% of it"));
}

/*
 * Two measured steps of one layout at mbs 1 and 4 give back both the
 * efficiency and the per-layer overhead they were made with, from stated
 * values far from them; steps whose ratio no overhead gives are refused
 * with the bounds.
 */
static void two_measured_steps_give_back_the_overhead(void **state)
{
	(void)state;
	struct gpu_desc made = gpu_of("a100,eff=0.5678,layer-ms=4.321,net=6.25");
	struct model_desc m = model_of("gpt3-175b,gbs=1536,sp=0,flash=0,engine=deepspeed");
	struct step_layout l1 = {
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_FULL
	};
	struct step_layout l4 = l1;
	l4.mbs = 4;
	struct step_stage st[8];
	double s1 = estimate(&m, &made, 1024, &l1, st).step_s, s4 = estimate(&m, &made, 1024, &l4, st).step_s;
	assert_true(s1 > s4); /* the overhead is paid per micro-batch: four times as often at mbs 1 */
	struct gpu_desc stated = gpu_of("a100,eff=0.2,layer-ms=40,net=6.25"), fitted;
	char msg[LLMP_MSG_MAX];
	double over = 0;
	struct step_measured at1 = { .step_s = s1, .mbs2 = 4, .mbs2_s = s4 };
	assert_int_equal(step_calibrate(&m, &stated, 1024, &l1, &at1, &fitted, msg, sizeof msg), LLMP_OK);
	assert_near(fitted.efficiency, 0.5678, 1e-6);
	assert_near(fitted.layer_overhead_s, 4.321e-3, 1e-8);
	assert_near(fitted.nvlink_gbps, stated.nvlink_gbps, 0); /* no tp pair: the link as stated */
	/* The same from the mbs-4 side. */
	struct step_measured at4 = { .step_s = s4, .mbs2 = 1, .mbs2_s = s1 };
	assert_int_equal(step_calibrate(&m, &stated, 1024, &l4, &at4, &fitted, msg, sizeof msg), LLMP_OK);
	assert_near(fitted.efficiency, 0.5678, 1e-6);
	assert_near(fitted.layer_overhead_s, 4.321e-3, 1e-8);
	/* mbs 1 at half the time of mbs 4: no overhead makes four times the micro-batches faster. */
	assert_int_equal(
		step_fit_layer_overhead(&m, &made, 1024, &l1, s4 / 2, &l4, s4, &over, msg, sizeof msg),
		LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "outside what a per-layer overhead of 0 to 100 ms gives"));
	/* A second micro-batch size the layout cannot take is named. */
	struct step_measured at5 = { .step_s = s1, .mbs2 = 5, .mbs2_s = s4 };
	assert_int_equal(step_calibrate(&m, &stated, 1024, &l1, &at5, &fitted, msg, sizeof msg),
			 LLMP_ERR_LAYOUT);
	assert_non_null(strstr(msg, "mbs*dp"));
}

/*
 * Three measured steps of one layout, at mbs 1 and 2 and at tp 1 and 2, give
 * back the efficiency, the per-layer overhead and the link rate they were made
 * with, from stated values far from all three; a tp pair the link cannot
 * explain, or one crossing the NVLink domain, is refused with its reason.
 */
static void three_measured_steps_give_back_the_link(void **state)
{
	(void)state;
	struct gpu_desc made = gpu_of("h100,eff=0.4321,layer-ms=2.5,nvlink=123.4");
	struct model_desc m = model_of("llama3-8b,gbs=1024,overlap-grad=0,recompute=none");
	struct step_layout t1 = {
		.tp = 1, .pp = 1, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_NONE
	};
	struct step_layout t1m2 = t1, t2 = t1;
	t1m2.mbs = 2, t2.tp = t2.etp = 2;
	struct step_stage st[1];
	double s1 = estimate(&m, &made, 128, &t1, st).step_s,
	       s1m2 = estimate(&m, &made, 128, &t1m2, st).step_s;
	double s2 = estimate(&m, &made, 128, &t2, st).step_s;
	struct gpu_desc fast = made;
	fast.nvlink_gbps = 450;
	/* The slower link shows in tp 2's step only: tp 1 has no tensor-parallel collective. */
	assert_true(s2 > estimate(&m, &fast, 128, &t2, st).step_s);
	assert_near(s1, estimate(&m, &fast, 128, &t1, st).step_s, 1e-9 * s1);
	struct gpu_desc stated = gpu_of("h100,eff=0.3,layer-ms=10"), fitted;
	char msg[LLMP_MSG_MAX];
	struct step_measured at1 = { .step_s = s1, .mbs2 = 2, .mbs2_s = s1m2, .tp2 = 2, .tp2_s = s2 };
	assert_int_equal(step_calibrate(&m, &stated, 128, &t1, &at1, &fitted, msg, sizeof msg), LLMP_OK);
	assert_near(fitted.efficiency, 0.4321, 1e-6);
	assert_near(fitted.layer_overhead_s, 2.5e-3, 1e-8);
	assert_near(fitted.nvlink_gbps, 123.4, 1e-4);
	/* From the tp-2 side, the link alone beside the efficiency. */
	struct gpu_desc stated_overhead = gpu_of("h100,eff=0.3,layer-ms=2.5");
	struct step_measured at2 = { .step_s = s2, .tp2 = 1, .tp2_s = s1 };
	assert_int_equal(step_calibrate(&m, &stated_overhead, 128, &t2, &at2, &fitted, msg, sizeof msg),
			 LLMP_OK);
	assert_near(fitted.efficiency, 0.4321, 1e-6);
	assert_near(fitted.nvlink_gbps, 123.4, 1e-4);
	/* tp 2 faster than tp 1 by a tenth: no link rate gives that. */
	double gbps = 0;
	assert_int_equal(step_fit_link(&m, &made, 128, &t1, s1, &t2, s1 * 0.9, &gbps, msg, sizeof msg),
			 LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "outside what a link of 1 to 10000 GB/s gives"));
	/* tp 16 spans two nodes of 8: its link is the network's. */
	struct step_layout t16 = t1;
	t16.tp = t16.etp = 16;
	assert_int_equal(step_fit_link(&m, &made, 128, &t1, s1, &t16, 2 * s1, &gbps, msg, sizeof msg),
			 LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "wider than h100's NVLink domain of 8 GPUs"));
	/* Two layouts that differ beyond tp are no pair. */
	struct step_layout t2m2 = t2;
	t2m2.mbs = 2;
	assert_int_equal(step_fit_link(&m, &made, 128, &t1, s1, &t2m2, s2, &gbps, msg, sizeof msg),
			 LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "differ in more than tp"));
}

/* Llama 3 405B: 126 layers on 16 stages, Megatron's uneven ends: 7 + 14 x 8 + 7. */
static void uneven_first_and_last_stages(void **state)
{
	(void)state;
	struct model_desc m = model_of("llama3-405b");
	struct step_layout l = { .tp = 8, .pp = 16, .cp = 1, .ep = 1, .mbs = 1 };
	unsigned first, n, total = 0;
	for (unsigned k = 0; k < 16; k++) {
		step_stage_layers(&m, &l, k, &first, &n);
		assert_int_equal(first, total);
		assert_int_equal(n, k == 0 || k == 15 ? 7 : 8);
		total += n;
	}
	assert_int_equal(total, 126);
	char msg[LLMP_MSG_MAX];
	assert_int_equal(step_layout_check(&m, 16384, &l, msg, sizeof msg), LLMP_OK);
	assert_int_equal(l.dp, 128);
	/* vpp 4 splits the middle stages' 8 layers; vpp 3 cannot. */
	l.vpp = 3;
	assert_int_equal(step_layout_check(&m, 16384, &l, msg, sizeof msg), LLMP_ERR_LAYOUT);
	assert_non_null(strstr(msg, "vpp=3"));
}

static void layouts_break_megatrons_rules_with_a_reason(void **state)
{
	(void)state;
	struct model_desc m = model_of("llama3-70b"); /* 64 heads, 8 kv-heads, gbs 512 */
	char msg[LLMP_MSG_MAX];
	struct {
		struct step_layout l;
		uint32_t world;
		const char *says;
	} cases[] = {
		{ { .tp = 16, .pp = 1, .cp = 1, .ep = 1, .mbs = 1 }, 64, "tp=16 does not divide kv-heads=8" },
		{ { .tp = 3, .pp = 1, .cp = 1, .ep = 1, .mbs = 1 }, 24, "tp=3 does not divide heads=64" },
		{ { .tp = 8, .pp = 3, .cp = 1, .ep = 1, .mbs = 1 },
		  64,
		  "tp*pp*cp = 24 does not divide 64 ranks" },
		{ { .tp = 8, .pp = 1, .cp = 1, .ep = 2, .mbs = 1 },
		  64,
		  "ep and etp need a model with experts=" },
		{ { .tp = 1, .pp = 1, .cp = 1, .ep = 1, .mbs = 3 },
		  8,
		  "mbs*dp = 3*8 does not divide gbs=512" },
		{ { .tp = 8, .pp = 81, .cp = 1, .ep = 1, .mbs = 1 }, 648, "pp=81 is more than layers=80" },
		{ { .tp = 8, .pp = 1, .cp = 2, .ep = 1, .mbs = 1 }, 64, "" }, /* with flash=0 below */
	};
	struct model_desc plain = model_of("llama3-70b,flash=0");
	size_t ncases = sizeof cases / sizeof cases[0];
	cases[ncases - 1].says = "cp=2 needs flash attention";
	for (size_t i = 0; i < ncases; i++) {
		struct model_desc *mi = i == ncases - 1 ? &plain : &m;
		assert_int_equal(step_layout_check(mi, cases[i].world, &cases[i].l, msg, sizeof msg),
				 LLMP_ERR_LAYOUT);
		if (!strstr(msg, cases[i].says))
			fail_msg("case %zu: '%s' does not say '%s'", i, msg, cases[i].says);
	}
	struct model_desc moe = model_of("mixtral-8x7b");
	struct step_layout l = { .tp = 1, .pp = 1, .cp = 1, .ep = 3, .mbs = 1 };
	assert_int_equal(step_layout_check(&moe, 24, &l, msg, sizeof msg), LLMP_ERR_LAYOUT);
	assert_non_null(strstr(msg, "ep=3 does not divide experts=8"));

	/* Megatron-FSDP (zero=2, 3 under Megatron) starts with pp=1 only; a PyTorch-native
	 * stack pipelines under FSDP, and the zero=1 distributed optimizer with any pp. */
	struct step_layout p2 = { .tp = 8, .pp = 2, .cp = 1, .ep = 1, .mbs = 1 };
	struct step_layout p1 = { .tp = 8, .pp = 1, .cp = 1, .ep = 1, .mbs = 1 };
	struct model_desc fsdp = model_of("llama3-70b,zero=2"),
			  torch = model_of("llama3-70b,zero=3,engine=torch");
	assert_int_equal(step_layout_check(&fsdp, 64, &p2, msg, sizeof msg), LLMP_ERR_LAYOUT);
	assert_non_null(strstr(msg, "pp=2 with zero=2: Megatron-FSDP builds its mesh from dp, cp and tp"));
	assert_int_equal(step_layout_check(&fsdp, 64, &p1, msg, sizeof msg), LLMP_OK);
	assert_int_equal(step_layout_check(&torch, 64, &p2, msg, sizeof msg), LLMP_OK);
	assert_int_equal(step_layout_check(&m, 64, &p2, msg, sizeof msg), LLMP_OK);
	assert_string_equal(model_engine_name(torch.engine), "torch");
}

/* MoE: 8 experts of 3 x 4096 x 14336 parameters a layer, over ep x etp ranks. */
static void experts_shard_over_ep_and_etp(void **state)
{
	(void)state;
	struct gpu_desc g = gpu_of("h100");
	struct model_desc m = model_of("mixtral-8x7b,distopt=0");
	struct step_stage a[1], b[1];
	struct step_layout l1 = {
		.tp = 1, .pp = 1, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_FULL
	};
	struct step_layout l8 = {
		.tp = 1, .pp = 1, .cp = 1, .ep = 8, .mbs = 1, .recompute = MODEL_RECOMPUTE_FULL
	};
	estimate(&m, &g, 8, &l1, a);
	estimate(&m, &g, 8, &l8, b);
	double experts = 32 * 8 * 3 * 4096.0 * 14336; /* all layers' routed experts */
	assert_near(a[0].weights - b[0].weights, 2 * experts * (1 - 1.0 / 8), 1e-12);
}

/*
 * A toy the enumeration can be counted for by hand: 4 layers, 2 heads, seq
 * 64, gbs 4, 4 ranks, one recompute. tp 1: pp 1 (cp 1/2/4: mbs 1 | 1,2 |
 * 1,2,4: 6), pp 2 (cp 1/2: mbs 1,2 | 1,2,4, vpp 1 or 2: 10), pp 4 (mbs
 * 1,2,4: 3); tp 2: pp 1 (cp 1/2: 2 + 3), pp 2 (mbs 1,2,4, vpp 1 or 2: 6).
 * 30 in all; tp 4 does not divide 2 heads.
 */
static void auto_enumerates_every_valid_layout(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];
	struct model_desc m = model_of("layers=4,hidden=256,heads=2,seq=64,gbs=4,vocab=1000,recompute=full");
	struct gpu_desc g = gpu_of("mem=16,tflops=100");
	struct chooser_result r;
	assert_int_equal(chooser_run(&m, &g, 4, &r, msg, sizeof msg), LLMP_OK);
	assert_int_equal(r.n, 30);
	assert_int_equal(r.fitting, 30);
	for (size_t i = 0; i < r.n; i++) {
		struct step_layout l = r.all[i].layout;
		assert_int_equal(step_layout_check(&m, 4, &l, msg, sizeof msg), LLMP_OK);
		assert_int_equal(l.tp * l.pp * l.cp * l.dp, 4);
		if (i > 1) /* all[0] is the choice, the rest by time (auto_prefers_fewer_stages_on_a_tie) */
			assert_true(r.all[i - 1].est.step_s <= r.all[i].est.step_s);
	}
	char why[256];
	chooser_why_lost(&r.all[r.n - 1], &r.all[0], &g, why, sizeof why);
	assert_non_null(strstr(why, "slower"));
	chooser_result_free(&r);

	/* No gbs: the chooser cannot compare layouts at one batch. */
	m = model_of("layers=4,hidden=256,heads=2,seq=64");
	assert_int_equal(chooser_run(&m, &g, 4, &r, msg, sizeof msg), LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "gbs="));
}

/*
 * Near-ties go to the shallower pipeline. On 16 A100s an 18B model has
 * layouts at pp 1 and pp 2 within 1% of each other. Checked against the
 * estimates themselves: the choice is within CHOOSER_TIE_BAND of the fastest,
 * no layout in the band has fewer stages, none with its stages is faster,
 * and here the fastest is not the choice.
 */
static void auto_prefers_fewer_stages_on_a_tie(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX], why[256];
	struct model_desc m = model_of("layers=40,hidden=6144,heads=48,seq=2048,vocab=51200,gbs=512");
	struct gpu_desc g = gpu_of("a100");
	struct chooser_result r;
	assert_int_equal(chooser_run(&m, &g, 16, &r, msg, sizeof msg), LLMP_OK);
	assert_true(r.fitting > 1);
	size_t fastest = 0;
	for (size_t i = 1; i < r.fitting; i++)
		if (r.all[i].est.step_s < r.all[fastest].est.step_s)
			fastest = i;
	double band = r.all[fastest].est.step_s * 1.01;
	const struct chooser_candidate *choice = &r.all[0];
	assert_true(choice->est.fits);
	assert_true(choice->est.step_s <= band);
	for (size_t i = 1; i < r.fitting; i++) {
		const struct chooser_candidate *c = &r.all[i];
		if (c->est.step_s <= band)
			assert_true(c->layout.pp >= choice->layout.pp);
		if (c->layout.pp == choice->layout.pp)
			assert_true(c->est.step_s >= choice->est.step_s);
	}
	assert_true(fastest != 0);
	assert_true(r.all[fastest].layout.pp > choice->layout.pp);
	chooser_why_lost(&r.all[fastest], choice, &g, why, sizeof why);
	assert_non_null(strstr(why, "faster"));
	assert_non_null(strstr(why, "fewer pipeline stages"));
	chooser_result_free(&r);
}

/*
 * Megatron's block method (--recompute-method block --recompute-num-layers N):
 * the first N layers of each model chunk keep only their input, 2 s b h / t,
 * the others all of theirs, 34 s b h / t. GPT-3 175B on tp 8, pp 8 (12 layers
 * a stage), stage 3 holds 5 micro-batches: with N = 3 of 12, 5 x (3 x 2 + 9 x
 * 34) s b h / t and the one layer rebuilt; with vpp 2 (chunks of 6, N = 3:
 * half) 17 chunks of 6 layers in flight (2 (8 - 3 - 1) + 8 + 1). The time
 * runs the forward again on N / 12 of the layers: the last stage's
 * micro-batch is 3 (Ly + Lg) + Ly / 4, its tp traffic 1 + 1/8 of the plain.
 */
/*
 * Megatron-Core's --recompute-modules moe_act: the routed experts' SwiGLU output (the
 * second expert matrix's input, 2 bytes x moe_ffn a routed token) is dropped after the
 * forward and rebuilt from the first matrix's output in the backward.
 */
static void moe_act_recompute_drops_the_experts_activation_output(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];
	struct gpu_desc g = gpu_of("h100");
	struct model_desc m = model_of("layers=4,hidden=1024,heads=8,seq=2048,vocab=32000,experts=8,topk=2,"
				       "moe-ffn=512,mlp=swiglu,gbs=16");
	double s = 2048, t = 2, topk = 2, ffn = 512, micro = 4; /* dp 4: 16 / 4 micro-batches */
	struct step_layout l = {
		.tp = 2, .pp = 1, .cp = 1, .ep = 2, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	struct step_stage st[1], act_st[1];
	struct step_estimate e = estimate(&m, &g, 8, &l, st);
	struct step_layout a = l;
	a.moe_act = true;
	struct step_estimate f = estimate(&m, &g, 8, &a, act_st);
	/* pp 1: one micro-batch in flight; 4 MoE layers, 2 bytes x moe_ffn x topk tokens a layer */
	assert_near(st[0].activations - act_st[0].activations, 4 * topk * 2 * ffn * s / t, 1e-12);
	/* the activation's forward again: SwiGLU reads two inputs and writes one, 6 bytes an element */
	assert_near(f.elementwise_s - e.elementwise_s, micro * 4 * 6 * s * topk * ffn / t / (3350e9 * 0.8),
		    1e-9);
	assert_near(f.compute_s - e.compute_s, f.elementwise_s - e.elementwise_s, 1e-9);
	char text[160];
	step_layout_format(&a, text, sizeof text);
	assert_non_null(strstr(text, ",recompute=selective,recompute-moe-act=1"));

	/* Megatron's rules: experts, selective granularity, Megatron-Core */
	a.recompute = MODEL_RECOMPUTE_FULL;
	assert_int_equal(step_layout_check(&m, 8, &a, msg, sizeof msg), LLMP_ERR_LAYOUT);
	assert_non_null(strstr(msg, "needs experts, recompute=selective and engine=megatron"));
	struct model_desc dense = model_of("layers=4,hidden=1024,heads=8,seq=2048,gbs=16");
	struct step_layout d = { .tp = 2, .pp = 1, .cp = 1, .ep = 1, .mbs = 1, .moe_act = true };
	assert_int_equal(step_layout_check(&dense, 8, &d, msg, sizeof msg), LLMP_ERR_LAYOUT);

	/* The chooser, where selective alone does not fit and with the activation it does: on one
	 * GPU (one layout a micro-batch size) between the two peaks of mbs 1 */
	struct model_desc one = model_of("layers=4,hidden=1024,heads=8,seq=2048,vocab=32000,experts=8,topk=2,"
					 "moe-ffn=512,mlp=swiglu,gbs=1");
	struct step_layout o = {
		.tp = 1, .pp = 1, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	double plain = estimate(&one, &g, 1, &o, NULL).peak_bytes;
	o.moe_act = true;
	double with_act = estimate(&one, &g, 1, &o, NULL).peak_bytes;
	assert_true(with_act < plain);
	struct gpu_desc tight = g;
	tight.mem_bytes = (plain + with_act) / 2;
	struct chooser_result r;
	assert_int_equal(chooser_run(&one, &tight, 1, &r, msg, sizeof msg), LLMP_OK);
	assert_true(r.fitting >= 1);
	assert_int_equal(r.all[0].layout.recompute, MODEL_RECOMPUTE_SELECTIVE);
	assert_true(r.all[0].layout.moe_act);
	chooser_result_free(&r);
	/* recompute=selective said: the chooser keeps to it, and nothing fits */
	one = model_of("layers=4,hidden=1024,heads=8,seq=2048,vocab=32000,experts=8,topk=2,moe-ffn=512,"
		       "mlp=swiglu,gbs=1,recompute=selective");
	assert_int_equal(chooser_run(&one, &tight, 1, &r, msg, sizeof msg), LLMP_OK);
	assert_int_equal(r.fitting, 0);
	chooser_result_free(&r);
}

static void block_recompute_keeps_the_other_layers(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];
	struct gpu_desc g = gpu_of("a100");
	struct model_desc m = model_of("gpt3-175b");
	double s = 2048, h = 12288, V = 51200, layer = 34 * s * h / 8, input = 2 * s * h / 8;
	struct step_stage st[8];
	struct step_layout sel = {
		.tp = 8, .pp = 8, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_SELECTIVE
	};
	struct step_estimate e = estimate(&m, &g, 1024, &sel, st);
	struct step_layout b = sel;
	b.recompute = MODEL_RECOMPUTE_FULL, b.recompute_layers = 3;
	struct step_estimate f = estimate(&m, &g, 1024, &b, st);
	assert_near(st[3].activations, 5 * (3 * input + 9 * layer) + layer, 1e-12);
	double Ly = 12 * s * (24 * h * h + 2 * s * h), Lg = 2 * s * h * V;
	assert_near(f.compute_s - f.elementwise_s,
		    (e.compute_s - e.elementwise_s) * (3 * (Ly + Lg) + Ly / 4) / (3 * (Ly + Lg)), 1e-12);
	const double given[5] = { 1.5, 0, 0, 0, 0 };
	struct step_estimate fp;
	assert_int_equal(step_estimate_placed(&m, &g, 1024, &b, given, st, &fp, msg, sizeof msg), LLMP_OK);
	assert_near(fp.net_s[0], 1.5 * (1 + 0.5 * 3 / 12), 1e-15);
	char text[160];
	step_layout_format(&b, text, sizeof text);
	assert_non_null(strstr(text, ",recompute=full,recompute-layers=3"));

	b.vpp = 2;
	estimate(&m, &g, 1024, &b, st);
	assert_near(st[3].activations, 17 * 6 * (input + layer) / 2 + layer, 1e-12);
	/* N at least a chunk's layers is every layer: plain full recompute. */
	b.recompute_layers = 6;
	struct step_estimate six = estimate(&m, &g, 1024, &b, st);
	b.recompute_layers = 0;
	struct step_estimate all = estimate(&m, &g, 1024, &b, st);
	assert_near(six.peak_bytes, all.peak_bytes, 1e-15);
	assert_near(six.step_s, all.step_s, 1e-15);

	/* The fewest that fit, against every N tried in turn: on a GPU between the peaks of
	 * N = 2 and N = 1 of vpp 1's 12 layers, 2. */
	b.vpp = 1, b.recompute_layers = 1;
	double one = estimate(&m, &g, 1024, &b, st).peak_bytes;
	b.recompute_layers = 2;
	double two = estimate(&m, &g, 1024, &b, st).peak_bytes;
	assert_true(two < one);
	struct gpu_desc tight = g;
	tight.mem_bytes = (one + two) / 2;
	struct step_layout l = b;
	assert_int_equal(step_fewest_recompute(&m, &tight, 1024, &l, &f, msg, sizeof msg), LLMP_OK);
	unsigned first_fit = 0;
	for (unsigned n = 1; n <= 12 && !first_fit; n++) {
		struct step_layout t = b;
		t.recompute_layers = n;
		struct step_estimate te;
		assert_int_equal(step_estimate(&m, &tight, 1024, &t, NULL, &te, msg, sizeof msg), LLMP_OK);
		first_fit = te.fits ? n : 0;
	}
	assert_int_equal(first_fit, 2);
	assert_int_equal(l.recompute_layers, 2);
	assert_true(f.fits);
	/* Only every layer fits: 0; nothing fits: the full estimate, not fitting. */
	b.recompute_layers = 11;
	tight.mem_bytes = (estimate(&m, &g, 1024, &b, st).peak_bytes + all.peak_bytes) / 2;
	b.vpp = 1, l = b;
	assert_int_equal(step_fewest_recompute(&m, &tight, 1024, &l, &f, msg, sizeof msg), LLMP_OK);
	assert_int_equal(l.recompute_layers, 0);
	assert_true(f.fits);
	tight.mem_bytes = all.peak_bytes / 2;
	assert_int_equal(step_fewest_recompute(&m, &tight, 1024, &l, &f, msg, sizeof msg), LLMP_OK);
	assert_false(f.fits);

	/* The chooser, left the recompute, keeps the fewest layers that fit beside full recompute
	 * where selective does not fit: on that GPU some candidate has recompute-layers=2. */
	m = model_of("gpt3-175b,gbs=1536");
	tight.mem_bytes = (one + two) / 2;
	struct chooser_result r;
	assert_int_equal(chooser_run(&m, &tight, 1024, &r, msg, sizeof msg), LLMP_OK);
	bool seen = false;
	for (size_t i = 0; i < r.n; i++) {
		const struct step_layout *c = &r.all[i].layout;
		if (c->tp == 8 && c->pp == 8 && c->cp == 1 && c->vpp == 1 && c->mbs == 1 &&
		    c->recompute_layers == 2)
			seen = true;
		assert_true(c->recompute_layers == 0 || c->recompute == MODEL_RECOMPUTE_FULL);
	}
	assert_true(seen);
	chooser_result_free(&r);

	/* What Megatron cannot run is refused with its reason. */
	struct step_layout bad = sel;
	bad.recompute_layers = 2;
	assert_int_equal(step_layout_check(&m, 1024, &bad, msg, sizeof msg), LLMP_ERR_LAYOUT);
	assert_non_null(strstr(msg, "it needs recompute=full"));
}

/* Llama 3 405B cannot fit 8 A100s of 40 GiB: 406e9 x 2 bytes of weights alone is 95 GiB a GPU. */
static void auto_says_when_nothing_fits(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX], why[256];
	struct model_desc m = model_of("llama3-405b,gbs=8");
	struct gpu_desc g = gpu_of("a100-40gb");
	struct chooser_result r;
	assert_int_equal(chooser_run(&m, &g, 8, &r, msg, sizeof msg), LLMP_OK);
	assert_int_equal(r.fitting, 0);
	assert_true(r.n > 0);
	assert_false(r.all[0].est.fits);
	assert_true(r.all[0].est.peak_bytes > 406e9 * 2 / 8);
	chooser_why_lost(&r.all[0], &r.all[0], &g, why, sizeof why);
	assert_non_null(strstr(why, "memory:"));
	chooser_result_free(&r);
}

/*
 * dp's traffic: one micro-batch hides it with overlap-grad=1 (Megatron-LM's
 * --overlap-grad-reduce), none with 0; without the distributed optimizer the
 * gradient buffer is all-reduced (4 + 4 bytes a parameter with fp32
 * gradients, 2 + 2 with bf16) where the distributed optimizer reduce-scatters
 * it and gathers bf16 parameters (4 + 2, 2 + 2).
 */
static void dp_overlap_and_the_plain_all_reduce(void **state)
{
	(void)state;
	struct gpu_desc g = gpu_of("h100,net=2");
	struct step_layout l = {
		.tp = 1, .pp = 1, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_FULL
	};
	struct model_desc on = model_of("llama3-8b,gbs=1024"),
			  off = model_of("llama3-8b,gbs=1024,overlap-grad=0");
	struct model_desc plain = model_of("llama3-8b,gbs=1024,overlap-grad=0,zero=0");
	struct model_desc off2 = model_of("llama3-8b,gbs=1024,overlap-grad=0,grad=2");
	struct model_desc plain2 = model_of("llama3-8b,gbs=1024,overlap-grad=0,zero=0,grad=2");
	assert_true(on.overlap_grad && !off.overlap_grad);
	struct step_layout a = l, b = l, c = l, d = l, e = l;
	struct step_estimate eon = estimate(&on, &g, 128, &a, NULL), eoff = estimate(&off, &g, 128, &b, NULL),
			     eplain = estimate(&plain, &g, 128, &c, NULL),
			     eoff2 = estimate(&off2, &g, 128, &d, NULL),
			     eplain2 = estimate(&plain2, &g, 128, &e, NULL);
	double micro = 1024 / 128, cover = eon.compute_s / micro;
	assert_true(eoff.net_s[3] > cover);
	assert_near(eoff.net_s[3] - eon.net_s[3], cover, 1e-9);
	assert_near(eplain.net_s[3] / eoff.net_s[3], (4.0 + 4.0) / (4.0 + 2.0), 1e-12);
	assert_near(eplain2.net_s[3] / eoff2.net_s[3], 1.0, 1e-12);
	assert_near(eoff2.net_s[3] / eoff.net_s[3], (2.0 + 2.0) / (4.0 + 2.0), 1e-12);
	assert_near(eoff.compute_s, eon.compute_s, 1e-12);

	/* overlap-param=0 (--overlap-grad-reduce without --overlap-param-gather): the fp32
	 * reduce-scatter, 4 of the 6 bytes, behind one micro-batch, the bf16 gather exposed. */
	struct model_desc rs_only = model_of("llama3-8b,gbs=1024,overlap-param=0");
	struct step_layout f = l;
	struct step_estimate ers = estimate(&rs_only, &g, 128, &f, NULL);
	double raw = eoff.net_s[3];
	assert_true(raw * 4 / 6 > cover);
	assert_near(ers.net_s[3], raw * 4 / 6 - cover + raw * 2 / 6, 1e-9);
	/* the gather alone depends on it: without the distributed optimizer there is none */
	struct model_desc plain_rs = model_of("llama3-8b,gbs=1024,overlap-param=0,zero=0");
	struct model_desc plain_on = model_of("llama3-8b,gbs=1024,zero=0");
	struct step_layout p1 = l, p2 = l;
	assert_near(estimate(&plain_rs, &g, 128, &p1, NULL).net_s[3],
		    estimate(&plain_on, &g, 128, &p2, NULL).net_s[3], 1e-15);
}

/*
 * zero=auto: the candidates of three searches, one for each of zero=1, 2 and 3 (2 and 3
 * at pp 1 only, under Megatron), each keeping its own estimate. Two 3.2 B-parameter
 * layers on GPUs without NVLink (tp 1), so that sharding beats the stages pp can add:
 * on a GPU between the least memory a zero=3 layout needs and the least any zero=1 or 2
 * layout needs, only zero=3 fits, and a zero=3 layout is chosen.
 */
static void auto_chooses_the_sharding(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX], text[128];
	struct gpu_desc g = gpu_of("h100,domain=1");
	const char *base = "layers=2,hidden=16384,heads=128,seq=1024,vocab=32000,gbs=64,recompute=full";
	double least[4] = { 0 };
	size_t n[4] = { 0 };
	struct chooser_result one[4];
	for (unsigned z = 1; z <= 3; z++) {
		snprintf(text, sizeof text, "%s,zero=%u", base, z);
		struct model_desc m = model_of(text);
		assert_int_equal(chooser_run(&m, &g, 64, &one[z], msg, sizeof msg), LLMP_OK);
		n[z] = one[z].n;
		least[z] = one[z].all[0].est.peak_bytes;
		for (size_t i = 0; i < one[z].n; i++) {
			assert_int_equal(one[z].all[i].zero, z);
			if (one[z].all[i].est.peak_bytes < least[z])
				least[z] = one[z].all[i].est.peak_bytes;
			if (z >= 2)
				assert_int_equal(one[z].all[i].layout.pp, 1);
		}
	}
	assert_true(n[1] > n[2] && n[2] == n[3] && n[3] > 0);
	assert_true(least[3] < least[2] && least[2] < least[1]);

	snprintf(text, sizeof text, "%s,zero=auto", base);
	struct model_desc m = model_of(text);
	assert_int_equal(m.zero, MODEL_ZERO_AUTO);
	struct chooser_result r;
	assert_int_equal(chooser_run(&m, &g, 64, &r, msg, sizeof msg), LLMP_OK);
	assert_int_equal(r.n, n[1] + n[2] + n[3]);
	for (size_t i = 0; i < r.n; i++) { /* each candidate as its own search scored it */
		const struct chooser_candidate *c = &r.all[i];
		bool found = false;
		for (size_t j = 0; j < one[c->zero].n && !found; j++) {
			const struct chooser_candidate *d = &one[c->zero].all[j];
			found = !memcmp(&c->layout, &d->layout, sizeof c->layout) &&
				c->est.step_s == d->est.step_s && c->est.peak_bytes == d->est.peak_bytes;
		}
		if (!found)
			fail_msg("candidate %zu (zero=%u) is in no search of its zero", i, c->zero);
	}
	chooser_result_free(&r);

	g.mem_bytes = (least[3] + least[2]) / 2;
	assert_int_equal(chooser_run(&m, &g, 64, &r, msg, sizeof msg), LLMP_OK);
	assert_true(r.fitting > 0);
	for (size_t i = 0; i < r.fitting; i++)
		assert_int_equal(r.all[i].zero, 3);
	chooser_result_free(&r);
	for (unsigned z = 1; z <= 3; z++)
		chooser_result_free(&one[z]);

	/* a written layout cannot say zero=auto: the sharding is chosen with the layout */
	struct step_layout l = { .tp = 1, .pp = 1, .cp = 1, .ep = 1, .mbs = 1 };
	assert_int_equal(step_layout_check(&m, 64, &l, msg, sizeof msg), LLMP_ERR_LAYOUT);
	assert_non_null(strstr(msg, "zero=auto: llmp chooses the sharding with the layout"));
}

/*
 * zero=2 and 3 (Megatron-FSDP's optim_grads and optim_grads_params): from
 * zero=1's bytes of the same layout, the gradients become the shard and
 * whole buckets up to 1e9 elements; the parameters (zero=3) the layers'
 * shard, the embedding and output layer whole, and the layers gathered up
 * to 5e8 elements and one layer. On a slow network the dp traffic goes
 * once a micro-batch, each behind that micro-batch's compute.
 */
static void zero_shards_gradients_and_parameters(void **state)
{
	(void)state;
	struct gpu_desc g = gpu_of("h100");
	struct step_layout l = {
		.tp = 1, .pp = 1, .cp = 1, .ep = 1, .mbs = 1, .recompute = MODEL_RECOMPUTE_FULL
	};
	struct step_stage s1[1], s2[1], s3[1];
	const char *base = "llama3-8b,gbs=1024";
	char text[128];
	struct model_desc m1 = model_of(base);
	snprintf(text, sizeof text, "%s,zero=2", base);
	struct model_desc m2 = model_of(text);
	snprintf(text, sizeof text, "%s,zero=3", base);
	struct model_desc m3 = model_of(text);
	struct step_layout l1 = l, l2 = l, l3 = l;
	estimate(&m1, &g, 128, &l1, s1);
	estimate(&m2, &g, 128, &l2, s2);
	estimate(&m3, &g, 128, &l3, s3);
	double p = s1[0].weights / 2; /* bf16: this rank's parameters, all of them */
	double outside = 2 * 128256.0 * 4096, layers = p - outside; /* untied embedding and output */
	assert_near(p, model_desc_params(&m1), 1e-9);               /* tp 1, pp 1: the whole model */
	assert_near(s1[0].grads, 4 * p, 1e-12);
	assert_near(s2[0].grads, 4 * (p / 128 + 1e9), 1e-12); /* 8 B > 1e9: the live buckets' bound */
	assert_near(s2[0].weights, s1[0].weights, 1e-12);
	assert_near(s3[0].weights, 2 * (layers / 128 + outside + 5e8 + layers / 32), 1e-12);
	assert_near(s3[0].grads, s2[0].grads, 1e-12);
	assert_near(s2[0].optimizer, s1[0].optimizer, 1e-12); /* sharded from zero=1 on */
	assert_true(m2.zero >= 1 && m3.zero >= 1);            /* the distributed optimizer with them */

	/* PyTorch's FSDP2 (engine=torch): a unit a layer, two of them live (the one computing
	 * and the one prefetched, or reduce-scattering), not 1e9-element buckets; no bf16 shard
	 * under zero=3 (its shard is the fp32 master, the optimizer's), the embedding resharded,
	 * the output layer kept gathered. Llama 3 8B's layer: 218 M parameters. */
	snprintf(text, sizeof text, "%s,zero=2,engine=torch", base);
	struct model_desc f2 = model_of(text);
	snprintf(text, sizeof text, "%s,zero=3,engine=torch", base);
	struct model_desc f3 = model_of(text);
	struct step_layout lf2 = l, lf3 = l;
	estimate(&f2, &g, 128, &lf2, s2);
	estimate(&f3, &g, 128, &lf3, s3);
	double unit = layers / 32;
	assert_near(unit, 2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336 + 2 * 4096, 1e-12);
	assert_near(s2[0].grads, 4 * (p / 128 + 2 * unit), 1e-12);
	assert_near(s2[0].weights, s1[0].weights, 1e-12);
	assert_near(s3[0].weights, 2 * (outside / 2 + 2 * unit), 1e-12);
	assert_near(s3[0].grads, s2[0].grads, 1e-12);
	assert_near(s3[0].optimizer, s1[0].optimizer, 1e-12);

	/* A small model: the buckets are the whole model, gathered whole. */
	struct model_desc t1 = model_of("layers=4,hidden=1024,heads=8,seq=1024,vocab=32000,gbs=64");
	struct model_desc t3 = model_of("layers=4,hidden=1024,heads=8,seq=1024,vocab=32000,gbs=64,zero=3");
	struct step_layout a = l, b = l;
	estimate(&t1, &g, 8, &a, s1);
	estimate(&t3, &g, 8, &b, s3);
	p = s1[0].weights / 2, outside = 2 * 32000.0 * 1024, layers = p - outside;
	assert_near(s3[0].grads, 4 * (p / 8 + p), 1e-12);
	assert_near(s3[0].weights, 2 * (layers / 8 + outside + layers), 1e-12);

	/* Time, on a network slow enough that dp shows: zero=1 exposes raw - one micro-batch;
	 * zero=2 a reduce-scatter (4 of raw's 6 bytes) a micro-batch and the gather once; zero=3
	 * a reduce-scatter and two gathers a micro-batch. */
	g = gpu_of("h100,net=2");
	struct step_estimate e1 = estimate(&m1, &g, 128, &l1, NULL), e2 = estimate(&m2, &g, 128, &l2, NULL),
			     e3 = estimate(&m3, &g, 128, &l3, NULL);
	double micro = 1024 / 128, cover = e1.compute_s / micro, raw = e1.net_s[3] + cover;
	double rs = raw * 4 / 6, ag = raw * 2 / 6;
	assert_true(rs > cover);
	assert_near(e2.net_s[3], micro * (rs - cover) + (ag > cover ? ag - cover : 0), 1e-9);
	assert_near(e3.net_s[3], micro * (rs + 2 * ag - cover), 1e-9);
	assert_true(e1.step_s < e2.step_s && e2.step_s < e3.step_s);
	assert_near(e3.compute_s, e1.compute_s, 1e-12); /* sharding moves bytes, not FLOPs */
}

static void descriptions_parse_and_name_the_culprit(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];
	struct model_desc m = model_of("llama3-8b,seq=4096,gbs=128");
	assert_int_equal((int)m.seq, 4096);
	assert_int_equal((int)m.gbs, 128);
	assert_int_equal((int)m.kv_heads, 8);
	/* Llama 3 8B: 8.03 B parameters (Meta's model card). */
	assert_near(model_desc_params(&m), 8.03e9, 0.002);
	/* GPT-3 175B: 174.6 B with its tied 51,200-token embedding. */
	m = model_of("gpt3-175b");
	assert_near(model_desc_params(&m), 174.6e9, 0.002);
	m = model_of("layers=2,hidden=512,seq=128");
	assert_int_equal((int)m.heads, 4); /* hidden / 128 */
	assert_int_equal((int)m.ffn, 2048);
	m = model_of("layers=65536,hidden=512,seq=8,experts=65536,mbs=65536"); /* MODEL_COUNT_MAX itself */
	assert_int_equal((int)m.layers, 65536);

	struct {
		const char *text, *says;
	} bad[] = {
		{ "llama9", "'llama9' is neither a preset" },
		{ "layers=2,hidden=512,seq=128,layrs=3", "unknown key 'layrs'" },
		{ "layers=2,hidden=512", "seq= is missing" },
		{ "layers=2,hidden=512,seq=0", "seq='0' is not a positive integer" },
		{ "layers=2,hidden=512,seq=8,seq=9", "seq given twice" },
		{ "layers=2,hidden=512,seq=8,heads=8,kv-heads=3", "kv-heads=3 does not divide heads=8" },
		{ "layers=2,hidden=512,seq=8,topk=2", "topk= needs experts=" },
		{ "layers=2,hidden=512,seq=8,heads=3", "heads=3 does not divide hidden=512" },
		{ "layers=2,hidden=512,seq=8,mlp=relu", "mlp='relu' is not one of gelu, swiglu" },
		{ "layers=2,hidden=512,seq=8,x\033[31m=1", "unknown key 'x?[31m'" },
		{ "/nonexistent/config.json", "/nonexistent/config.json: No such file" },
		{ "/tmp/", "--model /tmp/: not a regular file" },
		{ "layers=2,hidden=512,seq=8,zero=4", "zero='4' is not one of 0, 1, 2, 3, auto" },
		{ "layers=2,hidden=512,seq=8,recompute-layers=0",
		  "recompute-layers='0' is not one of a whole number of layers, 1 or more" },
		{ "layers=2,hidden=512,seq=8,recompute-layers=2,recompute=selective",
		  "recompute-layers=2 recomputes that many layers of each chunk in full: it needs recompute=full" },
		{ "layers=2,hidden=512,seq=8,recompute-layers=2x",
		  "recompute-layers='2x' is not one of a whole number of layers, 1 or more" },
		{ "layers=2,hidden=512,seq=8,offload-layers=1",
		  "offload-layers=1 is Megatron-Core's --cpu-offloading-num-layers, which refuses activation "
		  "recomputation: it needs recompute=none and engine=megatron" },
		{ "layers=2,hidden=512,seq=8,recompute=none,offload-layers=1,engine=torch",
		  "needs recompute=none and "
		  "engine=megatron" },
		{ "layers=2,hidden=512,seq=8,recompute=none,offload-layers=2",
		  "offload-layers=2: Megatron-Core offloads fewer layers than the model's 2" },
		{ "layers=2,hidden=512,seq=8,offload-layers=0",
		  "offload-layers='0' is not one of a whole number of layers, 1 or more" },
		{ "layers=2,hidden=512,seq=8,distopt=auto", "distopt='auto' is not one of 0, 1" },
		{ "layers=2,hidden=512,seq=8,distopt=1,zero=2", "distopt= and zero= set one thing" },
		{ "layers=2,hidden=512,seq=8,zero=2,grad=6", "grad=6 (16-bit gradients and an fp32" },
		{ "layers=2,hidden=512,seq=8,engine=fsdp",
		  "engine='fsdp' is not one of megatron, deepspeed, torch" },
		{ "layers=2,hidden=512,seq=8,recompute=selective,recompute-moe-act=1",
		  "recompute-moe-act=1 recomputes the routed experts' activation" },
		{ "layers=2,hidden=512,seq=8,experts=4,recompute-moe-act=1",
		  "it needs experts=, recompute=selective" },
		/* counts past what a layout holds (found by tests/fuzz/fuzz_model.c) */
		{ "layers=65537,hidden=512,seq=8", "layers=65537 is more than llmp models (65536)" },
		{ "layers=2,hidden=512,seq=8,experts=1099511627776", "experts=1099511627776 is more than" },
		{ "layers=2,hidden=512,seq=8,mbs=70000", "mbs=70000 is more than llmp models (65536)" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct model_desc x;
		assert_int_equal(model_desc_parse(bad[i].text, &x, msg, sizeof msg), LLMP_ERR_ARG);
		if (!strstr(msg, bad[i].says))
			fail_msg("'%s': '%s' does not say '%s'", bad[i].text, msg, bad[i].says);
	}

	struct gpu_desc g = gpu_of("h100");
	assert_near(g.mem_bytes, 79.6 * 1024 * 1024 * 1024, 1e-12);
	assert_near(g.bf16_flops, 989e12, 1e-12);
	g = gpu_of("a100-80gb");
	assert_near(g.mem_bytes, 80.0 * 1024 * 1024 * 1024, 1e-12);
	g = gpu_of("h100,net=25");
	assert_near(g.net_gbps, 25, 1e-12);
	assert_near(g.hbm_gbps, 3350, 1e-12);
	g = gpu_of("mem=24,tflops=165");
	assert_near(g.mem_bytes, 24.0 * 1024 * 1024 * 1024, 1e-12);
	assert_near(g.hbm_gbps, 165e12 / 200 / 1e9, 1e-12); /* unset: 200 FLOP a byte */
	struct gpu_desc y;
	assert_int_equal(gpu_desc_parse("h900", &y, msg, sizeof msg), LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "unknown GPU 'h900'"));
	assert_int_equal(gpu_desc_parse("mem=24", &y, msg, sizeof msg), LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "tflops= is missing"));
	assert_int_equal(gpu_desc_parse("mem=-1,tflops=3", &y, msg, sizeof msg), LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "mem='-1'"));
	assert_int_equal(gpu_desc_parse("h100,hbm=0", &y, msg, sizeof msg), LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "hbm='0'"));
	assert_int_equal(gpu_desc_parse("h100,layer-ms=-1", &y, msg, sizeof msg), LLMP_ERR_ARG);
	assert_non_null(strstr(msg, "layer-ms='-1'"));
}

/* A Hugging Face config.json, as Mixtral's is written, through the project's JSON reader. */
static void reads_a_hugging_face_config(void **state)
{
	(void)state;
	char path[] = "/tmp/llmp-test-config-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *json =
		"{\n \"architectures\": [\"MixtralForCausalLM\"],\n \"hidden_act\": \"silu\",\n"
		" \"hidden_size\": 4096,\n \"intermediate_size\": 14336,\n"
		" \"max_position_embeddings\": 32768,\n \"num_attention_heads\": 32,\n"
		" \"num_experts_per_tok\": 2,\n \"num_hidden_layers\": 32,\n"
		" \"num_key_value_heads\": 8,\n \"num_local_experts\": 8,\n"
		" \"rms_norm_eps\": 1e-05,\n \"tie_word_embeddings\": false,\n \"vocab_size\": 32000,\n"
		" \"attention_dropout\": 0.0\n}\n";
	assert_int_equal(write(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
	char text[128];
	snprintf(text, sizeof text, "%s,gbs=256", path);
	struct model_desc f = model_of(text), p = model_of("mixtral-8x7b");
	unlink(path);
	assert_int_equal((int)f.layers, 32);
	assert_int_equal((int)f.experts, 8);
	assert_int_equal((int)f.topk, 2);
	assert_int_equal((int)f.seq, 8192); /* 32768 capped: seq= says otherwise */
	assert_true(f.gated);
	assert_false(f.tied);
	assert_false(f.dropout); /* attention_dropout 0.0, as the preset */
	assert_false(p.dropout);
	/* The same parameters as the preset that cites that file: 46.7 B. */
	assert_near(model_desc_params(&f), model_desc_params(&p), 1e-12);
	assert_near(model_desc_params(&p), 46.7e9, 0.002);

	char msg[LLMP_MSG_MAX], path2[] = "/tmp/llmp-test-config-XXXXXX";
	fd = mkstemp(path2);
	assert_true(fd >= 0);
	const char *broken = "{\n \"num_hidden_layers\": 3.5\n}\n";
	assert_int_equal(write(fd, broken, strlen(broken)), (ssize_t)strlen(broken));
	close(fd);
	struct model_desc x;
	assert_int_equal(model_desc_parse(path2, &x, msg, sizeof msg), LLMP_ERR_ARG);
	unlink(path2);
	assert_non_null(strstr(msg, "line 2: num_hidden_layers is not a whole number"));

	/* A FIFO is refused, not waited on (a reader would block until a writer came). */
	char fifo[] = "/tmp/llmp-test-fifo-XXXXXX";
	fd = mkstemp(fifo);
	assert_true(fd >= 0);
	close(fd);
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(model_desc_parse(fifo, &x, msg, sizeof msg), LLMP_ERR_ARG);
	unlink(fifo);
	assert_non_null(strstr(msg, "not a regular file"));

	/* Dropout: GPT-2's names, above 0 in any; no name at all keeps Megatron's default, on. */
	static const struct {
		const char *json;
		bool dropout;
	} drops[] = {
		{ "{\"n_layer\": 12, \"n_embd\": 768, \"n_head\": 12, \"resid_pdrop\": 0.0, \"attn_pdrop\": 0.1}",
		  true },
		{ "{\"n_layer\": 12, \"n_embd\": 768, \"n_head\": 12, \"resid_pdrop\": 0, \"embd_pdrop\": 0.0}",
		  false },
		{ "{\"n_layer\": 12, \"n_embd\": 768, \"n_head\": 12}", true },
	};
	for (size_t i = 0; i < sizeof drops / sizeof drops[0]; i++) {
		char path3[] = "/tmp/llmp-test-config-XXXXXX";
		fd = mkstemp(path3);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, drops[i].json, strlen(drops[i].json)),
				 (ssize_t)strlen(drops[i].json));
		close(fd);
		struct model_desc d = model_of(path3);
		unlink(path3);
		if (d.dropout != drops[i].dropout)
			fail_msg("%s: dropout %d, want %d", drops[i].json, d.dropout, drops[i].dropout);
	}
}

/*
 * A step layout as a layout spec and back: the sizes given, dp only when
 * asked, vpp only above 1 (a base's vpp dropped), the base's order kept.
 */
static void a_layout_is_a_spec_and_back(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX] = "", text[LLMP_SPEC_MAX_LEN];
	struct model_desc m = model_of("layers=8,hidden=1024,heads=8,seq=1024,vocab=8,mbs=2");
	struct step_layout l = { .tp = 2, .pp = 2, .cp = 1, .ep = 1, .etp = 2, .dp = 4, .vpp = 2, .mbs = 2 };
	llmp_spec s, base;
	step_layout_spec(&l, NULL, false, &s);
	llmp_spec_format(&s, text, sizeof text);
	assert_string_equal(text, "tp=2,pp=2,cp=1,ep=1,etp=2,vpp=2");
	struct step_layout back = step_layout_of_spec(&s, &m);
	assert_true(back.tp == 2 && back.pp == 2 && back.vpp == 2 && back.dp == 0 && back.mbs == 2);
	assert_int_equal(llmp_spec_parse("order=tp-cp-dp-ep-pp,vpp=3,pp=3", &base, msg, sizeof msg), LLMP_OK);
	l.vpp = 1;
	step_layout_spec(&l, &base, true, &s);
	llmp_spec_format(&s, text, sizeof text);
	assert_string_equal(text, "tp=2,pp=2,cp=1,ep=1,etp=2,dp=4,order=tp-cp-dp-ep-pp");
	assert_int_equal(llmp_spec_check(&s, msg, sizeof msg), LLMP_OK);
	back = step_layout_of_spec(&s, &m);
	assert_true(back.dp == 4 && back.vpp == 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(weights_and_optimizer_are_megatrons_bytes_per_parameter),
		cmocka_unit_test(activations_are_korthikantis_34sbh_over_t),
		cmocka_unit_test(flops_are_narayanans_count_with_causal_attention),
		cmocka_unit_test(fp8_runs_linear_gemms_twice_as_fast),
		cmocka_unit_test(fp8_keeps_linear_inputs_in_one_byte),
		cmocka_unit_test(offload_layers_leave_the_gpu),
		cmocka_unit_test(elementwise_bytes_and_per_layer_overhead),
		cmocka_unit_test(deepspeed_engine_exposes_dp_and_never_interleaves),
		cmocka_unit_test(a_measured_step_gives_back_its_efficiency),
		cmocka_unit_test(two_measured_steps_give_back_the_overhead),
		cmocka_unit_test(three_measured_steps_give_back_the_link),
		cmocka_unit_test(uneven_first_and_last_stages),
		cmocka_unit_test(layouts_break_megatrons_rules_with_a_reason),
		cmocka_unit_test(experts_shard_over_ep_and_etp),
		cmocka_unit_test(auto_enumerates_every_valid_layout),
		cmocka_unit_test(auto_prefers_fewer_stages_on_a_tie),
		cmocka_unit_test(auto_says_when_nothing_fits),
		cmocka_unit_test(block_recompute_keeps_the_other_layers),
		cmocka_unit_test(moe_act_recompute_drops_the_experts_activation_output),
		cmocka_unit_test(zero_shards_gradients_and_parameters),
		cmocka_unit_test(auto_chooses_the_sharding),
		cmocka_unit_test(dp_overlap_and_the_plain_all_reduce),
		cmocka_unit_test(descriptions_parse_and_name_the_culprit),
		cmocka_unit_test(reads_a_hugging_face_config),
		cmocka_unit_test(a_layout_is_a_spec_and_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
