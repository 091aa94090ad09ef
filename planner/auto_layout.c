/* SPDX-License-Identifier: BSD-3-Clause */
/* auto_layout.c - every valid layout scored, the fastest that fits chosen (auto_layout.h). */
#define _POSIX_C_SOURCE 200809L
#include "auto_layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "hetero.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MAX_CP 32
#define MAX_VPP 16

struct search {
	const struct model_desc *m;
	const struct gpu_desc *g;
	uint32_t world;
	struct chooser_result *r;
	size_t cap;
	const struct chooser_machines *on;
	struct gpu_desc *stage_gpus; /* room for the largest pp */
	llmp_status placed;          /* the first failure of on->place */
	bool fitted;                 /* whether the last layout considered fits */
	char *msg;
	size_t len;
};

/* c's estimate on the machines: stage_layers allocated when the stages' GPUs differ. */
static llmp_status on_machines(struct search *s, struct chooser_candidate *c)
{
	double net[5];
	char why[LLMP_MSG_MAX];
	llmp_status st = s->on->place(s->on->ctx, &c->layout, net, s->stage_gpus, why, sizeof why);
	if (st != LLMP_OK) {
		if (s->placed == LLMP_OK)
			s->placed = llmp_fail(st, s->msg, s->len, "%s", why);
		return st;
	}
	if (hetero_mixed(s->stage_gpus, c->layout.pp)) {
		if (!(c->stage_layers = malloc(c->layout.pp * sizeof *c->stage_layers)))
			return LLMP_ERR_NOMEM;
		st = hetero_split(s->m, s->stage_gpus, &c->layout, c->stage_layers, NULL, 0);
		c->layout.stage_layers = c->stage_layers;
	}
	if (st == LLMP_OK)
		st = step_estimate_stages(s->m, s->stage_gpus, s->world, &c->layout, net, NULL, &c->est, NULL,
					  0);
	if (st != LLMP_OK) {
		free(c->stage_layers);
		c->stage_layers = NULL;
	}
	return st;
}

/* c's estimate, on the machines or on s->g. */
static llmp_status score(struct search *s, struct chooser_candidate *c)
{
	return s->on ? on_machines(s, c)
		     : step_estimate(s->m, s->g, s->world, &c->layout, NULL, &c->est, NULL, 0);
}

/* Halving over recompute_layers (step_fewest_layers): whether a chunk's n recomputed layers fit. */
struct block_try {
	struct search *s;
	struct step_layout l;
	llmp_status st; /* LLMP_ERR_NOMEM stops the search */
};

static bool block_fits(void *ctx, unsigned n)
{
	struct block_try *b = ctx;
	struct chooser_candidate c = { .layout = b->l, .zero = b->s->m->zero };
	c.layout.recompute_layers = n;
	llmp_status st = score(b->s, &c);
	free(c.stage_layers);
	if (st == LLMP_ERR_NOMEM)
		b->st = st;
	return st == LLMP_OK && c.est.fits;
}

static llmp_status append(struct search *s, struct chooser_candidate c)
{
	if (s->r->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct chooser_candidate *all = realloc(s->r->all, cap * sizeof *all);
		if (!all) {
			free(c.stage_layers);
			return LLMP_ERR_NOMEM;
		}
		s->r->all = all, s->cap = cap;
	}
	s->r->all[s->r->n++] = c;
	return LLMP_OK;
}

/*
 * Layout l scored and kept; with block (under recompute=auto, l with full recompute
 * where selective did not fit) also the fewest layers of a chunk recomputed that fit.
 */
static llmp_status consider(struct search *s, struct step_layout l, bool block)
{
	s->fitted = false;
	if (step_layout_check(s->m, s->world, &l, NULL, 0) != LLMP_OK)
		return LLMP_OK;
	struct chooser_candidate c = { .layout = l, .zero = s->m->zero };
	llmp_status st = score(s, &c);
	if (st != LLMP_OK)
		return st == LLMP_ERR_NOMEM ? st : LLMP_OK;
	bool fits = s->fitted = c.est.fits;
	if ((st = append(s, c)) != LLMP_OK || !block || !fits)
		return st;
	/* Full recompute fits: Megatron's block method with the fewest layers of a chunk that
	 * still fit is faster, and a candidate of its own. */
	struct block_try b = { .s = s, .l = l, .st = LLMP_OK };
	unsigned most = step_chunk_layers_max(s->m, &l);
	unsigned n = step_fewest_layers(most, block_fits, &b);
	if (b.st != LLMP_OK || n >= most)
		return b.st;
	struct chooser_candidate fewer = { .layout = l, .zero = s->m->zero };
	fewer.layout.recompute_layers = n;
	st = score(s, &fewer);
	if (st != LLMP_OK)
		return st == LLMP_ERR_NOMEM ? st : LLMP_OK;
	return append(s, fewer);
}

static int by_merit(const void *pa, const void *pb)
{
	const struct chooser_candidate *a = pa, *b = pb;
	if (a->est.fits != b->est.fits)
		return a->est.fits ? -1 : 1;
	double x = a->est.fits ? a->est.step_s : a->est.peak_bytes;
	double y = b->est.fits ? b->est.step_s : b->est.peak_bytes;
	if (x != y)
		return x < y ? -1 : 1;
	/* equal: the smaller model-parallel layout first, for a stable answer */
	unsigned ma = a->layout.tp * a->layout.pp * a->layout.cp,
		 mb = b->layout.tp * b->layout.pp * b->layout.cp;
	if (ma != mb)
		return ma < mb ? -1 : 1;
	if (a->layout.mbs != b->layout.mbs)
		return a->layout.mbs < b->layout.mbs ? -1 : 1;
	return a->zero < b->zero ? -1 : a->zero > b->zero; /* zero=auto: the less sharding */
}

/*
 * The choice among near-ties: of the fitting layouts within CHOOSER_TIE_BAND of
 * the fastest, the fastest of those with the fewest pipeline stages moves to
 * the front; the rest keep their order.
 */
bool chooser_tie_prefers(double step, unsigned pp, double pick_step, unsigned pick_pp, double fastest)
{
	return step <= fastest * (1 + CHOOSER_TIE_BAND) &&
	       (pp < pick_pp || (pp == pick_pp && step < pick_step));
}

static void prefer_fewer_stages(struct chooser_result *r)
{
	size_t pick = 0;
	double fastest = r->fitting ? r->all[0].est.step_s : 0;
	for (size_t i = 1; i < r->fitting && r->all[i].est.step_s <= fastest * (1 + CHOOSER_TIE_BAND); i++)
		if (chooser_tie_prefers(r->all[i].est.step_s, r->all[i].layout.pp, r->all[pick].est.step_s,
					r->all[pick].layout.pp, fastest))
			pick = i;
	if (!pick)
		return;
	struct chooser_candidate c = r->all[pick];
	memmove(r->all + 1, r->all, pick * sizeof *r->all);
	r->all[0] = c;
}

llmp_status chooser_run(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			struct chooser_result *r, char *msg, size_t len)
{
	return chooser_run_on(m, g, world, NULL, r, msg, len);
}

/*
 * l under the recompute the model names, or under recompute=auto with selective, then
 * (on an MoE model under Megatron, where selective does not fit) selective with the
 * experts' activation recomputed too, then full recompute (and, where only full
 * recompute fits, the fewest layers of a chunk).
 */
static llmp_status consider_recomputes(struct search *s, struct step_layout l)
{
	if (s->m->recompute != MODEL_RECOMPUTE_AUTO) {
		l.recompute = s->m->recompute, l.recompute_layers = s->m->recompute_layers;
		l.moe_act = s->m->recompute_moe_act;
		return consider(s, l, false);
	}
	l.recompute = MODEL_RECOMPUTE_SELECTIVE;
	llmp_status st = consider(s, l, false);
	if (st != LLMP_OK)
		return st;
	bool selective_fits = s->fitted;
	if (!selective_fits && s->m->experts && s->m->engine == MODEL_ENGINE_MEGATRON) {
		l.moe_act = true;
		if ((st = consider(s, l, false)) != LLMP_OK)
			return st;
		selective_fits = s->fitted;
		l.moe_act = false;
	}
	l.recompute = MODEL_RECOMPUTE_FULL;
	return consider(s, l, !selective_fits);
}

/* Every layout of s->m's: tp, pp, cp, ep, etp, vpp, mbs and recompute. */
static llmp_status enumerate(struct search *s)
{
	const struct model_desc *m = s->m;
	uint32_t world = s->world;
	llmp_status st = LLMP_OK;
	for (unsigned tp = 1; tp <= world && tp <= s->g->domain && st == LLMP_OK; tp++) {
		if (world % tp || (unsigned long long)m->heads % tp)
			continue;
		for (unsigned pp = 1; pp <= world / tp && pp <= m->layers && st == LLMP_OK; pp++) {
			if ((world / tp) % pp)
				continue;
			for (unsigned cp = 1; cp <= world / (tp * pp) && cp <= MAX_CP && st == LLMP_OK;
			     cp++) {
				if ((world / (tp * pp)) % cp)
					continue;
				unsigned dp = world / (tp * pp * cp);
				for (unsigned ep = 1; ep <= (m->experts ? m->experts : 1) && st == LLMP_OK;
				     ep++) {
					if (m->experts && (unsigned long long)m->experts % ep)
						continue;
					for (unsigned e = 0;
					     e < (tp > 1 && m->experts ? 2u : 1u) && st == LLMP_OK; e++) {
						unsigned etp = e ? 1 : tp;
						for (unsigned vpp = 1; vpp <= MAX_VPP && st == LLMP_OK;
						     vpp++) {
							if (vpp > 1 && (pp < 2 || vpp > m->layers / pp))
								continue;
							for (unsigned mbs = 1; mbs <= 8 && st == LLMP_OK;
							     mbs *= 2) {
								if ((unsigned long long)m->gbs %
								    ((unsigned long long)mbs * dp))
									continue;
								st = consider_recomputes(
									s,
									(struct step_layout){ .tp = tp,
											      .pp = pp,
											      .cp = cp,
											      .ep = ep,
											      .etp = etp,
											      .vpp = vpp,
											      .mbs = mbs });
							}
						}
					}
				}
			}
		}
	}
	return st;
}

llmp_status chooser_run_on(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			   const struct chooser_machines *on, struct chooser_result *r, char *msg, size_t len)
{
	memset(r, 0, sizeof *r);
	if (!m->gbs)
		return llmp_fail(LLMP_ERR_ARG, msg, len,
				 "--parallel auto needs the global batch: add gbs= (sequences) to --model");
	struct search s = { .m = m, .g = g, .world = world, .r = r, .on = on, .msg = msg, .len = len };
	if (on && !(s.stage_gpus = calloc(world, sizeof *s.stage_gpus)))
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "--parallel auto: out of memory");
	/* zero=auto: the distributed optimizer, then sharded gradients, then sharded parameters,
	 * each over every layout (grad=6 keeps two gradient buffers: no sharded ones). */
	llmp_status st = LLMP_OK;
	unsigned zero = m->zero, last = m->zero;
	if (m->zero == MODEL_ZERO_AUTO)
		zero = 1, last = m->grad_bytes == 6 ? 1 : 3;
	for (; zero <= last && st == LLMP_OK; zero++) {
		struct model_desc mz = *m;
		mz.zero = zero;
		s.m = &mz;
		st = enumerate(&s);
	}
	s.m = m;
	free(s.stage_gpus);
	if (st != LLMP_OK) {
		chooser_result_free(r);
		return llmp_fail(st, msg, len, "--parallel auto: out of memory");
	}
	if (!r->n && s.placed != LLMP_OK)
		return s.placed; /* msg says why the machines took none */
	if (!r->n)
		return llmp_fail(
			LLMP_ERR_LAYOUT, msg, len,
			"--parallel auto: no layout of %u ranks satisfies Megatron's rules for this model "
			"(heads=%.0f, layers=%.0f, seq=%.0f, gbs=%.0f)",
			world, m->heads, m->layers, m->seq, m->gbs);
	qsort(r->all, r->n, sizeof *r->all, by_merit);
	while (r->fitting < r->n && r->all[r->fitting].est.fits)
		r->fitting++;
	prefer_fewer_stages(r);
	return LLMP_OK;
}

void chooser_result_free(struct chooser_result *r)
{
	for (size_t i = 0; r->all && i < r->n; i++)
		free(r->all[i].stage_layers);
	free(r->all);
	memset(r, 0, sizeof *r);
}

void chooser_candidate_format(const struct chooser_candidate *c, bool zero_auto, char *buf, size_t len)
{
	step_layout_format(&c->layout, buf, len);
	size_t used = strlen(buf);
	if (zero_auto && used < len)
		snprintf(buf + used, len - used, ",zero=%u", c->zero);
}

void chooser_why_lost(const struct chooser_candidate *c, const struct chooser_candidate *best,
		      const struct gpu_desc *g, char *buf, size_t len)
{
	if (!c->est.fits && c->est.peak_bytes <= g->mem_bytes) { /* mixed GPUs: a smaller one overflows */
		snprintf(buf, len, "memory: a stage over its own GPU's memory (peak %.1f GiB on stage %u)",
			 c->est.peak_bytes / GIB, c->est.peak_stage);
		return;
	}
	if (!c->est.fits) {
		snprintf(buf, len, "memory: %.1f GiB on stage %u over the GPU's %.1f GiB (largest term: %s)",
			 c->est.peak_bytes / GIB, c->est.peak_stage, g->mem_bytes / GIB,
			 step_term_name(c->est.peak_term));
		return;
	}
	if (c == best || !best) {
		snprintf(buf, len, "chosen");
		return;
	}
	if (c->est.step_s < best->est.step_s) { /* within the band: prefer_fewer_stages */
		snprintf(buf, len,
			 "%.1f%% faster (%.3f s), within the %.0f%% the model does not tell apart; the "
			 "choice has fewer pipeline stages (pp %u, not %u)",
			 100 * (1 - c->est.step_s / best->est.step_s), c->est.step_s, 100 * CHOOSER_TIE_BAND,
			 best->layout.pp, c->layout.pp);
		return;
	}
	if (c->est.step_s <= best->est.step_s * 1.0005) {
		unsigned mc = c->layout.tp * c->layout.pp * c->layout.cp,
			 mb = best->layout.tp * best->layout.pp * best->layout.cp;
		if (mc != mb)
			snprintf(
				buf, len,
				"ties on time (%.3f s); the choice splits the model less (tp*pp*cp %u, not %u)",
				c->est.step_s, mb, mc);
		else if (c->layout.mbs != best->layout.mbs)
			snprintf(buf, len, "ties on time (%.3f s); the choice has the smaller micro-batch",
				 c->est.step_s);
		else
			snprintf(buf, len, "ties on time (%.3f s); the choice shards less (zero=%u, not %u)",
				 c->est.step_s, best->zero, c->zero);
		return;
	}
	static const char *const names[] = { "compute",    "pipeline bubble", "tp traffic", "cp traffic",
					     "ep traffic", "dp traffic",      "pp traffic" };
	double mine[7] = { c->est.compute_s, c->est.bubble_s },
	       theirs[7] = { best->est.compute_s, best->est.bubble_s };
	for (int a = 0; a < 5; a++)
		mine[2 + a] = c->est.net_s[a], theirs[2 + a] = best->est.net_s[a];
	int worst = 0;
	for (int i = 1; i < 7; i++)
		if (mine[i] - theirs[i] > mine[worst] - theirs[worst])
			worst = i;
	double slower = best->est.step_s > 0 ? 100 * (c->est.step_s / best->est.step_s - 1) : 0;
	snprintf(buf, len, "%.1f%% slower (%.3f s): %s +%.3f s%s", slower, c->est.step_s, names[worst],
		 mine[worst] - theirs[worst],
		 worst == 0 && c->layout.recompute == MODEL_RECOMPUTE_FULL ? " (full recompute)"
		 : worst == 0 && c->layout.moe_act ? " (experts' activation recomputed)"
						   : "");
}
