/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_read.c - a load's reading: every saved slice that intersects a
 * slice this rank registered is read from its shard, checked against its
 * CRC-32C, and its part in the registered slice copied there.
 *
 * The CRC covers a saved slice whole, so a slice is read whole even when
 * only a part of it is needed. Its bytes are read straight from the shard
 * file, where the MANIFEST says they are, in chunks of whole rows of its
 * first dimension:
 * each chunk is checksummed and copied out while it is still in the cache,
 * and memory stays one chunk whatever the slice's size. A saved slice that
 * is exactly a registered one is read into the program's memory directly.
 * Each shard is opened once, and its slices read in its order.
 *
 * HDF5 is not involved: before a byte of a slice is used, the shard's
 * size and its bytes outside the slices are checked against the MANIFEST
 * (ck_shard_check), so the places the MANIFEST gives are the file's. A
 * damaged file is then reported by name, never handed to a library that
 * may crash or hang on it.
 *
 * The bytes on disk are the slices' bytes as they were in memory (little-
 * endian: the HDF5 types say so, and llmp builds only for such hosts).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_device.h"
#include "ckpt_internal.h"
#include "kernels/crc32c.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the checkpoint format stores memory bytes as little-endian: big-endian hosts are not supported"
#endif

#define CHUNK_BYTES ((size_t)4 << 20)

/* A saved slice to read, and the registered tensor it fills part of. */
struct need {
	const struct ck_slice *saved;
	struct ck_tensor *tensor;
};

/* One shard, open while its slices are read. */
struct shard {
	char path[4200];
	int fd;
};

/* Copy the part of saved slice src (data sdata) that lies in dst (data ddata). */
static void copy_intersection(const struct ck_slice *src, const char *sdata, const struct ck_slice *dst,
			      char *ddata, size_t esize)
{
	unsigned nd = dst->ndim;
	uint64_t lo[LLMP_CKPT_MAX_DIMS], hi[LLMP_CKPT_MAX_DIMS], idx[LLMP_CKPT_MAX_DIMS];
	for (unsigned d = 0; d < nd; d++) {
		lo[d] = src->offset[d] > dst->offset[d] ? src->offset[d] : dst->offset[d];
		uint64_t se = src->offset[d] + src->shape[d], de = dst->offset[d] + dst->shape[d];
		hi[d] = se < de ? se : de;
		if (lo[d] >= hi[d])
			return;
		idx[d] = lo[d];
	}
	size_t run = (size_t)(hi[nd - 1] - lo[nd - 1]) * esize;
	for (;;) {
		/* Row-major positions of idx in both slices. */
		uint64_t spos = 0, dpos = 0;
		for (unsigned d = 0; d < nd; d++) {
			spos = spos * src->shape[d] + (idx[d] - src->offset[d]);
			dpos = dpos * dst->shape[d] + (idx[d] - dst->offset[d]);
		}
		memcpy(ddata + dpos * esize, sdata + spos * esize, run);
		/* Next row: odometer over every dimension but the last. */
		int d = (int)nd - 2;
		while (d >= 0 && ++idx[d] == hi[d]) {
			idx[d] = lo[d];
			d--;
		}
		if (d < 0)
			return;
	}
}

static bool same_region(const struct ck_slice *a, const struct ck_slice *b)
{
	for (unsigned d = 0; d < a->ndim; d++)
		if (a->offset[d] != b->offset[d] || a->shape[d] != b->shape[d])
			return false;
	return true;
}

/* The first slice of m named `name` (slices are sorted by name); m->nslices if none. */
static size_t first_named(const struct ck_manifest *m, const char *name)
{
	size_t lo = 0, hi = m->nslices;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(m->slices[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->nslices && strcmp(m->slices[lo].name, name) == 0 ? lo : m->nslices;
}

/*
 * What this rank reads for tensor t: its saved slices that intersect t's,
 * appended to needs (room for m->nslices). Checks first that the checkpoint
 * has t, with t's dtype and global shape.
 */
static llmp_status plan_tensor(llmp_ckpt *ck, const char *dir, const struct ck_manifest *m,
			       struct ck_tensor *t, struct need *needs, size_t *n)
{
	const struct ck_slice *mine = &t->slice;
	size_t i = first_named(m, mine->name);
	if (i == m->nslices)
		return rt_fail(ck->ctx, LLMP_ERR_MISMATCH, "tensor %s is not in %s", mine->name, dir);
	for (; i < m->nslices && strcmp(m->slices[i].name, mine->name) == 0; i++) {
		const struct ck_slice *s = &m->slices[i];
		bool same = s->dtype == mine->dtype && s->ndim == mine->ndim;
		for (unsigned d = 0; same && d < s->ndim; d++)
			same = s->global[d] == mine->global[d];
		if (!same)
			return rt_fail(ck->ctx, LLMP_ERR_MISMATCH,
				       "tensor %s: %s/" CK_MANIFEST " has it as %s with "
				       "another shape or dtype than registered (%s)",
				       mine->name, dir, llmp_dtype_name((llmp_dtype)s->dtype),
				       llmp_dtype_name((llmp_dtype)mine->dtype));
		if (ck_intersects(s, mine))
			needs[(*n)++] = (struct need){ .saved = s, .tensor = t };
	}
	return LLMP_OK;
}

/* By shard, then by place in the MANIFEST: each shard opened once. */
static int by_shard(const void *pa, const void *pb)
{
	const struct need *a = pa, *b = pb;
	if (a->saved->file != b->saved->file)
		return a->saved->file < b->saved->file ? -1 : 1;
	return a->saved < b->saved ? -1 : a->saved > b->saved;
}

/* len bytes of the shard from offset into buf, added to *crc. */
static llmp_status read_bytes(llmp_ctx *ctx, const struct shard *f, const struct ck_slice *s, uint64_t offset,
			      char *buf, size_t len, uint32_t *crc)
{
	for (size_t done = 0; done < len;) {
		ssize_t got = pread(f->fd, buf + done, len - done, (off_t)(offset + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return rt_fail(ctx, LLMP_ERR_IO, "reading tensor %s from %s: %s", s->name, f->path,
				       got < 0 ? strerror(errno) : "the file ends inside it");
		done += (size_t)got;
	}
	*crc = kern_crc32c(*crc, buf, len);
	return LLMP_OK;
}

/* A saved slice that is exactly the registered one: into the program's memory, a chunk at a time. */
static llmp_status read_whole(llmp_ctx *ctx, const struct shard *f, const struct need *nd, uint64_t offset,
			      uint32_t *crc)
{
	uint64_t bytes = ck_bytes(nd->saved);
	char *data = nd->tensor->data;
	llmp_status st = LLMP_OK;
	for (uint64_t done = 0; st == LLMP_OK && done < bytes; done += CHUNK_BYTES) {
		size_t len = bytes - done < CHUNK_BYTES ? (size_t)(bytes - done) : CHUNK_BYTES;
		st = read_bytes(ctx, f, nd->saved, offset + done, data + done, len, crc);
	}
	return st;
}

/* Any other saved slice: whole rows of its first dimension into *chunk, their part in the tensor copied out. */
static llmp_status read_rows(llmp_ctx *ctx, const struct shard *f, const struct need *nd, uint64_t offset,
			     char **chunk, size_t *chunkcap, uint32_t *crc)
{
	const struct ck_slice *s = nd->saved;
	size_t esize = llmp_dtype_size((llmp_dtype)s->dtype);
	uint64_t row = ck_bytes(s) / s->shape[0], per = row < CHUNK_BYTES ? CHUNK_BYTES / row : 1;
	if (per * row > *chunkcap) {
		free(*chunk);
		*chunkcap = 0;
		if (!(*chunk = malloc((size_t)(per * row))))
			return rt_fail(ctx, LLMP_ERR_NOMEM, "tensor %s: %llu bytes to read it", s->name,
				       (unsigned long long)(per * row));
		*chunkcap = (size_t)(per * row);
	}
	llmp_status st = LLMP_OK;
	for (uint64_t r = 0; st == LLMP_OK && r < s->shape[0]; r += per) {
		struct ck_slice rows = *s;
		rows.offset[0] += r;
		rows.shape[0] = s->shape[0] - r < per ? s->shape[0] - r : per;
		st = read_bytes(ctx, f, s, offset + r * row, *chunk, (size_t)(rows.shape[0] * row), crc);
		if (st == LLMP_OK && ck_intersects(&rows, &nd->tensor->slice))
			copy_intersection(&rows, *chunk, &nd->tensor->slice, nd->tensor->data, esize);
	}
	return st;
}

static void close_shard(struct shard *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

/* Open shard-RANK.h5 (a rank's, or a node's) and check it (size, bytes outside its slices) before reading from it. */
static llmp_status open_shard(llmp_ctx *ctx, const char *dir, const struct ck_manifest *m, uint32_t rank,
			      struct shard *f)
{
	size_t k = ck_manifest_shard(m, rank);
	ck_shard_path(dir, rank, f->path, sizeof f->path);
	if (k == m->nshards)
		return rt_fail(ctx, LLMP_ERR_IO,
			       "%s/" CK_MANIFEST ": a slice is in the shard of rank %u, which it "
			       "does not list",
			       dir, rank);
	if ((f->fd = open(f->path, O_RDONLY | O_CLOEXEC)) < 0)
		return rt_fail(ctx, LLMP_ERR_IO, "open %s: %s", f->path, strerror(errno));
	return ck_shard_check(f->fd, f->path, m, k, ctx->errmsg, sizeof ctx->errmsg);
}

static llmp_status read_need(llmp_ctx *ctx, const struct shard *f, const struct need *nd, char **chunk,
			     size_t *chunkcap)
{
	const struct ck_slice *s = nd->saved;
	uint32_t crc = 0;
	llmp_status st = same_region(s, &nd->tensor->slice)
				 ? read_whole(ctx, f, nd, s->at, &crc)
				 : read_rows(ctx, f, nd, s->at, chunk, chunkcap, &crc);
	if (st == LLMP_OK && crc != s->crc)
		st = rt_fail(ctx, LLMP_ERR_IO,
			     "tensor %s in %s fails its checksum (CRC-32C 0x%08x, MANIFEST "
			     "0x%08x): the file is corrupted",
			     s->name, f->path, crc, s->crc);
	return st;
}

llmp_status ck_read_tensors(llmp_ckpt *ck, const char *dir, const struct ck_manifest *m)
{
	llmp_ctx *ctx = ck->ctx;
	size_t n = 0, chunkcap = 0;
	char *chunk = NULL;
	/* A rank registers a name once, so each saved slice is needed at most once. */
	struct need *needs = malloc((m->nslices ? m->nslices : 1) * sizeof *needs);
	if (!needs)
		return rt_fail(ctx, LLMP_ERR_NOMEM, "planning the reads of %zu tensors", ck->ntensors);
	llmp_status st = LLMP_OK;
	for (size_t i = 0; st == LLMP_OK && i < ck->ntensors; i++)
		st = plan_tensor(ck, dir, m, &ck->tensors[i], needs, &n);
	if (st == LLMP_OK && n)
		qsort(needs, n, sizeof *needs, by_shard);
	struct shard f = { .fd = -1 };
	for (size_t i = 0; st == LLMP_OK && i < n; i++) {
		if (i == 0 || needs[i].saved->file != needs[i - 1].saved->file) {
			close_shard(&f);
			st = open_shard(ctx, dir, m, needs[i].saved->file, &f);
		}
		if (st == LLMP_OK && needs[i].tensor->device) /* through pinned memory to the device */
			st = ck_dev_read(ck, f.fd, f.path, needs[i].saved, needs[i].tensor);
		else if (st == LLMP_OK)
			st = read_need(ctx, &f, &needs[i], &chunk, &chunkcap);
	}
	close_shard(&f);
	free(chunk);
	free(needs);
	return st;
}
