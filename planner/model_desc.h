/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * model_desc.h - what a user says about the model to train, for the step
 * model (step_model.h) and the chooser (auto_layout.h): `--model` keys, a
 * named preset or a Hugging Face config.json. The GPU it trains on is the
 * machine model's (topology/gpu_desc.h). Not installed.
 *
 * A description is numbers only; nothing here knows a layout.
 */
#ifndef LLMP_MODEL_DESC_H
#define LLMP_MODEL_DESC_H

#include <stdbool.h>
#include <stddef.h>

#include <llmp/llmp_status.h>

/*
 * The allocator's and temporaries' share of the modelled bytes: fitted by
 * bench/bench_validate.c on a BigScience run whose memory nvidia-smi measured
 * (bp-181b-t4p6-m2: 0.155); what a job reserves, not only what it allocates.
 */
#define MODEL_OVERHEAD_DEFAULT 0.15

/* The most layers, experts or micro-batch sequences a description may give. */
#define MODEL_COUNT_MAX 65536u

enum model_recompute {
	MODEL_RECOMPUTE_AUTO,
	MODEL_RECOMPUTE_NONE,
	MODEL_RECOMPUTE_SELECTIVE,
	MODEL_RECOMPUTE_FULL
};

/* zero=auto: --parallel auto tries 1, 2 and 3 (2 and 3 where the engine allows them). */
#define MODEL_ZERO_AUTO 4u

/* The pipeline engine that trains the model. */
enum model_engine {
	MODEL_ENGINE_MEGATRON,  /* Megatron-Core: interleaving, dp overlapped with compute */
	MODEL_ENGINE_DEEPSPEED, /* DeepSpeed's PipelineEngine: 1F1B only, dp after the last micro-batch */
	MODEL_ENGINE_TORCH,     /* a PyTorch-native stack (FSDP2 with torch.distributed.pipelining, as
				 * TorchTitan; Meta's for Llama 3): timed as Megatron-Core, FSDP with
				 * pp allowed, no Megatron flags */
};

/* The engine's name in the --model text ("megatron", "deepspeed", "torch"). */
const char *model_engine_name(enum model_engine e);

struct model_desc {
	char name[48];
	double layers, hidden, ffn, heads, kv_heads, vocab, seq;
	double experts, topk; /* experts 0: dense */
	double moe_ffn;       /* width of one routed expert's MLP (default ffn) */
	double shared_ffn;    /* width of the shared experts' MLP, 0: none */
	double dense_layers;  /* the first layers keep a dense MLP (DeepSeek-V3: 3) */
	double gbs, mbs;      /* sequences; gbs 0: not given */
	bool gated;           /* SwiGLU (three matrices) rather than GeLU (two) */
	bool tied;            /* output layer shares the embedding */
	/* What dp x cp shards: 0 nothing, 1 optimizer states (Megatron's distributed optimizer),
	 * 2 and gradients, 3 and parameters (Megatron-FSDP's optim_grads / optim_grads_params,
	 * DeepSpeed's ZeRO stages); MODEL_ZERO_AUTO: the chooser's to pick (auto_layout.h) */
	unsigned zero;
	bool sp;    /* sequence parallelism with tp (Megatron-Core's default with tp > 1) */
	bool flash; /* flash attention: no s x s scores kept */
	/* FP8 training as NVIDIA's recipes run it (Transformer Engine, current or delayed
	 * scaling, bf16 master weights): the layers' linear GEMMs in FP8, the attention core,
	 * the output layer and the elementwise kernels in bf16 (step_model.h) */
	bool fp8;
	bool dropout;       /* the layers drop out (Megatron's --hidden-dropout and --attention-dropout
			     * above 0, its default 0.1): 1-byte masks kept; Llama-style models have none */
	bool overlap_grad;  /* dp's reduction behind the backward (Megatron-LM's --overlap-grad-reduce,
			    * 2023 on; with the distributed optimizer --overlap-param-gather too) */
	bool overlap_param; /* with overlap_grad and zero=1: the parameters' all-gather behind the
			     * forward too (--overlap-param-gather); 0: after the optimizer step */
	double grad_bytes; /* gradient buffers a parameter: 4 (fp32, Megatron's default), 2 (bf16), 6 (both) */
	double overhead;   /* allocator and temporaries, a share of the modelled bytes (0.15) */
	bool overhead_given;            /* overhead= was said: it wins over a site's alloc= (gpu_desc.h) */
	enum model_recompute recompute; /* AUTO: the chooser tries selective, then full */
	/* With FULL: the layers of each model chunk recomputed, the first ones (Megatron's
	 * --recompute-method block); 0: every layer (--recompute-method uniform) */
	unsigned recompute_layers;
	/* With SELECTIVE on an MoE model: the routed experts' activation recomputed too
	 * (Megatron's --recompute-modules moe_act) */
	bool recompute_moe_act;
	/* The activations of the first N layers copied to host memory during the forward and
	 * back for the backward (Megatron-Core's --cpu-offloading-num-layers N): with
	 * recompute=none and pp=1 only, as Megatron-Core allows it; 0: none */
	unsigned offload_layers;
	enum model_engine engine;
};

/*
 * "--model" text: a preset name ("llama3-70b"), a path to a Hugging Face
 * config.json (anything containing '/' or ending in .json), or keys
 * layers=,hidden=,seq=[,ffn=,heads=,kv-heads=,vocab=,experts=,topk=,moe-ffn=,
 * shared-ffn=,dense-layers=,gbs=,mbs=,mlp=gelu|swiglu,tied=0|1,distopt=0|1 or zero=0-3|auto,
 * sp=0|1,flash=0|1,dropout=0|1,overlap-grad=0|1,overlap-param=0|1,engine=megatron|deepspeed|torch,grad=2|4|6,overhead=F,recompute=none|selective|full,
 * recompute-layers=N,recompute-moe-act=0|1,offload-layers=N]. A preset or a file may be followed by
 * keys that replace its values: "llama3-70b,gbs=512,seq=4096".
 */
llmp_status model_desc_parse(const char *text, struct model_desc *m, char *msg, size_t len);

/* The presets' names, comma separated, for messages and --help. */
const char *model_desc_preset_names(void);

/* Parameters of the whole model (embedding and output layer included). */
double model_desc_params(const struct model_desc *m);

#endif /* LLMP_MODEL_DESC_H */
