/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_validate.c - the step model and the chooser against layouts that ran
 * (doc/step-model.md): bench/data/published_layouts.tsv, one cited row a run.
 *
 * Figures, not a test. The efficiency is fitted on the rows marked `fit`
 * (one per GPU text: a GPU kind, or a cluster and its software stack such
 * as "a100,net=6.25") or `fitgrid` (for the rows of its grid alone: one
 * stack on one cluster whose GPU the source does not say), the per-layer
 * overhead of a GPU text on its two `fitmb` rows (one layout at two
 * micro-batch sizes; `fitmbgrid`: a pair for the rows of its grid alone),
 * the link rate inside the NVLink domain on a `fittp` row (the `fit` row's
 * layout at another tp; `fittpgrid`: the `fitgrid` row's, for its grid),
 * the framework allowance on the row marked `fitmem`
 * (`fit+mem`: efficiency and allowance). Those rows are left out of the
 * time figures and the grids; the guard and memory figures count the rows
 * of the time constants (which do not touch memory), not the allowance's.
 * Printed: the memory band per engine and GPU generation (planner/mem_guard.h:
 * measured on the rows with a measured peak), how many layouts that ran the
 * guard accepts under it (a warning counts) and which it warns on, how many known
 * out-of-memory layouts it refuses, the error against measured memories, how
 * often --parallel auto picks the published layout, how far the published
 * layout's modelled step is from the chosen one's, the step-time error, and
 * on a measured grid the rank correlation and the pick.
 *
 * Usage: bench_validate [FILE] (default: the file beside the sources).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/auto_layout.h"
#include "planner/mem_guard.h"

#ifndef LLMP_SRCDIR
#define LLMP_SRCDIR "."
#endif
#define GIB (1024.0 * 1024.0 * 1024.0)
#define MAX_ROWS 128
#define MAX_FITS 8

struct row {
	char role[12], id[40], gpu[32], recompute[16], ran[8], mem[16], step[24], grid[24], model[256],
		source[128];
	unsigned gpus, tp, pp, cp, ep, etp, vpp, mbs;
	bool vpp_unsaid, mbs_unsaid; /* '-' in the file: the published step may take the best of them */
	bool interleaved;            /* vpp 'i': the source says interleaved, not its V */
};

struct fit {
	char gpu[32];
	/* a `fitgrid` or `fitmbgrid` row's grid: the fit is that grid's alone; "" for a gpu text's */
	char grid[24];
	double efficiency; /* 0 until fitted */
	/* fitted on a `fitmb` pair of this gpu text (`fitmbgrid`: of this grid); 0 without one */
	double layer_overhead_s;
	double link_gbps; /* fitted on a `fittp` row (`fittpgrid`: of this grid); 0 without one */
};

static struct fit fits[MAX_FITS];
static size_t nfits;
static double fitted_overhead = -1; /* the allowance's share, once fitted on a `fitmem` row */

/* A layout number, or fallback for '-'. */
static unsigned number(const char *s, unsigned fallback)
{
	return strcmp(s, "-") == 0 ? fallback : (unsigned)strtoul(s, NULL, 10);
}

static int read_rows(const char *path, struct row *rows, size_t *n)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	if (!f) {
		perror(path);
		return -1;
	}
	*n = 0;
	while (fgets(line, sizeof line, f) && *n < MAX_ROWS) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		line[strcspn(line, "\n")] = '\0';
		char *field[18], *save = NULL;
		size_t k = 0;
		for (char *t = strtok_r(line, "\t", &save); t && k < 18; t = strtok_r(NULL, "\t", &save))
			field[k++] = t;
		if (k != 18) {
			fprintf(stderr, "%s: a row of %zu fields, not 18: %s\n", path, k, line);
			fclose(f);
			return -1;
		}
		static const char *const roles[] = { "eval",  "guard",   "fit",       "fitmem", "fit+mem",
						     "fitmb", "fitgrid", "fitmbgrid", "fittp",  "fittpgrid" };
		size_t known = 0;
		while (known < sizeof roles / sizeof *roles && strcmp(field[0], roles[known]) != 0)
			known++;
		if (known == sizeof roles / sizeof *roles) {
			fprintf(stderr,
				"%s: %s: role '%s' is none of eval, guard, fit, fitmem, fit+mem, fitmb, "
				"fitgrid, fitmbgrid, fittp, fittpgrid\n",
				path, field[1], field[0]);
			fclose(f);
			return -1;
		}
		struct row *r = &rows[(*n)++];
		snprintf(r->role, sizeof r->role, "%s", field[0]);
		snprintf(r->id, sizeof r->id, "%s", field[1]);
		snprintf(r->gpu, sizeof r->gpu, "%s", field[2]);
		r->gpus = number(field[3], 0);
		r->tp = number(field[4], 1), r->pp = number(field[5], 1), r->cp = number(field[6], 1);
		r->ep = number(field[7], 1), r->etp = number(field[8], r->tp), r->vpp = number(field[9], 1);
		r->mbs = number(field[10], 1);
		r->interleaved = strcmp(field[9], "i") == 0;
		if (r->interleaved)
			r->vpp = 1;
		else if (strspn(field[9], "0123456789") != strlen(field[9]) && strcmp(field[9], "-") != 0) {
			fprintf(stderr, "%s: %s: vpp '%s' is no number, '-' or 'i'\n", path, field[1],
				field[9]);
			fclose(f);
			return -1;
		}
		r->vpp_unsaid = strcmp(field[9], "-") == 0 || r->interleaved;
		r->mbs_unsaid = strcmp(field[10], "-") == 0;
		snprintf(r->recompute, sizeof r->recompute, "%s", field[11]);
		snprintf(r->ran, sizeof r->ran, "%s", field[12]);
		snprintf(r->mem, sizeof r->mem, "%s", field[13]);
		snprintf(r->step, sizeof r->step, "%s", field[14]);
		snprintf(r->grid, sizeof r->grid, "%s", field[15]);
		snprintf(r->model, sizeof r->model, "%s", field[16]);
		snprintf(r->source, sizeof r->source, "%s", field[17]);
	}
	fclose(f);
	return 0;
}

/* The row's GPU with its fitted efficiency: its own text's fit, else its kind's (an H800 is an H100). */
static int gpu_of(const struct row *r, struct gpu_desc *g)
{
	char msg[LLMP_MSG_MAX];
	/* "h100@nemo-24.07": a --gpu text, then after '@' the software stack, whose fit is its own */
	char plain[sizeof r->gpu];
	snprintf(plain, sizeof plain, "%.*s", (int)strcspn(r->gpu, "@"), r->gpu);
	if (gpu_desc_parse(plain, g, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, "%s: %s\n", r->id, msg);
		return -1;
	}
	/* The kind is the name before any keys ("a100,net=6.25": a site's own network). */
	char kind[32];
	snprintf(kind, sizeof kind, "%.*s", (int)strcspn(r->gpu, ",@"), r->gpu);
	if (strcmp(kind, "h800") == 0)
		snprintf(kind, sizeof kind, "h100");
	/* A fit on the row's own grid (one stack on one cluster) first; then one on this very GPU
	 * column (a cluster and its software stack); then its kind's. A grid's framework time is
	 * its own: with a fit of the grid, the gpu text's per-layer overhead does not apply. */
	const struct fit *grid = NULL, *text = NULL, *of_kind = NULL;
	for (size_t i = 0; i < nfits; i++) {
		const struct fit *f = &fits[i];
		if (f->grid[0])
			grid = strcmp(f->grid, r->grid) == 0 && strcmp(f->gpu, r->gpu) == 0 ? f : grid;
		else if (strcmp(f->gpu, r->gpu) == 0)
			text = f;
		else if (strcmp(f->gpu, kind) == 0)
			of_kind = f;
	}
	const struct fit *eff = grid && grid->efficiency > 0   ? grid
				: text && text->efficiency > 0 ? text
							       : of_kind;
	if (eff && eff->efficiency > 0)
		g->efficiency = eff->efficiency;
	const struct fit *own = grid ? grid : text; /* the overhead and the link: the text's own */
	if (own)
		g->layer_overhead_s = own->layer_overhead_s;
	if (own && own->link_gbps > 0)
		g->nvlink_gbps = own->link_gbps;
	return 0;
}

/* The fit of this very gpu text (of one grid, or "" for every row of the text), made when there is none. */
static struct fit *fit_of(const char *gpu, const char *grid)
{
	for (size_t i = 0; i < nfits; i++)
		if (strcmp(fits[i].gpu, gpu) == 0 && strcmp(fits[i].grid, grid) == 0)
			return &fits[i];
	if (nfits == MAX_FITS)
		return NULL;
	struct fit *f = &fits[nfits++];
	memset(f, 0, sizeof *f);
	snprintf(f->gpu, sizeof f->gpu, "%s", gpu);
	snprintf(f->grid, sizeof f->grid, "%s", grid);
	return f;
}

struct outcome {
	bool valid, fits;
	char why[LLMP_MSG_MAX];
	struct step_layout layout;
	struct step_estimate est;
	double measured;   /* seconds, 0 when not published */
	double least_peak; /* bytes: the smallest peak of the tries (the guard's, when none fits) */
};

/*
 * The published layout under the model: with '?' recompute, the fastest that fits of
 * selective, selective with the experts' activation recomputed (an MoE model under
 * Megatron: --recompute-modules moe_act) and full, full with the fewest layers of a chunk
 * that fit (Megatron's block method).
 */
static void evaluate(const struct row *r, const struct model_desc *m, const struct gpu_desc *g,
		     struct outcome *o)
{
	static const enum model_recompute tries[3] = { MODEL_RECOMPUTE_SELECTIVE, MODEL_RECOMPUTE_SELECTIVE,
						       MODEL_RECOMPUTE_FULL };
	bool moe_act_applies = m->experts && m->engine == MODEL_ENGINE_MEGATRON;
	enum model_recompute given = strcmp(r->recompute, "full") == 0        ? MODEL_RECOMPUTE_FULL
				     : strcmp(r->recompute, "none") == 0      ? MODEL_RECOMPUTE_NONE
				     : strcmp(r->recompute, "selective") == 0 ? MODEL_RECOMPUTE_SELECTIVE
									      : MODEL_RECOMPUTE_AUTO;
	memset(o, 0, sizeof *o);
	/* vpp 'i': every V > 1 the rules allow for this pp (Megatron's: V divides a middle stage's
	 * layers), the fastest that fits; vpp 1 is not tried, the source says interleaved. */
	unsigned v_lo = r->interleaved ? 2 : r->vpp, v_hi = r->interleaved ? (unsigned)m->layers : r->vpp;
	for (unsigned v = v_lo; v <= v_hi; v++)
		for (int t = 0; t < 3; t++) {
			if (given != MODEL_RECOMPUTE_AUTO && t > 0)
				break;
			if (t == 1 && !moe_act_applies)
				continue;
			struct step_layout l = {
				.tp = r->tp,
				.pp = r->pp,
				.cp = r->cp,
				.ep = r->ep,
				.etp = r->etp,
				.vpp = v,
				.mbs = r->mbs,
				.recompute = given != MODEL_RECOMPUTE_AUTO ? given : tries[t],
				.moe_act = given != MODEL_RECOMPUTE_AUTO ? m->recompute_moe_act : t == 1
			};
			struct step_estimate e;
			char why[LLMP_MSG_MAX];
			bool fewest = given == MODEL_RECOMPUTE_AUTO && l.recompute == MODEL_RECOMPUTE_FULL;
			if (step_layout_check(m, r->gpus, &l, why, sizeof why) != LLMP_OK ||
			    (fewest ? step_fewest_recompute(m, g, r->gpus, &l, &e, why, sizeof why)
				    : step_estimate(m, g, r->gpus, &l, NULL, &e, why, sizeof why)) !=
				    LLMP_OK) {
				if (!o->valid) /* the first reason, kept while nothing was valid */
					snprintf(o->why, sizeof o->why, "%s", why);
				if (r->interleaved)
					continue;
				return;
			}
			bool better = !o->valid || (!o->fits && e.fits);
			better = better || (e.fits == o->fits && e.step_s < o->est.step_s);
			/* when none fits, the guard judges the try that needs the least memory */
			if (!o->valid || e.peak_bytes < o->least_peak)
				o->least_peak = e.peak_bytes;
			o->valid = true;
			if (better)
				o->layout = l, o->est = e, o->fits = e.fits;
		}
	if (!o->valid)
		return;
	if (strncmp(r->step, "tf:", 3) == 0)
		o->measured = o->est.flops / (r->gpus * atof(r->step + 3) * 1e12);
	else if (strcmp(r->step, "-") != 0)
		o->measured = atof(r->step);
}

static int model_of(const struct row *r, struct model_desc *m)
{
	char msg[LLMP_MSG_MAX];
	if (model_desc_parse(r->model, m, msg, sizeof msg) != LLMP_OK) {
		fprintf(stderr, "%s: %s\n", r->id, msg);
		return -1;
	}
	m->mbs = r->mbs;
	if (fitted_overhead >= 0)
		m->overhead = fitted_overhead;
	return 0;
}

/* Fit the allowance's share so that the modelled peak of a `fitmem` row equals its measured one. */
static int fit_memory(const struct row *r)
{
	struct model_desc m;
	struct gpu_desc g;
	struct outcome o;
	if (model_of(r, &m) || gpu_of(r, &g) || strcmp(r->mem, "-") == 0)
		return -1;
	double want = atof(r->mem) * GIB, lo = 0, hi = 1;
	for (int i = 0; i < 60; i++) {
		m.overhead = (lo + hi) / 2;
		evaluate(r, &m, &g, &o);
		if (!o.valid) {
			fprintf(stderr, "%s: cannot fit: %s\n", r->id, o.why);
			return -1;
		}
		if (o.est.peak_bytes < want)
			lo = m.overhead;
		else
			hi = m.overhead;
	}
	fitted_overhead = m.overhead;
	printf("fitted on %-14s the framework allowance: 3 GiB + %.3f of the rest (default %.2f)\n", r->id,
	       fitted_overhead, MODEL_OVERHEAD_DEFAULT);
	return 0;
}

/* Fit the efficiency so that the modelled step of a `fit` row equals its measured one. */
static int fit_row(const struct row *r, bool quiet)
{
	struct model_desc m;
	struct gpu_desc g;
	struct outcome o;
	char why[LLMP_MSG_MAX];
	double fitted;
	if (model_of(r, &m) || gpu_of(r, &g))
		return -1;
	evaluate(r, &m, &g, &o);
	if (!o.valid || !o.measured) {
		fprintf(stderr, "%s: cannot fit: %s\n", r->id, o.valid ? "no step time" : o.why);
		return -1;
	}
	if (step_fit_efficiency(&m, &g, r->gpus, &o.layout, o.measured, &fitted, why, sizeof why) !=
	    LLMP_OK) {
		fprintf(stderr, "%s: cannot fit: %s\n", r->id, why);
		return -1;
	}
	bool grid = strcmp(r->role, "fitgrid") == 0;
	struct fit *f = fit_of(r->gpu, grid ? r->grid : "");
	if (f)
		f->efficiency = fitted;
	char text[sizeof r->gpu];
	snprintf(text, sizeof text, "%.*s", (int)strcspn(r->gpu, "@"), r->gpu);
	gpu_desc_parse(text, &g, NULL, 0);
	if (!quiet)
		printf("fitted on %-14s %-6s efficiency %.3f (stated default %.2f)%s%s\n", r->id, r->gpu,
		       fitted, g.efficiency, grid ? ", for grid " : "", grid ? r->grid : "");
	return 0;
}

/*
 * Fit the per-layer overhead of a `fitmb` pair (`fitmbgrid`: for its grid alone): one
 * layout of one gpu text at two micro-batch sizes, a the smaller. The efficiency scales
 * both steps alike; the overhead adds to the one with more micro-batches, so their
 * ratio sizes it.
 */
static int fit_pair(const struct row *a, const struct row *b, bool quiet)
{
	bool grid = strcmp(a->role, "fitmbgrid") == 0;
	struct model_desc ma, mb;
	struct gpu_desc g, gb;
	struct outcome oa, ob;
	if (model_of(a, &ma) || model_of(b, &mb) || gpu_of(a, &g) || gpu_of(b, &gb))
		return -1;
	evaluate(a, &ma, &g, &oa);
	evaluate(b, &mb, &gb, &ob);
	if (!oa.valid || !ob.valid || !oa.measured || !ob.measured || a->mbs >= b->mbs ||
	    strcmp(a->gpu, b->gpu) != 0) {
		fprintf(stderr,
			"%s, %s: a fitmb pair needs one gpu text, two measured steps, the first at the "
			"smaller mbs\n",
			a->id, b->id);
		return -1;
	}
	char why[LLMP_MSG_MAX];
	double overhead;
	if (strcmp(a->model, b->model) != 0 ||
	    step_fit_layer_overhead(&ma, &g, a->gpus, &oa.layout, oa.measured, &ob.layout, ob.measured,
				    &overhead, why, sizeof why) != LLMP_OK) {
		fprintf(stderr, "%s, %s: cannot fit: %s\n", a->id, b->id,
			strcmp(a->model, b->model) ? "a fitmb pair needs one model text" : why);
		return -1;
	}
	struct fit *f = fit_of(a->gpu, grid ? a->grid : "");
	if (f)
		f->layer_overhead_s = overhead;
	if (!quiet)
		printf("fitted on %s and %s %s: %.2f ms a layer and micro-batch (their steps' ratio %.3f)%s%s\n",
		       a->id, b->id, a->gpu, 1e3 * overhead, oa.measured / ob.measured,
		       grid ? ", for grid " : "", grid ? a->grid : "");
	return 0;
}

/*
 * Fit the link rate inside the NVLink domain on a `fittp` row: the layout of its gpu
 * text's `fit` (or `fit+mem`) row at another tp; `fittpgrid`: of its grid's `fitgrid`
 * row. The efficiency scales both steps alike; the tp collectives, exposed, weigh on
 * the larger tp's: their ratio sizes the link.
 */
static int fit_tp(const struct row *r, const struct row *rows, size_t n, bool quiet)
{
	bool grid = strcmp(r->role, "fittpgrid") == 0;
	const struct row *base = NULL;
	for (size_t i = 0; i < n && !base; i++) {
		const struct row *b = &rows[i];
		bool role = grid ? strcmp(b->role, "fitgrid") == 0 && strcmp(b->grid, r->grid) == 0
				 : strcmp(b->role, "fit") == 0 || strcmp(b->role, "fit+mem") == 0;
		if (role && strcmp(b->gpu, r->gpu) == 0)
			base = b;
	}
	struct model_desc mr, mb;
	struct gpu_desc g;
	struct outcome orow, obase;
	if (!base || strcmp(base->model, r->model) != 0 || base->gpus != r->gpus) {
		fprintf(stderr, "%s: a %s row needs a %s row of its gpu text%s, model and world\n", r->id,
			r->role, grid ? "fitgrid" : "fit", grid ? " and grid" : "");
		return -1;
	}
	if (model_of(r, &mr) || model_of(base, &mb) || gpu_of(r, &g))
		return -1;
	evaluate(r, &mr, &g, &orow);
	evaluate(base, &mb, &g, &obase);
	if (!orow.valid || !obase.valid || !orow.measured || !obase.measured) {
		fprintf(stderr, "%s, %s: a fittp pair needs two valid layouts with measured steps\n",
			base->id, r->id);
		return -1;
	}
	bool row_first = r->tp < base->tp;
	const struct outcome *a = row_first ? &orow : &obase, *b = row_first ? &obase : &orow;
	char why[LLMP_MSG_MAX];
	double gbps;
	if (step_fit_link(&mr, &g, r->gpus, &a->layout, a->measured, &b->layout, b->measured, &gbps, why,
			  sizeof why) != LLMP_OK) {
		fprintf(stderr, "%s, %s: cannot fit: %s\n", base->id, r->id, why);
		return -1;
	}
	struct fit *f = fit_of(r->gpu, grid ? r->grid : "");
	if (f)
		f->link_gbps = gbps;
	if (!quiet)
		printf("fitted on %s and %s %s: a link of %.0f GB/s inside the NVLink domain (their steps' "
		       "ratio %.3f)%s%s\n",
		       base->id, r->id, r->gpu, gbps, b->measured / a->measured, grid ? ", for grid " : "",
		       grid ? r->grid : "");
	return 0;
}

/*
 * The `fitmb` and `fitmbgrid` rows in pairs: two rows of one role, gpu text and grid,
 * the smaller mbs first.
 */
static int pair_rows(const struct row *rows, size_t n, const struct row *pairs[][2], size_t *npairs)
{
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		if (strcmp(r->role, "fitmb") != 0 && strcmp(r->role, "fitmbgrid") != 0)
			continue;
		size_t p = 0;
		while (p < *npairs &&
		       (pairs[p][1] || strcmp(pairs[p][0]->role, r->role) != 0 ||
			strcmp(pairs[p][0]->gpu, r->gpu) != 0 || strcmp(pairs[p][0]->grid, r->grid) != 0))
			p++;
		if (p == *npairs) {
			if (*npairs == MAX_FITS) {
				fprintf(stderr, "%s: more than %d fitmb pairs\n", r->id, MAX_FITS);
				return -1;
			}
			pairs[(*npairs)++][0] = r, pairs[p][1] = NULL;
		} else if (pairs[p][0]->mbs > r->mbs) {
			pairs[p][1] = pairs[p][0], pairs[p][0] = r;
		} else {
			pairs[p][1] = r;
		}
	}
	for (size_t p = 0; p < *npairs; p++)
		if (!pairs[p][1]) {
			fprintf(stderr, "%s: a %s row without its pair (same gpu text and grid)\n",
				pairs[p][0]->id, pairs[p][0]->role);
			return -1;
		}
	return 0;
}

#define FIT_ROUNDS_MAX 1000

/* Two fitted values alike to a part in 10^12 (or both 0: not fitted). */
static bool near(double a, double b)
{
	double d = a - b, scale = a < 0 ? -a : a;
	return (d < 0 ? -d : d) <= 1e-12 * scale;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Spearman's rank correlation of two series without ties. */
static double spearman(const double *x, const double *y, size_t n)
{
	double d2 = 0;
	for (size_t i = 0; i < n; i++) {
		double rx = 0, ry = 0;
		for (size_t j = 0; j < n; j++)
			rx += x[j] < x[i], ry += y[j] < y[i];
		d2 += (rx - ry) * (rx - ry);
	}
	return n > 1 ? 1 - 6 * d2 / ((double)n * ((double)n * n - 1)) : 0;
}

/* The rows the guard's and memory figures judge: eval and guard rows, and those of a time constant. */
static bool judged(const struct row *r, bool *time_fitted)
{
	*time_fitted = strcmp(r->role, "fit") == 0 || strncmp(r->role, "fitmb", 5) == 0 ||
		       strcmp(r->role, "fitgrid") == 0 || strncmp(r->role, "fittp", 5) == 0;
	return strcmp(r->role, "eval") == 0 || strcmp(r->role, "guard") == 0 || *time_fitted;
}

/* A group of the memory band: an engine on a GPU generation. */
struct band_group {
	enum model_engine engine;
	const char *generation;
	double over[MAX_ROWS]; /* estimate / measured - 1 of its measured rows */
	size_t n;
	double band; /* measured: mem_guard.h's rule */
	double compiled;
};

static struct band_group groups[MAX_FITS];
static size_t ngroups;
static double band_any = -1; /* the largest error either way over every measured row */

static struct band_group *group_of(enum model_engine engine, const char *gpu_name, bool make)
{
	const char *generation = mem_guard_generation(gpu_name);
	if (!generation)
		generation = "other";
	for (size_t i = 0; i < ngroups; i++)
		if (groups[i].engine == engine && strcmp(groups[i].generation, generation) == 0)
			return &groups[i];
	if (!make || ngroups == MAX_FITS)
		return NULL;
	struct band_group *b = &groups[ngroups++];
	memset(b, 0, sizeof *b);
	b->engine = engine, b->generation = generation;
	return b;
}

static int by_value_down(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x > y ? -1 : x < y;
}

/*
 * The memory band (mem_guard.h) measured on the judged rows with a measured
 * peak: per engine and GPU generation, the overestimate that at most one row
 * in 20 exceeds, for a group of MEM_GUARD_ROWS_MIN rows or more; else the
 * largest error either way over every measured row.
 */
static int measure_bands(const struct row *rows, size_t n)
{
	double worst = 0;
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		bool time_fitted;
		struct model_desc m;
		struct gpu_desc g;
		struct outcome o;
		if (!judged(r, &time_fitted) || strcmp(r->mem, "-") == 0)
			continue;
		if (model_of(r, &m) || gpu_of(r, &g))
			return -1;
		evaluate(r, &m, &g, &o);
		struct band_group *b = group_of(m.engine, g.name, true);
		if (!o.valid || !b)
			continue;
		double e = o.est.peak_bytes / (atof(r->mem) * GIB) - 1;
		b->over[b->n++] = e;
		worst = (e < 0 ? -e : e) > worst ? (e < 0 ? -e : e) : worst;
	}
	band_any = worst;
	printf("\nmemory band (planner/mem_guard.h: the guard refuses only when the estimate / (1 + band) "
	       "exceeds the GPU):\n");
	for (size_t i = 0; i < ngroups; i++) {
		struct band_group *b = &groups[i];
		qsort(b->over, b->n, sizeof *b->over, by_value_down);
		size_t k = b->n / 20; /* rows allowed above the band */
		b->band = b->n >= MEM_GUARD_ROWS_MIN ? (b->over[k] > 0 ? b->over[k] : 0) : band_any;
		printf("  %-9s on %-9s %2zu measured rows, overestimate %+.1f%% .. %+.1f%%: band %.4f%s\n",
		       model_engine_name(b->engine), b->generation, b->n, 100 * b->over[b->n - 1],
		       100 * b->over[0], b->band,
		       b->n >= MEM_GUARD_ROWS_MIN ? " (exceeded by at most 1 row in 20)"
						  : " (too few rows: the overall band)");
	}
	printf("  any other engine and GPU: band %.4f (the largest error either way over every measured row)\n",
	       band_any);
	return 0;
}

/* The band the guard uses for a row: its group's measured one, else the overall one. */
static double band_of(const struct model_desc *m, const struct gpu_desc *g)
{
	struct band_group *b = group_of(m->engine, g->name, false);
	return b && b->n >= MEM_GUARD_ROWS_MIN ? b->band : band_any;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : LLMP_SRCDIR "/bench/data/published_layouts.tsv";
	static struct row rows[MAX_ROWS];
	size_t n;
	if (read_rows(path, rows, &n))
		return 1;
	printf("validation set: %s, %zu rows\n", path, n);
	for (size_t i = 0; i < n; i++)
		if ((strcmp(rows[i].role, "fit+mem") == 0 || strcmp(rows[i].role, "fitmem") == 0) &&
		    fit_memory(&rows[i]))
			return 1;
	/* The efficiency, the per-layer overhead and the link rate of a gpu text depend on each
	 * other: each fitted with the others' last values until none moves, then once more, printed. */
	const struct row *pairs[MAX_FITS][2];
	size_t npairs = 0;
	if (pair_rows(rows, n, pairs, &npairs))
		return 1;
	for (int round = 0, settled = 0; settled < 2; round++) {
		struct fit was[MAX_FITS];
		memcpy(was, fits, sizeof was);
		bool quiet = settled == 0;
		for (size_t i = 0; i < n; i++)
			if ((strcmp(rows[i].role, "fit") == 0 || strcmp(rows[i].role, "fit+mem") == 0 ||
			     strcmp(rows[i].role, "fitgrid") == 0) &&
			    fit_row(&rows[i], quiet))
				return 1;
		for (size_t p = 0; p < npairs; p++)
			if (fit_pair(pairs[p][0], pairs[p][1], quiet))
				return 1;
		for (size_t i = 0; i < n; i++)
			if (strncmp(rows[i].role, "fittp", 5) == 0 && fit_tp(&rows[i], rows, n, quiet))
				return 1;
		bool moved = false;
		for (size_t f = 0; f < nfits; f++)
			moved = moved || !near(was[f].efficiency, fits[f].efficiency) ||
				!near(was[f].layer_overhead_s, fits[f].layer_overhead_s) ||
				!near(was[f].link_gbps, fits[f].link_gbps);
		settled += settled || !moved;
		if (round == FIT_ROUNDS_MAX) {
			fprintf(stderr, "the fitted constants did not settle in %d rounds\n", FIT_ROUNDS_MAX);
			return 1;
		}
	}

	if (measure_bands(rows, n))
		return 1;
	/* The plugin's guard uses the compiled bands: say when they are not what the data give. */
	for (size_t i = 0; i < ngroups; i++) {
		const char *gpu = strcmp(groups[i].generation, "ampere") == 0      ? "a100"
				  : strcmp(groups[i].generation, "hopper") == 0    ? "h100"
				  : strcmp(groups[i].generation, "blackwell") == 0 ? "b200"
										   : "custom";
		double compiled = mem_guard_band(groups[i].engine, gpu),
		       want = groups[i].n >= MEM_GUARD_ROWS_MIN ? groups[i].band : band_any;
		if (compiled < want - 0.0005 || compiled > want + 0.0005)
			printf("  NOTE: planner/mem_guard.h has %.3f for %s on %s; the data give %.3f\n",
			       compiled, model_engine_name(groups[i].engine), groups[i].generation, want);
	}

	size_t ran = 0, accepted = 0, warned = 0, oom = 0, refused = 0, mems = 0, timed = 0, within20 = 0;
	char warned_rows[1024] = "", judged_rows[4096] = "", missed_rows[1024] = "";
	double stack_err[MAX_ROWS]; /* each timed row's error and gpu text, for the per-stack figures */
	const char *stack_of[MAX_ROWS];
	size_t chooser = 0, same = 0, close10 = 0;
	double errors[MAX_ROWS], mem_err_max = 0;
	/* Each judged row's peak estimate, for the rows the guard cannot refuse (below). */
	double peak_of[MAX_ROWS];
	bool ran_of[MAX_ROWS] = { false }, oom_missed[MAX_ROWS] = { false };
	printf("\n%-19s %-13s %4s %9s %7s %9s %9s %7s  %-30s %s\n", "row", "gpu", "fits", "peak", "measured",
	       "step", "measured", "error", "auto's choice (tp,pp,cp,ep)", "published/chosen");
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		/* guard: a run whose memory the model covers but whose time it does not (fp8): the
		 * guard's figures only. A row a time constant was fitted on (fit, fitmb, fitgrid, fitmbgrid,
		 * fittp, fittpgrid) is
		 * judged on memory too, which no such constant touches; one the allowance was fitted
		 * on (fitmem, fit+mem) is not. */
		bool time_fitted;
		if (!judged(r, &time_fitted))
			continue;
		bool guard_only = strcmp(r->role, "guard") == 0 || time_fitted;
		struct model_desc m;
		struct gpu_desc g;
		struct outcome o;
		if (model_of(r, &m) || gpu_of(r, &g))
			return 1;
		evaluate(r, &m, &g, &o);
		bool did_run = strcmp(r->ran, "yes") == 0;
		double peak = o.fits ? o.est.peak_bytes : o.least_peak;
		enum mem_guard_verdict v = o.valid ? mem_guard_judge(peak, g.mem_bytes, band_of(&m, &g))
						   : MEM_GUARD_CANNOT;
		ran += did_run, oom += !did_run;
		accepted += did_run && v != MEM_GUARD_CANNOT;
		warned += did_run && v == MEM_GUARD_DOUBTFUL;
		refused += !did_run && v == MEM_GUARD_CANNOT;
		peak_of[i] = peak, ran_of[i] = did_run && o.valid;
		oom_missed[i] = !did_run && v != MEM_GUARD_CANNOT;
		size_t used = strlen(warned_rows);
		if (v == MEM_GUARD_DOUBTFUL)
			snprintf(warned_rows + used, sizeof warned_rows - used,
				 "%s%s (%.1f GiB, %.1f at the favourable end)", used ? ", " : "", r->id,
				 peak / GIB, mem_guard_favourable(peak, band_of(&m, &g)) / GIB);
		if (strcmp(r->mem, "-") == 0) { /* the band was measured on the others */
			used = strlen(judged_rows);
			snprintf(judged_rows + used, sizeof judged_rows - used, "%s%s", used ? " " : "",
				 r->id);
		}
		if (!o.valid) {
			printf("%-19s %-13s refused by the rules: %s\n", r->id, r->gpu, o.why);
			continue;
		}
		char err[16] = "-", meas[16] = "-";
		if (o.measured > 0 && !guard_only) {
			double e = o.est.step_s / o.measured - 1;
			stack_err[timed] = e < 0 ? -e : e, stack_of[timed] = r->gpu;
			errors[timed++] = e < 0 ? -e : e;
			within20 += (e < 0 ? -e : e) <= 0.20;
			snprintf(err, sizeof err, "%+.0f%%", 100 * e);
			snprintf(meas, sizeof meas, "%.2f s", o.measured);
		}
		if (strcmp(r->mem, "-") != 0) {
			double e = o.est.peak_bytes / (atof(r->mem) * GIB) - 1;
			mems++;
			if ((e < 0 ? -e : e) > mem_err_max)
				mem_err_max = e < 0 ? -e : e;
		}
		char pick[LLMP_MSG_MAX + 8] = "(grid row)", ratio[48] = "";
		if (time_fitted)
			snprintf(pick, sizeof pick, "(fit row: memory only)");
		else if (guard_only) /* with '?', which recompute made it fit */
			snprintf(pick, sizeof pick, "(guard row, %s)",
				 o.layout.recompute == MODEL_RECOMPUTE_FULL ? "full recompute"
				 : o.layout.moe_act                         ? "selective, moe_act"
									    : "selective");
		else if (strcmp(r->grid, "-") == 0) {
			struct chooser_result a;
			char msg[LLMP_MSG_MAX];
			/* The chooser under the row's recompute when published: a 2021 run had no selective. */
			m.recompute = o.layout.recompute;
			if (strcmp(r->recompute, "?") == 0)
				m.recompute = MODEL_RECOMPUTE_AUTO;
			if (chooser_run(&m, &g, r->gpus, &a, msg, sizeof msg) != LLMP_OK) {
				snprintf(pick, sizeof pick, "(%s)", msg);
			} else {
				const struct step_layout *c = &a.all[0].layout;
				bool eq = c->tp == r->tp && c->pp == r->pp && c->cp == r->cp &&
					  c->ep == r->ep;
				/* Where the source leaves vpp or mbs unsaid, the published layout gets the
				 * best of them: the fastest fitting candidate with its tp, pp, cp, ep. */
				double published = o.fits ? o.est.step_s : 0;
				for (size_t k = 0; k < a.fitting && (r->vpp_unsaid || r->mbs_unsaid); k++) {
					const struct step_layout *x = &a.all[k].layout;
					if (x->tp == r->tp && x->pp == r->pp && x->cp == r->cp &&
					    x->ep == r->ep &&
					    (r->interleaved ? x->vpp > 1
							    : r->vpp_unsaid || x->vpp == r->vpp) &&
					    (r->mbs_unsaid || x->mbs == r->mbs) &&
					    (!published || a.all[k].est.step_s < published)) {
						published = a.all[k].est.step_s;
						break; /* sorted: the first match is the fastest */
					}
				}
				double q = published && a.fitting ? published / a.all[0].est.step_s : 0;
				/* A layout that ran out of memory is no published choice to agree with. */
				chooser += did_run;
				same += did_run && eq;
				close10 += did_run && q > 0 && q <= 1.10;
				snprintf(pick, sizeof pick, "%u,%u,%u,%u%s", c->tp, c->pp, c->cp, c->ep,
					 eq ? " (same)" : "");
				if (q > 0)
					snprintf(ratio, sizeof ratio, "%.3f", q);
				else
					snprintf(ratio, sizeof ratio, "published does not fit here");
				chooser_result_free(&a);
			}
		}
		char mem[16] = "-";
		if (strcmp(r->mem, "-") != 0)
			snprintf(mem, sizeof mem, "%s GiB", r->mem);
		printf("%-19s %-13s %4s %5.1f GiB %7s %7.2f s %9s %7s  %-30s %s\n", r->id, r->gpu,
		       v == MEM_GUARD_FITS       ? "yes"
		       : v == MEM_GUARD_DOUBTFUL ? "warn"
						 : "NO",
		       o.est.peak_bytes / GIB, mem, o.est.step_s, meas, err, pick, ratio);
	}

	/* Measured grids: rank correlation of modelled and measured, and the pick against the measured best. */
	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].grid, "-") == 0)
			continue;
		bool first = true;
		for (size_t j = 0; j < i; j++)
			first = first && strcmp(rows[j].grid, rows[i].grid) != 0;
		if (!first)
			continue;
		double model[MAX_ROWS], measured[MAX_ROWS];
		unsigned pp[MAX_ROWS];
		size_t k = 0, pick = 0, best = 0;
		for (size_t j = i; j < n; j++) {
			struct model_desc m;
			struct gpu_desc g;
			struct outcome o;
			/* a row a constant was fitted on is no candidate: it would judge its own fit */
			if (strcmp(rows[j].grid, rows[i].grid) != 0 || strcmp(rows[j].role, "eval") != 0 ||
			    model_of(&rows[j], &m) || gpu_of(&rows[j], &g))
				continue;
			evaluate(&rows[j], &m, &g, &o);
			if (!o.valid || !o.measured)
				continue;
			model[k] = o.est.step_s, measured[k] = o.measured, pp[k] = rows[j].pp;
			pick = model[k] < model[pick] ? k : pick;
			best = measured[k] < measured[best] ? k : best;
			k++;
		}
		/* the chooser's rule (auto_layout.h): within the band, the fewest stages */
		for (size_t c = 0, fastest = pick; c < k; c++)
			if (chooser_tie_prefers(model[c], pp[c], model[pick], pp[pick], model[fastest]))
				pick = c;
		printf("\ngrid %s: %zu measured candidates; rank correlation %.2f; the modelled pick measured %.1f%% "
		       "above the measured best\n",
		       rows[i].grid, k, spearman(model, measured, k),
		       k ? 100 * (measured[pick] / measured[best] - 1) : 0);
	}

	/* Per named software stack ("h100@nemo-24.07"): its held-out rows' step error. */
	for (size_t i = 0; i < timed; i++) {
		bool first = strchr(stack_of[i], '@') != NULL;
		for (size_t j = 0; j < i && first; j++)
			first = strcmp(stack_of[j], stack_of[i]) != 0;
		if (!first)
			continue;
		double e[MAX_ROWS];
		size_t k = 0, in10 = 0, in20 = 0;
		for (size_t j = i; j < timed; j++)
			if (!strcmp(stack_of[j], stack_of[i])) {
				e[k++] = stack_err[j];
				in10 += stack_err[j] <= 0.10, in20 += stack_err[j] <= 0.20;
			}
		qsort(e, k, sizeof *e, by_value);
		printf("\nstack %s: %zu held-out rows, median step error %.0f%%, %zu within 10%%, %zu within 20%%\n",
		       stack_of[i], k, 100 * (k % 2 ? e[k / 2] : (e[k / 2 - 1] + e[k / 2]) / 2), in10, in20);
	}
	qsort(errors, timed, sizeof *errors, by_value);
	printf("\nfigures (a fitted constant's rows left out of what it fits):\n");
	printf("  guard: accepts %zu of %zu layouts that ran (%.1f%%; goal 97%%), %zu of them with a warning%s%s\n",
	       accepted, ran, ran ? 100.0 * accepted / ran : 0, warned, warned ? ": " : "", warned_rows);
	printf("  guard: judged with the band, held out of its measurement (no measured memory): %s\n",
	       judged_rows);
	/* An out-of-memory layout the guard accepts: the run on the same GPU text whose estimate is
	 * the nearest at or above its own. When one ran, no threshold on the estimate refuses the
	 * one and accepts the other: the model does not tell them apart. */
	for (size_t i = 0; i < n; i++) {
		if (!oom_missed[i])
			continue;
		size_t twin = n;
		for (size_t j = 0; j < n; j++)
			if (ran_of[j] && !strcmp(rows[j].gpu, rows[i].gpu) && peak_of[j] >= peak_of[i] &&
			    (twin == n || peak_of[j] < peak_of[twin]))
				twin = j;
		size_t at = strlen(missed_rows);
		char seen[32] = "no memory measured";
		if (twin < n && strcmp(rows[twin].mem, "-"))
			snprintf(seen, sizeof seen, "%s GiB measured", rows[twin].mem);
		if (twin < n)
			snprintf(missed_rows + at, sizeof missed_rows - at,
				 "%s%s (%.1f GiB), while %s ran with an estimate of %.1f GiB (%s)",
				 at ? "; " : "", rows[i].id, peak_of[i] / GIB, rows[twin].id,
				 peak_of[twin] / GIB, seen);
		else
			snprintf(missed_rows + at, sizeof missed_rows - at, "%s%s (%.1f GiB)", at ? "; " : "",
				 rows[i].id, peak_of[i] / GIB);
	}
	if (oom)
		printf("  guard: refuses %zu of %zu known out-of-memory layouts (goal: all)%s%s\n", refused,
		       oom, missed_rows[0] ? "; the estimate fits, so no band refuses: " : "", missed_rows);
	else
		printf("  guard: no known out-of-memory layout in the set yet\n");
	if (mems)
		printf("  memory: largest error %.0f%% over %zu measured rows (goal 20%%)\n",
		       100 * mem_err_max, mems);
	else
		printf("  memory: no measured memory in the set yet\n");
	printf("  chooser: picks the published tp,pp,cp,ep in %zu of %zu rows that ran (goal: half)\n", same,
	       chooser);
	printf("  chooser: the published layout's modelled step within 10%% of the choice's in %zu of %zu (goal 90%%)\n",
	       close10, chooser);
	if (timed)
		printf("  step time: within 20%% of the published in %zu of %zu rows (%.0f%%); median error %.0f%%, "
		       "largest %.0f%% (goals: 90%% within 20%%, median within 10%%)\n",
		       within20, timed, 100.0 * within20 / timed, 100 * errors[timed / 2],
		       100 * errors[timed - 1]);
	return 0;
}
