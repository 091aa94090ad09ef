/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_internal.h - what the checkpoint files share (ckpt*.c).
 *
 * A checkpoint is planned from the slices every rank registered, gathered
 * on every rank in one order: each rank then computes the same owners, the
 * same validation and the same file layout, with no coordinator.
 */
#ifndef LLMP_CKPT_INTERNAL_H
#define LLMP_CKPT_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>

#include "runtime/ckpt/format/ckpt_format.h"
#include <llmp/llmp_ckpt.h>
#include "runtime/coll/coll.h" /* rt_agree */
#include "runtime/comm/rt.h"

/* A tensor this rank registered. */
struct ck_tensor {
	struct ck_slice slice;
	void *data;
	bool device; /* data is device memory (ckpt_device.c moves it) */
};

struct ck_device; /* ckpt_device.c: the driver, copy stream and pinned memory of a handle */
struct ck_stripe; /* ckpt_stripe.c: the Lustre layout asked for, and liblustreapi once loaded */

/*
 * One rank's shard: the slices of all[] whose data[i] is not NULL, each
 * checksummed (all[i].crc) and written (all[i].at), then the file
 * checksummed whole and fsynced. Touches no context (it runs on the writer
 * thread of an async save): errors go to msg.
 */
struct ck_shard_job {
	char path[4200];
	bool laid_out; /* a node's file, laid out by its first rank: only the slices' bytes are written */
	size_t alignment;
	struct ck_slice *all;
	const void **data;
	size_t n;
	uint64_t bytes_written; /* the file's size afterwards (0 when laid_out: its first rank says) */
	uint32_t file_crc;      /* and its CRC-32C */
	struct ck_device *dev;  /* device slices of data[] streamed by chunks (ckpt_device.h) */
};
/*
 * A save between its call and its commit. With staging, the writer thread
 * owns `job` and `status`/`msg` until joined; the main thread touches
 * neither meanwhile.
 */
struct ck_pending {
	bool active;
	uint64_t step;
	struct ck_slice *all; /* every rank's slices; CRCs of ours filled by the writer */
	size_t n;
	const void **data; /* per slice: where this rank's owned bytes are; NULL if not ours */
	char *meta;
	size_t metalen;
	struct ck_shard_job job;
	bool writes; /* this rank owns a slice */
	bool threaded;
	pthread_t thread;
	atomic_bool written; /* set by the writer thread when its shard is done */
	llmp_status status;
	char msg[LLMP_MSG_MAX];
	double started;
	uint64_t node_bytes; /* files=node: the size of the node's file this rank laid out; 0 if none */
};

struct llmp_ckpt {
	llmp_ctx *ctx;
	char *root;
	unsigned keep;
	size_t alignment;
	size_t staging_max;
	bool node_files;     /* llmp_ckpt_opts.files: a shard file per node */
	uint32_t *leader_of; /* with node_files: the first rank of each rank's node, once known */
	char *staging;       /* an async save's copies of this rank's slices; kept for the next */
	size_t staging_cap;
	struct ck_tensor *tensors;
	size_t ntensors, cap;
	struct ck_slice *plan; /* every rank's slices as the last save gathered them */
	size_t nplan;
	bool plan_current; /* no tensor registered on this rank since */
	struct ck_pending pending;
	struct ck_device *dev;    /* NULL until a device tensor is registered */
	struct ck_stripe *stripe; /* NULL unless llmp_ckpt_opts asked for a layout */
	llmp_ckpt_stats stats;
	/* Steps the last load of LLMP_CKPT_NEWEST found damaged and passed over, if any. */
	bool passed_over;
	uint64_t passed_oldest, passed_newest;
};

/*
 * For the job layer (job.c): whether a pending save's shard is written on
 * this rank (so its commit would not wait for I/O), and how to drop a
 * pending save without any collective, after a failure.
 */
bool ck_pending_written(const llmp_ckpt *ck);
void ck_abandon(llmp_ckpt *ck);

/*
 * Every rank learns whether any rank failed, and the first failing rank's
 * message, prefixed with what was being done. Collective over the world.
 */
llmp_status ck_agree(llmp_ckpt *ck, const char *doing, llmp_status local);

/*
 * All ranks' slices, sorted by (name, offset, shape, rank), owners set and
 * checked (*all is the caller's copy). They are gathered and checked again
 * only when some rank registered a tensor since the last time: one
 * 8-byte allreduce otherwise, whatever the number of tensors.
 */
llmp_status ck_plan_slices(llmp_ckpt *ck, struct ck_slice **all, size_t *n);

/*
 * The records of a gather (every rank's, in rank order, unused ones with an
 * empty name) made into the plan in place: unused dropped, sorted, owners
 * set, checked (*count kept), in time linear in the records. Needs no
 * context: bench/bench_ckpt_commit.c feeds it synthetic tables.
 */
llmp_status ck_order_slices(struct ck_slice *all, size_t records, size_t *count, char *msg, size_t len);

/*
 * Rank 0, once every shard is durable and every result shared (sizes[r],
 * sizes[world + r]: rank r's shard size and CRC): the MANIFEST built from
 * the plan all[0..n), then the index, metadata and MANIFEST written under
 * step-N.tmp, renamed step-N, `latest` and retention. Of the context it
 * reads only the world size, the layout and the message buffer (the
 * benchmark's context is made up).
 */
llmp_status ck_commit_step(llmp_ckpt *ck, uint64_t step, const struct ck_slice *all, size_t n,
			   const int64_t *sizes, const void *meta, size_t metalen);

/*
 * ckpt_stripe.c: the layout of llmp_ckpt_opts.stripe_* checked and kept
 * (nothing when none was asked for); set by rank 0 on each fresh step-N.tmp
 * before any shard is created there. Applying never fails: where it cannot
 * be set, rank 0 warns once per handle and the save goes on.
 */
llmp_status ck_stripe_open(llmp_ckpt *ck, const llmp_ckpt_opts *opts);
void ck_stripe_apply(llmp_ckpt *ck, const char *dir);
void ck_stripe_close(llmp_ckpt *ck);

/* ckpt_fs.c: the filesystem side of a commit (without a context: format/dir.c). */
llmp_status ck_mkdirs(llmp_ctx *ctx, const char *path);
llmp_status ck_remove_tree(llmp_ctx *ctx, const char *path);
llmp_status ck_fsync_path(llmp_ctx *ctx, const char *path);
/* Steps of the complete checkpoints under root, newest first. */
llmp_status ck_list_steps(llmp_ctx *ctx, const char *root, uint64_t **steps, size_t *n);
/* Write root/latest (via latest.tmp, fsync, rename, fsync root). */
llmp_status ck_write_latest(llmp_ctx *ctx, const char *root, uint64_t step);
/*
 * Keep the checkpoint just saved and the keep - 1 highest-numbered others;
 * remove the rest. The one just saved is never removed, even when higher
 * steps exist (a job that went back to an older checkpoint).
 */
llmp_status ck_retain(llmp_ctx *ctx, const char *root, unsigned keep, uint64_t saved);

/* ckpt_manifest.c (reading it: format/manifest.c) */
llmp_status ck_manifest_write(llmp_ctx *ctx, const char *path, const struct ck_manifest *m);

llmp_status ck_write_shard(struct ck_shard_job *job, char *msg, size_t msglen);

/*
 * ckpt_read.c: fill this rank's registered slices from step directory dir,
 * whose MANIFEST is m, checking every saved slice read against its CRC.
 * Collective: the ranks share the reading (each saved slice read once) and
 * return the same status, agreed as `doing` (rt_agree). On failure the
 * slices may hold part of the checkpoint.
 */
llmp_status ck_read_tensors(llmp_ckpt *ck, const char *dir, const struct ck_manifest *m, const char *doing);

/* ckpt_hdf5.c (checking: format/h5check.c) */
llmp_status ck_write_index(llmp_ckpt *ck, const char *path, const struct ck_slice *all, size_t n);
/*
 * A node's shard file at path, laid out by the node's first rank `file`:
 * a contiguous dataset for each slice of all[0..n) whose file it is,
 * allocated but not written (its rank writes its bytes, ck_write_shard
 * with laid_out); each such slice's `at` set; *bytes the file's size.
 */
llmp_status ck_layout_node_file(const char *path, size_t alignment, uint32_t file, struct ck_slice *all,
				size_t n, uint64_t *bytes, char *msg, size_t msglen);

/*
 * ckpt_node.c: files=node. Collective: every slice's file set to the first
 * rank of its owner's node; each node's first rank lays its file out under
 * tmp; every rank learns where its slices go (their `at`). *laid_out is
 * the size of the file this rank laid out, 0 if none.
 */
llmp_status ck_node_layout(llmp_ckpt *ck, const char *tmp, struct ck_slice *all, size_t n,
			   uint64_t *laid_out);
/*
 * The node file this rank laid out (bytes long), once every slice's CRC is
 * known: its CRC-32C from those and the bytes around them, read back.
 */
/* This rank's slices of job written into its node's file, laid out already: checksummed, pwritten, fsynced. */
llmp_status ck_write_node_slices(struct ck_shard_job *job, char *msg, size_t msglen);
llmp_status ck_node_file_crc(llmp_ckpt *ck, const char *tmp, const struct ck_slice *all, size_t n,
			     uint64_t bytes, uint32_t *crc);

#endif /* LLMP_CKPT_INTERNAL_H */
