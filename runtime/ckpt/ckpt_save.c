/* SPDX-License-Identifier: BSD-3-Clause */
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_device.h"
#include "ckpt_internal.h"
#include "kernels/copy.h"
#include "kernels/crc32c.h"

/*
 * Rank 0: step-N, which this handle's load found damaged and passed over,
 * renamed step-N.damaged (replacing an older one), so that the run, which
 * resumed from an older checkpoint, can save step N again. Without this a
 * requeued job would fail at that save, and again after every requeue.
 * Kept, not removed: it is what tells the site about a failing disk.
 */
static llmp_status move_damaged_aside(llmp_ckpt *ck, uint64_t step, const char *dir)
{
	llmp_ctx *ctx = ck->ctx;
	char aside[4096];
	ck_step_path(ck->root, step, CK_SUFFIX_DAMAGED, aside, sizeof aside);
	llmp_status st = ck_remove_tree(ctx, aside);
	if (st == LLMP_OK && rename(dir, aside) != 0)
		st = rt_fail(ctx, LLMP_ERR_IO, "rename %s to %s: %s", dir, aside, strerror(errno));
	if (st == LLMP_OK)
		st = ck_fsync_path(ctx, ck->root);
	if (st == LLMP_OK)
		rt_log(ctx, RT_LOG_CKPT, RT_LOG_WARN,
		       "%s failed its checks when loaded; moved to %s to save step %llu again", dir, aside,
		       (unsigned long long)step);
	return st;
}

/*
 * Rank 0: a fresh, empty step-N.tmp. Refuses to overwrite a complete
 * step-N, unless the last load passed over it as damaged.
 */
static llmp_status prepare(llmp_ckpt *ck, uint64_t step)
{
	llmp_ctx *ctx = ck->ctx;
	char dir[4096], tmp[4096];
	struct stat sb;
	ck_step_path(ck->root, step, "", dir, sizeof dir);
	ck_step_path(ck->root, step, CK_SUFFIX_TMP, tmp, sizeof tmp);
	llmp_status st = ck_mkdirs(ctx, ck->root);
	bool exists = st == LLMP_OK && stat(dir, &sb) == 0;
	if (exists && ck->passed_over && step >= ck->passed_oldest && step <= ck->passed_newest)
		st = move_damaged_aside(ck, step, dir);
	else if (exists)
		st = rt_fail(ctx, LLMP_ERR_ARG, "%s exists: step %llu was saved already", dir,
			     (unsigned long long)step);
	if (st == LLMP_OK)
		st = ck_remove_tree(ctx, tmp); /* left by a save that was killed */
	if (st == LLMP_OK && mkdir(tmp, 0755) != 0)
		st = rt_fail(ctx, LLMP_ERR_IO, "mkdir %s: %s", tmp, strerror(errno));
	if (st == LLMP_OK) /* before any shard exists: they inherit it */
		ck_stripe_apply(ck, tmp);
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
	ck_step_path(ck->root, step, "", dir, sizeof dir);
	ck_step_path(ck->root, step, CK_SUFFIX_TMP, tmp, sizeof tmp);

	snprintf(path, sizeof path, "%s/" CK_INDEX, tmp);
	llmp_status st = ck_write_index(ck, path, m->slices, m->nslices);
	/* Read back (a few KiB, cached) for its size and CRC in the MANIFEST. */
	if (st == LLMP_OK)
		st = ck_file_crc(path, &m->index_bytes, &m->index_crc, ctx->errmsg, sizeof ctx->errmsg);
	snprintf(path, sizeof path, "%s/" CK_META, tmp);
	if (st == LLMP_OK)
		st = write_meta(ctx, path, meta, metalen);
	snprintf(path, sizeof path, "%s/" CK_MANIFEST, tmp);
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

/*
 * files=node: the node file this rank laid out, checksummed once every
 * slice's CRC is known (all ranks reach the agreement).
 */
static llmp_status node_file_result(llmp_ckpt *ck, const struct ck_pending *p, int64_t *sizes)
{
	llmp_ctx *ctx = ck->ctx;
	llmp_status local = LLMP_OK;
	if (p->node_bytes) {
		char tmp[4096];
		uint32_t crc = 0;
		ck_step_path(ck->root, p->step, CK_SUFFIX_TMP, tmp, sizeof tmp);
		local = ck_node_file_crc(ck, tmp, p->all, p->n, p->node_bytes, &crc);
		sizes[ctx->rank] = (int64_t)p->node_bytes;
		sizes[ctx->world + ctx->rank] = crc;
	}
	return ck_agree(ck, "checkpoint save: checksumming the node files", local);
}

/*
 * Everyone learns every slice's checksum and place in its shard, and every
 * shard's size and checksum: sums of what each owner knows. sizes[r] and
 * sizes[world + r] are the size and CRC of shard-r.h5 (rank r's, or with
 * files=node the one of the node whose first rank r is).
 */
static llmp_status share_results(llmp_ckpt *ck, struct ck_pending *p, int64_t *sizes)
{
	llmp_ctx *ctx = ck->ctx;
	struct ck_slice *all = p->all;
	size_t n = p->n;
	const struct ck_shard_job *job = &p->job;
	llmp_comm *world;
	llmp_status st = llmp_comm_world(ctx, &world);
	int64_t *slices = calloc(n ? 2 * n : 1, sizeof *slices); /* CRC, then place, of each */
	if (!slices)
		return rt_fail(ctx, LLMP_ERR_NOMEM, "checksums of %zu slices", n);
	for (size_t i = 0; i < n; i++)
		if (all[i].owner == ctx->rank && all[i].rank == ctx->rank) {
			slices[2 * i] = all[i].crc;
			slices[2 * i + 1] = (int64_t)all[i].at;
		}
	memset(sizes, 0, 2 * ctx->world * sizeof *sizes);
	sizes[ctx->rank] = (int64_t)job->bytes_written;
	sizes[ctx->world + ctx->rank] = job->file_crc;
	if (st == LLMP_OK)
		st = llmp_allreduce(world, slices, slices, 2 * n, LLMP_INT64, LLMP_SUM);
	for (size_t i = 0; st == LLMP_OK && i < n; i++) {
		all[i].crc = (uint32_t)slices[2 * i];
		all[i].at = (uint64_t)slices[2 * i + 1];
	}
	if (st == LLMP_OK && ck->node_files)
		st = node_file_result(ck, p, sizes);
	if (st == LLMP_OK)
		st = llmp_allreduce(world, sizes, sizes, 2 * (size_t)ctx->world, LLMP_INT64, LLMP_SUM);
	free(slices);
	return st;
}

/* The distinct slices (replicas dropped) and the shards that exist, as the manifest lists them. */
static llmp_status build_manifest(llmp_ckpt *ck, uint64_t step, const struct ck_slice *all, size_t n,
				  const int64_t *sizes, const void *meta, size_t metalen,
				  struct ck_manifest *m)
{
	llmp_ctx *ctx = ck->ctx;
	memset(m, 0, sizeof *m);
	m->version = ck->node_files ? CK_FORMAT_VERSION : CK_FORMAT_PER_RANK;
	m->step = step;
	m->world = ctx->world;
	snprintf(m->layout, sizeof m->layout, "%s", ctx->layout);
	m->meta_bytes = metalen;
	m->meta_crc = kern_crc32c(0, meta, metalen);
	m->slices = malloc((n ? n : 1) * sizeof *m->slices);
	m->shard_ranks = malloc(ctx->world * sizeof *m->shard_ranks);
	m->shard_bytes = malloc(ctx->world * sizeof *m->shard_bytes);
	m->shard_crcs = malloc(ctx->world * sizeof *m->shard_crcs);
	if (!m->slices || !m->shard_ranks || !m->shard_bytes || !m->shard_crcs) {
		ck_manifest_free(m);
		return rt_fail(ctx, LLMP_ERR_NOMEM, "manifest of %zu slices", n);
	}
	for (size_t i = 0; i < n; i++)
		if (all[i].owner == all[i].rank)
			m->slices[m->nslices++] = all[i];
	for (uint32_t r = 0; r < ctx->world; r++)
		if (sizes[r] > 0) {
			m->shard_ranks[m->nshards] = r;
			m->shard_crcs[m->nshards] = (uint32_t)sizes[ctx->world + r];
			m->shard_bytes[m->nshards++] = (uint64_t)sizes[r];
		}
	return LLMP_OK;
}

llmp_status ck_commit_step(llmp_ckpt *ck, uint64_t step, const struct ck_slice *all, size_t n,
			   const int64_t *sizes, const void *meta, size_t metalen)
{
	struct ck_manifest m;
	llmp_status st = build_manifest(ck, step, all, n, sizes, meta, metalen, &m);
	if (st == LLMP_OK)
		st = commit(ck, step, &m, meta, metalen);
	ck_manifest_free(&m); /* zeroed if build_manifest failed */
	return st;
}

static void *writer(void *arg)
{
	struct ck_pending *p = arg;
	p->status = ck_write_shard(&p->job, p->msg, sizeof p->msg);
	atomic_store(&p->written, true);
	return NULL;
}

static void drop_pending(struct ck_pending *p)
{
	free(p->all);
	free(p->data);
	free(p->meta);
	memset(p, 0, sizeof *p);
}

/*
 * Staging memory, faulted in at once. The first async save copies into
 * fresh memory, and faulting it in page by page as the copy touches it cost
 * 40-50 times the copy itself on the VM of doc/benchmarks.md. So: huge
 * pages where the kernel gives them on request (transparent huge pages in
 * "madvise" mode), and every page populated by one call (Linux 5.14) before
 * the copy. Both are advice: a kernel that refuses them leaves plain pages.
 */
static char *alloc_staging(size_t bytes)
{
	const size_t huge = (size_t)2 << 20;
	size_t rounded = (bytes + huge - 1) / huge * huge;
	void *p = NULL;
	if (bytes < huge)
		return malloc(bytes);
	if (posix_memalign(&p, huge, rounded) != 0)
		return NULL;
#ifdef MADV_HUGEPAGE
	madvise(p, rounded, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
	madvise(p, rounded, MADV_POPULATE_WRITE);
#endif
	return p;
}

/* Whether this rank writes slice s: it holds it and is its owner (the lowest rank holding it). */
static bool writes_slice(const llmp_ctx *ctx, const struct ck_slice *s)
{
	return s->owner == ctx->rank && s->rank == ctx->rank;
}

/* Staging memory for `owned` bytes: kept from save to save, grown when too small. */
static llmp_status reserve_staging(llmp_ckpt *ck, size_t owned)
{
	if (owned <= ck->staging_cap)
		return LLMP_OK;
	free(ck->staging);
	ck->staging_cap = 0;
	if (!(ck->staging = alloc_staging(owned)))
		return rt_fail(ck->ctx, LLMP_ERR_NOMEM, "checkpoint save: %zu bytes of staging memory",
			       owned);
	ck->staging_cap = owned;
	return LLMP_OK;
}

/* Whether an async save of `owned` bytes is staged, or written during the call. */
static bool stages(const llmp_ckpt *ck, size_t owned)
{
	return owned && !(ck->staging_max && owned > ck->staging_max);
}

/*
 * Where this rank's owned slices are read from: staged copies when async
 * and within staging_max, else the program's own buffers. Returns the
 * bytes staged.
 */
static llmp_status place_slices(llmp_ckpt *ck, struct ck_pending *p, bool async, size_t *staged)
{
	llmp_ctx *ctx = ck->ctx;
	size_t owned = 0;
	*staged = 0;
	if (!(p->data = calloc(p->n ? p->n : 1, sizeof *p->data)))
		return rt_fail(ctx, LLMP_ERR_NOMEM, "checkpoint save: %zu slice pointers", p->n);
	for (size_t i = 0; i < p->n; i++) {
		struct ck_slice *s = &p->all[i];
		if (!writes_slice(ctx, s))
			continue;
		p->data[i] = ck->tensors[s->tensor].data;
		owned += (size_t)ck_bytes(s);
		p->writes = true;
	}
	/* Device slices to pinned memory (p->data then points there), or left for the writer to stream. */
	size_t device;
	llmp_status st = ck_dev_stage(ck, p, &device);
	if (st != LLMP_OK || !async || !stages(ck, owned))
		return st;
	if (owned > device && (st = reserve_staging(ck, owned - device)) != LLMP_OK)
		return st;
	for (size_t i = 0, off = 0; i < p->n; i++) {
		if (!p->data[i] || ck->tensors[p->all[i].tensor].device)
			continue;
		size_t bytes = (size_t)ck_bytes(&p->all[i]);
		kern_copy_stream(ck->staging + off, p->data[i],
				 bytes); /* read by the writer, not by this core */
		p->data[i] = ck->staging + off;
		off += bytes;
	}
	*staged = owned;
	return LLMP_OK;
}

llmp_status llmp_ckpt_prepare_async(llmp_ckpt *ck)
{
	if (!ck)
		return LLMP_ERR_ARG;
	struct ck_slice *all;
	size_t n, owned = 0, device = 0;
	/* A pending save's writer reads the staging memory: it is committed first. */
	llmp_status st = llmp_ckpt_wait(ck);
	if (st == LLMP_OK)
		st = ck_plan_slices(ck, &all, &n); /* kept: the next save does not plan again */
	if (st != LLMP_OK)
		return st;
	for (size_t i = 0; i < n; i++)
		if (writes_slice(ck->ctx, &all[i])) {
			owned += (size_t)ck_bytes(&all[i]);
			/* Device slices stage in pinned memory instead (ckpt_device.c). */
			device += ck->tensors[all[i].tensor].device ? (size_t)ck_bytes(&all[i]) : 0;
		}
	free(all);
	llmp_status local = LLMP_OK;
	if (stages(ck, owned) && owned > device)
		local = reserve_staging(ck, owned - device);
	if (local == LLMP_OK)
		local = ck_dev_prepare(ck, device);
	return ck_agree(ck, "checkpoint prepare", local);
}

/* Everything of a save up to the shard write, which starts (staged) or is done (not staged). */
static llmp_status start_save(llmp_ckpt *ck, uint64_t step, const void *meta, size_t metalen, bool async)
{
	llmp_ctx *ctx = ck->ctx;
	struct ck_pending *p = &ck->pending;
	double started = rt_now();
	llmp_status st = llmp_ckpt_wait(ck); /* a save still pending is committed first */
	if (st != LLMP_OK)
		return st;
	llmp_status local = metalen && !meta
				    ? rt_fail(ctx, LLMP_ERR_ARG, "meta is NULL with %zu bytes", metalen)
			    : step == LLMP_CKPT_NEWEST ? rt_fail(ctx, LLMP_ERR_ARG, "step %llu is reserved",
								 (unsigned long long)step)
						       : LLMP_OK;
	if (local == LLMP_OK && ctx->rank == 0)
		local = prepare(ck, step);
	if ((st = ck_agree(ck, "checkpoint save", local)) != LLMP_OK)
		return st;
	rt_log(ctx, RT_LOG_CKPT, RT_LOG_DEBUG,
	       "save of step %llu: step-%llu.tmp ready under %s after %.3f s%s", (unsigned long long)step,
	       (unsigned long long)step, ck->root, rt_now() - started, async ? " (async)" : "");
	if ((st = ck_plan_slices(ck, &p->all, &p->n)) != LLMP_OK)
		return st; /* the same on every rank: the same data, the same checks */
	char tmp[4096];
	ck_step_path(ck->root, step, CK_SUFFIX_TMP, tmp, sizeof tmp);
	/* files=node: each node's file laid out by its first rank before anyone writes into it. */
	if (ck->node_files && (st = ck_node_layout(ck, tmp, p->all, p->n, &p->node_bytes)) != LLMP_OK) {
		drop_pending(p);
		return st;
	}

	size_t staged = 0;
	p->step = step;
	p->started = started;
	p->metalen = metalen;
	local = place_slices(ck, p, async, &staged);
	if (local == LLMP_OK && metalen && !(p->meta = malloc(metalen)))
		local = rt_fail(ctx, LLMP_ERR_NOMEM, "checkpoint save: %zu bytes of metadata", metalen);
	if (local == LLMP_OK && metalen)
		memcpy(p->meta, meta, metalen);
	if (local == LLMP_OK && p->writes) {
		struct ck_shard_job *job = &p->job;
		ck_shard_path(tmp, ck->node_files ? ck->leader_of[ctx->rank] : ctx->rank, job->path,
			      sizeof job->path);
		job->laid_out = ck->node_files;
		job->alignment = ck->alignment;
		job->all = p->all;
		job->data = p->data;
		job->n = p->n;
		if (staged && pthread_create(&p->thread, NULL, writer, p) == 0)
			p->threaded = true;
		else
			writer(p); /* not staged, or no thread to be had: write now */
	}
	p->active = true;
	if (rt_log_on(ctx, RT_LOG_CKPT, RT_LOG_DEBUG)) {
		char copied[48] = "";
		if (staged)
			snprintf(copied, sizeof copied, ", %zu bytes staged first", staged);
		rt_log(ctx, RT_LOG_CKPT, RT_LOG_DEBUG, "save of step %llu: this rank's shard %s%s",
		       (unsigned long long)step,
		       !p->writes    ? "has nothing to write"
		       : p->threaded ? "is being written by a thread"
				     : "written",
		       copied);
	}
	ck->stats = (llmp_ckpt_stats){ .step = step,
				       .staged_bytes = staged,
				       .staging_max = ck->staging_max,
				       .stall_seconds = rt_now() - started };
	/* A failure here is reported by the wait, which every rank reaches. */
	if (local != LLMP_OK) {
		p->status = local;
		snprintf(p->msg, sizeof p->msg, "%s", ctx->errmsg);
	}
	return LLMP_OK;
}

llmp_status llmp_ckpt_wait(llmp_ckpt *ck)
{
	if (!ck)
		return LLMP_ERR_ARG;
	struct ck_pending *p = &ck->pending;
	llmp_ctx *ctx = ck->ctx;
	if (!p->active)
		return LLMP_OK;
	if (p->threaded)
		pthread_join(p->thread, NULL);
	llmp_status local = p->status;
	if (local != LLMP_OK)
		rt_fail(ctx, local, "%s", p->msg);
	llmp_status st = ck_agree(ck, "checkpoint save: writing shards", local);
	if (st == LLMP_OK)
		rt_log(ctx, RT_LOG_CKPT, RT_LOG_DEBUG,
		       "save of step %llu: every rank's shard written, %.3f s in",
		       (unsigned long long)p->step, rt_now() - p->started);

	int64_t *sizes = st == LLMP_OK ? malloc(2 * ctx->world * sizeof *sizes) : NULL;
	if (st == LLMP_OK && !sizes)
		st = rt_fail(ctx, LLMP_ERR_NOMEM, "shard sizes");
	if (st == LLMP_OK)
		st = share_results(ck, p, sizes);
	if (st == LLMP_OK) {
		local = ctx->rank == 0 ? ck_commit_step(ck, p->step, p->all, p->n, sizes, p->meta, p->metalen)
				       : LLMP_OK;
		st = ck_agree(ck, "checkpoint save: commit", local);
	}
	free(sizes);
	ck->stats.total_seconds = rt_now() - p->started;
	if (st == LLMP_OK)
		rt_log(ctx, RT_LOG_CKPT, RT_LOG_DEBUG,
		       "save of step %llu: committed (index, MANIFEST, rename, retention), %.3f s in all",
		       (unsigned long long)p->step, ck->stats.total_seconds);
	drop_pending(p);
	return st;
}

bool ck_pending_written(const llmp_ckpt *ck)
{
	const struct ck_pending *p = &ck->pending;
	return !p->active || !p->threaded || atomic_load(&p->written);
}

void ck_abandon(llmp_ckpt *ck)
{
	struct ck_pending *p = &ck->pending;
	if (!p->active)
		return;
	if (p->threaded)
		pthread_join(p->thread, NULL);
	drop_pending(p); /* its step-N.tmp stays: invisible, removed by the next save of N */
}

llmp_status llmp_ckpt_save(llmp_ckpt *ck, uint64_t step, const void *meta, size_t metalen)
{
	if (!ck)
		return LLMP_ERR_ARG;
	llmp_status st = start_save(ck, step, meta, metalen, false);
	return st == LLMP_OK ? llmp_ckpt_wait(ck) : st;
}

llmp_status llmp_ckpt_save_async(llmp_ckpt *ck, uint64_t step, const void *meta, size_t metalen)
{
	if (!ck)
		return LLMP_ERR_ARG;
	return start_save(ck, step, meta, metalen, true);
}
