/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_manifest.c - writing a checkpoint's MANIFEST, sealed by the CRC-32C
 * of its text (the format, and reading it without a context:
 * format/manifest.c and doc/checkpoint.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_internal.h"
#include "kernels/crc32c.h"

/* The text up to its end line. */
static void write_body(FILE *f, const struct ck_manifest *m)
{
	fprintf(f, "llmp-checkpoint %d\nstep %" PRIu64 "\nworld %u\nlayout %s\n", m->version, m->step,
		m->world, m->layout);
	fprintf(f, "meta %" PRIu64 " 0x%08x\nindex %" PRIu64 " 0x%08x\n", m->meta_bytes, m->meta_crc,
		m->index_bytes, m->index_crc);
	for (size_t i = 0; i < m->nshards; i++)
		fprintf(f, "shard %u %" PRIu64 " 0x%08x\n", m->shard_ranks[i], m->shard_bytes[i],
			m->shard_crcs[i]);
	for (size_t i = 0; i < m->nslices; i++) {
		const struct ck_slice *s = &m->slices[i];
		fprintf(f, "slice %s %s %u", s->name, llmp_dtype_name((llmp_dtype)s->dtype), s->ndim);
		const uint64_t *parts[3] = { s->global, s->offset, s->shape };
		for (int p = 0; p < 3; p++)
			for (unsigned d = 0; d < s->ndim; d++)
				fprintf(f, " %" PRIu64, parts[p][d]);
		fprintf(f, " %u", s->owner);
		if (m->version >= 3) /* a node's file: which one */
			fprintf(f, " %u", s->file);
		fprintf(f, " %" PRIu64 " 0x%08x\n", s->at, s->crc);
	}
}

llmp_status ck_manifest_write(llmp_ctx *ctx, const char *path, const struct ck_manifest *m)
{
	/* Built in memory first: the end line is the CRC of everything before it. */
	char *text = NULL;
	size_t textlen = 0;
	FILE *mem = open_memstream(&text, &textlen);
	if (!mem)
		return rt_fail(ctx, LLMP_ERR_NOMEM, "MANIFEST of %zu slices", m->nslices);
	write_body(mem, m);
	if (fclose(mem) != 0) {
		free(text);
		return rt_fail(ctx, LLMP_ERR_NOMEM, "MANIFEST of %zu slices", m->nslices);
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		free(text);
		return rt_fail(ctx, LLMP_ERR_IO, "create %s: %s", path, strerror(errno));
	}
	int bad = fwrite(text, 1, textlen, f) != textlen;
	bad |= fprintf(f, "end 0x%08x\n", kern_crc32c(0, text, textlen)) < 0;
	bad |= ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0;
	bad |= fclose(f) != 0;
	free(text);
	if (bad)
		return rt_fail(ctx, LLMP_ERR_IO, "write %s: %s", path, strerror(errno));
	return LLMP_OK;
}
