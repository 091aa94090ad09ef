/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * manifest.c - reading MANIFEST, the text file that makes a checkpoint
 * checkable: what was saved, by which layout, in which shard and where in
 * it, and the size and CRC-32C of every file of the step and of every slice
 * (doc/checkpoint.md). Versions 2 and 3 are read; 3 (a shard file per node)
 * adds FILE after OWNER on each slice line.
 *
 *     llmp-checkpoint 2
 *     step 200
 *     world 4
 *     layout tp=2,cp=1,...
 *     meta 24 0x1a2b3c4d
 *     index 10984 0x5e6f7a8b
 *     shard 0 1052672 0x9c0d1e2f
 *     slice NAME DTYPE NDIM GLOBAL... OFFSET... SHAPE... OWNER AT CRC
 *     end 0x3a4b5c6d
 *
 * The last line is "end" and the CRC-32C of every byte before it: a
 * manifest without it is not one, and one whose bytes do not give it is
 * damaged. The checksum is checked before a word is parsed, so a damaged
 * manifest is reported as such rather than as whatever its damage parses
 * to. Reading one needs no context (ckpt_format.h; writing it: ../ckpt_manifest.c), and is strict: every
 * line known and once where once is meant, every number whole and in range,
 * every slice inside its tensor. A reader can then trust the sizes it
 * computes from it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_format.h"
#include "kernels/crc32c.h"

void ck_manifest_free(struct ck_manifest *m)
{
	free(m->shard_ranks);
	free(m->shard_bytes);
	free(m->shard_crcs);
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
	if (!*digits ||
	    strspn(digits, base == 16 ? "0123456789abcdefABCDEF" : "0123456789") != strlen(digits))
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

/* A slice line; version 3 has FILE, the shard holding it, after OWNER (version 2: OWNER's own). */
static bool parse_slice(char *rest, int version, struct ck_slice *s)
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
	uint64_t *parts[3] = { s->global, s->offset, s->shape };
	for (int p = 0; p < 3; p++)
		for (unsigned d = 0; d < s->ndim; d++)
			if (!next_number(&save, 10, UINT64_MAX, &parts[p][d]))
				return false;
	if (!next_number(&save, 10, UINT32_MAX, &v))
		return false;
	s->owner = s->rank = s->file = (uint32_t)v;
	if (version >= 3) {
		/* A node's first rank lays out its file: never a rank above the owner. */
		if (!next_number(&save, 10, UINT32_MAX, &v) || v > s->owner)
			return false;
		s->file = (uint32_t)v;
		s->node_file = true;
	}
	if (!next_number(&save, 10, UINT64_MAX, &s->at) || !next_number(&save, 16, UINT32_MAX, &v) ||
	    strtok_r(NULL, " ", &save))
		return false;
	s->crc = (uint32_t)v;
	return sane_slice(s);
}

/* "shard RANK BYTES CRC", in increasing rank order as the save lists them (readers search them). */
static bool parse_shard(char *rest, struct ck_manifest *m)
{
	char *save;
	uint64_t rank, bytes, crc;
	if (!parse_number(strtok_r(rest, " ", &save), 10, UINT32_MAX, &rank) ||
	    !next_number(&save, 10, UINT64_MAX, &bytes) || !next_number(&save, 16, UINT32_MAX, &crc) ||
	    strtok_r(NULL, " ", &save) || (m->nshards && rank <= m->shard_ranks[m->nshards - 1]) ||
	    !grow((void **)&m->shard_ranks, m->nshards, sizeof *m->shard_ranks) ||
	    !grow((void **)&m->shard_bytes, m->nshards, sizeof *m->shard_bytes) ||
	    !grow((void **)&m->shard_crcs, m->nshards, sizeof *m->shard_crcs))
		return false;
	m->shard_ranks[m->nshards] = (uint32_t)rank;
	m->shard_crcs[m->nshards] = (uint32_t)crc;
	m->shard_bytes[m->nshards++] = bytes;
	return true;
}

/* "meta BYTES CRC" and "index BYTES CRC": a file's size and CRC-32C. */
static bool parse_file(char *rest, uint64_t *bytes, uint32_t *crc)
{
	char *save;
	uint64_t v;
	if (!parse_number(strtok_r(rest, " ", &save), 10, UINT64_MAX, bytes) ||
	    !next_number(&save, 16, UINT32_MAX, &v) || strtok_r(NULL, " ", &save))
		return false;
	*crc = (uint32_t)v;
	return true;
}

/* The lines that must be there once, in any order. */
enum {
	LINE_STEP = 1 << 0,
	LINE_WORLD = 1 << 1,
	LINE_LAYOUT = 1 << 2,
	LINE_META = 1 << 3,
	LINE_INDEX = 1 << 4,
	LINES_REQUIRED = (1 << 5) - 1,
};
static const char *const required_names[] = { "step", "world", "layout", "meta", "index" };

/* One line after the first, with its first word split off; false when it is not a MANIFEST line. */
static bool parse_line(char *line, char *rest, struct ck_manifest *m, unsigned *seen)
{
	uint64_t v;
	unsigned once = 0;
	for (unsigned i = 0; i < sizeof required_names / sizeof *required_names; i++)
		if (strcmp(line, required_names[i]) == 0)
			once = 1u << i;
	if (!rest || (*seen & once))
		return false;
	*seen |= once;
	switch (once) {
	case LINE_STEP: return parse_number(rest, 10, UINT64_MAX, &m->step);
	case LINE_WORLD: {
		bool ok = parse_number(rest, 10, UINT32_MAX, &v) && v > 0;
		m->world = (uint32_t)v;
		return ok;
	}
	case LINE_LAYOUT: return snprintf(m->layout, sizeof m->layout, "%s", rest) < (int)sizeof m->layout;
	case LINE_META: return parse_file(rest, &m->meta_bytes, &m->meta_crc);
	case LINE_INDEX: return parse_file(rest, &m->index_bytes, &m->index_crc);
	default: break;
	}
	if (strcmp(line, "shard") == 0)
		return parse_shard(rest, m);
	if (strcmp(line, "slice") == 0) {
		if (!grow((void **)&m->slices, m->nslices, sizeof *m->slices) ||
		    !parse_slice(rest, m->version, &m->slices[m->nslices]))
			return false;
		/* Sorted by name, as the save lists them: a tensor's slices are consecutive. */
		const struct ck_slice *s = &m->slices[m->nslices];
		if (m->nslices > 0 && strcmp(s[-1].name, s->name) > 0)
			return false;
		m->nslices++;
		return true;
	}
	return false;
}

/* A MANIFEST is text of a few hundred bytes per slice: this bounds a damaged size field's reach. */
#define MANIFEST_MAX_BYTES ((uint64_t)1 << 30)

/* The whole file, NUL-terminated (a NUL inside it is left to the parser to refuse). */
static llmp_status read_whole(const char *path, char **text, size_t *n, char *msg, size_t len)
{
	FILE *f = fopen(path, "rb");
	struct stat sb;
	*text = NULL;
	*n = 0;
	if (!f)
		return llmp_fail(LLMP_ERR_IO, msg, len, "open %s: %s", path, strerror(errno));
	llmp_status st = LLMP_OK;
	if (fstat(fileno(f), &sb) != 0)
		st = llmp_fail(LLMP_ERR_IO, msg, len, "%s: %s", path, strerror(errno));
	else if ((uint64_t)sb.st_size > MANIFEST_MAX_BYTES)
		st = llmp_fail(LLMP_ERR_IO, msg, len, "%s: %lld bytes, too large for a MANIFEST", path,
			       (long long)sb.st_size);
	else if (!(*text = malloc((size_t)sb.st_size + 1)))
		st = llmp_fail(LLMP_ERR_NOMEM, msg, len, "reading %s: out of memory", path);
	if (st == LLMP_OK) {
		*n = fread(*text, 1, (size_t)sb.st_size, f);
		(*text)[*n] = '\0';
		if (ferror(f))
			st = llmp_fail(LLMP_ERR_IO, msg, len, "reading %s failed", path);
	}
	fclose(f);
	return st;
}

/* The version a first line "llmp-checkpoint V" gives; 0 when it is no such line. */
static int first_line_version(const char *text, size_t n)
{
	static const char magic[] = "llmp-checkpoint ";
	const size_t skip = sizeof magic - 1;
	const char *nl = memchr(text, '\n', n);
	size_t linelen = nl ? (size_t)(nl - text) : n;
	char digits[8];
	uint64_t v;
	if (linelen <= skip || memcmp(text, magic, skip) != 0 || linelen - skip >= sizeof digits)
		return 0;
	memcpy(digits, text + skip, linelen - skip);
	digits[linelen - skip] = '\0';
	return parse_number(digits, 10, 1000000, &v) ? (int)v : 0;
}

/* Why a file without a good end line is refused: another version, text after an end, or none. */
static llmp_status unsealed(const char *path, const char *text, size_t n, char *msg, size_t len)
{
	int version = first_line_version(text, n);
	if (version > 0 && (version < CK_FORMAT_OLDEST || version > CK_FORMAT_VERSION))
		return llmp_fail(LLMP_ERR_UNSUPPORTED, msg, len,
				 "%s: format version %d; this llmp reads versions %d to %d only%s", path,
				 version, CK_FORMAT_OLDEST, CK_FORMAT_VERSION,
				 version < CK_FORMAT_OLDEST
					 ? " (older versions have no checksums of their HDF5 "
					   "files: load it with the llmp that saved it, then save it again)"
					 : "");
	/* One pass over the lines (a long damaged MANIFEST must not cost a scan per line). */
	const char *p = text, *stop = text + n;
	for (unsigned i = 1; p < stop; i++) {
		const char *nl = memchr(p, '\n', (size_t)(stop - p));
		size_t linelen = (size_t)((nl ? nl : stop) - p);
		bool end = (linelen == 3 || (linelen > 3 && p[3] == ' ')) && memcmp(p, "end", 3) == 0;
		if (end && nl && nl + 1 < stop)
			return llmp_fail(LLMP_ERR_IO, msg, len, "%s: text after 'end' at line %u", path,
					 i + 1);
		if (end && nl) /* the last line, whole, but not a good end line */
			return llmp_fail(LLMP_ERR_IO, msg, len,
					 "%s: malformed at line %u (the end line is 'end 0x' and "
					 "the CRC-32C of the text before it, 8 hex digits)",
					 path, i);
		p = nl ? nl + 1 : stop;
	}
	return llmp_fail(LLMP_ERR_IO, msg, len, "%s: truncated (no 'end')", path);
}

/*
 * The end line, "end 0x" and 8 hex digits, last in the file: *body is the
 * length of what it covers, checked against its CRC.
 */
static llmp_status check_seal(const char *path, const char *text, size_t n, size_t *body, char *msg,
			      size_t len)
{
	static const char end[] = "end 0x";
	const size_t sealen = sizeof end - 1 + 8 + 1;
	uint64_t want;
	char hex[11];
	if (n < sealen || text[n - 1] != '\n' || (n > sealen && text[n - sealen - 1] != '\n') ||
	    memcmp(text + n - sealen, end, sizeof end - 1) != 0)
		return unsealed(path, text, n, msg, len);
	memcpy(hex, text + n - sealen + 4, 10);
	hex[10] = '\0';
	if (!parse_number(hex, 16, UINT32_MAX, &want))
		return unsealed(path, text, n, msg, len);
	*body = n - sealen;
	uint32_t got = kern_crc32c(0, text, *body);
	if (got != (uint32_t)want)
		return llmp_fail(LLMP_ERR_IO, msg, len,
				 "%s fails its checksum (CRC-32C 0x%08x of its text, its end line "
				 "says 0x%08x): the file is damaged",
				 path, got, (uint32_t)want);
	return LLMP_OK;
}

/* The lines of text[0..body), in place: each newline becomes the end of its line. */
static llmp_status parse_body(const char *path, char *text, size_t body, struct ck_manifest *m, char *msg,
			      size_t len)
{
	int version = first_line_version(text, body);
	if (version < CK_FORMAT_OLDEST || version > CK_FORMAT_VERSION)
		return version > 0
			       ? llmp_fail(LLMP_ERR_UNSUPPORTED, msg, len,
					   "%s: format version %d; this llmp reads versions %d to %d only",
					   path, version, CK_FORMAT_OLDEST, CK_FORMAT_VERSION)
			       : llmp_fail(LLMP_ERR_IO, msg, len, "%s: malformed at line 1", path);
	m->version = version;
	unsigned lineno = 1, seen = 0;
	char *p = (char *)memchr(text, '\n', body) + 1, *end = text + body;
	while (p < end) {
		char *nl = memchr(p, '\n',
				  (size_t)(end - p)); /* the body ends with a newline: there is one */
		char *next = nl + 1;
		lineno++;
		*nl = '\0';
		bool nul_inside = strlen(p) != (size_t)(nl - p);
		char *rest = strchr(p, ' ');
		if (rest)
			*rest++ = '\0';
		if (nul_inside || !parse_line(p, rest, m, &seen))
			return llmp_fail(LLMP_ERR_IO, msg, len, "%s: malformed at line %u", path, lineno);
		p = next;
	}
	for (unsigned i = 0; (seen & LINES_REQUIRED) != LINES_REQUIRED; i++)
		if (!(seen & (1u << i)))
			return llmp_fail(LLMP_ERR_IO, msg, len, "%s: no '%s' line", path, required_names[i]);
	return LLMP_OK;
}

llmp_status ck_manifest_read_text(const char *path, char **text, size_t *n, char *msg, size_t len)
{
	return read_whole(path, text, n, msg, len);
}

llmp_status ck_manifest_parse(const char *path, char *text, size_t n, struct ck_manifest *m, char *msg,
			      size_t len)
{
	size_t body = 0;
	memset(m, 0, sizeof *m);
	llmp_status st = check_seal(path, text, n, &body, msg, len);
	if (st == LLMP_OK)
		st = parse_body(path, text, body, m, msg, len);
	if (st != LLMP_OK)
		ck_manifest_free(m);
	return st;
}

llmp_status ck_manifest_read(const char *path, struct ck_manifest *m, char *msg, size_t len)
{
	char *text;
	size_t n;
	memset(m, 0, sizeof *m);
	llmp_status st = read_whole(path, &text, &n, msg, len);
	if (st == LLMP_OK)
		st = ck_manifest_parse(path, text, n, m, msg, len);
	free(text);
	return st;
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
