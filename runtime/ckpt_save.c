/*
 * ckpt_save.c - llmp_ckpt_save: shards, index, manifest, then the commit.
 *
 * The order is what makes it atomic: every shard is written and fsynced
 * under step-N.tmp before rank 0 writes the index and the MANIFEST there
 * (from checksums every rank reported), fsyncs them and the directory,
 * renames step-N.tmp to step-N and fsyncs the root. Only then is `latest`
 * moved and are old checkpoints removed. A job killed at any instant
 * leaves either a complete step-N or a step-N.tmp that nothing reads and
 * the next save of that step clears.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_internal.h"
#include "crc32c.h"

static void step_dir(const llmp_ckpt *ck, uint64_t step, const char *suffix, char *buf, size_t len)
{
	snprintf(buf, len, "%s/step-%llu%s", ck->root, (unsigned long long)step, suffix);
}

/* Rank 0: a fresh, empty step-N.tmp; refuses to overwrite a complete step-N. */
static llmp_status prepare(llmp_ckpt *ck, uint64_t step)
{
	llmp_ctx *ctx = ck->ctx;
	char dir[4096], tmp[4096];
	struct stat sb;
	step_dir(ck, step, "", dir, sizeof dir);
	step_dir(ck, step, ".tmp", tmp, sizeof tmp);
	llmp_status st = ck_mkdirs(ctx, ck->root);
	if (st == LLMP_OK && stat(dir, &sb) == 0)
		st = rt_fail(ctx, LLMP_ERR_ARG, "%s exists: step %llu was saved already", dir,
			     (unsigned long long)step);
	if (st == LLMP_OK)
		st = ck_remove_tree(ctx, tmp); /* left by a save that was killed */
	if (st == LLMP_OK && mkdir(tmp, 0755) != 0)
		st = rt_fail(ctx, LLMP_ERR_IO, "mkdir %s: %s", tmp, strerror(errno));
	return st;
}

static llmp_status write_meta(llmp_ctx *ctx, const char *path, const void *meta, size_t len)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return rt_fail(ctx, LLMP_ERR_IO, "create %s: %s", path, strerror(errno));
	int bad = len && fwrite(meta, 1, len, f) != len;
	bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
	bad |= fclose(f) != 0;
	return bad ? rt_fail(ctx, LLMP_ERR_IO, "write %s: %s", path, strerror(errno)) : LLMP_OK;
}

/* Rank 0, once every shard is durable: index, metadata, MANIFEST, rename, latest, retention. */
static llmp_status commit(llmp_ckpt *ck, uint64_t step, struct ck_manifest *m, const void *meta,
			  size_t metalen)
{
	llmp_ctx *ctx = ck->ctx;
	char dir[4096], tmp[4096], path[4200];
	step_dir(ck, step, "", dir, sizeof dir);
	step_dir(ck, step, ".tmp", tmp, sizeof tmp);

	snprintf(path, sizeof path, "%s/index.h5", tmp);
	llmp_status st = ck_write_index(ck, path, m->slices, m->nslices);
	snprintf(path, sizeof path, "%s/meta.bin", tmp);
	if (st == LLMP_OK)
		st = write_meta(ctx, path, meta, metalen);
	snprintf(path, sizeof path, "%s/MANIFEST", tmp);
	if (st == LLMP_OK)
		st = ck_manifest_write(ctx, path, m);
	if (st == LLMP_OK)
		st = ck_fsync_path(ctx, tmp);
	if (st == LLMP_OK && rename(tmp, dir) != 0)
		st = rt_fail(ctx, LLMP_ERR_IO, "rename %s: %s", tmp, strerror(errno));
	if (st == LLMP_OK)
		st = ck_fsync_path(ctx, ck->root);
	if (st == LLMP_OK)
		st = ck_write_latest(ctx, ck->root, step);
	if (st == LLMP_OK)
		st = ck_retain(ctx, ck->root, ck->keep, step);
	return st;
}

/* Everyone learns every slice's checksum and every shard's size: sums of what each owner knows. */
static llmp_status share_results(llmp_ckpt *ck, struct ck_slice *all, size_t n, uint64_t shard_bytes,
				 int64_t *sizes)
{
	llmp_ctx *ctx = ck->ctx;
	llmp_comm *world;
	llmp_status st = llmp_comm_world(ctx, &world);
	int64_t *crcs = calloc(n ? n : 1, sizeof *crcs);
	if (!crcs)
		return rt_fail(ctx, LLMP_ERR_NOMEM, "checksums of %zu slices", n);
	for (size_t i = 0; i < n; i++)
		if (all[i].owner == ctx->rank && all[i].rank == ctx->rank)
			crcs[i] = all[i].crc;
	memset(sizes, 0, ctx->world * sizeof *sizes);
	sizes[ctx->rank] = (int64_t)shard_bytes;
	if (st == LLMP_OK)
		st = llmp_allreduce(world, crcs, crcs, n, LLMP_INT64, LLMP_SUM);
	if (st == LLMP_OK)
		st = llmp_allreduce(world, sizes, sizes, ctx->world, LLMP_INT64, LLMP_SUM);
	for (size_t i = 0; st == LLMP_OK && i < n; i++)
		all[i].crc = (uint32_t)crcs[i];
	free(crcs);
	return st;
}

/* The distinct slices (replicas dropped) and the shards that exist, as the manifest lists them. */
static llmp_status build_manifest(llmp_ckpt *ck, uint64_t step, const struct ck_slice *all, size_t n,
				  const int64_t *sizes, const void *meta, size_t metalen,
				  struct ck_manifest *m)
{
	llmp_ctx *ctx = ck->ctx;
	memset(m, 0, sizeof *m);
	m->step = step;
	m->world = ctx->world;
	snprintf(m->layout, sizeof m->layout, "%s", ctx->layout);
	m->meta_bytes = metalen;
	m->meta_crc = llmp_crc32c(0, meta, metalen);
	m->slices = malloc((n ? n : 1) * sizeof *m->slices);
	m->shard_ranks = malloc(ctx->world * sizeof *m->shard_ranks);
	m->shard_bytes = malloc(ctx->world * sizeof *m->shard_bytes);
	if (!m->slices || !m->shard_ranks || !m->shard_bytes) {
		ck_manifest_free(m);
		return rt_fail(ctx, LLMP_ERR_NOMEM, "manifest of %zu slices", n);
	}
	for (size_t i = 0; i < n; i++)
		if (all[i].owner == all[i].rank)
			m->slices[m->nslices++] = all[i];
	for (uint32_t r = 0; r < ctx->world; r++)
		if (sizes[r] > 0) {
			m->shard_ranks[m->nshards] = r;
			m->shard_bytes[m->nshards++] = (uint64_t)sizes[r];
		}
	return LLMP_OK;
}

static bool owns_any(const llmp_ctx *ctx, const struct ck_slice *all, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (all[i].owner == ctx->rank && all[i].rank == ctx->rank)
			return true;
	return false;
}

llmp_status llmp_ckpt_save(llmp_ckpt *ck, uint64_t step, const void *meta, size_t metalen)
{
	if (!ck)
		return LLMP_ERR_ARG;
	llmp_ctx *ctx = ck->ctx;
	bool leader = ctx->rank == 0;
	llmp_status local = metalen && !meta ? rt_fail(ctx, LLMP_ERR_ARG, "meta is NULL with %zu bytes", metalen)
			    : step == LLMP_CKPT_NEWEST ? rt_fail(ctx, LLMP_ERR_ARG, "step %llu is reserved",
								 (unsigned long long)step)
						       : LLMP_OK;
	if (local == LLMP_OK && leader)
		local = prepare(ck, step);
	llmp_status st = ck_agree(ck, "checkpoint save", local);
	if (st != LLMP_OK)
		return st;

	struct ck_slice *all = NULL;
	size_t n = 0;
	if ((st = ck_gather_slices(ck, &all, &n)) != LLMP_OK)
		return st; /* the same on every rank: the same data, the same checks */

	char tmp[4096], shard[4200];
	step_dir(ck, step, ".tmp", tmp, sizeof tmp);
	snprintf(shard, sizeof shard, "%s/shard-%u.h5", tmp, ctx->rank);
	uint64_t shard_bytes = 0;
	local = LLMP_OK;
	if (owns_any(ctx, all, n)) {
		struct stat sb;
		local = ck_write_shard(ck, shard, all, n);
		if (local == LLMP_OK && stat(shard, &sb) == 0)
			shard_bytes = (uint64_t)sb.st_size;
	}
	st = ck_agree(ck, "checkpoint save: writing shards", local);

	int64_t *sizes = st == LLMP_OK ? malloc(ctx->world * sizeof *sizes) : NULL;
	if (st == LLMP_OK && !sizes)
		st = rt_fail(ctx, LLMP_ERR_NOMEM, "shard sizes");
	if (st == LLMP_OK)
		st = share_results(ck, all, n, shard_bytes, sizes);
	if (st == LLMP_OK) {
		struct ck_manifest m;
		local = LLMP_OK;
		if (leader) {
			local = build_manifest(ck, step, all, n, sizes, meta, metalen, &m);
			if (local == LLMP_OK)
				local = commit(ck, step, &m, meta, metalen);
			ck_manifest_free(&m); /* zeroed if build_manifest failed */
		}
		st = ck_agree(ck, "checkpoint save: commit", local);
	}
	free(sizes);
	free(all);
	return st;
}
