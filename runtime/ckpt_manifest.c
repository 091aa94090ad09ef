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
 * The last line is "end": a manifest without it is not one. Reading one
 * needs no context (ckpt_format.h), and is strict: every number whole and
 * in range, every slice inside its tensor, nothing after "end". A reader
 * can then trust the sizes it computes from it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
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

/* A whole decimal (or, with base 16, 0x-prefixed hex) word that fits max. */
static bool parse_number(const char *tok, int base, uint64_t max, uint64_t *out)
{
	if (!tok)
		return false;
	if (base == 16 && strncmp(tok, "0x", 2) != 0)
		return false;
	const char *digits = base == 16 ? tok + 2 : tok;
	if (!*digits || strspn(digits, base == 16 ? "0123456789abcdefABCDEF" : "0123456789") != strlen(digits))
		return false;
	errno = 0;
	unsigned long long v = strtoull(digits, NULL, base);
	if (errno == ERANGE || v > max)
		return false;
	*out = v;
	return true;
}

static bool next_number(char **save, int base, uint64_t max, uint64_t *out)
{
	return parse_number(strtok_r(NULL, " ", save), base, max, out);
}

/* Sizes a reader can trust: inside the global shape, and a byte count that fits 63 bits. */
static bool sane_slice(const struct ck_slice *s)
{
	uint64_t elements = 1, limit = UINT64_C(1) << 62;
	for (unsigned d = 0; d < s->ndim; d++) {
		if (s->global[d] == 0 || s->shape[d] == 0 || s->offset[d] > s->global[d] ||
		    s->shape[d] > s->global[d] - s->offset[d] || s->global[d] > limit / elements)
			return false;
		elements *= s->global[d];
	}
	return elements <= limit / llmp_dtype_size((llmp_dtype)s->dtype);
}

static bool parse_slice(char *rest, struct ck_slice *s)
{
	char *save, *tok = strtok_r(rest, " ", &save);
	if (!tok || strlen(tok) > LLMP_CKPT_MAX_NAME)
		return false;
	memset(s, 0, sizeof *s);
	snprintf(s->name, sizeof s->name, "%s", tok);
	int dtype = (tok = strtok_r(NULL, " ", &save)) ? llmp_dtype_from_name(tok) : -1;
	uint64_t v;
	if (dtype < 0 || !next_number(&save, 10, LLMP_CKPT_MAX_DIMS, &v) || v < 1)
		return false;
	s->dtype = (uint32_t)dtype;
	s->ndim = (uint32_t)v;
	uint64_t *parts[3] = {s->global, s->offset, s->shape};
	for (int p = 0; p < 3; p++)
		for (unsigned d = 0; d < s->ndim; d++)
			if (!next_number(&save, 10, UINT64_MAX, &parts[p][d]))
				return false;
	if (!next_number(&save, 10, UINT32_MAX, &v))
		return false;
	s->owner = s->rank = (uint32_t)v;
	if (!next_number(&save, 16, UINT32_MAX, &v) || strtok_r(NULL, " ", &save))
		return false;
	s->crc = (uint32_t)v;
	return sane_slice(s);
}

/* "shard RANK BYTES", in increasing rank order as the save lists them (readers search them). */
static bool parse_shard(char *rest, struct ck_manifest *m)
{
	char *save;
	uint64_t rank, bytes;
	if (!parse_number(strtok_r(rest, " ", &save), 10, UINT32_MAX, &rank) ||
	    !next_number(&save, 10, UINT64_MAX, &bytes) || strtok_r(NULL, " ", &save) ||
	    (m->nshards && rank <= m->shard_ranks[m->nshards - 1]) ||
	    !grow((void **)&m->shard_ranks, m->nshards, sizeof *m->shard_ranks) ||
	    !grow((void **)&m->shard_bytes, m->nshards, sizeof *m->shard_bytes))
		return false;
	m->shard_ranks[m->nshards] = (uint32_t)rank;
	m->shard_bytes[m->nshards++] = bytes;
	return true;
}

/* "meta BYTES CRC" */
static bool parse_meta(char *rest, struct ck_manifest *m)
{
	char *save;
	uint64_t crc;
	if (!parse_number(strtok_r(rest, " ", &save), 10, UINT64_MAX, &m->meta_bytes) ||
	    !next_number(&save, 16, UINT32_MAX, &crc) || strtok_r(NULL, " ", &save))
		return false;
	m->meta_crc = (uint32_t)crc;
	return true;
}

/* One line after the first; false when it is not a MANIFEST line. */
static bool parse_line(char *line, char *rest, struct ck_manifest *m, bool *ended)
{
	uint64_t v;
	if (strcmp(line, "step") == 0 && rest)
		return parse_number(rest, 10, UINT64_MAX, &m->step);
	if (strcmp(line, "world") == 0 && rest) {
		bool ok = parse_number(rest, 10, UINT32_MAX, &v) && v > 0;
		m->world = (uint32_t)v;
		return ok;
	}
	if (strcmp(line, "layout") == 0 && rest)
		return snprintf(m->layout, sizeof m->layout, "%s", rest) < (int)sizeof m->layout;
	if (strcmp(line, "meta") == 0 && rest)
		return parse_meta(rest, m);
	if (strcmp(line, "shard") == 0 && rest)
		return parse_shard(rest, m);
	if (strcmp(line, "slice") == 0 && rest) {
		if (!grow((void **)&m->slices, m->nslices, sizeof *m->slices) ||
		    !parse_slice(rest, &m->slices[m->nslices]))
			return false;
		/* Sorted by name, as the save lists them: a tensor's slices are consecutive. */
		const struct ck_slice *s = &m->slices[m->nslices];
		if (m->nslices > 0 && strcmp(s[-1].name, s->name) > 0)
			return false;
		m->nslices++;
		return true;
	}
	if (strcmp(line, "end") == 0 && !rest)
		return (*ended = true);
	return false;
}

llmp_status ck_manifest_read(const char *path, struct ck_manifest *m, char *msg, size_t len)
{
	memset(m, 0, sizeof *m);
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(msg, len, "open %s: %s", path, strerror(errno));
		return LLMP_ERR_IO;
	}
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
		uint64_t v = 0;
		if (lineno == 1) {
			ok = strcmp(line, "llmp-checkpoint") == 0 && parse_number(rest, 10, 1000000, &v);
			version = (int)v;
			ok = ok && version == CK_FORMAT_VERSION;
		}
		else
			ok = parse_line(line, rest, m, &ended);
	}
	/* Anything after "end" means the file is not what was committed. */
	bool trailing = ok && ended && getline(&line, &cap, f) > 0;
	free(line);
	fclose(f);
	if (!ok || !ended || trailing) {
		ck_manifest_free(m);
		if (lineno == 1 && version != CK_FORMAT_VERSION && version > 0)
			snprintf(msg, len, "%s: format version %d; this llmp reads %d", path, version,
				 CK_FORMAT_VERSION);
		else
			snprintf(msg, len, "%s: %s at line %u", path,
				 trailing ? "text after 'end'" : ok ? "truncated (no 'end')" : "malformed",
				 trailing ? lineno + 1 : lineno);
		return LLMP_ERR_IO;
	}
	return LLMP_OK;
}

size_t ck_manifest_shard(const struct ck_manifest *m, uint32_t rank)
{
	size_t lo = 0, hi = m->nshards;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->shard_ranks[mid] < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->nshards && m->shard_ranks[lo] == rank ? lo : m->nshards;
}

size_t ck_manifest_tensors(const struct ck_manifest *m)
{
	size_t n = 0;
	for (size_t i = 0; i < m->nslices; i++)
		n += i == 0 || strcmp(m->slices[i].name, m->slices[i - 1].name) != 0;
	return n;
}
