/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_ckpt_commit.c - the committing rank's work for one checkpoint step
 * at the scale of a large job, with no job: the runtime's own plan and
 * commit (ck_order_slices, ck_commit_step) fed the slice records a gather
 * of every rank's registrations would deliver.
 *
 * The model is GPT-3 175B as Megatron-Core lays it out: 96 layers, hidden
 * 12288, vocabulary 51200, 12 bf16 tensors per layer, tp=8 and pp=16, each
 * tensor split by tp (qkv and fc1 by rows, proj and fc2 by columns) or
 * replicated across tp (layernorms, biases after a row-parallel layer), and
 * replicated across dp; the distributed optimizer's fp32 state (main
 * parameters, exp_avg, exp_avg_sq) is one flat buffer per (pp, tp) rank
 * split dp ways. So every rank writes a shard: shards = world = 128 x dp.
 *
 * Each size runs in a child process, so getrusage's peak resident size is
 * that size's alone. The step directory's shard files, made with every
 * dataset the MANIFEST lists (unallocated: reads give zeros), are left for
 * h5py (scripts/bench-ckpt-scale.sh) with --keep.
 *
 *   bench_ckpt_commit [--dir DIR] [--keep] [--no-shards] [SHARDS...]
 *   (default: 1024 4096 16384 under /tmp)
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/ckpt/ckpt_internal.h"
#include "runtime/ckpt/format/ckpt_h5.h"

#define TP 8
#define PP 16
#define LAYERS 96
#define HIDDEN 12288ULL
#define VOCAB 51200ULL
#define SEQ 2048ULL
#define STEP 1000
#define MAX_PER_RANK (LAYERS / PP * 12 + 3 + 3)

/* Where a rank sits: tp fastest, then dp, then pp (Megatron-Core's order). */
struct coords {
	unsigned tp, dp, pp, ndp;
};

/* How a tensor is cut across tp: not at all, or along dimension 0 or 1. */
enum cut { WHOLE, ROWS, COLS };

/* Append the rank's slice of a tensor of global shape g0 (x g1 when ndim is 2). */
static void add(struct ck_slice *out, size_t *n, const struct coords *c, uint32_t rank, const char *name,
		unsigned ndim, uint64_t g0, uint64_t g1, enum cut cut)
{
	struct ck_slice *s = &out[*n];
	memset(s, 0, sizeof *s);
	snprintf(s->name, sizeof s->name, "%s", name);
	s->dtype = LLMP_BFLOAT16;
	s->ndim = ndim;
	s->global[0] = s->shape[0] = g0;
	s->global[1] = s->shape[1] = g1;
	unsigned d = cut == COLS ? 1 : 0;
	if (cut != WHOLE) {
		s->shape[d] = s->global[d] / TP;
		s->offset[d] = c->tp * s->shape[d];
	}
	s->rank = rank;
	s->tensor = (uint32_t)(*n)++;
}

/* The tensors rank registers, in its own order; returns how many. */
static size_t rank_tensors(uint32_t rank, unsigned ndp, struct ck_slice *out)
{
	struct coords c = { .tp = rank % TP, .dp = rank / TP % ndp, .pp = rank / TP / ndp, .ndp = ndp };
	size_t n = 0;
	char name[LLMP_CKPT_MAX_NAME + 1];
	const uint64_t h = HIDDEN;
	if (c.pp == 0) {
		add(out, &n, &c, rank, "embedding.word_embeddings.weight", 2, VOCAB, h, ROWS);
		add(out, &n, &c, rank, "embedding.position_embeddings.weight", 2, SEQ, h, WHOLE);
	}
	static const struct {
		const char *name;
		unsigned ndim;
		uint64_t g0, g1; /* in units of HIDDEN */
		enum cut cut;
	} layer[] = {
		{ "input_layernorm.weight", 1, 1, 0, WHOLE },
		{ "input_layernorm.bias", 1, 1, 0, WHOLE },
		{ "self_attention.linear_qkv.weight", 2, 3, 1, ROWS },
		{ "self_attention.linear_qkv.bias", 1, 3, 0, ROWS },
		{ "self_attention.linear_proj.weight", 2, 1, 1, COLS },
		{ "self_attention.linear_proj.bias", 1, 1, 0, WHOLE },
		{ "pre_mlp_layernorm.weight", 1, 1, 0, WHOLE },
		{ "pre_mlp_layernorm.bias", 1, 1, 0, WHOLE },
		{ "mlp.linear_fc1.weight", 2, 4, 1, ROWS },
		{ "mlp.linear_fc1.bias", 1, 4, 0, ROWS },
		{ "mlp.linear_fc2.weight", 2, 1, 4, COLS },
		{ "mlp.linear_fc2.bias", 1, 1, 0, WHOLE },
	};
	for (unsigned l = c.pp * (LAYERS / PP); l < (c.pp + 1) * (LAYERS / PP); l++)
		for (size_t t = 0; t < sizeof layer / sizeof layer[0]; t++) {
			snprintf(name, sizeof name, "decoder.layers.%u.%s", l, layer[t].name);
			add(out, &n, &c, rank, name, layer[t].ndim, layer[t].g0 * h, layer[t].g1 * h,
			    layer[t].cut);
		}
	if (c.pp == PP - 1) {
		add(out, &n, &c, rank, "decoder.final_layernorm.weight", 1, h, 0, WHOLE);
		add(out, &n, &c, rank, "decoder.final_layernorm.bias", 1, h, 0, WHOLE);
		add(out, &n, &c, rank, "output_layer.weight", 2, VOCAB, h, ROWS);
	}
	/* The distributed optimizer: this (pp, tp) rank's parameters, flat, split dp ways. */
	uint64_t numel = 0;
	for (size_t i = 0; i < n; i++)
		numel += ck_volume(&out[i]);
	uint64_t chunk = (numel + ndp - 1) / ndp;
	static const char *const state[] = { "param", "exp_avg", "exp_avg_sq" };
	for (int k = 0; k < 3; k++) {
		snprintf(name, sizeof name, "optimizer.pp%02u.tp%u.%s", c.pp, c.tp, state[k]);
		add(out, &n, &c, rank, name, 1, chunk * ndp, 0, WHOLE);
		out[n - 1].dtype = LLMP_FLOAT32;
		out[n - 1].shape[0] = chunk;
		out[n - 1].offset[0] = c.dp * chunk;
	}
	return n;
}

/* The records a gather delivers: per slots for each rank, in rank order, unused ones zeroed. */
static struct ck_slice *gathered(uint32_t world, size_t *records)
{
	struct ck_slice *all = calloc((size_t)world * MAX_PER_RANK, sizeof *all);
	if (!all)
		return NULL;
	for (uint32_t r = 0; r < world; r++)
		rank_tensors(r, world / (TP * PP), &all[(size_t)r * MAX_PER_RANK]);
	*records = (size_t)world * MAX_PER_RANK;
	return all;
}

/*
 * What share_results leaves: each distinct slice's CRC and place, each
 * shard's size and CRC (made up, but distinct and in range).
 */
static int64_t *shared_results(struct ck_slice *all, size_t n, uint32_t world)
{
	int64_t *sizes = calloc(2 * (size_t)world, sizeof *sizes);
	if (!sizes)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		struct ck_slice *s = &all[i];
		if (s->owner != s->rank)
			continue;
		s->crc = (uint32_t)(i * 2654435761u);
		s->at = 4096 + (uint64_t)sizes[s->owner];
		sizes[s->owner] += (int64_t)ck_bytes(s);
	}
	for (uint32_t r = 0; r < world; r++) {
		sizes[r] += 4096;
		sizes[world + r] = (int64_t)(r * 40503u);
	}
	return sizes;
}

/* The shard files, each dataset the MANIFEST lists, unallocated: what h5py opens through the index. */
static int make_shards(const char *dir, const struct ck_slice *all, size_t n, uint32_t world)
{
	size_t *first = calloc((size_t)world + 1, sizeof *first),
	       *order = malloc((n ? n : 1) * sizeof *order);
	int rc = first && order ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (all[i].owner == all[i].rank)
			first[all[i].owner + 1]++;
	for (uint32_t r = 0; rc == 0 && r < world; r++)
		first[r + 1] += first[r];
	for (size_t i = 0, *fill = first; rc == 0 && i < n; i++)
		if (all[i].owner == all[i].rank)
			order[fill[all[i].owner]++] = i;
	/* fill advanced each rank's start to its end: the ranges are [end of r-1, end of r). */
	H5E_BEGIN_TRY
	{
		hid_t fapl = ck_h5_file_access(0);
		for (uint32_t r = 0; rc == 0 && r < world; r++) {
			char path[4200];
			ck_shard_path(dir, r, path, sizeof path);
			hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
			rc = file < 0 ? -1 : 0;
			for (size_t k = r ? first[r - 1] : 0; rc == 0 && k < first[r]; k++) {
				const struct ck_slice *s = &all[order[k]];
				hsize_t dims[LLMP_CKPT_MAX_DIMS];
				for (unsigned d = 0; d < s->ndim; d++)
					dims[d] = s->shape[d];
				hid_t type = ck_h5_file_type((llmp_dtype)s->dtype),
				      space = H5Screate_simple((int)s->ndim, dims, NULL);
				hid_t dset = H5Dcreate2(file, s->name, type, space, H5P_DEFAULT, H5P_DEFAULT,
							H5P_DEFAULT);
				rc = dset < 0 || H5Dclose(dset) < 0 ? -1 : 0;
				H5Sclose(space);
				H5Tclose(type);
			}
			if (file >= 0 && H5Fclose(file) < 0)
				rc = -1;
		}
		H5Pclose(fapl);
	}
	H5E_END_TRY;
	free(first);
	free(order);
	return rc;
}

static double max_rss_mib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_maxrss / 1024.0;
}

static long long file_size(const char *dir, const char *name)
{
	char path[4200];
	struct stat sb;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* One size, in its own process: 0 when it ran. */
static int run_size(const char *base, uint32_t world, bool keep, bool shards)
{
	char root[4096], dir[4096];
	snprintf(root, sizeof root, "%s/llmp-ckpt-scale-%u", base, world);
	ck_step_path(root, STEP, "", dir, sizeof dir);
	/* A fake context: the commit reads only its rank, world, layout and message buffer. */
	llmp_ctx *ctx = calloc(1, sizeof *ctx);
	llmp_ckpt *ck = calloc(1, sizeof *ck);
	if (!ctx || !ck)
		return 1;
	ctx->world = world;
	snprintf(ctx->layout, sizeof ctx->layout, "tp=%d,pp=%d,cp=1,ep=1,dp=%u,order=tp-cp-ep-dp-pp,vpp=1",
		 TP, PP, world / (TP * PP));
	ck->ctx = ctx;
	ck->root = root;
	ck->keep = 1; /* retention removes the previous run's step */
	ck->alignment = (size_t)1 << 20;

	char cmd[8400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s" CK_SUFFIX_TMP "'", root, dir);
	if (system(cmd) != 0)
		return 1;
	double rss_start = max_rss_mib();
	size_t records, n;
	struct ck_slice *all = gathered(world, &records);
	if (!all)
		return 1;
	double rss_table = max_rss_mib();

	double t0 = rt_now();
	llmp_status st = ck_order_slices(all, records, &n, ctx->errmsg, sizeof ctx->errmsg);
	double t1 = rt_now();
	int64_t *sizes = st == LLMP_OK ? shared_results(all, n, world) : NULL;
	if (st == LLMP_OK && !sizes)
		st = LLMP_ERR_NOMEM;
	double t2 = rt_now(), t3 = t2;
	if (st == LLMP_OK && shards) {
		char tmp[4096];
		ck_step_path(root, STEP, CK_SUFFIX_TMP, tmp, sizeof tmp);
		st = make_shards(tmp, all, n, world) == 0 ? LLMP_OK : LLMP_ERR_IO;
		t3 = rt_now();
	}
	double t4 = rt_now();
	if (st == LLMP_OK)
		st = ck_commit_step(ck, STEP, all, n, sizes, "meta", 4);
	double t5 = rt_now();
	double rss_end = max_rss_mib();
	if (st != LLMP_OK) {
		fprintf(stderr, "bench_ckpt_commit: %u shards: %s\n", world, ctx->errmsg);
		return 1;
	}
	size_t distinct = 0, tensors = 0;
	for (size_t i = 0; i < n; i++) {
		distinct += all[i].owner == all[i].rank;
		tensors += i == 0 || strcmp(all[i].name, all[i - 1].name) != 0;
	}
	printf("%7u %4u %8zu %8zu %8zu %9.1f %9.1f %9.1f %9.1f %8.1f %8.1f %10lld %11lld %8.1f\n", world,
	       world / (TP * PP), tensors, n, distinct, (t1 - t0) * 1e3, (t5 - t4) * 1e3,
	       (t1 - t0 + t5 - t4) * 1e3, (t2 - t1) * 1e3, rss_table - rss_start, rss_end - rss_start,
	       file_size(dir, CK_INDEX), file_size(dir, CK_MANIFEST), t3 - t2);
	fflush(stdout);
	free(sizes);
	free(all);
	if (!keep) {
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
		if (system(cmd) != 0)
			return 1;
	} else {
		fprintf(stderr, "bench_ckpt_commit: kept %s\n", dir);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *base = "/tmp";
	bool keep = false, shards = true;
	uint32_t sizes[16] = { 1024, 4096, 16384 };
	size_t nsizes = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			base = argv[++i];
		else if (strcmp(argv[i], "--keep") == 0)
			keep = true;
		else if (strcmp(argv[i], "--no-shards") == 0)
			shards = false;
		else if (nsizes < 16 && atoi(argv[i]) >= TP * PP && atoi(argv[i]) % (TP * PP) == 0)
			sizes[nsizes++] = (uint32_t)atoi(argv[i]);
		else {
			fprintf(stderr,
				"usage: bench_ckpt_commit [--dir DIR] [--keep] [--no-shards] [SHARDS...] "
				"(SHARDS a multiple of %d)\n",
				TP * PP);
			return 2;
		}
	}
	if (!nsizes)
		nsizes = 3;
	printf("# GPT-3 175B (%d layers, hidden %llu), tp=%d pp=%d, distributed optimizer: shards = world\n",
	       LAYERS, HIDDEN, TP, PP);
	printf("# plan: sort, owners, checks (every rank); commit: MANIFEST, index.h5, rename, latest "
	       "(rank 0); ms\n");
	printf("# rss: peak resident MiB above the start, of the gathered table alone and in all\n");
	printf("# shards   dp  tensors  records   slices   plan_ms commit_ms  total_ms share_ms "
	       "table_MiB peak_MiB index_bytes manifest_bytes shards_s\n");
	fflush(stdout);
	int failed = 0;
	for (size_t i = 0; i < nsizes; i++) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(run_size(base, sizes[i], keep, shards));
		int status = 0;
		if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			failed = 1;
	}
	return failed;
}
