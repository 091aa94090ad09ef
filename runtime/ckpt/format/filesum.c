/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * filesum.c - the size and CRC-32C of every file of a step, checked
 * before anything else reads a byte of it.
 *
 * libhdf5 1.10 is not safe on malformed metadata: a flipped byte or a
 * zeroed block in index.h5 made it crash (SIGSEGV, assertions) or loop
 * forever. So the MANIFEST records each file's size and CRC-32C, and a file
 * whose bytes do not match is reported by name and never opened.
 *
 * A shard is large, and its slices' bytes are checked against their own
 * CRCs as a load reads them (ckpt_read.c). Reading them once more for the
 * file's CRC would double a load's reads. Instead only the bytes between
 * the slices are read (HDF5's metadata, and alignment padding, which is
 * usually a hole), and the file's CRC is joined from theirs and the slices'
 * CRCs (kern_crc32c_combine). That is the CRC of the file as it would be
 * with every slice intact; when it matches the MANIFEST, the bytes outside
 * the slices are the ones that were saved. The save computes the recorded
 * CRC the same way, from the CRCs it took in memory, so a shard's CRC is
 * still the plain CRC-32C of the file that any tool can recompute.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_format.h"
#include "kernels/crc32c.h"

#define CHUNK_BYTES ((size_t)1 << 20)

/* CRC-32C of len bytes of fd from offset, read in chunks into buf (CHUNK_BYTES). */
static llmp_status crc_of_range(int fd, uint64_t offset, uint64_t len, char *buf, const char *path,
				uint32_t *crc, char *msg, size_t msglen)
{
	*crc = 0;
	for (uint64_t done = 0; done < len;) {
		size_t want = len - done < CHUNK_BYTES ? (size_t)(len - done) : CHUNK_BYTES;
		ssize_t got = pread(fd, buf, want, (off_t)(offset + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return llmp_fail(LLMP_ERR_IO, msg, msglen, "%s: %s at byte %llu", path,
					 got < 0 ? strerror(errno) : "the file ends",
					 (unsigned long long)(offset + done));
		*crc = kern_crc32c(*crc, buf, (size_t)got);
		done += (uint64_t)got;
	}
	return LLMP_OK;
}

llmp_status ck_file_crc(const char *path, uint64_t *bytes, uint32_t *crc, char *msg, size_t len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return llmp_fail(LLMP_ERR_IO, msg, len, "%s: %s", path, strerror(errno));
	char *buf = malloc(CHUNK_BYTES);
	size_t got;
	*bytes = 0;
	*crc = 0;
	while (buf && (got = fread(buf, 1, CHUNK_BYTES, f)) > 0) {
		*crc = kern_crc32c(*crc, buf, got);
		*bytes += got;
	}
	llmp_status st = !buf        ? llmp_fail(LLMP_ERR_NOMEM, msg, len, "reading %s: out of memory", path)
			 : ferror(f) ? llmp_fail(LLMP_ERR_IO, msg, len, "reading %s failed", path)
				     : LLMP_OK;
	free(buf);
	fclose(f);
	return st;
}

llmp_status ck_file_check(const char *path, uint64_t bytes, uint32_t crc, char *msg, size_t len)
{
	uint64_t got_bytes;
	uint32_t got_crc;
	llmp_status st = ck_file_crc(path, &got_bytes, &got_crc, msg, len);
	if (st != LLMP_OK)
		return st;
	if (got_bytes != bytes)
		return llmp_fail(LLMP_ERR_IO, msg, len,
				 "%s has %llu bytes, its MANIFEST says %llu%s: the file is damaged", path,
				 (unsigned long long)got_bytes, (unsigned long long)bytes,
				 got_bytes < bytes ? " (truncated)" : "");
	if (got_crc != crc)
		return llmp_fail(LLMP_ERR_IO, msg, len,
				 "%s fails its checksum (CRC-32C 0x%08x, its MANIFEST says "
				 "0x%08x): the file is damaged",
				 path, got_crc, crc);
	return LLMP_OK;
}

static int by_position(const void *pa, const void *pb)
{
	const struct ck_extent *a = pa, *b = pb;
	return a->at < b->at ? -1 : a->at > b->at;
}

llmp_status ck_extents_check(struct ck_extent *e, size_t n, uint64_t file_bytes, const char *path, char *msg,
			     size_t len)
{
	if (n)
		qsort(e, n, sizeof *e, by_position);
	for (size_t i = 0; i < n; i++) {
		if (e[i].at > file_bytes || e[i].bytes > file_bytes - e[i].at)
			return llmp_fail(LLMP_ERR_IO, msg, len,
					 "%s: a slice of %llu bytes at byte %llu is past the end "
					 "of its %llu bytes",
					 path, (unsigned long long)e[i].bytes, (unsigned long long)e[i].at,
					 (unsigned long long)file_bytes);
		if (i > 0 && e[i].at < e[i - 1].at + e[i - 1].bytes)
			return llmp_fail(LLMP_ERR_IO, msg, len, "%s: two slices overlap at byte %llu", path,
					 (unsigned long long)e[i].at);
	}
	return LLMP_OK;
}

llmp_status ck_crc_around(int fd, uint64_t file_bytes, const struct ck_extent *e, size_t n, const char *path,
			  uint32_t *crc, char *msg, size_t len)
{
	char *buf = malloc(CHUNK_BYTES);
	if (!buf)
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "checking %s: out of memory", path);
	llmp_status st = LLMP_OK;
	uint64_t pos = 0;
	uint32_t gap;
	*crc = 0;
	/* gap, extent, gap, extent, ..., the last gap: each joined onto what came before. */
	for (size_t i = 0; st == LLMP_OK && i <= n; i++) {
		uint64_t end = i < n ? e[i].at : file_bytes;
		st = crc_of_range(fd, pos, end - pos, buf, path, &gap, msg, len);
		if (st != LLMP_OK)
			break;
		*crc = kern_crc32c_combine(*crc, gap, end - pos);
		if (i < n) {
			*crc = kern_crc32c_combine(*crc, e[i].crc, e[i].bytes);
			pos = e[i].at + e[i].bytes;
		}
	}
	free(buf);
	return st;
}

llmp_status ck_shard_check(int fd, const char *path, const struct ck_manifest *m, size_t k, char *msg,
			   size_t len)
{
	struct stat sb;
	uint64_t bytes = m->shard_bytes[k];
	if (fstat(fd, &sb) != 0)
		return llmp_fail(LLMP_ERR_IO, msg, len, "%s: %s", path, strerror(errno));
	if ((uint64_t)sb.st_size != bytes)
		return llmp_fail(LLMP_ERR_IO, msg, len, "%s: %lld bytes, the MANIFEST says %llu%s", path,
				 (long long)sb.st_size, (unsigned long long)bytes,
				 (uint64_t)sb.st_size < bytes ? " (truncated)" : "");
	size_t n = 0;
	struct ck_extent *e = malloc((m->nslices ? m->nslices : 1) * sizeof *e);
	if (!e)
		return llmp_fail(LLMP_ERR_NOMEM, msg, len, "checking %s: out of memory", path);
	for (size_t i = 0; i < m->nslices; i++)
		if (m->slices[i].file == m->shard_ranks[k])
			e[n++] = (struct ck_extent){ .at = m->slices[i].at,
						     .bytes = ck_bytes(&m->slices[i]),
						     .crc = m->slices[i].crc };
	uint32_t crc;
	llmp_status st = ck_extents_check(e, n, bytes, path, msg, len);
	if (st == LLMP_OK)
		st = ck_crc_around(fd, bytes, e, n, path, &crc, msg, len);
	if (st == LLMP_OK && crc != m->shard_crcs[k])
		st = llmp_fail(LLMP_ERR_IO, msg, len,
			       "%s: its bytes outside the tensors (HDF5's metadata) are damaged: "
			       "they do not give the file's CRC-32C in its MANIFEST (0x%08x against 0x%08x)",
			       path, crc, m->shard_crcs[k]);
	free(e);
	return st;
}
