/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_read.c - a load's reading: every saved slice that intersects a
 * slice some rank registered is read from its shard, once, by one of the
 * ranks that need it, checked against its CRC-32C, and its part in each
 * registered slice copied there or sent to the rank that registered it
 * (below: "a load shared by the ranks").
 *
 * The CRC covers a saved slice whole, so a slice is read whole even when
 * only a part of it is needed, straight from the shard file, where the
 * MANIFEST says it is. A saved slice that is exactly a registered one is
 * read into the program's memory directly. Alone (one rank, or device
 * tensors), a rank reads in chunks of whole rows of a slice's first
 * dimension: each chunk is checksummed and copied out while it is still in
 * the cache, and memory stays one chunk whatever the slice's size. Each
 * shard is opened once per reader, and its slices read in its order.
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
#include "runtime/coll/coll.h"
#include "runtime/comm/transport.h"

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

static llmp_status checksum_ok(llmp_ctx *ctx, const struct shard *f, const struct ck_slice *s, uint32_t crc)
{
	if (crc == s->crc)
		return LLMP_OK;
	return rt_fail(ctx, LLMP_ERR_IO,
		       "tensor %s in %s fails its checksum (CRC-32C 0x%08x, MANIFEST "
		       "0x%08x): the file is corrupted",
		       s->name, f->path, crc, s->crc);
}

static llmp_status read_need(llmp_ctx *ctx, const struct shard *f, const struct need *nd, char **chunk,
			     size_t *chunkcap)
{
	const struct ck_slice *s = nd->saved;
	uint32_t crc = 0;
	llmp_status st = same_region(s, &nd->tensor->slice)
				 ? read_whole(ctx, f, nd, s->at, &crc)
				 : read_rows(ctx, f, nd, s->at, chunk, chunkcap, &crc);
	return st == LLMP_OK ? checksum_ok(ctx, f, s, crc) : st;
}

/* Each rank alone: every saved slice it needs read whole from its shard (one rank, or device tensors). */
static llmp_status read_alone(llmp_ckpt *ck, const char *dir, const struct ck_manifest *m, struct need *needs,
			      size_t n)
{
	llmp_ctx *ctx = ck->ctx;
	size_t chunkcap = 0;
	char *chunk = NULL;
	llmp_status st = LLMP_OK;
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
	return st;
}

/* ------------------------------------------------ a load shared by the ranks */

/*
 * When every rank read every saved slice it needed whole, a resharded load
 * of W ranks read up to W times the checkpoint (each rank a part of every
 * slice, the whole slice for its CRC): 0.27x a plain read on the test
 * cluster's GlusterFS volume with 6 ranks. So ranks share the reading: each
 * saved slice that some rank needs is read whole, and checked, by one of the
 * ranks that need it (choose_readers), and the part each other rank needs is
 * sent to it. The checkpoint is read once.
 *
 * Which saved slices each rank wants is gathered by every rank (4 bytes a
 * want), so every rank works out the same readers with no further
 * agreement; the region a rank registered, which the reader needs to cut
 * its part, goes only to the readers of the slices it wants (136 bytes a
 * want, which gathered on every rank took 171 MB each at 16,384 ranks of
 * 77 tensors). The parts move while the readers read (read_and_share): 5
 * rounds of pairwise messages after every read took 35-80 ms of a 240-320
 * ms restore there.
 */
struct want {
	uint32_t slice;  /* index into the MANIFEST's slices; UINT32_MAX: an unused record */
	uint32_t tensor; /* the wanting rank's tensor (used on that rank only) */
	uint64_t offset[LLMP_CKPT_MAX_DIMS], shape[LLMP_CKPT_MAX_DIMS];
};

/* One load's shared plan: who wants and who reads each slice. */
struct share {
	uint32_t *slice_of; /* world x per: the slice each rank's want record is of, rank-major */
	struct want *own;   /* this rank's per want records, in its needs' order */
	struct want *got;   /* the want records of other ranks for the slices this rank reads */
	uint32_t *got_at;   /* world x per: where a record is in got, UINT32_MAX: not here */
	size_t per;
	uint32_t *reader;   /* per MANIFEST slice: the rank that reads it, UINT32_MAX: nobody */
	char **data;        /* per MANIFEST slice this rank reads: its bytes */
	bool *borrowed;     /* data[j] is a registered tensor's memory, not ours to free */
	uint32_t world, me; /* world size, this rank */
	uint32_t *order;    /* the slices read, in read_order's order (norder of them) */
	size_t norder;
	uint32_t *mine; /* per MANIFEST slice: this rank's need of it, UINT32_MAX: none */
	/*
	 * Who wants each slice: the records of all wanting it, slice j's at
	 * wanted[first[j]] to wanted[first[j + 1]] (slice << 32 | record, in
	 * rank order; a record's rank is its index / per).
	 */
	uint64_t *wanted;
	size_t *first;
};

/* The region of slice s's tensor that want w registered, as a slice. */
static struct ck_slice region_of(const struct ck_slice *s, const struct want *w)
{
	struct ck_slice r = *s;
	memcpy(r.offset, w->offset, sizeof r.offset);
	memcpy(r.shape, w->shape, sizeof r.shape);
	return r;
}

/* The intersection of saved slice s and region r, as a slice of its own; its bytes. */
static uint64_t box_of(const struct ck_slice *s, const struct ck_slice *r, struct ck_slice *box)
{
	*box = *s;
	uint64_t bytes = llmp_dtype_size((llmp_dtype)s->dtype);
	for (unsigned d = 0; d < s->ndim; d++) {
		uint64_t lo = s->offset[d] > r->offset[d] ? s->offset[d] : r->offset[d];
		uint64_t se = s->offset[d] + s->shape[d], re = r->offset[d] + r->shape[d];
		uint64_t hi = se < re ? se : re;
		box->offset[d] = lo;
		box->shape[d] = hi > lo ? hi - lo : 0;
		bytes *= box->shape[d];
	}
	return bytes;
}

/* Which slice every rank wants, gathered (one allreduce for the count, one allgather); this rank's wants whole. */
static llmp_status gather_wants(llmp_ckpt *ck, const struct ck_manifest *m, const struct need *needs,
				size_t n, llmp_comm *world, struct share *sh)
{
	int64_t most = (int64_t)n;
	llmp_status st = llmp_allreduce(world, &most, &most, 1, LLMP_INT64, LLMP_MAX);
	if (st != LLMP_OK)
		return st;
	sh->per = (size_t)most;
	size_t slots = sh->per ? sh->per : 1;
	uint32_t *mine = malloc(slots * sizeof *mine);
	sh->own = calloc(slots, sizeof *sh->own);
	sh->slice_of = malloc((sh->per * sh->world > 0 ? sh->per * sh->world : 1) * sizeof *sh->slice_of);
	if (!mine || !sh->own || !sh->slice_of) {
		free(mine);
		return rt_fail(ck->ctx, LLMP_ERR_NOMEM, "checkpoint load: %zu x %u read plans", sh->per,
			       sh->world);
	}
	for (size_t i = 0; i < sh->per; i++)
		mine[i] = sh->own[i].slice = UINT32_MAX;
	for (size_t i = 0; i < n; i++) {
		const struct ck_slice *r = &needs[i].tensor->slice;
		mine[i] = sh->own[i].slice = (uint32_t)(needs[i].saved - m->slices);
		sh->own[i].tensor = (uint32_t)(needs[i].tensor - ck->tensors);
		memcpy(sh->own[i].offset, r->offset, sizeof sh->own[i].offset);
		memcpy(sh->own[i].shape, r->shape, sizeof sh->own[i].shape);
	}
	st = llmp_allgather(world, mine, sh->slice_of, sh->per * sizeof *mine, LLMP_UINT8);
	free(mine);
	return st;
}

static int by_slice_then_record(const void *pa, const void *pb)
{
	const uint64_t *a = pa, *b = pb;
	return *a < *b ? -1 : *a > *b;
}

/*
 * Each wanted slice's reader, slices taken in the MANIFEST's order so that
 * every rank reaches the same choice: the rank whose shard file holds it,
 * when that rank wants it and would not have a slice more to read than the
 * least loaded (a load in the layout of the save then reads its own shard
 * alone: one open, one check of its bytes); else, of the ranks that want
 * it, the one with the fewest bytes to read so far, the lowest on a tie.
 */
static uint32_t reader_of(const struct ck_slice *s, const uint64_t *pairs, size_t n, size_t per,
			  const uint64_t *load)
{
	uint32_t least = (uint32_t)((uint32_t)pairs[0] / per);
	bool file_wants = false;
	for (size_t i = 0; i < n; i++) {
		uint32_t r = (uint32_t)((uint32_t)pairs[i] / per);
		file_wants |= r == s->file;
		if (load[r] < load[least])
			least = r;
	}
	return file_wants && load[s->file] <= load[least] + ck_bytes(s) ? s->file : least;
}

static llmp_status choose_readers(llmp_ckpt *ck, const struct ck_manifest *m, struct share *sh)
{
	size_t records = sh->per * sh->world, n = 0, slots = m->nslices ? m->nslices : 1;
	uint64_t *load = calloc(sh->world, sizeof *load);
	uint64_t *pairs = sh->wanted = malloc((records ? records : 1) * sizeof *pairs);
	sh->first = calloc(slots + 1, sizeof *sh->first);
	sh->reader = malloc(slots * sizeof *sh->reader);
	sh->data = calloc(slots, sizeof *sh->data);
	sh->borrowed = calloc(slots, sizeof *sh->borrowed);
	if (!load || !pairs || !sh->first || !sh->reader || !sh->data || !sh->borrowed) {
		free(load);
		return rt_fail(ck->ctx, LLMP_ERR_NOMEM, "checkpoint load: readers of %zu slices", m->nslices);
	}
	if (records > UINT32_MAX) {
		free(load);
		return rt_fail(ck->ctx, LLMP_ERR_UNSUPPORTED,
			       "checkpoint load: %u ranks x %zu wanted slices each is beyond 2^32 records",
			       sh->world, sh->per);
	}
	memset(sh->reader, 0xff, slots * sizeof *sh->reader);
	for (size_t i = 0; i < records; i++)
		if (sh->slice_of[i] != UINT32_MAX)
			pairs[n++] = (uint64_t)sh->slice_of[i] << 32 | (uint64_t)i;
	qsort(pairs, n, sizeof *pairs, by_slice_then_record); /* records are rank-major: rank order */
	for (size_t i = 0, end; i < n; i = end) {
		uint32_t j = (uint32_t)(pairs[i] >> 32);
		for (end = i + 1; end < n && pairs[end] >> 32 == j;)
			end++;
		sh->first[j + 1] = end - i;
		sh->reader[j] = reader_of(&m->slices[j], pairs + i, end - i, sh->per, load);
		load[sh->reader[j]] += ck_bytes(&m->slices[j]);
	}
	for (size_t j = 0; j < m->nslices; j++) /* counts to starts */
		sh->first[j + 1] += sh->first[j];
	free(load);
	return LLMP_OK;
}

/* Saved slice s whole into buf, a chunk at a time, checked against its CRC-32C. */
static llmp_status read_checked(llmp_ctx *ctx, const struct shard *f, const struct ck_slice *s, char *buf)
{
	uint64_t bytes = ck_bytes(s);
	uint32_t crc = 0;
	llmp_status st = LLMP_OK;
	for (uint64_t done = 0; st == LLMP_OK && done < bytes; done += CHUNK_BYTES) {
		size_t len = bytes - done < CHUNK_BYTES ? (size_t)(bytes - done) : CHUNK_BYTES;
		st = read_bytes(ctx, f, s, s->at + done, buf + done, len, &crc);
	}
	return st == LLMP_OK ? checksum_ok(ctx, f, s, crc) : st;
}

/*
 * The order in which the slices are read, by their readers, and their
 * parts sent: by shard file, then offset in it (each shard opened once),
 * then MANIFEST place. Every rank works it out alike, so the messages
 * between two ranks, one per slice, match in the order they are posted.
 */
struct place {
	uint64_t file, at;
	uint32_t slice;
};

static int by_place(const void *pa, const void *pb)
{
	const struct place *a = pa, *b = pb;
	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	return a->slice < b->slice ? -1 : a->slice > b->slice;
}

/* The slices some rank reads, in the order above, and this rank's need of each slice. */
static llmp_status plan_share(llmp_ckpt *ck, const struct ck_manifest *m, const struct need *needs, size_t n,
			      struct share *sh)
{
	size_t slots = m->nslices ? m->nslices : 1;
	struct place *p = malloc(slots * sizeof *p);
	sh->order = malloc(slots * sizeof *sh->order);
	sh->mine = malloc(slots * sizeof *sh->mine);
	if (!p || !sh->order || !sh->mine) {
		free(p);
		return rt_fail(ck->ctx, LLMP_ERR_NOMEM, "checkpoint load: the order of %zu slices",
			       m->nslices);
	}
	sh->norder = 0;
	for (size_t j = 0; j < m->nslices; j++) {
		sh->mine[j] = UINT32_MAX;
		if (sh->reader[j] != UINT32_MAX)
			p[sh->norder++] = (struct place){ m->slices[j].file, m->slices[j].at, (uint32_t)j };
	}
	qsort(p, sh->norder, sizeof *p, by_place);
	for (size_t i = 0; i < sh->norder; i++)
		sh->order[i] = p[i].slice;
	for (size_t i = 0; i < n; i++)
		sh->mine[needs[i].saved - m->slices] = (uint32_t)i;
	free(p);
	return LLMP_OK;
}

/*
 * Whether box lies in one run of slice outer's memory (row-major), and
 * where: a box that takes whole rows of every dimension after its first
 * partial one, and one index of every dimension before it.
 */
static bool contiguous_in(const struct ck_slice *outer, const struct ck_slice *box, uint64_t *byte_offset)
{
	unsigned nd = outer->ndim, d = 0;
	while (d < nd && box->shape[d] == 1 && outer->shape[d] != 1)
		d++;
	for (unsigned e = d + 1; e < nd; e++)
		if (box->shape[e] != outer->shape[e])
			return false;
	uint64_t at = 0;
	for (unsigned e = 0; e < nd; e++)
		at = at * outer->shape[e] + (box->offset[e] - outer->offset[e]);
	*byte_offset = at * llmp_dtype_size((llmp_dtype)outer->dtype);
	return true;
}

/* A message of the exchange: a part of a slice, to or from another rank. */
struct part {
	rt_req req;
	char *buf;   /* ours to free: packed (sends), or to unpack (receives) */
	uint32_t at; /* receives: this rank's want record */
};

struct parts {
	struct part *p;
	size_t n, cap;
	uint64_t bytes; /* sends: packed bytes not yet known delivered */
};

static struct part *add_part(struct parts *ps)
{
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? 2 * ps->cap : 64;
		struct part *p = realloc(ps->p, cap * sizeof *p);
		if (!p)
			return NULL;
		ps->p = p;
		ps->cap = cap;
	}
	struct part *p = &ps->p[ps->n++];
	memset(p, 0, sizeof *p);
	return p;
}

/* Every request of ps waited for (into reqs, a scratch array of ps->n) and its buffers freed. */
static llmp_status settle(llmp_comm *world, struct parts *ps, rt_req *reqs, bool unpack_into_tensors,
			  llmp_ckpt *ck, const struct ck_manifest *m, const struct share *sh)
{
	for (size_t i = 0; i < ps->n; i++)
		reqs[i] = ps->p[i].req;
	llmp_status st = ps->n ? rt_tx_wait(world, "checkpoint load", reqs, ps->n) : LLMP_OK;
	for (size_t i = 0; i < ps->n; i++) {
		struct part *pt = &ps->p[i];
		if (st == LLMP_OK && unpack_into_tensors && pt->buf) {
			const struct want *w = &sh->own[pt->at];
			const struct ck_slice *s = &m->slices[w->slice];
			struct ck_tensor *t = &ck->tensors[w->tensor];
			struct ck_slice box;
			box_of(s, &t->slice, &box);
			copy_intersection(&box, pt->buf, &t->slice, t->data,
					  llmp_dtype_size((llmp_dtype)s->dtype));
		}
		free(pt->buf);
	}
	ps->n = 0;
	ps->bytes = 0;
	return st;
}

/* Packed bytes of sends in flight before this rank waits for them to be delivered. */
#define SEND_WINDOW ((uint64_t)256 << 20)

/*
 * Read the slices this rank reads for all, in read_order, and send each
 * one's parts to the ranks that want them as soon as it is read and
 * checked, while the others' parts arrive: every receive was posted first,
 * straight into the tensor where the part is one run of its memory. One
 * call's tag on the world, the messages between two ranks matched in
 * order. A slice that fails to read or check still sends its parts (zeros
 * or what was read), so nobody waits for them; the status after says it,
 * and ck_agree fails the load on every rank.
 */
static llmp_status read_and_share(llmp_ckpt *ck, const char *dir, const struct ck_manifest *m,
				  const struct need *needs, struct share *sh, llmp_comm *world)
{
	llmp_ctx *ctx = ck->ctx;
	struct parts in = { 0 }, out = { 0 };
	rt_req *reqs = NULL;
	size_t norder = sh->norder, reqcap = 0;
	const uint32_t *order = sh->order, *mine = sh->mine;
	struct shard f = { .fd = -1 };
	uint32_t last = UINT32_MAX;
	rt_call call;
	llmp_status read_st = LLMP_OK, st = rt_call_begin(&call, world, "checkpoint load", NULL, NULL, 0,
							  LLMP_UINT8, LLMP_SUM, false);
	/* The receives, in each reader's order. */
	const struct want *w = sh->own;
	for (size_t k = 0; st == LLMP_OK && k < norder; k++) {
		uint32_t j = order[k], from = sh->reader[j];
		if (from == sh->me || mine[j] == UINT32_MAX)
			continue;
		size_t i = mine[j]; /* want records are made in needs' order (gather_wants) */
		const struct ck_slice *s = &m->slices[j];
		struct ck_tensor *t = &ck->tensors[w[i].tensor];
		struct ck_slice box;
		uint64_t len = box_of(s, &t->slice, &box), at;
		struct part *pt = add_part(&in);
		if (!pt) {
			st = rt_fail(ctx, LLMP_ERR_NOMEM, "checkpoint load: receives");
			break;
		}
		pt->at = (uint32_t)i;
		char *dst;
		if (contiguous_in(&t->slice, &box, &at)) {
			dst = (char *)t->data + at;
		} else if (!(dst = pt->buf = malloc(len ? (size_t)len : 1))) {
			st = rt_fail(ctx, LLMP_ERR_NOMEM, "tensor %s: %llu bytes to receive a part of it",
				     s->name, (unsigned long long)len);
			break;
		}
		if ((st = rt_tx_irecv(world, from, rt_call_tag(&call, from), dst, (size_t)len, &pt->req)) !=
		    LLMP_OK) {
			free(pt->buf);
			in.n--;
		}
	}
	/* The reads, each slice's parts sent as soon as it is checked. */
	for (size_t k = 0; st == LLMP_OK && k < norder; k++) {
		uint32_t j = order[k];
		if (sh->reader[j] != sh->me)
			continue;
		const struct ck_slice *s = &m->slices[j];
		const struct need *nd = &needs[mine[j]];
		size_t esize = llmp_dtype_size((llmp_dtype)s->dtype);
		sh->borrowed[j] = same_region(s, &nd->tensor->slice);
		sh->data[j] = sh->borrowed[j] ? nd->tensor->data : calloc(ck_bytes(s) ? ck_bytes(s) : 1, 1);
		if (!sh->data[j]) {
			st = rt_fail(ctx, LLMP_ERR_NOMEM, "tensor %s: %llu bytes to read it", s->name,
				     (unsigned long long)ck_bytes(s));
			break;
		}
		if (read_st == LLMP_OK && s->file != last) {
			close_shard(&f);
			read_st = open_shard(ctx, dir, m, s->file, &f);
			last = s->file;
		}
		if (read_st == LLMP_OK)
			read_st = read_checked(ctx, &f, s, sh->data[j]);
		if (read_st == LLMP_OK && !sh->borrowed[j])
			copy_intersection(s, sh->data[j], &nd->tensor->slice, nd->tensor->data, esize);
		/* to every other rank that wants it, in rank order */
		for (size_t p = sh->first[j]; st == LLMP_OK && p < sh->first[j + 1]; p++) {
			uint32_t record = (uint32_t)sh->wanted[p], to = (uint32_t)(record / sh->per);
			if (to == sh->me)
				continue;
			struct ck_slice region = region_of(s, &sh->got[sh->got_at[record]]), box;
			uint64_t len = box_of(s, &region, &box);
			struct part *pt = add_part(&out);
			if (!pt || !(pt->buf = malloc(len ? (size_t)len : 1))) {
				st = rt_fail(ctx, LLMP_ERR_NOMEM,
					     "tensor %s: %llu bytes to send a part of it", s->name,
					     (unsigned long long)len);
				break;
			}
			copy_intersection(s, sh->data[j], &box, pt->buf, esize);
			if ((st = rt_tx_isend(world, to, rt_call_tag(&call, sh->me), pt->buf, (size_t)len,
					      &pt->req)) != LLMP_OK) {
				free(pt->buf);
				out.n--;
				break;
			}
			out.bytes += len;
		}
		rt_tx_progress(ctx); /* what arrived meanwhile, and the sends' next steps */
		if (st == LLMP_OK && out.bytes > SEND_WINDOW) {
			if (out.n > reqcap) {
				free(reqs);
				reqcap = out.n;
				if (!(reqs = malloc(reqcap * sizeof *reqs))) {
					st = rt_fail(ctx, LLMP_ERR_NOMEM, "checkpoint load: %zu requests",
						     reqcap);
					break;
				}
			}
			st = settle(world, &out, reqs, false, ck, m, sh);
		}
	}
	close_shard(&f);
	/* Everything delivered, the received parts that needed it copied into place. */
	if (st == LLMP_OK && in.n + out.n > reqcap) {
		free(reqs);
		reqcap = in.n + out.n;
		if (!(reqs = malloc(reqcap * sizeof *reqs)))
			st = rt_fail(ctx, LLMP_ERR_NOMEM, "checkpoint load: %zu requests", reqcap);
	}
	if (st == LLMP_OK && (st = settle(world, &out, reqs, false, ck, m, sh)) == LLMP_OK)
		st = settle(world, &in, reqs, true, ck, m, sh);
	if (st != LLMP_OK) { /* nothing may land in freed memory */
		for (size_t i = 0; i < in.n; i++)
			rt_tx_drop(ctx, &in.p[i].req, 1);
		for (size_t i = 0; i < out.n; i++)
			rt_tx_drop(ctx, &out.p[i].req, 1);
	}
	for (size_t i = 0; i < in.n; i++)
		free(in.p[i].buf);
	for (size_t i = 0; i < out.n; i++)
		free(out.p[i].buf);
	free(in.p);
	free(out.p);
	free(reqs);
	return st != LLMP_OK ? st : read_st;
}

/*
 * Each rank's want records to the readers of the slices it wants: one
 * message per (rank, reader) with its records in its own order, so the
 * reader, which knows from slice_of how many come from whom, places them
 * (got, got_at) with no sizes sent. Collective; every rank got its
 * buffers before (an agreement), so nobody waits for one that failed.
 */
static llmp_status send_wants(llmp_ckpt *ck, llmp_comm *world, struct share *sh)
{
	llmp_ctx *ctx = ck->ctx;
	size_t W = sh->world, per = sh->per, ngot = 0, nreq = 0;
	struct want *out = malloc((per ? per : 1) * sizeof *out);
	size_t *count = calloc(W + 1, sizeof *count); /* this rank's records per reader */
	size_t *from = calloc(W, sizeof *from);       /* records from each rank */
	rt_req *reqs = calloc(2 * W, sizeof *reqs);
	sh->got_at = malloc((per * W > 0 ? per * W : 1) * sizeof *sh->got_at);
	if (!out || !count || !from || !reqs || !sh->got_at) {
		free(out), free(count), free(from), free(reqs);
		return rt_fail(ctx, LLMP_ERR_NOMEM, "checkpoint load: sending %zu wants", per);
	}
	for (size_t rec = 0; rec < per * W; rec++) {
		uint32_t j = sh->slice_of[rec], r = (uint32_t)(rec / per);
		sh->got_at[rec] = UINT32_MAX;
		if (j == UINT32_MAX || r == sh->me)
			continue;
		if (sh->reader[j] == sh->me) {
			sh->got_at[rec] = (uint32_t)ngot++;
			from[r]++;
		}
	}
	sh->got = malloc((ngot ? ngot : 1) * sizeof *sh->got);
	llmp_status st = sh->got ? LLMP_OK
				 : rt_fail(ctx, LLMP_ERR_NOMEM, "checkpoint load: %zu wants to receive",
					   ngot);
	/* this rank's records, grouped by reader, each group in its own order */
	for (size_t k = 0; st == LLMP_OK && k < per; k++)
		if (sh->own[k].slice != UINT32_MAX && sh->reader[sh->own[k].slice] != sh->me)
			count[sh->reader[sh->own[k].slice] + 1]++;
	for (size_t q = 0; q < W; q++) /* counts to starts */
		count[q + 1] += count[q];
	rt_call call;
	if (st == LLMP_OK)
		st = rt_call_begin(&call, world, "checkpoint load", NULL, NULL, 0, LLMP_UINT8, LLMP_SUM,
				   false);
	if (st == LLMP_OK) {
		size_t *at = calloc(W, sizeof *at);
		if (!at) {
			st = rt_fail(ctx, LLMP_ERR_NOMEM, "checkpoint load: sending %zu wants", per);
		} else {
			for (size_t k = 0; k < per; k++) {
				uint32_t j = sh->own[k].slice;
				if (j != UINT32_MAX && sh->reader[j] != sh->me)
					out[count[sh->reader[j]] + at[sh->reader[j]]++] = sh->own[k];
			}
			free(at);
		}
	}
	/* from each rank, its records in its order: where got_at put them, one run per rank */
	for (size_t r = 0, next = 0; st == LLMP_OK && r < W; next += from[r], r++)
		if (from[r])
			st = rt_tx_irecv(world, (uint32_t)r, rt_call_tag(&call, (uint32_t)r), sh->got + next,
					 from[r] * sizeof *sh->got, &reqs[nreq++]);
	for (size_t q = 0; st == LLMP_OK && q < W; q++)
		if (count[q + 1] > count[q])
			st = rt_tx_isend(world, (uint32_t)q, rt_call_tag(&call, sh->me), out + count[q],
					 (count[q + 1] - count[q]) * sizeof *out, &reqs[nreq++]);
	if (st == LLMP_OK && nreq)
		st = rt_tx_wait(world, "checkpoint load", reqs, nreq);
	else if (st != LLMP_OK) /* nothing may land in freed memory */
		rt_tx_drop(ctx, reqs, nreq);
	free(out), free(count), free(from), free(reqs);
	return st;
}

static void free_share(const struct ck_manifest *m, struct share *sh)
{
	for (size_t j = 0; sh->data && sh->borrowed && j < m->nslices; j++)
		if (!sh->borrowed[j])
			free(sh->data[j]);
	free(sh->data);
	free(sh->borrowed);
	free(sh->reader);
	free(sh->slice_of);
	free(sh->own);
	free(sh->got);
	free(sh->got_at);
	free(sh->order);
	free(sh->mine);
	free(sh->wanted);
	free(sh->first);
}

/* The shared load, once every rank has planned its needs without an error. */
static llmp_status read_shared(llmp_ckpt *ck, const char *dir, const struct ck_manifest *m,
			       const struct need *needs, size_t n, const char *doing)
{
	llmp_comm *world;
	struct share sh = { .world = ck->ctx->world, .me = ck->ctx->rank };
	llmp_status st = llmp_comm_world(ck->ctx, &world);
	if (st == LLMP_OK)
		st = gather_wants(ck, m, needs, n, world, &sh);
	if (st != LLMP_OK) {
		free_share(m, &sh);
		return st;
	}
	st = choose_readers(ck, m, &sh);
	if (st == LLMP_OK)
		st = plan_share(ck, m, needs, n, &sh);
	/* Every rank ready before any message is posted: one that is not would leave the others waiting. */
	if ((st = ck_agree(ck, doing, st)) == LLMP_OK)
		st = ck_agree(ck, doing, send_wants(ck, world, &sh));
	if (st == LLMP_OK)
		st = ck_agree(ck, doing, read_and_share(ck, dir, m, needs, &sh, world));
	free_share(m, &sh);
	return st;
}

llmp_status ck_read_tensors(llmp_ckpt *ck, const char *dir, const struct ck_manifest *m, const char *doing)
{
	llmp_ctx *ctx = ck->ctx;
	size_t n = 0;
	int64_t alone = ctx->world == 1;
	/* A rank registers a name once, so each saved slice is needed at most once. */
	struct need *needs = malloc((m->nslices ? m->nslices : 1) * sizeof *needs);
	llmp_status st = needs ? LLMP_OK
			       : rt_fail(ctx, LLMP_ERR_NOMEM, "planning the reads of %zu tensors",
					 ck->ntensors);
	for (size_t i = 0; st == LLMP_OK && i < ck->ntensors; i++) {
		st = plan_tensor(ck, dir, m, &ck->tensors[i], needs, &n);
		alone |= ck->tensors[i]
				 .device; /* device tensors are read on their own rank, into pinned memory */
	}
	if (st == LLMP_OK && n)
		qsort(needs, n, sizeof *needs, by_shard);
	st = ck_agree(ck, doing, st);
	llmp_comm *world;
	if (st == LLMP_OK && ctx->world > 1 && (st = llmp_comm_world(ctx, &world)) == LLMP_OK)
		st = llmp_allreduce(world, &alone, &alone, 1, LLMP_INT64, LLMP_MAX);
	if (st == LLMP_OK)
		st = alone ? ck_agree(ck, doing, read_alone(ck, dir, m, needs, n))
			   : read_shared(ck, dir, m, needs, n, doing);
	free(needs);
	return st;
}
