/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_plan_megatron.c - the planner's process groups are Megatron-Core's.
 *
 * The promise of llm_parallel(8) and doc/layout-json.md: for the same sizes
 * and order, every group the planner gives is the group Megatron-Core's
 * RankGenerator builds, with the same number (its position in Megatron's
 * list), and the planner rejects the layouts Megatron rejects.
 *
 * The expected groups do not come from topology/: they come from a C
 * transcription of megatron/core/parallel_state.py (RankGenerator, get_mask,
 * generate_masked_orthogonal_rank_groups, default_embedding_ranks,
 * default_position_embedding_ranks and the checks of initialize_model_parallel)
 * in the first half of this file. That transcription is itself checked against
 * the W=16 worked example, whose tables were produced by running Megatron's
 * own RankGenerator.
 *
 * Megatron builds two generators over the same order:
 *   dense:  RankGenerator(tp=tp,  ep=1,  dp=dp,        pp=pp, cp=cp)
 *           groups tp pp cp dp dp-cp tp-cp tp-pp tp-dp tp-dp-cp
 *   expert: RankGenerator(tp=etp, ep=ep, dp=expert_dp, pp=pp, cp=1)
 *           groups ep, tp (expert-tp), dp (expert-dp), tp-ep, tp-ep-pp
 * and, from each dense pp group, an embedding group (first and last stage) and
 * a position-embedding group (first stage).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <llmp/llmp_plan.h>
#include <llmp/llmp_spec.h>
#include <llmp/llmp_status.h>

/* ===================================================================== */
/* Megatron-Core's RankGenerator, transcribed                             */
/* ===================================================================== */

#define REF_MAXDIMS 5
#define REF_DEFAULT_ORDER "tp-cp-ep-dp-pp" /* initialize_model_parallel's default */

/* A RankGenerator after __init__: the completed order and its sizes. */
struct ref_generator {
	unsigned ndims;
	char token[REF_MAXDIMS][3]; /* self.order.split("-") */
	uint64_t size[REF_MAXDIMS]; /* self.ordered_size */
	uint64_t world;             /* self.world_size */
};

/* What generate_masked_orthogonal_rank_groups derives from a mask. */
struct ref_masked {
	bool mask[REF_MAXDIMS];
	unsigned nmasked, nunmasked;
	uint64_t masked_shape[REF_MAXDIMS], masked_stride[REF_MAXDIMS];
	uint64_t unmasked_shape[REF_MAXDIMS], unmasked_stride[REF_MAXDIMS];
	uint64_t group_size, num_groups;
};

/* Split "a-b-c" into two-letter tokens; returns how many (0 if malformed). */
static unsigned split_tokens(const char *text, char token[][3], unsigned max)
{
	unsigned n = 0;

	for (const char *p = text;;) {
		const char *dash = strchr(p, '-');
		size_t len = dash ? (size_t)(dash - p) : strlen(p);

		if (len != 2 || n == max)
			return 0;
		token[n][0] = p[0];
		token[n][1] = p[1];
		token[n][2] = '\0';
		n++;
		if (!dash)
			return n;
		p = dash + 1;
	}
}

/* prefix_product(a): [1, a0, a0*a1, ...], n + 1 entries. */
static void prefix_product(const uint64_t *a, unsigned n, uint64_t *r)
{
	r[0] = 1;
	for (unsigned i = 0; i < n; i++)
		r[i + 1] = r[i] * a[i];
}

static uint64_t inner_product(const uint64_t *a, const uint64_t *b, unsigned n)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++)
		sum += a[i] * b[i];
	return sum;
}

/* decompose(index, shape): idx[i] = (index // stride[i]) % shape[i], stride the prefix product. */
static void decompose(uint64_t index, const uint64_t *shape, unsigned n, uint64_t *idx)
{
	uint64_t stride[REF_MAXDIMS + 1];

	prefix_product(shape, n, stride);
	for (unsigned i = 0; i < n; i++)
		idx[i] = (index / stride[i]) % shape[i];
}

/*
 * RankGenerator.__init__. A name missing from the order is appended, in the
 * key order of name_to_size (tp, pp, dp, ep, cp), if its size is 1; otherwise
 * Megatron raises RuntimeError, and so do we (false, with why).
 */
static bool ref_generator_init(struct ref_generator *g, uint64_t tp, uint64_t ep, uint64_t dp, uint64_t pp,
			       uint64_t cp, const char *order, char *why, size_t whylen)
{
	static const char *const name[] = { "tp", "pp", "dp", "ep", "cp" };
	const uint64_t size[] = { tp, pp, dp, ep, cp };
	char full[64];

	memset(g, 0, sizeof *g);
	assert_true(strlen(order) < 20);
	strcpy(full, order);
	for (unsigned i = 0; i < 5; i++) {
		if (strstr(full, name[i]) != NULL) /* Python's `name in order` */
			continue;
		if (size[i] != 1) {
			snprintf(why, whylen,
				 "the size of (%s) is (%llu), but the order (%s) does not name it", name[i],
				 (unsigned long long)size[i], order);
			return false;
		}
		strcat(full, "-");
		strcat(full, name[i]);
	}
	g->ndims = split_tokens(full, g->token, REF_MAXDIMS);
	assert_int_equal(g->ndims, 5);
	for (unsigned d = 0; d < g->ndims; d++) {
		unsigned k = 0;

		while (k < 5 && strcmp(g->token[d], name[k]) != 0)
			k++;
		assert_true(k < 5);
		g->size[d] = size[k];
	}
	g->world = tp * dp * pp * cp * ep;
	return true;
}

/* RankGenerator.get_mask(order, token) and the set-up of generate_masked_orthogonal_rank_groups. */
static void ref_masked_init(const struct ref_generator *g, const char *token, struct ref_masked *m)
{
	char list[REF_MAXDIMS][3];
	unsigned n = split_tokens(token, list, REF_MAXDIMS);
	uint64_t global_stride[REF_MAXDIMS + 1];

	assert_true(n > 0);
	memset(m, 0, sizeof *m);
	for (unsigned t = 0; t < n; t++) {
		unsigned d = 0;

		while (d < g->ndims && strcmp(g->token[d], list[t]) != 0)
			d++;
		assert_true(d < g->ndims); /* ordered_token.index(t) */
		m->mask[d] = true;
	}
	prefix_product(g->size, g->ndims, global_stride);
	for (unsigned d = 0; d < g->ndims; d++) {
		if (m->mask[d]) {
			m->masked_shape[m->nmasked] = g->size[d];
			m->masked_stride[m->nmasked++] = global_stride[d];
		} else {
			m->unmasked_shape[m->nunmasked] = g->size[d];
			m->unmasked_stride[m->nunmasked++] = global_stride[d];
		}
	}
	m->group_size = 1;
	for (unsigned i = 0; i < m->nmasked; i++)
		m->group_size *= m->masked_shape[i];
	m->num_groups = g->world / m->group_size;
}

/* The body of the group_index loop: the members of group number group_index. */
static void ref_group(const struct ref_masked *m, uint64_t group_index, uint32_t *out)
{
	uint64_t group_idx[REF_MAXDIMS], rank_idx[REF_MAXDIMS];
	uint64_t base;

	decompose(group_index, m->unmasked_shape, m->nunmasked, group_idx);
	base = inner_product(group_idx, m->unmasked_stride, m->nunmasked);
	for (uint64_t r = 0; r < m->group_size; r++) {
		decompose(r, m->masked_shape, m->nmasked, rank_idx);
		out[r] = (uint32_t)(inner_product(rank_idx, m->masked_stride, m->nmasked) + base);
	}
}

/*
 * The group_index whose group holds rank, without enumerating the others:
 * the group's unmasked coordinates are the rank's, and group_index is what
 * decompose(group_index, unmasked_shape) inverts.
 */
static uint64_t ref_group_index_of(const struct ref_generator *g, const struct ref_masked *m, uint64_t rank)
{
	uint64_t coord[REF_MAXDIMS], index = 0, stride = 1;

	decompose(rank, g->size, g->ndims, coord);
	for (unsigned d = 0; d < g->ndims; d++) {
		if (m->mask[d])
			continue;
		index += coord[d] * stride;
		stride *= g->size[d];
	}
	return index;
}

/* All groups of one kind: count rows of size members. */
struct ref_table {
	uint32_t count, size;
	uint32_t *members;
};

/* RankGenerator.get_ranks(token). */
static void ref_table_build(struct ref_table *t, const struct ref_generator *g, const char *token)
{
	struct ref_masked m;

	ref_masked_init(g, token, &m);
	t->count = (uint32_t)m.num_groups;
	t->size = (uint32_t)m.group_size;
	t->members = malloc((size_t)t->count * t->size * sizeof *t->members);
	assert_non_null(t->members);
	for (uint32_t i = 0; i < t->count; i++)
		ref_group(&m, i, t->members + (size_t)i * t->size);
}

/* default_embedding_ranks / default_position_embedding_ranks of every pp group. */
static void ref_table_pipeline_ends(struct ref_table *t, const struct ref_table *pp, bool position)
{
	t->count = pp->count;
	t->size = (position || pp->size == 1) ? 1 : 2;
	t->members = malloc((size_t)t->count * t->size * sizeof *t->members);
	assert_non_null(t->members);
	for (uint32_t i = 0; i < pp->count; i++) {
		const uint32_t *ranks = pp->members + (size_t)i * pp->size;

		t->members[(size_t)i * t->size] = ranks[0];
		if (t->size == 2)
			t->members[(size_t)i * t->size + 1] = ranks[pp->size - 1];
	}
}

static bool ref_table_equal(const struct ref_table *a, const struct ref_table *b)
{
	return a->count == b->count && a->size == b->size &&
	       memcmp(a->members, b->members, (size_t)a->count * a->size * sizeof *a->members) == 0;
}

static void ref_table_free(struct ref_table *t)
{
	free(t->members);
	t->members = NULL;
}

/* ===================================================================== */
/* initialize_model_parallel: the layouts it accepts and the groups it builds */
/* ===================================================================== */

/* Where each planner group comes from in Megatron. */
enum source { FROM_DENSE, FROM_EXPERT, FROM_PP_ENDS };

static const struct kind {
	enum llmp_group group;
	const char *name; /* the planner's name for it */
	enum source source;
	const char *token; /* get_ranks(token) on that generator */
} kinds[LLMP_NGROUPS] = {
	{ LLMP_GROUP_TP, "tp", FROM_DENSE, "tp" },
	{ LLMP_GROUP_PP, "pp", FROM_DENSE, "pp" },
	{ LLMP_GROUP_CP, "cp", FROM_DENSE, "cp" },
	{ LLMP_GROUP_DP, "dp", FROM_DENSE, "dp" },
	{ LLMP_GROUP_EP, "ep", FROM_EXPERT, "ep" },
	{ LLMP_GROUP_DP_CP, "dp-cp", FROM_DENSE, "dp-cp" },
	{ LLMP_GROUP_TP_CP, "tp-cp", FROM_DENSE, "tp-cp" },
	{ LLMP_GROUP_TP_PP, "tp-pp", FROM_DENSE, "tp-pp" },
	{ LLMP_GROUP_TP_DP, "tp-dp", FROM_DENSE, "tp-dp" },
	{ LLMP_GROUP_TP_DP_CP, "tp-dp-cp", FROM_DENSE, "tp-dp-cp" },
	{ LLMP_GROUP_EXPERT_TP, "expert-tp", FROM_EXPERT, "tp" },
	{ LLMP_GROUP_EXPERT_DP, "expert-dp", FROM_EXPERT, "dp" },
	{ LLMP_GROUP_TP_EP, "tp-ep", FROM_EXPERT, "tp-ep" },
	{ LLMP_GROUP_TP_EP_PP, "tp-ep-pp", FROM_EXPERT, "tp-ep-pp" },
	{ LLMP_GROUP_EMBEDDING, "embedding", FROM_PP_ENDS, NULL },
	{ LLMP_GROUP_POSITION_EMBEDDING, "position-embedding", FROM_PP_ENDS, NULL },
};

/* The group whose position of a rank is its coordinate along an axis. */
static const enum llmp_group axis_group[LLMP_NAXES] = {
	[LLMP_AXIS_TP] = LLMP_GROUP_TP,         [LLMP_AXIS_CP] = LLMP_GROUP_CP,
	[LLMP_AXIS_EP] = LLMP_GROUP_EP,         [LLMP_AXIS_DP] = LLMP_GROUP_DP,
	[LLMP_AXIS_PP] = LLMP_GROUP_PP,         [LLMP_AXIS_ETP] = LLMP_GROUP_EXPERT_TP,
	[LLMP_AXIS_EDP] = LLMP_GROUP_EXPERT_DP,
};

static const char *const axis_label[LLMP_NAXES] = {
	"tp", "cp", "ep", "dp", "pp", "expert-tp", "expert-dp",
};

/* Why initialize_model_parallel stops, in the order it checks. */
enum verdict {
	ACCEPTED,
	REJECT_DENSE_DIVIDE,  /* world_size is not divisible by tp*pp*cp */
	REJECT_ORDER,         /* a size other than 1 the order does not name */
	REJECT_EXPERT_DIVIDE, /* world_size is not divisible by etp*ep*pp */
	REJECT_DP_MISMATCH,   /* order not pp-last, pp > 1 and expert_dp != dp */
	REJECT_PP_GROUPS,     /* dense and expert pp groups differ */
	NVERDICTS
};

static const char *const verdict_name[NVERDICTS] = {
	"accepted",
	"tp*pp*cp does not divide the world",
	"order lacks a dimension",
	"etp*ep*pp does not divide the world",
	"not pp-last and expert-dp != dp",
	"dense and expert pp groups differ",
};

/* A layout as a user writes it. */
struct layout {
	uint32_t world, tp, cp, pp, ep;
	uint32_t etp;      /* 0: not given, Megatron's default etp = tp */
	const char *order; /* NULL: not given, Megatron's default order */
	bool give_dp;      /* write dp=N instead of leaving dp auto */
	bool terse;        /* leave out the keys whose value is 1 */
};

/* What Megatron does with a layout. */
struct reference {
	enum verdict verdict;
	char why[256];
	uint64_t dp, etp, edp;
	struct ref_generator dense, expert;
	struct ref_table table[LLMP_NGROUPS]; /* when accepted and tables asked for */
};

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

static void reference_free(struct reference *r)
{
	for (unsigned g = 0; g < LLMP_NGROUPS; g++)
		ref_table_free(&r->table[g]);
}

/*
 * The checks of initialize_model_parallel, in its order, and (if tables) every
 * group it creates. Pipeline groups of both generators are compared in full,
 * as Megatron's assertion does.
 */
static void reference_init(struct reference *r, const struct layout *l, bool tables)
{
	const char *order = l->order ? l->order : REF_DEFAULT_ORDER;
	uint64_t model = (uint64_t)l->tp * l->pp * l->cp, etmp;
	struct ref_table dense_pp, expert_pp;

	memset(r, 0, sizeof *r);
	if (l->world % model != 0) {
		r->verdict = REJECT_DENSE_DIVIDE;
		snprintf(r->why, sizeof r->why, "world_size (%u) is not divisible by %llu", l->world,
			 (unsigned long long)model);
		return;
	}
	r->dp = l->world / model;
	if (!ref_generator_init(&r->dense, l->tp, 1, r->dp, l->pp, l->cp, order, r->why, sizeof r->why)) {
		r->verdict = REJECT_ORDER;
		return;
	}
	r->etp = l->etp ? l->etp : l->tp;
	etmp = r->etp * l->ep * l->pp;
	r->edp = l->world / etmp;
	if (l->world % etmp != 0) {
		r->verdict = REJECT_EXPERT_DIVIDE;
		snprintf(
			r->why, sizeof r->why,
			"world_size (%u) is not divisible by expert_tensor_model_pipeline_parallel size (%llu)",
			l->world, (unsigned long long)etmp);
		return;
	}
	if (!ref_generator_init(&r->expert, r->etp, l->ep, r->edp, l->pp, 1, order, r->why, sizeof r->why)) {
		r->verdict = REJECT_ORDER;
		return;
	}
	if (!(ends_with(order, "pp") || l->pp == 1 || r->edp == r->dp)) {
		r->verdict = REJECT_DP_MISMATCH;
		snprintf(r->why, sizeof r->why, "order %s is not pp-last and expert-dp (%llu) != dp (%llu)",
			 order, (unsigned long long)r->edp, (unsigned long long)r->dp);
		return;
	}
	ref_table_build(&dense_pp, &r->dense, "pp");
	ref_table_build(&expert_pp, &r->expert, "pp");
	if (!ref_table_equal(&dense_pp, &expert_pp)) {
		r->verdict = REJECT_PP_GROUPS;
		snprintf(r->why, sizeof r->why,
			 "pipeline groups differ: dense [%u,%u,...] expert [%u,%u,...]", dense_pp.members[0],
			 dense_pp.size > 1 ? dense_pp.members[1] : 0, expert_pp.members[0],
			 expert_pp.size > 1 ? expert_pp.members[1] : 0);
	}
	ref_table_free(&expert_pp);
	if (r->verdict != ACCEPTED || !tables) {
		ref_table_free(&dense_pp);
		return;
	}
	for (unsigned g = 0; g < LLMP_NGROUPS; g++) {
		const struct kind *k = &kinds[g];

		if (k->source == FROM_DENSE)
			ref_table_build(&r->table[g], &r->dense, k->token);
		else if (k->source == FROM_EXPERT)
			ref_table_build(&r->table[g], &r->expert, k->token);
		else
			ref_table_pipeline_ends(&r->table[g], &dense_pp, g == LLMP_GROUP_POSITION_EMBEDDING);
	}
	ref_table_free(&dense_pp);
}

/* ===================================================================== */
/* Comparing the planner with the reference                                */
/* ===================================================================== */

#ifndef MAX_REPORTED
#define MAX_REPORTED 25 /* mismatches printed per test; all are counted */
#endif

struct check {
	char layout[400]; /* the layout under test, for every message */
	unsigned failures;
};

static void mismatch(struct check *c, const char *fmt, ...)
{
	char text[1600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	if (c->failures < MAX_REPORTED)
		print_error("MISMATCH [%s]\n    %s\n", c->layout, text);
	else if (c->failures == MAX_REPORTED)
		print_error("(further mismatches counted, not printed)\n");
	c->failures++;
}

static void end_check(const struct check *c)
{
	if (c->failures != 0)
		fail_msg("%u mismatches against Megatron-Core's groups (see above)", c->failures);
}

/* "[a,b,c]" with at most 16 members shown. */
static const char *fmt_ranks(char *buf, size_t len, const uint32_t *r, uint32_t n)
{
	size_t pos = 0;

	pos += (size_t)snprintf(buf + pos, len - pos, "[");
	for (uint32_t i = 0; i < n && pos < len; i++) {
		if (i == 16) {
			pos += (size_t)snprintf(buf + pos, len - pos, ",... (%u members)", n);
			break;
		}
		pos += (size_t)snprintf(buf + pos, len - pos, "%s%u", i ? "," : "", r[i]);
	}
	if (pos < len)
		snprintf(buf + pos, len - pos, "]");
	return buf;
}

/*
 * One kind of group, in full: the number of groups, their size, every group
 * by index, and for every rank the group it is in and that group's index.
 * pos_out (optional) gets each rank's position in its group (UINT32_MAX for
 * none). Returns false on a mismatch.
 */
static bool compare_kind(struct check *c, const llmp_plan *plan, enum llmp_group g, uint32_t count,
			 uint32_t size, const uint32_t *table, uint32_t world, uint32_t *pos_out)
{
	const char *name = kinds[g].name;
	uint32_t got_count = llmp_plan_group_count(plan, g);
	uint32_t got_size = llmp_plan_group_size(plan, g);
	uint32_t *got, *owner, *pos, n, index;
	char a[200], b[200];
	llmp_status st;
	bool ok = true;

	if (got_count != count || got_size != size) {
		mismatch(c, "group %s: planner has %u groups of up to %u members, Megatron %u of %u", name,
			 got_count, got_size, count, size);
		return false;
	}
	got = malloc(((size_t)size + 1) * sizeof *got);
	owner = malloc((size_t)world * sizeof *owner);
	pos = malloc((size_t)world * sizeof *pos);
	assert_true(got && owner && pos);
	for (uint32_t r = 0; r < world; r++) {
		owner[r] = LLMP_NO_GROUP;
		pos[r] = UINT32_MAX;
	}
	for (uint32_t i = 0; i < count && ok; i++) {
		for (uint32_t k = 0; k < size; k++) {
			uint32_t m = table[(size_t)i * size + k];

			if (m >= world || owner[m] != LLMP_NO_GROUP) {
				mismatch(
					c,
					"group %s: the expected table is not a partition (rank %u) - a bug in this test",
					name, m);
				ok = false;
				break;
			}
			owner[m] = i;
			pos[m] = k;
		}
	}
	if (ok && kinds[g].source != FROM_PP_ENDS) {
		for (uint32_t r = 0; r < world; r++) {
			if (owner[r] == LLMP_NO_GROUP) {
				mismatch(c, "group %s: expected table misses rank %u - a bug in this test",
					 name, r);
				ok = false;
				break;
			}
		}
	}

	/* The table, by index. */
	for (uint32_t i = 0; i < count && ok; i++) {
		const uint32_t *want = table + (size_t)i * size;

		n = UINT32_MAX;
		st = llmp_plan_group(plan, g, i, got, size, &n);
		if (st != LLMP_OK || n != size || memcmp(got, want, (size_t)size * sizeof *got) != 0) {
			mismatch(c, "group %s index %u: expected %s, got %s (status %s)", name, i,
				 fmt_ranks(a, sizeof a, want, size),
				 fmt_ranks(b, sizeof b, got, st == LLMP_OK && n <= size ? n : 0),
				 llmp_strerror(st));
			ok = false;
		}
	}
	st = llmp_plan_group(plan, g, count, got, size, &n);
	if (st != LLMP_ERR_RANGE) {
		mismatch(c, "group %s index %u (one past the last): status %s, expected %s", name, count,
			 llmp_strerror(st), llmp_strerror(LLMP_ERR_RANGE));
		ok = false;
	}

	/* Each rank's own group. */
	for (uint32_t r = 0; r < world && ok; r++) {
		n = UINT32_MAX;
		index = 0xdeadbeef;
		st = llmp_plan_group_of(plan, g, r, got, size, &n, &index);
		if (owner[r] == LLMP_NO_GROUP) {
			if (st != LLMP_OK || n != 0 || index != LLMP_NO_GROUP) {
				mismatch(
					c,
					"group %s rank %u: Megatron puts it in no group; planner: status %s, %u members, index %u",
					name, r, llmp_strerror(st), n, index);
				ok = false;
			}
			continue;
		}
		const uint32_t *want = table + (size_t)owner[r] * size;

		if (st != LLMP_OK || index != owner[r] || n != size ||
		    memcmp(got, want, (size_t)size * sizeof *got) != 0) {
			mismatch(c, "group %s of rank %u: expected index %u %s, got index %u %s (status %s)",
				 name, r, owner[r], fmt_ranks(a, sizeof a, want, size), index,
				 fmt_ranks(b, sizeof b, got, st == LLMP_OK && n <= size ? n : 0),
				 llmp_strerror(st));
			ok = false;
		}
	}
	st = llmp_plan_group_of(plan, g, world, got, size, &n, &index);
	if (st != LLMP_ERR_RANGE) {
		mismatch(c, "group %s of rank %u (= world): status %s, expected %s", name, world,
			 llmp_strerror(st), llmp_strerror(LLMP_ERR_RANGE));
		ok = false;
	}
	if (pos_out)
		memcpy(pos_out, pos, (size_t)world * sizeof *pos);
	free(got);
	free(owner);
	free(pos);
	return ok;
}

/* The coordinate, in the planner's terms, of one token of a generator's order. */
static uint64_t coord_of_token(const uint32_t coords[LLMP_NAXES], const char *token, bool expert)
{
	if (strcmp(token, "tp") == 0)
		return coords[expert ? LLMP_AXIS_ETP : LLMP_AXIS_TP];
	if (strcmp(token, "dp") == 0)
		return coords[expert ? LLMP_AXIS_EDP : LLMP_AXIS_DP];
	if (strcmp(token, "pp") == 0)
		return coords[LLMP_AXIS_PP];
	if (strcmp(token, "cp") == 0)
		return expert ? 0 : coords[LLMP_AXIS_CP];
	return expert ? coords[LLMP_AXIS_EP] : 0; /* "ep" */
}

/* rank = sum of coordinate * stride over the generator's order, leftmost fastest. */
static uint64_t rank_from_coords(const struct ref_generator *g, const uint32_t coords[LLMP_NAXES],
				 bool expert)
{
	uint64_t rank = 0, stride = 1;

	for (unsigned d = 0; d < g->ndims; d++) {
		rank += coord_of_token(coords, g->token[d], expert) * stride;
		stride *= g->size[d];
	}
	return rank;
}

/* Every size, every kind of group in full, and every rank's coordinates. */
static void compare_plan(struct check *c, const llmp_plan *plan, const struct reference *ref,
			 const struct layout *l)
{
	const uint64_t size[LLMP_NAXES] = {
		[LLMP_AXIS_TP] = l->tp,     [LLMP_AXIS_CP] = l->cp, [LLMP_AXIS_EP] = l->ep,
		[LLMP_AXIS_DP] = ref->dp,   [LLMP_AXIS_PP] = l->pp, [LLMP_AXIS_ETP] = ref->etp,
		[LLMP_AXIS_EDP] = ref->edp,
	};
	uint32_t *pos[LLMP_NGROUPS] = { NULL };
	bool pos_ok = true;

	if (llmp_plan_world(plan) != l->world)
		mismatch(c, "llmp_plan_world = %u", llmp_plan_world(plan));
	for (unsigned a = 0; a < LLMP_NAXES; a++) {
		if (llmp_plan_size(plan, (enum llmp_axis)a) != size[a])
			mismatch(c, "size of %s: planner %u, Megatron %llu", axis_label[a],
				 llmp_plan_size(plan, (enum llmp_axis)a), (unsigned long long)size[a]);
	}
	for (unsigned a = 0; a < LLMP_NAXES; a++) {
		pos[axis_group[a]] = malloc((size_t)l->world * sizeof(uint32_t));
		assert_non_null(pos[axis_group[a]]);
	}
	for (unsigned g = 0; g < LLMP_NGROUPS; g++) {
		const struct ref_table *t = &ref->table[g];

		if (!compare_kind(c, plan, (enum llmp_group)g, t->count, t->size, t->members, l->world,
				  pos[g]) &&
		    pos[g])
			pos_ok = false;
	}
	for (uint32_t r = 0; r < l->world && pos_ok; r++) {
		uint32_t co[LLMP_NAXES];
		llmp_status st = llmp_plan_coords(plan, r, co);

		if (st != LLMP_OK) {
			mismatch(c, "coords of rank %u: status %s", r, llmp_strerror(st));
			break;
		}
		for (unsigned a = 0; a < LLMP_NAXES; a++) {
			if (co[a] != pos[axis_group[a]][r]) {
				mismatch(c, "rank %u: %s coordinate %u, but it is member %u of its %s group",
					 r, axis_label[a], co[a], pos[axis_group[a]][r],
					 kinds[axis_group[a]].name);
				pos_ok = false;
			}
		}
		if (pos_ok && (rank_from_coords(&ref->dense, co, false) != r ||
			       rank_from_coords(&ref->expert, co, true) != r)) {
			mismatch(c, "rank %u: coordinates do not number it in the mixed radix of the order",
				 r);
			pos_ok = false;
		}
	}
	if (pos_ok) {
		uint32_t co[LLMP_NAXES];

		if (llmp_plan_coords(plan, l->world, co) != LLMP_ERR_RANGE)
			mismatch(c, "coords of rank %u (= world) not rejected with %s", l->world,
				 llmp_strerror(LLMP_ERR_RANGE));
	}
	for (unsigned g = 0; g < LLMP_NGROUPS; g++)
		free(pos[g]);
}

/* The --llm-parallel text for a layout. */
static void layout_text(const struct layout *l, const struct reference *ref, char *buf, size_t len)
{
	size_t pos = 0;
	const struct {
		const char *key;
		uint32_t value;
	} keys[] = { { "tp", l->tp }, { "pp", l->pp }, { "cp", l->cp }, { "ep", l->ep } };

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		if (l->terse && keys[i].value == 1)
			continue;
		pos += (size_t)snprintf(buf + pos, len - pos, "%s%s=%u", pos ? "," : "", keys[i].key,
					keys[i].value);
	}
	if (l->etp)
		pos += (size_t)snprintf(buf + pos, len - pos, "%setp=%u", pos ? "," : "", l->etp);
	if (l->give_dp && ref->verdict != REJECT_DENSE_DIVIDE)
		pos += (size_t)snprintf(buf + pos, len - pos, "%sdp=%llu", pos ? "," : "",
					(unsigned long long)ref->dp);
	if (l->order)
		pos += (size_t)snprintf(buf + pos, len - pos, "%sorder=%s", pos ? "," : "", l->order);
	if (pos == 0)
		snprintf(buf, len, "tp=1");
}

struct sweep_stats {
	unsigned verdict[NVERDICTS];
};

/*
 * Whether the text alone is wrong, whatever the world: its order leaves out a
 * dimension it gives a size other than 1. The parser may refuse such a text
 * before any of Megatron's checks (which might have stopped at another one).
 */
static bool order_omits_given_size(const struct layout *l, const struct reference *ref)
{
	const char *o = l->order;

	if (o == NULL)
		return false;
	return ((l->tp != 1 || (l->etp != 0 && l->etp != 1)) && !strstr(o, "tp")) ||
	       (l->cp != 1 && !strstr(o, "cp")) || (l->pp != 1 && !strstr(o, "pp")) ||
	       (l->ep != 1 && !strstr(o, "ep")) ||
	       (l->give_dp && ref->verdict != REJECT_DENSE_DIVIDE && ref->dp != 1 && !strstr(o, "dp"));
}

/*
 * One layout: parse it, fit it to its world and compare everything with
 * Megatron. A layout Megatron rejects must be rejected: by llmp_plan_create
 * with LLMP_ERR_LAYOUT, or already by the parser with LLMP_ERR_SPEC when the
 * order leaves out a dimension the text sizes.
 */
static void run_layout(struct check *c, const struct layout *l, struct sweep_stats *stats)
{
	struct reference ref;
	char text[LLMP_SPEC_MAX_LEN], msg[LLMP_MSG_MAX];
	llmp_spec spec;
	llmp_plan *plan = NULL;
	llmp_status st;

	reference_init(&ref, l, true);
	layout_text(l, &ref, text, sizeof text);
	snprintf(c->layout, sizeof c->layout, "world=%u \"%s\" (tp=%u cp=%u pp=%u ep=%u etp=%llu order=%s)",
		 l->world, text, l->tp, l->cp, l->pp, l->ep, (unsigned long long)(l->etp ? l->etp : l->tp),
		 l->order ? l->order : REF_DEFAULT_ORDER);
	if (stats)
		stats->verdict[ref.verdict]++;

	msg[0] = '\0';
	st = llmp_spec_parse(text, &spec, msg, sizeof msg);
	if (st != LLMP_OK) {
		if (!(ref.verdict != ACCEPTED && st == LLMP_ERR_SPEC && order_omits_given_size(l, &ref)))
			mismatch(c, "llmp_spec_parse: %s (%s); Megatron: %s", llmp_strerror(st), msg,
				 ref.verdict == ACCEPTED ? "accepts the layout" : ref.why);
		goto out;
	}
	msg[0] = '\0';
	st = llmp_plan_create(&spec, l->world, 0, &plan, msg, sizeof msg);
	if (ref.verdict != ACCEPTED) {
		if (st != LLMP_ERR_LAYOUT)
			mismatch(c, "Megatron rejects the layout (%s: %s), llmp_plan_create returned %s",
				 verdict_name[ref.verdict], ref.why, llmp_strerror(st));
		else if (plan != NULL)
			mismatch(c, "llmp_plan_create failed but left *plan set");
		else if (msg[0] == '\0')
			mismatch(c, "llmp_plan_create rejected the layout without a message");
		if (st == LLMP_OK)
			llmp_plan_destroy(plan);
		goto out;
	}
	if (st != LLMP_OK) {
		mismatch(c, "Megatron accepts the layout, llmp_plan_create returned %s: %s",
			 llmp_strerror(st), msg);
		goto out;
	}
	compare_plan(c, plan, &ref, l);
	llmp_plan_destroy(plan);
out:
	reference_free(&ref);
}

/* ===================================================================== */
/* Layout sweeps                                                           */
/* ===================================================================== */

static const uint32_t small_worlds[] = { 1, 2, 4, 6, 8, 12, 16, 24 };
static const uint32_t small_sizes[] = { 1, 2, 3, 4, 8 };
static const uint32_t small_etps[] = { 0, 1, 2 }; /* 0: not given */

/*
 * Every combination of small sizes, dividing or not, in small worlds.
 * Alternates the spelling: terse or not, dp given or auto, and for the
 * default order, the order left out.
 */
static void sweep_small(struct check *c, const char *order, struct sweep_stats *stats)
{
	unsigned serial = 0;

	for (size_t w = 0; w < sizeof small_worlds / sizeof small_worlds[0]; w++)
		for (size_t t = 0; t < sizeof small_sizes / sizeof small_sizes[0]; t++)
			for (size_t k = 0; k < sizeof small_sizes / sizeof small_sizes[0]; k++)
				for (size_t p = 0; p < sizeof small_sizes / sizeof small_sizes[0]; p++)
					for (size_t e = 0; e < sizeof small_sizes / sizeof small_sizes[0];
					     e++)
						for (size_t x = 0;
						     x < sizeof small_etps / sizeof small_etps[0]; x++) {
							struct layout l = {
								.world = small_worlds[w],
								.tp = small_sizes[t],
								.cp = small_sizes[k],
								.pp = small_sizes[p],
								.ep = small_sizes[e],
								.etp = small_etps[x],
								.order = order,
								.give_dp = serial % 3 == 1,
								.terse = serial % 2 == 0,
							};

							if (strcmp(order, REF_DEFAULT_ORDER) == 0 &&
							    serial % 4 == 3)
								l.order = NULL;
							serial++;
							run_layout(c, &l, stats);
						}
}

/* A small deterministic generator, so that a failure reproduces. */
static uint32_t next_random(uint64_t *state)
{
	*state = *state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*state >> 33);
}

/* One of the candidates that divide n, at random (1 always does). */
static uint32_t pick_divisor(uint64_t *state, uint32_t n)
{
	static const uint32_t cand[] = { 1, 2, 3, 4, 6, 8, 16 };
	uint32_t ok[sizeof cand / sizeof cand[0]], nok = 0;

	for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++)
		if (n % cand[i] == 0)
			ok[nok++] = cand[i];
	return ok[next_random(state) % nok];
}

static const uint32_t large_worlds[] = { 32, 48, 64, 96, 128, 192, 256, 384 };

/*
 * Random layouts that divide, in worlds of up to a few hundred ranks. Half
 * of them fold ep onto cp (ep = cp, etp = tp), which keeps expert-dp = dp and
 * so is accepted under most orders; the others pick ep and etp freely.
 */
static void sweep_sampled(struct check *c, const char *order, unsigned per_world, uint64_t seed,
			  struct sweep_stats *stats)
{
	uint64_t state = seed;
	unsigned serial = 0;

	for (size_t w = 0; w < sizeof large_worlds / sizeof large_worlds[0]; w++) {
		for (unsigned i = 0; i < per_world; i++) {
			struct layout l = { .world = large_worlds[w], .order = order };

			l.tp = pick_divisor(&state, l.world);
			l.cp = pick_divisor(&state, l.world / l.tp);
			l.pp = pick_divisor(&state, l.world / (l.tp * l.cp));
			if (next_random(&state) % 2) {
				l.ep = l.cp;
			} else {
				l.ep = pick_divisor(&state, l.world / l.pp);
				l.etp = pick_divisor(&state, l.world / (l.pp * l.ep));
			}
			l.give_dp = serial % 3 == 1;
			l.terse = serial % 2 == 0;
			if (strcmp(order, REF_DEFAULT_ORDER) == 0 && serial % 4 == 3)
				l.order = NULL;
			serial++;
			run_layout(c, &l, stats);
		}
	}
}

static void print_stats(const char *what, const struct sweep_stats *s)
{
	unsigned total = 0;

	for (unsigned v = 0; v < NVERDICTS; v++)
		total += s->verdict[v];
	print_message(
		"  %-16s %5u layouts: %5u accepted, rejected: %u divide, %u order, %u expert divide, %u expert-dp, %u pp groups\n",
		what, total, s->verdict[ACCEPTED], s->verdict[REJECT_DENSE_DIVIDE], s->verdict[REJECT_ORDER],
		s->verdict[REJECT_EXPERT_DIVIDE], s->verdict[REJECT_DP_MISMATCH],
		s->verdict[REJECT_PP_GROUPS]);
}

/* ===================================================================== */
/* The worked example: W=16, tp=cp=dp=pp=2                                 */
/* ===================================================================== */

/* Default order tp-cp-ep-dp-pp: rank = tp + 2cp + 4dp + 8pp. */
static const uint32_t w16_tp[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint32_t w16_cp[] = { 0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15 };
static const uint32_t w16_dp[] = { 0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15 };
static const uint32_t w16_pp[] = { 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15 };
static const uint32_t w16_dp_cp[] = { 0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15 };
static const uint32_t w16_tp_cp[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint32_t w16_tp_dp[] = { 0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15 };
static const uint32_t w16_tp_pp[] = { 0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15 };
static const uint32_t w16_tp_dp_cp[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint32_t w16_pos[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
static const uint32_t w16_single[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

/*
 * Order tp-cp-ep-pp-dp: rank = tp + 2cp + 4pp + 8dp; DP and PP swap roles.
 * initialize_model_parallel refuses this order with cp = 2 and ep = 1 (the
 * expert grid, which has no cp, would have expert-dp 4 != dp 2, and other pp
 * groups), so the example folds ep = 2 onto cp; the dense groups do not
 * depend on ep. The expert groups below were printed by Megatron's code.
 */
static const uint32_t s16_dp[] = { 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15 };
static const uint32_t s16_pp[] = { 0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15 };
static const uint32_t s16_tp_pp[] = { 0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15 };
static const uint32_t s16_tp_dp[] = { 0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15 };
static const uint32_t s16_dp_cp[] = { 0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15 };
static const uint32_t s16_tp_dp_cp[] = { 0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15 };
static const uint32_t s16_tp_ep_pp[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint32_t s16_pos[] = { 0, 1, 2, 3, 8, 9, 10, 11 };

struct expected {
	enum llmp_group group;
	uint32_t count, size;
	const uint32_t *members;
};

/*
 * With ep = 1 and etp = tp the expert grid is tp x (cp*dp) x pp, so expert-tp
 * and tp-ep are the tp groups, expert-dp the dp-cp groups, tp-ep-pp the tp-pp
 * groups and every ep group a single rank.
 */
static const struct expected w16_default[] = {
	{ LLMP_GROUP_TP, 8, 2, w16_tp },
	{ LLMP_GROUP_CP, 8, 2, w16_cp },
	{ LLMP_GROUP_DP, 8, 2, w16_dp },
	{ LLMP_GROUP_PP, 8, 2, w16_pp },
	{ LLMP_GROUP_DP_CP, 4, 4, w16_dp_cp },
	{ LLMP_GROUP_TP_CP, 4, 4, w16_tp_cp },
	{ LLMP_GROUP_TP_DP, 4, 4, w16_tp_dp },
	{ LLMP_GROUP_TP_PP, 4, 4, w16_tp_pp },
	{ LLMP_GROUP_TP_DP_CP, 2, 8, w16_tp_dp_cp },
	{ LLMP_GROUP_EMBEDDING, 8, 2, w16_pp },
	{ LLMP_GROUP_POSITION_EMBEDDING, 8, 1, w16_pos },
	{ LLMP_GROUP_EP, 16, 1, w16_single },
	{ LLMP_GROUP_EXPERT_TP, 8, 2, w16_tp },
	{ LLMP_GROUP_EXPERT_DP, 4, 4, w16_dp_cp },
	{ LLMP_GROUP_TP_EP, 8, 2, w16_tp },
	{ LLMP_GROUP_TP_EP_PP, 4, 4, w16_tp_pp },
};

static const struct expected w16_swapped[] = {
	{ LLMP_GROUP_TP, 8, 2, w16_tp },
	{ LLMP_GROUP_CP, 8, 2, w16_cp },
	{ LLMP_GROUP_DP, 8, 2, s16_dp },
	{ LLMP_GROUP_PP, 8, 2, s16_pp },
	{ LLMP_GROUP_DP_CP, 4, 4, s16_dp_cp },
	{ LLMP_GROUP_TP_CP, 4, 4, w16_tp_cp },
	{ LLMP_GROUP_TP_DP, 4, 4, s16_tp_dp },
	{ LLMP_GROUP_TP_PP, 4, 4, s16_tp_pp },
	{ LLMP_GROUP_TP_DP_CP, 2, 8, s16_tp_dp_cp },
	{ LLMP_GROUP_EMBEDDING, 8, 2, s16_pp },
	{ LLMP_GROUP_POSITION_EMBEDDING, 8, 1, s16_pos },
	{ LLMP_GROUP_EP, 8, 2, w16_cp },
	{ LLMP_GROUP_EXPERT_TP, 8, 2, w16_tp },
	{ LLMP_GROUP_EXPERT_DP, 8, 2, s16_dp },
	{ LLMP_GROUP_TP_EP, 4, 4, w16_tp_cp },
	{ LLMP_GROUP_TP_EP_PP, 2, 8, s16_tp_ep_pp },
};

#define NELEMS(a) (sizeof a / sizeof((a)[0]))

static const struct layout w16_default_layout = {
	.world = 16,
	.tp = 2,
	.cp = 2,
	.pp = 2,
	.ep = 1,
	.order = NULL,
};
static const struct layout w16_swapped_layout = {
	.world = 16,
	.tp = 2,
	.cp = 2,
	.pp = 2,
	.ep = 2,
	.order = "tp-cp-ep-pp-dp",
};

/* The transcription reproduces the tables Megatron's own code printed. */
static void check_reference_against(const struct layout *l, const struct expected *e, size_t n)
{
	struct reference ref;

	reference_init(&ref, l, true);
	assert_int_equal(ref.verdict, ACCEPTED);
	for (size_t i = 0; i < n; i++) {
		const struct ref_table *t = &ref.table[e[i].group];

		if (t->count != e[i].count || t->size != e[i].size ||
		    memcmp(t->members, e[i].members, (size_t)t->count * t->size * sizeof(uint32_t)) != 0) {
			reference_free(&ref);
			fail_msg(
				"the Megatron transcription gives wrong %s groups for the worked example (order %s)",
				kinds[e[i].group].name, l->order ? l->order : REF_DEFAULT_ORDER);
		}
	}
	reference_free(&ref);
}

static void test_reference_reproduces_worked_example(void **state)
{
	(void)state;
	check_reference_against(&w16_default_layout, w16_default, NELEMS(w16_default));
	check_reference_against(&w16_swapped_layout, w16_swapped, NELEMS(w16_swapped));
}

/* The planner gives the hard-coded tables for one spelling of the layout. */
static void check_planner_against(struct check *c, const char *text, const struct expected *e, size_t n)
{
	llmp_spec spec;
	llmp_plan *plan = NULL;
	char msg[LLMP_MSG_MAX] = "";
	llmp_status st;

	snprintf(c->layout, sizeof c->layout, "worked example, world=16 \"%s\"", text);
	st = llmp_spec_parse(text, &spec, msg, sizeof msg);
	if (st != LLMP_OK) {
		mismatch(c, "llmp_spec_parse: %s: %s", llmp_strerror(st), msg);
		return;
	}
	st = llmp_plan_create(&spec, 16, 0, &plan, msg, sizeof msg);
	if (st != LLMP_OK) {
		mismatch(c, "llmp_plan_create: %s: %s", llmp_strerror(st), msg);
		return;
	}
	if (llmp_plan_size(plan, LLMP_AXIS_DP) != 2)
		mismatch(c, "derived dp = %u, expected 2", llmp_plan_size(plan, LLMP_AXIS_DP));
	for (size_t i = 0; i < n; i++)
		compare_kind(c, plan, e[i].group, e[i].count, e[i].size, e[i].members, 16, NULL);
	llmp_plan_destroy(plan);
}

static void test_worked_example_default_order(void **state)
{
	struct check c = { .failures = 0 };

	(void)state;
	check_planner_against(&c, "tp=2,pp=2,cp=2", w16_default, NELEMS(w16_default));
	check_planner_against(&c, "tp=2,pp=2,cp=2,dp=2,order=tp-cp-ep-dp-pp", w16_default,
			      NELEMS(w16_default));
	end_check(&c);
}

static void test_worked_example_pp_before_dp(void **state)
{
	struct check c = { .failures = 0 };

	(void)state;
	check_planner_against(&c, "tp=2,pp=2,cp=2,ep=2,order=tp-cp-ep-pp-dp", w16_swapped,
			      NELEMS(w16_swapped));
	end_check(&c);
}

/* ===================================================================== */
/* Tests                                                                    */
/* ===================================================================== */

/* The planner names its groups with Megatron's tokens. */
static void test_group_names(void **state)
{
	(void)state;
	for (unsigned g = 0; g < LLMP_NGROUPS; g++) {
		const char *name = llmp_group_name((enum llmp_group)g);

		assert_int_equal(kinds[g].group, g);
		if (name == NULL || strcmp(name, kinds[g].name) != 0)
			fail_msg("llmp_group_name(%u) = \"%s\", expected \"%s\"", g, name ? name : "(null)",
				 kinds[g].name);
		assert_int_equal(llmp_group_from_name(kinds[g].name), (int)g);
	}
}

/* Megatron's default order and the one --use-tp-pp-dp-mapping selects. */
static void test_sweep_default_order(void **state)
{
	struct check c = { .failures = 0 };
	struct sweep_stats small = { { 0 } }, sampled = { { 0 } };

	(void)state;
	sweep_small(&c, REF_DEFAULT_ORDER, &small);
	sweep_sampled(&c, REF_DEFAULT_ORDER, 14, 1, &sampled);
	print_stats("tp-cp-ep-dp-pp", &small);
	print_stats("  sampled", &sampled);
	end_check(&c);
	/* pp-last: every layout that divides is accepted. */
	assert_true(small.verdict[ACCEPTED] > 1000 && sampled.verdict[ACCEPTED] > 50);
	assert_int_equal(small.verdict[REJECT_DP_MISMATCH] + small.verdict[REJECT_PP_GROUPS], 0);
}

static void test_sweep_pp_before_dp(void **state)
{
	struct check c = { .failures = 0 };
	struct sweep_stats small = { { 0 } }, sampled = { { 0 } };

	(void)state;
	sweep_small(&c, "tp-cp-ep-pp-dp", &small);
	sweep_sampled(&c, "tp-cp-ep-pp-dp", 14, 2, &sampled);
	print_stats("tp-cp-ep-pp-dp", &small);
	print_stats("  sampled", &sampled);
	end_check(&c);
	assert_true(small.verdict[ACCEPTED] > 500 && sampled.verdict[ACCEPTED] > 30);
	assert_true(small.verdict[REJECT_DP_MISMATCH] > 0);
}

/* Orders the CLI does not offer but the option grammar does. */
static void test_sweep_other_orders(void **state)
{
	static const char *const orders[] = {
		"pp-dp-cp-ep-tp", "tp-pp-cp-ep-dp", "cp-dp-tp-ep-pp", "dp-tp-pp-cp-ep", "ep-tp-cp-pp-dp",
	};
	struct check c = { .failures = 0 };
	struct sweep_stats total = { { 0 } };

	(void)state;
	for (size_t i = 0; i < NELEMS(orders); i++) {
		struct sweep_stats s = { { 0 } };

		sweep_small(&c, orders[i], &s);
		sweep_sampled(&c, orders[i], 6, 3 + i, &s);
		print_stats(orders[i], &s);
		assert_true(s.verdict[ACCEPTED] > 100);
		for (unsigned v = 0; v < NVERDICTS; v++)
			total.verdict[v] += s.verdict[v];
	}
	end_check(&c);
	assert_true(total.verdict[REJECT_DP_MISMATCH] > 0 && total.verdict[REJECT_PP_GROUPS] > 0);
}

/* Orders that leave out dimensions: allowed for a size of 1 only. */
static void test_sweep_partial_orders(void **state)
{
	static const char *const orders[] = {
		"tp-dp-pp",    "tp-pp-dp", "pp-tp-dp", "dp-tp", "tp-cp-dp-pp",
		"tp-ep-dp-pp", "ep-dp-pp", "pp-dp",    "tp",
	};
	struct check c = { .failures = 0 };
	struct sweep_stats total = { { 0 } };

	(void)state;
	for (size_t i = 0; i < NELEMS(orders); i++) {
		struct sweep_stats s = { { 0 } };

		sweep_small(&c, orders[i], &s);
		print_stats(orders[i], &s);
		assert_true(s.verdict[ACCEPTED] > 0);
		for (unsigned v = 0; v < NVERDICTS; v++)
			total.verdict[v] += s.verdict[v];
	}
	end_check(&c);
	assert_true(total.verdict[REJECT_ORDER] > 0);
}

/* One hand-picked layout per reason initialize_model_parallel refuses. */
static void test_rejected_layouts(void **state)
{
	static const struct {
		struct layout l;
		enum verdict why;
	} cases[] = {
		{ { .world = 12, .tp = 8, .cp = 1, .pp = 1, .ep = 1 }, REJECT_DENSE_DIVIDE },
		{ { .world = 16, .tp = 2, .cp = 2, .pp = 2, .ep = 3 }, REJECT_EXPERT_DIVIDE },
		{ { .world = 16, .tp = 1, .cp = 1, .pp = 2, .ep = 1, .etp = 3 }, REJECT_EXPERT_DIVIDE },
		/* dp = 4 is derived, and the order does not name it */
		{ { .world = 8, .tp = 2, .cp = 1, .pp = 1, .ep = 1, .order = "tp-pp" }, REJECT_ORDER },
		/* expert-dp = 2 while dp = 1 */
		{ { .world = 4, .tp = 2, .cp = 2, .pp = 1, .ep = 1, .order = "tp-cp-ep-pp" }, REJECT_ORDER },
		{ { .world = 8, .tp = 1, .cp = 1, .pp = 1, .ep = 2, .order = "tp-cp-dp-pp" }, REJECT_ORDER },
		{ { .world = 8, .tp = 1, .cp = 1, .pp = 1, .ep = 1, .etp = 2, .order = "cp-ep-dp-pp" },
		  REJECT_ORDER },
		/* the worked example's sizes with pp before dp and ep = 1: expert-dp 4 != dp 2 */
		{ { .world = 16, .tp = 2, .cp = 2, .pp = 2, .ep = 1, .order = "tp-cp-ep-pp-dp" },
		  REJECT_DP_MISMATCH },
		/* pp before dp: expert grid etp*ep = 4 != tp*cp = 2 */
		{ { .world = 16, .tp = 2, .cp = 1, .pp = 2, .ep = 2, .order = "tp-cp-ep-pp-dp" },
		  REJECT_DP_MISMATCH },
		/* pp first: identical pp groups, but expert-dp 2 != dp 4 */
		{ { .world = 16, .tp = 2, .cp = 1, .pp = 2, .ep = 2, .order = "pp-dp-cp-ep-tp" },
		  REJECT_DP_MISMATCH },
		/* expert-dp = dp = 2, but pp strides differ: tp = 2 vs etp = 1 */
		{ { .world = 16, .tp = 2, .cp = 2, .pp = 2, .ep = 4, .etp = 1, .order = "tp-pp-cp-ep-dp" },
		  REJECT_PP_GROUPS },
		/* the large layout with pp before dp: expert-dp 128 != dp 256 */
		{ { .world = 131072, .tp = 8, .cp = 4, .pp = 16, .ep = 8, .order = "tp-cp-ep-pp-dp" },
		  REJECT_DP_MISMATCH },
	};
	struct check c = { .failures = 0 };

	(void)state;
	for (size_t i = 0; i < NELEMS(cases); i++) {
		struct reference ref;

		reference_init(&ref, &cases[i].l, false);
		if (ref.verdict != cases[i].why)
			fail_msg(
				"case %zu: the Megatron transcription says \"%s\", expected \"%s\" - a bug in this test",
				i, verdict_name[ref.verdict], verdict_name[cases[i].why]);
		reference_free(&ref);
		if (cases[i].l.world <= 4096)
			run_layout(&c, &cases[i].l, NULL);
		else {
			/* Too large to compare in full; only the refusal matters here. */
			char text[LLMP_SPEC_MAX_LEN], msg[LLMP_MSG_MAX] = "";
			llmp_spec spec;
			llmp_plan *plan = NULL;
			llmp_status st;

			reference_init(&ref, &cases[i].l, false);
			layout_text(&cases[i].l, &ref, text, sizeof text);
			snprintf(c.layout, sizeof c.layout, "world=%u \"%s\"", cases[i].l.world, text);
			assert_int_equal(llmp_spec_parse(text, &spec, msg, sizeof msg), LLMP_OK);
			st = llmp_plan_create(&spec, cases[i].l.world, 0, &plan, msg, sizeof msg);
			if (st != LLMP_ERR_LAYOUT || plan != NULL)
				mismatch(&c, "Megatron rejects the layout (%s), llmp_plan_create returned %s",
					 ref.why, llmp_strerror(st));
			if (st == LLMP_OK)
				llmp_plan_destroy(plan);
			reference_free(&ref);
		}
	}
	end_check(&c);
}

/* ===================================================================== */
/* A large world, rank by rank                                             */
/* ===================================================================== */

/*
 * The reference group of one rank, computed for that group only. Returns
 * false when the rank is in no group of the kind (embedding groups).
 */
static bool reference_group_of(const struct reference *ref, enum llmp_group g, uint32_t rank,
			       uint32_t *members, uint32_t *n, uint64_t *index, uint64_t *count,
			       uint32_t *size)
{
	const struct kind *k = &kinds[g];
	const struct ref_generator *gen = k->source == FROM_EXPERT ? &ref->expert : &ref->dense;
	struct ref_masked m;
	bool found = false;

	ref_masked_init(gen, k->source == FROM_PP_ENDS ? "pp" : k->token, &m);
	*index = ref_group_index_of(gen, &m, rank);
	*count = m.num_groups;
	ref_group(&m, *index, members);
	for (uint64_t i = 0; i < m.group_size; i++)
		found |= members[i] == rank;
	assert_true(found); /* the transcription's own consistency */
	*n = *size = (uint32_t)m.group_size;
	if (k->source != FROM_PP_ENDS)
		return true;

	/* default_embedding_ranks / default_position_embedding_ranks of that pp group */
	uint32_t first = members[0], last = members[m.group_size - 1];

	if (g == LLMP_GROUP_POSITION_EMBEDDING || m.group_size == 1) {
		*size = *n = 1;
		return rank == first;
	}
	*size = *n = 2;
	members[1] = last;
	return rank == first || rank == last;
}

static void spot_check_layout(struct check *c, const struct layout *l)
{
	struct reference ref;
	char text[LLMP_SPEC_MAX_LEN], msg[LLMP_MSG_MAX] = "", a[200], b[200];
	llmp_spec spec;
	llmp_plan *plan = NULL;
	llmp_status st;
	uint32_t *want, *got, ranks[240];
	uint64_t seed = 7;

	reference_init(&ref, l, false);
	layout_text(l, &ref, text, sizeof text);
	snprintf(c->layout, sizeof c->layout, "world=%u \"%s\"", l->world, text);
	assert_int_equal(ref.verdict, ACCEPTED);
	st = llmp_spec_parse(text, &spec, msg, sizeof msg);
	if (st != LLMP_OK) {
		mismatch(c, "llmp_spec_parse: %s: %s", llmp_strerror(st), msg);
		return;
	}
	st = llmp_plan_create(&spec, l->world, 0, &plan, msg, sizeof msg);
	if (st != LLMP_OK) {
		mismatch(c, "Megatron accepts the layout, llmp_plan_create returned %s: %s",
			 llmp_strerror(st), msg);
		return;
	}
	if (llmp_plan_size(plan, LLMP_AXIS_DP) != ref.dp || llmp_plan_size(plan, LLMP_AXIS_EDP) != ref.edp)
		mismatch(c, "dp %u expert-dp %u, expected %llu and %llu", llmp_plan_size(plan, LLMP_AXIS_DP),
			 llmp_plan_size(plan, LLMP_AXIS_EDP), (unsigned long long)ref.dp,
			 (unsigned long long)ref.edp);

	/* 200 ranks evenly spread, first and last included, and 40 at random. */
	for (uint32_t i = 0; i < 200; i++)
		ranks[i] = (uint32_t)((uint64_t)i * (l->world - 1) / 199);
	for (uint32_t i = 200; i < 240; i++)
		ranks[i] = next_random(&seed) % l->world;

	want = malloc((size_t)l->world * sizeof *want);
	got = malloc((size_t)l->world * sizeof *got);
	assert_true(want && got);
	for (unsigned g = 0; g < LLMP_NGROUPS; g++) {
		const char *name = kinds[g].name;
		uint32_t cap = llmp_plan_group_size(plan, (enum llmp_group)g);
		bool ok = true;

		for (size_t i = 0; i < NELEMS(ranks) && ok; i++) {
			uint32_t r = ranks[i], n, size, got_n = UINT32_MAX, got_index = 0xdeadbeef;
			uint64_t index, count;
			bool member = reference_group_of(&ref, (enum llmp_group)g, r, want, &n, &index,
							 &count, &size);

			if (i == 0 &&
			    (llmp_plan_group_count(plan, (enum llmp_group)g) != count || cap != size)) {
				mismatch(
					c,
					"group %s: planner has %u groups of up to %u members, Megatron %llu of %u",
					name, llmp_plan_group_count(plan, (enum llmp_group)g), cap,
					(unsigned long long)count, size);
				ok = false;
				break;
			}
			st = llmp_plan_group_of(plan, (enum llmp_group)g, r, got, cap, &got_n, &got_index);
			if (!member) {
				if (st != LLMP_OK || got_n != 0 || got_index != LLMP_NO_GROUP) {
					mismatch(
						c,
						"group %s rank %u: Megatron puts it in no group; planner: status %s, %u members, index %u",
						name, r, llmp_strerror(st), got_n, got_index);
					ok = false;
				}
				continue;
			}
			if (st != LLMP_OK || got_index != index || got_n != n ||
			    memcmp(got, want, (size_t)n * sizeof *got) != 0) {
				mismatch(
					c,
					"group %s of rank %u: expected index %llu %s, got index %u %s (status %s)",
					name, r, (unsigned long long)index, fmt_ranks(a, sizeof a, want, n),
					got_index,
					fmt_ranks(b, sizeof b, got,
						  st == LLMP_OK && got_n <= cap ? got_n : 0),
					llmp_strerror(st));
				ok = false;
				continue;
			}
			st = llmp_plan_group(plan, (enum llmp_group)g, (uint32_t)index, got, cap, &got_n);
			if (st != LLMP_OK || got_n != n || memcmp(got, want, (size_t)n * sizeof *got) != 0) {
				mismatch(c, "group %s index %llu: expected %s, got %s (status %s)", name,
					 (unsigned long long)index, fmt_ranks(a, sizeof a, want, n),
					 fmt_ranks(b, sizeof b, got,
						   st == LLMP_OK && got_n <= cap ? got_n : 0),
					 llmp_strerror(st));
				ok = false;
			}
		}
	}

	/* Coordinates: the position along each single dimension. */
	for (size_t i = 0; i < NELEMS(ranks); i++) {
		uint32_t r = ranks[i], co[LLMP_NAXES], n, size;
		uint64_t index, count;

		st = llmp_plan_coords(plan, r, co);
		if (st != LLMP_OK) {
			mismatch(c, "coords of rank %u: status %s", r, llmp_strerror(st));
			break;
		}
		for (unsigned ax = 0; ax < LLMP_NAXES; ax++) {
			uint32_t k = 0;

			reference_group_of(&ref, axis_group[ax], r, want, &n, &index, &count, &size);
			while (k < n && want[k] != r)
				k++;
			if (co[ax] != k) {
				mismatch(c, "rank %u: %s coordinate %u, but it is member %u of its %s group",
					 r, axis_label[ax], co[ax], k, kinds[axis_group[ax]].name);
				break;
			}
		}
	}
	free(want);
	free(got);
	llmp_plan_destroy(plan);
	reference_free(&ref);
}

static void test_large_world_spot_check(void **state)
{
	static const struct layout layouts[] = {
		{ .world = 131072, .tp = 8, .pp = 16, .cp = 4, .ep = 8 },
		/* pp before dp, ep folded onto cp so that expert-dp = dp */
		{ .world = 131072, .tp = 8, .pp = 16, .cp = 4, .ep = 4, .order = "tp-cp-ep-pp-dp" },
		/* pp first, expert-tp differing from tp */
		{ .world = 131072,
		  .tp = 8,
		  .pp = 16,
		  .cp = 4,
		  .ep = 16,
		  .etp = 2,
		  .order = "pp-dp-cp-ep-tp" },
	};
	struct check c = { .failures = 0 };

	(void)state;
	for (size_t i = 0; i < NELEMS(layouts); i++)
		spot_check_layout(&c, &layouts[i]);
	end_check(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference_reproduces_worked_example),
		cmocka_unit_test(test_group_names),
		cmocka_unit_test(test_worked_example_default_order),
		cmocka_unit_test(test_worked_example_pp_before_dp),
		cmocka_unit_test(test_sweep_default_order),
		cmocka_unit_test(test_sweep_pp_before_dp),
		cmocka_unit_test(test_sweep_other_orders),
		cmocka_unit_test(test_sweep_partial_orders),
		cmocka_unit_test(test_rejected_layouts),
		cmocka_unit_test(test_large_world_spot_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
