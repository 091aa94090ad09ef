/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verify.c - one step directory checked whole, with no context (the
 * `llmp ckpt verify` tool): the MANIFEST, every shard it lists, every
 * slice's bytes against its CRC-32C, the index's virtual datasets, and
 * meta.bin.
 *
 * Every file's bytes are checked against the size and CRC-32C the MANIFEST
 * gives before HDF5 opens it (filesum.c): libhdf5 1.10 can crash or
 * loop forever on damaged metadata. A slice's bytes are read straight from
 * the shard file, in chunks, where the MANIFEST says they are, as a load
 * reads them: memory stays a few MiB whatever the checkpoint's size. Only
 * a file that passed is opened with HDF5, to check that its datasets are
 * what the MANIFEST says (each slice a contiguous dataset of its shape and
 * type at that place; the index's virtual datasets). Verification goes on
 * after a problem, so one run names every damaged file and tensor.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_format.h"
#include "kernels/crc32c.h"

#define CHUNK_BYTES ((size_t)8 << 20)

/* The MANIFEST's slices by the file holding them, so each shard finds its own without a scan of all. */
struct owned {
	uint32_t file;
	size_t slice;
};

struct verifier {
	const char *dir;
	const struct ck_verify_hooks *hooks;
	struct ck_verify_totals *totals;
	const struct ck_manifest *m;
	struct owned *owned;  /* m->nslices, by file then MANIFEST order */
	uint64_t total_bytes; /* of every slice, for progress */
	char *buf;            /* CHUNK_BYTES */
	char *first;          /* the first problem's message */
	size_t firstlen;
	char msg[LLMP_MSG_MAX];
};

static void problem(struct verifier *v, const char *file, const char *tensor, const char *msg)
{
	if (v->totals->problems++ == 0)
		snprintf(v->first, v->firstlen, "%s", msg);
	if (v->hooks && v->hooks->problem)
		v->hooks->problem(v->hooks->arg, file, tensor, msg);
}

static void problemf(struct verifier *v, const char *file, const char *tensor, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void problemf(struct verifier *v, const char *file, const char *tensor, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v->msg, sizeof v->msg, fmt, ap);
	va_end(ap);
	problem(v, file, tensor, v->msg);
}

static void progress(struct verifier *v, const char *file, const char *tensor)
{
	if (v->hooks && v->hooks->progress)
		v->hooks->progress(v->hooks->arg, v->totals->bytes, v->total_bytes, file, tensor);
}

static int compare_owned(const void *a, const void *b)
{
	const struct owned *x = a, *y = b;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->slice < y->slice ? -1 : x->slice > y->slice;
}

/* The first of v->owned whose file is rank's (or >= it). */
static size_t first_owned(const struct verifier *v, uint32_t rank)
{
	size_t lo = 0, hi = v->m->nslices;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v->owned[mid].file < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The world the layout line names ("...,world=4"), or 0 when it names none. */
static unsigned long layout_world(const char *layout)
{
	const char *w = strstr(layout, "world=");
	return w && (w == layout || w[-1] == ',') ? strtoul(w + 6, NULL, 10) : 0;
}

/* The MANIFEST's own consistency: its step and world, its tiling, a shard line for every file named. */
static void check_manifest(struct verifier *v, uint64_t step)
{
	const struct ck_manifest *m = v->m;
	char text[LLMP_MSG_MAX];
	size_t culprit;
	unsigned long world = layout_world(m->layout);
	if (m->step != step)
		problemf(v, CK_MANIFEST, NULL, "%s/" CK_MANIFEST ": says step %llu, in directory step-%llu",
			 v->dir, (unsigned long long)m->step, (unsigned long long)step);
	if (world && world != m->world)
		problemf(v, CK_MANIFEST, NULL, "%s/" CK_MANIFEST ": world %u, its layout says world=%lu",
			 v->dir, m->world, world);
	if (m->nshards && m->shard_ranks[m->nshards - 1] >= m->world) /* ranks increase */
		problemf(v, CK_MANIFEST, NULL, "%s/" CK_MANIFEST ": a shard of rank %u in a world of %u",
			 v->dir, m->shard_ranks[m->nshards - 1], m->world);
	if (ck_validate_slices(m->slices, m->nslices, &culprit, text, sizeof text) != LLMP_OK)
		problemf(v, CK_MANIFEST, m->slices[culprit].name, "%s/" CK_MANIFEST ": %s", v->dir, text);
	for (size_t i = 0; i < m->nslices; i++) {
		const struct ck_slice *s = &m->slices[v->owned[i].slice];
		if (i > 0 && v->owned[i - 1].file == s->file)
			continue;
		if (ck_manifest_shard(m, s->file) == m->nshards)
			problemf(v, CK_MANIFEST, s->name,
				 "%s/" CK_MANIFEST ": tensor %s: a slice is in the shard of "
				 "rank %u, which it does not list",
				 v->dir, s->name, s->file);
	}
}

/* CRC-32C of len bytes of fd from offset, read in chunks; false (reported) when the file is short. */
static bool crc_of_range(struct verifier *v, int fd, uint64_t offset, uint64_t len, const char *path,
			 const char *file, const struct ck_slice *s, uint32_t *crc)
{
	*crc = 0;
	for (uint64_t done = 0; done < len;) {
		size_t want = len - done < CHUNK_BYTES ? (size_t)(len - done) : CHUNK_BYTES;
		ssize_t got = pread(fd, v->buf, want, (off_t)(offset + done));
		if (got <= 0) {
			problemf(v, file, s->name, "%s: tensor %s: %s after %llu of its %llu bytes", path,
				 s->name, got < 0 ? strerror(errno) : "the file ends",
				 (unsigned long long)done, (unsigned long long)len);
			return false;
		}
		*crc = kern_crc32c(*crc, v->buf, (size_t)got);
		done += (uint64_t)got;
		v->totals->bytes += (uint64_t)got;
		progress(v, file, s->name);
	}
	return true;
}

/* One slice's bytes, where the MANIFEST puts them, against its CRC; false when they could not all be read. */
static bool check_slice_bytes(struct verifier *v, int fd, const char *path, const char *file,
			      const struct ck_slice *s, uint32_t *crc)
{
	if (!crc_of_range(v, fd, s->at, ck_bytes(s), path, file, s, crc))
		return false;
	if (*crc != s->crc)
		problemf(v, file, s->name,
			 "%s: tensor %s: CRC-32C 0x%08x of its bytes, the MANIFEST says 0x%08x: "
			 "the data does not match its MANIFEST",
			 path, s->name, *crc, s->crc);
	return true;
}

/*
 * The bytes outside the slices of shard k. Its slices' places with their
 * CRCs as the MANIFEST gives them are in `listed`, with their CRCs as read
 * in `as_read` (the same order). The file's CRC-32C joined from the bytes as
 * they are says whether the file is as saved; if not, the one joined with
 * the MANIFEST's slice CRCs says whether the damage is outside the slices
 * (HDF5's metadata) or only in slices already reported. True when the bytes
 * outside the slices are the saved ones: HDF5 may then open the file.
 */
static bool check_outside_slices(struct verifier *v, int fd, size_t k, struct ck_extent *listed,
				 struct ck_extent *as_read, size_t n, const char *path, const char *file)
{
	const struct ck_manifest *m = v->m;
	uint32_t crc;
	if (ck_extents_check(listed, n, m->shard_bytes[k], path, v->msg, sizeof v->msg) != LLMP_OK ||
	    ck_extents_check(as_read, n, m->shard_bytes[k], path, v->msg, sizeof v->msg) != LLMP_OK ||
	    ck_crc_around(fd, m->shard_bytes[k], as_read, n, path, &crc, v->msg, sizeof v->msg) != LLMP_OK) {
		problem(v, file, NULL, v->msg);
		return false;
	}
	if (crc == m->shard_crcs[k])
		return true; /* the file as saved (a slice that failed above disagrees with the MANIFEST only) */
	if (ck_crc_around(fd, m->shard_bytes[k], listed, n, path, &crc, v->msg, sizeof v->msg) != LLMP_OK) {
		problem(v, file, NULL, v->msg);
		return false;
	}
	if (crc == m->shard_crcs[k])
		return true; /* only slices are damaged, and each was reported */
	problemf(v, file, NULL,
		 "%s: its bytes outside the tensors (HDF5's metadata) are damaged: they do not give "
		 "the file's CRC-32C in its MANIFEST, 0x%08x",
		 path, m->shard_crcs[k]);
	return false;
}

/* A shard whose bytes passed: HDF5 agrees with the MANIFEST on its datasets and where their bytes are. */
static void check_shard_hdf5(struct verifier *v, const char *path, const char *file, size_t first, size_t end)
{
	const struct ck_manifest *m = v->m;
	struct ck_h5 *h5;
	size_t datasets, owned = end - first;
	uint64_t offset;
	if (ck_h5_open(path, &h5, v->msg, sizeof v->msg) != LLMP_OK) {
		problem(v, file, NULL, v->msg);
		return;
	}
	if (ck_h5_count_datasets(h5, &datasets, v->msg, sizeof v->msg) != LLMP_OK)
		problem(v, file, NULL, v->msg);
	else if (datasets != owned)
		problemf(v, file, NULL, "%s: %zu datasets, the MANIFEST lists %zu slices in it", path,
			 datasets, owned);
	for (size_t i = first; i < end; i++) {
		const struct ck_slice *s = &m->slices[v->owned[i].slice];
		if (ck_h5_locate(h5, s, &offset, v->msg, sizeof v->msg) != LLMP_OK)
			problem(v, file, s->name, v->msg);
		else if (offset != s->at)
			problemf(v, file, s->name,
				 "%s: tensor %s: its dataset's bytes are at byte %llu, the MANIFEST "
				 "says %llu",
				 path, s->name, (unsigned long long)offset, (unsigned long long)s->at);
	}
	ck_h5_close(h5);
}

/* The shard of entry k of the MANIFEST: there, its size, every byte, then its structure. */
static void check_shard(struct verifier *v, size_t k)
{
	const struct ck_manifest *m = v->m;
	uint32_t rank = m->shard_ranks[k];
	char path[4200], file[32];
	struct stat sb;
	size_t first = first_owned(v, rank), end = first;
	while (end < m->nslices && v->owned[end].file == rank)
		end++;
	ck_shard_path(v->dir, rank, path, sizeof path);
	ck_shard_path(NULL, rank, file, sizeof file);
	if (stat(path, &sb) != 0) {
		problemf(v, file, NULL, "%s: %s (%zu slices lost)", path, strerror(errno), end - first);
		return;
	}
	bool whole = (uint64_t)sb.st_size == m->shard_bytes[k];
	if (!whole)
		problemf(v, file, NULL, "%s: %lld bytes, the MANIFEST says %llu%s", path,
			 (long long)sb.st_size, (unsigned long long)m->shard_bytes[k],
			 (uint64_t)sb.st_size < m->shard_bytes[k] ? " (truncated)" : "");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct ck_extent *listed = malloc((end - first + 1) * sizeof *listed);
	struct ck_extent *as_read = malloc((end - first + 1) * sizeof *as_read);
	if (fd < 0 || !listed || !as_read) {
		problemf(v, file, NULL, "%s: %s", path,
			 fd < 0 ? strerror(errno) : "out of memory to check it");
	} else {
		/* Each slice's own bytes even when the rest is damaged: they say which tensors survive. */
		for (size_t i = first; i < end; i++) {
			const struct ck_slice *s = &m->slices[v->owned[i].slice];
			listed[i - first] = (struct ck_extent){ .at = s->at,
								.bytes = ck_bytes(s),
								.crc = s->crc };
			as_read[i - first] = listed[i - first];
			whole &= check_slice_bytes(v, fd, path, file, s, &as_read[i - first].crc);
		}
		/* A file of another size, or too short for its slices, is damaged already: HDF5 is kept from it. */
		if (whole && check_outside_slices(v, fd, k, listed, as_read, end - first, path, file))
			check_shard_hdf5(v, path, file, first, end);
	}
	if (fd >= 0)
		close(fd);
	free(listed);
	free(as_read);
}

/* index.h5: its bytes, then one virtual dataset per tensor, mapping every slice from its owner's shard. */
static void check_index(struct verifier *v)
{
	const struct ck_manifest *m = v->m;
	char path[4200];
	struct ck_h5 *h5;
	size_t datasets, tensors = ck_manifest_tensors(m);
	snprintf(path, sizeof path, "%s/" CK_INDEX, v->dir);
	if (ck_file_check(path, m->index_bytes, m->index_crc, v->msg, sizeof v->msg) != LLMP_OK ||
	    ck_h5_open(path, &h5, v->msg, sizeof v->msg) != LLMP_OK) {
		problem(v, CK_INDEX, NULL, v->msg);
		return;
	}
	if (ck_h5_count_datasets(h5, &datasets, v->msg, sizeof v->msg) != LLMP_OK) {
		problem(v, CK_INDEX, NULL, v->msg);
	} else if (datasets != tensors)
		problemf(v, CK_INDEX, NULL, "%s: %zu datasets, the MANIFEST lists %zu tensors", path,
			 datasets, tensors);
	for (size_t first = 0, end; first < m->nslices; first = end) {
		for (end = first; end < m->nslices && strcmp(m->slices[end].name, m->slices[first].name) == 0;
		     end++)
			;
		if (ck_h5_check_virtual(h5, &m->slices[first], end - first, v->msg, sizeof v->msg) != LLMP_OK)
			problem(v, CK_INDEX, m->slices[first].name, v->msg);
	}
	ck_h5_close(h5);
}

/* meta.bin: the size and CRC-32C the MANIFEST gives. */
static void check_meta(struct verifier *v)
{
	const struct ck_manifest *m = v->m;
	char path[4200];
	uint32_t crc = 0;
	uint64_t total = 0;
	snprintf(path, sizeof path, "%s/" CK_META, v->dir);
	FILE *f = fopen(path, "r");
	if (!f) {
		problemf(v, CK_META, NULL, "%s: %s", path, strerror(errno));
		return;
	}
	size_t got;
	while ((got = fread(v->buf, 1, CHUNK_BYTES, f)) > 0) {
		crc = kern_crc32c(crc, v->buf, got);
		total += got;
	}
	fclose(f);
	if (total != m->meta_bytes || crc != m->meta_crc)
		problemf(v, CK_META, NULL,
			 "%s: %llu bytes with CRC-32C 0x%08x, the MANIFEST says %llu bytes with 0x%08x", path,
			 (unsigned long long)total, crc, (unsigned long long)m->meta_bytes, m->meta_crc);
}

llmp_status ck_verify_step(const char *dir, uint64_t step, const struct ck_verify_hooks *hooks,
			   struct ck_verify_totals *totals, char *msg, size_t len)
{
	struct ck_manifest m;
	struct verifier v = {
		.dir = dir, .hooks = hooks, .totals = totals, .m = &m, .first = msg, .firstlen = len
	};
	char path[4200];
	memset(totals, 0, sizeof *totals);
	snprintf(path, sizeof path, "%s/" CK_MANIFEST, dir);
	if (ck_manifest_read(path, &m, v.msg, sizeof v.msg) != LLMP_OK) {
		problem(&v, CK_MANIFEST, NULL, v.msg);
		return LLMP_ERR_IO;
	}
	v.buf = malloc(CHUNK_BYTES);
	v.owned = malloc((m.nslices ? m.nslices : 1) * sizeof *v.owned);
	if (!v.buf || !v.owned) {
		free(v.buf);
		free(v.owned);
		ck_manifest_free(&m);
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "verifying %s: out of memory", dir);
	}
	totals->tensors = ck_manifest_tensors(&m);
	totals->slices = m.nslices;
	totals->shards = m.nshards;
	for (size_t i = 0; i < m.nslices; i++) {
		v.total_bytes += ck_bytes(&m.slices[i]);
		v.owned[i] = (struct owned){ .file = m.slices[i].file, .slice = i };
	}
	if (m.nslices)
		qsort(v.owned, m.nslices, sizeof *v.owned, compare_owned);
	check_manifest(&v, step);
	for (size_t k = 0; k < m.nshards; k++)
		check_shard(&v, k);
	check_index(&v);
	check_meta(&v);
	free(v.buf);
	free(v.owned);
	ck_manifest_free(&m);
	return totals->problems ? LLMP_ERR_IO : LLMP_OK;
}
