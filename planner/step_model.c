/* SPDX-License-Identifier: BSD-3-Clause */
/* step_model.c - the memory and time of one training step of a layout (step_model.h). */
#define _POSIX_C_SOURCE 200809L
#include "step_model.h"

#include <stdio.h>
#include <string.h>

#include "cost.h"
#include "common/fail.h"
#include "plan_internal.h"

#define BYTES_WEIGHT 2.0     /* bf16 */
#define BYTES_OPTIMIZER 12.0 /* fp32 master weights, Adam's m and v */
/*
 * zero=2 and 3: how many elements of whole (unsharded) buckets may be alive
 * beside the shards. Megatron-FSDP sizes its communication unit at no less
 * than 1e9 elements and prefetches half of it (megatron_fsdp.py:
 * max(1_000_000_000, ...), suggested_AG_prefetch_size = unit // 2);
 * DeepSpeed ZeRO-3's stage3_max_live_parameters is 1e9.
 */
#define ZERO_LIVE_GRAD_ELEMENTS 1e9
#define ZERO_LIVE_PARAM_ELEMENTS 5e8

const char *step_term_name(enum step_term t)
{
	static const char *const names[] = { "weights", "gradients", "optimizer states", "activations",
					     "framework allowance" };
	return (unsigned)t <= STEP_ALLOWANCE ? names[t] : "?";
}

void step_layout_format(const struct step_layout *l, char *buf, size_t len)
{
	static const char *const rc[] = { "auto", "none", "selective", "full" };
	int n = snprintf(buf, len, "tp=%u,pp=%u,cp=%u,ep=%u,etp=%u,dp=%u,vpp=%u,mbs=%u,recompute=%s", l->tp,
			 l->pp, l->cp, l->ep, l->etp, l->dp, l->vpp, l->mbs, rc[l->recompute & 3]);
	if (l->recompute == MODEL_RECOMPUTE_FULL && l->recompute_layers && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ",recompute-layers=%u", l->recompute_layers);
	else if (l->recompute == MODEL_RECOMPUTE_SELECTIVE && l->moe_act && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ",recompute-moe-act=1");
}

void step_stage_layers(const struct model_desc *m, const struct step_layout *l, unsigned k, unsigned *first,
		       unsigned *count)
{
	unsigned L = (unsigned)m->layers, p = l->pp;
	if (l->stage_layers) {
		*first = 0;
		for (unsigned i = 0; i < k; i++)
			*first += l->stage_layers[i];
		*count = l->stage_layers[k];
		return;
	}
	if (L % p == 0) {
		*first = k * (L / p), *count = L / p;
		return;
	}
	/* Megatron's --decoder-first/last-pipeline-num-layers: the middle stages
	 * even, the first and last sharing what is left. */
	unsigned middle = p > 2 ? (L + p - 1) / p : 0;
	unsigned ends = L - (p - 2) * middle, head = ends / 2, tail = ends - head;
	if (k == 0)
		*first = 0, *count = head;
	else if (k == p - 1)
		*first = L - tail, *count = tail;
	else
		*first = head + (k - 1) * middle, *count = middle;
}

static unsigned long long u(double x)
{
	return (unsigned long long)x;
}

llmp_status step_layout_check(const struct model_desc *m, uint32_t world, struct step_layout *l, char *msg,
			      size_t len)
{
	if (!l->tp || !l->pp || !l->cp || !l->ep || !l->mbs)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len, "a size of 0");
	if (!l->vpp)
		l->vpp = 1;
	if (!l->etp)
		l->etp = l->tp;
	unsigned long long model = (unsigned long long)l->tp * l->pp * l->cp;
	if (world % model)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len, "tp*pp*cp = %llu does not divide %u ranks", model,
				 world);
	unsigned dp = (unsigned)(world / model);
	if (l->dp && l->dp != dp)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len, "dp=%u but %u ranks / (tp*pp*cp) = %u", l->dp,
				 world, dp);
	l->dp = dp;
	if (u(m->heads) % l->tp)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len, "tp=%u does not divide heads=%llu", l->tp,
				 u(m->heads));
	if (u(m->kv_heads) % l->tp)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len, "tp=%u does not divide kv-heads=%llu", l->tp,
				 u(m->kv_heads));
	if (l->pp > m->layers)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len, "pp=%u is more than layers=%llu", l->pp,
				 u(m->layers));
	if (l->stage_layers) {
		unsigned long long sum = 0;
		for (unsigned k = 0; k < l->pp; k++) {
			if (!l->stage_layers[k] || l->stage_layers[k] % l->vpp)
				return llmp_fail(
					LLMP_ERR_LAYOUT, msg, len,
					"stage %u has %u layers: each stage needs a multiple of vpp=%u, "
					"at least one",
					k, l->stage_layers[k], l->vpp);
			sum += l->stage_layers[k];
		}
		if (sum != u(m->layers))
			return llmp_fail(LLMP_ERR_LAYOUT, msg, len,
					 "the %u stages' layers add up to %llu, not layers=%llu", l->pp, sum,
					 u(m->layers));
	} else if (l->pp > 2 && u(m->layers) % l->pp) {
		unsigned long long middle = (u(m->layers) + l->pp - 1) / l->pp;
		if ((l->pp - 2) * middle + 2 > u(m->layers))
			return llmp_fail(LLMP_ERR_LAYOUT, msg, len,
					 "pp=%u does not divide layers=%llu, and no uneven first/last stages "
					 "leave each stage a layer",
					 l->pp, u(m->layers));
	}
	/* Interleaving: the stages' layers split into vpp chunks; with uneven
	 * first and last stages (Megatron's pipeline layout) only the middle ones must. */
	unsigned first, middle;
	step_stage_layers(m, l, l->pp > 2 ? 1 : 0, &first, &middle);
	if (m->zero == MODEL_ZERO_AUTO)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len,
				 "zero=auto: llmp chooses the sharding with the layout (--parallel auto); "
				 "a written layout says zero=0, 1, 2 or 3");
	if (l->pp > 1 && m->zero >= 2 && m->engine == MODEL_ENGINE_DEEPSPEED)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len,
				 "pp=%u with zero=%u: DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3 "
				 "(deepspeed/runtime/pipe/engine.py); zero=0 or 1, or pp=1",
				 l->pp, m->zero);
	/* Megatron-FSDP lays its device mesh over the whole world as (dp x cp, ep, tp)
	 * (megatron/core/distributed/fsdp/mcore_fsdp_adapter.py, _get_dp_tp_mesh, called for
	 * every module by _init_dist_index; Megatron-LM d98e8a6): with pp > 1 the world is
	 * larger than that mesh, and the wrapper stops before the first step. */
	if (l->pp > 1 && m->zero >= 2 && m->engine == MODEL_ENGINE_MEGATRON)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len,
				 "pp=%u with zero=%u: Megatron-FSDP builds its mesh from dp, cp and tp "
				 "alone and does not start with pp > 1 (Megatron-LM's "
				 "mcore_fsdp_adapter.py); zero=0 or 1, or pp=1 (engine=torch for a "
				 "PyTorch FSDP stack with pipelining)",
				 l->pp, m->zero);
	if (l->vpp > 1 && m->engine == MODEL_ENGINE_DEEPSPEED)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len,
				 "vpp=%u: DeepSpeed's pipeline engine runs 1F1B without interleaving "
				 "(the model says engine=deepspeed)",
				 l->vpp);
	if (l->vpp > 1 && (l->pp < 2 || (!l->stage_layers && middle % l->vpp)))
		return llmp_fail(
			LLMP_ERR_LAYOUT, msg, len,
			"vpp=%u needs pp > 1 and vpp dividing the %u layers of a stage (layers=%llu, pp=%u)",
			l->vpp, middle, u(m->layers), l->pp);
	/* Transformer Engine's context parallelism merges its blocks by the flash kernels'
	 * log-sum-exp (NVIDIA/TransformerEngine transformer_engine/pytorch/attention/
	 * dot_product_attention/context_parallel.py): no cp without them. */
	if (l->cp > 1 && !m->flash)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len,
				 "cp=%u needs flash attention (Transformer Engine's context parallelism); "
				 "the model says flash=0",
				 l->cp);
	if (l->cp > 1 && u(m->seq) % (2ULL * l->cp))
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len, "2*cp = %u does not divide seq=%llu", 2 * l->cp,
				 u(m->seq));
	if (l->tp > 1 && u(m->seq) / l->cp % l->tp)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len,
				 "sequence parallelism: tp=%u does not divide seq/cp = %llu", l->tp,
				 u(m->seq) / l->cp);
	if (!m->experts && (l->ep > 1 || l->etp != l->tp))
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len, "ep and etp need a model with experts=");
	if (m->experts && u(m->experts) % l->ep)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len, "ep=%u does not divide experts=%llu", l->ep,
				 u(m->experts));
	if (m->experts && (world / l->pp) % ((unsigned long long)l->etp * l->ep))
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len,
				 "expert grid: etp*ep = %u does not divide %u ranks / pp", l->etp * l->ep,
				 world);
	if (m->gbs && u(m->gbs) % ((unsigned long long)l->mbs * dp))
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len, "mbs*dp = %u*%u does not divide gbs=%llu", l->mbs,
				 dp, u(m->gbs));
	if (l->recompute_layers && l->recompute != MODEL_RECOMPUTE_FULL)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len,
				 "recompute-layers=%u recomputes that many layers of each chunk in full: it "
				 "needs recompute=full",
				 l->recompute_layers);
	if (l->recompute_layers && m->engine == MODEL_ENGINE_DEEPSPEED)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len,
				 "recompute-layers=%u: Megatron-DeepSpeed checkpoints every layer (its "
				 "--checkpoint-num-layers groups them) and has no block method; the model "
				 "says engine=deepspeed",
				 l->recompute_layers);
	if (m->offload_layers && l->pp > 1)
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len,
				 "pp=%u with offload-layers=%u: Megatron-Core offloads activations only "
				 "without pipeline parallelism (transformer_config.py); pp=1",
				 l->pp, m->offload_layers);
	if (l->recompute == MODEL_RECOMPUTE_AUTO)
		l->recompute = MODEL_RECOMPUTE_SELECTIVE;
	if (l->moe_act &&
	    (!m->experts || l->recompute != MODEL_RECOMPUTE_SELECTIVE || m->engine != MODEL_ENGINE_MEGATRON))
		return llmp_fail(LLMP_ERR_LAYOUT, msg, len,
				 "recompute-moe-act=1 is Megatron-Core's --recompute-modules moe_act: it "
				 "needs experts, recompute=selective and engine=megatron");
	return LLMP_OK;
}

/* ---------------------------------------------------------------- memory */

struct layer_shape {
	double attn, dense_mlp, moe_sharded, moe_replicated; /* parameters */
	double act_dense, act_moe, act_full;                 /* bytes per micro-batch, per rank */
	double act_scores;                                   /* without flash attention: 5 a s^2 b / t */
	double act_embedding;                                /* the embedding's output */
	double flops_dense, flops_moe, flops_attn_core;      /* forward, per micro-batch, whole layer */
	double elem_dense[2], elem_moe[2], elem_scores[2];   /* elementwise bytes per rank: fwd, bwd */
};

static void layer_shape(const struct model_desc *m, const struct step_layout *l, struct layer_shape *x)
{
	double h = m->hidden, kv = h * m->kv_heads / m->heads, mats = m->gated ? 3 : 2, c = m->gated ? 6 : 4;
	/* Recomputing the routed experts' activation keeps its input, not its output (2 ffn). */
	double c_routed = c - (l->moe_act ? 2 : 0);
	double t = l->tp, s = m->seq / l->cp, b = l->mbs;
	x->attn = 2 * h * h + 2 * h * kv + 2 * h;
	x->dense_mlp = mats * h * m->ffn;
	x->moe_sharded = m->experts * mats * h * m->moe_ffn;
	x->moe_replicated = m->experts * h; /* the router */
	/* Korthikanti: 34 s b h for a GPT layer = attention 14h + 4h_kv (K, V kept
	 * smaller under GQA) + the MLP's 4 ffn (6 ffn with SwiGLU's two inputs).
	 * Of the 14h, 2h are the two 1-byte dropout masks after the attention and
	 * the MLP, which a model without dropout does not keep (PyTorch's dropout
	 * at p = 0 returns its input). */
	double masks = m->dropout ? 2 : 0;
	/* Under FP8 Transformer Engine keeps for the backward the FP8 copy of each linear
	 * layer's input that its forward GEMM read (transformer_engine/pytorch/module/
	 * linear.py, layernorm_linear.py, layernorm_mlp.py, grouped_linear.py), one byte an
	 * element. Where nothing else keeps the bf16 tensor that replaces Korthikanti's two
	 * bytes: the QKV and FC1 inputs (the norms' outputs), FC2's (the activation's
	 * output), the routed experts' FC1 and FC2 inputs (FC2's not kept under moe_act
	 * recompute): h, h and ffn bytes less a token. The projection's input is the
	 * attention's output, which the flash kernels keep in bf16 for their own backward:
	 * its FP8 copy is h bytes more. */
	double f8 = m->fp8 ? 1 : 0;
	double common = s * b * ((12 - f8) * h + masks * h + 4 * kv);
	/* Without sequence parallelism Korthikanti's 10 s b h (norms, dropout masks,
	 * the inputs of the first matrices) stay whole on every tp rank. */
	double whole = l->tp > 1 && !m->sp ? (8 - 2 * f8 + masks) * s * b * h : 0;
	double routed = m->topk * ((c_routed - (l->moe_act ? 0 : f8)) * m->moe_ffn + (2 - f8) * h);
	x->act_dense = whole + (common + s * b * (c - f8) * m->ffn - whole) / t;
	x->act_moe = whole + (common + s * b * (routed + (c - f8) * m->shared_ffn) - whole) / t;
	x->act_full = 2 * s * b * h / (m->sp ? t : 1);
	x->act_embedding = 2 * s * b * h / (m->sp ? t : 1);
	/* The softmax's output (2 bytes a score), and with dropout its mask and output (1 + 2). */
	x->act_scores = m->flash ? 0 : (m->dropout ? 5 : 2) * m->heads * s * s * b / t;
	double tokens = m->seq * b;
	x->flops_attn_core = tokens * 2 * m->seq * h; /* QK^T and AV, causal: half of 4 s h */
	double proj = 2 * (2 * h * h + 2 * h * kv);
	x->flops_dense = tokens * (proj + 2 * mats * h * m->ffn) + x->flops_attn_core;
	x->flops_moe = tokens * (proj + 2 * (m->topk * mats * h * m->moe_ffn + mats * h * m->shared_ffn +
					     h * m->experts)) +
		       x->flops_attn_core;
	/*
	 * The elementwise kernels' device-memory traffic in a layer, bytes of 16-bit values
	 * (1-byte dropout masks) read and written, forward / backward:
	 *   two LayerNorms, x in and y out, 4 s b h / dy, x in and dx out, 6 s b h;
	 *   two fused bias-dropout-adds, x and the residual in, the sum and its mask out,
	 *   7 s b h / dy and the mask in, dx out, the residual's gradient added, 7 s b h
	 *   (6 / 6 without dropout: no mask);
	 * whole on every tp rank without sequence parallelism, as Korthikanti's 10 s b h are;
	 *   the activation function, split by tp: GeLU 4 / 6 s b ffn, SwiGLU (two inputs)
	 *   6 / 10 s b ffn;
	 *   without flash attention, the scaled masked softmax (4 / 6 bytes a score) and the
	 *   dropout of its probabilities (5 / 5, none without dropout): a s^2 b / t scores.
	 */
	double whole_norms = s * b * h / (m->sp ? t : 1), ffn_dense = s * b * m->ffn / t,
	       ffn_moe = s * b * (m->topk * m->moe_ffn + m->shared_ffn) / t;
	double act_fwd = mats == 3 ? 6 : 4, act_bwd = mats == 3 ? 10 : 6;
	double fwd = 20 + masks, bwd = 24 + masks;
	x->elem_dense[0] = fwd * whole_norms + act_fwd * ffn_dense;
	x->elem_dense[1] = bwd * whole_norms + act_bwd * ffn_dense;
	x->elem_moe[0] = fwd * whole_norms + act_fwd * ffn_moe;
	x->elem_moe[1] = bwd * whole_norms + act_bwd * ffn_moe;
	if (l->moe_act) /* the routed experts' activation forward again, in the backward */
		x->elem_moe[1] += act_fwd * s * b * m->topk * m->moe_ffn / t;
	double scores = m->flash ? 0 : m->heads * s * s * b / t, drop = m->dropout ? 5 : 0;
	x->elem_scores[0] = (4 + drop) * scores, x->elem_scores[1] = (6 + drop) * scores;
}

/* Micro-batch layer-activations alive on stage k at the peak of its schedule. */
static double in_flight(const struct step_layout *l, unsigned k, double layers, double micro)
{
	if (l->vpp <= 1) {
		double n = l->pp - k;
		return (n < micro ? n : micro) * layers;
	}
	/* Megatron's interleaved warm-up: 2(pp - k - 1) + (vpp - 1) pp chunks, plus the one in flight. */
	double chunks = 2.0 * (l->pp - k - 1) + (double)(l->vpp - 1) * l->pp + 1;
	if (chunks > micro * l->vpp)
		chunks = micro * l->vpp;
	return chunks * layers / l->vpp;
}

/* How many of the n layers from first have a dense MLP: an MoE model's first dense_layers, a dense model's all. */
static double dense_among(const struct model_desc *m, unsigned first, unsigned n)
{
	double before = (m->experts ? m->dense_layers : m->layers) - first;
	return before <= 0 ? 0 : before < n ? before : n;
}

double step_alloc_fixed(const struct gpu_desc *g)
{
	return g && g->alloc_fixed_given ? g->alloc_fixed_bytes : STEP_ALLOWANCE_FIXED;
}

double step_alloc_share(const struct model_desc *m, const struct gpu_desc *g)
{
	return g && g->alloc_share_given && !m->overhead_given ? g->alloc_share : m->overhead;
}

static void stage_memory(const struct model_desc *m, const struct gpu_desc *g, const struct step_layout *l,
			 const struct layer_shape *x, unsigned k, double micro, struct step_stage *st)
{
	unsigned first, n;
	step_stage_layers(m, l, k, &first, &n);
	double nd = dense_among(m, first, n); /* dense-MLP layers of this stage */
	double nm = n - nd, h = m->hidden, t = l->tp;
	double dense = (n * x->attn + nd * x->dense_mlp + nm * (m->gated ? 3 : 2) * h * m->shared_ffn) / t +
		       nm * x->moe_replicated;
	double expert = nm * x->moe_sharded / ((double)l->ep * l->etp);
	/* The embedding and the output layer: no transformer layer's. The output layer, or
	 * the tied copy Megatron keeps on the last stage. */
	double embedding = k == 0 ? m->vocab * h / t : 0;
	double output = k == l->pp - 1 && (!m->tied || l->pp > 1) ? m->vocab * h / t : 0;
	double outside = embedding + output;
	double edp = (double)l->tp * l->cp * l->dp / ((double)l->ep * l->etp);
	double ddp = (double)l->dp * l->cp;
	double layers = dense + expert, all = layers + outside; /* this rank's parameters */
	double layers_shard = dense / ddp + expert / edp, shard = layers_shard + outside / ddp;
	st->first_layer = first, st->layers = n;
	st->weights = all * BYTES_WEIGHT;
	st->grads = all * m->grad_bytes; /* 4: Megatron's default grad_reduce_in_fp32 */
	/*
	 * PyTorch's FSDP2 (engine=torch) makes each transformer layer a unit of its own
	 * (TorchTitan's apply_fsdp): beside the shards it holds the unit computing and the
	 * next one, whose all-gather is prefetched behind it, and in the backward the unit's
	 * unsharded gradients and the previous unit's in their reduce-scatter
	 * (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py): two layers of each.
	 */
	bool fsdp2 = m->engine == MODEL_ENGINE_TORCH;
	double unit = n ? layers / n : 0;
	double live_grads = fsdp2 ? 2 * unit : ZERO_LIVE_GRAD_ELEMENTS;
	if (m->zero >= 2) /* the shard, and whole buckets on their way to the reduce-scatter */
		st->grads = (shard + (all < live_grads ? all : live_grads)) * m->grad_bytes;
	if (m->zero >= 3 && !fsdp2) {
		/* The layers' shard, the layers gathered for compute and prefetch (one layer beyond
		 * the prefetch window), and the embedding and output layer, which Megatron-FSDP
		 * keeps gathered (they are no FSDP unit). */
		double live = ZERO_LIVE_PARAM_ELEMENTS + unit;
		st->weights = (layers_shard + outside + (layers < live ? layers : live)) * BYTES_WEIGHT;
	} else if (m->zero >= 3) {
		/* FSDP2 keeps no 16-bit shard: its sharded parameters are the fp32 master copy (the
		 * optimizer's 4 bytes), cast to bf16 by the all-gather. The embedding is a unit
		 * resharded after its forward; the norm and output layer stay gathered (TorchTitan
		 * reshards them only under its "always" policy), the embedding too when tied to it. */
		double kept = output + (m->tied && l->pp == 1 ? embedding : 0);
		st->weights = (kept + (layers < 2 * unit ? layers : 2 * unit)) * BYTES_WEIGHT;
	}
	if (m->fp8 && m->zero < 3) /* Transformer Engine's FP8 copy of the layers' weights */
		st->weights += layers * STEP_FP8_WEIGHT_BYTES;
	/* With 16-bit gradient buffers (grad=2) the optimizer steps its shard from an fp32 copy of
	 * the shard's gradients: DeepSpeed's ZeRO-1/2 step flattens them .to(fp32), Megatron's
	 * fp16/bf16 optimizers make main_grad.float(). 4 bytes more per optimizer parameter. */
	double opt_bytes = BYTES_OPTIMIZER + (m->grad_bytes < 4 ? 4.0 : 0.0);
	st->optimizer = (m->zero >= 1 ? shard : all) * opt_bytes;

	double per_layer = n ? (nd * x->act_dense + nm * x->act_moe) / n : 0;
	if (l->recompute == MODEL_RECOMPUTE_NONE)
		per_layer += x->act_scores; /* selective recompute drops them */
	double s = m->seq / l->cp, b = l->mbs;
	double act, share = step_recompute_share(m, l, k);
	if (l->recompute == MODEL_RECOMPUTE_FULL)
		/* a recomputed layer's input kept, the others' every activation (with the scores:
		 * full granularity drops no selective part); one layer rebuilt whole during its backward */
		act = in_flight(l, k, n, micro) *
			      (share * x->act_full + (1 - share) * (per_layer + x->act_scores)) +
		      (x->act_moe > x->act_dense && nm ? x->act_moe : x->act_dense) + x->act_scores;
	else if (m->offload_layers) {
		/* pp=1 (step_layout_check), so n is every layer and fewer are offloaded
		 * (model_desc.c): the layers not offloaded, and one offloaded layer still on
		 * its way to the host (Transformer Engine's double-buffered offload handler) */
		act = in_flight(l, k, n - m->offload_layers + 1.0, micro) * per_layer;
	} else
		act = in_flight(l, k, n, micro) * per_layer;
	if (k == 0) /* the embedding's output, per micro-batch in flight */
		act += in_flight(l, k, 1, micro) * x->act_embedding;
	if (k == l->pp - 1) /* Korthikanti: 4 s b h (1 + V/h) / t for the output layer and fp32 logits */
		act += 4 * s * b * (h + m->vocab) / t;
	st->activations = act;
	double rest = st->weights + st->grads + st->optimizer + st->activations;
	st->allowance = step_alloc_fixed(g) + step_alloc_share(m, g) * rest;
	st->total = rest + st->allowance;
}

/* ------------------------------------------------------------------ time */

/* Does every group of this kind stay inside one NVLink domain of d ranks? First and last group checked. */
static bool in_domain(const llmp_plan *plan, enum llmp_group group, unsigned d)
{
	struct llmp_group_shape shape;
	plan_group_shape_of(plan, group, &shape);
	uint32_t ends[2] = { 0, shape.count - 1 };
	for (int i = 0; i < 2; i++) {
		uint32_t lo = plan_group_shape_base(&shape, ends[i]), hi = lo + shape.extent;
		if (lo / d != hi / d)
			return false;
	}
	return true;
}

static llmp_status network(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			   const struct step_layout *l, double micro, double raw[5], char *msg, size_t len)
{
	llmp_spec spec;
	step_layout_spec(l, NULL, false, &spec);
	llmp_plan *plan;
	char why[LLMP_MSG_MAX];
	llmp_status st = llmp_plan_create(&spec, world, 0, &plan, why, sizeof why);
	if (st != LLMP_OK)
		return llmp_fail(st, msg, len, "%s", why);
	struct plan_model tm = step_topo_model(m, l->mbs);
	static const enum llmp_axis axes[5] = { LLMP_AXIS_TP, LLMP_AXIS_CP, LLMP_AXIS_EP, LLMP_AXIS_DP,
						LLMP_AXIS_PP };
	static const enum llmp_group groups[5] = { LLMP_GROUP_TP, LLMP_GROUP_CP, LLMP_GROUP_EP,
						   LLMP_GROUP_DP_CP, LLMP_GROUP_PP };
	unsigned domain = g->domain < world ? g->domain : world;
	for (int a = 0; a < 5; a++) {
		raw[a] = 0;
		if (llmp_plan_size(plan, axes[a]) <= 1 && !(a == 3 && l->cp > 1))
			continue;
		double bytes = plan_cost_bytes(axes[a], plan, &tm, micro);
		double gbps = in_domain(plan, groups[a], domain) ? g->nvlink_gbps : g->net_gbps;
		raw[a] = bytes / (gbps * 1e9);
	}
	llmp_plan_destroy(plan);
	return LLMP_OK;
}

static double microbatches(const struct model_desc *m, const struct step_layout *l)
{
	return m->gbs ? m->gbs / ((double)l->mbs * l->dp) : 4.0 * l->pp;
}

/* The output layer's forward FLOPs of one micro-batch on stage k (the last only). */
static double output_forward(const struct model_desc *m, const struct step_layout *l, unsigned k)
{
	return k == l->pp - 1 ? 2 * m->seq * l->mbs * m->hidden * m->vocab : 0;
}

/* Forward FLOPs of one micro-batch on stage st, whole (all tp x cp ranks). */
static double stage_forward(const struct model_desc *m, const struct step_layout *l,
			    const struct layer_shape *x, unsigned k, const struct step_stage *st)
{
	double nd = dense_among(m, st->first_layer, st->layers), nm = st->layers - nd;
	return nd * x->flops_dense + nm * x->flops_moe + output_forward(m, l, k);
}

/*
 * Full recompute runs the transformer layers' forward again, not the output layer's
 * (Megatron checkpoints the layers; Narayanan et al.'s 96 B s l h^2 (1 + s/(6h) + V/(16lh))
 * counts the layers 4 times, the logits' 2 B s h V 3 times), on its share of them;
 * selective recompute without flash attention, the attention core's.
 */
static double recompute_flops(const struct model_desc *m, const struct step_layout *l,
			      const struct layer_shape *x, unsigned k, const struct step_stage *st,
			      double fwd)
{
	return l->recompute == MODEL_RECOMPUTE_FULL
		       ? step_recompute_share(m, l, k) * (fwd - output_forward(m, l, k))
	       : l->recompute == MODEL_RECOMPUTE_SELECTIVE && !m->flash ? st->layers * x->flops_attn_core
									: 0;
}

/* The rate a rank of l reaches on g. Smaller matrices reach less of the peak: half of it
 * at STEP_GEMM_TOKENS rows (tokens of a micro-batch on a rank) or STEP_GEMM_WIDTH columns (hidden / tp). */
static double rank_rate(const struct model_desc *m, const struct gpu_desc *g, const struct step_layout *l)
{
	double rows = l->mbs * m->seq / l->cp, cols = m->hidden / l->tp;
	double shape = rows / (rows + STEP_GEMM_TOKENS) * cols / (cols + STEP_GEMM_WIDTH);
	return g->bf16_flops * g->efficiency * shape;
}

/*
 * Seconds of stage k's elementwise kernels for one micro-batch on a rank, at
 * STEP_HBM_EFFICIENCY of g's memory bandwidth: the forward's traffic and the
 * backward's, the forward's again under full recompute (the softmax's under
 * selective recompute without flash attention); on the last stage the logits,
 * STEP_LOGIT_BYTES each through the vocabulary-parallel cross entropy.
 */
static double elementwise_seconds(const struct model_desc *m, const struct gpu_desc *g,
				  const struct step_layout *l, const struct layer_shape *x, unsigned k,
				  const struct step_stage *st)
{
	double nd = dense_among(m, st->first_layer, st->layers), nm = st->layers - nd;
	double fwd = nd * x->elem_dense[0] + nm * x->elem_moe[0] + st->layers * x->elem_scores[0];
	double bwd = nd * x->elem_dense[1] + nm * x->elem_moe[1] + st->layers * x->elem_scores[1];
	double bytes = fwd + bwd;
	if (l->recompute == MODEL_RECOMPUTE_FULL)
		bytes += step_recompute_share(m, l, k) * fwd;
	else if (l->recompute == MODEL_RECOMPUTE_SELECTIVE)
		bytes += st->layers * x->elem_scores[0];
	if (k == l->pp - 1)
		bytes += STEP_LOGIT_BYTES * m->seq / l->cp * l->mbs * m->vocab / l->tp;
	return bytes / (g->hbm_gbps * 1e9 * STEP_HBM_EFFICIENCY);
}

/* What a stage's micro-batch is made of, besides its seconds. */
struct stage_parts {
	double flops;       /* forward, backward and recompute, whole (all tp x cp ranks) */
	double elementwise; /* seconds of memory-bound kernels */
	double overhead;    /* seconds of the framework's own time: g's per-layer overhead */
};

/* Seconds of one micro-batch's forward and backward on a rank of stage k. */
static double stage_seconds(const struct model_desc *m, const struct gpu_desc *g, const struct step_layout *l,
			    const struct layer_shape *x, unsigned k, const struct step_stage *st, double fwd,
			    struct stage_parts *parts)
{
	parts->flops = 3 * fwd + recompute_flops(m, l, x, k, st, fwd);
	parts->elementwise = elementwise_seconds(m, g, l, x, k, st);
	parts->overhead = st->layers * g->layer_overhead_s;
	double gemm = parts->flops / ((double)l->tp * l->cp) / rank_rate(m, g, l);
	if (m->fp8 && fwd > 0) {
		/* the layers' linear GEMMs at the FP8 rate: all but the attention core and the output layer */
		double linear = (fwd - st->layers * x->flops_attn_core - output_forward(m, l, k)) / fwd;
		gemm *= 1 - (linear > 0 ? linear : 0) * (1 - 1 / STEP_FP8_SPEEDUP);
	}
	return gemm + parts->elementwise + parts->overhead;
}

/*
 * The estimate; stage k on stage_gpus[k] when given, else on g; g's links
 * for the modelled network.
 */
static llmp_status estimate(const struct model_desc *m, const struct gpu_desc *g,
			    const struct gpu_desc *stage_gpus, uint32_t world, const struct step_layout *l,
			    const double network_s[5], struct step_stage *stages, struct step_estimate *out,
			    char *msg, size_t len)
{
	memset(out, 0, sizeof *out);
	struct layer_shape x;
	layer_shape(m, l, &x);
	double micro = microbatches(m, l);
	out->microbatches = micro;
	double slowest = 0, all_stages = 0, attn_share = 0, peak_flops = 0, slowest_recompute = 0;
	struct stage_parts slowest_parts = { 0, 0, 0 };
	out->fits = true;
	for (unsigned k = 0; k < l->pp; k++) {
		const struct gpu_desc *gk = stage_gpus ? &stage_gpus[k] : g;
		struct step_stage st;
		stage_memory(m, gk, l, &x, k, micro, &st);
		if (stages)
			stages[k] = st;
		out->fits &= st.total <= gk->mem_bytes;
		peak_flops += gk->bf16_flops / l->pp;
		if (st.total > out->peak_bytes) {
			out->peak_bytes = st.total, out->peak_stage = k;
			double terms[5] = { st.weights, st.grads, st.optimizer, st.activations,
					    st.allowance };
			out->peak_term = STEP_WEIGHTS;
			for (int i = 1; i < 5; i++)
				if (terms[i] > terms[out->peak_term])
					out->peak_term = (enum step_term)i;
		}
		double fwd = stage_forward(m, l, &x, k, &st);
		out->flops += 3 * fwd * micro * l->dp;
		struct stage_parts parts;
		double seconds = stage_seconds(m, gk, l, &x, k, &st, fwd, &parts);
		all_stages += seconds;
		if (seconds > slowest) {
			slowest = seconds, slowest_parts = parts;
			slowest_recompute = step_recompute_share(m, l, k);
			attn_share = fwd > 0 ? 3 * st.layers * x.flops_attn_core / parts.flops : 0;
		}
	}
	out->compute_s = micro * slowest;
	out->elementwise_s = micro * slowest_parts.elementwise;
	out->overhead_s = micro * slowest_parts.overhead;
	/* 1F1B's fill and drain: a micro-batch through every stage but the slowest, at each
	 * stage's own pace; (pp - 1) slowest micro-batches when the stages are even, Narayanan
	 * et al.'s (pp - 1)/vpp with interleaving. */
	out->bubble_s = (all_stages - slowest) / l->vpp;

	double raw[5];
	llmp_status st = network_s ? LLMP_OK : network(m, g, world, l, micro, raw, msg, len);
	if (st != LLMP_OK)
		return st;
	if (network_s)
		memcpy(raw, network_s, sizeof raw);
	/* cost.c counts dp as a reduce-scatter of fp32 gradients and an all-gather of bf16
	 * parameters, 4 + 2 bytes; 16-bit gradient buffers (grad=2: grad_reduce_in_fp32=False,
	 * DeepSpeed's fp16/bf16 ZeRO-1) reduce in 16 bits: 2 + 2. Without the distributed
	 * optimizer (zero=0) every rank steps all parameters and nothing is gathered: the
	 * gradient buffer is all-reduced, a reduce-scatter and an all-gather of it, 4 + 4. */
	double reduced = m->grad_bytes < 4 ? 2.0 : 4.0;
	raw[3] *= (m->zero == 0 ? 2 * reduced : reduced + 2.0) / (4.0 + 2.0);
	/* tp: on the critical path. Full recompute runs each layer's forward again, its two
	 * all-reduces (or all-gather + reduce-scatter) with it: 6 collectives a layer, not 4
	 * (on the recomputed share of the slowest stage's layers). */
	out->net_s[0] = raw[0] * (1.0 + 0.5 * slowest_recompute);
	double cp_hidden = attn_share * out->compute_s; /* ring exchange behind attention */
	out->net_s[1] = raw[1] > cp_hidden ? raw[1] - cp_hidden : 0;
	out->net_s[2] = raw[2]; /* ep all-to-all: exposed */
	/* dp: the reduce-scatter overlaps the last micro-batch's backward, the
	 * all-gather the first one's forward (Megatron's overlap-grad-reduce and
	 * overlap-param-gather): one micro-batch of cover. None under DeepSpeed's
	 * pipeline engine, which reduces after the last micro-batch (TrainSchedule:
	 * ReduceTiedGrads, ReduceGrads, then OptimizerStep), nor with overlap-grad=0:
	 * Megatron-LM before --overlap-grad-reduce (2023-08) reduced after its
	 * forward_backward_func returned (training.py train_step). Sharded gradients
	 * (zero=2, 3) keep their own overlap below: Megatron-FSDP forces it on. */
	double fsdp_cover = m->engine != MODEL_ENGINE_DEEPSPEED ? slowest : 0;
	double cover = m->overlap_grad ? fsdp_cover : 0;
	out->net_s[3] = raw[3] > cover ? raw[3] - cover : 0;
	if (m->zero == 1 && m->overlap_grad && !m->overlap_param) {
		/* --overlap-grad-reduce without --overlap-param-gather: the reduce-scatter
		 * behind the backward, the all-gather after the optimizer step, exposed. */
		double rs = raw[3] * reduced / (reduced + 2), ag = raw[3] * 2 / (reduced + 2);
		out->net_s[3] = (rs > cover ? rs - cover : 0) + ag;
	}
	if (m->zero >= 2) {
		/* Sharded gradients are reduce-scattered after every micro-batch's backward
		 * (Megatron-FSDP's optim_grads*, DeepSpeed's ZeRO-2 and 3), sharded parameters
		 * gathered before its forward and again before its backward (optim_grads_params,
		 * ZeRO-3): each micro-batch's traffic behind its own compute under Megatron-FSDP,
		 * which forces both overlaps on, and under FSDP2 (engine=torch), which overlaps
		 * them; exposed under DeepSpeed, whose ZeRO-2 reduces each bucket by an
		 * all-reduce (allreduce_and_scatter): twice the bytes. */
		double rs = raw[3] * reduced / (reduced + 2), ag = raw[3] * 2 / (reduced + 2);
		if (m->engine == MODEL_ENGINE_DEEPSPEED && m->zero == 2)
			rs *= 2;
		double each = rs + (m->zero >= 3 ? 2 * ag : 0);
		out->net_s[3] = micro * (each > fsdp_cover ? each - fsdp_cover : 0);
		if (m->zero == 2) /* the updated parameters gathered once, behind the first forward */
			out->net_s[3] += ag > fsdp_cover ? ag - fsdp_cover : 0;
	}
	out->net_s[4] = raw[4] * l->vpp; /* pp: exposed; interleaving sends at every chunk edge */
	out->step_s = out->compute_s + out->bubble_s;
	for (int a = 0; a < 5; a++)
		out->step_s += out->net_s[a];
	out->mfu = out->flops / (out->step_s * world * peak_flops);
	return LLMP_OK;
}

llmp_status step_estimate(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			  const struct step_layout *l, struct step_stage *stages, struct step_estimate *out,
			  char *msg, size_t len)
{
	return step_estimate_placed(m, g, world, l, NULL, stages, out, msg, len);
}

void step_stage_eval(const struct model_desc *m, const struct gpu_desc *g, const struct step_layout *l,
		     unsigned k, double *seconds, struct step_stage *st)
{
	struct layer_shape x;
	layer_shape(m, l, &x);
	stage_memory(m, g, l, &x, k, microbatches(m, l), st);
	struct stage_parts parts;
	*seconds = stage_seconds(m, g, l, &x, k, st, stage_forward(m, l, &x, k, st), &parts);
}

llmp_status step_estimate_placed(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
				 const struct step_layout *l, const double network_s[5],
				 struct step_stage *stages, struct step_estimate *out, char *msg, size_t len)
{
	return estimate(m, g, NULL, world, l, network_s, stages, out, msg, len);
}

llmp_status step_estimate_stages(const struct model_desc *m, const struct gpu_desc *stage_gpus,
				 uint32_t world, const struct step_layout *l, const double network_s[5],
				 struct step_stage *stages, struct step_estimate *out, char *msg, size_t len)
{
	/* The network at the slowest links among the stages' GPUs. */
	struct gpu_desc links = stage_gpus[0];
	for (unsigned k = 1; k < l->pp; k++) {
		const struct gpu_desc *s = &stage_gpus[k];
		links.nvlink_gbps = s->nvlink_gbps < links.nvlink_gbps ? s->nvlink_gbps : links.nvlink_gbps;
		links.net_gbps = s->net_gbps < links.net_gbps ? s->net_gbps : links.net_gbps;
		links.domain = s->domain < links.domain ? s->domain : links.domain;
	}
	return estimate(m, &links, stage_gpus, world, l, network_s, stages, out, msg, len);
}

llmp_status step_fit_efficiency(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
				const struct step_layout *l, double measured_s, double *efficiency, char *msg,
				size_t len)
{
	struct gpu_desc t = *g;
	struct step_estimate e;
	double bound[2] = { STEP_EFF_MIN, 1.0 }, step[2];
	for (int i = 0; i < 2; i++) {
		t.efficiency = bound[i];
		llmp_status st = step_estimate(m, &t, world, l, NULL, &e, msg, len);
		if (st != LLMP_OK)
			return st;
		step[i] = e.step_s;
	}
	if (!(measured_s > 0) || measured_s < step[1] || measured_s > step[0])
		return llmp_fail(
			LLMP_ERR_ARG, msg, len,
			"a measured step of %.4g s is outside what %s can give this layout: %.4g s at "
			"its whole peak, %.4g s at %.0f%% of it (the network, bubble, elementwise and "
			"per-layer terms do not depend on the efficiency: check the layout, the model "
			"and the GPU's links)",
			measured_s, g->name, step[1], step[0], 100 * STEP_EFF_MIN);
	double lo = bound[0], hi = bound[1];
	for (int i = 0; i < 60; i++) {
		t.efficiency = (lo + hi) / 2;
		llmp_status st = step_estimate(m, &t, world, l, NULL, &e, msg, len);
		if (st != LLMP_OK)
			return st;
		if (e.step_s > measured_s)
			lo = t.efficiency;
		else
			hi = t.efficiency;
	}
	*efficiency = (lo + hi) / 2;
	return LLMP_OK;
}

/* The modelled steps' ratio of a over b on t. */
static llmp_status steps_ratio(const struct model_desc *m, const struct gpu_desc *t, uint32_t world,
			       const struct step_layout *a, const struct step_layout *b, double *ratio,
			       char *msg, size_t len)
{
	struct step_estimate ea, eb;
	llmp_status st = step_estimate(m, t, world, a, NULL, &ea, msg, len);
	if (st == LLMP_OK)
		st = step_estimate(m, t, world, b, NULL, &eb, msg, len);
	if (st == LLMP_OK)
		*ratio = ea.step_s / eb.step_s;
	return st;
}

/* The ratio of a's modelled step over b's with *x, a field of t, at each of bound[]. */
static llmp_status ratio_bounds(const struct model_desc *m, struct gpu_desc *t, double *x, uint32_t world,
				const struct step_layout *a, const struct step_layout *b,
				const double bound[2], double ratio[2], char *msg, size_t len)
{
	llmp_status st = LLMP_OK;
	for (int i = 0; i < 2 && st == LLMP_OK; i++) {
		*x = bound[i];
		st = steps_ratio(m, t, world, a, b, &ratio[i], msg, len);
	}
	return st;
}

/* *x, a field of t, between bound[], at which a's modelled step over b's is want; the ratio
 * rises with *x where ratio[1] > ratio[0] (ratio_bounds), else falls. */
static llmp_status bisect_ratio(const struct model_desc *m, struct gpu_desc *t, double *x, uint32_t world,
				const struct step_layout *a, const struct step_layout *b, double want,
				const double bound[2], const double ratio[2], char *msg, size_t len)
{
	bool rising = ratio[1] > ratio[0];
	double lo = bound[0], hi = bound[1];
	for (int i = 0; i < 60; i++) {
		double r;
		*x = (lo + hi) / 2;
		llmp_status st = steps_ratio(m, t, world, a, b, &r, msg, len);
		if (st != LLMP_OK)
			return st;
		if ((r < want) == rising)
			lo = *x;
		else
			hi = *x;
	}
	*x = (lo + hi) / 2;
	return LLMP_OK;
}

llmp_status step_fit_layer_overhead(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
				    const struct step_layout *a, double a_s, const struct step_layout *b,
				    double b_s, double *overhead_s, char *msg, size_t len)
{
	struct gpu_desc t = *g;
	double bound[2] = { 0, STEP_LAYER_OVERHEAD_MAX }, ratio[2];
	llmp_status st = ratio_bounds(m, &t, &t.layer_overhead_s, world, a, b, bound, ratio, msg, len);
	if (st != LLMP_OK)
		return st;
	double want = a_s / b_s;
	if (!(a_s > 0 && b_s > 0) || a->mbs >= b->mbs || want < ratio[0] || want > ratio[1])
		return llmp_fail(
			LLMP_ERR_ARG, msg, len,
			"steps of %.4g s at mbs %u and %.4g s at mbs %u (ratio %.3f) are outside what a "
			"per-layer overhead of 0 to %.0f ms gives this layout: %.3f to %.3f",
			a_s, a->mbs, b_s, b->mbs, want, 1e3 * STEP_LAYER_OVERHEAD_MAX, ratio[0], ratio[1]);
	st = bisect_ratio(m, &t, &t.layer_overhead_s, world, a, b, want, bound, ratio, msg, len);
	if (st == LLMP_OK)
		*overhead_s = t.layer_overhead_s;
	return st;
}

static bool same_but_tp(const struct step_layout *a, const struct step_layout *b)
{
	return a->pp == b->pp && a->cp == b->cp && a->ep == b->ep && a->vpp == b->vpp && a->mbs == b->mbs &&
	       a->recompute == b->recompute && a->recompute_layers == b->recompute_layers &&
	       a->moe_act == b->moe_act && a->stage_layers == b->stage_layers;
}

llmp_status step_fit_link(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			  const struct step_layout *a, double a_s, const struct step_layout *b, double b_s,
			  double *gbps, char *msg, size_t len)
{
	if (a->tp >= b->tp || !same_but_tp(a, b))
		return llmp_fail(LLMP_ERR_ARG, msg, len,
				 "the link rate is fitted on one layout at two tensor-parallel sizes, the "
				 "smaller first: tp=%u and tp=%u differ in more than tp, or not in it",
				 a->tp, b->tp);
	unsigned domain = g->domain < world ? g->domain : world;
	if (b->tp > domain)
		return llmp_fail(LLMP_ERR_ARG, msg, len,
				 "tp=%u is wider than %s's NVLink domain of %u GPUs: its groups cross the "
				 "network (net=), not the link fitted here",
				 b->tp, g->name, domain);
	/* The larger tp's exposed collectives shrink as the link quickens: b's step over a's
	 * falls with the rate. */
	struct gpu_desc t = *g;
	double bound[2] = { STEP_LINK_MIN_GBPS, STEP_LINK_MAX_GBPS }, ratio[2];
	llmp_status st = ratio_bounds(m, &t, &t.nvlink_gbps, world, b, a, bound, ratio, msg, len);
	if (st != LLMP_OK)
		return st;
	double want = b_s / a_s;
	if (!(a_s > 0 && b_s > 0) || want > ratio[0] || want < ratio[1])
		return llmp_fail(
			LLMP_ERR_ARG, msg, len,
			"steps of %.4g s at tp %u and %.4g s at tp %u (ratio %.3f) are outside what a "
			"link of %.0f to %.0f GB/s gives this layout: %.3f to %.3f",
			a_s, a->tp, b_s, b->tp, want, bound[0], bound[1], ratio[0], ratio[1]);
	st = bisect_ratio(m, &t, &t.nvlink_gbps, world, b, a, want, bound, ratio, msg, len);
	if (st == LLMP_OK)
		*gbps = t.nvlink_gbps;
	return st;
}

#define STEP_FIT_ROUNDS 2000 /* each round moves each by a share of what is left: tens suffice */

/* l at another micro-batch size or tensor-parallel size (0: l's own), checked. */
static llmp_status other_layout(const struct model_desc *m, uint32_t world, const struct step_layout *l,
				unsigned mbs, unsigned tp, struct step_layout *out, char *msg, size_t len)
{
	*out = *l;
	if (mbs)
		out->mbs = mbs;
	if (tp) {
		out->etp = l->etp == l->tp ? tp : l->etp;
		out->tp = tp, out->dp = 0;
	}
	return step_layout_check(m, world, out, msg, len);
}

llmp_status step_calibrate(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			   const struct step_layout *l, const struct step_measured *s, struct gpu_desc *out,
			   char *msg, size_t len)
{
	struct step_layout by_mbs, by_tp;
	llmp_status st = LLMP_OK;
	if (s->mbs2)
		st = other_layout(m, world, l, s->mbs2, 0, &by_mbs, msg, len);
	if (st == LLMP_OK && s->tp2)
		st = other_layout(m, world, l, 0, s->tp2, &by_tp, msg, len);
	if (st != LLMP_OK)
		return st;
	/* Each pair's smaller micro-batch (tensor-parallel size) first. */
	bool mbs_first = l->mbs < s->mbs2, tp_first = l->tp < s->tp2;
	const struct step_layout *ma = mbs_first ? l : &by_mbs, *mb = mbs_first ? &by_mbs : l;
	double ma_s = mbs_first ? s->step_s : s->mbs2_s, mb_s = mbs_first ? s->mbs2_s : s->step_s;
	const struct step_layout *ta = tp_first ? l : &by_tp, *tb = tp_first ? &by_tp : l;
	double ta_s = tp_first ? s->step_s : s->tp2_s, tb_s = tp_first ? s->tp2_s : s->step_s;
	struct gpu_desc t = *g;
	for (int round = 0; round < STEP_FIT_ROUNDS; round++) {
		struct gpu_desc was = t;
		if (s->mbs2)
			st = step_fit_layer_overhead(m, &t, world, ma, ma_s, mb, mb_s, &t.layer_overhead_s,
						     msg, len);
		if (st == LLMP_OK && s->tp2)
			st = step_fit_link(m, &t, world, ta, ta_s, tb, tb_s, &t.nvlink_gbps, msg, len);
		if (st == LLMP_OK)
			st = step_fit_efficiency(m, &t, world, l, s->step_s, &t.efficiency, msg, len);
		if (st != LLMP_OK)
			return st;
		double de = t.efficiency - was.efficiency, dover = t.layer_overhead_s - was.layer_overhead_s;
		double dlink = t.nvlink_gbps / was.nvlink_gbps - 1;
		bool settled = de * de < 1e-18 && dover * dover < 1e-24 && dlink * dlink < 1e-18;
		if (settled || (!s->mbs2 && !s->tp2)) { /* none moved, or one step: one bisection */
			*out = t;
			return LLMP_OK;
		}
	}
	return llmp_fail(
		LLMP_ERR_ARG, msg, len,
		"the efficiency%s%s did not settle in %d rounds (last %.4f, %.3f ms, %.1f GB/s): the "
		"steps may not be of one layout and stack",
		s->mbs2 ? ", the per-layer overhead" : "", s->tp2 ? ", the link rate" : "", STEP_FIT_ROUNDS,
		t.efficiency, 1e3 * t.layer_overhead_s, t.nvlink_gbps);
}

double step_recompute_share(const struct model_desc *m, const struct step_layout *l, unsigned k)
{
	if (l->recompute != MODEL_RECOMPUTE_FULL)
		return 0;
	unsigned first, n;
	step_stage_layers(m, l, k, &first, &n);
	double chunk = (double)n / l->vpp;
	return !l->recompute_layers || l->recompute_layers >= chunk ? 1 : l->recompute_layers / chunk;
}

unsigned step_chunk_layers_max(const struct model_desc *m, const struct step_layout *l)
{
	unsigned most = 0;
	for (unsigned k = 0; k < l->pp; k++) {
		unsigned first, n;
		step_stage_layers(m, l, k, &first, &n);
		unsigned chunk = (n + l->vpp - 1) / l->vpp;
		most = chunk > most ? chunk : most;
	}
	return most;
}

unsigned step_fewest_layers(unsigned most, bool (*fits)(void *ctx, unsigned n), void *ctx)
{
	unsigned lo = 1, hi = most;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (fits(ctx, mid))
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

struct fewest_ctx {
	const struct model_desc *m;
	const struct gpu_desc *g;
	uint32_t world;
	struct step_layout l;
};

static bool fits_recomputing(void *ctx, unsigned n)
{
	struct fewest_ctx *c = ctx;
	struct step_estimate e;
	c->l.recompute_layers = n;
	return step_estimate(c->m, c->g, c->world, &c->l, NULL, &e, NULL, 0) == LLMP_OK && e.fits;
}

llmp_status step_fewest_recompute(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
				  struct step_layout *l, struct step_estimate *out, char *msg, size_t len)
{
	l->recompute_layers = 0;
	llmp_status st = step_estimate(m, g, world, l, NULL, out, msg, len);
	if (st != LLMP_OK || !out->fits)
		return st;
	struct fewest_ctx c = { .m = m, .g = g, .world = world, .l = *l };
	unsigned most = step_chunk_layers_max(m, l);
	unsigned n = step_fewest_layers(most, fits_recomputing, &c);
	if (n >= most)
		return LLMP_OK;
	l->recompute_layers = n;
	return step_estimate(m, g, world, l, NULL, out, msg, len);
}

struct step_layout step_layout_of_spec(const llmp_spec *s, const struct model_desc *m)
{
	return (struct step_layout){ .tp = s->size[LLMP_DIM_TP],
				     .pp = s->size[LLMP_DIM_PP],
				     .cp = s->size[LLMP_DIM_CP],
				     .ep = s->size[LLMP_DIM_EP],
				     .etp = s->etp,
				     .dp = s->size[LLMP_DIM_DP],
				     .vpp = s->vpp ? s->vpp : 1,
				     .mbs = (unsigned)m->mbs,
				     .recompute = m->recompute,
				     .recompute_layers = m->recompute_layers,
				     .moe_act = m->recompute_moe_act };
}

void step_layout_spec(const struct step_layout *l, const llmp_spec *base, bool dp, llmp_spec *spec)
{
	if (base)
		*spec = *base;
	else
		llmp_spec_init(spec);
	spec->size[LLMP_DIM_TP] = l->tp, spec->size[LLMP_DIM_PP] = l->pp, spec->size[LLMP_DIM_CP] = l->cp;
	spec->size[LLMP_DIM_EP] = l->ep, spec->etp = l->etp;
	spec->given |= 1u << LLMP_KEY_TP | 1u << LLMP_KEY_PP | 1u << LLMP_KEY_CP | 1u << LLMP_KEY_EP |
		       1u << LLMP_KEY_ETP;
	if (dp) {
		spec->size[LLMP_DIM_DP] = l->dp;
		spec->given |= 1u << LLMP_KEY_DP;
	}
	spec->vpp = l->vpp > 1 ? l->vpp : 0;
	if (l->vpp > 1)
		spec->given |= 1u << LLMP_KEY_VPP;
	else
		spec->given &= ~(1u << LLMP_KEY_VPP);
}

struct plan_model step_topo_model(const struct model_desc *m, double mbs)
{
	return (struct plan_model){ .hidden = m->hidden,
				    .layers = m->layers,
				    .seq = m->seq,
				    .mbs = mbs,
				    .heads = m->heads,
				    .kv_heads = m->kv_heads,
				    .experts = m->experts,
				    .topk = m->topk,
				    .gbs = m->gbs };
}
