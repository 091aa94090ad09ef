/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_json.c - the JSON layout document (llmp_plan_write_json): whole
 * documents for small layouts, written out by hand; the one-rank view; a
 * document larger than the writer's internal buffer; write errors; bad ranks.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <llmp/llmp_json.h>

/* Parse and fit, expecting success. */
static llmp_plan *plan_of(const char *text, uint32_t world, uint32_t per_node)
{
	char msg[LLMP_MSG_MAX] = "";
	llmp_spec spec;
	llmp_plan *plan = NULL;

	if (llmp_spec_parse(text, &spec, msg, sizeof msg) != LLMP_OK ||
	    llmp_plan_create(&spec, world, per_node, &plan, msg, sizeof msg) != LLMP_OK)
		fail_msg("'%s' on %u: %s", text, world, msg);
	return plan;
}

/* The document for rank (or LLMP_JSON_ALL_RANKS), as a malloc'd string. */
static char *json_of(const llmp_plan *plan, uint32_t rank, llmp_status want)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(llmp_plan_write_json(plan, rank, f), want);
	assert_int_equal(fclose(f), 0);
	assert_non_null(text);
	assert_int_equal(strlen(text), len); /* no NUL inside */
	return text;
}

static void assert_text_equal(const char *got, const char *want)
{
	if (strcmp(got, want) == 0)
		return;
	size_t i = 0;
	while (got[i] && got[i] == want[i])
		i++;
	fail_msg("documents differ at byte %zu:\n got: ...%.60s\nwant: ...%.60s\nfull document:\n%s", i,
		 got + (i > 20 ? i - 20 : 0), want + (i > 20 ? i - 20 : 0), got);
}

/*
 * World 4, tp=2, default order tp-cp-ep-dp-pp: rank = tp + 2*dp, dp = 4/2 = 2.
 * Expert grid: etp = tp = 2, ep = 1, expert-dp = 4/(2*1*1) = 2.
 * tp groups vary tp: {0,1} {2,3}; dp groups vary dp: {0,2} {1,3};
 * pp, cp, ep have size 1: every rank alone; a pp group of one rank gives an
 * embedding and a position-embedding group of that rank.
 */
static void full_document_tp2(void **state)
{
	(void)state;
	llmp_plan *plan = plan_of("tp=2", 4, 0);
	char *got = json_of(plan, LLMP_JSON_ALL_RANKS, LLMP_OK);
	const char *want = "{\"version\":1,\"world\":4,\"order\":\"tp-cp-ep-dp-pp\",\"spec\":\"tp=2\","
			   "\"sizes\":{\"tp\":2,\"pp\":1,\"cp\":1,\"dp\":2,\"ep\":1,\"expert-tp\":2,"
			   "\"expert-dp\":2,\"vpp\":1},\"warnings\":[],\"groups\":{\"tp\":[[0,1],[2,3]],"
			   "\"pp\":[[0],[1],[2],[3]],\"cp\":[[0],[1],[2],[3]],\"dp\":[[0,2],[1,3]],"
			   "\"ep\":[[0],[1],[2],[3]],\"dp-cp\":[[0,2],[1,3]],\"tp-cp\":[[0,1],[2,3]],"
			   "\"tp-pp\":[[0,1],[2,3]],\"tp-dp\":[[0,1,2,3]],\"tp-dp-cp\":[[0,1,2,3]],"
			   "\"expert-tp\":[[0,1],[2,3]],\"expert-dp\":[[0,2],[1,3]],\"tp-ep\":[[0,1],[2,3]],"
			   "\"tp-ep-pp\":[[0,1],[2,3]],\"embedding\":[[0],[1],[2],[3]],"
			   "\"position-embedding\":[[0],[1],[2],[3]]}}\n";
	assert_text_equal(got, want);
	free(got);
	llmp_plan_destroy(plan);
}

/*
 * World 4, tp=2, order=dp-tp: dp varies fastest, rank = dp + 2*tp; the
 * order is completed as Megatron does (tp pp dp ep cp, those not named):
 * dp-tp-pp-ep-cp. tp groups {0,2} {1,3}, dp groups {0,1} {2,3}.
 */
static void full_document_custom_order(void **state)
{
	(void)state;
	llmp_plan *plan = plan_of("tp=2,order=dp-tp", 4, 0);
	char *got = json_of(plan, LLMP_JSON_ALL_RANKS, LLMP_OK);
	const char *want = "{\"version\":1,\"world\":4,\"order\":\"dp-tp-pp-ep-cp\","
			   "\"spec\":\"tp=2,order=dp-tp\","
			   "\"sizes\":{\"tp\":2,\"pp\":1,\"cp\":1,\"dp\":2,\"ep\":1,\"expert-tp\":2,"
			   "\"expert-dp\":2,\"vpp\":1},\"warnings\":[],\"groups\":{\"tp\":[[0,2],[1,3]],"
			   "\"pp\":[[0],[1],[2],[3]],\"cp\":[[0],[1],[2],[3]],\"dp\":[[0,1],[2,3]],"
			   "\"ep\":[[0],[1],[2],[3]],\"dp-cp\":[[0,1],[2,3]],\"tp-cp\":[[0,2],[1,3]],"
			   "\"tp-pp\":[[0,2],[1,3]],\"tp-dp\":[[0,1,2,3]],\"tp-dp-cp\":[[0,1,2,3]],"
			   "\"expert-tp\":[[0,2],[1,3]],\"expert-dp\":[[0,1],[2,3]],\"tp-ep\":[[0,2],[1,3]],"
			   "\"tp-ep-pp\":[[0,2],[1,3]],\"embedding\":[[0],[1],[2],[3]],"
			   "\"position-embedding\":[[0],[1],[2],[3]]}}\n";
	assert_text_equal(got, want);
	free(got);
	llmp_plan_destroy(plan);
}

/* Rank 1 of world 4, tp=2: coords tp=1, dp=0 (1 = 1 + 2*0); expert-tp 1. */
static void rank_view_tp2(void **state)
{
	(void)state;
	llmp_plan *plan = plan_of("tp=2", 4, 0);
	char *got = json_of(plan, 1, LLMP_OK);
	const char *want = "{\"version\":1,\"world\":4,\"order\":\"tp-cp-ep-dp-pp\",\"spec\":\"tp=2\","
			   "\"sizes\":{\"tp\":2,\"pp\":1,\"cp\":1,\"dp\":2,\"ep\":1,\"expert-tp\":2,"
			   "\"expert-dp\":2,\"vpp\":1},\"warnings\":[],\"rank\":1,"
			   "\"coords\":{\"tp\":1,\"cp\":0,\"ep\":0,\"dp\":0,\"pp\":0,\"expert-tp\":1,"
			   "\"expert-dp\":0},\"groups\":{\"tp\":[[0,1]],\"pp\":[[1]],\"cp\":[[1]],"
			   "\"dp\":[[1,3]],\"ep\":[[1]],\"dp-cp\":[[1,3]],\"tp-cp\":[[0,1]],"
			   "\"tp-pp\":[[0,1]],\"tp-dp\":[[0,1,2,3]],\"tp-dp-cp\":[[0,1,2,3]],"
			   "\"expert-tp\":[[0,1]],\"expert-dp\":[[1,3]],\"tp-ep\":[[0,1]],"
			   "\"tp-ep-pp\":[[0,1]],\"embedding\":[[1]],\"position-embedding\":[[1]]}}\n";
	assert_text_equal(got, want);
	free(got);
	llmp_plan_destroy(plan);
}

/*
 * World 4, pp=2: dp = 2, rank = dp + 2*pp. Rank 3 is dp=1 on the last stage:
 * its pipeline is {1,3}, which is also its embedding group (first and last
 * stage); the position embedding lives on the first stage only, so rank 3 is
 * in no position-embedding group: an empty list.
 */
static void rank_view_last_stage(void **state)
{
	(void)state;
	llmp_plan *plan = plan_of("pp=2", 4, 0);
	char *got = json_of(plan, 3, LLMP_OK);
	const char *want = "{\"version\":1,\"world\":4,\"order\":\"tp-cp-ep-dp-pp\",\"spec\":\"pp=2\","
			   "\"sizes\":{\"tp\":1,\"pp\":2,\"cp\":1,\"dp\":2,\"ep\":1,\"expert-tp\":1,"
			   "\"expert-dp\":2,\"vpp\":1},\"warnings\":[],\"rank\":3,"
			   "\"coords\":{\"tp\":0,\"cp\":0,\"ep\":0,\"dp\":1,\"pp\":1,\"expert-tp\":0,"
			   "\"expert-dp\":1},\"groups\":{\"tp\":[[3]],\"pp\":[[1,3]],\"cp\":[[3]],"
			   "\"dp\":[[2,3]],\"ep\":[[3]],\"dp-cp\":[[2,3]],\"tp-cp\":[[3]],\"tp-pp\":[[1,3]],"
			   "\"tp-dp\":[[2,3]],\"tp-dp-cp\":[[2,3]],\"expert-tp\":[[3]],\"expert-dp\":[[2,3]],"
			   "\"tp-ep\":[[3]],\"tp-ep-pp\":[[1,3]],\"embedding\":[[1,3]],"
			   "\"position-embedding\":[]}}\n";
	assert_text_equal(got, want);
	free(got);
	llmp_plan_destroy(plan);
}

/* World 3, pp=3, vpp=2: rank 1 is a middle stage, with no embedding at all. */
static void rank_view_middle_stage(void **state)
{
	(void)state;
	llmp_plan *plan = plan_of("pp=3,vpp=2", 3, 0);
	char *got = json_of(plan, 1, LLMP_OK);
	const char *want = "{\"version\":1,\"world\":3,\"order\":\"tp-cp-ep-dp-pp\",\"spec\":\"pp=3,vpp=2\","
			   "\"sizes\":{\"tp\":1,\"pp\":3,\"cp\":1,\"dp\":1,\"ep\":1,\"expert-tp\":1,"
			   "\"expert-dp\":1,\"vpp\":2},\"warnings\":[],\"rank\":1,"
			   "\"coords\":{\"tp\":0,\"cp\":0,\"ep\":0,\"dp\":0,\"pp\":1,\"expert-tp\":0,"
			   "\"expert-dp\":0},\"groups\":{\"tp\":[[1]],\"pp\":[[0,1,2]],\"cp\":[[1]],"
			   "\"dp\":[[1]],\"ep\":[[1]],\"dp-cp\":[[1]],\"tp-cp\":[[1]],\"tp-pp\":[[0,1,2]],"
			   "\"tp-dp\":[[1]],\"tp-dp-cp\":[[1]],\"expert-tp\":[[1]],\"expert-dp\":[[1]],"
			   "\"tp-ep\":[[1]],\"tp-ep-pp\":[[0,1,2]],\"embedding\":[],\"position-embedding\":[]"
			   "}}\n";
	assert_text_equal(got, want);
	free(got);
	llmp_plan_destroy(plan);
}

/* Append to a growing string. */
struct str {
	char *p;
	size_t len, cap;
};

static void add(struct str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct str *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	assert_true(n >= 0);
	if (s->len + (size_t)n + 1 > s->cap) {
		s->cap = (s->len + (size_t)n + 1) * 2;
		s->p = realloc(s->p, s->cap);
		assert_non_null(s->p);
	}
	va_start(ap, fmt);
	vsnprintf(s->p + s->len, s->cap - s->len, fmt, ap);
	va_end(ap);
	s->len += (size_t)n;
}

/*
 * The default layout on W ranks: every size 1 but dp = expert-dp = W. Kinds
 * that span dp are one group of every rank; all others are single ranks.
 * At W = 20000 the document is far larger than the writer's 64 KiB buffer.
 */
static void large_document(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		int all; /* 1: one group of all ranks; 0: one group per rank */
	} kinds[] = {
		{ "tp", 0 },    { "pp", 0 },       { "cp", 0 },        { "dp", 1 },
		{ "ep", 0 },    { "dp-cp", 1 },    { "tp-cp", 0 },     { "tp-pp", 0 },
		{ "tp-dp", 1 }, { "tp-dp-cp", 1 }, { "expert-tp", 0 }, { "expert-dp", 1 },
		{ "tp-ep", 0 }, { "tp-ep-pp", 0 }, { "embedding", 0 }, { "position-embedding", 0 },
	};
	const uint32_t W = 20000;
	char msg[LLMP_MSG_MAX] = "";
	llmp_spec spec;
	llmp_plan *plan = NULL;

	llmp_spec_init(&spec);
	assert_int_equal(llmp_plan_create(&spec, W, 0, &plan, msg, sizeof msg), LLMP_OK);

	struct str want = { 0 };
	add(&want,
	    "{\"version\":1,\"world\":%u,\"order\":\"tp-cp-ep-dp-pp\",\"spec\":\"\","
	    "\"sizes\":{\"tp\":1,\"pp\":1,\"cp\":1,\"dp\":%u,\"ep\":1,\"expert-tp\":1,"
	    "\"expert-dp\":%u,\"vpp\":1},\"warnings\":[],\"groups\":{",
	    W, W, W);
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		add(&want, "%s\"%s\":[", k ? "," : "", kinds[k].name);
		if (kinds[k].all) {
			add(&want, "[");
			for (uint32_t r = 0; r < W; r++)
				add(&want, r ? ",%u" : "%u", r);
			add(&want, "]");
		} else {
			for (uint32_t r = 0; r < W; r++)
				add(&want, r ? ",[%u]" : "[%u]", r);
		}
		add(&want, "]");
	}
	add(&want, "}}\n");
	assert_true(want.len > 4 * 65536);

	char *got = json_of(plan, LLMP_JSON_ALL_RANKS, LLMP_OK);
	assert_text_equal(got, want.p);
	free(got);
	free(want.p);
	llmp_plan_destroy(plan);
}

/* Warnings go into the document as strings. */
static void warnings_in_document(void **state)
{
	(void)state;
	/* tp=4 on nodes of 2 tasks: every tp group spans two nodes. */
	llmp_plan *plan = plan_of("tp=4", 8, 2);
	assert_int_equal(llmp_plan_warning_count(plan), 1);
	const char *w = llmp_plan_warning(plan, 0);
	assert_non_null(w);
	assert_non_null(strstr(w, "tp"));

	char *got = json_of(plan, LLMP_JSON_ALL_RANKS, LLMP_OK);
	char expect[LLMP_MSG_MAX + 32];
	snprintf(expect, sizeof expect, "\"warnings\":[\"%s\"],\"groups\":{", w);
	if (!strstr(got, expect))
		fail_msg("document lacks %s:\n%s", expect, got);
	/* Warning text must need no escaping to stay valid JSON. */
	for (const char *p = w; *p; p++)
		assert_true(*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20);
	free(got);

	/* The rank view carries them too. */
	got = json_of(plan, 5, LLMP_OK);
	snprintf(expect, sizeof expect, "\"warnings\":[\"%s\"],\"rank\":5,", w);
	if (!strstr(got, expect))
		fail_msg("document lacks %s:\n%s", expect, got);
	free(got);
	llmp_plan_destroy(plan);
}

/* A stream that cannot be written: LLMP_ERR_IO, never success. */
static void write_error_read_only_stream(void **state)
{
	(void)state;
	llmp_plan *plan = plan_of("tp=2", 4, 0);
	FILE *f = fopen("/dev/null", "r");
	assert_non_null(f);
	assert_int_equal(llmp_plan_write_json(plan, LLMP_JSON_ALL_RANKS, f), LLMP_ERR_IO);
	fclose(f);
	f = fopen("/dev/null", "r");
	assert_non_null(f);
	assert_int_equal(llmp_plan_write_json(plan, 2, f), LLMP_ERR_IO);
	fclose(f);
	llmp_plan_destroy(plan);
}

static void write_error_full_device(void **state)
{
	(void)state;
	FILE *f = fopen("/dev/full", "w");
	if (!f)
		skip();
	llmp_plan *plan = plan_of("tp=2", 4, 0);
	assert_int_equal(llmp_plan_write_json(plan, LLMP_JSON_ALL_RANKS, f), LLMP_ERR_IO);
	fclose(f);
	llmp_plan_destroy(plan);

	/* A large document fails too (errors in the middle, not just at the end). */
	f = fopen("/dev/full", "w");
	assert_non_null(f);
	plan = plan_of("tp=2", 100000, 0);
	assert_int_equal(llmp_plan_write_json(plan, LLMP_JSON_ALL_RANKS, f), LLMP_ERR_IO);
	fclose(f);
	llmp_plan_destroy(plan);
}

/* A rank outside the world: LLMP_ERR_RANGE and nothing written. */
/*
 * A pipeline whose layers are split unevenly (mixed GPU kinds): "stage_layers"
 * after "warnings", pp entries; without a list the document is the plain one.
 * World 4, pp=2: stage 0 ranks 0-1, stage 1 ranks 2-3.
 */
static void stage_layers_in_document(void **state)
{
	(void)state;
	llmp_plan *plan = plan_of("pp=2", 4, 0);
	const uint32_t layers[2] = { 25, 55 };
	char *text = NULL, *plain = json_of(plan, LLMP_JSON_ALL_RANKS, LLMP_OK), *again = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(llmp_plan_write_json_stages(plan, LLMP_JSON_ALL_RANKS, layers, f), LLMP_OK);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(text, "\"warnings\":[],\"stage_layers\":[25,55],\"groups\":{"));
	/* Take the key out: the rest is the plain document, byte for byte. */
	const char *key = ",\"stage_layers\":[25,55]";
	char *at = strstr(text, key);
	memmove(at, at + strlen(key), strlen(at + strlen(key)) + 1);
	assert_text_equal(text, plain);
	f = open_memstream(&again, &len);
	assert_non_null(f);
	assert_int_equal(llmp_plan_write_json_stages(plan, 1, NULL, f), LLMP_OK);
	assert_int_equal(fclose(f), 0);
	char *rank1 = json_of(plan, 1, LLMP_OK);
	assert_text_equal(again, rank1);
	free(text);
	free(plain);
	free(again);
	free(rank1);
	llmp_plan_destroy(plan);
}

static void bad_rank(void **state)
{
	(void)state;
	llmp_plan *plan = plan_of("tp=2", 4, 0);
	const uint32_t bad[] = { 4, 5, 1000, LLMP_JSON_ALL_RANKS - 1 };

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *got = json_of(plan, bad[i], LLMP_ERR_RANGE);
		assert_string_equal(got, "");
		free(got);
	}
	/* The last rank is fine. */
	char *got = json_of(plan, 3, LLMP_OK);
	assert_non_null(strstr(got, "\"rank\":3,"));
	free(got);
	llmp_plan_destroy(plan);
}

static void null_arguments(void **state)
{
	(void)state;
	llmp_plan *plan = plan_of("tp=2", 4, 0);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(llmp_plan_write_json(NULL, LLMP_JSON_ALL_RANKS, f), LLMP_ERR_ARG);
	assert_int_equal(llmp_plan_write_json(plan, LLMP_JSON_ALL_RANKS, NULL), LLMP_ERR_ARG);
	fclose(f);
	assert_int_equal(len, 0);
	free(text);
	llmp_plan_destroy(plan);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(full_document_tp2),       cmocka_unit_test(full_document_custom_order),
		cmocka_unit_test(rank_view_tp2),           cmocka_unit_test(rank_view_last_stage),
		cmocka_unit_test(rank_view_middle_stage),  cmocka_unit_test(large_document),
		cmocka_unit_test(warnings_in_document),    cmocka_unit_test(write_error_read_only_stream),
		cmocka_unit_test(write_error_full_device), cmocka_unit_test(bad_rank),
		cmocka_unit_test(null_arguments),          cmocka_unit_test(stage_layers_in_document),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
