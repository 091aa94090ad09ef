/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * model_layout.c - --llm-model at submission: the layout chosen for
 * --llm-parallel=auto, or the memory guard of a written one (model_layout.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "model_layout.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/auto_layout.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define PEAK_TEXT 320        /* describe_peak's sentence */
#define SBATCH_DP_GUESS 4096 /* dp for the any-size bound when the model has no gbs */

static int refuse(char *msg, size_t msglen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int refuse(char *msg, size_t msglen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
	return -1;
}

/* Append " flag" to a->megatron; the buffer is sized for every flag at its widest. */
static void flag(struct plugin_model_answer *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void flag(struct plugin_model_answer *a, const char *fmt, ...)
{
	size_t n = strlen(a->megatron);
	if (n && n + 1 < sizeof a->megatron)
		a->megatron[n++] = ' ', a->megatron[n] = '\0';
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->megatron + n, sizeof a->megatron - n, fmt, ap);
	va_end(ap);
}

/*
 * The flags Megatron-LM needs to run what the estimate assumed. Sizes are
 * in LLMP_MEGATRON_ARGS already; these are the model's side.
 */
static void megatron_flags(const struct model_desc *m, const struct step_layout *l,
			   struct plugin_model_answer *a)
{
	a->megatron[0] = '\0';
	flag(a, "--micro-batch-size %u", l->mbs);
	if (m->gbs)
		flag(a, "--global-batch-size %.0f", m->gbs);
	if (l->tp > 1 && m->sp)
		flag(a, "--sequence-parallel");
	if (m->dist_opt)
		flag(a, "--use-distributed-optimizer");
	if (l->recompute == MODEL_RECOMPUTE_SELECTIVE)
		flag(a, "--recompute-granularity selective");
	else if (l->recompute == MODEL_RECOMPUTE_FULL)
		flag(a, "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1");
	if (l->pp > 1 && (unsigned long long)m->layers % l->pp) {
		unsigned first, head, tail;
		step_stage_layers(m, l, 0, &first, &head);
		step_stage_layers(m, l, l->pp - 1, &first, &tail);
		flag(a, "--decoder-first-pipeline-num-layers %u --decoder-last-pipeline-num-layers %u", head,
		     tail);
	}
}

bool plugin_model_args_valid(const char *text)
{
	size_t n = strnlen(text, PLUGIN_MODEL_ARGS_MAX);
	if (n == PLUGIN_MODEL_ARGS_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = text[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == ' '))
			return false;
	}
	return true;
}

/* The choice as a layout spec: the site's defaults (the order) with every size given. */
static void to_spec(const struct plugin_site *site, const struct step_layout *l, llmp_spec *s)
{
	*s = site->defaults;
	s->size[LLMP_DIM_TP] = l->tp, s->size[LLMP_DIM_PP] = l->pp, s->size[LLMP_DIM_CP] = l->cp;
	s->size[LLMP_DIM_EP] = l->ep, s->size[LLMP_DIM_DP] = l->dp, s->etp = l->etp;
	s->given |= 1u << LLMP_KEY_TP | 1u << LLMP_KEY_PP | 1u << LLMP_KEY_CP | 1u << LLMP_KEY_EP |
		    1u << LLMP_KEY_DP | 1u << LLMP_KEY_ETP;
	s->vpp = l->vpp > 1 ? l->vpp : 0;
	if (l->vpp > 1)
		s->given |= 1u << LLMP_KEY_VPP;
	else
		s->given &= ~(1u << LLMP_KEY_VPP);
}

/* "tp=8,pp=4,... needs 91.2 GiB per GPU on stage 0 (largest term: activations, 40.1 GiB)" */
static void describe_peak(const struct step_layout *l, const struct step_estimate *e,
			  const struct step_stage *stage, char *buf, size_t len)
{
	char layout[160];
	const double terms[] = { stage->weights, stage->grads, stage->optimizer, stage->activations,
				 stage->allowance };
	step_layout_format(l, layout, sizeof layout);
	snprintf(buf, len, "%s needs %.1f GiB per GPU on pipeline stage %u (largest term: %s, %.1f GiB)",
		 layout, e->peak_bytes / GIB, e->peak_stage, step_term_name(e->peak_term),
		 terms[e->peak_term] / GIB);
}

/* Estimate l (checked) into e and the peak stage's terms; -1 with msg on failure. */
static int estimate(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
		    const struct step_layout *l, struct step_estimate *e, struct step_stage *peak, char *msg,
		    size_t msglen)
{
	struct step_stage *stages = calloc(l->pp, sizeof *stages);
	char why[LLMP_MSG_MAX];
	if (!stages)
		return refuse(msg, msglen, "out of memory");
	int rc = step_estimate(m, g, world, l, stages, e, why, sizeof why) == LLMP_OK ? 0 : -1;
	if (rc == 0)
		*peak = stages[e->peak_stage];
	else
		refuse(msg, msglen, "the step model: %s", why);
	free(stages);
	return rc;
}

static int choose(const struct plugin_site *site, const struct model_desc *m, const struct gpu_desc *g,
		  const struct plugin_model_request *rq, struct plugin_model_answer *a, char *msg,
		  size_t msglen)
{
	struct auto_result r;
	char why[LLMP_MSG_MAX], layout[PEAK_TEXT];
	if (auto_layout(m, g, rq->world, &r, why, sizeof why) != LLMP_OK)
		return refuse(msg, msglen, "--llm-parallel=auto: %s", why);
	if (!r.fitting) {
		struct step_stage peak;
		int rc = estimate(m, g, rq->world, &r.all[0].layout, &r.all[0].est, &peak, msg, msglen);
		if (rc == 0) {
			describe_peak(&r.all[0].layout, &r.all[0].est, &peak, layout, sizeof layout);
			refuse(msg, msglen,
			       "--llm-parallel=auto: %s does not fit %u GPUs of %.1f GiB (%s) in any of %zu "
			       "layouts: the smallest, %s; use more GPUs or a smaller micro-batch or sequence",
			       m->name, rq->world, g->mem_bytes / GIB, g->name, r.n, layout);
		}
		auto_result_free(&r);
		return -1;
	}
	/* The fastest that fits and that the site allows (max_tp=, ...). */
	size_t i = 0;
	for (; i < r.fitting; i++) {
		to_spec(site, &r.all[i].layout, &a->layout);
		if (llmp_spec_check(&a->layout, why, sizeof why) == LLMP_OK &&
		    plugin_site_check(site, &a->layout, why, sizeof why) == 0)
			break;
	}
	if (i == r.fitting) {
		refuse(msg, msglen,
		       "--llm-parallel=auto: the %zu layouts of %s that fit %u GPUs are all beyond this "
		       "site's limits (%s)",
		       r.fitting, m->name, rq->world, why);
		auto_result_free(&r);
		return -1;
	}
	const struct auto_candidate *c = &r.all[i];
	megatron_flags(m, &c->layout, a);
	step_layout_format(&c->layout, layout, sizeof layout);
	snprintf(
		a->note, sizeof a->note,
		"--llm-parallel=auto chose %s for %s on %u GPUs (%s): %.1f of %.1f GiB, about %.2f s a step; "
		"%zu of %zu layouts fit (llmp plan --parallel auto lists them)",
		layout, m->name, rq->world, g->name, c->est.peak_bytes / GIB, g->mem_bytes / GIB,
		c->est.step_s, r.fitting, r.n);
	a->decided = true;
	auto_result_free(&r);
	return 0;
}

/*
 * A written layout on a known world: Megatron's rules, then memory. With
 * recompute left to llmp, selective first, full when only that fits.
 */
static int guard(const struct model_desc *m, const struct gpu_desc *g, const struct plugin_model_request *rq,
		 struct plugin_model_answer *a, char *msg, size_t msglen)
{
	struct step_layout l = step_layout_of_spec(rq->spec, m);
	struct step_estimate e;
	struct step_stage peak;
	char why[LLMP_MSG_MAX], text[PEAK_TEXT];
	bool automatic_recompute = l.recompute == MODEL_RECOMPUTE_AUTO;
	if (step_layout_check(m, rq->world, &l, why, sizeof why) != LLMP_OK)
		return refuse(msg, msglen, "--llm-parallel for %s on %u tasks: %s (Megatron would refuse it)",
			      m->name, rq->world, why);
	if (estimate(m, g, rq->world, &l, &e, &peak, msg, msglen) < 0)
		return -1;
	if (!e.fits && automatic_recompute) {
		struct step_layout full = l;
		struct step_estimate ef;
		struct step_stage pf;
		full.recompute = MODEL_RECOMPUTE_FULL;
		if (estimate(m, g, rq->world, &full, &ef, &pf, msg, msglen) < 0)
			return -1;
		if (ef.fits)
			l = full, e = ef, peak = pf;
	}
	describe_peak(&l, &e, &peak, text, sizeof text);
	if (!e.fits)
		return refuse(msg, msglen,
			      "%s does not fit: %s, more than the %s's %.1f GiB (llmp plan --model ... "
			      "--parallel auto finds one that fits)",
			      m->name, text, g->name, g->mem_bytes / GIB);
	megatron_flags(m, &l, a);
	snprintf(a->note, sizeof a->note, "%s on %u GPUs (%s): %s of %.1f, about %.2f s a step%s", m->name,
		 rq->world, g->name, text, g->mem_bytes / GIB, e.step_s,
		 automatic_recompute && l.recompute == MODEL_RECOMPUTE_FULL
			 ? "; it fits only with full recompute"
			 : "");
	a->decided = true;
	return 0;
}

/*
 * sbatch: a written layout on an unknown world. Refused only if it cannot
 * fit at the data-parallel size that needs the least memory per GPU (the
 * largest the global batch allows, full recompute when llmp may choose),
 * so no job that some size could run is refused; srun checks the real one.
 */
static int guard_any_size(const struct model_desc *m, const struct gpu_desc *g,
			  const struct plugin_model_request *rq, char *msg, size_t msglen)
{
	struct step_layout l = step_layout_of_spec(rq->spec, m);
	if (l.recompute == MODEL_RECOMPUTE_AUTO)
		l.recompute = MODEL_RECOMPUTE_FULL;
	unsigned long long model = (unsigned long long)l.tp * l.pp * l.cp,
			   dp = l.dp     ? l.dp
				: m->gbs ? (unsigned long long)(m->gbs / l.mbs)
					 : SBATCH_DP_GUESS;
	if (!dp || model * dp > UINT32_MAX)
		return 0;
	uint32_t world = (uint32_t)(model * dp);
	struct step_estimate e;
	struct step_stage peak;
	char text[PEAK_TEXT];
	if (step_layout_check(m, world, &l, NULL, 0) != LLMP_OK ||
	    estimate(m, g, world, &l, &e, &peak, text, sizeof text) < 0 || e.fits)
		return 0; /* srun decides on the step's real size */
	describe_peak(&l, &e, &peak, text, sizeof text);
	return refuse(
		msg, msglen,
		"%s cannot fit a %s (%.1f GiB) at any job size: even with dp=%llu, %s (llmp plan --model "
		"... --parallel auto finds one that fits)",
		m->name, g->name, g->mem_bytes / GIB, dp, text);
}

int plugin_model_decide(const struct plugin_site *site, const struct plugin_model_request *rq,
			struct plugin_model_answer *a, char *msg, size_t msglen)
{
	struct model_desc m;
	struct gpu_desc g;
	char why[LLMP_MSG_MAX];

	memset(a, 0, sizeof *a);
	if (!rq->model) {
		if (rq->automatic)
			return refuse(
				msg, msglen,
				"--llm-parallel=auto needs the model: --llm-model=NAME|KEYS|config.json or "
				"LLMP_MODEL (--llm-model=help lists them)");
		return 0;
	}
	if (model_desc_parse(rq->model, &m, why, sizeof why) != LLMP_OK)
		return refuse(msg, msglen, "%s: %s", rq->model_source, why);
	if (!rq->gpu) {
		if (rq->automatic)
			return refuse(
				msg, msglen,
				"--llm-parallel=auto needs the GPU: set LLMP_GPU (e.g. h100, or "
				"mem=GiB,tflops=N), or ask the administrator for the plugin's gpu= setting");
		snprintf(
			a->note, sizeof a->note,
			"warning: %s is not checked against GPU memory: no GPU is known (set LLMP_GPU, e.g. h100)",
			m.name);
		return 0;
	}
	if (gpu_desc_parse(rq->gpu, &g, why, sizeof why) != LLMP_OK)
		return refuse(msg, msglen, "%s: %s", rq->gpu_source, why);
	if (rq->automatic && !m.gbs)
		return refuse(msg, msglen,
			      "--llm-parallel=auto needs the global batch: add gbs= (sequences) to %s",
			      rq->model_source);
	if (!rq->world) {
		if (rq->automatic)
			return 0; /* each srun chooses for its own task count */
		return guard_any_size(&m, &g, rq, msg, msglen);
	}
	return rq->automatic ? choose(site, &m, &g, rq, a, msg, msglen) : guard(&m, &g, rq, a, msg, msglen);
}
