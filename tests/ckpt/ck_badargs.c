/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ck_badargs.c - what the checkpoint API refuses.
 *
 * badargs: every call with a bad argument returns an error, with a message
 * naming what was wrong, and crashes nothing; the handle still works after.
 * Run alone (a PMIx singleton) or under srun, where every rank makes the
 * same calls, so the collective ones (save, load) stay matched.
 *
 * mismatch: ranks register things that do not fit together; the save fails
 * on every rank with LLMP_ERR_MISMATCH naming the tensor. Then loads of a
 * good checkpoint with another dtype, another shape, or a tensor it lacks.
 */
#define _POSIX_C_SOURCE 200809L

#include "ck_check.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define WORDS(...)                              \
	((const char *const[]){ __VA_ARGS__ }), \
		(sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(const char *))
#define NOWORDS NULL, 0

static void join(char *buf, size_t len, const char *root, const char *leaf)
{
	snprintf(buf, len, "%s/%s", root, leaf);
}

/* mkdir -p; errors show up as the checks that follow fail. */
static void mkdirs(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(buf, 0755);
			*p = '/';
		}
	mkdir(buf, 0755);
}

static bool exists(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0;
}

/* A float32 tensor of n elements, 2 per rank, at rank*2: the whole of it over the world. */
static llmp_status reg_split(llmp_ckpt *ck, const char *name, llmp_dtype dtype, uint32_t rank, uint32_t world,
			     void *data)
{
	uint64_t g = 2 * (uint64_t)world, off = 2 * (uint64_t)rank, sh = 2;
	return llmp_ckpt_register(ck, name, dtype, 1, &g, &off, &sh, data);
}

int cc_cmd_badargs(const cc_args *args)
{
	llmp_ctx *ctx = NULL;
	llmp_status st = cc_init(args, &ctx);
	if (!report_expect(st == LLMP_OK, "llmp_init: %s: %s", llmp_strerror(st), llmp_errmsg(ctx))) {
		cc_finalize(args, ctx);
		return report_summary();
	}
	uint32_t rank = llmp_rank(ctx), world = llmp_world_size(ctx);
	char okroot[4096], empty[4096], missing[4096], afile[4096];
	join(okroot, sizeof okroot, args->root, "ok");
	join(empty, sizeof empty, args->root, "empty");
	join(missing, sizeof missing, args->root, "never-made");
	join(afile, sizeof afile, args->root, "a-file");
	mkdirs(empty);
	report_expect(exists(empty), "mkdir -p %s failed", empty);
	FILE *f = fopen(afile, "a");
	if (report_expect(f != NULL, "create %s: %s", afile, strerror(errno)))
		fclose(f);

	/* ---- open */
	llmp_ckpt *ck = (llmp_ckpt *)&ck; /* must be reset to NULL on failure */
	llmp_ckpt_opts o = { .root = okroot, .keep = 1 };
	st = llmp_ckpt_open(NULL, &o, &ck);
	cc_expect_fail(NULL, st, LLMP_ERR_ARG, "open with a NULL context", NOWORDS);
	report_expect(ck == NULL, "open with a NULL context left the handle set");
	st = llmp_ckpt_open(ctx, &o, NULL);
	cc_expect_fail(NULL, st, LLMP_ERR_ARG, "open with a NULL handle pointer", NOWORDS);
	st = llmp_ckpt_open(ctx, NULL, &ck);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "open with NULL options", WORDS("root"));
	llmp_ckpt_opts bad = { .root = NULL };
	st = llmp_ckpt_open(ctx, &bad, &ck);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "open with a NULL root", WORDS("root"));
	bad.root = "";
	st = llmp_ckpt_open(ctx, &bad, &ck);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "open with an empty root", WORDS("root"));
	report_expect(ck == NULL, "a failed open left the handle set");
	llmp_ckpt_close(NULL); /* accepted */
	/* The size a struct carries (doc/abi.md): under version 1's, or over this library's. */
	llmp_ckpt_opts sized = { .size = sizeof(size_t), .root = okroot };
	st = llmp_ckpt_open(ctx, &sized, &ck);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "open with opts.size 8", WORDS("llmp_ckpt_opts.size is 8"));
	sized.size = sizeof sized + 8;
	st = llmp_ckpt_open(ctx, &sized, &ck);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "open with opts.size past this library's",
		       WORDS("llmp_ckpt_opts.size", "newer llmp header"));
	report_expect(ck == NULL, "an open with a bad size left the handle set");

	st = llmp_ckpt_open(ctx, &o, &ck);
	if (!report_expect(st == LLMP_OK, "llmp_ckpt_open %s: %s", okroot, llmp_errmsg(ctx))) {
		cc_finalize(args, ctx);
		return report_summary();
	}
	/* Stats are written only as far as the size the caller says it has; 0 reads as version 1. */
	llmp_ckpt_stats stats = { .size = 4, .step = 77 };
	st = llmp_ckpt_get_stats(ck, &stats);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "get_stats with size 4", WORDS("llmp_ckpt_stats.size is 4"));
	report_expect(stats.step == 77, "a refused get_stats wrote step %" PRIu64, stats.step);
	stats.size = sizeof stats + 8;
	st = llmp_ckpt_get_stats(ck, &stats);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "get_stats with a size past this library's",
		       WORDS("llmp_ckpt_stats.size", "newer llmp header"));
	stats.size = 0;
	st = llmp_ckpt_get_stats(ck, &stats);
	report_expect(st == LLMP_OK && stats.size == 0 && stats.step == 0 && stats.alignment > 0,
		      "get_stats with size 0: %s, size %zu, step %" PRIu64 ", alignment %zu",
		      llmp_strerror(st), stats.size, stats.step, stats.alignment);

	/* ---- register */
	float data[64] = { 0 }, data2[64];
	uint64_t g1[LLMP_CKPT_MAX_DIMS + 1], o1[LLMP_CKPT_MAX_DIMS + 1], s1[LLMP_CKPT_MAX_DIMS + 1];
	for (int d = 0; d <= LLMP_CKPT_MAX_DIMS; d++) {
		g1[d] = 1;
		o1[d] = 0;
		s1[d] = 1;
	}
	g1[0] = s1[0] = 4;
	st = llmp_ckpt_register(NULL, "x", LLMP_FLOAT32, 1, g1, o1, s1, data);
	cc_expect_fail(NULL, st, LLMP_ERR_ARG, "register on a NULL handle", NOWORDS);

	char longname[201], name127[LLMP_CKPT_MAX_NAME + 1], name128[LLMP_CKPT_MAX_NAME + 2];
	memset(longname, 'n', 200);
	longname[200] = '\0';
	memset(name127, 'm', LLMP_CKPT_MAX_NAME);
	name127[LLMP_CKPT_MAX_NAME] = '\0';
	memset(name128, 'm', LLMP_CKPT_MAX_NAME + 1);
	name128[LLMP_CKPT_MAX_NAME + 1] = '\0';
	static const struct {
		const char *name, *word;
	} badnames[] = {
		{ "", "name" },
		{ "with space", "with space" },
		{ "/leading", "/leading" },
		{ "trailing/", "trailing/" },
		{ "a//b", "a//b" },
		{ ".", "name" },
		{ "tab\there", "name" },
		{ "caf\xc3\xa9", "name" },
	};
	st = llmp_ckpt_register(ck, NULL, LLMP_FLOAT32, 1, g1, o1, s1, data);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "register with a NULL name", WORDS("name"));
	for (size_t i = 0; i < sizeof badnames / sizeof badnames[0]; i++) {
		char what[96];
		snprintf(what, sizeof what, "register with the name '%s'", badnames[i].name);
		st = llmp_ckpt_register(ck, badnames[i].name, LLMP_FLOAT32, 1, g1, o1, s1, data);
		cc_expect_fail(ctx, st, LLMP_ERR_ARG, what, WORDS(badnames[i].word));
	}
	st = llmp_ckpt_register(ck, longname, LLMP_FLOAT32, 1, g1, o1, s1, data);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "register with a name of 200 characters", WORDS("nnnnnnnnnn"));
	st = llmp_ckpt_register(ck, name128, LLMP_FLOAT32, 1, g1, o1, s1, data);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "register with a name of 128 characters", WORDS("mmmmmmmmmm"));

	st = llmp_ckpt_register(ck, "bad/dtype", (llmp_dtype)LLMP_NDTYPES, 1, g1, o1, s1, data);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "register with dtype LLMP_NDTYPES",
		       WORDS("bad/dtype", "dtype"));
	st = llmp_ckpt_register(ck, "bad/dtype", (llmp_dtype)-1, 1, g1, o1, s1, data);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "register with dtype -1", WORDS("bad/dtype", "dtype"));
	st = llmp_ckpt_register(ck, "bad/ndim", LLMP_FLOAT32, 0, g1, o1, s1, data);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "register with ndim 0", WORDS("bad/ndim", "dimensions"));
	st = llmp_ckpt_register(ck, "bad/ndim", LLMP_FLOAT32, LLMP_CKPT_MAX_DIMS + 1, g1, o1, s1, data);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "register with ndim 9", WORDS("bad/ndim", "dimensions"));
	st = llmp_ckpt_register(ck, "bad/null", LLMP_FLOAT32, 1, NULL, o1, s1, data);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "register with a NULL global shape", WORDS("bad/null"));
	st = llmp_ckpt_register(ck, "bad/null", LLMP_FLOAT32, 1, g1, NULL, s1, data);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "register with a NULL offset", WORDS("bad/null"));
	st = llmp_ckpt_register(ck, "bad/null", LLMP_FLOAT32, 1, g1, o1, NULL, data);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "register with a NULL shape", WORDS("bad/null"));
	st = llmp_ckpt_register(ck, "bad/data", LLMP_FLOAT32, 1, g1, o1, s1, NULL);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "register with NULL data", WORDS("bad/data", "data"));

	/* slices outside the global shape: {global, offset, shape} in dimension 1 of 2 */
	static const uint64_t outside[][3] = {
		{ 4, 0, 5 },          { 4, 3, 2 },          { 4, 4, 1 },
		{ 4, 5, 0 },          { 4, 0, 0 },          { 0, 0, 1 },
		{ 4, UINT64_MAX, 2 }, { 4, 2, UINT64_MAX }, { UINT64_MAX, UINT64_MAX - 1, 2 },
	};
	for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
		uint64_t g[2] = { 2, outside[i][0] }, off[2] = { 0, outside[i][1] },
			 sh[2] = { 2, outside[i][2] };
		char what[128];
		snprintf(what, sizeof what,
			 "register dimension 1: offset %" PRIu64 " shape %" PRIu64 " of global %" PRIu64,
			 off[1], sh[1], g[1]);
		st = llmp_ckpt_register(ck, "bad/slice", LLMP_FLOAT32, 2, g, off, sh, data);
		cc_expect_fail(ctx, st, LLMP_ERR_RANGE, what, WORDS("bad/slice", "dimension 1"));
	}

	/* what is fine: a name of 127 characters, 8 dimensions; then a duplicate */
	/* memory of its own: registered tensors must not overlap (a load fills them in any order) */
	static uint8_t wide[4];
	st = llmp_ckpt_register(ck, name127, LLMP_UINT8, LLMP_CKPT_MAX_DIMS, g1, o1, s1, wide);
	report_expect(st == LLMP_OK, "register %d dimensions and a name of %d characters: %s: %s",
		      LLMP_CKPT_MAX_DIMS, LLMP_CKPT_MAX_NAME, cc_status_name(st), llmp_errmsg(ctx));
	/* "good": this rank's 2 elements, at global 2*rank, in data[0..1] */
	for (int i = 0; i < 2; i++)
		data[i] = (float)((2 * rank + (unsigned)i) * 3 + 1);
	st = reg_split(ck, "good", LLMP_FLOAT32, rank, world, data);
	report_expect(st == LLMP_OK, "register good: %s", llmp_errmsg(ctx));
	st = reg_split(ck, "good", LLMP_FLOAT32, rank, world, data2);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "register good twice", WORDS("good", "already registered"));

	/* ---- save and load: collective, every rank the same calls */
	char meta[] = "badargs meta", got[64];
	size_t metalen = 0;
	uint64_t loaded = 0;
	st = llmp_ckpt_save(NULL, 1, meta, sizeof meta);
	cc_expect_fail(NULL, st, LLMP_ERR_ARG, "save on a NULL handle", NOWORDS);
	st = llmp_ckpt_load(NULL, 1, &loaded, got, sizeof got, &metalen);
	cc_expect_fail(NULL, st, LLMP_ERR_ARG, "load on a NULL handle", NOWORDS);
	st = llmp_ckpt_save(ck, 1, NULL, 5);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "save with meta NULL and metalen 5", WORDS("meta"));
	st = llmp_ckpt_save(ck, LLMP_CKPT_NEWEST, meta, sizeof meta);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "save of step LLMP_CKPT_NEWEST", WORDS("reserved"));
	st = llmp_ckpt_load(ck, LLMP_CKPT_NEWEST, &loaded, got, sizeof got, &metalen);
	cc_expect_fail(ctx, st, LLMP_ERR_IO, "load from a root never written", WORDS(okroot));

	/* a good save, then the same step again and a step that is not there */
	st = llmp_ckpt_save(ck, 7, meta, sizeof meta);
	report_expect(st == LLMP_OK, "save step 7: %s: %s", cc_status_name(st), llmp_errmsg(ctx));
	st = llmp_ckpt_save(ck, 7, meta, sizeof meta);
	cc_expect_fail(ctx, st, LLMP_ERR_ARG, "save of step 7 again", WORDS("step-7", "exists"));
	st = llmp_ckpt_load(ck, 8, &loaded, got, sizeof got, &metalen);
	cc_expect_fail(ctx, st, LLMP_ERR_IO, "load of step 8, which was never saved",
		       WORDS(okroot, "step-8"));

	/* metadata larger than the buffer: truncated, *metalen the full size */
	memset(data, 0, sizeof data);
	memset(got, '#', sizeof got);
	loaded = 0;
	st = llmp_ckpt_load(ck, 7, &loaded, got, 4, &metalen);
	if (report_expect(st == LLMP_OK, "load step 7 into 4 bytes of metadata: %s", llmp_errmsg(ctx))) {
		report_expect(loaded == 7, "loaded step %" PRIu64 ", expected 7", loaded);
		report_expect(metalen == sizeof meta, "metalen %zu, expected %zu", metalen, sizeof meta);
		report_expect(memcmp(got, meta, 4) == 0 && got[4] == '#',
			      "metadata not cut at 4 bytes: '%.8s'", got);
		bool same = true;
		for (int i = 0; i < 2; i++)
			same &= data[i] == (float)((2 * rank + (unsigned)i) * 3 + 1);
		report_expect(same, "good: values not restored");
	}
	st = llmp_ckpt_load(ck, LLMP_CKPT_NEWEST, NULL, NULL, 0, NULL);
	report_expect(st == LLMP_OK, "load the newest with every output NULL: %s", llmp_errmsg(ctx));

	/* keep=1 and a lower step than the newest (a job gone back): the one just saved stays */
	st = llmp_ckpt_save(ck, 0, NULL, 0);
	report_expect(st == LLMP_OK, "save step 0 with no metadata: %s: %s", cc_status_name(st),
		      llmp_errmsg(ctx));
	if (rank == 0) {
		char p0[4200], p7[4200];
		snprintf(p0, sizeof p0, "%s/step-0", okroot);
		snprintf(p7, sizeof p7, "%s/step-7", okroot);
		report_expect(exists(p0), "keep=1: step 0, just saved, was removed");
		report_expect(!exists(p7), "keep=1: step 7 is still there after step 0 was saved");
	}
	llmp_ckpt_close(ck);

	/* ---- other roots: empty, missing, a regular file */
	const char *roots[] = { empty, missing };
	for (int i = 0; i < 2; i++) {
		llmp_ckpt_opts eo = { .root = roots[i] };
		ck = NULL;
		st = llmp_ckpt_open(ctx, &eo, &ck);
		if (!report_expect(st == LLMP_OK, "open %s: %s", roots[i], llmp_errmsg(ctx)))
			continue;
		st = reg_split(ck, "good", LLMP_FLOAT32, rank, world, data);
		report_expect(st == LLMP_OK, "register good: %s", llmp_errmsg(ctx));
		st = llmp_ckpt_load(ck, LLMP_CKPT_NEWEST, &loaded, got, sizeof got, &metalen);
		cc_expect_fail(ctx, st, LLMP_ERR_IO,
			       i ? "load from a missing root" : "load from an empty root", WORDS(roots[i]));
		st = llmp_ckpt_load(ck, 3, &loaded, got, sizeof got, &metalen);
		cc_expect_fail(ctx, st, LLMP_ERR_IO, "load of step 3 from a root without it",
			       WORDS(roots[i], "step-3"));
		llmp_ckpt_close(ck);
	}
	report_expect(!exists(missing), "a load created %s", missing);

	llmp_ckpt_opts fo = { .root = afile };
	ck = NULL;
	st = llmp_ckpt_open(ctx, &fo, &ck);
	if (report_expect(st == LLMP_OK, "open %s: %s", afile, llmp_errmsg(ctx))) {
		st = reg_split(ck, "good", LLMP_FLOAT32, rank, world, data);
		report_expect(st == LLMP_OK, "register good: %s", llmp_errmsg(ctx));
		st = llmp_ckpt_save(ck, 1, meta, sizeof meta);
		cc_expect_fail(ctx, st, LLMP_ERR_IO, "save under a root that is a regular file",
			       WORDS(afile));
		st = llmp_ckpt_load(ck, LLMP_CKPT_NEWEST, &loaded, got, sizeof got, &metalen);
		cc_expect_fail(ctx, st, LLMP_ERR_IO, "load from a root that is a regular file", WORDS(afile));
		llmp_ckpt_close(ck);
	}

	/* ---- after all that, the world and a fresh handle still work */
	llmp_ckpt_opts ao = { .root = okroot, .keep = 1 };
	ck = NULL;
	st = llmp_ckpt_open(ctx, &ao, &ck);
	if (report_expect(st == LLMP_OK, "open %s again: %s", okroot, llmp_errmsg(ctx))) {
		for (int i = 0; i < 2; i++)
			data[i] = (float)((2 * rank + (unsigned)i) * 5) - 7.0f;
		st = reg_split(ck, "good", LLMP_FLOAT32, rank, world, data);
		report_expect(st == LLMP_OK, "register good: %s", llmp_errmsg(ctx));
		st = llmp_ckpt_save(ck, 9, "after", 5);
		report_expect(st == LLMP_OK, "save step 9 after the failures: %s: %s", cc_status_name(st),
			      llmp_errmsg(ctx));
		memset(data, 0, sizeof data);
		metalen = 0;
		st = llmp_ckpt_load(ck, LLMP_CKPT_NEWEST, &loaded, got, sizeof got, &metalen);
		if (report_expect(st == LLMP_OK, "load after the failures: %s", llmp_errmsg(ctx))) {
			report_expect(loaded == 9 && metalen == 5 && memcmp(got, "after", 5) == 0,
				      "loaded step %" PRIu64
				      " with %zu bytes of metadata, expected step 9 'after'",
				      loaded, metalen);
			report_expect(data[0] == (float)(2 * rank * 5) - 7.0f &&
					      data[1] == (float)((2 * rank + 1) * 5) - 7.0f,
				      "good: values after the reload");
		}
		/* keep=1: 9 is the only complete step left; 7 and 0 went */
		char p[4200];
		snprintf(p, sizeof p, "%s/step-7", okroot);
		report_expect(!exists(p), "keep=1, yet %s is still there", p);
		llmp_ckpt_close(ck);
	}
	cc_finalize(args, ctx);
	return report_summary();
}

/* ------------------------------------------------------------- mismatch */

/* Save step 1 with what register_fn registered: must fail everywhere naming `tensor`. */
static void save_must_fail(llmp_ctx *ctx, const cc_args *args, const char *what, const char *tensor,
			   const char *word,
			   llmp_status (*register_fn)(llmp_ckpt *, uint32_t, uint32_t, float *))
{
	llmp_ckpt *ck = NULL;
	llmp_ckpt_opts o = { .root = args->root };
	float data[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	llmp_status st = llmp_ckpt_open(ctx, &o, &ck);
	if (!report_expect(st == LLMP_OK, "open: %s", llmp_errmsg(ctx)))
		return;
	st = register_fn(ck, llmp_rank(ctx), llmp_world_size(ctx), data);
	if (report_expect(st == LLMP_OK, "%s: register: %s", what, llmp_errmsg(ctx))) {
		st = llmp_ckpt_save(ck, 1, "m", 1);
		if (word)
			cc_expect_fail(ctx, st, LLMP_ERR_MISMATCH, what, WORDS(tensor, word));
		else
			cc_expect_fail(ctx, st, LLMP_ERR_MISMATCH, what, WORDS(tensor));
		char p[4200];
		snprintf(p, sizeof p, "%s/step-1", args->root);
		report_expect(!exists(p), "%s: %s exists after a failed save", what, p);
	}
	llmp_ckpt_close(ck);
}

static llmp_status reg_ok(llmp_ckpt *ck, uint32_t rank, uint32_t world, float *data)
{
	return reg_split(ck, "mm/ok", LLMP_FLOAT32, rank, world, data);
}

/* The last rank says the tensor has one more element. */
static llmp_status reg_shape(llmp_ckpt *ck, uint32_t rank, uint32_t world, float *data)
{
	uint64_t g = 2 * (uint64_t)world + (rank == world - 1), off = 2 * (uint64_t)rank, sh = 2;
	llmp_status st = reg_ok(ck, rank, world, data);
	return st ? st : llmp_ckpt_register(ck, "mm/shape", LLMP_FLOAT32, 1, &g, &off, &sh, data + 4);
}

/* The last rank registers float64. */
static llmp_status reg_dtype(llmp_ckpt *ck, uint32_t rank, uint32_t world, float *data)
{
	llmp_status st = reg_ok(ck, rank, world, data);
	return st ? st
		  : reg_split(ck, "mm/dtype", rank == world - 1 ? LLMP_FLOAT64 : LLMP_FLOAT32, rank, world,
			      data + 4);
}

/* Every rank one element of its two: half the tensor is a hole. */
static llmp_status reg_hole(llmp_ckpt *ck, uint32_t rank, uint32_t world, float *data)
{
	uint64_t g = 2 * (uint64_t)world, off = 2 * (uint64_t)rank, sh = 1;
	llmp_status st = reg_ok(ck, rank, world, data);
	return st ? st : llmp_ckpt_register(ck, "mm/hole", LLMP_FLOAT32, 1, &g, &off, &sh, data + 4);
}

/* Rank r holds [2r, 2r+3) of 2*world+1: each overlaps the next, and together they cover it. */
static llmp_status reg_overlap(llmp_ckpt *ck, uint32_t rank, uint32_t world, float *data)
{
	uint64_t g = 2 * (uint64_t)world + 1, off = 2 * (uint64_t)rank, sh = 3;
	llmp_status st = reg_ok(ck, rank, world, data);
	return st ? st : llmp_ckpt_register(ck, "mm/overlap", LLMP_FLOAT32, 1, &g, &off, &sh, data + 4);
}

/* Only rank 0 registers a tensor, and only its own part of it. */
static llmp_status reg_lonely(llmp_ckpt *ck, uint32_t rank, uint32_t world, float *data)
{
	llmp_status st = reg_ok(ck, rank, world, data);
	return st || rank != 0 ? st : reg_split(ck, "mm/lonely", LLMP_FLOAT32, rank, world, data + 4);
}

struct load_case {
	const char *what;
	const char *name; /* the tensor registered, besides ld/b */
	llmp_dtype dtype;
	uint64_t extra;   /* elements added to its global shape */
	const char *word; /* what the message must hold besides the name and the directory */
	bool ok;
};

int cc_cmd_mismatch(const cc_args *args)
{
	llmp_ctx *ctx = NULL;
	llmp_status st = cc_init(args, &ctx);
	if (!report_expect(st == LLMP_OK, "llmp_init: %s: %s", llmp_strerror(st), llmp_errmsg(ctx))) {
		cc_finalize(args, ctx);
		return report_summary();
	}
	uint32_t rank = llmp_rank(ctx), world = llmp_world_size(ctx);
	if (!report_expect(world >= 2, "mismatch needs 2 or more ranks, not %u", world)) {
		cc_finalize(args, ctx);
		return report_summary();
	}
	save_must_fail(ctx, args, "save: another global shape on the last rank", "mm/shape", NULL, reg_shape);
	save_must_fail(ctx, args, "save: another dtype on the last rank", "mm/dtype", NULL, reg_dtype);
	save_must_fail(ctx, args, "save: slices that leave a hole", "mm/hole", "cover", reg_hole);
	save_must_fail(ctx, args, "save: slices that overlap", "mm/overlap", "overlap", reg_overlap);
	save_must_fail(ctx, args, "save: a tensor only rank 0 registered", "mm/lonely", "cover", reg_lonely);

	/* A good checkpoint: ld/a split over the world, ld/b replicated. */
	float a[4], b[3] = { 7, 8, 9 };
	uint64_t bg = 3, bo = 0;
	llmp_ckpt *ck = NULL;
	llmp_ckpt_opts o = { .root = args->root };
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/step-2", args->root);
	a[0] = (float)(2 * rank);
	a[1] = (float)(2 * rank + 1);
	st = llmp_ckpt_open(ctx, &o, &ck);
	if (report_expect(st == LLMP_OK, "open: %s", llmp_errmsg(ctx))) {
		st = reg_split(ck, "ld/a", LLMP_FLOAT32, rank, world, a);
		if (st == LLMP_OK)
			st = llmp_ckpt_register(ck, "ld/b", LLMP_FLOAT32, 1, &bg, &bo, &bg, b);
		if (st == LLMP_OK)
			st = llmp_ckpt_save(ck, 2, "good", 4);
		report_expect(st == LLMP_OK, "save of a good step 2: %s: %s", cc_status_name(st),
			      llmp_errmsg(ctx));
		llmp_ckpt_close(ck);
	}

	static const struct load_case cases[] = {
		{ "load: ld/a registered as float64", "ld/a", LLMP_FLOAT64, 0, "float32", false },
		{ "load: ld/a registered with another global shape", "ld/a", LLMP_FLOAT32, 2, "shape",
		  false },
		{ "load: a tensor the checkpoint lacks", "ld/missing", LLMP_FLOAT32, 0, "not in", false },
		{ "load: ld/a as saved", "ld/a", LLMP_FLOAT32, 0, NULL, true },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct load_case *c = &cases[i];
		double buf[4] = { -1, -1, -1, -1 };
		float bb[3] = { 0, 0, 0 };
		uint64_t g = 2 * (uint64_t)world + c->extra, off = 2 * (uint64_t)rank, sh = 2, loaded = 0;
		ck = NULL;
		st = llmp_ckpt_open(ctx, &o, &ck);
		if (!report_expect(st == LLMP_OK, "open: %s", llmp_errmsg(ctx)))
			continue;
		st = llmp_ckpt_register(ck, "ld/b", LLMP_FLOAT32, 1, &bg, &bo, &bg, bb);
		if (st == LLMP_OK)
			st = llmp_ckpt_register(ck, c->name, c->dtype, 1, &g, &off, &sh, buf);
		if (!report_expect(st == LLMP_OK, "%s: register: %s", c->what, llmp_errmsg(ctx))) {
			llmp_ckpt_close(ck);
			continue;
		}
		st = llmp_ckpt_load(ck, LLMP_CKPT_NEWEST, &loaded, NULL, 0, NULL);
		if (c->ok) {
			const float *fa = (const float *)buf;
			if (report_expect(st == LLMP_OK, "%s: %s: %s", c->what, cc_status_name(st),
					  llmp_errmsg(ctx)))
				report_expect(loaded == 2 && fa[0] == (float)(2 * rank) &&
						      fa[1] == (float)(2 * rank + 1) && bb[0] == 7 &&
						      bb[2] == 9,
					      "%s: wrong values or step %" PRIu64, c->what, loaded);
		} else {
			cc_expect_fail(ctx, st, LLMP_ERR_MISMATCH, c->what, WORDS(c->name, dir, c->word));
		}
		llmp_ckpt_close(ck);
	}

	/* Only ld/b: a subset of what was saved loads. */
	ck = NULL;
	st = llmp_ckpt_open(ctx, &o, &ck);
	if (report_expect(st == LLMP_OK, "open: %s", llmp_errmsg(ctx))) {
		float bb[3] = { 0, 0, 0 };
		st = llmp_ckpt_register(ck, "ld/b", LLMP_FLOAT32, 1, &bg, &bo, &bg, bb);
		if (st == LLMP_OK)
			st = llmp_ckpt_load(ck, 2, NULL, NULL, 0, NULL);
		report_expect(st == LLMP_OK && bb[0] == 7 && bb[1] == 8 && bb[2] == 9,
			      "load of ld/b alone: %s: %s", cc_status_name(st), llmp_errmsg(ctx));
		llmp_ckpt_close(ck);
	}
	cc_finalize(args, ctx);
	return report_summary();
}
