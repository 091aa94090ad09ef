/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * step_model.h - one training step of a layout, modelled: the memory of a
 * rank on each pipeline stage and the time of the step. Not installed.
 *
 * Memory (bytes per rank; doc/step-model.md has every term):
 *   weights 2 B/param (bf16), gradients 4 B/param (fp32 main grads),
 *   optimizer 12 B/param (fp32 master + Adam m, v), divided by dp x cp
 *   (by expert-dp for experts) with the distributed optimizer: Megatron's
 *   18 or 6 + 12/d bytes per parameter;
 *   activations per layer after Korthikanti et al. 2022 with sequence
 *   parallelism and flash attention: s b (14h + 4 h_kv + c ffn) / t bytes
 *   with s = seq / cp (c = 4 for GeLU, 6 for SwiGLU: 34 s b h / t for a
 *   GPT layer; 12h without dropout's masks), 2 s b h / t with full
 *   recompute (on a share of the layers with recompute_layers); times the
 *   micro-batches in flight on that stage (1F1B: pp - stage; interleaved: Megatron's
 *   warm-up count of chunks); the embedding on the first stage, the output
 *   layer and its fp32 logits on the last;
 *   an allowance for the CUDA context, NCCL buffers and the allocator:
 *   STEP_ALLOWANCE_FIXED + the model's overhead= share of the rest
 *   (MODEL_OVERHEAD_DEFAULT, fitted, unless given).
 * Time: model FLOPs (Megatron's count: 6 per parameter-token plus causal
 *   attention; full recompute runs the layers' forward again, not the
 *   output layer's) at the GPU's bf16 rate times its efficiency and a
 *   penalty for small matrices (STEP_GEMM_*), plus the elementwise
 *   kernels' bytes (norms, dropout, activation, softmax) at its HBM
 *   bandwidth (STEP_HBM_EFFICIENCY), and the framework's time per layer
 *   and micro-batch (the GPU text's layer-ms=, 0 unless given), on the
 *   slowest stage; the 1F1B bubble (pp - 1) / vpp
 *   micro-batch times; the network bytes of cost.c per dimension at
 *   NVLink rate inside the NVLink domain, the network's across it. tp, ep
 *   and pp traffic is exposed; cp overlaps the attention it feeds; dp's
 *   reduce-scatter and all-gather hide behind one micro-batch's compute
 *   (nothing under engine=deepspeed).
 */
#ifndef LLMP_STEP_MODEL_H
#define LLMP_STEP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_spec.h>
#include <llmp/llmp_status.h>
#include "cost.h"
#include "model_desc.h"
#include "topology/gpu_desc.h"

#define STEP_ALLOWANCE_FIXED (3.0 * 1024 * 1024 * 1024) /* CUDA context, cuBLAS, NCCL buffers */

/* The memory allowance's fixed part on g (its alloc-gib=, else STEP_ALLOWANCE_FIXED), and its
 * share of the modelled bytes for m on g (m's overhead= when said, else g's alloc=, else m's
 * default): what every stage adds, and what llmp calibrate starts from. */
double step_alloc_fixed(const struct gpu_desc *g);
double step_alloc_share(const struct model_desc *m, const struct gpu_desc *g);

#define STEP_GEMM_TOKENS 256.0  /* rows at which a GEMM reaches half its large-size rate */
#define STEP_GEMM_WIDTH 64.0    /* columns (hidden / tp) likewise */
#define STEP_HBM_EFFICIENCY 0.8 /* the share of HBM bandwidth a streaming elementwise kernel reaches */
#define STEP_LOGIT_BYTES 20.0   /* per logit, forward and backward: bf16 out, fp32 softmax, its gradient */
/*
 * fp8=1: the dense FP8 tensor-core rate over the bf16 one, on Hopper (H100 SXM:
 * 1,979 against 989 TFLOP/s, NVIDIA's H100 datasheet), Ada and Blackwell alike; the
 * layers' linear GEMMs (QKV, projection, MLP, experts) run at it. Transformer
 * Engine keeps an FP8 copy of each such weight beside the bf16 one
 * (transformer_engine/pytorch/module/linear.py caches the cast weight across
 * micro-batches): STEP_FP8_WEIGHT_BYTES a parameter of the layers, unless zero=3
 * gathers them per use. The inputs the linear GEMMs read are kept for the
 * backward in FP8, one byte an element (step_model.c, layer_shape); the other
 * activations in bf16.
 */
#define STEP_FP8_SPEEDUP 2.0
#define STEP_FP8_WEIGHT_BYTES 1.0

struct step_layout {
	unsigned tp, pp, cp, ep, etp, dp, vpp, mbs; /* vpp 1: plain 1F1B; dp 0: derived */
	enum model_recompute recompute;             /* NONE, SELECTIVE or FULL */
	/* With FULL: the first layers of each model chunk recomputed (Megatron's
	 * --recompute-method block --recompute-num-layers N), the others keeping
	 * all their activations; 0: every layer */
	unsigned recompute_layers;
	/* With SELECTIVE on an MoE model: the routed experts' activation function recomputed
	 * in the backward, its output not kept (Megatron's --recompute-modules moe_act) */
	bool moe_act;
	/* The layers of each of the pp stages, borrowed (hetero.h chooses them on
	 * mixed GPUs); NULL: even, with Megatron's uneven first and last stages
	 * when pp does not divide the layers. */
	const unsigned *stage_layers;
};

struct step_stage {
	unsigned first_layer, layers;
	double weights, grads, optimizer, activations, allowance, total; /* bytes per rank */
};

enum step_term { STEP_WEIGHTS, STEP_GRADS, STEP_OPTIMIZER, STEP_ACTIVATIONS, STEP_ALLOWANCE };
const char *step_term_name(enum step_term t);

struct step_estimate {
	double peak_bytes; /* the largest stage's rank */
	unsigned peak_stage;
	enum step_term peak_term; /* the largest term on that stage */
	bool fits;                /* peak_bytes <= the GPU's memory */
	double microbatches;      /* per step and pipeline: gbs / (mbs x dp) */
	double flops;             /* model FLOPs of the step, all ranks */
	double compute_s;         /* micro-batches x the slowest stage's micro-batch */
	double elementwise_s;     /* the part of compute_s in memory-bound elementwise kernels */
	double overhead_s;        /* the part of compute_s that is the GPU's per-layer overhead */
	double bubble_s;          /* (pp - 1) / vpp slowest micro-batches */
	double net_s[5];          /* exposed seconds: tp, cp, ep, dp, pp */
	double step_s;            /* compute + bubble + exposed network */
	double mfu;               /* flops / (step x world x peak) */
};

/*
 * Check l against Megatron's rules for this model and world (heads and
 * kv-heads divisible by tp, ep dividing experts, seq by 2 cp, layers by
 * pp x vpp when interleaved, gbs by mbs x dp, ...); fills l->dp. The
 * message names the rule and its numbers.
 */
llmp_status step_layout_check(const struct model_desc *m, uint32_t world, struct step_layout *l, char *msg,
			      size_t len);

/*
 * The estimate of a checked layout; stages (pp entries, or NULL) receives
 * each stage's memory.
 */
llmp_status step_estimate(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			  const struct step_layout *l, struct step_stage *stages, struct step_estimate *out,
			  char *msg, size_t len);

/*
 * The same with the network seconds of each dimension (tp, cp, ep, dp, pp,
 * before any overlap) given, e.g. by cost.c for a placement on a topology.
 */
llmp_status step_estimate_placed(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
				 const struct step_layout *l, const double network_s[5],
				 struct step_stage *stages, struct step_estimate *out, char *msg, size_t len);

/*
 * The same on a pipeline whose stages run on GPUs of different kinds:
 * stage_gpus holds l->pp descriptions, stage k's on stage_gpus[k] (the
 * weakest of its ranks'). Each stage fits against its own GPU's memory;
 * its time is at its own GPU's rate; without network_s, each dimension's
 * network at the slowest links among the stages' GPUs.
 */
llmp_status step_estimate_stages(const struct model_desc *m, const struct gpu_desc *stage_gpus,
				 uint32_t world, const struct step_layout *l, const double network_s[5],
				 struct step_stage *stages, struct step_estimate *out, char *msg, size_t len);

/*
 * The efficiency at which g makes the modelled step of the checked layout l
 * equal measured_s: a site's own stack, calibrated on one measured step
 * (`llmp plan --measured-step`). The step falls as the efficiency rises;
 * an error names the step at the bounds (STEP_EFF_MIN and 1) when the
 * measured one lies outside them.
 */
#define STEP_EFF_MIN 0.01
llmp_status step_fit_efficiency(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
				const struct step_layout *l, double measured_s, double *efficiency, char *msg,
				size_t len);

/*
 * The per-layer overhead (gpu_desc.layer_overhead_s) at which g, at its
 * efficiency, gives the checked layouts a and b (one layout at two
 * micro-batch sizes, a's the smaller) the ratio of their measured steps
 * a_s / b_s. The overhead is paid once a layer and micro-batch, so it
 * weighs on a, with more micro-batches; the efficiency scales both steps
 * alike. An error names the ratios at 0 and STEP_LAYER_OVERHEAD_MAX when
 * the measured one lies outside them.
 */
#define STEP_LAYER_OVERHEAD_MAX 0.1 /* seconds: 100 ms a layer and micro-batch */
llmp_status step_fit_layer_overhead(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
				    const struct step_layout *a, double a_s, const struct step_layout *b,
				    double b_s, double *overhead_s, char *msg, size_t len);

/*
 * The in-domain link rate (gpu_desc.nvlink_gbps) at which g gives the
 * checked layouts a and b (one layout at two tensor-parallel sizes, a's the
 * smaller, b's groups inside g's NVLink domain) the ratio of their measured
 * steps b_s / a_s. The tensor-parallel collectives are exposed, so a slower
 * link weighs on b, with more of them; the efficiency scales both alike.
 * An error names the ratios at the bounds when the measured one lies
 * outside them.
 */
#define STEP_LINK_MIN_GBPS 1.0
#define STEP_LINK_MAX_GBPS 10000.0
llmp_status step_fit_link(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			  const struct step_layout *a, double a_s, const struct step_layout *b, double b_s,
			  double *gbps, char *msg, size_t len);

/* What a site measured of one layout, to calibrate its GPU text on. */
struct step_measured {
	double step_s;        /* the layout's step */
	unsigned mbs2, tp2;   /* the same layout at another micro-batch size, tp size; 0: none */
	double mbs2_s, tp2_s; /* their steps */
};

/*
 * g calibrated on s (`llmp plan --measured-step S [--measured-step-mbs M=S2]
 * [--measured-step-tp T=S3]`): the per-layer overhead from the micro-batch
 * pair's ratio, the link rate from the tensor-parallel pair's, the
 * efficiency from the step, each fitted with the others' last values until
 * none moves. A second layout the model cannot take is named.
 */
llmp_status step_calibrate(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			   const struct step_layout *l, const struct step_measured *s, struct gpu_desc *out,
			   char *msg, size_t len);

/*
 * One stage alone, for a chooser of stage_layers (hetero.c): the seconds of
 * one micro-batch's forward and backward on stage k of a checked l, on GPU
 * g, and the stage's memory per rank.
 */
void step_stage_eval(const struct model_desc *m, const struct gpu_desc *g, const struct step_layout *l,
		     unsigned k, double *seconds, struct step_stage *st);

/* The layers of stage k: l->stage_layers when given, else Megatron's uneven first and last stages when pp does not divide them. */
void step_stage_layers(const struct model_desc *m, const struct step_layout *l, unsigned k, unsigned *first,
		       unsigned *count);

/*
 * The step layout of a --parallel spec (dp 0 when the spec leaves it to
 * the world), with the model's micro-batch and recompute; unchecked.
 */
struct step_layout step_layout_of_spec(const llmp_spec *s, const struct model_desc *m);

/*
 * The other way: l as a layout spec, its sizes, etp and vpp given (vpp
 * only when above 1), on base (NULL: llmp_spec_init's defaults), whose
 * order and other keys stay. With dp, l->dp is given too; without, dp is
 * left to the world.
 */
void step_layout_spec(const struct step_layout *l, const llmp_spec *base, bool dp, llmp_spec *spec);

/*
 * The share of stage k's layers that full recompute runs again: all of
 * them, or recompute_layers of each of its vpp chunks (the first ones,
 * as Megatron's block method takes them); 0 without full recompute.
 */
double step_recompute_share(const struct model_desc *m, const struct step_layout *l, unsigned k);

/*
 * The fewest layers a chunk of checked l (with FULL) may recompute and
 * still fit on g, found by halving: l->recompute_layers is set to it, 0
 * (every layer) when only that fits, and out is its estimate. Megatron's
 * block method keeps the other layers' activations, so fewer recomputed
 * layers are faster, and more of them fit in less memory.
 */
llmp_status step_fewest_recompute(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
				  struct step_layout *l, struct step_estimate *out, char *msg, size_t len);

/*
 * The halving itself, for a caller that scores layouts its own way: the
 * smallest n in 1..most - 1 for which fits(ctx, n) holds, fits being false
 * below some n and true from it on; most when no smaller one fits.
 */
unsigned step_fewest_layers(unsigned most, bool (*fits)(void *ctx, unsigned n), void *ctx);

/* The layers of the largest chunk of l: a stage's layers / vpp, the largest stage's. */
unsigned step_chunk_layers_max(const struct model_desc *m, const struct step_layout *l);

/* Format "tp=8,pp=4,cp=1,ep=1,etp=8,dp=2,vpp=1,mbs=1,recompute=selective"
 * (",recompute-layers=N" after recompute=full when N layers of a chunk are,
 * ",recompute-moe-act=1" after recompute=selective with moe_act). */
void step_layout_format(const struct step_layout *l, char *buf, size_t len);

/* The network cost model's view of m (planner/cost.h) at micro-batch mbs. */
struct plan_model step_topo_model(const struct model_desc *m, double mbs);

#endif /* LLMP_STEP_MODEL_H */
