/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_load.c - llmp_ckpt_load: which checkpoint, the checks of its
 * MANIFEST, shards and metadata (shared out among the ranks: each file is
 * read or looked at by one), and the fall back past a damaged one. The
 * slices themselves are read by ckpt_read.c, every byte checked.
 *
 * Nothing is read through the index's virtual datasets: HDF5 reads a
 * missing source file there as fill values without an error, which would
 * turn a lost shard into zeros. Nothing is read with HDF5 at all: every
 * file is checked against the size and CRC-32C its MANIFEST gives
 * (format/filesum.c), the index too, though a load does not use it, so that
 * a checkpoint with any damaged file is passed over for an older one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt_internal.h"
#include "kernels/crc32c.h"

/*
 * Who reads or looks at which file of a step, so that no file is read by
 * every rank: with thousands of ranks and shards, a MANIFEST of megabytes
 * read by each rank, or every shard looked at by each, is a storm of
 * requests on the filesystem's servers for one answer. The MANIFEST is read
 * by rank 0 and handed to all; each shard's size is looked at by one rank
 * (shard i by rank i mod world), the index by one, the metadata read by one
 * and handed to all; the ranks agree before any slice is read.
 */
#define MANIFEST_READER 0u
static uint32_t index_checker(const llmp_ctx *ctx)
{
	return 1 % ctx->world;
}
static uint32_t meta_reader(const llmp_ctx *ctx)
{
	return 2 % ctx->world;
}

/* Every rank gets the step's MANIFEST, read once, and parses it (each its own copy). */
static llmp_status share_manifest(llmp_ckpt *ck, const char *path, const char *doing, struct ck_manifest *m)
{
	llmp_ctx *ctx = ck->ctx;
	llmp_comm *world = NULL;
	char *text = NULL;
	size_t n = 0;
	uint64_t len = 0;
	llmp_status st = LLMP_OK;
	memset(m, 0, sizeof *m);
	if (ctx->rank == MANIFEST_READER)
		st = ck_manifest_read_text(path, &text, &n, ctx->errmsg, sizeof ctx->errmsg);
	st = ck_agree(ck, doing, st);
	if (st == LLMP_OK && ctx->world > 1) {
		len = n;
		st = llmp_comm_world(ctx, &world);
		if (st == LLMP_OK)
			st = llmp_broadcast(world, &len, &len, 1, LLMP_INT64, MANIFEST_READER);
		if (st == LLMP_OK && ctx->rank != MANIFEST_READER) {
			/* the reader bounded its size; a failed malloc is agreed on before the bytes move */
			st = (text = malloc((size_t)len + 1))
				     ? LLMP_OK
				     : rt_fail(ctx, LLMP_ERR_NOMEM, "%s: %llu bytes to receive it", path,
					       (unsigned long long)len);
			n = (size_t)len;
		}
		st = ck_agree(ck, doing, st);
		if (st == LLMP_OK)
			st = llmp_broadcast(world, text, text, n, LLMP_UINT8, MANIFEST_READER);
		if (st == LLMP_OK)
			text[n] = '\0';
	}
	/* The same text on every rank: the same verdict, no agreement needed. */
	if (st == LLMP_OK)
		st = ck_manifest_parse(path, text, n, m, ctx->errmsg, sizeof ctx->errmsg);
	free(text);
	return st;
}

/* This rank's share of the shards: each one the MANIFEST lists is there with its size (a missing one would read as zeros). */
static llmp_status check_shards(llmp_ctx *ctx, const char *dir, const struct ck_manifest *m)
{
	for (size_t i = ctx->rank; i < m->nshards; i += ctx->world) {
		char path[4200];
		struct stat sb;
		ck_shard_path(dir, m->shard_ranks[i], path, sizeof path);
		if (stat(path, &sb) != 0)
			return rt_fail(ctx, LLMP_ERR_IO, "%s: %s", path, strerror(errno));
		if ((uint64_t)sb.st_size != m->shard_bytes[i])
			return rt_fail(ctx, LLMP_ERR_IO, "%s has %lld bytes, its MANIFEST says %llu", path,
				       (long long)sb.st_size, (unsigned long long)m->shard_bytes[i]);
	}
	return LLMP_OK;
}

/* The metadata, whole and checked, into all (m->meta_bytes). */
static llmp_status read_meta(llmp_ctx *ctx, const char *dir, const struct ck_manifest *m, char *all)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/" CK_META, dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return rt_fail(ctx, LLMP_ERR_IO, "open %s: %s", path, strerror(errno));
	size_t got = fread(all, 1, m->meta_bytes, f);
	fclose(f);
	if (got != m->meta_bytes || kern_crc32c(0, all, got) != m->meta_crc)
		return rt_fail(ctx, LLMP_ERR_IO, "%s is truncated or corrupted", path);
	return LLMP_OK;
}

/*
 * Loading one checkpoint directory, collective: the ranks share the checks
 * of its files (above) and, when none failed, read the slices together. The
 * status is agreed: the same on every rank, with the first failing rank's
 * message.
 */
static llmp_status load_step(llmp_ckpt *ck, uint64_t step, const char *doing, void *meta, size_t metacap,
			     size_t *metalen)
{
	llmp_ctx *ctx = ck->ctx;
	char dir[4096], path[4200];
	ck_step_path(ck->root, step, "", dir, sizeof dir);
	snprintf(path, sizeof path, "%s/" CK_MANIFEST, dir);
	struct ck_manifest m;
	llmp_status st = ck_agree(ck, doing, share_manifest(ck, path, doing, &m));
	if (st != LLMP_OK) {
		ck_manifest_free(&m);
		return st;
	}
	rt_log(ctx, RT_LOG_CKPT, RT_LOG_DEBUG, "load of step-%llu: its MANIFEST read; checking the files",
	       (unsigned long long)step);
	char *all = malloc(m.meta_bytes ? m.meta_bytes : 1);
	st = all ? check_shards(ctx, dir, &m)
		 : rt_fail(ctx, LLMP_ERR_NOMEM, "metadata of %llu bytes", (unsigned long long)m.meta_bytes);
	snprintf(path, sizeof path, "%s/" CK_INDEX, dir);
	if (st == LLMP_OK &&
	    ctx->rank == index_checker(ctx)) /* a load does not use it: checked all the same */
		st = ck_file_check(path, m.index_bytes, m.index_crc, ctx->errmsg, sizeof ctx->errmsg);
	if (st == LLMP_OK && ctx->rank == meta_reader(ctx))
		st = read_meta(ctx, dir, &m, all);
	st = ck_agree(ck, doing, st);
	llmp_comm *world;
	if (st == LLMP_OK && ctx->world > 1 && m.meta_bytes && (st = llmp_comm_world(ctx, &world)) == LLMP_OK)
		st = ck_agree(ck, doing,
			      llmp_broadcast(world, all, all, m.meta_bytes, LLMP_UINT8, meta_reader(ctx)));
	if (st == LLMP_OK) {
		if (meta)
			memcpy(meta, all, m.meta_bytes < metacap ? m.meta_bytes : metacap);
		if (metalen)
			*metalen = m.meta_bytes;
		rt_log(ctx, RT_LOG_CKPT, RT_LOG_DEBUG,
		       "load of step-%llu: every rank's files pass their checks; reading the tensors",
		       (unsigned long long)step);
		st = ck_read_tensors(ck, dir, &m, doing);
	}
	free(all);
	ck_manifest_free(&m);
	return st;
}

/* Rank 0 lists the candidates (newest first, or the one asked for); everyone gets the list. */
static llmp_status candidates(llmp_ckpt *ck, uint64_t step, int64_t **list, int64_t *count)
{
	llmp_ctx *ctx = ck->ctx;
	llmp_comm *world;
	llmp_status st = llmp_comm_world(ctx, &world), local = LLMP_OK;
	uint64_t *steps = NULL;
	size_t n = 0;
	if (ctx->rank == 0)
		local = ck_list_steps(ctx, ck->root, &steps, &n);
	if (st == LLMP_OK)
		st = ck_agree(ck, "checkpoint load: listing", local);
	if (step != LLMP_CKPT_NEWEST && st == LLMP_OK) {
		bool present = false;
		for (size_t i = 0; i < n; i++)
			present |= steps[i] == step;
		n = present ? 1 : 0;
		if (present)
			steps[0] = step;
	}
	*count = (int64_t)n;
	if (st == LLMP_OK)
		st = llmp_broadcast(world, count, count, 1, LLMP_INT64, 0);
	*list = st == LLMP_OK ? calloc(*count ? (size_t)*count : 1, sizeof **list) : NULL;
	if (st == LLMP_OK && !*list)
		st = rt_fail(ctx, LLMP_ERR_NOMEM, "checkpoint list");
	for (int64_t i = 0; st == LLMP_OK && ctx->rank == 0 && i < *count; i++)
		(*list)[i] = (int64_t)steps[i];
	if (st == LLMP_OK)
		st = llmp_broadcast(world, *list, *list, (size_t)*count, LLMP_INT64, 0);
	if (st == LLMP_OK && *count)
		rt_log(ctx, RT_LOG_CKPT, RT_LOG_DEBUG, "load: %lld candidate%s under %s, step-%lld first",
		       (long long)*count, *count == 1 ? "" : "s", ck->root, (long long)(*list)[0]);
	free(steps);
	return st;
}

llmp_status llmp_ckpt_load(llmp_ckpt *ck, uint64_t step, uint64_t *loaded_step, void *meta, size_t metacap,
			   size_t *metalen)
{
	if (!ck)
		return LLMP_ERR_ARG;
	llmp_ctx *ctx = ck->ctx;
	int64_t *list = NULL, count = 0;
	llmp_status st = llmp_ckpt_wait(ck); /* a pending save is committed first */
	ck->passed_over = false;
	if (st == LLMP_OK)
		st = candidates(ck, step, &list, &count);
	if (st == LLMP_OK && count == 0)
		st = rt_fail(ctx, LLMP_ERR_IO,
			     step == LLMP_CKPT_NEWEST ? "no complete checkpoint under %s"
						      : "%s has no complete step-%llu",
			     ck->root, (unsigned long long)step);
	for (int64_t i = 0; st == LLMP_OK && i < count; i++) {
		char doing[64];
		snprintf(doing, sizeof doing, "checkpoint load of step-%lld", (long long)list[i]);
		double started = rt_now();
		st = load_step(ck, (uint64_t)list[i], doing, meta, metacap, metalen);
		rt_log(ctx, RT_LOG_CKPT, RT_LOG_DEBUG, "load of step-%lld: %s after %.3f s",
		       (long long)list[i], st == LLMP_OK ? "done" : "failed", rt_now() - started);
		if (st == LLMP_OK) {
			if (loaded_step)
				*loaded_step = (uint64_t)list[i];
			break;
		}
		/*
		 * Newest-first: a damaged checkpoint is reported and the one before it
		 * tried. Not past one of another format version: older ones are older
		 * still, and the message says what to do.
		 */
		if (step != LLMP_CKPT_NEWEST || st != LLMP_ERR_IO || i + 1 == count)
			break;
		if (ctx->rank == 0)
			rt_log(ctx, RT_LOG_CKPT, RT_LOG_WARN, "%s; trying step-%lld", ctx->errmsg,
			       (long long)list[i + 1]);
		/* Remembered: a save of one of these steps moves it aside (ckpt_save.c). */
		ck->passed_over = true;
		ck->passed_newest = (uint64_t)list[0];
		ck->passed_oldest = (uint64_t)list[i];
		st = LLMP_OK;
	}
	free(list);
	return st;
}
