/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_node.c - files=node: one shard file per node instead of one per
 * rank, so a save makes (and a load opens) tasks-per-node times fewer files
 * on a parallel filesystem, where each create, open and fsync is a round
 * trip to a metadata server.
 *
 * HDF5 without MPI-IO takes one writer per file. So the node's first rank
 * (the lowest world rank on it) creates the file alone, with a contiguous
 * dataset for every slice its node's ranks own, allocated but not written
 * (ckpt_hdf5.c), and closes it. Every rank learns where its slices go (one
 * sum-allreduce of their places), and writes their bytes there itself with
 * pwrite, checksumming them as a rank with its own file does, then fsyncs.
 * The bytes outside the slices (HDF5's metadata) are the first rank's, so
 * the file's CRC-32C is joined by that rank from them and the slices' CRCs
 * once every rank has reported its own (ck_node_file_crc), exactly as a
 * rank's own shard's is: the MANIFEST's file CRC is still the plain CRC-32C
 * of the file. That rank fsyncs the file then too, for its metadata: not
 * while laying it out, where every rank of the node waits for it.
 *
 * Which ranks share a node: those whose node name is the same, that is
 * SLURMD_NODENAME under Slurm (the test cluster's nodes share one kernel,
 * so nothing else tells them apart), else the kernel's boot id and PID
 * namespace (what the shared-memory transport uses). Every rank's name
 * is gathered once per handle, as a 64-bit hash.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_device.h"
#include "ckpt_internal.h"
#include "kernels/crc32c.h"
#include "runtime/comm/liveness.h"

/* FNV-1a of this rank's node name. */
static uint64_t node_key(void)
{
	char machine[96];
	const char *name = getenv("SLURMD_NODENAME");
	if (!name || !*name) {
		rt_machine_id(machine, sizeof machine);
		name = machine;
	}
	uint64_t h = 14695981039346656037ULL;
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return h;
}

struct keyed {
	uint64_t key;
	uint32_t rank;
};

static int by_key(const void *pa, const void *pb)
{
	const struct keyed *a = pa, *b = pb;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* ck->leader_of: every rank's node's first rank, from every rank's node key (collective, once). */
static llmp_status node_map(llmp_ckpt *ck)
{
	llmp_ctx *ctx = ck->ctx;
	llmp_comm *world;
	if (ck->leader_of)
		return LLMP_OK;
	uint64_t mine = node_key(), *keys = malloc(ctx->world * sizeof *keys);
	struct keyed *sorted = malloc(ctx->world * sizeof *sorted);
	uint32_t *leader_of = malloc(ctx->world * sizeof *leader_of);
	llmp_status st = keys && sorted && leader_of
				 ? llmp_comm_world(ctx, &world)
				 : rt_fail(ctx, LLMP_ERR_NOMEM, "node map of %u ranks", ctx->world);
	if (st == LLMP_OK)
		st = llmp_allgather(world, &mine, keys, 1, LLMP_INT64); /* bits moved as they are */
	for (uint32_t r = 0; st == LLMP_OK && r < ctx->world; r++)
		sorted[r] = (struct keyed){ .key = keys[r], .rank = r };
	if (st == LLMP_OK)
		qsort(sorted, ctx->world, sizeof *sorted, by_key);
	/* Sorted by key then rank: a node's first entry is its lowest rank. */
	for (uint32_t i = 0, first = 0; st == LLMP_OK && i < ctx->world; i++) {
		if (i > 0 && sorted[i].key != sorted[i - 1].key)
			first = i;
		leader_of[sorted[i].rank] = sorted[first].rank;
	}
	free(keys);
	free(sorted);
	if (st != LLMP_OK) {
		free(leader_of);
		return st;
	}
	ck->leader_of = leader_of;
	return LLMP_OK;
}

/* Every rank knows every slice's place: the sum of what each node's first rank laid out. */
static llmp_status share_places(llmp_ckpt *ck, struct ck_slice *all, size_t n)
{
	llmp_ctx *ctx = ck->ctx;
	llmp_comm *world;
	int64_t *at = calloc(n ? n : 1, sizeof *at);
	llmp_status st = at ? llmp_comm_world(ctx, &world)
			    : rt_fail(ctx, LLMP_ERR_NOMEM, "places of %zu slices", n);
	for (size_t i = 0; st == LLMP_OK && i < n; i++)
		if (all[i].file == ctx->rank && all[i].owner == all[i].rank)
			at[i] = (int64_t)all[i].at;
	if (st == LLMP_OK)
		st = llmp_allreduce(world, at, at, n, LLMP_INT64, LLMP_SUM);
	for (size_t i = 0; st == LLMP_OK && i < n; i++)
		all[i].at = (uint64_t)at[i];
	free(at);
	return st;
}

llmp_status ck_node_layout(llmp_ckpt *ck, const char *tmp, struct ck_slice *all, size_t n, uint64_t *laid_out)
{
	llmp_ctx *ctx = ck->ctx;
	llmp_status st = node_map(ck), local = LLMP_OK;
	bool lays_out = false;
	*laid_out = 0;
	if (st != LLMP_OK)
		return ck_agree(ck, "checkpoint save: which ranks share a node", st);
	for (size_t i = 0; i < n; i++) {
		all[i].file = ck->leader_of[all[i].owner];
		all[i].node_file = true;
		lays_out |= all[i].file == ctx->rank && all[i].owner == all[i].rank;
	}
	if (lays_out) {
		char path[4200];
		ck_shard_path(tmp, ctx->rank, path, sizeof path);
		local = ck_layout_node_file(path, ck->alignment, ctx->rank, all, n, laid_out, ctx->errmsg,
					    sizeof ctx->errmsg);
	}
	st = ck_agree(ck, "checkpoint save: laying out the node files", local);
	return st == LLMP_OK ? share_places(ck, all, n) : st;
}

/* Every byte of buf at offset of fd. */
static bool write_all(int fd, const char *buf, uint64_t len, uint64_t offset)
{
	for (uint64_t done = 0; done < len;) {
		size_t want = len - done > ((size_t)1 << 30) ? (size_t)1 << 30 : (size_t)(len - done);
		ssize_t put = pwrite(fd, buf + done, want, (off_t)(offset + done));
		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0)
			return false;
		done += (uint64_t)put;
	}
	return true;
}

llmp_status ck_write_node_slices(struct ck_shard_job *job, char *msg, size_t msglen)
{
	int fd = open(job->path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return llmp_fail(LLMP_ERR_IO, msg, msglen, "open %s: %s", job->path, strerror(errno));
	llmp_status st = LLMP_OK;
	for (size_t i = 0; st == LLMP_OK && i < job->n; i++) {
		struct ck_slice *s = &job->all[i];
		if (!job->data[i])
			continue;
		if (ck_dev_streams(job, i)) { /* from device memory, by chunks */
			st = ck_dev_write_slice(job, i, msg, msglen);
			continue;
		}
		s->crc = kern_crc32c(0, job->data[i], ck_bytes(s));
		if (!write_all(fd, job->data[i], ck_bytes(s), s->at))
			st = llmp_fail(LLMP_ERR_IO, msg, msglen, "writing tensor %s to %s at byte %llu: %s",
				       s->name, job->path, (unsigned long long)s->at, strerror(errno));
	}
	if (st == LLMP_OK && fsync(fd) != 0)
		st = llmp_fail(LLMP_ERR_IO, msg, msglen, "fsync %s: %s", job->path, strerror(errno));
	if (close(fd) != 0 && st == LLMP_OK)
		st = llmp_fail(LLMP_ERR_IO, msg, msglen, "close %s: %s", job->path, strerror(errno));
	job->bytes_written = 0; /* the file's size is its first rank's to report */
	job->file_crc = 0;
	return st;
}

llmp_status ck_node_file_crc(llmp_ckpt *ck, const char *tmp, const struct ck_slice *all, size_t n,
			     uint64_t bytes, uint32_t *crc)
{
	llmp_ctx *ctx = ck->ctx;
	char path[4200];
	size_t count = 0;
	ck_shard_path(tmp, ctx->rank, path, sizeof path);
	struct ck_extent *e = malloc((n ? n : 1) * sizeof *e);
	if (!e)
		return rt_fail(ctx, LLMP_ERR_NOMEM, "checksumming %s", path);
	for (size_t i = 0; i < n; i++)
		if (all[i].file == ctx->rank && all[i].owner == all[i].rank)
			e[count++] = (struct ck_extent){ .at = all[i].at,
							 .bytes = ck_bytes(&all[i]),
							 .crc = all[i].crc };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	llmp_status st = fd < 0 ? rt_fail(ctx, LLMP_ERR_IO, "open %s: %s", path, strerror(errno)) : LLMP_OK;
	if (st == LLMP_OK)
		st = ck_extents_check(e, count, bytes, path, ctx->errmsg, sizeof ctx->errmsg);
	if (st == LLMP_OK)
		st = ck_crc_around(fd, bytes, e, count, path, crc, ctx->errmsg, sizeof ctx->errmsg);
	/* The HDF5 metadata this rank wrote when laying the file out: durable before the commit. */
	if (st == LLMP_OK && fsync(fd) != 0)
		st = rt_fail(ctx, LLMP_ERR_IO, "fsync %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(e);
	return st;
}
