/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ckpt_format.c - the context-free reading of checkpoints
 * (runtime/ckpt/format/ckpt_format.h): names in a root, MANIFEST parsing, its
 * strictness and its checksum, the tiling check, the listing of a root.
 *
 * Every MANIFEST here is written by hand, so the expected values are the
 * text of the test, not anything the runtime computed; its end line is
 * sealed with a bit-by-bit CRC-32C written here.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/ckpt/format/ckpt_format.h"

#define ARRAY_LEN(a) (sizeof a / sizeof((a)[0]))

/* A scratch directory per test, removed by the teardown. */
struct scratch {
	char dir[64];
};

static int make_scratch(void **state)
{
	struct scratch *s = calloc(1, sizeof *s);
	if (!s)
		return -1;
	snprintf(s->dir, sizeof s->dir, "/tmp/test_ckpt_format.XXXXXX");
	if (!mkdtemp(s->dir)) {
		free(s);
		return -1;
	}
	*state = s;
	return 0;
}

static int remove_scratch(void **state)
{
	struct scratch *s = *state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
	int rc = system(cmd);
	free(s);
	return rc == 0 ? 0 : -1;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void make_dir(const char *dir, const char *name)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	assert_int_equal(mkdir(path, 0755), 0);
}

/* ------------------------------------------------------------------ names */

static void entry_names(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		enum ck_entry_kind kind;
		uint64_t step;
	} cases[] = {
		{ "step-0", CK_ENTRY_COMPLETE, 0 },
		{ "step-300", CK_ENTRY_COMPLETE, 300 },
		{ "step-18446744073709551615", CK_ENTRY_COMPLETE, UINT64_MAX },
		{ "step-7.tmp", CK_ENTRY_TMP, 7 },
		{ "step-12.deleting", CK_ENTRY_DELETING, 12 },
		{ "step-", CK_ENTRY_OTHER, 0 },
		{ "step-.tmp", CK_ENTRY_OTHER, 0 },
		{ "step-007", CK_ENTRY_OTHER, 0 },                  /* not the name of step 7 */
		{ "step-18446744073709551616", CK_ENTRY_OTHER, 0 }, /* overflow */
		{ "step--1", CK_ENTRY_OTHER, 0 },
		{ "step-+1", CK_ENTRY_OTHER, 0 },
		{ "step-1x", CK_ENTRY_OTHER, 0 },
		{ "step-1.tmp.old", CK_ENTRY_OTHER, 0 },
		{ "step-1.TMP", CK_ENTRY_OTHER, 0 },
		{ "Step-1", CK_ENTRY_OTHER, 0 },
		{ "latest", CK_ENTRY_OTHER, 0 },
		{ "", CK_ENTRY_OTHER, 0 },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		uint64_t step = 424242;
		enum ck_entry_kind kind = ck_parse_entry_name(cases[i].name, &step);
		if (kind != cases[i].kind)
			fail_msg("'%s': kind %d, expected %d", cases[i].name, kind, cases[i].kind);
		if (kind != CK_ENTRY_OTHER && step != cases[i].step)
			fail_msg("'%s': step %llu", cases[i].name, (unsigned long long)step);
	}
}

static void paths(void **state)
{
	(void)state;
	char buf[128];
	ck_step_path("/ck", 42, "", buf, sizeof buf);
	assert_string_equal(buf, "/ck/step-42");
	ck_step_path("/ck", 42, CK_SUFFIX_TMP, buf, sizeof buf);
	assert_string_equal(buf, "/ck/step-42.tmp");
	ck_shard_path("/ck/step-42", 3, buf, sizeof buf);
	assert_string_equal(buf, "/ck/step-42/shard-3.h5");
	ck_shard_path(NULL, 3, buf, sizeof buf);
	assert_string_equal(buf, "shard-3.h5");
}

/* --------------------------------------------------------------- MANIFEST */

/* CRC-32C one bit at a time (the reflected polynomial 0x82F63B78), to seal MANIFESTs written here. */
static uint32_t bitwise_crc32c(const char *p, size_t len)
{
	uint32_t reg = 0xFFFFFFFFu;
	for (size_t i = 0; i < len; i++) {
		reg ^= (unsigned char)p[i];
		for (int bit = 0; bit < 8; bit++)
			reg = (reg & 1) ? (reg >> 1) ^ 0x82F63B78u : reg >> 1;
	}
	return ~reg;
}

/* body, then the end line with body's CRC-32C, as a save writes a MANIFEST. */
static void write_sealed(const char *dir, const char *body, size_t bodylen)
{
	char path[256];
	snprintf(path, sizeof path, "%s/MANIFEST", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(body, 1, bodylen, f), bodylen);
	fprintf(f, "end 0x%08x\n", bitwise_crc32c(body, bodylen));
	assert_int_equal(fclose(f), 0);
}

/* Two ranks; a 4x6 float32 split by rows, an int32 bias owned by rank 0. Its end line is added by write_sealed. */
static const char good_manifest[] =
	"llmp-checkpoint 2\nstep 200\nworld 2\n"
	"layout tp=2,cp=1,ep=1,etp=2,dp=1,pp=1,vpp=0,order=tp-cp-ep-dp-pp,world=2\nmeta 16 0x1a2b3c4d\n"
	"index 10984 0x0badf00d\nshard 0 5808 0x01234567\nshard 1 3584 0x89abcdef\n"
	"slice layers/0/bias int32 1 10 0 10 0 2048 0x0000abcd\n"
	"slice w float32 2 4 6 0 0 2 6 0 4096 0xdeadbeef\nslice w float32 2 4 6 2 0 2 6 1 4096 0x00000001\n";

static void manifest_good(void **state)
{
	struct scratch *s = *state;
	struct ck_manifest m;
	char path[256], msg[LLMP_MSG_MAX];
	write_sealed(s->dir, good_manifest, strlen(good_manifest));
	snprintf(path, sizeof path, "%s/MANIFEST", s->dir);
	assert_int_equal(ck_manifest_read(path, &m, msg, sizeof msg), LLMP_OK);
	assert_int_equal(m.step, 200);
	assert_int_equal(m.world, 2);
	assert_string_equal(m.layout, "tp=2,cp=1,ep=1,etp=2,dp=1,pp=1,vpp=0,order=tp-cp-ep-dp-pp,world=2");
	assert_int_equal(m.meta_bytes, 16);
	assert_int_equal(m.meta_crc, 0x1a2b3c4d);
	assert_int_equal(m.index_bytes, 10984);
	assert_int_equal(m.index_crc, 0x0badf00d);
	assert_int_equal(m.nshards, 2);
	assert_int_equal(m.shard_ranks[1], 1);
	assert_int_equal(m.shard_bytes[1], 3584);
	assert_int_equal(m.shard_crcs[0], 0x01234567);
	assert_int_equal(m.shard_crcs[1], 0x89abcdef);
	assert_int_equal(m.nslices, 3);
	assert_int_equal(ck_manifest_tensors(&m), 2);
	assert_int_equal(m.slices[0].at, 2048);
	const struct ck_slice *w1 = &m.slices[2];
	assert_string_equal(w1->name, "w");
	assert_int_equal(w1->dtype, LLMP_FLOAT32);
	assert_int_equal(w1->ndim, 2);
	assert_int_equal(w1->global[0], 4);
	assert_int_equal(w1->global[1], 6);
	assert_int_equal(w1->offset[0], 2);
	assert_int_equal(w1->shape[0], 2);
	assert_int_equal(w1->owner, 1);
	assert_int_equal(w1->at, 4096);
	assert_int_equal(w1->crc, 1);
	assert_int_equal(ck_bytes(w1), 2 * 6 * 4);
	assert_int_equal(ck_manifest_shard(&m, 0), 0);
	assert_int_equal(ck_manifest_shard(&m, 1), 1);
	assert_int_equal(ck_manifest_shard(&m, 2), 2); /* none: nshards */
	assert_int_equal(ck_validate_slices(m.slices, m.nslices, NULL, msg, sizeof msg), LLMP_OK);
	ck_manifest_free(&m);
}

/* good_manifest with line `line` (1-based) replaced by `text` ("" deletes it). */
static void variant(char *out, size_t len, unsigned line, const char *text)
{
	const char *p = good_manifest;
	size_t used = 0;
	for (unsigned n = 1; *p; n++) {
		const char *end = strchr(p, '\n') + 1;
		const char *src = n == line ? text : p;
		size_t srclen = n == line ? strlen(text) : (size_t)(end - p);
		assert_true(used + srclen < len);
		memcpy(out + used, src, srclen);
		used += srclen;
		p = end;
	}
	out[used] = '\0';
}

/* A MANIFEST whose checksum holds but whose text does not parse: the parser's strictness. */
static void manifest_rejected(void **state)
{
	struct scratch *s = *state;
	static const struct {
		unsigned line;
		const char *text, *word;
	} cases[] = {
		{ 1, "llmp-checkpoint 2x\n", "malformed at line 1" },
		{ 1, "hdf5 2\n", "malformed at line 1" },
		{ 2, "step -1\n", "malformed at line 2" },
		{ 2, "step 12abc\n", "malformed at line 2" },
		{ 2, "step 99999999999999999999\n", "malformed at line 2" },
		{ 2, "", "no 'step' line" },
		{ 3, "world 0\n", "malformed at line 3" },
		{ 3, "step 200\n", "malformed at line 3" },         /* twice */
		{ 5, "meta 16 1a2b3c4d\n", "malformed at line 5" }, /* no 0x */
		{ 5, "meta 16 0x1a2b3c4d extra\n", "malformed at line 5" },
		{ 6, "index 10984\n", "malformed at line 6" },
		{ 6, "index 10984 0x0badf00d 1\n", "malformed at line 6" },
		{ 6, "", "no 'index' line" },
		{ 7, "shard 1 5808 0x01234567\n", "malformed at line 8" }, /* shards not increasing */
		{ 7, "shard 0 5808\n", "malformed at line 7" },            /* no CRC */
		{ 8, "shard 1\n", "malformed at line 8" },
		{ 9, "slice layers/0/bias int33 1 10 0 10 0 2048 0x0000abcd\n", "malformed at line 9" },
		{ 9, "slice layers/0/bias int32 0 0 2048 0x0000abcd\n", "malformed at line 9" },
		{ 9, "slice layers/0/bias int32 9 10 0 10 0 2048 0x0000abcd\n", "malformed at line 9" },
		{ 9, "slice layers/0/bias int32 1 10 5 10 0 2048 0x0000abcd\n",
		  "malformed at line 9" }, /* past its end */
		{ 9, "slice layers/0/bias int32 1 10 0 0 0 2048 0x0000abcd\n",
		  "malformed at line 9" }, /* empty */
		{ 9, "slice layers/0/bias int32 1 10 0 10 0 0x0000abcd\n",
		  "malformed at line 9" }, /* no place */
		{ 9, "slice layers/0/bias int32 1 10 0 10 0 2048 0xabcd 7\n", "malformed at line 9" },
		{ 9, "slice x int32 1 10 0 10 0 2048 0x0000abcd\n",
		  "malformed at line 10" }, /* not sorted by name */
		{ 10, "slice w float32 2 4 6 0 0 2 6 0 4096 0xdeadbeef 0\n", "malformed at line 10" },
		{ 10, "slice w float64 2 4 6 0 0 2 6 0 4096\n", "malformed at line 10" },
		{ 11, "end\n", "malformed at line 11" }, /* an end line inside the text */
		{ 11, "bogus\n", "malformed at line 11" },
		/* the last line whole, then a NUL before its newline (added below: a literal cannot carry it) */
		{ 11, "slice w float32 2 4 6 2 0 2 6 1 4096 0x00000001", "malformed at line 11" },
	};
	char text[2048], path[256], msg[LLMP_MSG_MAX];
	struct ck_manifest m;
	snprintf(path, sizeof path, "%s/MANIFEST", s->dir);
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		variant(text, sizeof text, cases[i].line, cases[i].text);
		size_t len = strlen(text);
		if (i == ARRAY_LEN(cases) - 1)
			text[len++] = '\0', text[len++] = '\n';
		write_sealed(s->dir, text, len);
		msg[0] = '\0';
		llmp_status st = ck_manifest_read(path, &m, msg, sizeof msg);
		if (st != LLMP_ERR_IO)
			fail_msg("case %zu (%s): %s", i, cases[i].text,
				 st == LLMP_OK ? "accepted" : "another status");
		if (!strstr(msg, cases[i].word) || !strstr(msg, path))
			fail_msg("case %zu (%s): message '%s' lacks '%s' or the path", i, cases[i].text, msg,
				 cases[i].word);
		assert_null(m.slices); /* nothing left to free */
	}
	assert_int_equal(ck_manifest_read("/nonexistent/MANIFEST", &m, msg, sizeof msg), LLMP_ERR_IO);
	assert_non_null(strstr(msg, "/nonexistent/MANIFEST"));
}

/* The end line: the CRC-32C of every byte before it, checked before anything is parsed. */
static void manifest_checksum(void **state)
{
	struct scratch *s = *state;
	char text[2048], path[256], msg[LLMP_MSG_MAX];
	struct ck_manifest m;
	size_t len = strlen(good_manifest);
	uint32_t crc = bitwise_crc32c(good_manifest, len);
	snprintf(path, sizeof path, "%s/MANIFEST", s->dir);
	static const struct {
		const char *end; /* after good_manifest; %08x: its CRC */
		int flip;        /* a byte of good_manifest to change, or -1 */
		llmp_status st;
		const char *word;
	} cases[] = {
		{ "end 0x%08x\n", 30, LLMP_ERR_IO, "fails its checksum" }, /* a byte of the layout */
		{ "end 0x%08x\n", 0, LLMP_ERR_IO,
		  "fails its checksum" },            /* the version line: not "version 3" */
		{ "end 0x%08X\n", -1, LLMP_OK, "" }, /* upper-case hex is hex */
		{ "end 0x%08x", -1, LLMP_ERR_IO, "truncated (no 'end')" }, /* no newline */
		{ "", -1, LLMP_ERR_IO, "truncated (no 'end')" },
		{ "end\n", -1, LLMP_ERR_IO, "malformed at line 12" }, /* format 1's end line */
		{ "end 0x1234567\n", -1, LLMP_ERR_IO, "malformed at line 12" },
		{ "end 0x%08x\nslice w\n", -1, LLMP_ERR_IO, "text after 'end' at line 13" },
		{ "end 0x%08x\n\n", -1, LLMP_ERR_IO, "text after 'end' at line 13" },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		size_t used = (size_t)snprintf(text, sizeof text, "%s", good_manifest);
		snprintf(text + used, sizeof text - used, cases[i].end, crc);
		if (cases[i].flip >= 0)
			text[cases[i].flip] ^= 0x01;
		if (cases[i].flip == 0)
			text[16] =
				'3'; /* "llmp-checkpoint 3": damage, not another version, since the CRC says so */
		write_file(s->dir, "MANIFEST", text);
		msg[0] = '\0';
		llmp_status st = ck_manifest_read(path, &m, msg, sizeof msg);
		if (st != cases[i].st || !strstr(msg, cases[i].word) || (st != LLMP_OK && !strstr(msg, path)))
			fail_msg("case %zu (%s): status %d, message '%s': expected %d, '%s' and the path", i,
				 cases[i].end, st, msg, cases[i].st, cases[i].word);
		ck_manifest_free(&m);
	}
	/* An empty file, and one of only NULs (a zeroed block). */
	write_file(s->dir, "MANIFEST", "");
	assert_int_equal(ck_manifest_read(path, &m, msg, sizeof msg), LLMP_ERR_IO);
	assert_non_null(strstr(msg, "truncated (no 'end')"));
	memset(text, 0, 512);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, 512, f), 512);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(ck_manifest_read(path, &m, msg, sizeof msg), LLMP_ERR_IO);
	assert_non_null(strstr(msg, path));
}

/* Another format version: LLMP_ERR_UNSUPPORTED, saying which, whether sealed or not. */
static void manifest_other_version(void **state)
{
	struct scratch *s = *state;
	char path[256], msg[LLMP_MSG_MAX];
	struct ck_manifest m;
	snprintf(path, sizeof path, "%s/MANIFEST", s->dir);
	/* Version 1 as llmp wrote it: no file checksums, a bare end line. */
	write_file(s->dir, "MANIFEST",
		   "llmp-checkpoint 1\nstep 200\nworld 1\nlayout tp=1\nmeta 0 0x00000000\n"
		   "shard 0 5808\nslice b int32 1 10 0 10 0 0x0000abcd\nend\n");
	assert_int_equal(ck_manifest_read(path, &m, msg, sizeof msg), LLMP_ERR_UNSUPPORTED);
	if (!strstr(msg, path) || !strstr(msg, "format version 1; this llmp reads versions 2 to 3") ||
	    !strstr(msg, "save it again"))
		fail_msg("message '%s'", msg);
	assert_null(m.slices);
	/* A later version, sealed the same way. */
	char text[2048];
	snprintf(text, sizeof text, "%s", good_manifest);
	text[16] = '4';
	write_sealed(s->dir, text, strlen(text));
	assert_int_equal(ck_manifest_read(path, &m, msg, sizeof msg), LLMP_ERR_UNSUPPORTED);
	assert_non_null(strstr(msg, "format version 4; this llmp reads versions 2 to 3"));
	assert_null(m.slices);
}

/*
 * Format 3 (files=node): ranks 0 and 1 on one node write shard-0.h5, rank 2
 * alone on another writes shard-2.h5. Each slice line has FILE after OWNER.
 */
static const char node_manifest[] =
	"llmp-checkpoint 3\nstep 300\nworld 3\nlayout tp=3,world=3\nmeta 0 0x00000000\n"
	"index 9000 0x0badf00d\nshard 0 20480 0x01234567\nshard 2 8192 0x89abcdef\n"
	"slice w float32 2 6 4 0 0 2 4 0 0 4096 0x0000000a\n"
	"slice w float32 2 6 4 2 0 2 4 1 0 8192 0x0000000b\n"
	"slice w float32 2 6 4 4 0 2 4 2 2 4096 0x0000000c\n";

static void manifest_node_files(void **state)
{
	struct scratch *s = *state;
	struct ck_manifest m;
	char path[256], msg[LLMP_MSG_MAX], name[CK_DATASET_MAX], text[2048];
	snprintf(path, sizeof path, "%s/MANIFEST", s->dir);
	write_sealed(s->dir, node_manifest, strlen(node_manifest));
	assert_int_equal(ck_manifest_read(path, &m, msg, sizeof msg), LLMP_OK);
	assert_int_equal(m.version, 3);
	assert_int_equal(m.nslices, 3);
	static const uint32_t owner[] = { 0, 1, 2 }, file[] = { 0, 0, 2 }, crc[] = { 10, 11, 12 };
	static const uint64_t at[] = { 4096, 8192, 4096 };
	static const char *const dataset[] = { "rank-0/w", "rank-1/w", "rank-2/w" };
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(m.slices[i].owner, owner[i]);
		assert_int_equal(m.slices[i].file, file[i]);
		assert_int_equal(m.slices[i].at, at[i]);
		assert_int_equal(m.slices[i].crc, crc[i]);
		assert_true(m.slices[i].node_file);
		ck_dataset_name(&m.slices[i], name, sizeof name);
		assert_string_equal(name, dataset[i]);
		assert_true(ck_manifest_shard(&m, m.slices[i].file) < m.nshards);
	}
	assert_int_equal(ck_validate_slices(m.slices, m.nslices, NULL, msg, sizeof msg), LLMP_OK);
	ck_manifest_free(&m);

	/* Format 2 keeps a file per owner and the bare name. */
	write_sealed(s->dir, good_manifest, strlen(good_manifest));
	assert_int_equal(ck_manifest_read(path, &m, msg, sizeof msg), LLMP_OK);
	assert_int_equal(m.version, 2);
	assert_int_equal(m.slices[2].file, 1);
	assert_false(m.slices[2].node_file);
	ck_dataset_name(&m.slices[2], name, sizeof name);
	assert_string_equal(name, "w");
	ck_manifest_free(&m);

	/* A version-2 slice line in a version-3 MANIFEST, a FILE above its OWNER, an extra word. */
	static const char *const bad[] = {
		"slice w float32 2 6 4 2 0 2 4 1 8192 0x0000000b\n",
		"slice w float32 2 6 4 2 0 2 4 1 2 8192 0x0000000b\n",
		"slice w float32 2 6 4 2 0 2 4 1 0 8192 0x0000000b 0\n",
	};
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		const char *line = strstr(node_manifest, "slice w float32 2 6 4 2 0");
		size_t head = (size_t)(line - node_manifest);
		const char *rest = strchr(line, '\n') + 1;
		snprintf(text, sizeof text, "%.*s%s%s", (int)head, node_manifest, bad[i], rest);
		write_sealed(s->dir, text, strlen(text));
		msg[0] = '\0';
		if (ck_manifest_read(path, &m, msg, sizeof msg) != LLMP_ERR_IO ||
		    !strstr(msg, "malformed at line 10"))
			fail_msg("case %zu: '%s'", i, msg);
	}
}

/* ------------------------------------------------------------------ tiling */

static struct ck_slice slice(const char *name, uint64_t g0, uint64_t g1, uint64_t o0, uint64_t o1,
			     uint64_t s0, uint64_t s1, uint32_t rank)
{
	struct ck_slice s = { .dtype = LLMP_FLOAT32, .ndim = 2, .rank = rank, .owner = rank };
	snprintf(s.name, sizeof s.name, "%s", name);
	s.global[0] = g0, s.global[1] = g1;
	s.offset[0] = o0, s.offset[1] = o1;
	s.shape[0] = s0, s.shape[1] = s1;
	return s;
}

static void tiling(void **state)
{
	(void)state;
	char msg[LLMP_MSG_MAX];
	size_t culprit = 99;
	/* a 4x6 in four 2x3 blocks, a second tensor whole */
	struct ck_slice ok[] = {
		slice("a", 4, 6, 0, 0, 2, 3, 0), slice("a", 4, 6, 0, 3, 2, 3, 1),
		slice("a", 4, 6, 2, 0, 2, 3, 2), slice("a", 4, 6, 2, 3, 2, 3, 3),
		slice("b", 3, 3, 0, 0, 3, 3, 0),
	};
	assert_int_equal(ck_validate_slices(ok, ARRAY_LEN(ok), &culprit, msg, sizeof msg), LLMP_OK);

	struct ck_slice hole[] = { slice("a", 4, 6, 0, 0, 2, 6, 0), slice("b", 2, 2, 0, 0, 1, 2, 0) };
	assert_int_equal(ck_validate_slices(hole, 2, &culprit, msg, sizeof msg), LLMP_ERR_MISMATCH);
	assert_non_null(strstr(msg, "tensor a: the slices cover 12 of its 24 elements"));
	assert_int_equal(culprit, 0);

	struct ck_slice overlap[] = { slice("a", 4, 6, 0, 0, 3, 6, 0), slice("a", 4, 6, 2, 0, 2, 6, 1) };
	assert_int_equal(ck_validate_slices(overlap, 2, &culprit, msg, sizeof msg), LLMP_ERR_MISMATCH);
	assert_non_null(strstr(msg, "overlap"));

	struct ck_slice shapes[] = { slice("z", 1, 1, 0, 0, 1, 1, 0), slice("a", 4, 6, 0, 0, 2, 6, 0),
				     slice("a", 4, 7, 2, 0, 2, 6, 1) };
	assert_int_equal(ck_validate_slices(shapes + 1, 2, &culprit, msg, sizeof msg), LLMP_ERR_MISMATCH);
	assert_non_null(strstr(msg, "tensor a: the slice of rank 1 has another dtype or global shape"));

	/* a replica (owner != rank) counts once */
	struct ck_slice replica[] = { slice("a", 2, 2, 0, 0, 2, 2, 0), slice("a", 2, 2, 0, 0, 2, 2, 1) };
	replica[1].owner = 0;
	assert_int_equal(ck_validate_slices(replica, 2, NULL, msg, sizeof msg), LLMP_OK);
}

/* ---------------------------------------------------------------- listing */

static void listing(void **state)
{
	struct scratch *s = *state;
	struct ck_entry *e;
	size_t n;
	char msg[LLMP_MSG_MAX];
	uint64_t latest;
	make_dir(s->dir, "step-100");
	make_dir(s->dir, "step-300");
	make_dir(s->dir, "step-300.deleting");
	make_dir(s->dir, "step-300.tmp");
	make_dir(s->dir, "step-20");
	make_dir(s->dir, "step-007");
	make_dir(s->dir, "other");
	write_file(s->dir, "step-400", "a file, not a checkpoint\n");
	assert_int_equal(ck_read_latest(s->dir, &latest, msg, sizeof msg), LLMP_ERR_IO);
	write_file(s->dir, "latest", "step-300\n");
	assert_int_equal(ck_list_entries(s->dir, &e, &n, msg, sizeof msg), LLMP_OK);
	assert_int_equal(n, 5);
	const uint64_t steps[] = { 300, 300, 300, 100, 20 };
	const enum ck_entry_kind kinds[] = { CK_ENTRY_COMPLETE, CK_ENTRY_TMP, CK_ENTRY_DELETING,
					     CK_ENTRY_COMPLETE, CK_ENTRY_COMPLETE };
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(e[i].step, steps[i]);
		assert_int_equal(e[i].kind, kinds[i]);
	}
	free(e);
	assert_int_equal(ck_read_latest(s->dir, &latest, msg, sizeof msg), LLMP_OK);
	assert_int_equal(latest, 300);
	write_file(s->dir, "latest", "step-300");
	assert_int_equal(ck_read_latest(s->dir, &latest, msg, sizeof msg), LLMP_ERR_IO);
	write_file(s->dir, "latest", "step-3x\n");
	assert_int_equal(ck_read_latest(s->dir, &latest, msg, sizeof msg), LLMP_ERR_IO);
	assert_non_null(strstr(msg, "latest"));

	char missing[128];
	snprintf(missing, sizeof missing, "%s/never-made", s->dir);
	assert_int_equal(ck_list_entries(missing, &e, &n, msg, sizeof msg), LLMP_OK);
	assert_int_equal(n, 0);
	free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(entry_names),
		cmocka_unit_test(paths),
		cmocka_unit_test_setup_teardown(manifest_good, make_scratch, remove_scratch),
		cmocka_unit_test_setup_teardown(manifest_rejected, make_scratch, remove_scratch),
		cmocka_unit_test_setup_teardown(manifest_checksum, make_scratch, remove_scratch),
		cmocka_unit_test_setup_teardown(manifest_other_version, make_scratch, remove_scratch),
		cmocka_unit_test_setup_teardown(manifest_node_files, make_scratch, remove_scratch),
		cmocka_unit_test(tiling),
		cmocka_unit_test_setup_teardown(listing, make_scratch, remove_scratch),
	};
	return cmocka_run_group_tests_name("ckpt_format", tests, NULL, NULL);
}
