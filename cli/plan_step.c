/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan_step.c - `llmp plan --model M --gpu G (--parallel SPEC | auto)`: the
 * step model's memory and time of a layout, or the chooser's pick and the
 * layouts it passed over (doc/step-model.md, doc/layout-json.md).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_writer.h"
#include "llmp_cli.h"
#include "planner/auto_layout.h"
#include "planner/hetero.h"
#include "planner/megatron_args.h"

#define PROG "llmp plan"
#define GIB (1024.0 * 1024.0 * 1024.0)
#define SHOWN_CANDIDATES 10

static const char *recompute_name(enum model_recompute r)
{
	static const char *const names[] = { "auto", "none", "selective", "full" };
	return names[r & 3];
}

/* ----------------------------------------------------------------- text */

/* machines: g is the weakest of the topology's GPUs, each stage below on its own. */
static void text_model(const struct model_desc *m, const struct gpu_desc *g, bool machines, uint32_t world,
		       FILE *out)
{
	fprintf(out,
		"model:    %s: %.0f layers, hidden %.0f, ffn %.0f%s, heads %.0f (kv %.0f), vocab %.0f, seq %.0f",
		m->name, m->layers, m->hidden, m->ffn, m->gated ? " swiglu" : "", m->heads, m->kv_heads,
		m->vocab, m->seq);
	if (m->experts)
		fprintf(out, ", %.0f experts top %.0f", m->experts, m->topk);
	fprintf(out, ", %.1f B parameters", model_desc_params(m) / 1e9);
	if (m->gbs)
		fprintf(out, ", gbs %.0f", m->gbs);
	fprintf(out, "\n");
	fprintf(out, "gpu:      %s%s: %.1f GiB, %.0f TFLOP/s bf16 at %.0f%%, HBM %.0f GB/s, ",
		machines ? "the weakest of the topology's: " : "", g->name, g->mem_bytes / GIB,
		g->bf16_flops / 1e12, 100 * g->efficiency, g->hbm_gbps);
	if (g->layer_overhead_s)
		fprintf(out, "%.3g ms a layer and micro-batch, ", 1e3 * g->layer_overhead_s);
	fprintf(out, "NVLink %.0f GB/s in domains of %u, network %.1f GB/s; %u ranks\n", g->nvlink_gbps,
		g->domain, g->net_gbps, world);
}

static enum step_term largest_term(const struct step_stage *s)
{
	double terms[5] = { s->weights, s->grads, s->optimizer, s->activations, s->allowance };
	enum step_term t = STEP_WEIGHTS;
	for (int i = 1; i < 5; i++)
		if (terms[i] > terms[t])
			t = (enum step_term)i;
	return t;
}

/* gpus: each stage's. */
static void text_estimate(const struct gpu_desc *gpus, const struct step_layout *l,
			  const struct step_stage *stages, const struct step_estimate *e, FILE *out)
{
	char buf[160];
	step_layout_format(l, buf, sizeof buf);
	fprintf(out, "layout:   %s\n", buf);
	fprintf(out, "memory:   peak %.1f GiB per GPU on stage %u (largest term: %s) of %.1f GiB: %s\n",
		e->peak_bytes / GIB, e->peak_stage, step_term_name(e->peak_term),
		gpus[e->peak_stage].mem_bytes / GIB, e->fits ? "fits" : "DOES NOT FIT");
	fprintf(out,
		"  stage  layers      weights    gradients    optimizer  activations    allowance        total  gpu\n");
	for (unsigned k = 0; k < l->pp; k++) {
		const struct step_stage *s = &stages[k];
		char layers[32];
		snprintf(layers, sizeof layers, "%u-%u", s->first_layer, s->first_layer + s->layers - 1);
		fprintf(out,
			"  %5u  %-8s %8.2f GiB %8.2f GiB %8.2f GiB %8.2f GiB %8.2f GiB %8.2f GiB  %s%s\n", k,
			layers, s->weights / GIB, s->grads / GIB, s->optimizer / GIB, s->activations / GIB,
			s->allowance / GIB, s->total / GIB, gpus[k].name,
			s->total > gpus[k].mem_bytes ? " (over)" : "");
	}
	char overhead[48] = "";
	if (e->overhead_s)
		snprintf(overhead, sizeof overhead, ", per-layer overhead %.3f", e->overhead_s);
	fprintf(out,
		"time:     step %.3f s = compute %.3f (elementwise %.3f%s) + bubble %.3f + exposed network tp "
		"%.3f cp %.3f ep %.3f dp %.3f pp %.3f; %.0f micro-batches; MFU %.1f%%\n",
		e->step_s, e->compute_s, e->elementwise_s, overhead, e->bubble_s, e->net_s[0], e->net_s[1],
		e->net_s[2], e->net_s[3], e->net_s[4], e->microbatches, 100 * e->mfu);
}

/* ----------------------------------------------------------------- JSON */

/* Bytes as a whole number: the model's doubles rounded. */
static void json_bytes(struct json_writer *w, const char *key, double bytes)
{
	json_uint(w, key, (uint64_t)(bytes + 0.5));
}

static void json_layout(struct json_writer *w, const char *key, const struct step_layout *l)
{
	json_object(w, key);
	json_uint(w, "tp", l->tp);
	json_uint(w, "pp", l->pp);
	json_uint(w, "cp", l->cp);
	json_uint(w, "ep", l->ep);
	json_uint(w, "etp", l->etp);
	json_uint(w, "dp", l->dp);
	json_uint(w, "vpp", l->vpp);
	json_uint(w, "mbs", l->mbs);
	json_string(w, "recompute", recompute_name(l->recompute));
	json_uint(w, "recompute_layers", l->recompute == MODEL_RECOMPUTE_FULL ? l->recompute_layers : 0);
	json_bool(w, "recompute_moe_act", l->recompute == MODEL_RECOMPUTE_SELECTIVE && l->moe_act);
	json_object_end(w);
}

/* zero_auto: the model said zero=auto and m->zero is the choice's. */
static void json_head(struct json_writer *w, const struct model_desc *m, const struct gpu_desc *g,
		      uint32_t world, bool zero_auto)
{
	json_object(w, "model");
	json_string(w, "name", m->name);
	json_uint(w, "parameters", (uint64_t)(model_desc_params(m) + 0.5));
	json_uint(w, "layers", (uint64_t)m->layers);
	json_uint(w, "hidden", (uint64_t)m->hidden);
	json_uint(w, "ffn", (uint64_t)m->ffn);
	json_uint(w, "heads", (uint64_t)m->heads);
	json_uint(w, "kv_heads", (uint64_t)m->kv_heads);
	json_uint(w, "vocab", (uint64_t)m->vocab);
	json_uint(w, "seq", (uint64_t)m->seq);
	json_uint(w, "experts", (uint64_t)m->experts);
	json_uint(w, "topk", (uint64_t)m->topk);
	json_uint(w, "gbs", (uint64_t)m->gbs);
	json_bool(w, "swiglu", m->gated);
	json_bool(w, "tied", m->tied);
	json_bool(w, "distributed_optimizer", m->zero >= 1);
	json_uint(w, "zero", m->zero);
	json_bool(w, "zero_auto", zero_auto);
	json_bool(w, "sequence_parallel", m->sp);
	json_bool(w, "flash_attention", m->flash);
	json_bool(w, "fp8", m->fp8);
	json_bool(w, "dropout", m->dropout);
	json_bool(w, "overlap_grad_reduce", m->overlap_grad);
	json_bool(w, "overlap_param_gather", m->overlap_grad && m->zero == 1 && m->overlap_param);
	json_string(w, "engine", model_engine_name(m->engine));
	json_object_end(w);
	json_object(w, "gpu");
	json_string(w, "name", g->name);
	json_bytes(w, "memory_bytes", g->mem_bytes);
	json_double(w, "bf16_flops", g->bf16_flops);
	json_double(w, "efficiency", g->efficiency);
	json_double(w, "hbm_gbps", g->hbm_gbps);
	json_double(w, "layer_overhead_seconds", g->layer_overhead_s);
	json_double(w, "nvlink_gbps", g->nvlink_gbps);
	json_double(w, "network_gbps", g->net_gbps);
	json_uint(w, "nvlink_domain", g->domain);
	json_object_end(w);
	json_uint(w, "world", world);
}

/* gpus: each stage's. */
static void json_estimate(struct json_writer *w, const struct step_layout *l, const struct step_stage *stages,
			  const struct step_estimate *e, const struct gpu_desc *gpus)
{
	json_layout(w, "layout", l);
	json_object(w, "memory");
	json_bytes(w, "peak_bytes", e->peak_bytes);
	json_uint(w, "peak_stage", e->peak_stage);
	json_string(w, "largest_term", step_term_name(e->peak_term));
	json_bytes(w, "budget_bytes", gpus[e->peak_stage].mem_bytes);
	json_array(w, "by_stage");
	for (unsigned k = 0; k < l->pp; k++) {
		json_object(w, NULL);
		json_uint(w, "stage", k);
		json_uint(w, "first_layer", stages[k].first_layer);
		json_uint(w, "layers", stages[k].layers);
		json_bytes(w, "weights_bytes", stages[k].weights);
		json_bytes(w, "gradients_bytes", stages[k].grads);
		json_bytes(w, "optimizer_bytes", stages[k].optimizer);
		json_bytes(w, "activations_bytes", stages[k].activations);
		json_bytes(w, "allowance_bytes", stages[k].allowance);
		json_bytes(w, "total_bytes", stages[k].total);
		json_string(w, "gpu", gpus[k].name);
		json_bytes(w, "gpu_memory_bytes", gpus[k].mem_bytes);
		json_object_end(w);
	}
	json_array_end(w);
	json_object_end(w);
	json_bool(w, "fits", e->fits);
	json_double(w, "step_seconds", e->step_s);
	json_object(w, "time");
	json_double(w, "compute_seconds", e->compute_s);
	json_double(w, "elementwise_seconds", e->elementwise_s);
	json_double(w, "overhead_seconds", e->overhead_s);
	json_double(w, "bubble_seconds", e->bubble_s);
	static const char *const net[5] = { "tp_seconds", "cp_seconds", "ep_seconds", "dp_seconds",
					    "pp_seconds" };
	for (int a = 0; a < 5; a++)
		json_double(w, net[a], e->net_s[a]);
	json_double(w, "microbatches", e->microbatches);
	json_double(w, "model_flops", e->flops);
	json_double(w, "mfu", e->mfu);
	json_object_end(w);
}

/* ------------------------------------------------------------------ main */

static int finish(FILE *out, int rc)
{
	if (fflush(out) != 0 || rc) {
		fprintf(stderr, PROG ": writing the output failed: %s\n", strerror(errno));
		return CLI_EXIT_FAILURE;
	}
	return CLI_EXIT_OK;
}

/* A pipeline on mixed GPUs: each stage's GPU and layers, the even split's time, how Megatron is told. */
struct pipeline {
	bool mixed;
	const struct gpu_desc *gpus; /* pp */
	const unsigned *layers;      /* pp */
	bool even_valid;             /* the even split passes Megatron's rules */
	struct step_estimate even;
	bool flags_suffice;
	char args[512]; /* Megatron's first/last flags, or the per-stage list */
};

static void text_pipeline(const struct pipeline *p, const struct step_layout *l,
			  const struct step_estimate *e, FILE *out)
{
	fprintf(out, "pipeline: stages on mixed GPUs, layers in proportion to speed and memory:");
	for (unsigned k = 0; k < l->pp; k++)
		fprintf(out, "%s stage %u %s %u", k ? "," : "", k, p->gpus[k].name, p->layers[k]);
	fprintf(out, "\n");
	if (p->even_valid)
		fprintf(out, "  even split: step %.3f s%s; this split %.3f s (%+.1f%%)\n", p->even.step_s,
			p->even.fits ? "" : " and DOES NOT FIT", e->step_s,
			100 * (e->step_s / p->even.step_s - 1));
	else
		fprintf(out, "  even split: not a valid layout here\n");
	if (p->flags_suffice)
		fprintf(out, "  megatron: %s\n", p->args[0] ? p->args : "(even: no flag)");
	else
		fprintf(out,
			"  megatron: the middle stages differ, which first/last flags cannot say: the layout file's "
			"stage_layers %s\n",
			p->args);
}

static void json_pipeline(struct json_writer *w, const struct pipeline *p, const struct step_layout *l)
{
	json_object(w, "pipeline");
	json_bool(w, "mixed_gpus", p->mixed);
	json_array(w, "stage_gpus");
	for (unsigned k = 0; k < l->pp; k++)
		json_string(w, NULL, p->gpus[k].name);
	json_array_end(w);
	json_array(w, "stage_layers");
	for (unsigned k = 0; k < l->pp; k++)
		json_uint(w, NULL, p->layers[k]);
	json_array_end(w);
	if (p->even_valid) {
		json_double(w, "even_step_seconds", p->even.step_s);
		json_bool(w, "even_fits", p->even.fits);
	} else {
		json_null(w, "even_step_seconds");
		json_null(w, "even_fits");
	}
	if (p->flags_suffice)
		json_string(w, "megatron_args", p->args);
	else
		json_null(w, "megatron_args");
	json_object_end(w);
}

/* The stages' GPUs and network of l: from the machines, or g everywhere and modelled. */
static int stages_of(const struct chooser_machines *on, const struct gpu_desc *g, struct step_layout *l,
		     struct gpu_desc *gpus, double net[5], struct pipeline *p)
{
	char msg[LLMP_MSG_MAX];
	if (on && on->place(on->ctx, l, net, gpus, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, PROG ": %s\n", msg);
		return CLI_EXIT_USAGE;
	}
	for (unsigned k = 0; !on && k < l->pp; k++)
		gpus[k] = *g;
	p->gpus = gpus;
	p->mixed = hetero_mixed(gpus, l->pp);
	return CLI_EXIT_OK;
}

/* The orders of the GPU kinds along the pipeline, each order's step. */
static void text_orders(const struct cli_plan_step *a, const struct step_estimate *est, size_t best,
			FILE *out)
{
	fprintf(out, "kinds:    GPU kinds along the pipeline, hosts of the first kind first: %s",
		a->order_names[best]);
	for (size_t i = 0; i < a->norders; i++)
		if (i != best && est[i].step_s >= 0)
			fprintf(out, "; %s %.3f s%s", a->order_names[i], est[i].step_s,
				est[i].fits ? "" : " (does not fit)");
		else if (i != best)
			fprintf(out, "; %s not valid", a->order_names[i]);
	fprintf(out, "\n");
}

static void json_orders(struct json_writer *w, const struct cli_plan_step *a, const struct step_estimate *est,
			size_t best)
{
	json_array(w, "kind_orders");
	for (size_t i = 0; i < a->norders; i++) {
		json_object(w, NULL);
		json_string(w, "order", a->order_names[i]);
		json_bool(w, "chosen", i == best);
		if (est[i].step_s >= 0) {
			json_double(w, "step_seconds", est[i].step_s);
			json_bool(w, "fits", est[i].fits);
		} else {
			json_null(w, "step_seconds");
			json_null(w, "fits");
		}
		json_object_end(w);
	}
	json_array_end(w);
}

/* A given layout on one order of the machines, quietly: its estimate, the layers split on mixed GPUs. */
static llmp_status score_on(const struct model_desc *m, uint32_t world, const struct chooser_machines *on,
			    struct step_layout l, struct step_estimate *e)
{
	struct gpu_desc *gpus = calloc(l.pp, sizeof *gpus);
	unsigned *split = calloc(l.pp, sizeof *split);
	double net[5];
	llmp_status st = gpus && split ? on->place(on->ctx, &l, net, gpus, NULL, 0) : LLMP_ERR_NOMEM;
	if (st == LLMP_OK && hetero_mixed(gpus, l.pp)) {
		st = hetero_split(m, gpus, &l, split, NULL, 0);
		l.stage_layers = split;
	}
	if (st == LLMP_OK)
		st = step_estimate_stages(m, gpus, world, &l, net, NULL, e, NULL, 0);
	free(gpus);
	free(split);
	return st;
}

/*
 * The --gpu text without the keys a calibration replaces: eff=, layer-ms=
 * when the overhead was fitted too, and nvlink= when the link was.
 */
static void gpu_text_uncalibrated(const char *gpu, bool overhead, bool link, char *out, size_t len)
{
	size_t n = 0;
	out[0] = '\0';
	for (const char *p = gpu; *p;) {
		size_t k = strcspn(p, ",");
		bool drop = (k >= 4 && strncmp(p, "eff=", 4) == 0) ||
			    (overhead && k >= 9 && strncmp(p, "layer-ms=", 9) == 0) ||
			    (link && k >= 7 && strncmp(p, "nvlink=", 7) == 0);
		if (!drop && n + k + 2 < len) {
			n += (size_t)snprintf(out + n, len - n, "%s%.*s", n ? "," : "", (int)k, p);
		}
		p += k + (p[k] == ',');
	}
}

/*
 * The "calibrated:" line: what g was fitted to from what it stated, on
 * which measured steps of l, and the --gpu text that scores on it.
 */
static void text_calibrated(const struct cli_plan_step *a, const struct step_layout *l,
			    const struct gpu_desc *stated, const struct gpu_desc *g, FILE *out)
{
	bool mbs = a->measured_step2 > 0, tp = a->measured_step_tp > 0;
	char base[256];
	gpu_text_uncalibrated(a->gpu, mbs, tp, base, sizeof base);
	fprintf(out, "calibrated: efficiency %.3f (stated %.3f)", g->efficiency, stated->efficiency);
	if (mbs)
		fprintf(out, "%s%.2f ms a layer and micro-batch (stated %.2f)", tp ? ", " : " and ",
			1e3 * g->layer_overhead_s, 1e3 * stated->layer_overhead_s);
	if (tp)
		fprintf(out, " and NVLink %.1f GB/s (stated %.1f)", g->nvlink_gbps, stated->nvlink_gbps);
	if (mbs && tp)
		fprintf(out,
			" give the measured %.4g s at mbs %u and tp %u, %.4g s at mbs %u and %.4g s at tp %u",
			a->measured_step, l->mbs, l->tp, a->measured_step2, a->measured_mbs2,
			a->measured_step_tp, a->measured_tp2);
	else if (mbs)
		fprintf(out, " give the measured %.4g s at mbs %u and %.4g s at mbs %u", a->measured_step,
			l->mbs, a->measured_step2, a->measured_mbs2);
	else if (tp)
		fprintf(out, " give the measured %.4g s at tp %u and %.4g s at tp %u", a->measured_step,
			l->tp, a->measured_step_tp, a->measured_tp2);
	else
		fprintf(out, " gives the measured %.4g s", a->measured_step);
	fprintf(out, "; score other layouts with --gpu %s,eff=%.3f", base, g->efficiency);
	if (mbs)
		fprintf(out, ",layer-ms=%.2f", 1e3 * g->layer_overhead_s);
	if (tp)
		fprintf(out, ",nvlink=%.1f", g->nvlink_gbps);
	fputc('\n', out);
}

/* Whether a second measured step is at the layout's own size (said on stderr): it says nothing new. */
static bool same_size(const char *option, const char *key, const char *whose, const char *what,
		      unsigned given, unsigned own)
{
	if (given != own)
		return false;
	fprintf(stderr, PROG ": %s: %s %u is the %s own (%s=%u): the second step needs another %s\n", option,
		key, given, whose, key, own, what);
	return true;
}

/* Whether x beats y: fitting first, then faster. */
static bool better(const struct step_estimate *x, const struct step_estimate *y)
{
	return x->fits != y->fits ? x->fits : x->step_s < y->step_s;
}

/*
 * With several orders of the machines (GPU kinds along the pipeline), the
 * best: for auto, each order's choice; for a layout, its estimate on each.
 * order_est gets each order's; r the chosen order's auto result.
 */
static int best_order(const struct cli_plan_step *a, const struct model_desc *m, const struct gpu_desc *g,
		      const struct step_layout *given, struct chooser_result *r,
		      struct step_estimate *order_est, size_t *best)
{
	char msg[LLMP_MSG_MAX], first[LLMP_MSG_MAX] = "";
	size_t n = a->norders ? a->norders : 1, found = 0;
	*best = 0;
	for (size_t i = 0; i < n; i++) {
		const struct chooser_machines *on = a->on ? &a->on[i] : NULL;
		struct chooser_result ri = { 0 };
		llmp_status st = a->choose_layout ? chooser_run_on(m, g, a->world, on, &ri, msg, sizeof msg)
				 : on             ? score_on(m, a->world, on, *given, &order_est[i])
						  : LLMP_OK;
		if (st != LLMP_OK) {
			if (!first[0])
				snprintf(first, sizeof first, "%s", msg);
			order_est[i] = (struct step_estimate){ .step_s = -1 };
			continue;
		}
		if (a->choose_layout)
			order_est[i] = ri.all[0].est;
		if (!found++ || better(&order_est[i], &order_est[*best])) {
			*best = i;
			if (a->choose_layout) {
				chooser_result_free(r);
				*r = ri;
				continue;
			}
		}
		chooser_result_free(&ri);
	}
	if (found)
		return CLI_EXIT_OK;
	fprintf(stderr, PROG ": %s\n", first[0] ? first : "no order of the machines could place the layout");
	return CLI_EXIT_USAGE;
}

/*
 * Megatron-LM's flags for the layout l and what its estimate assumed, as
 * the plugin hands them to a step (LLMP_MEGATRON_ARGS): "" under
 * engine=torch, whose script reads the layout, and where Megatron cannot
 * state the rank order given.
 */
static void megatron_flags(const llmp_spec *given, const struct model_desc *m, const struct step_layout *l,
			   uint32_t world, char *out, size_t len)
{
	llmp_spec s;
	llmp_plan *plan = NULL;
	char model[512];
	out[0] = '\0';
	if (m->engine == MODEL_ENGINE_TORCH)
		return;
	step_layout_spec(l, given, true, &s);
	if (llmp_plan_create(&s, world, 0, &plan, NULL, 0) != LLMP_OK)
		return;
	int rc = megatron_layout_args(plan, out, len);
	llmp_plan_destroy(plan);
	size_t n = rc == 0 ? strlen(out) : 0;
	if (rc != 0 || !megatron_model_args(m, l, model, sizeof model, NULL) ||
	    (model[0] && (size_t)snprintf(out + n, len - n, " %s", model) >= len - n))
		out[0] = '\0';
}

/* What cli_plan_step works out, one step after the other, for the output. */
struct step_work {
	struct model_desc m;
	struct gpu_desc g;      /* the GPU scored on: calibrated when a step was measured */
	struct gpu_desc stated; /* g as given, before a calibration */
	bool zero_auto;         /* the model said zero=auto; m.zero is then the choice's */
	struct step_layout l;
	struct chooser_result r; /* --parallel auto's candidates, the choice first; empty for a layout */
	struct step_estimate order_est[CLI_ORDERS_MAX];
	size_t best;                       /* the order of the machines taken */
	const struct chooser_machines *on; /* that order's machines; NULL: modelled */
	struct step_stage *stages;         /* pp */
	struct gpu_desc *gpus;             /* pp: each stage's */
	unsigned *split;                   /* pp: the layers on mixed GPUs */
	struct pipeline pipe;
	double net[5];
	struct step_estimate e;
	char megatron[1024];
};

static void work_free(struct step_work *w)
{
	free(w->stages);
	free(w->gpus);
	free(w->split);
	chooser_result_free(&w->r);
}

/* The model, and the GPU: the machines' weakest, else --gpu. */
static int read_model(const struct cli_plan_step *a, struct step_work *w)
{
	char msg[LLMP_MSG_MAX];
	if (model_desc_parse(a->model, &w->m, msg, sizeof msg) != LLMP_OK ||
	    (!a->machine_gpu && gpu_desc_parse(a->gpu, &w->g, msg, sizeof msg) != LLMP_OK)) {
		fprintf(stderr, PROG ": %s\n", msg);
		return CLI_EXIT_USAGE;
	}
	if (a->machine_gpu)
		w->g = *a->machine_gpu;
	w->zero_auto = w->m.zero == MODEL_ZERO_AUTO;
	return CLI_EXIT_OK;
}

/* The layout: --parallel auto's choice, or the one given, checked; on several orders of the machines, the best. */
static int choose_layout(const struct cli_plan_step *a, struct step_work *w)
{
	char msg[LLMP_MSG_MAX];
	if (a->choose_layout) {
		if (best_order(a, &w->m, &w->g, NULL, &w->r, w->order_est, &w->best) != CLI_EXIT_OK)
			return CLI_EXIT_USAGE;
		w->l = w->r.all[0].layout;
		if (w->zero_auto) /* from here on the model is the choice's */
			w->m.zero = w->r.all[0].zero;
		return CLI_EXIT_OK;
	}
	w->l = step_layout_of_spec(a->spec, &w->m);
	if (step_layout_check(&w->m, a->world, &w->l, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, PROG ": --parallel: %s\n", msg);
		return CLI_EXIT_USAGE;
	}
	if (a->norders > 1 &&
	    best_order(a, &w->m, &w->g, &w->l, &w->r, w->order_est, &w->best) != CLI_EXIT_OK)
		return CLI_EXIT_USAGE;
	return CLI_EXIT_OK;
}

/* --measured-step (and its pair): the GPU fitted to the steps measured of the layout. */
static int calibrate(const struct cli_plan_step *a, struct step_work *w)
{
	char msg[LLMP_MSG_MAX];
	w->stated = w->g;
	if ((a->measured_step2 && same_size("--measured-step-mbs", "mbs", "model's", "micro-batch size",
					    a->measured_mbs2, w->l.mbs)) ||
	    (a->measured_step_tp && same_size("--measured-step-tp", "tp", "layout's", "tensor-parallel size",
					      a->measured_tp2, w->l.tp)))
		return CLI_EXIT_USAGE;
	struct step_measured measured = { .step_s = a->measured_step,
					  .mbs2 = a->measured_step2 ? a->measured_mbs2 : 0,
					  .tp2 = a->measured_step_tp ? a->measured_tp2 : 0,
					  .mbs2_s = a->measured_step2,
					  .tp2_s = a->measured_step_tp };
	llmp_status fitted = !a->measured_step ? LLMP_OK
					       : step_calibrate(&w->m, &w->g, a->world, &w->l, &measured,
								&w->g, msg, sizeof msg);
	if (fitted != LLMP_OK) {
		/* The pair's option when one was given; with both, the message says which. */
		const char *culprit = !a->measured_step2 == !a->measured_step_tp ? "--measured-step"
				      : a->measured_step2                        ? "--measured-step-mbs"
										 : "--measured-step-tp";
		fprintf(stderr, PROG ": %s: %s\n", culprit, msg);
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

/* Each stage of the layout on its GPU: the network, the layers split on mixed GPUs, the memory and time. */
static int estimate_stages(const struct cli_plan_step *a, struct step_work *w)
{
	char msg[LLMP_MSG_MAX];
	struct step_layout *l = &w->l;
	w->on = a->on ? &a->on[w->best] : NULL;
	w->stages = calloc(l->pp, sizeof *w->stages);
	w->gpus = calloc(l->pp, sizeof *w->gpus);
	w->split = calloc(l->pp, sizeof *w->split);
	int rc = w->stages && w->gpus && w->split ? stages_of(w->on, &w->g, l, w->gpus, w->net, &w->pipe)
						  : CLI_EXIT_FAILURE;
	if (rc == CLI_EXIT_OK && w->pipe.mixed && !l->stage_layers) {
		if (hetero_split(&w->m, w->gpus, l, w->split, msg, sizeof msg) != LLMP_OK) {
			fprintf(stderr, PROG ": %s\n", msg);
			rc = CLI_EXIT_USAGE;
		}
		l->stage_layers = w->split;
	}
	if (rc == CLI_EXIT_OK && step_estimate_stages(&w->m, w->gpus, a->world, l, w->on ? w->net : NULL,
						      w->stages, &w->e, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, PROG ": %s\n", msg);
		rc = CLI_EXIT_USAGE;
	}
	if (rc == CLI_EXIT_OK && w->pipe.mixed) {
		struct step_layout even = *l;
		even.stage_layers = NULL;
		w->pipe.layers = l->stage_layers;
		w->pipe.even_valid = step_layout_check(&w->m, a->world, &even, NULL, 0) == LLMP_OK &&
				     step_estimate_stages(&w->m, w->gpus, a->world, &even,
							  w->on ? w->net : NULL, NULL, &w->pipe.even, NULL,
							  0) == LLMP_OK;
		w->pipe.flags_suffice = hetero_megatron_args(l->stage_layers, l->pp, w->pipe.args,
							     sizeof w->pipe.args);
	}
	if (rc == CLI_EXIT_FAILURE)
		fprintf(stderr, PROG ": out of memory\n");
	return rc;
}

/* The candidates --parallel auto passed over that are shown: at most SHOWN_CANDIDATES. */
static size_t shown_candidates(const struct step_work *w)
{
	size_t shown = w->r.n > 1 ? w->r.n - 1 : 0;
	return shown > SHOWN_CANDIDATES ? SHOWN_CANDIDATES : shown;
}

/* doc/layout-json.md's step-model document; 0, or -1 on an output error. */
static int write_json(const struct cli_plan_step *a, const struct step_work *w, FILE *out)
{
	char why[256];
	struct json_writer jw;
	json_begin(&jw, out);
	json_object(&jw, NULL);
	json_head(&jw, &w->m, &w->g, a->world, w->zero_auto);
	if (a->measured_step) {
		json_double(&jw, "measured_step_seconds", a->measured_step);
		json_double(&jw, "calibrated_efficiency", w->g.efficiency);
	}
	if (a->measured_step2) {
		json_uint(&jw, "measured_step_mbs", a->measured_mbs2);
		json_double(&jw, "measured_step_mbs_seconds", a->measured_step2);
		json_double(&jw, "calibrated_layer_overhead_seconds", w->g.layer_overhead_s);
	}
	if (a->measured_step_tp) {
		json_uint(&jw, "measured_step_tp", a->measured_tp2);
		json_double(&jw, "measured_step_tp_seconds", a->measured_step_tp);
		json_double(&jw, "calibrated_nvlink_gbps", w->g.nvlink_gbps);
	}
	json_estimate(&jw, &w->l, w->stages, &w->e, w->gpus);
	if (w->pipe.mixed)
		json_pipeline(&jw, &w->pipe, &w->l);
	json_string(&jw, "network_from", w->on ? a->placement : "nvlink-domain");
	json_string(&jw, "megatron_args", w->megatron);
	if (a->norders > 1)
		json_orders(&jw, a, w->order_est, w->best);
	if (a->choose_layout) {
		size_t shown = shown_candidates(w);
		json_uint(&jw, "considered", w->r.n);
		json_uint(&jw, "fitting", w->r.fitting);
		json_array(&jw, "candidates");
		for (size_t i = 1; i <= shown; i++) {
			const struct chooser_candidate *c = &w->r.all[i];
			json_object(&jw, NULL);
			json_layout(&jw, "layout", &c->layout);
			json_uint(&jw, "zero", c->zero);
			json_bool(&jw, "fits", c->est.fits);
			json_bytes(&jw, "peak_bytes", c->est.peak_bytes);
			json_double(&jw, "step_seconds", c->est.step_s);
			chooser_why_lost(c, &w->r.all[0], &w->g, why, sizeof why);
			json_string(&jw, "why", why);
			json_object_end(&jw);
		}
		json_array_end(&jw);
	}
	json_object_end(&jw);
	return json_end(&jw) ? 0 : -1;
}

/* The text report: model and GPU, how the layout was chosen, its network, stages and the runners-up. */
static void write_text(const struct cli_plan_step *a, const struct step_work *w, FILE *out)
{
	char why[256], buf[160];
	const struct chooser_result *r = &w->r;
	text_model(&w->m, &w->g, a->machine_gpu != NULL, a->world, out);
	if (a->measured_step) /* only with --gpu (cmd_plan.c) */
		text_calibrated(a, &w->l, &w->stated, &w->g, out);
	if (a->choose_layout && r->fitting)
		fprintf(out,
			"chosen:   the fastest of %zu layouts that fit, the fewest pipeline stages among "
			"those within %.0f%% of it (%zu valid for %u ranks)\n",
			r->fitting, 100 * CHOOSER_TIE_BAND, r->n, a->world);
	else if (a->choose_layout)
		fprintf(out,
			"chosen:   none of the %zu valid layouts for %u ranks fits: the one needing the least memory\n",
			r->n, a->world);
	if (a->choose_layout && w->zero_auto)
		fprintf(out, "sharding: zero=%u, tried with zero=1, 2 and 3 (zero=auto)\n", w->m.zero);
	if (w->on)
		fprintf(out, "network:  each dimension's time from its groups on the topology, %s\n",
			a->placement);
	else
		fprintf(out,
			"network:  NVLink inside domains of %u GPUs, the network across (no --topology)\n",
			w->g.domain);
	if (a->norders > 1)
		text_orders(a, w->order_est, w->best, out);
	text_estimate(w->gpus, &w->l, w->stages, &w->e, out);
	if (w->pipe.mixed)
		text_pipeline(&w->pipe, &w->l, &w->e, out);
	if (w->megatron[0])
		fprintf(out, "megatron: %s\n", w->megatron);
	size_t shown = shown_candidates(w);
	int width = 62; /* the layout column: as wide as its widest entry */
	for (size_t i = 1; i <= shown; i++) {
		chooser_candidate_format(&r->all[i], w->zero_auto, buf, sizeof buf);
		width = (int)strlen(buf) > width ? (int)strlen(buf) : width;
	}
	if (shown)
		fprintf(out, "next:\n  %-*s %9s %10s  why it lost\n", width, "layout", "step", "peak");
	for (size_t i = 1; i <= shown; i++) {
		const struct chooser_candidate *c = &r->all[i];
		chooser_candidate_format(c, w->zero_auto, buf, sizeof buf);
		chooser_why_lost(c, &r->all[0], &w->g, why, sizeof why);
		fprintf(out, "  %-*s %7.3f s %6.1f GiB  %s\n", width, buf, c->est.step_s,
			c->est.peak_bytes / GIB, why);
	}
}

/* On stderr, when the layout does not fit: the first stage over its own GPU's memory. */
static void warn_over(const struct cli_plan_step *a, const struct step_work *w)
{
	char buf[160];
	if (w->e.fits)
		return;
	unsigned k = 0;
	while (k + 1 < w->l.pp && w->stages[k].total <= w->gpus[k].mem_bytes)
		k++;
	step_layout_format(&w->l, buf, sizeof buf);
	fprintf(stderr,
		PROG
		": warning: %s%s needs %.1f GiB per GPU on stage %u, more than the %s's %.1f GiB (largest term: %s)\n",
		a->choose_layout ? "no layout fits; the smallest, " : "", buf, w->stages[k].total / GIB, k,
		w->gpus[k].name, w->gpus[k].mem_bytes / GIB, step_term_name(largest_term(&w->stages[k])));
}

int cli_plan_step(const struct cli_plan_step *a)
{
	struct step_work w = { 0 };
	int rc = read_model(a, &w);
	if (rc == CLI_EXIT_OK)
		rc = choose_layout(a, &w);
	if (rc == CLI_EXIT_OK)
		rc = calibrate(a, &w);
	if (rc == CLI_EXIT_OK)
		rc = estimate_stages(a, &w);
	if (rc != CLI_EXIT_OK) {
		work_free(&w);
		return rc;
	}
	megatron_flags(a->choose_layout ? NULL : a->spec, &w.m, &w.l, a->world, w.megatron,
		       sizeof w.megatron);
	FILE *out = stdout;
	int wrc = 0;
	if (a->json)
		wrc = write_json(a, &w, out);
	else
		write_text(a, &w, out);
	warn_over(a, &w);
	work_free(&w);
	return finish(out, wrc);
}
