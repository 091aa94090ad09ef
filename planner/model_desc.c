/* SPDX-License-Identifier: BSD-3-Clause */
/* model_desc.c - models and GPUs as a user describes them (model_desc.h). */
#define _POSIX_C_SOURCE 200809L
#include "model_desc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fail.h"
#include "common/json_read.h"
#include "common/open_regular.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* ------------------------------------------------------------- presets */

/*
 * Each row cites where its numbers come from. gbs and seq are the training
 * run's where the source gives them; override them with keys. dropout: the
 * Llama, Mixtral and DeepSeek-V3 config.json files say attention_dropout 0.0
 * and their architectures have no other; Nemotron-4 340B's report (section
 * 2.1) says a dropout rate of zero; the GPT rows ran Megatron's default 0.1.
 */
static const struct model_desc presets[] = {
	/* Meta-Llama-3-8B config.json (huggingface.co/meta-llama); gbs 512 x 8192 as NeMo's llama3_8b recipe. */
	{ .name = "llama3-8b",
	  .layers = 32,
	  .hidden = 4096,
	  .ffn = 14336,
	  .heads = 32,
	  .kv_heads = 8,
	  .vocab = 128256,
	  .seq = 8192,
	  .gbs = 512,
	  .mbs = 1,
	  .gated = true,
	  .dropout = false },
	/* Meta-Llama-3-70B config.json; gbs 512 as NeMo's llama3_70b recipe. */
	{ .name = "llama3-70b",
	  .layers = 80,
	  .hidden = 8192,
	  .ffn = 28672,
	  .heads = 64,
	  .kv_heads = 8,
	  .vocab = 128256,
	  .seq = 8192,
	  .gbs = 512,
	  .mbs = 1,
	  .gated = true,
	  .dropout = false },
	/* Llama 3 paper (arXiv 2407.21783) Table 3 and Meta-Llama-3.1-405B config.json; Table 4: 16M tokens = 2048 x 8192. */
	{ .name = "llama3-405b",
	  .layers = 126,
	  .hidden = 16384,
	  .ffn = 53248,
	  .heads = 128,
	  .kv_heads = 8,
	  .vocab = 128256,
	  .seq = 8192,
	  .gbs = 2048,
	  .mbs = 1,
	  .gated = true,
	  .dropout = false },
	/* Llama 2 paper (arXiv 2307.09288) and Llama-2-7b config.json; 4M tokens = 1024 x 4096. */
	{ .name = "llama2-7b",
	  .layers = 32,
	  .hidden = 4096,
	  .ffn = 11008,
	  .heads = 32,
	  .kv_heads = 32,
	  .vocab = 32000,
	  .seq = 4096,
	  .gbs = 1024,
	  .mbs = 1,
	  .gated = true,
	  .dropout = false },
	/* GPT-3 paper (arXiv 2005.14165) Table 2.1; Narayanan et al. 2021 (arXiv 2104.04473) Table 1: batch 1536, vocab 51200. */
	{ .name = "gpt3-175b",
	  .layers = 96,
	  .hidden = 12288,
	  .ffn = 49152,
	  .heads = 96,
	  .kv_heads = 96,
	  .vocab = 51200,
	  .seq = 2048,
	  .gbs = 1536,
	  .mbs = 1,
	  .tied = true,
	  .dropout = true },
	/* Korthikanti et al. 2022 (arXiv 2205.05198) Table 3: 22B, 530B (MT-NLG) and 1T, GPT-style. */
	{ .name = "gpt-22b",
	  .layers = 48,
	  .hidden = 6144,
	  .ffn = 24576,
	  .heads = 64,
	  .kv_heads = 64,
	  .vocab = 51200,
	  .seq = 2048,
	  .gbs = 4,
	  .mbs = 1,
	  .tied = true,
	  .dropout = true },
	{ .name = "mt-nlg-530b",
	  .layers = 105,
	  .hidden = 20480,
	  .ffn = 81920,
	  .heads = 128,
	  .kv_heads = 128,
	  .vocab = 51200,
	  .seq = 2048,
	  .gbs = 280,
	  .mbs = 1,
	  .tied = true,
	  .dropout = true },
	{ .name = "gpt-1t",
	  .layers = 128,
	  .hidden = 25600,
	  .ffn = 102400,
	  .heads = 160,
	  .kv_heads = 160,
	  .vocab = 51200,
	  .seq = 2048,
	  .gbs = 512,
	  .mbs = 1,
	  .tied = true,
	  .dropout = true },
	/* Nemotron-4 340B technical report (arXiv 2406.11704) Table 1 and section 2.2: squared ReLU, untied, gbs 2304. */
	{ .name = "nemotron4-340b",
	  .layers = 96,
	  .hidden = 18432,
	  .ffn = 73728,
	  .heads = 96,
	  .kv_heads = 8,
	  .vocab = 256000,
	  .seq = 4096,
	  .gbs = 2304,
	  .mbs = 1,
	  .dropout = false },
	/* Mixtral-8x7B-v0.1 config.json (mistralai); seq 4096 and gbs 256 as NeMo's mixtral_8x7b recipe. */
	{ .name = "mixtral-8x7b",
	  .layers = 32,
	  .hidden = 4096,
	  .ffn = 14336,
	  .heads = 32,
	  .kv_heads = 8,
	  .vocab = 32000,
	  .seq = 4096,
	  .experts = 8,
	  .topk = 2,
	  .moe_ffn = 14336,
	  .gbs = 256,
	  .mbs = 1,
	  .gated = true,
	  .dropout = false },
	/*
	 * DeepSeek-V3 technical report (arXiv 2412.19437) section 4.2 and its config.json: 61 layers,
	 * the first 3 dense, 256 routed experts of 2048 + 1 shared, top 8, batch 15360 x 4096. Its
	 * multi-head latent attention is counted as 128 full heads (4h^2 = 205M parameters a layer
	 * against MLA's 187M), its multi-token-prediction module not at all.
	 */
	{ .name = "deepseek-v3",
	  .layers = 61,
	  .hidden = 7168,
	  .ffn = 18432,
	  .heads = 128,
	  .kv_heads = 128,
	  .vocab = 129280,
	  .seq = 4096,
	  .experts = 256,
	  .topk = 8,
	  .moe_ffn = 2048,
	  .shared_ffn = 2048,
	  .dense_layers = 3,
	  .gbs = 15360,
	  .mbs = 1,
	  .gated = true,
	  .dropout = false },
};

#define NPRESETS (sizeof presets / sizeof presets[0])

const char *model_desc_preset_names(void)
{
	return "llama3-8b, llama3-70b, llama3-405b, llama2-7b, gpt3-175b, gpt-22b, mt-nlg-530b, gpt-1t, "
	       "nemotron4-340b, mixtral-8x7b, deepseek-v3";
}

const char *model_engine_name(enum model_engine e)
{
	return e == MODEL_ENGINE_DEEPSPEED ? "deepspeed" : e == MODEL_ENGINE_TORCH ? "torch" : "megatron";
}

double model_desc_params(const struct model_desc *m)
{
	double h = m->hidden, kv = m->heads ? h * m->kv_heads / m->heads : h;
	double mats = m->gated ? 3 : 2;
	double attention = 2 * h * h + 2 * h * kv + 2 * h;
	double dense = mats * h * m->ffn;
	double moe = m->experts * (mats * h * m->moe_ffn + h) + mats * h * m->shared_ffn;
	double moe_layers = m->experts ? m->layers - m->dense_layers : 0;
	return m->layers * attention + (m->layers - moe_layers) * dense + moe_layers * moe +
	       m->vocab * h * (m->tied ? 1 : 2);
}

/* --------------------------------------------------------------- keys */

struct key {
	const char *name;
	size_t offset;
	/* A count a layout holds in an unsigned or the chooser loops over: at most
	 * MODEL_COUNT_MAX, so that no conversion overflows and no loop runs for hours. */
	bool counted;
};

static const struct key model_keys[] = {
	{ "layers", offsetof(struct model_desc, layers), true },
	{ "hidden", offsetof(struct model_desc, hidden), false },
	{ "ffn", offsetof(struct model_desc, ffn), false },
	{ "heads", offsetof(struct model_desc, heads), false },
	{ "kv-heads", offsetof(struct model_desc, kv_heads), false },
	{ "vocab", offsetof(struct model_desc, vocab), false },
	{ "seq", offsetof(struct model_desc, seq), false },
	{ "experts", offsetof(struct model_desc, experts), true },
	{ "topk", offsetof(struct model_desc, topk), false },
	{ "moe-ffn", offsetof(struct model_desc, moe_ffn), false },
	{ "shared-ffn", offsetof(struct model_desc, shared_ffn), false },
	{ "dense-layers", offsetof(struct model_desc, dense_layers), false },
	{ "gbs", offsetof(struct model_desc, gbs), false },
	{ "mbs", offsetof(struct model_desc, mbs), true },
};
#define NMODEL_KEYS (sizeof model_keys / sizeof model_keys[0])
#define SEEN_ZERO (1u << NMODEL_KEYS) /* distopt= or zero= given: one setting, said once */

/* A whole number in 0..2^40 (zero only where allow_zero). */
static bool parse_count(const char *v, bool allow_zero, double *out)
{
	char *end = NULL;
	if (!*v || *v == '-' || *v == '+' || *v == ' ')
		return false;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || *end || n > (1ULL << 40) || (n == 0 && !allow_zero))
		return false;
	*out = (double)n;
	return true;
}

static bool parse_bool(const char *v, bool *out)
{
	if (strcmp(v, "1") && strcmp(v, "0"))
		return false;
	*out = *v == '1';
	return true;
}

/* One key=value item of --model. */
static llmp_status model_item(char *item, struct model_desc *m, unsigned *seen, char *msg, size_t len)
{
	char shown[LLMP_SHOW_MAX];
	char *eq = strchr(item, '=');
	if (!eq)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: '%s' is not key=value",
				 llmp_show(shown, item, strlen(item)));
	*eq = '\0';
	const char *v = eq + 1;
	for (size_t k = 0; k < NMODEL_KEYS; k++) {
		if (strcmp(item, model_keys[k].name) != 0)
			continue;
		if (*seen & (1u << k))
			return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: %s given twice", item);
		*seen |= 1u << k;
		bool zero_ok = !strcmp(item, "experts") || !strcmp(item, "shared-ffn") ||
			       !strcmp(item, "dense-layers");
		if (!parse_count(v, zero_ok, (double *)((char *)m + model_keys[k].offset)))
			return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: %s='%s' is not a positive integer",
					 model_keys[k].name, llmp_show(shown, v, strlen(v)));
		return LLMP_OK;
	}
	bool ok = true;
	if (!strcmp(item, "mlp")) {
		ok = !strcmp(v, "gelu") || !strcmp(v, "swiglu");
		m->gated = !strcmp(v, "swiglu");
	} else if (!strcmp(item, "tied")) {
		ok = parse_bool(v, &m->tied);
	} else if (!strcmp(item, "distopt") || !strcmp(item, "zero")) {
		/* one setting, two spellings: distopt=1 is zero=1 */
		if (*seen & SEEN_ZERO)
			return llmp_fail(
				LLMP_ERR_ARG, msg, len,
				"--model: distopt= and zero= set one thing (distopt=1 is zero=1): give "
				"it once");
		*seen |= SEEN_ZERO;
		bool on = false;
		if (!strcmp(item, "distopt"))
			ok = parse_bool(v, &on), m->zero = on;
		else if (!strcmp(v, "auto"))
			m->zero = MODEL_ZERO_AUTO;
		else
			ok = v[0] >= '0' && v[0] <= '3' && !v[1], m->zero = (unsigned)(v[0] - '0');
	} else if (!strcmp(item, "sp")) {
		ok = parse_bool(v, &m->sp);
	} else if (!strcmp(item, "flash")) {
		ok = parse_bool(v, &m->flash);
	} else if (!strcmp(item, "fp8")) {
		ok = parse_bool(v, &m->fp8);
	} else if (!strcmp(item, "dropout")) {
		ok = parse_bool(v, &m->dropout);
	} else if (!strcmp(item, "overlap-grad")) {
		ok = parse_bool(v, &m->overlap_grad);
	} else if (!strcmp(item, "overlap-param")) {
		ok = parse_bool(v, &m->overlap_param);
	} else if (!strcmp(item, "engine")) {
		ok = false;
		for (enum model_engine e = MODEL_ENGINE_MEGATRON; e <= MODEL_ENGINE_TORCH && !ok; e++)
			if (!strcmp(v, model_engine_name(e)))
				m->engine = e, ok = true;
	} else if (!strcmp(item, "overhead")) {
		char *end = NULL;
		m->overhead = strtod(v, &end);
		ok = *v >= '0' && *v <= '9' && end && !*end && m->overhead >= 0 && m->overhead <= 1;
		m->overhead_given = true;
	} else if (!strcmp(item, "grad")) {
		/* 6: bf16 gradients and an fp32 accumulation copy (DeepSpeed's 2022 BF16 optimizer) */
		ok = !strcmp(v, "2") || !strcmp(v, "4") || !strcmp(v, "6");
		m->grad_bytes = *v - '0';
	} else if (!strcmp(item, "recompute")) {
		static const char *const names[] = { "auto", "none", "selective", "full" };
		ok = false;
		for (int r = 0; r < 4; r++)
			if (!strcmp(v, names[r]))
				m->recompute = (enum model_recompute)r, ok = true;
	} else if (!strcmp(item, "recompute-moe-act")) {
		ok = parse_bool(v, &m->recompute_moe_act);
	} else if (!strcmp(item, "recompute-layers")) {
		double n = 0;
		ok = parse_count(v, false, &n) && n <= 1e6;
		m->recompute_layers = (unsigned)n;
	} else if (!strcmp(item, "offload-layers")) {
		double n = 0;
		ok = parse_count(v, false, &n) && n <= 1e6;
		m->offload_layers = (unsigned)n;
	} else {
		return llmp_fail(
			LLMP_ERR_ARG, msg, len,
			"--model: unknown key '%s' (layers, hidden, ffn, heads, kv-heads, vocab, seq, "
			"experts, topk, moe-ffn, shared-ffn, dense-layers, gbs, mbs, mlp, tied, "
			"distopt, zero, sp, flash, fp8, dropout, overlap-grad, overlap-param, engine, grad, overhead, "
			"recompute, "
			"recompute-layers, recompute-moe-act, offload-layers; or a preset: %s)",
			llmp_show(shown, item, strlen(item)), model_desc_preset_names());
	}
	if (!ok)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: %s='%s' is not one of %s", item,
				 llmp_show(shown, v, strlen(v)),
				 !strcmp(item, "mlp")         ? "gelu, swiglu"
				 : !strcmp(item, "recompute") ? "auto, none, selective, full"
				 : !strcmp(item, "grad")      ? "2, 4, 6"
				 : !strcmp(item, "zero")      ? "0, 1, 2, 3, auto"
				 : !strcmp(item, "overhead")  ? "a number from 0 to 1"
				 : !strcmp(item, "recompute-layers") || !strcmp(item, "offload-layers")
					 ? "a whole number of layers, 1 or more"
				 : !strcmp(item, "engine") ? "megatron, deepspeed, torch"
							   : "0, 1");
	return LLMP_OK;
}

/* ------------------------------------------------------- config.json */

/* A positive whole number member of a Hugging Face config, or 0 when absent. */
static llmp_status hf_number(const struct json_value *root, const char *key, const char *path, double *out,
			     char *msg, size_t len)
{
	const struct json_value *v = json_get(root, key);
	char shown[LLMP_SHOW_MAX];
	if (!v || v->kind == JSON_NULL)
		return LLMP_OK;
	if (v->kind != JSON_NUMBER || !v->integer || v->int64 < 0 || v->int64 > (1LL << 40))
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model %s: line %u: %s is not a whole number",
				 llmp_show(shown, path, strlen(path)), v->line, key);
	*out = (double)v->int64;
	return LLMP_OK;
}

static llmp_status read_hf_config(const char *path, struct model_desc *m, char *msg, size_t len)
{
	char shown[LLMP_SHOW_MAX];
	const char *p = llmp_show(shown, path, strlen(path));
	struct stat sb;
	int fd = llmp_open_regular(path, &sb);
	if (fd == LLMP_NOT_REGULAR)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model %s: not a regular file", p);
	if (fd < 0)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model %s: %s", p, strerror(errno));
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		close(fd);
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "--model %s: %s", p, strerror(errno));
	}
	size_t cap = 1 << 16, n = 0;
	char *text = malloc(cap);
	while (text) {
		n += fread(text + n, 1, cap - n, f);
		if (n < cap || cap >= (64u << 20))
			break;
		char *bigger = realloc(text, cap * 2);
		if (!bigger) {
			free(text);
			text = NULL;
		}
		text = bigger, cap *= 2;
	}
	bool err = ferror(f);
	fclose(f);
	if (!text)
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "--model %s: out of memory", p);
	if (err || n == cap) {
		free(text);
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model %s: %s", p,
				 err ? "cannot be read" : "larger than 64 MiB");
	}
	struct json_value root;
	char why[LLMP_MSG_MAX];
	llmp_status st = json_parse(text, n, &root, why, sizeof why);
	free(text);
	if (st != LLMP_OK)
		return llmp_fail(st, msg, len, "--model %s: %s", p, why);
	if (root.kind != JSON_OBJECT) {
		json_free(&root);
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model %s: not a JSON object", p);
	}
	/* Llama, Mistral, Mixtral, Qwen and DeepSeek names first, GPT-2's after. */
	static const struct {
		const char *key;
		size_t offset;
	} names[] = {
		{ "num_hidden_layers", offsetof(struct model_desc, layers) },
		{ "n_layer", offsetof(struct model_desc, layers) },
		{ "hidden_size", offsetof(struct model_desc, hidden) },
		{ "n_embd", offsetof(struct model_desc, hidden) },
		{ "intermediate_size", offsetof(struct model_desc, ffn) },
		{ "n_inner", offsetof(struct model_desc, ffn) },
		{ "num_attention_heads", offsetof(struct model_desc, heads) },
		{ "n_head", offsetof(struct model_desc, heads) },
		{ "num_key_value_heads", offsetof(struct model_desc, kv_heads) },
		{ "vocab_size", offsetof(struct model_desc, vocab) },
		{ "max_position_embeddings", offsetof(struct model_desc, seq) },
		{ "n_positions", offsetof(struct model_desc, seq) },
		{ "num_local_experts", offsetof(struct model_desc, experts) },
		{ "n_routed_experts", offsetof(struct model_desc, experts) },
		{ "num_experts", offsetof(struct model_desc, experts) },
		{ "num_experts_per_tok", offsetof(struct model_desc, topk) },
		{ "moe_intermediate_size", offsetof(struct model_desc, moe_ffn) },
		{ "first_k_dense_replace", offsetof(struct model_desc, dense_layers) },
	};
	double shared = 0;
	for (size_t i = 0; st == LLMP_OK && i < sizeof names / sizeof names[0]; i++) {
		double *dst = (double *)((char *)m + names[i].offset);
		if (*dst == 0)
			st = hf_number(&root, names[i].key, path, dst, msg, len);
	}
	if (st == LLMP_OK)
		st = hf_number(&root, "n_shared_experts", path, &shared, msg, len);
	const struct json_value *act = json_get(&root, "hidden_act");
	if (!act)
		act = json_get(&root, "activation_function");
	m->gated = act && act->kind == JSON_STRING &&
		   (!strcmp(act->string, "silu") || !strcmp(act->string, "swiglu"));
	/* Dropout: any probability above 0 among the names Llama-style and GPT-2-style
	 * configs give it; none given keeps Megatron's default (on). */
	static const char *const drops[] = { "attention_dropout", "hidden_dropout", "resid_pdrop",
					     "attn_pdrop", "embd_pdrop" };
	bool said = false, drop = false;
	for (size_t i = 0; i < sizeof drops / sizeof drops[0]; i++) {
		const struct json_value *d = json_get(&root, drops[i]);
		if (d && d->kind == JSON_NUMBER)
			said = true, drop = drop || d->number > 0;
	}
	if (said)
		m->dropout = drop;
	const struct json_value *tie = json_get(&root, "tie_word_embeddings");
	/* Hugging Face's default is tied; Llama-style configs say false. */
	m->tied = !tie || (tie->kind == JSON_BOOL && tie->boolean);
	json_free(&root);
	if (st != LLMP_OK)
		return st;
	if (!m->layers || !m->hidden || !m->heads)
		return llmp_fail(LLMP_ERR_ARG, msg, len,
				 "--model %s: no %s (num_hidden_layers, hidden_size, num_attention_heads)", p,
				 !m->layers   ? "num_hidden_layers"
				 : !m->hidden ? "hidden_size"
					      : "num_attention_heads");
	if (m->moe_ffn && shared)
		m->shared_ffn = shared * m->moe_ffn;
	/* Training rarely uses the longest context: 8192 unless seq= says otherwise. */
	if (!m->seq || m->seq > 8192)
		m->seq = 8192;
	const char *base = strrchr(path, '/');
	snprintf(m->name, sizeof m->name, "%.*s", (int)sizeof m->name - 1, base && base[1] ? base + 1 : path);
	return LLMP_OK;
}

/* ---------------------------------------------------------------- parse */

static llmp_status model_check(struct model_desc *m, char *msg, size_t len)
{
	if (!m->layers || !m->hidden || !m->seq)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: %s= is missing (or give a preset: %s)",
				 !m->layers   ? "layers"
				 : !m->hidden ? "hidden"
					      : "seq",
				 model_desc_preset_names());
	if (!m->heads)
		m->heads = m->hidden >= 128 ? (double)((unsigned long long)m->hidden / 128) : 1;
	if (!m->kv_heads)
		m->kv_heads = m->heads;
	if (!m->ffn)
		m->ffn = 4 * m->hidden;
	if (!m->vocab)
		m->vocab = 32000;
	if (!m->mbs)
		m->mbs = 1;
	for (size_t k = 0; k < NMODEL_KEYS; k++) {
		double v = *(const double *)((const char *)m + model_keys[k].offset);
		if (model_keys[k].counted && v > MODEL_COUNT_MAX)
			return llmp_fail(LLMP_ERR_ARG, msg, len,
					 "--model: %s=%.0f is more than llmp models (%u)", model_keys[k].name,
					 v, MODEL_COUNT_MAX);
	}
	if ((unsigned long long)m->hidden % (unsigned long long)m->heads)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: heads=%.0f does not divide hidden=%.0f",
				 m->heads, m->hidden);
	if (m->kv_heads > m->heads)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: kv-heads=%.0f is more than heads=%.0f",
				 m->kv_heads, m->heads);
	if ((unsigned long long)m->heads % (unsigned long long)m->kv_heads)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: kv-heads=%.0f does not divide heads=%.0f",
				 m->kv_heads, m->heads);
	if (m->topk && !m->experts)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: topk= needs experts=");
	if (m->recompute_moe_act &&
	    (!m->experts || m->recompute != MODEL_RECOMPUTE_SELECTIVE || m->engine != MODEL_ENGINE_MEGATRON))
		return llmp_fail(LLMP_ERR_ARG, msg, len,
				 "--model: recompute-moe-act=1 recomputes the routed experts' activation "
				 "(Megatron-Core's --recompute-modules moe_act): it needs experts=, "
				 "recompute=selective and engine=megatron");
	if (m->recompute_layers && m->recompute != MODEL_RECOMPUTE_FULL)
		return llmp_fail(LLMP_ERR_ARG, msg, len,
				 "--model: recompute-layers=%u recomputes that many layers of each chunk in "
				 "full: it needs recompute=full",
				 m->recompute_layers);
	/* Megatron-Core's TransformerConfig refuses offloading beside recomputation, and
	 * offloading every layer (megatron/core/transformer/transformer_config.py). */
	if (m->offload_layers && (m->recompute != MODEL_RECOMPUTE_NONE || m->engine != MODEL_ENGINE_MEGATRON))
		return llmp_fail(LLMP_ERR_ARG, msg, len,
				 "--model: offload-layers=%u is Megatron-Core's --cpu-offloading-num-layers, "
				 "which refuses activation recomputation: it needs recompute=none and "
				 "engine=megatron",
				 m->offload_layers);
	if (m->offload_layers && m->offload_layers >= m->layers)
		return llmp_fail(LLMP_ERR_ARG, msg, len,
				 "--model: offload-layers=%u: Megatron-Core offloads fewer layers than the "
				 "model's %.0f",
				 m->offload_layers, m->layers);
	if (m->experts) {
		if (!m->topk)
			m->topk = 2;
		if (!m->moe_ffn)
			m->moe_ffn = m->ffn;
		if (m->topk > m->experts)
			return llmp_fail(LLMP_ERR_ARG, msg, len,
					 "--model: topk=%.0f is more than experts=%.0f", m->topk, m->experts);
		if (m->dense_layers >= m->layers)
			return llmp_fail(LLMP_ERR_ARG, msg, len,
					 "--model: dense-layers=%.0f leaves no MoE layer of %.0f",
					 m->dense_layers, m->layers);
	} else if (m->moe_ffn || m->shared_ffn || m->dense_layers) {
		return llmp_fail(LLMP_ERR_ARG, msg, len,
				 "--model: moe-ffn=, shared-ffn= and dense-layers= need experts=");
	}
	if (m->gbs && m->gbs < m->mbs)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: gbs=%.0f is less than mbs=%.0f", m->gbs,
				 m->mbs);
	if (m->zero >= 2 && m->zero != MODEL_ZERO_AUTO && m->grad_bytes == 6)
		return llmp_fail(
			LLMP_ERR_ARG, msg, len,
			"--model: grad=6 (16-bit gradients and an fp32 accumulation copy, DeepSpeed's "
			"BF16 optimizer) with zero=%u: sharded gradients keep one buffer, grad=2 or 4",
			m->zero);
	return LLMP_OK;
}

/* What every description starts from: Megatron-Core's defaults (doc/step-model.md). */
static void training_defaults(struct model_desc *m)
{
	m->sp = m->flash = m->dropout = m->overlap_grad = m->overlap_param = true, m->zero = 1,
	m->engine = MODEL_ENGINE_MEGATRON;
	m->grad_bytes = 4, m->overhead = MODEL_OVERHEAD_DEFAULT;
}

llmp_status model_desc_parse(const char *text, struct model_desc *m, char *msg, size_t len)
{
	char buf[1024], shown[LLMP_SHOW_MAX];
	memset(m, 0, sizeof *m);
	training_defaults(m);
	if (!text || !*text)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: empty");
	if (strlen(text) >= sizeof buf)
		return llmp_fail(LLMP_ERR_ARG, msg, len, "--model: longer than %zu characters",
				 sizeof buf - 1);
	snprintf(buf, sizeof buf, "%s", text);

	/* The first item may name a preset or a file; keys after it replace its values. */
	char *first = buf, *rest = strchr(buf, ',');
	if (rest)
		*rest++ = '\0';
	llmp_status st = LLMP_OK;
	if (!strchr(first, '=')) {
		size_t i = 0;
		while (i < NPRESETS && strcmp(presets[i].name, first) != 0)
			i++;
		if (i < NPRESETS) {
			*m = presets[i];
			training_defaults(m);
			m->dropout = presets[i].dropout; /* the architecture's, not a training default */
		} else if (strchr(first, '/') || strstr(first, ".json")) {
			/* over the defaults set above, which the file's dropout may replace */
			st = read_hf_config(first, m, msg, len);
			m->mbs = 1;
		} else {
			return llmp_fail(
				LLMP_ERR_ARG, msg, len,
				"--model: '%s' is neither a preset (%s) nor a config.json path nor key=value",
				llmp_show(shown, first, strlen(first)), model_desc_preset_names());
		}
	} else if (rest) {
		rest[-1] = ',';
		rest = buf;
	} else {
		rest = buf;
	}
	/* Keys override a preset's or a file's values: forget which ones it set. */
	unsigned seen = 0;
	char *save = NULL;
	for (char *item = rest ? strtok_r(rest, ",", &save) : NULL; st == LLMP_OK && item;
	     item = strtok_r(NULL, ",", &save))
		st = model_item(item, m, &seen, msg, len);
	if (st == LLMP_OK)
		st = model_check(m, msg, len);
	if (st == LLMP_OK && !m->name[0])
		snprintf(m->name, sizeof m->name, "custom");
	return st;
}
