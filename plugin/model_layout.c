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
#include "planner/hetero.h"
#include "planner/megatron_args.h"
#include "planner/mem_guard.h"
#include <llmp/llmp_env.h>

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

/*
 * The flags Megatron-LM needs to run what the estimate assumed. Sizes are
 * in LLMP_MEGATRON_ARGS already; these are the model's side. A PyTorch-native
 * stack (engine=torch) has no such flags: its script reads the layout.
 */
static const char flags_too_long[] = "the Megatron flags for this layout are longer than " LLMP_ENV_MODEL_ARGS
				     " holds (511 bytes): nothing is handed on cut short";

static void megatron_flags(const struct model_desc *m, const struct step_layout *l,
			   struct plugin_model_answer *a)
{
	a->megatron_cut = !megatron_model_args(m, l, a->megatron, sizeof a->megatron, &a->flags_say_stages);
	if (!l->stage_layers)
		return;
	/* mixed GPUs: hetero_split's layers, unless even after all */
	char uneven[PLUGIN_MODEL_ARGS_MAX];
	if (m->engine == MODEL_ENGINE_MEGATRON &&
	    hetero_megatron_args(l->stage_layers, l->pp, uneven, sizeof uneven) && !uneven[0])
		return;
	/* the list, for the step's layout file and the tasks (LLMP_STAGE_LAYERS) */
	size_t used = 0;
	a->stage_layers[0] = '\0';
	for (unsigned k = 0; k < l->pp && l->pp <= PLUGIN_STAGES_MAX && used < sizeof a->stage_layers; k++) {
		int n = snprintf(a->stage_layers + used, sizeof a->stage_layers - used, "%s%u", k ? "," : "",
				 l->stage_layers[k]);
		if (n < 0 || (size_t)n >= sizeof a->stage_layers - used) {
			a->stage_layers[0] = '\0'; /* too many stages to say: the note names none */
			break;
		}
		used += (size_t)n;
	}
}

int plugin_stage_layers_parse(const char *text, uint32_t pp, uint32_t *layers, char *msg, size_t msglen)
{
	const char *p = text;
	uint32_t k = 0;
	if (pp == 0 || pp > PLUGIN_STAGES_MAX)
		return refuse(msg, msglen, "%u pipeline stages: at most %u can be listed", pp,
			      PLUGIN_STAGES_MAX);
	while (k < pp) {
		unsigned long v = 0;
		const char *start = p;
		while (*p >= '0' && *p <= '9' && p - start < 6)
			v = v * 10 + (unsigned long)(*p++ - '0');
		if (p == start || v == 0 || (*p >= '0' && *p <= '9'))
			return refuse(msg, msglen, "stage %u: expected a count of layers from 1 to 999999",
				      k);
		layers[k++] = (uint32_t)v;
		if (*p != ',' || k == pp)
			break;
		p++;
	}
	if (k != pp || *p)
		return refuse(msg, msglen, "not %u counts separated by commas", pp);
	return 0;
}

bool plugin_model_args_valid(const char *text)
{
	size_t n = strnlen(text, PLUGIN_MODEL_ARGS_MAX);
	if (n == PLUGIN_MODEL_ARGS_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = text[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == ' '))
			return false;
	}
	return true;
}

/* The choice as a layout spec: the site's defaults (the order) with every size given. */
static void to_spec(const struct plugin_site *site, const struct step_layout *l, llmp_spec *s)
{
	step_layout_spec(l, &site->defaults, true, s);
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

/*
 * Estimate l (checked) into e, the peak stage's terms and its GPU; -1 with
 * msg on failure. On machines, l is placed there and, on mixed GPUs, its
 * layers split: l->stage_layers then points at *split, the caller's to free.
 */
/*
 * "h100:61234,..." for LLMP_MODEL_PEAKS: each stage's GPU and its total, MiB
 * rounded up; "" when too long or past the stages the step reads (its tasks
 * then check no GPU, rather than the step failing on a list it refuses).
 */
static void peaks_text(const struct step_stage *stages, const struct gpu_desc *gpus, unsigned pp, char *buf,
		       size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (unsigned k = 0; k < pp && pp <= PLUGIN_STAGES_MAX; k++) {
		double exact = stages[k].total / (1024.0 * 1024.0);
		unsigned long long mib = exact > 0 && exact < 1e9 ? (unsigned long long)exact : 0;
		if ((double)mib < exact || mib == 0)
			mib++; /* rounded up: the check must never pass a GPU the estimate would refuse */
		int n = snprintf(buf + used, len - used, "%s%s:%llu", k ? "," : "", gpus[k].name, mib);
		if (n < 0 || (size_t)n >= len - used) {
			buf[0] = '\0';
			return;
		}
		used += (size_t)n;
	}
}

static int estimate(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
		    const struct chooser_machines *on, struct step_layout *l, unsigned **split,
		    struct step_estimate *e, struct step_stage *peak, struct gpu_desc *peak_gpu, char *msg,
		    size_t msglen, char *peaks, size_t peaks_len)
{
	struct step_stage *stages = calloc(l->pp, sizeof *stages);
	struct gpu_desc *gpus = calloc(l->pp, sizeof *gpus);
	char why[LLMP_MSG_MAX];
	double net[5];
	llmp_status st = stages && gpus ? LLMP_OK : LLMP_ERR_NOMEM;
	for (unsigned k = 0; st == LLMP_OK && k < l->pp; k++)
		gpus[k] = *g;
	if (st == LLMP_OK && on)
		st = on->place(on->ctx, l, net, gpus, why, sizeof why);
	if (st == LLMP_OK && on && hetero_mixed(gpus, l->pp)) {
		free(*split);
		*split = calloc(l->pp, sizeof **split);
		st = *split ? hetero_split(m, gpus, l, *split, why, sizeof why) : LLMP_ERR_NOMEM;
		l->stage_layers = *split;
	}
	if (st == LLMP_OK)
		st = on ? step_estimate_stages(m, gpus, world, l, net, stages, e, why, sizeof why)
			: step_estimate(m, g, world, l, stages, e, why, sizeof why);
	int rc = st == LLMP_OK ? 0 : -1;
	if (rc == 0)
		*peak = stages[e->peak_stage], *peak_gpu = gpus[e->peak_stage];
	if (rc == 0) {
		if (peaks)
			peaks_text(stages, gpus, l->pp, peaks, peaks_len);
	} else if (st == LLMP_ERR_NOMEM) {
		refuse(msg, msglen, "out of memory");
	} else {
		refuse(msg, msglen, "the step model: %s", why);
	}
	free(stages);
	free(gpus);
	return rc;
}

static int choose(const struct plugin_site *site, const struct model_desc *m, const struct gpu_desc *g,
		  const struct plugin_model_request *rq, const struct chooser_machines *on,
		  struct plugin_model_answer *a, char *msg, size_t msglen)
{
	struct chooser_result r;
	char why[LLMP_MSG_MAX], layout[PEAK_TEXT];
	if (chooser_run_on(m, g, rq->world, on, &r, why, sizeof why) != LLMP_OK)
		return refuse(msg, msglen, "--llm-parallel=auto: %s", why);
	bool zero_auto = m->zero == MODEL_ZERO_AUTO;
	struct model_desc chosen = *m; /* with zero=auto, the sharding the candidate was scored with */
	if (!r.fitting) {
		struct step_stage peak;
		struct gpu_desc peak_gpu;
		unsigned *split = NULL;
		chosen.zero = r.all[0].zero;
		int rc = estimate(&chosen, g, rq->world, on, &r.all[0].layout, &split, &r.all[0].est, &peak,
				  &peak_gpu, msg, msglen, NULL, 0);
		if (rc == 0) {
			describe_peak(&r.all[0].layout, &r.all[0].est, &peak, layout, sizeof layout);
			refuse(msg, msglen,
			       "--llm-parallel=auto: %s does not fit %u GPUs of %.1f GiB (%s) in any of %zu "
			       "layouts: the smallest, %s; use more GPUs or a smaller micro-batch or sequence",
			       m->name, rq->world, peak_gpu.mem_bytes / GIB, peak_gpu.name, r.n, layout);
		}
		free(split);
		chooser_result_free(&r);
		return -1;
	}
	/* The choice (auto_layout.h), else the next that fits and that the site allows (max_tp=, ...). */
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
		chooser_result_free(&r);
		return -1;
	}
	const struct chooser_candidate *c = &r.all[i];
	chosen.zero = c->zero;
	m = &chosen;
	megatron_flags(m, &c->layout, a);
	if (a->megatron_cut) {
		chooser_result_free(&r);
		return refuse(msg, msglen, "--llm-parallel=auto: %s", flags_too_long);
	}
	{ /* the chosen layout's stages again, for the tasks' check of their GPU */
		struct step_layout again = c->layout;
		struct step_estimate e;
		struct step_stage peak;
		struct gpu_desc peak_gpu;
		unsigned *split = NULL;
		if (estimate(m, g, rq->world, on, &again, &split, &e, &peak, &peak_gpu, why, sizeof why,
			     a->peaks, sizeof a->peaks) < 0)
			a->peaks[0] = '\0';
		free(split);
	}
	chooser_candidate_format(c, zero_auto, layout, sizeof layout);
	int n = snprintf(
		a->note, sizeof a->note,
		"--llm-parallel=auto chose %s for %s on %u GPUs (%s%s): %.1f of %.1f GiB, about %.2f s a step; "
		"%zu of %zu layouts fit (llmp plan --parallel auto lists them)",
		layout, m->name, rq->world, on ? "placed on the topology, the weakest " : "", g->name,
		c->est.peak_bytes / GIB, g->mem_bytes / GIB, c->est.step_s, r.fitting, r.n);
	if (a->stage_layers[0] && !a->flags_say_stages && n > 0 && (size_t)n < sizeof a->note)
		snprintf(a->note + n, sizeof a->note - (size_t)n,
			 "; layers per stage %s (" LLMP_ENV_STAGE_LAYERS
			 ", the layout file's stage_layers): more than Megatron's first/last stage flags say",
			 a->stage_layers);
	a->decided = true;
	chooser_result_free(&r);
	return 0;
}

/* One layout the guard estimated, with what it owns. */
struct guarded {
	struct step_layout l;
	struct step_estimate e;
	struct step_stage peak;
	struct gpu_desc peak_gpu;
	unsigned *split; /* on mixed GPUs, hetero_split's layers (l.stage_layers) */
	char peaks[PLUGIN_PEAKS_MAX];
};

static int guarded_estimate(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			    const struct chooser_machines *on, struct guarded *t, char *msg, size_t msglen)
{
	t->l.stage_layers = NULL;
	return estimate(m, g, world, on, &t->l, &t->split, &t->e, &t->peak, &t->peak_gpu, msg, msglen,
			t->peaks, sizeof t->peaks);
}

/* Halving over recompute_layers (step_fewest_layers) with the guard's estimate. */
struct block_try {
	const struct model_desc *m;
	const struct gpu_desc *g;
	uint32_t world;
	const struct chooser_machines *on;
	struct step_layout l;
};

static bool block_fits(void *ctx, unsigned n)
{
	struct block_try *t = ctx;
	struct guarded b = { .l = t->l };
	char why[LLMP_MSG_MAX];
	b.l.recompute_layers = n;
	int rc = guarded_estimate(t->m, t->g, t->world, t->on, &b, why, sizeof why);
	free(b.split);
	return rc == 0 && b.e.fits;
}

/*
 * best (selective recompute, left to llmp) does not fit: on an MoE model
 * under Megatron, the experts' activation recomputed too (--recompute-modules
 * moe_act); else full recompute, on the fewest layers of each chunk that fit
 * (Megatron's block method), replaces it where it fits.
 */
static int recompute_to_fit(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			    const struct chooser_machines *on, struct guarded *best, char *msg, size_t msglen)
{
	struct guarded act = { .l = best->l }, full = { .l = best->l }, block = { .l = best->l };
	int rc = 0;
	struct guarded *pick = NULL;
	if (m->experts && m->engine == MODEL_ENGINE_MEGATRON) {
		act.l.moe_act = true;
		rc = guarded_estimate(m, g, world, on, &act, msg, msglen);
		pick = rc == 0 && act.e.fits ? &act : NULL;
	}
	full.l.recompute = block.l.recompute = MODEL_RECOMPUTE_FULL;
	if (rc == 0 && !pick) {
		rc = guarded_estimate(m, g, world, on, &full, msg, msglen);
		pick = rc == 0 && full.e.fits ? &full : NULL;
	}
	if (pick == &full) {
		struct block_try t = { .m = m, .g = g, .world = world, .on = on, .l = full.l };
		unsigned most = step_chunk_layers_max(m, &full.l);
		block.l.recompute_layers = step_fewest_layers(most, block_fits, &t);
		if (block.l.recompute_layers < most)
			rc = guarded_estimate(m, g, world, on, &block, msg, msglen);
		if (rc == 0 && block.l.recompute_layers < most && block.e.fits)
			pick = &block;
	}
	/* None fits: the guard judges the one that needs the least memory (full recompute, as a rule). */
	if (rc == 0 && !pick) {
		const struct guarded *least = best;
		if (m->experts && m->engine == MODEL_ENGINE_MEGATRON && act.e.peak_bytes > 0 &&
		    act.e.peak_bytes < least->e.peak_bytes)
			least = &act;
		if (full.e.peak_bytes > 0 && full.e.peak_bytes < least->e.peak_bytes)
			least = &full;
		pick = least == &act ? &act : least == &full ? &full : NULL;
	}
	if (rc == 0 && pick) {
		free(best->split);
		*best = *pick;
		pick->split = NULL;
	}
	free(act.split);
	free(full.split);
	free(block.split);
	return rc;
}

/* The band of the model's memory error: the site's guard_band=, else the one measured for the engine and GPU. */
static double band_for(const struct plugin_site *site, const struct model_desc *m, const struct gpu_desc *g)
{
	return site->guard_band >= 0 ? site->guard_band : mem_guard_band(m->engine, g->name);
}

/*
 * LLMP_MODEL_PEAKS at the favourable end: each stage's MiB divided by
 * 1 + band, rounded up, so the tasks' check fails only what cannot fit
 * there either; "" when it cannot be rewritten (no check, as for a list
 * too long).
 */
static void peaks_favourable(char *peaks, size_t len, double band)
{
	char out[PLUGIN_PEAKS_MAX];
	size_t used = 0;
	const char *p = peaks;
	while (*p) {
		size_t name = strcspn(p, ":");
		char *end;
		unsigned long long mib = p[name] == ':' ? strtoull(p + name + 1, &end, 10) : 0;
		if (!mib || (*end && *end != ','))
			break;
		double f = mem_guard_favourable((double)mib, band);
		unsigned long long down = (unsigned long long)f;
		down += (double)down < f || !down;
		int n = snprintf(out + used, sizeof out - used, "%s%.*s:%llu", used ? "," : "", (int)name, p,
				 down);
		if (n < 0 || (size_t)n >= sizeof out - used)
			break;
		used += (size_t)n;
		p = *end ? end + 1 : end;
	}
	if (*p || used >= len)
		used = 0;
	memcpy(peaks, out, used);
	peaks[used] = '\0';
}

/*
 * The memory guard on a written layout b whose estimate does not fit its GPU
 * (planner/mem_guard.h): -1 with msg when the site's guard= refuses it and
 * the user did not override; else 0 with a warning (both figures and what to
 * change), a->guard and the peaks the tasks check.
 */
static int judge_memory(const struct plugin_site *site, const struct model_desc *m,
			const struct plugin_model_request *rq, const struct guarded *b, const char *text,
			struct plugin_model_answer *a, char *msg, size_t msglen)
{
	double band = band_for(site, m, &b->peak_gpu), mem = b->peak_gpu.mem_bytes;
	double favourable = mem_guard_favourable(b->e.peak_bytes, band);
	enum mem_guard_verdict v = mem_guard_judge(b->e.peak_bytes, mem, band);
	const char *remedy = mem_guard_remedy(b->e.peak_term), *term = step_term_name(b->e.peak_term);
	char end[200];
	snprintf(end, sizeof end,
		 "%.1f GiB at the favourable end of the model's memory error (estimate / %.3f)",
		 favourable / GIB, 1 + band);
	if (site->guard == MEM_GUARD_OFF) {
		snprintf(a->guard, sizeof a->guard, PLUGIN_GUARD_OFF);
		a->peaks[0] = '\0';
		return 0;
	}
	if (v == MEM_GUARD_DOUBTFUL) {
		snprintf(a->guard, sizeof a->guard, PLUGIN_GUARD_DOUBTFUL);
		snprintf(
			a->warning, sizeof a->warning,
			"warning: %s may not fit: %s, more than the %s's %.1f GiB, but %s fits; if it runs out "
			"of memory, lower the %s: %s",
			m->name, text, b->peak_gpu.name, mem / GIB, end, term, remedy);
		peaks_favourable(a->peaks, sizeof a->peaks, band);
		return 0;
	}
	if (site->guard == MEM_GUARD_REFUSE && !rq->guard_override)
		return refuse(
			msg, msglen,
			"%s does not fit: %s, more than the %s's %.1f GiB even with %s; lower the %s: %s "
			"(llmp plan --model ... --parallel auto finds a layout that fits%s)",
			m->name, text, b->peak_gpu.name, mem / GIB, end, term, remedy,
			site->guard_no_override ? "" : "; --llm-guard=warn runs it anyway");
	bool user = site->guard == MEM_GUARD_REFUSE;
	snprintf(a->guard, sizeof a->guard, "%s", user ? PLUGIN_GUARD_OVERRIDDEN : PLUGIN_GUARD_WARNED);
	snprintf(a->warning, sizeof a->warning,
		 "warning: %s: run although %s does not fit: %s, more than the %s's %.1f GiB even with %s; "
		 "lower the %s: %s",
		 user ? "--llm-guard=warn overrides the memory guard" : "the site's guard=warn", m->name,
		 text, b->peak_gpu.name, mem / GIB, end, term, remedy);
	a->peaks[0] = '\0'; /* the tasks' check would refuse what the user chose to run */
	return 0;
}

/*
 * A written layout on a known world: Megatron's rules, then memory. With
 * recompute left to llmp, selective first, then on an MoE model the experts'
 * activation recomputed too, full when only that fits, on the fewest layers
 * of each chunk that fit (Megatron's block method).
 */
static int guard(const struct plugin_site *site, const struct model_desc *m, const struct gpu_desc *g,
		 const struct plugin_model_request *rq, const struct chooser_machines *on,
		 struct plugin_model_answer *a, char *msg, size_t msglen)
{
	struct guarded b = { .l = step_layout_of_spec(rq->spec, m) };
	char why[LLMP_MSG_MAX], text[PEAK_TEXT];
	bool automatic_recompute = b.l.recompute == MODEL_RECOMPUTE_AUTO;
	int rc = -1;
	if (step_layout_check(m, rq->world, &b.l, why, sizeof why) != LLMP_OK)
		return refuse(msg, msglen, "--llm-parallel for %s on %u tasks: %s (Megatron would refuse it)",
			      m->name, rq->world, why);
	if (guarded_estimate(m, g, rq->world, on, &b, msg, msglen) < 0)
		goto out;
	if (!b.e.fits && automatic_recompute && recompute_to_fit(m, g, rq->world, on, &b, msg, msglen) < 0)
		goto out;
	memcpy(a->peaks, b.peaks, sizeof a->peaks);
	describe_peak(&b.l, &b.e, &b.peak, text, sizeof text);
	if (!b.e.fits && judge_memory(site, m, rq, &b, text, a, msg, msglen) < 0)
		goto out;
	megatron_flags(m, &b.l, a);
	if (a->megatron_cut) {
		refuse(msg, msglen, "%s", flags_too_long);
		goto out;
	}
	char how[80] = "";
	const char *only = b.e.fits ? "it fits only with"
				    : "estimated with"; /* beyond it: the least memory */
	if (automatic_recompute && b.l.moe_act)
		snprintf(how, sizeof how, "; %s the experts' activation recomputed", only);
	else if (automatic_recompute && b.l.recompute_layers)
		snprintf(how, sizeof how, "; %s full recompute of %u layers of each chunk", only,
			 b.l.recompute_layers);
	else if (automatic_recompute && b.l.recompute == MODEL_RECOMPUTE_FULL)
		snprintf(how, sizeof how, "; %s full recompute", only);
	int n = snprintf(a->note, sizeof a->note, "%s on %u GPUs (%s%s): %s of %.1f, about %.2f s a step%s",
			 m->name, rq->world, on ? "placed on the topology, the weakest " : "", g->name, text,
			 b.peak_gpu.mem_bytes / GIB, b.e.step_s, how);
	if (a->stage_layers[0] && !a->flags_say_stages && n > 0 && (size_t)n < sizeof a->note)
		snprintf(a->note + n, sizeof a->note - (size_t)n,
			 "; layers per stage %s (" LLMP_ENV_STAGE_LAYERS
			 ", the layout file's stage_layers): more than Megatron's first/last stage flags say",
			 a->stage_layers);
	a->decided = true;
	rc = 0;
out:
	free(b.split);
	return rc;
}

/*
 * sbatch: a written layout on an unknown world. Refused only if it cannot
 * fit at the data-parallel size that needs the least memory per GPU (the
 * largest the global batch allows, full recompute when llmp may choose),
 * so no job that some size could run is refused; srun checks the real one.
 * Like srun, only under the site's guard=refuse without the user's
 * override, and only what cannot fit at the favourable end of the model's
 * memory error.
 */
static int guard_any_size(const struct plugin_site *site, const struct model_desc *m,
			  const struct gpu_desc *g, const struct plugin_model_request *rq, char *msg,
			  size_t msglen)
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
	struct gpu_desc peak_gpu;
	unsigned *split = NULL; /* stays NULL: no machines */
	if (step_layout_check(m, world, &l, NULL, 0) != LLMP_OK ||
	    estimate(m, g, world, NULL, &l, &split, &e, &peak, &peak_gpu, text, sizeof text, NULL, 0) < 0 ||
	    site->guard != MEM_GUARD_REFUSE || rq->guard_override ||
	    mem_guard_judge(e.peak_bytes, g->mem_bytes, band_for(site, m, g)) != MEM_GUARD_CANNOT)
		return 0; /* srun decides on the step's real size */
	describe_peak(&l, &e, &peak, text, sizeof text);
	return refuse(msg, msglen,
		      "%s cannot fit a %s (%.1f GiB) at any job size: even with dp=%llu, %s, and %.1f GiB at "
		      "the favourable end of the model's memory error; lower the %s: %s (llmp plan --model "
		      "... --parallel auto finds one that fits)",
		      m->name, g->name, g->mem_bytes / GIB, dp, text,
		      mem_guard_favourable(e.peak_bytes, band_for(site, m, g)) / GIB,
		      step_term_name(e.peak_term), mem_guard_remedy(e.peak_term));
}

/* The step's nodes on the topology, when asked and usable; else NULL and a warning in the answer. */
static struct plugin_machines *open_machines(const struct plugin_model_request *rq,
					     const struct model_desc *m, const struct gpu_desc *fallback,
					     struct gpu_desc *weakest, struct plugin_model_answer *a)
{
	char why[LLMP_MSG_MAX];
	if (!rq->machines || !rq->world)
		return NULL;
	struct plugin_machines_request mr = *rq->machines;
	mr.world = rq->world;
	mr.fallback = fallback;
	struct plugin_machines *pm = plugin_machines_open(&mr, m, weakest, why, sizeof why);
	if (!pm)
		snprintf(a->warning, sizeof a->warning,
			 "warning: --llm-model: the topology not used, so the network is modelled, not "
			 "placed: %s",
			 why);
	return pm;
}

int plugin_model_decide(const struct plugin_site *site, const struct plugin_model_request *rq,
			struct plugin_model_answer *a, char *msg, size_t msglen)
{
	struct model_desc m;
	struct gpu_desc g, given;
	char why[LLMP_MSG_MAX];

	memset(a, 0, sizeof *a);
	if (!rq->model) {
		if (rq->choose_layout)
			return refuse(
				msg, msglen,
				"--llm-parallel=auto needs the model: --llm-model=NAME|KEYS|config.json or "
				"LLMP_MODEL (--llm-model=help lists them)");
		return 0;
	}
	if (rq->guard_override && site->guard_no_override)
		return refuse(msg, msglen,
			      "--llm-guard=warn: this site does not let the memory guard be overridden "
			      "(guard_override=no in plugstack.conf); llmp plan --model ... --parallel auto "
			      "finds a layout that fits");
	if (model_desc_parse(rq->model, &m, why, sizeof why) != LLMP_OK)
		return refuse(msg, msglen, "%s: %s", rq->model_source, why);
	if (rq->gpu && gpu_desc_parse(rq->gpu, &given, why, sizeof why) != LLMP_OK)
		return refuse(msg, msglen, "%s: %s", rq->gpu_source, why);
	if (rq->choose_layout && !m.gbs)
		return refuse(msg, msglen,
			      "--llm-parallel=auto needs the global batch: add gbs= (sequences) to %s",
			      rq->model_source);
	if (!rq->choose_layout && m.zero == MODEL_ZERO_AUTO)
		return refuse(msg, msglen,
			      "%s: zero=auto: llmp chooses the sharding with the layout "
			      "(--llm-parallel=auto); a written layout says zero=0, 1, 2 or 3",
			      rq->model_source);
	/* On the topology, the node types' GPUs; the named one for types without. */
	struct plugin_machines *pm = open_machines(rq, &m, rq->gpu ? &given : NULL, &g, a);
	if (!rq->gpu && !rq->world && rq->machines)
		return 0; /* sbatch: the topology's node types may say the GPU; each srun looks */
	if (!pm && !rq->gpu) {
		if (rq->choose_layout)
			return refuse(msg, msglen,
				      "--llm-parallel=auto needs the GPU: set LLMP_GPU (e.g. h100, or "
				      "mem=GiB,tflops=N), ask the administrator for the plugin's gpu= "
				      "setting, or name it as \"gpu\" in the topology file's node types");
		snprintf(
			a->note, sizeof a->note,
			"warning: %s is not checked against GPU memory: no GPU is known (set LLMP_GPU, e.g. h100)",
			m.name);
		return 0;
	}
	if (!pm)
		g = given;
	if (!rq->world) {
		if (rq->choose_layout)
			return 0; /* each srun chooses for its own task count */
		return guard_any_size(site, &m, &g, rq, msg, msglen);
	}
	const struct chooser_machines *on = pm ? plugin_machines_of(pm) : NULL;
	int rc = rq->choose_layout ? choose(site, &m, &g, rq, on, a, msg, msglen)
				   : guard(site, &m, &g, rq, on, a, msg, msglen);
	plugin_machines_close(pm);
	return rc;
}
