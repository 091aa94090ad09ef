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

#include "json_writer.h"
#include "llmp_cli.h"
#include "topology/auto_layout.h"

#define PROG "llmp plan"
#define GIB (1024.0 * 1024.0 * 1024.0)
#define SHOWN_CANDIDATES 10

static const char *recompute_name(enum model_recompute r)
{
	static const char *const names[] = { "auto", "none", "selective", "full" };
	return names[r & 3];
}

/* ----------------------------------------------------------------- text */

static void text_model(const struct model_desc *m, const struct gpu_desc *g, uint32_t world, FILE *out)
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
	fprintf(out,
		"gpu:      %s: %.1f GiB, %.0f TFLOP/s bf16 at %.0f%%, NVLink %.0f GB/s in domains of %u, network "
		"%.1f GB/s; %u ranks\n",
		g->name, g->mem_bytes / GIB, g->bf16_flops / 1e12, 100 * g->efficiency, g->nvlink_gbps,
		g->domain, g->net_gbps, world);
}

static void text_estimate(const struct model_desc *m, const struct gpu_desc *g, const struct step_layout *l,
			  const struct step_stage *stages, const struct step_estimate *e, FILE *out)
{
	char buf[160];
	step_layout_format(l, buf, sizeof buf);
	fprintf(out, "layout:   %s\n", buf);
	fprintf(out, "memory:   peak %.1f GiB per GPU on stage %u (largest term: %s) of %.1f GiB: %s\n",
		e->peak_bytes / GIB, e->peak_stage, step_term_name(e->peak_term), g->mem_bytes / GIB,
		e->fits ? "fits" : "DOES NOT FIT");
	fprintf(out,
		"  stage  layers      weights    gradients    optimizer  activations    allowance        total\n");
	for (unsigned k = 0; k < l->pp; k++) {
		const struct step_stage *s = &stages[k];
		char layers[32];
		snprintf(layers, sizeof layers, "%u-%u", s->first_layer, s->first_layer + s->layers - 1);
		fprintf(out, "  %5u  %-8s %8.2f GiB %8.2f GiB %8.2f GiB %8.2f GiB %8.2f GiB %8.2f GiB\n", k,
			layers, s->weights / GIB, s->grads / GIB, s->optimizer / GIB, s->activations / GIB,
			s->allowance / GIB, s->total / GIB);
	}
	fprintf(out,
		"time:     step %.3f s = compute %.3f + bubble %.3f + exposed network tp %.3f cp %.3f ep %.3f dp %.3f "
		"pp %.3f; %.0f micro-batches; MFU %.1f%%\n",
		e->step_s, e->compute_s, e->bubble_s, e->net_s[0], e->net_s[1], e->net_s[2], e->net_s[3],
		e->net_s[4], e->microbatches, 100 * e->mfu);
	(void)m;
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
	json_object_end(w);
}

static void json_head(struct json_writer *w, const struct model_desc *m, const struct gpu_desc *g,
		      uint32_t world)
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
	json_bool(w, "distributed_optimizer", m->dist_opt);
	json_bool(w, "sequence_parallel", m->sp);
	json_bool(w, "flash_attention", m->flash);
	json_object_end(w);
	json_object(w, "gpu");
	json_string(w, "name", g->name);
	json_bytes(w, "memory_bytes", g->mem_bytes);
	json_double(w, "bf16_flops", g->bf16_flops);
	json_double(w, "efficiency", g->efficiency);
	json_double(w, "nvlink_gbps", g->nvlink_gbps);
	json_double(w, "network_gbps", g->net_gbps);
	json_uint(w, "nvlink_domain", g->domain);
	json_object_end(w);
	json_uint(w, "world", world);
}

static void json_estimate(struct json_writer *w, const struct step_layout *l, const struct step_stage *stages,
			  const struct step_estimate *e, const struct gpu_desc *g)
{
	json_layout(w, "layout", l);
	json_object(w, "memory");
	json_bytes(w, "peak_bytes", e->peak_bytes);
	json_uint(w, "peak_stage", e->peak_stage);
	json_string(w, "largest_term", step_term_name(e->peak_term));
	json_bytes(w, "budget_bytes", g->mem_bytes);
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
		json_object_end(w);
	}
	json_array_end(w);
	json_object_end(w);
	json_bool(w, "fits", e->fits);
	json_double(w, "step_seconds", e->step_s);
	json_object(w, "time");
	json_double(w, "compute_seconds", e->compute_s);
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

int cli_plan_step(const struct cli_plan_step *a)
{
	char msg[LLMP_MSG_MAX];
	struct model_desc m;
	struct gpu_desc g;
	if (model_desc_parse(a->model, &m, msg, sizeof msg) != LLMP_OK ||
	    gpu_desc_parse(a->gpu, &g, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, PROG ": %s\n", msg);
		return CLI_EXIT_USAGE;
	}
	struct step_layout l;
	struct step_estimate e;
	struct auto_result r = { 0 };
	if (a->automatic) {
		if (auto_layout(&m, &g, a->world, &r, msg, sizeof msg) != LLMP_OK) {
			fprintf(stderr, PROG ": %s\n", msg);
			return CLI_EXIT_USAGE;
		}
		l = r.all[0].layout;
	} else {
		const llmp_spec *s = a->spec;
		l = (struct step_layout){ .tp = s->size[LLMP_DIM_TP],
					  .pp = s->size[LLMP_DIM_PP],
					  .cp = s->size[LLMP_DIM_CP],
					  .ep = s->size[LLMP_DIM_EP],
					  .etp = s->etp,
					  .dp = s->size[LLMP_DIM_DP],
					  .vpp = s->vpp ? s->vpp : 1,
					  .mbs = (unsigned)m.mbs,
					  .recompute = m.recompute };
		if (step_layout_check(&m, a->world, &l, msg, sizeof msg) != LLMP_OK) {
			fprintf(stderr, PROG ": --parallel: %s\n", msg);
			return CLI_EXIT_USAGE;
		}
	}
	struct step_stage *stages = calloc(l.pp, sizeof *stages);
	if (!stages || step_estimate_placed(&m, &g, a->world, &l, a->network_s, stages, &e, msg,
					    sizeof msg) != LLMP_OK) {
		fprintf(stderr, PROG ": %s\n", stages ? msg : "out of memory");
		free(stages);
		auto_result_free(&r);
		return stages ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
	}

	FILE *out = stdout;
	size_t shown = r.n > 1 ? r.n - 1 : 0;
	if (shown > SHOWN_CANDIDATES)
		shown = SHOWN_CANDIDATES;
	char why[256], buf[160];
	int rc = 0;
	if (a->json) {
		struct json_writer w;
		json_begin(&w, out);
		json_object(&w, NULL);
		json_head(&w, &m, &g, a->world);
		json_estimate(&w, &l, stages, &e, &g);
		json_string(&w, "network_from", a->network_s ? a->placement : "nvlink-domain");
		if (a->automatic) {
			json_uint(&w, "considered", r.n);
			json_uint(&w, "fitting", r.fitting);
			json_array(&w, "candidates");
			for (size_t i = 1; i <= shown; i++) {
				const struct auto_candidate *c = &r.all[i];
				json_object(&w, NULL);
				json_layout(&w, "layout", &c->layout);
				json_bool(&w, "fits", c->est.fits);
				json_bytes(&w, "peak_bytes", c->est.peak_bytes);
				json_double(&w, "step_seconds", c->est.step_s);
				auto_why_lost(c, &r.all[0], &g, why, sizeof why);
				json_string(&w, "why", why);
				json_object_end(&w);
			}
			json_array_end(&w);
		}
		json_object_end(&w);
		rc = json_end(&w) ? 0 : -1;
	} else {
		text_model(&m, &g, a->world, out);
		if (a->automatic && r.fitting)
			fprintf(out,
				"chosen:   the fastest of %zu layouts that fit (%zu valid for %u ranks)\n",
				r.fitting, r.n, a->world);
		else if (a->automatic)
			fprintf(out,
				"chosen:   none of the %zu valid layouts for %u ranks fits: the one needing the least memory\n",
				r.n, a->world);
		if (a->network_s)
			fprintf(out, "network:  each dimension's time from its groups on the topology, %s\n",
				a->placement);
		else
			fprintf(out,
				"network:  NVLink inside domains of %u GPUs, the network across (no --topology)\n",
				g.domain);
		text_estimate(&m, &g, &l, stages, &e, out);
		if (shown)
			fprintf(out, "next:\n  %-62s %9s %10s  why it lost\n", "layout", "step", "peak");
		for (size_t i = 1; i <= shown; i++) {
			const struct auto_candidate *c = &r.all[i];
			step_layout_format(&c->layout, buf, sizeof buf);
			auto_why_lost(c, &r.all[0], &g, why, sizeof why);
			fprintf(out, "  %-62s %7.3f s %6.1f GiB  %s\n", buf, c->est.step_s,
				c->est.peak_bytes / GIB, why);
		}
	}
	if (!e.fits) {
		step_layout_format(&l, buf, sizeof buf);
		fprintf(stderr,
			PROG
			": warning: %s%s needs %.1f GiB per GPU on stage %u, more than the %s's %.1f GiB (largest term: %s)\n",
			a->automatic ? "no layout fits; the smallest, " : "", buf, e.peak_bytes / GIB,
			e.peak_stage, g.name, g.mem_bytes / GIB, step_term_name(e.peak_term));
	}
	free(stages);
	auto_result_free(&r);
	return finish(out, rc);
}
