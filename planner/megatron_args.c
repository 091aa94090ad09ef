/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * megatron_args.c - Megatron-LM's flags for a layout and for the step
 * model's assumptions (megatron_args.h).
 */
#include "megatron_args.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hetero.h"

struct flags {
	char *out;
	size_t len, used;
	bool cut;
};

/* Append " flag" (no space before the first); a flag that does not fit marks the whole cut. */
static void flag(struct flags *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void flag(struct flags *f, const char *fmt, ...)
{
	if (f->cut)
		return;
	if (f->used && f->used + 1 < f->len)
		f->out[f->used++] = ' ', f->out[f->used] = '\0';
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(f->out + f->used, f->len - f->used, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= f->len - f->used)
		f->cut = true;
	else
		f->used += (size_t)w;
}

int megatron_layout_args(const llmp_plan *plan, char *out, size_t len)
{
	const char *order = llmp_plan_order(plan);
	bool tp_pp_dp = strcmp(order, "tp-cp-ep-pp-dp") == 0;
	if (!len || (!tp_pp_dp && strcmp(order, "tp-cp-ep-dp-pp") != 0))
		return -1;
	uint32_t tp = llmp_plan_size(plan, LLMP_AXIS_TP), cp = llmp_plan_size(plan, LLMP_AXIS_CP),
		 ep = llmp_plan_size(plan, LLMP_AXIS_EP), etp = llmp_plan_size(plan, LLMP_AXIS_ETP),
		 pp = llmp_plan_size(plan, LLMP_AXIS_PP), vpp = llmp_plan_vpp(plan);
	struct flags f = { .out = out, .len = len };
	out[0] = '\0';
	flag(&f, "--tensor-model-parallel-size %u --pipeline-model-parallel-size %u", tp, pp);
	if (cp > 1)
		flag(&f, "--context-parallel-size %u", cp);
	if (ep > 1)
		flag(&f, "--expert-model-parallel-size %u", ep);
	if (etp != tp)
		flag(&f, "--expert-tensor-parallel-size %u", etp);
	if (vpp)
		flag(&f, "--num-virtual-stages-per-pipeline-rank %u", vpp);
	/* With pp or dp 1 both orders make the same groups: the flag is left out, as a key at
	 * its default is (Megatron-Bridge refuses it with Megatron-FSDP, which needs pp 1). */
	if (tp_pp_dp && pp > 1 && llmp_plan_size(plan, LLMP_AXIS_DP) > 1)
		flag(&f, "--use-tp-pp-dp-mapping");
	return f.cut ? -1 : 0;
}

/*
 * Megatron-DeepSpeed's spelling (microsoft/Megatron-DeepSpeed megatron/arguments.py:
 * --zero-stage, --checkpoint-activations; no sequence-parallel, distributed-optimizer,
 * recompute-granularity or first/last-stage flags: DeepSpeed's PipelineModule splits
 * the layers itself).
 */
static void deepspeed_flags(const struct model_desc *m, const struct step_layout *l, struct flags *f)
{
	flag(f, "--zero-stage %u", m->zero);
	if (l->recompute == MODEL_RECOMPUTE_FULL)
		flag(f, "--checkpoint-activations");
}

/* Megatron-LM's spelling of the same assumptions (its first/last-stage flags come after). */
static void megatron_lm_flags(const struct model_desc *m, const struct step_layout *l, struct flags *f)
{
	if (l->tp > 1 && m->sp)
		flag(f, "--sequence-parallel");
	if (m->zero >= 1)
		flag(f, "--use-distributed-optimizer");
	/* dp behind the backward, as the estimate assumed (Megatron-LM's default is off;
	 * Megatron-FSDP forces both on); the parameters' all-gather exists only with the
	 * distributed optimizer. */
	if (m->overlap_grad && m->zero <= 1)
		flag(f, "--overlap-grad-reduce%s",
		     m->zero == 1 && m->overlap_param ? " --overlap-param-gather" : "");
	/* zero=2, 3: Megatron-FSDP (megatron/training/arguments.py: it forces the distributed
	 * optimizer and asserts the fsdp_dtensor checkpoint format); its main gradients are the
	 * parameters' dtype unless told, so grad=4's fp32 is said. */
	if (m->zero >= 2)
		flag(f, "--use-megatron-fsdp --data-parallel-sharding-strategy %s --ckpt-format fsdp_dtensor",
		     m->zero == 2 ? "optim_grads" : "optim_grads_params");
	if (m->zero >= 2 && m->grad_bytes == 4)
		flag(f, "--megatron-fsdp-main-grads-dtype fp32");
	/* moe_act replaces Megatron's default module list, core_attn, which only matters
	 * without flash attention; Megatron-Core refuses moe_act without grouped GEMMs. */
	if (l->recompute == MODEL_RECOMPUTE_SELECTIVE && l->moe_act)
		flag(f, "--recompute-granularity selective --recompute-modules %smoe_act --moe-grouped-gemm",
		     m->flash ? "" : "core_attn ");
	else if (l->recompute == MODEL_RECOMPUTE_SELECTIVE)
		flag(f, "--recompute-granularity selective");
	else if (l->recompute == MODEL_RECOMPUTE_FULL && l->recompute_layers)
		flag(f, "--recompute-granularity full --recompute-method block --recompute-num-layers %u",
		     l->recompute_layers);
	else if (l->recompute == MODEL_RECOMPUTE_FULL)
		flag(f, "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1");
	if (m->offload_layers) /* the first N layers' activations to the host (model_desc.h) */
		flag(f, "--cpu-offloading --cpu-offloading-num-layers %u", m->offload_layers);
}

bool megatron_model_args(const struct model_desc *m, const struct step_layout *l, char *out, size_t len,
			 bool *stages_said)
{
	bool megatron = m->engine == MODEL_ENGINE_MEGATRON;
	struct flags f = { .out = out, .len = len, .cut = len == 0 };
	if (len)
		out[0] = '\0';
	if (stages_said)
		*stages_said = false;
	if (m->engine != MODEL_ENGINE_TORCH) {
		flag(&f, "--micro-batch-size %u", l->mbs);
		if (m->gbs)
			flag(&f, "--global-batch-size %.0f", m->gbs);
		if (megatron)
			megatron_lm_flags(m, l, &f);
		else
			deepspeed_flags(m, l, &f);
	}
	if (l->stage_layers) { /* mixed GPUs: hetero_split's layers */
		char uneven[512];
		bool said = megatron && hetero_megatron_args(l->stage_layers, l->pp, uneven, sizeof uneven);
		if (said && uneven[0])
			flag(&f, "%s", uneven);
		if (stages_said)
			*stages_said = said;
	} else if (megatron && l->pp > 1 && (unsigned long long)m->layers % l->pp) {
		unsigned first, head, tail;
		step_stage_layers(m, l, 0, &first, &head);
		step_stage_layers(m, l, l->pp - 1, &first, &tail);
		flag(&f, "--decoder-first-pipeline-num-layers %u --decoder-last-pipeline-num-layers %u", head,
		     tail);
	}
	return !f.cut;
}
