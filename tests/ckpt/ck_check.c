/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ck_check.c - checkpoint tests run as the tasks of `srun --mpi=pmix` steps
 * (tests/ckpt.bats), or alone as a PMIx singleton.
 *
 *   ck_check save --root DIR [--parallel SPEC] --steps 100,200,300 [--keep N] [--big K]
 *                 [--files rank|node]
 *   ck_check load --root DIR [--parallel SPEC] [--step N] [--expect-step N] [--big K]
 *                 [--expect-fail LLMP_ERR_X --expect-msg WORDS...]
 *   ck_check badargs --root DIR
 *   ck_check mismatch --root DIR
 *
 * The model: tensors split along tp (rows, columns), along dp and tp, along
 * the world, and replicated everywhere, in every dtype. Each rank takes its
 * slice from the layout (llmp_layout + llmp_plan_coords), so a load under
 * another layout than the save reshards. Every value is a function of the
 * element's global index and of the step: a load checks both the bytes and
 * which checkpoint it got. Every rank prints "rank R: N checks, M wrong"
 * and exits 1 when something was wrong.
 */
#define _POSIX_C_SOURCE 200809L

#include "ck_check.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ reporting */

static const char *const status_names[] = {
	"LLMP_OK",
	"LLMP_ERR_SPEC",
	"LLMP_ERR_LAYOUT",
	"LLMP_ERR_RANGE",
	"LLMP_ERR_ARG",
	"LLMP_ERR_NOMEM",
	"LLMP_ERR_IO",
	"LLMP_ERR_WIREUP",
	"LLMP_ERR_MISMATCH",
	"LLMP_ERR_TRANSPORT",
	"LLMP_ERR_TIMEOUT",
	"LLMP_ERR_PEER",
	"LLMP_ERR_UNSUPPORTED",
	"LLMP_ERR_STATE",
};
#define NSTATUS (sizeof status_names / sizeof status_names[0])

const char *cc_status_name(llmp_status st)
{
	return (unsigned)st < NSTATUS ? status_names[st] : "LLMP_ERR_?";
}

int cc_status_from_name(const char *name)
{
	for (size_t i = 0; i < NSTATUS; i++)
		if (strcmp(name, status_names[i]) == 0 || strcmp(name, status_names[i] + 5) == 0 ||
		    (i > 0 && strcmp(name, status_names[i] + 9) == 0))
			return (int)i;
	return -1;
}

bool cc_expect_fail(llmp_ctx *ctx, llmp_status got, llmp_status want, const char *what,
		    const char *const *msgs, size_t nmsgs)
{
	const char *msg = llmp_errmsg(ctx);
	report_note("%s: %s (%s): %s", what, cc_status_name(got), llmp_strerror(got),
		    got == LLMP_OK ? "-" : msg);
	if (!report_expect(got == want, "%s: got %s, expected %s", what, cc_status_name(got),
			   cc_status_name(want)))
		return false;
	bool ok = report_expect(ctx == NULL || (msg[0] && strcmp(msg, "no error") != 0),
				"%s: no error message", what);
	for (size_t i = 0; i < nmsgs; i++)
		ok &= report_expect(ctx == NULL || strstr(msg, msgs[i]) != NULL,
				    "%s: message '%s' does not name '%s'", what, msg, msgs[i]);
	return ok;
}

/* ------------------------------------------------------------- values */

static uint32_t float_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

/* IEEE binary16 of a float that is exactly a normal half (or zero), as every value here is. */
uint16_t cc_float_to_half(float f)
{
	uint32_t u = float_bits(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
	int32_t e = (int32_t)((u >> 23) & 0xffu);
	if ((u & 0x7fffffffu) == 0)
		return sign;
	return (uint16_t)(sign | (uint16_t)((e - 127 + 15) << 10) | (uint16_t)((u >> 13) & 0x3ffu));
}

/* The value of element g (row-major global index) of tensor `id` at `step`, as dtype. */
void cc_value(int id, llmp_dtype dtype, uint64_t g, uint64_t step, void *out)
{
	double v = 0;
	switch (id) {
	case CC_W_ROW: v = (double)step + (double)((g * 7) % 101) * 0.125 - 6.0; break;
	case CC_W_COL: v = (double)step * 1.5 + (double)g / 1024.0 - 0.5; break;
	case CC_W_COL_BF16: v = (double)((g + step) % 64) * 0.5 - 8.0; break;
	case CC_BIAS: v = (double)((int64_t)step * 1000 - (int64_t)g * 37); break;
	case CC_EMB_U8: v = (double)((g * 13 + step) % 251); break;
	case CC_NORM_F16: v = (double)((g * 3 + step) % 512) * 0.25 - 32.0; break;
	case CC_BIG: v = (double)((g * 5 + step) % 65536); break;
	}
	switch (dtype) {
	case LLMP_FLOAT32: {
		float f = (float)v;
		memcpy(out, &f, 4);
		break;
	}
	case LLMP_FLOAT64: memcpy(out, &v, 8); break;
	case LLMP_BFLOAT16: {
		uint16_t h = (uint16_t)(float_bits((float)v) >> 16);
		memcpy(out, &h, 2);
		break;
	}
	case LLMP_FLOAT16: {
		uint16_t h = cc_float_to_half((float)v);
		memcpy(out, &h, 2);
		break;
	}
	case LLMP_INT32: {
		int32_t i = (int32_t)v;
		memcpy(out, &i, 4);
		break;
	}
	case LLMP_INT64: {
		int64_t i = (int64_t)v;
		memcpy(out, &i, 8);
		break;
	}
	case LLMP_UINT8: {
		uint8_t b = (uint8_t)v;
		memcpy(out, &b, 1);
		break;
	}
	default: break;
	}
}

/* ------------------------------------------------------------- the model */

struct model_tensor {
	int id;
	const char *name;
	llmp_dtype dtype;
	unsigned ndim;
	uint64_t global[3], offset[3], shape[3];
	size_t count, esize;
	unsigned char *data;
};

struct model {
	struct model_tensor t[CC_NTENSORS];
	size_t n;
	uint32_t tp, tp_size, dp, dp_size, rank, world;
};

/* Part i of k of n elements: [i*n/k, (i+1)*n/k), uneven when k does not divide n. */
static void part(uint64_t n, uint32_t k, uint32_t i, uint64_t *offset, uint64_t *shape)
{
	uint64_t lo = n * i / k, hi = n * (i + 1) / k;
	*offset = lo;
	*shape = hi - lo;
}

static void add(struct model *m, int id, const char *name, llmp_dtype dtype, unsigned ndim, uint64_t g0,
		uint64_t g1, uint64_t g2)
{
	struct model_tensor *t = &m->t[m->n++];
	uint64_t g[3] = { g0, g1, g2 };
	memset(t, 0, sizeof *t);
	t->id = id;
	t->name = name;
	t->dtype = dtype;
	t->ndim = ndim;
	for (unsigned d = 0; d < ndim; d++) {
		t->global[d] = g[d];
		t->offset[d] = 0;
		t->shape[d] = g[d];
	}
	t->esize = llmp_dtype_size(dtype);
}

static int model_build(llmp_ctx *ctx, const cc_args *args, struct model *m)
{
	uint32_t coords[LLMP_NAXES];
	const llmp_plan *plan = llmp_layout(ctx);
	memset(m, 0, sizeof *m);
	m->rank = llmp_rank(ctx);
	m->world = llmp_world_size(ctx);
	llmp_status st = plan ? llmp_plan_coords(plan, m->rank, coords) : LLMP_ERR_ARG;
	if (!report_expect(st == LLMP_OK, "llmp_plan_coords: %s: %s", llmp_strerror(st), llmp_errmsg(ctx)))
		return -1;
	m->tp = coords[LLMP_AXIS_TP];
	m->dp = coords[LLMP_AXIS_DP];
	m->tp_size = llmp_plan_size(plan, LLMP_AXIS_TP);
	m->dp_size = llmp_plan_size(plan, LLMP_AXIS_DP);
	report_note("layout: tp %u of %u, dp %u of %u, world %u", m->tp, m->tp_size, m->dp, m->dp_size,
		    m->world);

	struct model_tensor *t;
	/* row-parallel: dim 0 split along tp (13 rows: uneven for tp 2, 3, 4, 6) */
	add(m, CC_W_ROW, "layers/0/w_row", LLMP_FLOAT32, 2, 13, 10, 0);
	t = &m->t[m->n - 1];
	part(t->global[0], m->tp_size, m->tp, &t->offset[0], &t->shape[0]);
	/* column-parallel: dim 1 split along tp */
	add(m, CC_W_COL, "layers/0/w_col", LLMP_FLOAT64, 2, 6, 12, 0);
	t = &m->t[m->n - 1];
	part(t->global[1], m->tp_size, m->tp, &t->offset[1], &t->shape[1]);
	add(m, CC_W_COL_BF16, "layers/0/w_col_bf16", LLMP_BFLOAT16, 2, 4, 12, 0);
	t = &m->t[m->n - 1];
	part(t->global[1], m->tp_size, m->tp, &t->offset[1], &t->shape[1]);
	/* replicated on every rank */
	add(m, CC_BIAS, "layers/0/bias", LLMP_INT32, 1, 10, 0, 0);
	/* 3-D: dim 0 along dp, dim 1 along tp */
	add(m, CC_EMB_U8, "emb/u8", LLMP_UINT8, 3, 12, 12, 5);
	t = &m->t[m->n - 1];
	part(t->global[0], m->dp_size, m->dp, &t->offset[0], &t->shape[0]);
	part(t->global[1], m->tp_size, m->tp, &t->offset[1], &t->shape[1]);
	/* split along the whole world */
	add(m, CC_NORM_F16, "norm/f16", LLMP_FLOAT16, 1, 24, 0, 0);
	t = &m->t[m->n - 1];
	part(t->global[0], m->world, m->rank, &t->offset[0], &t->shape[0]);
	if (args->big) {
		add(m, CC_BIG, "big/w", LLMP_FLOAT32, 2, 48 * (uint64_t)args->big, 1024, 0);
		t = &m->t[m->n - 1];
		part(t->global[0], m->world, m->rank, &t->offset[0], &t->shape[0]);
	}
	for (size_t i = 0; i < m->n; i++) {
		t = &m->t[i];
		t->count = 1;
		for (unsigned d = 0; d < t->ndim; d++)
			t->count *= (size_t)t->shape[d];
		t->data = malloc(t->count * t->esize);
		if (!report_expect(t->data != NULL, "out of memory for %s", t->name))
			return -1;
	}
	return 0;
}

static void model_free(struct model *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->t[i].data);
}

/* Global row-major index of local element `local` of t. */
static uint64_t global_index(const struct model_tensor *t, size_t local)
{
	uint64_t idx[3], rest = local, g = 0;
	for (int d = (int)t->ndim - 1; d >= 0; d--) {
		idx[d] = rest % t->shape[d];
		rest /= t->shape[d];
	}
	for (unsigned d = 0; d < t->ndim; d++)
		g = g * t->global[d] + t->offset[d] + idx[d];
	return g;
}

static void model_fill(struct model *m, uint64_t step)
{
	for (size_t i = 0; i < m->n; i++) {
		struct model_tensor *t = &m->t[i];
		for (size_t k = 0; k < t->count; k++)
			cc_value(t->id, t->dtype, global_index(t, k), step, t->data + k * t->esize);
	}
}

/* One check per tensor: every element bit-identical to its value at `step`. */
static void model_check(const struct model *m, uint64_t step)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct model_tensor *t = &m->t[i];
		size_t bad = 0, first = 0;
		unsigned char want[8];
		for (size_t k = 0; k < t->count; k++) {
			cc_value(t->id, t->dtype, global_index(t, k), step, want);
			if (memcmp(want, t->data + k * t->esize, t->esize) != 0 && bad++ == 0)
				first = k;
		}
		if (!report_expect(bad == 0,
				   "%s: %zu of %zu elements differ from step %" PRIu64 "'s; first at "
				   "global index %" PRIu64,
				   t->name, bad, t->count, step, global_index(t, first)))
			continue;
	}
}

static llmp_status model_register(llmp_ckpt *ck, struct model *m)
{
	for (size_t i = 0; i < m->n; i++) {
		struct model_tensor *t = &m->t[i];
		llmp_status st = llmp_ckpt_register(ck, t->name, t->dtype, t->ndim, t->global, t->offset,
						    t->shape, t->data);
		if (st != LLMP_OK)
			return st;
	}
	return LLMP_OK;
}

static int meta_text(uint64_t step, char *buf, size_t len)
{
	return snprintf(buf, len, "step=%" PRIu64 " loader_pos=%" PRIu64, step, step * 4096 + 17);
}

/* --------------------------------------------------------- save and load */

static int open_model(const cc_args *args, llmp_ctx **ctx, llmp_ckpt **ck, struct model *m)
{
	llmp_status st = cc_init(args, ctx);
	if (!report_expect(st == LLMP_OK, "llmp_init: %s: %s", llmp_strerror(st), llmp_errmsg(*ctx)))
		return -1;
	if (model_build(*ctx, args, m) != 0)
		return -1;
	llmp_ckpt_opts o = { .root = args->root, .keep = args->keep, .files = args->files };
	st = llmp_ckpt_open(*ctx, &o, ck);
	if (!report_expect(st == LLMP_OK, "llmp_ckpt_open: %s: %s", llmp_strerror(st), llmp_errmsg(*ctx)))
		return -1;
	st = model_register(*ck, m);
	if (!report_expect(st == LLMP_OK, "llmp_ckpt_register: %s: %s", llmp_strerror(st), llmp_errmsg(*ctx)))
		return -1;
	return 0;
}

int cc_cmd_save(const cc_args *args)
{
	llmp_ctx *ctx = NULL;
	llmp_ckpt *ck = NULL;
	struct model m = { 0 };
	if (open_model(args, &ctx, &ck, &m) == 0) {
		report_note("pid %ld", (long)getpid());
		for (size_t i = 0; i < args->nsteps; i++) {
			char meta[128];
			int len = meta_text(args->steps[i], meta, sizeof meta);
			model_fill(&m, args->steps[i]);
			llmp_status st = args->async
						 ? llmp_ckpt_save_async(ck, args->steps[i], meta, (size_t)len)
						 : llmp_ckpt_save(ck, args->steps[i], meta, (size_t)len);
			if (!report_expect(st == LLMP_OK, "llmp_ckpt_save step %" PRIu64 ": %s (%s): %s",
					   args->steps[i], cc_status_name(st), llmp_strerror(st),
					   llmp_errmsg(ctx)))
				break;
			if (args->async) {
				/* The save owns copies now: what the program does next must not reach the files. */
				llmp_ckpt_stats stats = { .size = sizeof stats };
				llmp_ckpt_get_stats(ck, &stats);
				report_expect(stats.step == args->steps[i] &&
						      stats.staged_bytes >
							      0, /* norm/f16 is split over every rank */
					      "async save of step %" PRIu64 " staged %zu bytes",
					      args->steps[i], stats.staged_bytes);
				model_fill(&m, args->steps[i] + 1000003);
			}
			report_note("saved step %" PRIu64, args->steps[i]);
			llmp_ckpt_stats used = { .size = sizeof used };
			if (i == 0 && llmp_ckpt_get_stats(ck, &used) == LLMP_OK)
				report_note("alignment %zu", used.alignment);
		}
		if (args->async) {
			llmp_status st = llmp_ckpt_wait(ck);
			report_expect(st == LLMP_OK, "llmp_ckpt_wait: %s: %s", cc_status_name(st),
				      llmp_errmsg(ctx));
		}
	}
	llmp_ckpt_close(ck);
	model_free(&m);
	cc_finalize(args, ctx);
	return report_summary();
}

int cc_cmd_load(const cc_args *args)
{
	llmp_ctx *ctx = NULL;
	llmp_ckpt *ck = NULL;
	struct model m = { 0 };
	if (open_model(args, &ctx, &ck, &m) == 0) {
		for (size_t i = 0; i < m.n; i++) /* nothing left over from before the load */
			memset(m.t[i].data, 0xa5, m.t[i].count * m.t[i].esize);
		char meta[256] = "", want[128];
		size_t metalen = 0;
		uint64_t loaded = UINT64_MAX - 1;
		llmp_status st = llmp_ckpt_load(ck, args->step, &loaded, meta, sizeof meta - 1, &metalen);
		if (args->expect_fail >= 0) {
			cc_expect_fail(ctx, st, (llmp_status)args->expect_fail, "llmp_ckpt_load",
				       args->expect_msg, args->nmsgs);
		} else if (report_expect(st == LLMP_OK, "llmp_ckpt_load: %s (%s): %s", cc_status_name(st),
					 llmp_strerror(st), llmp_errmsg(ctx))) {
			report_note("loaded step %" PRIu64, loaded);
			if (args->expect_step != UINT64_MAX)
				report_expect(loaded == args->expect_step,
					      "loaded step %" PRIu64 ", expected %" PRIu64, loaded,
					      args->expect_step);
			if (args->step != LLMP_CKPT_NEWEST)
				report_expect(loaded == args->step,
					      "asked for step %" PRIu64 ", loaded %" PRIu64, args->step,
					      loaded);
			int wlen = meta_text(loaded, want, sizeof want);
			meta[metalen < sizeof meta ? metalen : sizeof meta - 1] = '\0';
			report_expect(metalen == (size_t)wlen && strcmp(meta, want) == 0,
				      "metadata '%s' (%zu bytes), expected '%s'", meta, metalen, want);
			model_check(&m, loaded);
		}
	}
	llmp_ckpt_close(ck);
	model_free(&m);
	cc_finalize(args, ctx);
	return report_summary();
}

/* ------------------------------------------------------------------ main */

llmp_status cc_init(const cc_args *args, llmp_ctx **ctx)
{
	llmp_init_opts opts;
	llmp_init_opts_default(&opts);
	opts.spec = args->spec;
	opts.timeout_s = args->timeout_s;
	*ctx = NULL;
	llmp_status st = llmp_init(&opts, ctx);
	if (st == LLMP_OK && *ctx)
		report_set_rank(llmp_rank(*ctx));
	return st;
}

void cc_finalize(const cc_args *args, llmp_ctx *ctx)
{
	llmp_comm *world;
	if (ctx && args->sync_exit) {
		llmp_status st = llmp_comm_world(ctx, &world);
		if (st == LLMP_OK)
			st = llmp_barrier(world);
		report_expect(st == LLMP_OK, "barrier before llmp_finalize: %s: %s", cc_status_name(st),
			      llmp_errmsg(ctx));
	}
	llmp_finalize(ctx);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ck_check save|load|badargs|mismatch --root DIR [options]\n"
		"  --parallel SPEC        layout (else $LLMP_TEST_SPEC, else the plugin's LLMP_PARALLEL)\n"
		"  --steps N,N,...        save: the steps to save, in order\n"
		"  --keep N               checkpoints kept (0: the default)\n"
		"  --files rank|node      save: a shard file per rank (default) or per node\n"
		"  --step N               load: this step (else the newest)\n"
		"  --expect-step N        load: must load this step\n"
		"  --expect-fail STATUS   load: must fail with this status (LLMP_ERR_IO, ...)\n"
		"  --expect-msg TEXT      ... and a message holding TEXT (up to %d times)\n"
		"  --big K                add big/w, 48*K x 1024 float32 split along the world\n"
		"  --timeout S            llmp_init_opts.timeout_s\n"
		"  --sync-exit 1          a world barrier before llmp_finalize\n"
		"  --async 1              save: llmp_ckpt_save_async, the tensors overwritten as soon as\n"
		"                         it returns, llmp_ckpt_wait at the end\n",
		CC_MAX_MSGS);
}

static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;
	if (!s || !*s)
		return false;
	*v = strtoull(s, &end, 10);
	return *end == '\0';
}

static int parse_args(int argc, char **argv, cc_args *a)
{
	memset(a, 0, sizeof *a);
	a->step = LLMP_CKPT_NEWEST;
	a->expect_step = UINT64_MAX;
	a->expect_fail = -1;
	a->spec = getenv("LLMP_TEST_SPEC");
	if (a->spec && !*a->spec)
		a->spec = NULL;
	for (int i = 2; i < argc; i += 2) {
		const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t v = 0;
		if (!val) {
			fprintf(stderr, "ck_check: %s needs a value\n", o);
			return -1;
		}
		if (strcmp(o, "--root") == 0) {
			a->root = val;
		} else if (strcmp(o, "--parallel") == 0) {
			a->spec = val;
		} else if (strcmp(o, "--steps") == 0) {
			char *copy = strdup(val), *save = NULL;
			for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (a->nsteps == CC_MAX_STEPS || !parse_u64(tok, &a->steps[a->nsteps])) {
					fprintf(stderr, "ck_check: --steps %s: bad list\n", val);
					free(copy);
					return -1;
				}
				a->nsteps++;
			}
			free(copy);
		} else if (strcmp(o, "--expect-fail") == 0) {
			if ((a->expect_fail = cc_status_from_name(val)) < 0) {
				fprintf(stderr, "ck_check: --expect-fail %s: not a status name\n", val);
				return -1;
			}
		} else if (strcmp(o, "--expect-msg") == 0) {
			if (a->nmsgs == CC_MAX_MSGS) {
				fprintf(stderr, "ck_check: too many --expect-msg\n");
				return -1;
			}
			a->expect_msg[a->nmsgs++] = val;
		} else if (strcmp(o, "--files") == 0 && (!strcmp(val, "rank") || !strcmp(val, "node"))) {
			a->files = strcmp(val, "node") == 0 ? LLMP_CKPT_FILES_NODE : LLMP_CKPT_FILES_RANK;
		} else if (strcmp(o, "--timeout") == 0) {
			a->timeout_s = atof(val);
		} else if (parse_u64(val, &v) && strcmp(o, "--keep") == 0) {
			a->keep = (unsigned)v;
		} else if (parse_u64(val, &v) && strcmp(o, "--step") == 0) {
			a->step = v;
		} else if (parse_u64(val, &v) && strcmp(o, "--expect-step") == 0) {
			a->expect_step = v;
		} else if (parse_u64(val, &v) && strcmp(o, "--sync-exit") == 0) {
			a->sync_exit = v != 0;
		} else if (parse_u64(val, &v) && strcmp(o, "--big") == 0) {
			a->big = (unsigned)v;
		} else if (parse_u64(val, &v) && strcmp(o, "--async") == 0) {
			a->async = v != 0;
		} else {
			fprintf(stderr, "ck_check: %s %s: unknown option or bad number\n", o, val);
			return -1;
		}
	}
	if (!a->root) {
		fprintf(stderr, "ck_check: --root is required\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(const cc_args *);
	} commands[] = {
		{ "save", cc_cmd_save },
		{ "load", cc_cmd_load },
		{ "badargs", cc_cmd_badargs },
		{ "mismatch", cc_cmd_mismatch },
	};
	cc_args args;

	/* srun interleaves the tasks' output by line */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (parse_args(argc, argv, &args) != 0)
		return 2;
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(&args);
	fprintf(stderr, "ck_check: %s: unknown subcommand\n", argv[1]);
	usage(stderr);
	return 2;
}
