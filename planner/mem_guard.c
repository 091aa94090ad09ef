/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mem_guard.c - the memory guard's decision and its measured bands (mem_guard.h).
 */
#include "mem_guard.h"

#include <string.h>

/*
 * The bands bench/bench_validate measures on bench/data/published_layouts.tsv
 * (its "memory band" lines; it says when these differ from what it measures).
 * A group with MEM_GUARD_ROWS_MIN measured runs or more has its own band: the
 * model's overestimate (estimate / measured - 1) that at most one run in 20
 * exceeds. Only BigScience's Megatron-DeepSpeed runs on A100 80 GB
 * (bigscience-workshop/bigscience, train/tr11-176B-ml/chronicles-prequel.md,
 * nvidia-smi peaks) are measured that often; the model underestimates 36 of
 * those 38 peaks. Every other group takes MEM_GUARD_BAND_ANY, the largest
 * error either way over all measured runs: where the data do not say which
 * way the model errs for a stack, its error may be that large either way.
 */
static const struct {
	enum model_engine engine;
	const char *generation;
	double band;
} measured_bands[] = {
	{ MODEL_ENGINE_DEEPSPEED, "ampere", MEM_GUARD_BAND_DEEPSPEED_AMPERE },
};

const char *mem_guard_generation(const char *gpu_name)
{
	static const struct {
		const char *prefix, *generation;
	} kinds[] = {
		{ "a100", "ampere" },    { "a10", "ampere" },      { "h100", "hopper" },
		{ "h800", "hopper" },    { "h200", "hopper" },     { "gh200", "hopper" },
		{ "b200", "blackwell" }, { "gb200", "blackwell" }, { "l4", "ada" },
		{ "rtx4090", "ada" },
	};
	if (!gpu_name)
		return NULL;
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
		if (strncmp(gpu_name, kinds[i].prefix, strlen(kinds[i].prefix)) == 0)
			return kinds[i].generation;
	return NULL;
}

double mem_guard_band(enum model_engine engine, const char *gpu_name)
{
	const char *generation = mem_guard_generation(gpu_name);
	for (size_t i = 0; generation && i < sizeof measured_bands / sizeof *measured_bands; i++)
		if (measured_bands[i].engine == engine &&
		    strcmp(measured_bands[i].generation, generation) == 0)
			return measured_bands[i].band;
	return MEM_GUARD_BAND_ANY;
}

double mem_guard_favourable(double peak, double band)
{
	return peak / (1 + band);
}

enum mem_guard_verdict mem_guard_judge(double peak, double mem, double band)
{
	if (peak <= mem)
		return MEM_GUARD_FITS;
	return mem_guard_favourable(peak, band) <= mem ? MEM_GUARD_DOUBTFUL : MEM_GUARD_CANNOT;
}

const char *mem_guard_remedy(enum step_term term)
{
	switch (term) {
	case STEP_WEIGHTS:
		return "more tp or pp (each GPU holds 1/(tp x pp) of the weights), or zero=3 in the model "
		       "to shard them over dp";
	case STEP_GRADS: return "zero=2 in the model (gradients sharded over dp), or more tp or pp";
	case STEP_OPTIMIZER:
		return "the distributed optimizer (zero=1 in the model) over more dp, or more tp or pp";
	case STEP_ACTIVATIONS:
		return "a smaller micro-batch (mbs= in the model) or recompute=full, or more tp, cp or pp";
	case STEP_ALLOWANCE: break;
	}
	return "more tp or pp: less of the model on each GPU";
}

const char *mem_guard_policy_name(enum mem_guard_policy p)
{
	return p == MEM_GUARD_WARN ? "warn" : p == MEM_GUARD_OFF ? "off" : "refuse";
}

int mem_guard_policy_parse(const char *text)
{
	static const enum mem_guard_policy all[] = { MEM_GUARD_REFUSE, MEM_GUARD_WARN, MEM_GUARD_OFF };
	for (size_t i = 0; text && i < sizeof all / sizeof *all; i++)
		if (strcmp(text, mem_guard_policy_name(all[i])) == 0)
			return (int)all[i];
	return -1;
}
