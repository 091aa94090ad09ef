/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_format.h - a checkpoint on disk, read without a context.
 *
 * The names of doc/checkpoint.md, the MANIFEST, the listing of a root, the
 * checks of every file's size and CRC-32C, the slices of a shard and the
 * verification of a whole step directory. The runtime (runtime/ckpt/) and
 * the `llmp ckpt` tool share this code, so the tool checks a checkpoint
 * exactly as a load reads it, without joining a job. It is a library of
 * its own (libckpt_format: HDF5 and the kernels' CRC-32C, no PMIx, no
 * UCX). Nothing here touches an llmp_ctx: a failure returns a status and
 * leaves its message in the caller's buffer (msg, len), with llmp_fail.
 */
#ifndef LLMP_CKPT_FORMAT_H
#define LLMP_CKPT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llmp/llmp_ckpt.h>
#include <llmp/llmp_spec.h>
#include <llmp/llmp_status.h>

#include "common/fail.h"

/*
 * 2: every file of a step has its size and CRC-32C in the MANIFEST, which
 * ends with its own; each slice line says where the slice's bytes are.
 * 3: version 2 with one shard file per node (files=node): each slice line
 * also names the file that holds it, and each slice's dataset there is
 * rank-OWNER/NAME. A save with a file per rank still writes version 2, so
 * an llmp that reads only version 2 reads it. Version 1 (no checksums of
 * the HDF5 files) is refused: see doc/checkpoint.md.
 */
#define CK_FORMAT_VERSION 3                      /* the newest this llmp reads and writes */
#define CK_FORMAT_OLDEST 2                       /* the oldest it reads */
#define CK_FORMAT_PER_RANK 2                     /* what a save with one file per rank writes */
#define CK_DATASET_MAX (LLMP_CKPT_MAX_NAME + 24) /* bytes of a dataset's path in its shard, NUL included */

/* The names in a checkpoint root and in a step directory. */
#define CK_LATEST "latest"
#define CK_MANIFEST "MANIFEST"
#define CK_INDEX "index.h5"
#define CK_META "meta.bin"
#define CK_SUFFIX_TMP ".tmp"           /* a save in progress, or one that was killed */
#define CK_SUFFIX_DELETING ".deleting" /* a checkpoint being removed by retention */
#define CK_SUFFIX_DAMAGED ".damaged"   /* one a load passed over, moved aside to save its step again */

/* One registered slice, as exchanged between ranks (fixed size, no pointers). */
struct ck_slice {
	char name[LLMP_CKPT_MAX_NAME + 1];
	uint32_t dtype, ndim;
	uint64_t global[LLMP_CKPT_MAX_DIMS];
	uint64_t offset[LLMP_CKPT_MAX_DIMS];
	uint64_t shape[LLMP_CKPT_MAX_DIMS];
	uint32_t rank;   /* world rank that registered it */
	uint32_t owner;  /* world rank that writes it: the lowest with the same slice */
	uint32_t crc;    /* CRC-32C of its bytes, once written */
	uint64_t at;     /* where its bytes start in shard-FILE.h5, once written */
	uint32_t tensor; /* its place among the tensors `rank` registered (not in the MANIFEST) */
	uint32_t
		file; /* the shard file holding it, shard-FILE.h5: owner, or the first rank of owner's node */
	bool node_file; /* that file holds a node's slices (format 3): its dataset is rank-OWNER/NAME */
};

/* Where slice s's dataset is in its shard: NAME, or rank-OWNER/NAME in a node's file. */
void ck_dataset_name(const struct ck_slice *s, char *buf, size_t len);

/* Elements and bytes of a slice. */
uint64_t ck_volume(const struct ck_slice *s);
uint64_t ck_bytes(const struct ck_slice *s);

/* Whether two slices of one tensor share an element. */
bool ck_intersects(const struct ck_slice *a, const struct ck_slice *b);

/*
 * Every tensor of all[] (sorted by name; replicas have owner != rank and
 * are skipped for coverage): the same dtype and global shape in every
 * slice, and distinct slices that tile it exactly. On failure *culprit (if
 * not NULL) is the index of a slice of the offending tensor.
 */
llmp_status ck_validate_slices(const struct ck_slice *all, size_t n, size_t *culprit, char *msg, size_t len);

/* ------------------------------------------------- names (dir.c) */

/* ROOT/step-N plus suffix ("" or CK_SUFFIX_TMP). */
void ck_step_path(const char *root, uint64_t step, const char *suffix, char *buf, size_t len);
/* DIR/shard-RANK.h5; with dir NULL the bare name, as the index refers to it. */
void ck_shard_path(const char *dir, uint32_t rank, char *buf, size_t len);

/* What a name in a checkpoint root is. */
enum ck_entry_kind {
	CK_ENTRY_OTHER,    /* not a checkpoint's name */
	CK_ENTRY_COMPLETE, /* step-N: committed */
	CK_ENTRY_TMP,      /* step-N.tmp */
	CK_ENTRY_DELETING, /* step-N.deleting */
	CK_ENTRY_DAMAGED   /* step-N.damaged */
};
/* The kind of a directory name, and its N; digits only, no sign, no leading junk. */
enum ck_entry_kind ck_parse_entry_name(const char *name, uint64_t *step);

struct ck_entry {
	uint64_t step;
	enum ck_entry_kind kind;
};
/*
 * The checkpoint entries of root (directories only), by step from the
 * highest down, and for one step complete before temporary before deleting.
 * A root that does not exist has none (LLMP_OK).
 */
llmp_status ck_list_entries(const char *root, struct ck_entry **entries, size_t *n, char *msg, size_t len);

/*
 * The step ROOT/latest names. LLMP_ERR_IO when it is missing (message:
 * the errno text) or does not hold "step-N\n".
 */
llmp_status ck_read_latest(const char *root, uint64_t *step, char *msg, size_t len);

/* fsync a file or a directory (some filesystems cannot fsync a directory: not an error). */
llmp_status ck_fsync_msg(const char *path, char *msg, size_t len);
/*
 * Replace dir/name with text so a reader sees the old or the new whole:
 * written to dir/tmp_name, fsynced, renamed, then dir fsynced (`latest`,
 * and the run record of a job, which is written even after a failure).
 */
llmp_status ck_replace_file(const char *dir, const char *name, const char *tmp_name, const char *text,
			    char *msg, size_t len);

/* ------------------------------------------------ MANIFEST (manifest.c) */

struct ck_manifest {
	int version; /* CK_FORMAT_OLDEST..CK_FORMAT_VERSION; 3 (node files) when a slice's file is not its owner */
	uint64_t step;
	uint32_t world;
	char layout[LLMP_SPEC_MAX_LEN + 64];
	uint64_t meta_bytes;
	uint32_t meta_crc;
	uint64_t index_bytes;
	uint32_t index_crc;
	uint32_t *shard_ranks; /* ranks with a shard file (shard-RANK.h5), increasing */
	uint64_t *shard_bytes;
	uint32_t *shard_crcs; /* of each shard file whole */
	size_t nshards;
	struct ck_slice
		*slices; /* owners, files and CRCs set; sorted as ck_plan_slices: by name, offset, shape */
	size_t nslices;
};
/*
 * Parse path, after checking its own CRC-32C (its last line). On failure m
 * is empty and msg names the file and what is wrong: LLMP_ERR_UNSUPPORTED
 * for another format version, LLMP_ERR_IO otherwise.
 */
llmp_status ck_manifest_read(const char *path, struct ck_manifest *m, char *msg, size_t len);
/*
 * The same in two halves, for a load that reads the file once and hands
 * its text to every rank: the text as it is (NUL-terminated, *n bytes
 * before the NUL; free() it), then its check and parse, in place (path
 * only names the file in messages).
 */
llmp_status ck_manifest_read_text(const char *path, char **text, size_t *n, char *msg, size_t len);
llmp_status ck_manifest_parse(const char *path, char *text, size_t n, struct ck_manifest *m, char *msg,
			      size_t len);
void ck_manifest_free(struct ck_manifest *m);
/* Distinct tensor names among m's slices (they are sorted by name). */
size_t ck_manifest_tensors(const struct ck_manifest *m);
/* The index of rank's shard line in m; m->nshards when it has none. */
size_t ck_manifest_shard(const struct ck_manifest *m, uint32_t rank);

/* ----------------------------------------------- file checksums (filesum.c) */

/*
 * libhdf5 (1.10) can crash or loop forever on malformed metadata, so no file
 * reaches it, or any other reader, before its bytes are checked against the
 * size and CRC-32C the MANIFEST gives (filesum.c). A small file
 * (index.h5) is read whole. A shard is checked without reading its slices'
 * bytes twice: only the bytes outside them (HDF5's metadata, alignment
 * padding) are read, and joined with the slices' CRCs into the file's CRC;
 * each slice's bytes are checked against its own CRC when they are read.
 */

/* Size and CRC-32C of a whole file. */
llmp_status ck_file_crc(const char *path, uint64_t *bytes, uint32_t *crc, char *msg, size_t len);
/* The file has this size and CRC-32C; LLMP_ERR_IO naming it and what differs otherwise. */
llmp_status ck_file_check(const char *path, uint64_t bytes, uint32_t crc, char *msg, size_t len);

/* A range of a shard whose CRC-32C is known: one slice's bytes. */
struct ck_extent {
	uint64_t at, bytes;
	uint32_t crc;
};
/*
 * Sort e[0..n) by position and check that each lies inside a file of
 * file_bytes and that none overlaps another (path names the shard in msg).
 */
llmp_status ck_extents_check(struct ck_extent *e, size_t n, uint64_t file_bytes, const char *path, char *msg,
			     size_t len);
/*
 * The CRC-32C of the whole file fd (file_bytes long) when each of e[0..n)
 * (checked by ck_extents_check) holds bytes with its CRC: the bytes between
 * them are read, theirs are not.
 */
llmp_status ck_crc_around(int fd, uint64_t file_bytes, const struct ck_extent *e, size_t n, const char *path,
			  uint32_t *crc, char *msg, size_t len);
/*
 * Shard k of m (open as fd at path) before anything reads it: the size and
 * the bytes outside its slices against the MANIFEST (its slices' bytes are
 * left to be checked as they are read).
 */
llmp_status ck_shard_check(int fd, const char *path, const struct ck_manifest *m, size_t k, char *msg,
			   size_t len);

/* ---------------------------------------------------- shards (h5check.c) */

/*
 * A shard or the index opened for checking (HDF5 stays inside h5check.c
 * and the writer, ckpt_hdf5.c), only once its bytes passed the checks above.
 * ck_h5_locate finds where a slice's bytes are: its dataset must have the
 * slice's shape and the dtype's file type, and be stored contiguously, as
 * llmp writes it; those bytes are then exactly the slice's row-major
 * little-endian bytes the MANIFEST's CRC covers.
 */
struct ck_h5;
llmp_status ck_h5_open(const char *path, struct ck_h5 **h5, char *msg, size_t len);
void ck_h5_close(struct ck_h5 *h5);
llmp_status ck_h5_locate(struct ck_h5 *h5, const struct ck_slice *s, uint64_t *file_offset, char *msg,
			 size_t len);
/* The datasets in the file, at any depth. */
llmp_status ck_h5_count_datasets(struct ck_h5 *h5, size_t *n, char *msg, size_t len);
/*
 * The index's virtual dataset of the tensor whose slices are s[0..n):
 * global shape, file type, and one mapping per slice, from that slice's
 * region to dataset NAME of shard-OWNER.h5 whole.
 */
llmp_status ck_h5_check_virtual(struct ck_h5 *h5, const struct ck_slice *s, size_t n, char *msg, size_t len);

/* ------------------------------------------------- verification (verify.c) */

/* What a verification tells its caller as it goes. */
struct ck_verify_hooks {
	/*
	 * One problem: file is a name in the step directory (CK_MANIFEST,
	 * "shard-1.h5", ...), tensor the tensor concerned or NULL.
	 */
	void (*problem)(void *arg, const char *file, const char *tensor, const char *msg);
	/* done of total slice bytes checksummed; file and tensor being read. */
	void (*progress)(void *arg, uint64_t done, uint64_t total, const char *file, const char *tensor);
	void *arg;
};

struct ck_verify_totals {
	size_t tensors, slices, shards; /* as the MANIFEST lists them */
	uint64_t bytes;                 /* slice bytes read and checksummed */
	unsigned problems;
};

/*
 * Check step directory dir, which should hold checkpoint `step`: the
 * MANIFEST parses and names that step, its slices tile every tensor, every
 * shard it lists is there with its size, every slice's bytes match its
 * CRC-32C, the index maps every slice from its owner's shard, and meta.bin
 * matches its size and CRC. Every problem found goes to hooks->problem.
 * Returns LLMP_OK when there was none, LLMP_ERR_IO when there were
 * (msg: the first), LLMP_ERR_NOMEM when the check itself could not run.
 */
llmp_status ck_verify_step(const char *dir, uint64_t step, const struct ck_verify_hooks *hooks,
			   struct ck_verify_totals *totals, char *msg, size_t len);

#endif /* LLMP_CKPT_FORMAT_H */
