/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mem_guard.h - the memory guard's decision, knowing the step model's error.
 *
 * The step model's memory estimate (step_model.h) is not exact: against the
 * measured peaks of bench/data/published_layouts.tsv it is within about 15%
 * of every figure, mostly below it. A layout whose estimate exceeds the GPU
 * by less than that may run, and one that ran must not be refused. So the
 * guard judges a layout against a band b, the model's measured overestimate
 * (bench/bench_validate prints it per engine and GPU generation):
 *
 *   estimate <= GPU                 fits      accepted
 *   estimate / (1 + b) <= GPU       doubtful  accepted with a warning naming both
 *   estimate / (1 + b) >  GPU       cannot    refused (under the site's guard=refuse)
 *
 * estimate / (1 + b) is the favourable end: a measured peak m with
 * |estimate - m| <= b m is at least estimate / (1 + b).
 *
 * Pure (no Slurm): the plugin's guard and bench_validate use it alike;
 * unit-tested in tests/unit/test_mem_guard.c.
 */
#ifndef LLMP_MEM_GUARD_H
#define LLMP_MEM_GUARD_H

#include "model_desc.h"
#include "step_model.h"

/* The bands measured (mem_guard.c says on what): a group with this many measured runs has its own. */
#define MEM_GUARD_ROWS_MIN 10
#define MEM_GUARD_BAND_DEEPSPEED_AMPERE 0.007 /* Megatron-DeepSpeed on A100 */
#define MEM_GUARD_BAND_ANY 0.150              /* any other engine and GPU */

/* What a site does with a layout the guard judges (plugstack guard=). */
enum mem_guard_policy {
	MEM_GUARD_REFUSE, /* refuse what cannot fit, warn on what may not (the default) */
	MEM_GUARD_WARN,   /* warn on both, refuse nothing for memory */
	MEM_GUARD_OFF,    /* no memory check (Megatron's rules are still checked) */
};

enum mem_guard_verdict {
	MEM_GUARD_FITS,     /* the estimate fits */
	MEM_GUARD_DOUBTFUL, /* the estimate does not, its favourable end does */
	MEM_GUARD_CANNOT,   /* not even the favourable end fits */
};

/*
 * The band of the model's memory error measured for an engine on a GPU
 * (bench/bench_validate, "memory band" lines): the group's own where the
 * validation set measured enough of its runs, else the largest error either
 * way over every measured run.
 */
double mem_guard_band(enum model_engine engine, const char *gpu_name);

/* The GPU generation of an llmp GPU name ("ampere", "hopper", "blackwell"), or NULL. */
const char *mem_guard_generation(const char *gpu_name);

/* The favourable end of an estimate of peak bytes: peak / (1 + band). */
double mem_guard_favourable(double peak, double band);

/* The verdict on a peak (bytes per rank) against a GPU's mem bytes under a band. */
enum mem_guard_verdict mem_guard_judge(double peak, double mem, double band);

/* What lowers a term, for a refusal ("a smaller micro-batch, recompute=full, ..."). */
const char *mem_guard_remedy(enum step_term term);

/* "refuse", "warn", "off"; -1 from the parse when text is none of them. */
const char *mem_guard_policy_name(enum mem_guard_policy p);
int mem_guard_policy_parse(const char *text);

#endif /* LLMP_MEM_GUARD_H */
