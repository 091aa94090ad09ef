/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_model.c - libFuzzer target for what a user types about the model:
 * the --model text (or --llm-model, LLMP_MODEL), a Hugging Face config.json,
 * the --gpu text, and the step model and chooser that read them.
 *
 * Input: up to three lines, "MODEL\nGPU\nWORLD LAYOUT|auto". When it starts
 * with '{', the bytes up to the first NUL are a config.json written to a
 * temporary file, and MODEL is keys that follow its path. A MODEL naming a
 * file of its own is skipped: the fuzzer reads no file it did not write.
 *
 * For any bytes: no crash, leak or undefined behaviour (float-to-integer
 * overflows included: clang's -fsanitize=undefined has them). For what is
 * accepted: the estimate's figures are finite and consistent (the peak is
 * the largest stage's, fits says peak <= memory, the step holds its
 * compute); the chooser's fitting candidates fit, its choice is within the
 * tie band of the fastest, and estimating the choice again as a written
 * layout gives its figures. The same texts then go through the plugin's
 * decision as sbatch and srun make it (plugin_model_decide, no topology):
 * a refusal says why; a decision's Megatron flags are whole and pass the
 * check the task environment makes, and an automatic choice is a layout
 * Megatron's grammar accepts for the world. Built with clang
 * -fsanitize=fuzzer by `make fuzz`, and replayed over the stored corpus by
 * tests/fuzz/fuzz_replay_model in `make check`.
 */
#define _DEFAULT_SOURCE /* mkstemp */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llmp/llmp_spec.h>
#include "fuzz_check.h"
#include "planner/auto_layout.h"
#include "planner/mem_guard.h"
#include "planner/model_desc.h"
#include "planner/step_model.h"
#include "plugin/model_layout.h"
#include "topology/gpu_desc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define WORLD_MAX 512u /* the chooser at this size stays well under a millisecond */

/* The temporary config.json, made once; its path, or NULL when it cannot be. */
static const char *config_path(void)
{
	static char path[64];
	if (!path[0]) {
		const char *dir = getenv("TMPDIR");
		snprintf(path, sizeof path, "%.40s/llmp-fuzz-XXXXXX.json", dir && *dir ? dir : "/tmp");
		int fd = mkstemps(path, 5);
		if (fd < 0)
			return NULL;
		close(fd);
	}
	return path;
}

static bool write_config(const char *path, const uint8_t *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return false;
	bool ok = fwrite(data, 1, n, f) == n;
	return fclose(f) == 0 && ok;
}

/* The next line of [*p, end), NUL-terminated in place (the caller's copy). */
static char *next_line(char **p, char *end)
{
	char *line = *p;
	if (line >= end)
		return NULL;
	char *nl = memchr(line, '\n', (size_t)(end - line));
	*p = nl ? nl + 1 : end;
	if (nl)
		*nl = '\0';
	return line;
}

static bool finite_nonneg(double x)
{
	return isfinite(x) && x >= 0;
}

/* What any estimate must say of itself. */
static void check_estimate(const struct gpu_desc *g, unsigned pp, const struct step_stage *st,
			   const struct step_estimate *e)
{
	double largest = 0;
	for (unsigned k = 0; st && k < pp; k++) {
		CHECK(finite_nonneg(st[k].total));
		CHECK(st[k].weights >= 0 && st[k].grads >= 0 && st[k].optimizer >= 0 &&
		      st[k].activations >= 0);
		largest = st[k].total > largest ? st[k].total : largest;
	}
	CHECK(isfinite(e->peak_bytes) && e->peak_bytes > 0);
	CHECK(!st || fabs(largest - e->peak_bytes) <= 1e-9 * e->peak_bytes);
	CHECK(e->peak_stage < pp);
	CHECK(e->fits == (e->peak_bytes <= g->mem_bytes));
	CHECK(isfinite(e->step_s) && e->step_s > 0);
	CHECK(finite_nonneg(e->compute_s) && finite_nonneg(e->bubble_s));
	CHECK(e->compute_s + e->bubble_s <= e->step_s * (1 + 1e-9));
	for (int d = 0; d < 5; d++)
		CHECK(finite_nonneg(e->net_s[d]));
	CHECK(isfinite(e->mfu) && e->mfu > 0 && e->mfu <= 1 + 1e-9);
}

static void check_written(const struct model_desc *m, const struct gpu_desc *g, uint32_t world,
			  const char *text)
{
	char msg[LLMP_MSG_MAX];
	llmp_spec spec;
	if (llmp_spec_parse(text, &spec, msg, sizeof msg) != LLMP_OK || spec.help)
		return;
	struct step_layout l = step_layout_of_spec(&spec, m);
	if (m->zero == MODEL_ZERO_AUTO || step_layout_check(m, world, &l, msg, sizeof msg) != LLMP_OK)
		return;
	struct step_stage *st = calloc(l.pp, sizeof *st);
	CHECK(st != NULL);
	struct step_estimate e;
	CHECK(step_estimate(m, g, world, &l, st, &e, msg, sizeof msg) == LLMP_OK);
	check_estimate(g, l.pp, st, &e);
	free(st);
}

static void check_auto(const struct model_desc *m, const struct gpu_desc *g, uint32_t world)
{
	char msg[LLMP_MSG_MAX];
	struct chooser_result r;
	if (!m->gbs || chooser_run(m, g, world, &r, msg, sizeof msg) != LLMP_OK)
		return;
	CHECK(r.fitting <= r.n);
	double fastest = INFINITY;
	for (size_t i = 0; i < r.n; i++) {
		const struct chooser_candidate *c = &r.all[i];
		CHECK(c->est.fits == (i < r.fitting));
		check_estimate(g, c->layout.pp, NULL, &c->est);
		if (i < r.fitting && c->est.step_s < fastest)
			fastest = c->est.step_s;
	}
	if (r.fitting) {
		/* The choice, written out and estimated alone, says what the chooser said. */
		const struct chooser_candidate *c = &r.all[0];
		CHECK(c->est.step_s <= fastest * (1 + CHOOSER_TIE_BAND) * (1 + 1e-12));
		struct model_desc alone = *m;
		alone.zero = c->zero;
		struct step_layout l = c->layout;
		struct step_estimate e;
		CHECK(step_layout_check(&alone, world, &l, msg, sizeof msg) == LLMP_OK);
		CHECK(step_estimate(&alone, g, world, &l, NULL, &e, msg, sizeof msg) == LLMP_OK);
		CHECK(fabs(e.step_s - c->est.step_s) <= 1e-9 * c->est.step_s);
		CHECK(fabs(e.peak_bytes - c->est.peak_bytes) <= 1e-9 * c->est.peak_bytes);
	}
	chooser_result_free(&r);
}

/*
 * The plugin's decision for the same texts, at submission (world 0) and in a
 * step, under a site's memory guard policy (planner/mem_guard.h) and a user's
 * override: what the guard made of a layout beyond the estimate is said, and
 * only a doubtful one keeps peaks for the tasks' check.
 */
static void check_plugin_under(const char *model, const char *gpu, uint32_t world, const char *layout,
			       int policy, double band, bool override)
{
	struct plugin_site site;
	memset(&site, 0, sizeof site);
	llmp_spec_init(&site.defaults);
	site.guard = policy, site.guard_band = band;
	llmp_spec spec;
	char msg[LLMP_MSG_MAX];
	bool automatic = !strcmp(layout, "auto");
	if (!automatic && (llmp_spec_parse(layout, &spec, msg, sizeof msg) != LLMP_OK || spec.help ||
			   llmp_spec_check(&spec, msg, sizeof msg) != LLMP_OK))
		return;
	for (int at = 0; at < 2; at++) {
		struct plugin_model_request rq = { .model = model,
						   .model_source = "--llm-model",
						   .gpu = gpu,
						   .gpu_source = "LLMP_GPU",
						   .choose_layout = automatic,
						   .spec = automatic ? NULL : &spec,
						   .world = at ? world : 0,
						   .guard_override = override };
		struct plugin_model_answer *a = malloc(sizeof *a);
		CHECK(a != NULL);
		msg[0] = '\0';
		int rc = plugin_model_decide(&site, &rq, a, msg, sizeof msg);
		CHECK(rc == 0 || rc == -1);
		CHECK(rc == 0 || msg[0]);
		if (rc == 0 && a->decided) {
			CHECK(!a->megatron_cut && plugin_model_args_valid(a->megatron));
			if (a->guard[0] && strcmp(a->guard, PLUGIN_GUARD_OFF) != 0)
				CHECK(strncmp(a->warning, "warning: ", 9) == 0);
			if (a->guard[0] && strcmp(a->guard, PLUGIN_GUARD_DOUBTFUL) != 0)
				CHECK(a->peaks[0] == '\0');
			if (!strcmp(a->guard, PLUGIN_GUARD_OVERRIDDEN))
				CHECK(override && policy == MEM_GUARD_REFUSE);
			if (!strcmp(a->guard, PLUGIN_GUARD_WARNED))
				CHECK(policy == MEM_GUARD_WARN);
			CHECK(!automatic || !a->guard[0]);
			if (automatic) {
				CHECK(llmp_spec_check(&a->layout, msg, sizeof msg) == LLMP_OK);
				/* ep divides the ranks of dp x cp x tp; it is not a factor of the world */
				const uint32_t *n = a->layout.size;
				CHECK((uint64_t)n[LLMP_DIM_TP] * n[LLMP_DIM_CP] * n[LLMP_DIM_DP] *
					      n[LLMP_DIM_PP] ==
				      world);
			}
		}
		free(a);
	}
}

static void check_plugin(const char *model, const char *gpu, uint32_t world, const char *layout)
{
	check_plugin_under(model, gpu, world, layout, MEM_GUARD_REFUSE, 0, false);  /* the estimate exact */
	check_plugin_under(model, gpu, world, layout, MEM_GUARD_REFUSE, -1, false); /* the measured bands */
	check_plugin_under(model, gpu, world, layout, MEM_GUARD_REFUSE, 0.5, true);
	check_plugin_under(model, gpu, world, layout, MEM_GUARD_WARN, -1, false);
	check_plugin_under(model, gpu, world, layout, MEM_GUARD_OFF, -1, false);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char msg[LLMP_MSG_MAX], model_text[1200];
	if (size > 4096)
		return 0;
	const uint8_t *rest = data;
	size_t rest_n = size;
	const char *file = NULL;
	if (size && data[0] == '{') {
		const uint8_t *nul = memchr(data, '\0', size);
		size_t n = nul ? (size_t)(nul - data) : size;
		file = config_path();
		if (!file || !write_config(file, data, n))
			return 0;
		rest = nul ? nul + 1 : data + size;
		rest_n = size - (size_t)(rest - data);
	}
	char *text = malloc(rest_n + 1);
	CHECK(text != NULL);
	memcpy(text, rest, rest_n);
	text[rest_n] = '\0';
	char *p = text, *end = text + strlen(text);
	const char *model = next_line(&p, end), *gpu = next_line(&p, end), *job = next_line(&p, end);
	model = model ? model : "";
	if (!file && (strchr(model, '/') || strstr(model, ".json")))
		goto out;
	if (file)
		snprintf(model_text, sizeof model_text, "%s%s%s", file, *model ? "," : "", model);
	else
		snprintf(model_text, sizeof model_text, "%s", model);

	struct model_desc m;
	struct gpu_desc g;
	if (model_desc_parse(model_text, &m, msg, sizeof msg) != LLMP_OK)
		goto out;
	CHECK(m.layers >= 1 && m.hidden >= 1 && m.seq >= 1 && m.heads >= 1 && m.kv_heads >= 1);
	CHECK(isfinite(model_desc_params(&m)) && model_desc_params(&m) > 0);
	if (!gpu || gpu_desc_parse(gpu, &g, msg, sizeof msg) != LLMP_OK)
		CHECK(gpu_desc_parse("h100", &g, msg, sizeof msg) == LLMP_OK);

	char *after = NULL;
	unsigned long world = job ? strtoul(job, &after, 10) : 0;
	if (!world || world > WORLD_MAX)
		goto out;
	while (*after == ' ')
		after++;
	if (!strcmp(after, "auto"))
		check_auto(&m, &g, (uint32_t)world);
	else
		check_written(&m, &g, (uint32_t)world, after);
	check_plugin(model_text, gpu && *gpu ? gpu : NULL, (uint32_t)world, after);
out:
	free(text);
	return 0;
}
