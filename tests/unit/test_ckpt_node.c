/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ckpt_node.c - files=node without a job: a node's shard file laid out
 * by its first rank (ck_layout_node_file), each rank's slices written into
 * it (ck_write_shard with laid_out), and the file's CRC-32C joined from the
 * bytes around the slices and the slices' CRCs, as the first rank takes it
 * (ck_crc_around, what ck_node_file_crc calls).
 *
 * Expected values are computed here: the slices' bytes are known, the
 * file's CRC-32C is taken bit by bit over the whole file read back, the
 * places are checked against the alignment rule and against HDF5's own
 * answer (ck_h5_locate), and the dataset names against rank-OWNER/NAME.
 */
#define _DEFAULT_SOURCE /* strncasecmp, which pmix_common.h uses */

#include <fcntl.h>
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

#include "runtime/ckpt/ckpt_internal.h"

#define ALIGN 4096
#define NSLICES 5

static uint32_t bitwise_crc32c(const unsigned char *p, size_t len)
{
	uint32_t reg = 0xFFFFFFFFu;
	for (size_t i = 0; i < len; i++) {
		reg ^= p[i];
		for (int bit = 0; bit < 8; bit++)
			reg = (reg & 1) ? (reg >> 1) ^ 0x82F63B78u : reg >> 1;
	}
	return ~reg;
}

static struct ck_slice slice(const char *name, llmp_dtype dtype, uint64_t g0, uint64_t g1, uint64_t o0,
			     uint64_t s0, uint32_t owner, uint32_t file)
{
	struct ck_slice s = { .dtype = (uint32_t)dtype,
			      .ndim = 2,
			      .rank = owner,
			      .owner = owner,
			      .file = file,
			      .node_file = true };
	snprintf(s.name, sizeof s.name, "%s", name);
	s.global[0] = g0, s.global[1] = g1;
	s.offset[0] = o0, s.shape[0] = s0, s.shape[1] = g1;
	return s;
}

/*
 * Ranks 0 and 1 share a node (its file is shard-0.h5), rank 2 is alone
 * (shard-2.h5): both own rows of w, rank 0 the bias, rank 1 a 256 KiB
 * tensor, rank 2 the last rows of w.
 */
static void make_slices(struct ck_slice *all)
{
	all[0] = slice("big/w", LLMP_FLOAT32, 64, 1024, 0, 64, 1, 0);
	all[1] = slice("layers/0/b", LLMP_INT32, 1, 10, 0, 1, 0, 0);
	all[2] = slice("layers/0/w", LLMP_FLOAT32, 6, 4, 0, 2, 0, 0);
	all[3] = slice("layers/0/w", LLMP_FLOAT32, 6, 4, 2, 2, 1, 0);
	all[4] = slice("layers/0/w", LLMP_FLOAT32, 6, 4, 4, 2, 2, 2);
}

/* Bytes no two slices share: each byte a function of its slice and place. */
static unsigned char *slice_data(const struct ck_slice *s, unsigned k)
{
	size_t n = (size_t)ck_bytes(s);
	unsigned char *d = malloc(n);
	assert_non_null(d);
	for (size_t i = 0; i < n; i++)
		d[i] = (unsigned char)(i * 31 + k * 97 + (i >> 8) + 1);
	return d;
}

/* Rank `rank` writes its slices of all[], as its writer would. */
static void write_rank(const char *path, struct ck_slice *all, unsigned char **data, uint32_t rank)
{
	const void *mine[NSLICES] = { 0 };
	for (unsigned i = 0; i < NSLICES; i++)
		if (all[i].owner == rank)
			mine[i] = data[i];
	struct ck_shard_job job = {
		.laid_out = true, .alignment = ALIGN, .all = all, .data = mine, .n = NSLICES
	};
	char msg[LLMP_MSG_MAX] = "";
	snprintf(job.path, sizeof job.path, "%s", path);
	if (ck_write_shard(&job, msg, sizeof msg) != LLMP_OK)
		fail_msg("rank %u: %s", rank, msg);
	assert_int_equal(job.bytes_written, 0); /* the first rank reports the file */
}

static void node_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_ckpt_node.XXXXXX", path[256], msg[LLMP_MSG_MAX] = "";
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/shard-0.h5", dir);
	struct ck_slice all[NSLICES];
	unsigned char *data[NSLICES];
	make_slices(all);
	for (unsigned i = 0; i < NSLICES; i++)
		data[i] = slice_data(&all[i], i);

	uint64_t bytes = 0;
	if (ck_layout_node_file(path, ALIGN, 0, all, NSLICES, &bytes, msg, sizeof msg) != LLMP_OK)
		fail_msg("layout: %s", msg);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal((uint64_t)sb.st_size, bytes);
	/* Every slice of this file placed inside it, none overlapping, the large ones aligned. */
	assert_int_equal(all[4].at, 0); /* another node's: untouched */
	for (unsigned i = 0; i < 4; i++) {
		uint64_t end = all[i].at + ck_bytes(&all[i]);
		assert_true(all[i].at > 0 && end <= bytes);
		if (ck_bytes(&all[i]) >= ALIGN / 2)
			assert_int_equal(all[i].at % ALIGN, 0);
		for (unsigned j = 0; j < i; j++)
			assert_true(end <= all[j].at || all[j].at + ck_bytes(&all[j]) <= all[i].at);
	}

	/* The node's ranks write in any order; then every slice's bytes are where the layout said. */
	write_rank(path, all, data, 1);
	write_rank(path, all, data, 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal((uint64_t)sb.st_size, bytes); /* writing slices does not grow it */
	unsigned char *file = malloc(bytes);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0 && file);
	assert_int_equal(pread(fd, file, bytes, 0), (ssize_t)bytes);
	struct ck_extent e[4];
	for (unsigned i = 0; i < 4; i++) {
		assert_memory_equal(file + all[i].at, data[i], ck_bytes(&all[i]));
		assert_int_equal(all[i].crc, bitwise_crc32c(data[i], ck_bytes(&all[i])));
		e[i] = (struct ck_extent){ .at = all[i].at, .bytes = ck_bytes(&all[i]), .crc = all[i].crc };
	}
	/* The file's CRC from the bytes around the slices and their CRCs: the plain CRC of the file. */
	uint32_t joined = 0;
	assert_int_equal(ck_extents_check(e, 4, bytes, path, msg, sizeof msg), LLMP_OK);
	assert_int_equal(ck_crc_around(fd, bytes, e, 4, path, &joined, msg, sizeof msg), LLMP_OK);
	assert_int_equal(joined, bitwise_crc32c(file, bytes));
	close(fd);

	/* HDF5 agrees: each slice a dataset rank-OWNER/NAME whose bytes are at its place. */
	struct ck_h5 *h5;
	size_t datasets = 0;
	uint64_t offset = 0;
	assert_int_equal(ck_h5_open(path, &h5, msg, sizeof msg), LLMP_OK);
	assert_int_equal(ck_h5_count_datasets(h5, &datasets, msg, sizeof msg), LLMP_OK);
	assert_int_equal(datasets, 4);
	for (unsigned i = 0; i < 4; i++) {
		if (ck_h5_locate(h5, &all[i], &offset, msg, sizeof msg) != LLMP_OK)
			fail_msg("slice %u: %s", i, msg);
		assert_int_equal(offset, all[i].at);
	}
	char name[CK_DATASET_MAX];
	ck_dataset_name(&all[3], name, sizeof name);
	assert_string_equal(name, "rank-1/layers/0/w");
	ck_h5_close(h5);

	free(file);
	for (unsigned i = 0; i < NSLICES; i++)
		free(data[i]);
	unlink(path);
	rmdir(dir);
}

/* A file that cannot be created, and a rank writing into a file that is not there: named. */
static void failures_named(void **state)
{
	(void)state;
	struct ck_slice all[NSLICES];
	char msg[LLMP_MSG_MAX] = "";
	uint64_t bytes;
	make_slices(all);
	assert_int_equal(ck_layout_node_file("/nonexistent/shard-0.h5", ALIGN, 0, all, NSLICES, &bytes, msg,
					     sizeof msg),
			 LLMP_ERR_IO);
	assert_non_null(strstr(msg, "/nonexistent/shard-0.h5"));
	unsigned char one = 1;
	const void *mine[NSLICES] = { &one };
	all[0] = slice("x", LLMP_UINT8, 1, 1, 0, 1, 0, 0);
	struct ck_shard_job job = { .laid_out = true, .all = all, .data = mine, .n = 1 };
	snprintf(job.path, sizeof job.path, "/nonexistent/shard-0.h5");
	assert_int_equal(ck_write_shard(&job, msg, sizeof msg), LLMP_ERR_IO);
	assert_non_null(strstr(msg, "/nonexistent/shard-0.h5"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(node_file),
		cmocka_unit_test(failures_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
