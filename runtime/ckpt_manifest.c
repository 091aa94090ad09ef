/*
 * ckpt_manifest.c - MANIFEST, the text file that makes a checkpoint
 * checkable: what was saved, by which layout, in which shard, and the
 * CRC-32C of every slice and of the user metadata (doc/checkpoint.md).
 *
 *     llmp-checkpoint 1
 *     step 200
 *     world 4
 *     layout tp=2,cp=1,...
 *     meta 24 0x1a2b3c4d
 *     shard 0 1052672
 *     slice NAME DTYPE NDIM GLOBAL... OFFSET... SHAPE... OWNER CRC
 *     end
 *
 * The last line is "end": a manifest without it is not one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_internal.h"

llmp_status ck_manifest_write(llmp_ctx *ctx, const char *path, const struct ck_manifest *m)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return rt_fail(ctx, LLMP_ERR_IO, "create %s: %s", path, strerror(errno));
	fprintf(f, "llmp-checkpoint %d\nstep %" PRIu64 "\nworld %u\nlayout %s\nmeta %" PRIu64 " 0x%08x\n",
		CK_FORMAT_VERSION, m->step, m->world, m->layout, m->meta_bytes, m->meta_crc);
	for (size_t i = 0; i < m->nshards; i++)
		fprintf(f, "shard %u %" PRIu64 "\n", m->shard_ranks[i], m->shard_bytes[i]);
	for (size_t i = 0; i < m->nslices; i++) {
		const struct ck_slice *s = &m->slices[i];
		fprintf(f, "slice %s %s %u", s->name, llmp_dtype_name((llmp_dtype)s->dtype), s->ndim);
		const uint64_t *parts[3] = {s->global, s->offset, s->shape};
		for (int p = 0; p < 3; p++)
			for (unsigned d = 0; d < s->ndim; d++)
				fprintf(f, " %" PRIu64, parts[p][d]);
		fprintf(f, " %u 0x%08x\n", s->owner, s->crc);
	}
	fprintf(f, "end\n");
	int bad = ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0;
	bad |= fclose(f) != 0;
	if (bad)
		return rt_fail(ctx, LLMP_ERR_IO, "write %s: %s", path, strerror(errno));
	return LLMP_OK;
}

void ck_manifest_free(struct ck_manifest *m)
{
	free(m->shard_ranks);
	free(m->shard_bytes);
	free(m->slices);
	memset(m, 0, sizeof *m);
}

/* Room for element n of an array whose capacity is 16, then doubles; false when out of memory. */
static bool grow(void **array, size_t n, size_t size)
{
	bool full = n == 0 || (n >= 16 && (n & (n - 1)) == 0);
	if (!full)
		return true;
	void *bigger = realloc(*array, (n ? 2 * n : 16) * size);
	if (!bigger)
		return false;
	*array = bigger;
	return true;
}

static bool parse_slice(char *rest, struct ck_slice *s)
{
	char *save, *tok = strtok_r(rest, " ", &save);
	if (!tok || strlen(tok) > LLMP_CKPT_MAX_NAME)
		return false;
	memset(s, 0, sizeof *s);
	snprintf(s->name, sizeof s->name, "%s", tok);
	int dtype = (tok = strtok_r(NULL, " ", &save)) ? llmp_dtype_from_name(tok) : -1;
	if (dtype < 0 || !(tok = strtok_r(NULL, " ", &save)))
		return false;
	s->dtype = (uint32_t)dtype;
	s->ndim = (uint32_t)strtoul(tok, NULL, 10);
	if (s->ndim < 1 || s->ndim > LLMP_CKPT_MAX_DIMS)
		return false;
	uint64_t *parts[3] = {s->global, s->offset, s->shape};
	for (int p = 0; p < 3; p++)
		for (unsigned d = 0; d < s->ndim; d++) {
			if (!(tok = strtok_r(NULL, " ", &save)))
				return false;
			parts[p][d] = strtoull(tok, NULL, 10);
		}
	char *owner = strtok_r(NULL, " ", &save), *crc = strtok_r(NULL, " \n", &save);
	if (!owner || !crc)
		return false;
	s->owner = s->rank = (uint32_t)strtoul(owner, NULL, 10);
	s->crc = (uint32_t)strtoul(crc, NULL, 16);
	return true;
}

llmp_status ck_manifest_read(llmp_ctx *ctx, const char *path, struct ck_manifest *m)
{
	memset(m, 0, sizeof *m);
	FILE *f = fopen(path, "r");
	if (!f)
		return rt_fail(ctx, LLMP_ERR_IO, "open %s: %s", path, strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	bool ended = false, ok = true;
	int version = 0;
	while (ok && !ended && getline(&line, &cap, f) > 0) {
		lineno++;
		line[strcspn(line, "\n")] = '\0';
		char *rest = strchr(line, ' ');
		if (rest)
			*rest++ = '\0';
		if (lineno == 1)
			ok = strcmp(line, "llmp-checkpoint") == 0 && rest && (version = atoi(rest)) == CK_FORMAT_VERSION;
		else if (strcmp(line, "step") == 0 && rest)
			m->step = strtoull(rest, NULL, 10);
		else if (strcmp(line, "world") == 0 && rest)
			m->world = (uint32_t)strtoul(rest, NULL, 10);
		else if (strcmp(line, "layout") == 0 && rest)
			snprintf(m->layout, sizeof m->layout, "%s", rest);
		else if (strcmp(line, "meta") == 0 && rest)
			ok = sscanf(rest, "%" SCNu64 " %" SCNx32, &m->meta_bytes, &m->meta_crc) == 2;
		else if (strcmp(line, "shard") == 0 && rest) {
			ok = grow((void **)&m->shard_ranks, m->nshards, sizeof *m->shard_ranks) &&
			     grow((void **)&m->shard_bytes, m->nshards, sizeof *m->shard_bytes) &&
			     sscanf(rest, "%" SCNu32 " %" SCNu64, &m->shard_ranks[m->nshards],
				    &m->shard_bytes[m->nshards]) == 2;
			m->nshards += ok;
		} else if (strcmp(line, "slice") == 0 && rest) {
			ok = grow((void **)&m->slices, m->nslices, sizeof *m->slices) &&
			     parse_slice(rest, &m->slices[m->nslices]);
			m->nslices += ok;
		} else if (strcmp(line, "end") == 0) {
			ended = true;
		} else {
			ok = false;
		}
	}
	free(line);
	fclose(f);
	if (!ok || !ended) {
		ck_manifest_free(m);
		if (lineno <= 1 && version != CK_FORMAT_VERSION && version != 0)
			return rt_fail(ctx, LLMP_ERR_IO, "%s: format version %d; this llmp reads %d", path,
				       version, CK_FORMAT_VERSION);
		return rt_fail(ctx, LLMP_ERR_IO, "%s: %s at line %u", path,
			       ended ? "malformed" : ok ? "truncated (no 'end')" : "malformed", lineno);
	}
	return LLMP_OK;
}
