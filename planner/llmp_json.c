/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * llmp_json.c - write a plan as the JSON layout document.
 *
 * The whole table of a large job is millions of numbers, so numbers are
 * formatted by hand into a local buffer and handed to stdio in big blocks;
 * printf per number would dominate the cost.
 */
#include <llmp/llmp_json.h>

#include <stdlib.h>
#include <string.h>

/* A small output buffer in front of a FILE. */
struct sink {
	FILE *out;
	size_t len;
	char buf[1 << 16];
};

static void flush(struct sink *s)
{
	if (s->len)
		fwrite(s->buf, 1, s->len, s->out);
	s->len = 0;
}

static void put(struct sink *s, const char *text)
{
	size_t n = strlen(text);

	if (s->len + n > sizeof s->buf)
		flush(s);
	if (n > sizeof s->buf) {
		fwrite(text, 1, n, s->out);
		return;
	}
	memcpy(s->buf + s->len, text, n);
	s->len += n;
}

static void put_u32(struct sink *s, uint32_t v)
{
	char digits[10];
	int n = 0;

	if (s->len + sizeof digits > sizeof s->buf)
		flush(s);
	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		s->buf[s->len++] = digits[--n];
}

/* JSON strings here are names and layout text, which are plain ASCII. */
static void put_key(struct sink *s, const char *key)
{
	put(s, "\"");
	put(s, key);
	put(s, "\":");
}

static void put_list(struct sink *s, const uint32_t *v, uint32_t n)
{
	put(s, "[");
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			put(s, ",");
		put_u32(s, v[i]);
	}
	put(s, "]");
}

static void put_sizes(struct sink *s, const llmp_plan *plan)
{
	/* The documented key order: the dense dimensions, then the expert ones. */
	static const enum llmp_axis shown[] = {
		LLMP_AXIS_TP, LLMP_AXIS_PP,  LLMP_AXIS_CP,  LLMP_AXIS_DP,
		LLMP_AXIS_EP, LLMP_AXIS_ETP, LLMP_AXIS_EDP,
	};

	put(s, "{");
	for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
		put_key(s, llmp_axis_name(shown[i]));
		put_u32(s, llmp_plan_size(plan, shown[i]));
		put(s, ",");
	}
	put_key(s, "vpp");
	put_u32(s, llmp_plan_vpp(plan) ? llmp_plan_vpp(plan) : 1);
	put(s, "}");
}

static void put_warnings(struct sink *s, const llmp_plan *plan)
{
	put(s, "[");
	for (size_t i = 0; i < llmp_plan_warning_count(plan); i++) {
		const char *w = llmp_plan_warning(plan, i);
		put(s, i ? ",\"" : "\"");
		/* Warnings are the planner's own text: no quotes or controls to escape. */
		put(s, w);
		put(s, "\"");
	}
	put(s, "]");
}

static llmp_status put_groups(struct sink *s, const llmp_plan *plan, uint32_t rank, uint32_t *members,
			      uint32_t cap)
{
	put(s, "{");
	for (int g = 0; g < LLMP_NGROUPS; g++) {
		uint32_t n;
		llmp_status st = LLMP_OK;

		put(s, g ? "," : "");
		put_key(s, llmp_group_name((enum llmp_group)g));
		put(s, "[");
		if (rank != LLMP_JSON_ALL_RANKS) {
			st = llmp_plan_group_of(plan, (enum llmp_group)g, rank, members, cap, &n, NULL);
			if (st == LLMP_OK && n)
				put_list(s, members, n);
		} else {
			uint32_t count = llmp_plan_group_count(plan, (enum llmp_group)g);
			for (uint32_t i = 0; i < count && st == LLMP_OK; i++) {
				st = llmp_plan_group(plan, (enum llmp_group)g, i, members, cap, &n);
				put(s, i ? "," : "");
				put_list(s, members, n);
			}
		}
		if (st != LLMP_OK)
			return st;
		put(s, "]");
	}
	put(s, "}");
	return LLMP_OK;
}

static uint32_t largest_group(const llmp_plan *plan)
{
	uint32_t most = 1;

	for (int g = 0; g < LLMP_NGROUPS; g++) {
		uint32_t size = llmp_plan_group_size(plan, (enum llmp_group)g);
		if (size > most)
			most = size;
	}
	return most;
}

llmp_status llmp_plan_write_json(const llmp_plan *plan, uint32_t rank, FILE *out)
{
	return llmp_plan_write_json_stages(plan, rank, NULL, out);
}

llmp_status llmp_plan_write_json_stages(const llmp_plan *plan, uint32_t rank, const uint32_t *stage_layers,
					FILE *out)
{
	if (!plan || !out)
		return LLMP_ERR_ARG;
	if (rank != LLMP_JSON_ALL_RANKS && rank >= llmp_plan_world(plan))
		return LLMP_ERR_RANGE;

	uint32_t cap = largest_group(plan);
	uint32_t *members = malloc(cap * sizeof *members);
	struct sink *s = malloc(sizeof *s);
	if (!members || !s) {
		free(members);
		free(s);
		return LLMP_ERR_NOMEM;
	}
	s->out = out;
	s->len = 0;

	char spec[LLMP_SPEC_MAX_LEN + 1];
	llmp_spec_format(llmp_plan_spec(plan), spec, sizeof spec);

	put(s, "{");
	put_key(s, "version");
	put_u32(s, LLMP_JSON_VERSION);
	put(s, ",");
	put_key(s, "world");
	put_u32(s, llmp_plan_world(plan));
	put(s, ",");
	put_key(s, "order");
	put(s, "\"");
	put(s, llmp_plan_order(plan));
	put(s, "\",");
	put_key(s, "spec");
	put(s, "\"");
	put(s, spec);
	put(s, "\",");
	put_key(s, "sizes");
	put_sizes(s, plan);
	put(s, ",");
	put_key(s, "warnings");
	put_warnings(s, plan);
	if (stage_layers) {
		put(s, ",");
		put_key(s, "stage_layers");
		put_list(s, stage_layers, llmp_plan_size(plan, LLMP_AXIS_PP));
	}
	if (rank != LLMP_JSON_ALL_RANKS) {
		uint32_t coords[LLMP_NAXES];
		llmp_plan_coords(plan, rank, coords);
		put(s, ",");
		put_key(s, "rank");
		put_u32(s, rank);
		put(s, ",");
		put_key(s, "coords");
		put(s, "{");
		for (int a = 0; a < LLMP_NAXES; a++) {
			put(s, a ? "," : "");
			put_key(s, llmp_axis_name((enum llmp_axis)a));
			put_u32(s, coords[a]);
		}
		put(s, "}");
	}
	put(s, ",");
	put_key(s, "groups");
	llmp_status st = put_groups(s, plan, rank, members, cap);
	put(s, "}\n");
	flush(s);
	free(members);
	free(s);
	if (st == LLMP_OK && (fflush(out) != 0 || ferror(out)))
		st = LLMP_ERR_IO;
	return st;
}
